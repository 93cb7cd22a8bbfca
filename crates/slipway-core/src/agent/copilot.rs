//! GitHub Copilot CLI (`copilot`, `@github/copilot`).
//!
//! Flags, from GitHub's Copilot CLI programmatic reference
//! (<https://docs.github.com/en/copilot/reference/copilot-cli-reference/cli-programmatic-reference>)
//! and command reference:
//! - `-p PROMPT`: run one prompt non-interactively. The prompt is an argument,
//!   guarded by [`MAX_ARG_PROMPT_BYTES`](super::MAX_ARG_PROMPT_BYTES).
//! - `--output-format json`: the session events as JSON lines (github/copilot-cli
//!   issue #3544 shows it on 1.0.54; plain `-p` output goes to the terminal UI).
//! - `--model`; `--reasoning-effort none|minimal|low|medium|high|xhigh|max`.
//! - Permissions: `--allow-all-tools` (run every tool without asking), `--allow-tool
//!   write` (file edits), `--deny-tool write --deny-tool shell` (read only).
//! - `--resume <sessionId>`; no fork.
//!
//! Events (Copilot SDK "Streaming session events", the same envelope `{type,
//! data, id, timestamp, parentId, ephemeral, agentId}`): `assistant.message
//! {content, toolRequests}`, `assistant.message_delta`, `tool.execution_start
//! {toolName, arguments}`, `tool.execution_complete`, `session.error {message}`,
//! and in `-p` mode a closing `result {sessionId, exitCode}`. Events with an
//! `agentId` come from sub-agents: their text is not the session's answer. The
//! final answer is the last main-agent `assistant.message`, reported at the
//! first of `assistant.idle`, `session.idle` or `result`.
//!
//! Seen with Copilot CLI 1.0.102 (recordings in `tests/fixtures/agents/real/`):
//! - stdout has no `session.start` and no `assistant.usage`; the session id
//!   arrives with `result`, and the turn ends with `assistant.idle`. The stream
//!   echoes the user's prompt (`user.message`), which is not the assistant's text.
//! - Token counts are only in the session's log,
//!   `${COPILOT_HOME:-~/.copilot}/session-state/<id>/events.jsonl`, one
//!   `session.usage_record {usage: {inputTokens, outputTokens, cacheReadTokens}}`
//!   per model call (`inputTokens` includes the cached ones). slipway reads what
//!   a run added to it ([`Agent::session_log`]).
//! - `--resume` switches to the directory the session was started in when that
//!   still exists: `-C .` keeps it in the run's working directory.
//! - BYOK without GitHub auth: `COPILOT_PROVIDER_BASE_URL`,
//!   `COPILOT_PROVIDER_TYPE`, `COPILOT_PROVIDER_API_KEY`, `COPILOT_MODEL`,
//!   `COPILOT_OFFLINE=true`.

use serde_json::Value;

use super::{
    Agent, AgentEvent, AgentInvocation, AgentOptions, AgentSpecError, Argv, PermissionMode,
    Resolved, SharedState, Supports, count_at, parse_json_line, push_text, str_at,
};

/// Provider name.
pub(crate) const NAME: &str = "copilot";

/// GitHub Copilot CLI.
#[derive(Debug)]
pub struct Copilot {
    cfg: Resolved,
    state: SharedState,
}

impl Copilot {
    /// Checks the options (Copilot cannot fork a session).
    pub fn new(opts: AgentOptions) -> Result<Copilot, AgentSpecError> {
        Ok(Copilot {
            cfg: Resolved::check(
                NAME,
                "copilot",
                opts,
                Supports {
                    effort: true,
                    fork: false,
                },
            )?,
            state: SharedState::default(),
        })
    }

    fn common(&self, argv: &mut Argv, unattended: bool) {
        let o = &self.cfg.opts;
        argv.opt("--model", o.model.as_deref());
        argv.opt("--reasoning-effort", o.effort.as_deref());
        match self.cfg.permission(unattended) {
            PermissionMode::Bypass => {
                argv.args(["--allow-all-tools"]);
            }
            PermissionMode::AcceptEdits => {
                argv.args(["--allow-tool", "write"]);
            }
            PermissionMode::Plan => {
                argv.args(["--deny-tool", "write", "--deny-tool", "shell"]);
            }
            PermissionMode::Default => {}
        }
        if let Some((id, _)) = self.cfg.resume() {
            argv.opt("--resume", Some(id));
            argv.args(["-C", "."]);
        }
        argv.extend(&o.extra_args);
    }
}

impl Agent for Copilot {
    fn name(&self) -> &'static str {
        NAME
    }

    fn unattended(&self, prompt: &str) -> Result<AgentInvocation, AgentSpecError> {
        self.cfg.check_arg_prompt(prompt)?;
        let mut argv = Argv::new(&self.cfg.binary);
        argv.args(["--output-format", "json"]);
        self.common(&mut argv, true);
        argv.args(["-p", prompt]);
        Ok(argv.invocation(None))
    }

    fn interactive(&self) -> AgentInvocation {
        let mut argv = Argv::new(&self.cfg.binary);
        self.common(&mut argv, false);
        argv.invocation(None)
    }

    fn parse_line(&self, line: &str) -> Vec<AgentEvent> {
        parse_json_line(line, |v, out| parse(&self.state, v, out))
    }

    fn passthrough_env(&self) -> &'static [&'static str] {
        &[
            "COPILOT_PROVIDER_BASE_URL",
            "COPILOT_PROVIDER_TYPE",
            "COPILOT_PROVIDER_API_KEY",
            "COPILOT_MODEL",
            "COPILOT_OFFLINE",
            "COPILOT_AUTO_UPDATE",
            "COPILOT_GITHUB_TOKEN",
            "GH_TOKEN",
            "GITHUB_TOKEN",
        ]
    }

    fn session_log(&self, session_id: &str) -> Option<String> {
        // Session ids are checked to be letters, digits and `-_.:` (is_session_id),
        // so this is safe inside double quotes.
        super::is_session_id(session_id).then(|| {
            format!("${{COPILOT_HOME:-$HOME/.copilot}}/session-state/{session_id}/events.jsonl")
        })
    }

    fn parse_session_log_line(&self, line: &str) -> Option<AgentEvent> {
        let v = super::json_object(line).ok()?;
        if str_at(&v, "type") != Some("session.usage_record") {
            return None;
        }
        let u = v.get("data")?.get("usage")?;
        Some(AgentEvent::Usage {
            input_tokens: count_at(u, "inputTokens"),
            output_tokens: count_at(u, "outputTokens"),
            cached_input_tokens: count_at(u, "cacheReadTokens"),
            cost_usd: None,
        })
    }
}

fn parse(state: &SharedState, v: &Value, out: &mut Vec<AgentEvent>) {
    let data = v.get("data").unwrap_or(&Value::Null);
    let sub_agent = v.get("agentId").is_some_and(|a| !a.is_null());
    match str_at(v, "type") {
        Some("session.start") => state.session(str_at(data, "sessionId"), out),
        Some("assistant.message") if !sub_agent => {
            let text = str_at(data, "content").unwrap_or_default();
            push_text(out, text);
            if !text.trim().is_empty() {
                state.set_last_text(text);
            }
        }
        Some("tool.execution_start") => out.push(AgentEvent::ToolCall {
            name: str_at(data, "toolName").unwrap_or_default().to_owned(),
            input: data.get("arguments").cloned().unwrap_or(Value::Null),
        }),
        Some("assistant.usage") => out.push(AgentEvent::Usage {
            input_tokens: count_at(data, "inputTokens"),
            output_tokens: count_at(data, "outputTokens"),
            cached_input_tokens: count_at(data, "cacheReadTokens"),
            cost_usd: None,
        }),
        Some("session.error") => out.push(AgentEvent::Error {
            message: str_at(data, "message").unwrap_or("error").to_owned(),
        }),
        Some("assistant.idle" | "session.idle") if !sub_agent => {
            if let Some(text) = state.take_last_text() {
                out.push(AgentEvent::Result { text });
            }
        }
        Some("result") => {
            state.session(
                str_at(v, "sessionId").or_else(|| str_at(data, "sessionId")),
                out,
            );
            if let Some(text) = state.take_last_text() {
                out.push(AgentEvent::Result { text });
            }
        }
        _ => {}
    }
}
