//! OpenCode (`opencode`).
//!
//! Flags, from the OpenCode CLI docs (<https://opencode.ai/docs/cli/>) and
//! `packages/opencode/src/cli/cmd/run.ts`:
//! - `opencode run`: non-interactive. Piped stdin is read as (part of) the
//!   message ("`piped = process.stdin.isTTY ? undefined : await Bun.stdin.text()`"),
//!   so the prompt goes on stdin.
//! - `--format json`: raw JSON events, one per line.
//! - `-m/--model provider/model`; `--variant` ("model variant (provider-specific
//!   reasoning effort, e.g., high, max, minimal)"). The TUI has no `--variant`
//!   (opencode issue #7354), so interactive sessions leave it out.
//! - `--dangerously-skip-permissions`: approve every permission request not
//!   explicitly denied (later releases also spell it `--auto` / `--yolo`; without
//!   it `run` rejects what would need asking). `--agent plan` selects the
//!   built-in read-only planning agent. OpenCode has no edits-only mode: with
//!   `acceptEdits` its configured permissions apply.
//! - `-s/--session <id>`, `--fork` ("fork the session before continuing
//!   (requires --continue or --session)"); the TUI takes the same two flags.
//!
//! Events (`run.ts`, `--format json`): every line is `{type, timestamp,
//! sessionID, …}`; `step_start {part}`, `text {part: {text}}` (a finished text
//! part), `reasoning`, `tool_use {part: {tool, state: {status, input, output}}}`
//! (reported when the tool completed or failed), `step_finish {part: {reason,
//! cost, tokens: {input, output, reasoning, cache: {read, write}}}}` once per model
//! call, `error {error: {name, data: {message}}}`, and `done` at the end. The
//! final answer is the last text of the step that finishes with reason `stop`.
//!
//! Seen with OpenCode 1.18.33 (recordings in `tests/fixtures/agents/real/`):
//! - It works in `$PWD` when that names a directory other than its real working
//!   directory, so every sandbox sets `PWD` to the process's working directory.
//! - `--session <id>` (and `--fork`) work in the directory the session was
//!   created in, whatever the current one is, and fail with "Unexpected server
//!   error" when that directory is gone. slipway carries the session to the new
//!   working directory first: `opencode export <id>`, the paths rewritten,
//!   `opencode import <file>` (`run/active.rs`).
//! - A provider comes from `OPENCODE_CONFIG_CONTENT` (or `opencode.json`), e.g.
//!   `@ai-sdk/openai-compatible` with `options.baseURL`.

use serde_json::Value;

use super::{
    Agent, AgentEvent, AgentInvocation, AgentOptions, AgentSpecError, Argv, PermissionMode,
    Resolved, SharedState, Supports, count_at, float_at, parse_json_line, push_text, str_at,
};

/// Provider name.
pub(crate) const NAME: &str = "opencode";

/// OpenCode.
#[derive(Debug)]
pub struct OpenCode {
    cfg: Resolved,
    state: SharedState,
}

impl OpenCode {
    /// Checks the options.
    pub fn new(opts: AgentOptions) -> Result<OpenCode, AgentSpecError> {
        Ok(OpenCode {
            cfg: Resolved::check(
                NAME,
                "opencode",
                opts,
                Supports {
                    effort: true,
                    fork: true,
                },
            )?,
            state: SharedState::default(),
        })
    }

    fn common(&self, argv: &mut Argv, unattended: bool) {
        let o = &self.cfg.opts;
        argv.opt("--model", o.model.as_deref());
        if unattended {
            argv.opt("--variant", o.effort.as_deref());
        }
        match self.cfg.permission(unattended) {
            PermissionMode::Bypass => {
                argv.args(["--dangerously-skip-permissions"]);
            }
            PermissionMode::Plan => {
                argv.args(["--agent", "plan"]);
            }
            PermissionMode::AcceptEdits | PermissionMode::Default => {}
        }
        if let Some((id, fork)) = self.cfg.resume() {
            argv.opt("--session", Some(id));
            if fork {
                argv.args(["--fork"]);
            }
        }
        argv.extend(&o.extra_args);
    }
}

impl Agent for OpenCode {
    fn name(&self) -> &'static str {
        NAME
    }

    fn unattended(&self, prompt: &str) -> Result<AgentInvocation, AgentSpecError> {
        let mut argv = Argv::new(&self.cfg.binary);
        argv.args(["run", "--format", "json"]);
        self.common(&mut argv, true);
        Ok(argv.invocation(Some(prompt)))
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
            "OPENCODE_CONFIG_CONTENT",
            "OPENCODE_DISABLE_MODELS_FETCH",
            "OPENCODE_DISABLE_AUTOUPDATE",
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "OPENROUTER_API_KEY",
        ]
    }
}

fn parse(state: &SharedState, v: &Value, out: &mut Vec<AgentEvent>) {
    let Some(kind) = str_at(v, "type") else {
        return;
    };
    let part = v.get("part").unwrap_or(&Value::Null);
    match kind {
        "step_start" | "text" | "tool_use" | "step_finish" | "reasoning" | "error" => {
            state.session(str_at(v, "sessionID"), out);
        }
        _ => return,
    }
    match kind {
        "text" => {
            let text = str_at(part, "text").unwrap_or_default();
            push_text(out, text);
            if !text.trim().is_empty() {
                state.set_last_text(text);
            }
        }
        "tool_use" => {
            let input = part
                .get("state")
                .and_then(|s| s.get("input"))
                .cloned()
                .unwrap_or(Value::Null);
            out.push(AgentEvent::ToolCall {
                name: str_at(part, "tool").unwrap_or_default().to_owned(),
                input,
            });
        }
        "step_finish" => {
            if str_at(part, "reason") == Some("stop")
                && let Some(text) = state.take_last_text()
            {
                out.push(AgentEvent::Result { text });
            }
            if let Some(t) = part.get("tokens").filter(|t| t.is_object()) {
                let cache = t.get("cache").unwrap_or(&Value::Null);
                let cached = count_at(cache, "read");
                out.push(AgentEvent::Usage {
                    input_tokens: count_at(t, "input") + cached + count_at(cache, "write"),
                    output_tokens: count_at(t, "output") + count_at(t, "reasoning"),
                    cached_input_tokens: cached,
                    cost_usd: float_at(part, "cost"),
                });
            }
        }
        "error" => {
            let error = v.get("error").unwrap_or(&Value::Null);
            let message = error
                .get("data")
                .and_then(|d| str_at(d, "message"))
                .or_else(|| str_at(error, "message"))
                .or_else(|| str_at(error, "name"))
                .unwrap_or("error");
            out.push(AgentEvent::Error {
                message: message.to_owned(),
            });
        }
        _ => {}
    }
}
