//! Claude Code (`claude`).
//!
//! Flags, from the Claude Code CLI reference
//! (<https://code.claude.com/docs/en/cli-reference>):
//! - `-p` / `--print`: non-interactive; with no prompt argument the prompt is read
//!   from stdin ("`cat file | claude -p`").
//! - `--output-format stream-json`: one JSON event per line; it requires
//!   `--verbose` in print mode.
//! - `--model`, `--effort <level>` (low, medium, high, xhigh, max; model-dependent).
//! - `--permission-mode default|acceptEdits|plan|bypassPermissions`
//!   (`bypassPermissions` is what `--dangerously-skip-permissions` sets).
//! - `--resume <id>`, and `--fork-session` to resume into a new session id.
//!
//! Stream events (Agent SDK message types, the same in `stream-json`):
//! `system`/`init` carries `session_id`; `assistant` carries `message.content`
//! blocks (`text`, `tool_use {name, input}`, `thinking`); `user` carries tool
//! results; `result` carries `result`, `is_error`, `session_id`, `usage`
//! (`input_tokens`, `cache_creation_input_tokens`, `cache_read_input_tokens`,
//! `output_tokens`, totals for the whole invocation), `total_cost_usd` and
//! `permission_denials` (`[{tool_name, tool_use_id, tool_input}]`, what the
//! permission mode refused; the run then ends `needsInput`).
//!
//! Seen with Claude Code 2.1.197 (recordings in `tests/fixtures/agents/real/`):
//! - As root, `bypassPermissions` is refused unless `IS_SANDBOX=1` says the
//!   process is in a sandbox; slipway sets it in containers (they run as the
//!   host uid, which is 0 on many CI machines).
//! - `--resume <id>` looks for the session only in the project folder of the
//!   current directory (`~/.claude/projects/<cwd>/`); anything else prints "No
//!   conversation found with session ID" and a `result` with `is_error`. slipway
//!   carries the session file into the working directory's folder first
//!   (`run/active.rs`).
//! - The endpoint comes from `ANTHROPIC_BASE_URL`, the key from
//!   `ANTHROPIC_API_KEY` (or `ANTHROPIC_AUTH_TOKEN`).

use serde_json::Value;

use super::{
    Agent, AgentEvent, AgentInvocation, AgentOptions, AgentSpecError, Argv, PermissionMode,
    Resolved, SharedState, Supports, count_at, float_at, parse_json_line, push_text, str_at,
};

/// Provider name.
pub(crate) const NAME: &str = "claude-code";

/// Claude Code.
#[derive(Debug)]
pub struct ClaudeCode {
    cfg: Resolved,
    state: SharedState,
}

impl ClaudeCode {
    /// Checks the options.
    pub fn new(opts: AgentOptions) -> Result<ClaudeCode, AgentSpecError> {
        Ok(ClaudeCode {
            cfg: Resolved::check(
                NAME,
                "claude",
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
        argv.opt("--effort", o.effort.as_deref());
        let mode = match self.cfg.permission(unattended) {
            PermissionMode::Bypass => Some("bypassPermissions"),
            PermissionMode::AcceptEdits => Some("acceptEdits"),
            PermissionMode::Plan => Some("plan"),
            PermissionMode::Default => None,
        };
        argv.opt("--permission-mode", mode);
        if let Some((id, fork)) = self.cfg.resume() {
            argv.opt("--resume", Some(id));
            if fork {
                argv.args(["--fork-session"]);
            }
        }
        argv.extend(&o.extra_args);
    }
}

impl Agent for ClaudeCode {
    fn name(&self) -> &'static str {
        NAME
    }

    fn unattended(&self, prompt: &str) -> Result<AgentInvocation, AgentSpecError> {
        let mut argv = Argv::new(&self.cfg.binary);
        argv.args(["-p", "--output-format", "stream-json", "--verbose"]);
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

    fn container_env(&self) -> Vec<(String, String)> {
        if self.cfg.permission(true) == PermissionMode::Bypass {
            vec![("IS_SANDBOX".to_owned(), "1".to_owned())]
        } else {
            Vec::new()
        }
    }

    fn passthrough_env(&self) -> &'static [&'static str] {
        &[
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_CUSTOM_HEADERS",
            "ANTHROPIC_MODEL",
            "ANTHROPIC_SMALL_FAST_MODEL",
            "CLAUDE_CODE_USE_BEDROCK",
            "CLAUDE_CODE_USE_VERTEX",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
            "DISABLE_AUTOUPDATER",
            "DISABLE_TELEMETRY",
            "DISABLE_ERROR_REPORTING",
        ]
    }
}

fn parse(state: &SharedState, v: &Value, out: &mut Vec<AgentEvent>) {
    match str_at(v, "type") {
        Some("system") => state.session(str_at(v, "session_id"), out),
        Some("assistant") => {
            state.session(str_at(v, "session_id"), out);
            let blocks = v
                .get("message")
                .and_then(|m| m.get("content"))
                .and_then(Value::as_array);
            for block in blocks.into_iter().flatten() {
                match str_at(block, "type") {
                    Some("text") => push_text(out, str_at(block, "text").unwrap_or_default()),
                    Some("tool_use") => out.push(AgentEvent::ToolCall {
                        name: str_at(block, "name").unwrap_or_default().to_owned(),
                        input: block.get("input").cloned().unwrap_or(Value::Null),
                    }),
                    _ => {}
                }
            }
        }
        Some("result") => {
            state.session(str_at(v, "session_id"), out);
            let is_error = v.get("is_error").and_then(Value::as_bool).unwrap_or(false)
                || str_at(v, "subtype").is_some_and(|s| s.starts_with("error"));
            // A failed result names its errors in `errors` ("No conversation found
            // with session ID: …") when it has no `result` text.
            let errors = v
                .get("errors")
                .and_then(Value::as_array)
                .map(|e| {
                    e.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join("; ")
                })
                .filter(|e| !e.is_empty());
            match (is_error, str_at(v, "result")) {
                (false, Some(text)) => out.push(AgentEvent::Result {
                    text: text.to_owned(),
                }),
                (false, None) => {}
                (true, text) => out.push(AgentEvent::Error {
                    message: text
                        .map(str::to_owned)
                        .or(errors)
                        .or_else(|| str_at(v, "subtype").map(str::to_owned))
                        .unwrap_or_else(|| "error".to_owned()),
                }),
            }
            // What the permission mode refused, each `{tool_name, tool_input}`:
            // the agent stopped short of it and nobody was there to allow it.
            let denials = v.get("permission_denials").and_then(Value::as_array);
            for denial in denials.into_iter().flatten() {
                let input = denial.get("tool_input").cloned().unwrap_or(Value::Null);
                out.push(AgentEvent::PermissionDenied {
                    tool: str_at(denial, "tool_name").unwrap_or("a tool").to_owned(),
                    target: super::argument(
                        &input,
                        &["command", "file_path", "path", "url", "pattern"],
                    ),
                });
            }
            if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
                let cached = count_at(u, "cache_read_input_tokens");
                out.push(AgentEvent::Usage {
                    input_tokens: count_at(u, "input_tokens")
                        + count_at(u, "cache_creation_input_tokens")
                        + cached,
                    output_tokens: count_at(u, "output_tokens"),
                    cached_input_tokens: cached,
                    cost_usd: float_at(v, "total_cost_usd"),
                });
            }
        }
        _ => {}
    }
}
