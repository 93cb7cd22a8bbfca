//! The Pi coding agent (`pi`, `@mariozechner/pi-coding-agent`).
//!
//! Flags, from `pi --help` (`packages/coding-agent/src/cli/args.ts`) and
//! `docs/json.md` in badlogic/pi-mono:
//! - `-p/--print`: process the prompt and exit; piped stdin is read as the
//!   prompt (`readPipedStdin` in `main.ts`), so the prompt goes on stdin.
//! - `--mode json`: every session event as a JSON line.
//! - `--model <pattern>` (accepts `provider/id`), `--thinking
//!   off|minimal|low|medium|high|xhigh`.
//! - Pi asks no permissions (every tool runs); `plan` restricts it to the
//!   read-only tools with `--tools read,grep,find,ls` (the help's "Read-only
//!   mode" example). `bypass`, `acceptEdits` and `default` add nothing.
//! - `--session <path|id>` continues a session (a file, or a partial UUID),
//!   `--fork <path|id>` copies it into a new session.
//!
//! Events (`docs/json.md`): the first line is the session header
//! `{"type":"session","version":3,"id","timestamp","cwd"}`; then `agent_start`,
//! `turn_start`, `message_start` / `message_update` / `message_end {message}`,
//! `tool_execution_start {toolCallId, toolName, args}`, `tool_execution_end`,
//! `turn_end`, `agent_end {messages}`, `auto_compaction_*`, `auto_retry_*`.
//! Assistant messages carry `content` blocks (`text`, `thinking`, `toolCall`),
//! `usage {input, output, cacheRead, cacheWrite, totalTokens, cost: {total}}`
//! per model call (`input` excludes the cache), `stopReason` and, on failure,
//! `errorMessage`. The final answer is the text of the last assistant message
//! in `agent_end`.
//!
//! Seen with Pi 0.73.1 (recordings in `tests/fixtures/agents/real/`):
//! - The user's prompt comes back in the stream (`message_start`/`message_end`
//!   of role `user`); it is not the assistant's text.
//! - `--session <id>` looks in the session folder of the current directory;
//!   finding the session under another directory it asks "Fork this session into
//!   current directory? [y/N]" on the terminal and, in print mode, reads the
//!   answer from the prompt on stdin. slipway carries the session file into the
//!   working directory's folder first (`run/active.rs`), so Pi never asks.
//! - Providers come from `~/.pi/agent/models.json` (`baseUrl`, `api`, `apiKey`).

use serde_json::Value;

use super::{
    Agent, AgentEvent, AgentInvocation, AgentOptions, AgentSpecError, Argv, PermissionMode,
    Resolved, SharedState, Supports, count_at, float_at, parse_json_line, push_text, str_at,
};

/// Provider name.
pub(crate) const NAME: &str = "pi";

/// The tools `plan` leaves to Pi.
const READ_ONLY_TOOLS: &str = "read,grep,find,ls";

/// Pi.
#[derive(Debug)]
pub struct Pi {
    cfg: Resolved,
    state: SharedState,
}

impl Pi {
    /// Checks the options.
    pub fn new(opts: AgentOptions) -> Result<Pi, AgentSpecError> {
        Ok(Pi {
            cfg: Resolved::check(
                NAME,
                "pi",
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
        argv.opt("--thinking", o.effort.as_deref());
        if self.cfg.permission(unattended) == PermissionMode::Plan {
            argv.opt("--tools", Some(READ_ONLY_TOOLS));
        }
        if let Some((id, fork)) = self.cfg.resume() {
            argv.opt(if fork { "--fork" } else { "--session" }, Some(id));
        }
        argv.extend(&o.extra_args);
    }
}

impl Agent for Pi {
    fn name(&self) -> &'static str {
        NAME
    }

    fn unattended(&self, prompt: &str) -> Result<AgentInvocation, AgentSpecError> {
        let mut argv = Argv::new(&self.cfg.binary);
        argv.args(["-p", "--mode", "json"]);
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
            "PI_OFFLINE",
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "GEMINI_API_KEY",
            "OPENROUTER_API_KEY",
        ]
    }
}

/// The text blocks of a message, joined.
fn message_text(message: &Value) -> String {
    match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| str_at(b, "type") == Some("text"))
            .filter_map(|b| str_at(b, "text"))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn parse(state: &SharedState, v: &Value, out: &mut Vec<AgentEvent>) {
    match str_at(v, "type") {
        Some("session") => state.session(str_at(v, "id"), out),
        Some("message_end") => {
            let Some(message) = v.get("message") else {
                return;
            };
            if str_at(message, "role") != Some("assistant") {
                return;
            }
            push_text(out, &message_text(message));
            if let Some(u) = message.get("usage").filter(|u| u.is_object()) {
                let cached = count_at(u, "cacheRead");
                out.push(AgentEvent::Usage {
                    input_tokens: count_at(u, "input") + cached + count_at(u, "cacheWrite"),
                    output_tokens: count_at(u, "output"),
                    cached_input_tokens: cached,
                    cost_usd: u.get("cost").and_then(|c| float_at(c, "total")),
                });
            }
            if matches!(str_at(message, "stopReason"), Some("error" | "aborted")) {
                out.push(AgentEvent::Error {
                    message: str_at(message, "errorMessage")
                        .or_else(|| str_at(message, "stopReason"))
                        .unwrap_or("error")
                        .to_owned(),
                });
            }
        }
        Some("tool_execution_start") => out.push(AgentEvent::ToolCall {
            name: str_at(v, "toolName").unwrap_or_default().to_owned(),
            input: v.get("args").cloned().unwrap_or(Value::Null),
        }),
        Some("agent_end") => {
            let last = v.get("messages").and_then(Value::as_array).and_then(|ms| {
                ms.iter()
                    .rev()
                    .find(|m| str_at(m, "role") == Some("assistant"))
            });
            if let Some(last) = last
                && !matches!(str_at(last, "stopReason"), Some("error" | "aborted"))
            {
                let text = message_text(last);
                if !text.trim().is_empty() {
                    out.push(AgentEvent::Result { text });
                }
            }
        }
        _ => {}
    }
}
