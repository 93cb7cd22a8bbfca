//! GitHub Copilot CLI (`copilot`, `@github/copilot`).
//!
//! Flags, from GitHub's Copilot CLI programmatic reference
//! (<https://docs.github.com/en/copilot/reference/copilot-cli-reference/cli-programmatic-reference>)
//! and command reference:
//! - `-p PROMPT`: run one prompt non-interactively. The prompt is an argument,
//!   guarded by [`MAX_ARG_PROMPT_BYTES`](super::MAX_ARG_PROMPT_BYTES).
//! - `--output-format json`: the session events as JSON lines (github/copilot-cli
//!   issue #3544 shows it on 1.0.54; plain `-p` output goes to the terminal UI).
//! - `--model`; `--effort low|medium|high|xhigh` (reasoning effort, Copilot CLI
//!   1.0.x; older releases have no flag and set it only interactively).
//! - Permissions: `--allow-all-tools` (run every tool without asking), `--allow-tool
//!   write` (file edits), `--deny-tool write --deny-tool shell` (read only).
//! - `--resume <sessionId>`; no fork.
//!
//! Events (Copilot SDK "Streaming session events", the same envelope `{type,
//! data, id, timestamp, parentId, ephemeral, agentId}`): `session.start {sessionId}`,
//! `assistant.message {content, toolRequests}`, `assistant.message_delta`,
//! `tool.execution_start {toolName, arguments}`, `tool.execution_complete`,
//! `assistant.usage {inputTokens, outputTokens, cacheReadTokens,
//! cacheWriteTokens}` per model call, `session.error {message}`, `session.idle`,
//! and in `-p` mode a closing `result` carrying `sessionId`. Events with an
//! `agentId` come from sub-agents: their text is not the session's answer. The
//! final answer is the last main-agent `assistant.message`, reported at
//! `result` (or `session.idle`, whichever comes first).

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
        argv.opt("--effort", o.effort.as_deref());
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
        Some("session.idle") if !sub_agent => {
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
