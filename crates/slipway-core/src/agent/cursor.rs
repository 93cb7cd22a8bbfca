//! Cursor's CLI agent (`cursor-agent`).
//!
//! Flags, from Cursor's CLI docs (<https://cursor.com/docs/cli/reference/parameters>,
//! <https://cursor.com/docs/cli/reference/output-format>, `cursor-agent --help`):
//! - `-p/--print`: non-interactive; the prompt is the positional argument, so it
//!   is guarded by [`MAX_ARG_PROMPT_BYTES`](super::MAX_ARG_PROMPT_BYTES) and put
//!   after `--` (a prompt starting with `-` would otherwise read as a flag).
//! - `--output-format stream-json`: one JSON event per line.
//! - `--trust`: trust the workspace without the prompt a headless run cannot
//!   answer (every slipway worktree is a new workspace to Cursor).
//! - `--model`; Cursor has no effort option (models carry it in their name).
//! - `-f/--force`: run every tool call without asking (unless denied);
//!   `--mode plan`: read-only planning. Cursor has no edits-only mode: with
//!   `acceptEdits` its configured permissions apply.
//! - `--resume <chatId>`; no fork.
//!
//! Events (output-format reference): `system`/`init {session_id, model, cwd}`,
//! `user`, `assistant {message: {content: [{type: text, text}]}}` (one line per
//! complete message), `tool_call` with `subtype` `started`/`completed`,
//! `call_id` and `tool_call: {<kind>ToolCall: {args, result}}` (e.g.
//! `readToolCall`, `writeToolCall`, `shellToolCall`) or `{function: {name,
//! arguments}}`, and the final `result {subtype, is_error, result, session_id}`.
//! Cursor reports no token usage in the stream; a `usage` object on `result` is
//! read if a release adds one.

use serde_json::Value;

use super::{
    Agent, AgentEvent, AgentInvocation, AgentOptions, AgentSpecError, Argv, PermissionMode,
    Resolved, SharedState, Supports, count_at, parse_json_line, push_text, str_at,
};

/// Provider name.
pub(crate) const NAME: &str = "cursor";

/// Cursor CLI.
#[derive(Debug)]
pub struct Cursor {
    cfg: Resolved,
    state: SharedState,
}

impl Cursor {
    /// Checks the options (Cursor has no effort option and cannot fork).
    pub fn new(opts: AgentOptions) -> Result<Cursor, AgentSpecError> {
        Ok(Cursor {
            cfg: Resolved::check(
                NAME,
                "cursor-agent",
                opts,
                Supports {
                    effort: false,
                    fork: false,
                },
            )?,
            state: SharedState::default(),
        })
    }

    fn common(&self, argv: &mut Argv, unattended: bool) {
        let o = &self.cfg.opts;
        argv.opt("--model", o.model.as_deref());
        match self.cfg.permission(unattended) {
            PermissionMode::Bypass => {
                argv.args(["--force"]);
            }
            PermissionMode::Plan => {
                argv.args(["--mode", "plan"]);
            }
            PermissionMode::AcceptEdits | PermissionMode::Default => {}
        }
        if let Some((id, _)) = self.cfg.resume() {
            argv.opt("--resume", Some(id));
        }
        argv.extend(&o.extra_args);
    }
}

impl Agent for Cursor {
    fn name(&self) -> &'static str {
        NAME
    }

    fn unattended(&self, prompt: &str) -> Result<AgentInvocation, AgentSpecError> {
        self.cfg.check_arg_prompt(prompt)?;
        let mut argv = Argv::new(&self.cfg.binary);
        argv.args(["-p", "--output-format", "stream-json", "--trust"]);
        self.common(&mut argv, true);
        argv.args(["--", prompt]);
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

/// Name and input of a `tool_call` object.
fn tool(call: &Value) -> Option<(String, Value)> {
    let (key, body) = call.as_object()?.iter().next()?;
    if key == "function" {
        let name = str_at(body, "name").unwrap_or("function").to_owned();
        let input = match body.get("arguments") {
            Some(Value::String(s)) => {
                serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
            }
            Some(other) => other.clone(),
            None => Value::Null,
        };
        return Some((name, input));
    }
    let name = key.strip_suffix("ToolCall").unwrap_or(key).to_owned();
    Some((name, body.get("args").cloned().unwrap_or(Value::Null)))
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
                if str_at(block, "type") == Some("text") {
                    push_text(out, str_at(block, "text").unwrap_or_default());
                }
            }
        }
        Some("tool_call") => {
            state.session(str_at(v, "session_id"), out);
            if str_at(v, "subtype") == Some("started")
                && let Some((name, input)) = v.get("tool_call").and_then(tool)
            {
                out.push(AgentEvent::ToolCall { name, input });
            }
        }
        Some("result") => {
            state.session(str_at(v, "session_id"), out);
            let is_error = v.get("is_error").and_then(Value::as_bool).unwrap_or(false)
                || str_at(v, "subtype").is_some_and(|s| s != "success");
            let text = str_at(v, "result");
            if is_error {
                out.push(AgentEvent::Error {
                    message: text
                        .or_else(|| str_at(v, "subtype"))
                        .unwrap_or("error")
                        .to_owned(),
                });
            } else if let Some(text) = text {
                out.push(AgentEvent::Result {
                    text: text.to_owned(),
                });
            }
            if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
                let n = |camel: &str, snake: &str| count_at(u, camel).max(count_at(u, snake));
                let cached = n("cacheReadTokens", "cache_read_input_tokens");
                out.push(AgentEvent::Usage {
                    input_tokens: n("inputTokens", "input_tokens")
                        + cached
                        + n("cacheWriteTokens", "cache_creation_input_tokens"),
                    output_tokens: n("outputTokens", "output_tokens"),
                    cached_input_tokens: cached,
                    cost_usd: None,
                });
            }
        }
        _ => {}
    }
}
