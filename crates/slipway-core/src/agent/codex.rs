//! OpenAI Codex CLI (`codex`).
//!
//! Flags, from the Codex docs (`docs/exec.md`, `docs/config.md`) and the clap
//! definitions in `codex-rs/exec/src/cli.rs` and `codex-rs/utils/cli`:
//! - `codex exec`: non-interactive. A prompt of `-` is read from stdin ("If not
//!   provided as an argument (or if `-` is used), instructions are read from
//!   stdin").
//! - `--json`: JSONL events on stdout (formerly `--experimental-json`).
//! - `-m/--model`; `-c key=value` overrides `config.toml`, the value parsed as
//!   TOML: `-c model_reasoning_effort="high"`.
//! - `--dangerously-bypass-approvals-and-sandbox`: no approvals, no Codex sandbox
//!   (the run is already in slipway's worktree or container; Codex's Landlock
//!   sandbox often cannot start inside a container anyway). `-s/--sandbox
//!   workspace-write|read-only` otherwise; `codex exec` never asks for approval,
//!   the interactive `codex` takes `-a/--ask-for-approval on-request`.
//! - `codex exec resume <SESSION_ID> -` continues a session and `codex exec fork
//!   <SESSION_ID> -` continues a copy of it under a new id; the exec options go
//!   before the subcommand ("`codex exec --model gpt-5 --json resume --last …`").
//!   The interactive `codex resume <ID>` and `codex fork <ID>` do the same.
//!
//! - `--add-dir <DIR>`: "Additional directories that should be writable
//!   alongside the primary workspace"; an interactive Codex in a linked
//!   worktree gets its git dirs this way ([`Agent::interactive_in`]).
//!
//! Events (`codex-rs/exec/src/exec_events.rs`): `thread.started {thread_id}`,
//! `turn.started`, `turn.completed {usage: {input_tokens, cached_input_tokens,
//! output_tokens}}`, `turn.failed {error: {message}}`, `item.started` /
//! `item.updated` / `item.completed {item}` with item types `agent_message`,
//! `reasoning`, `command_execution`, `file_change`, `mcp_tool_call`,
//! `web_search`, `todo_list`, `error`, and a top-level `error {message}`.
//! A `command_execution` whose `status` is `declined` was refused by the
//! approval policy: [`AgentEvent::PermissionDenied`].
//! Tool calls are reported once, from `item.completed` (some kinds, such as
//! `file_change`, have no `item.started`). The final answer is the last
//! `agent_message` of the turn, reported as `Result` at `turn.completed`.
//!
//! Seen with Codex 0.171.0 (recordings in `tests/fixtures/agents/real/`):
//! - `turn.completed` usage is the thread's running total, not the turn's: a
//!   resumed thread that had used 303/33 reports 606/66 after using 303/33 more,
//!   and a fork starts from its source's total. It becomes
//!   [`AgentEvent::SessionUsage`]; the run subtracts what the session had
//!   already used (the last `token_count` of its rollout file,
//!   [`crate::agent::session::codex_usage_total`]). `input_tokens` already
//!   includes `cached_input_tokens`.
//! - `item.completed` items of type `error` are notices, not failures: "Model
//!   metadata for `…` not found. Defaulting to fallback metadata", and the
//!   "Reconnecting… n/5" of a retried stream. A real failure ends the turn with
//!   `turn.failed` or a top-level `error`.
//! - A custom provider (`-c model_provider=… -c model_providers.<name>.base_url=…
//!   wire_api="responses" env_key=…`) points it at another endpoint; the key is
//!   read from the variable `env_key` names (`OPENAI_API_KEY` by default).

use serde_json::{Value, json};

use super::{
    Agent, AgentEvent, AgentInvocation, AgentOptions, AgentSpecError, Argv, PermissionMode,
    Resolved, SharedState, Supports, count_at, parse_json_line, push_text, str_at,
};

/// Provider name.
pub(crate) const NAME: &str = "codex";

/// Codex CLI.
#[derive(Debug)]
pub struct Codex {
    cfg: Resolved,
    state: SharedState,
}

impl Codex {
    /// Checks the options.
    pub fn new(opts: AgentOptions) -> Result<Codex, AgentSpecError> {
        Ok(Codex {
            cfg: Resolved::check(
                NAME,
                "codex",
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
        argv.opt("-m", o.model.as_deref());
        if let Some(effort) = &o.effort {
            argv.opt("-c", Some(&format!("model_reasoning_effort=\"{effort}\"")));
        }
        match (self.cfg.permission(unattended), unattended) {
            (PermissionMode::Bypass, _) => {
                argv.args(["--dangerously-bypass-approvals-and-sandbox"]);
            }
            (PermissionMode::AcceptEdits, true) => {
                argv.args(["--sandbox", "workspace-write"]);
            }
            (PermissionMode::AcceptEdits, false) => {
                argv.args([
                    "--sandbox",
                    "workspace-write",
                    "--ask-for-approval",
                    "on-request",
                ]);
            }
            (PermissionMode::Plan, true) => {
                argv.args(["--sandbox", "read-only"]);
            }
            (PermissionMode::Plan, false) => {
                argv.args(["--sandbox", "read-only", "--ask-for-approval", "on-request"]);
            }
            (PermissionMode::Default, _) => {}
        }
        argv.extend(&o.extra_args);
    }
}

impl Agent for Codex {
    fn name(&self) -> &'static str {
        NAME
    }

    fn unattended(&self, prompt: &str) -> Result<AgentInvocation, AgentSpecError> {
        let mut argv = Argv::new(&self.cfg.binary);
        argv.args(["exec", "--json"]);
        self.common(&mut argv, true);
        match self.cfg.resume() {
            Some((id, true)) => argv.args(["fork", id]),
            Some((id, false)) => argv.args(["resume", id]),
            None => &mut argv,
        };
        argv.args(["-"]);
        Ok(argv.invocation(Some(prompt)))
    }

    fn interactive(&self) -> AgentInvocation {
        self.interactive_in(&[])
    }

    fn interactive_in(&self, git_dirs: &[std::path::PathBuf]) -> AgentInvocation {
        let mut argv = Argv::new(&self.cfg.binary);
        self.common(&mut argv, false);
        // Its workspace-write sandbox (the default for a trusted folder, and
        // `acceptEdits`) leaves a linked worktree's git dir read-only: `git add`
        // would fail and the work stay uncommitted. Without a sandbox (bypass)
        // or read-only (plan) there is nothing to add.
        if !matches!(
            self.cfg.permission(false),
            PermissionMode::Bypass | PermissionMode::Plan
        ) {
            for dir in git_dirs {
                argv.opt("--add-dir", Some(&dir.display().to_string()));
            }
        }
        match self.cfg.resume() {
            Some((id, true)) => argv.args(["fork", id]),
            Some((id, false)) => argv.args(["resume", id]),
            None => &mut argv,
        };
        argv.invocation(None)
    }

    fn parse_line(&self, line: &str) -> Vec<AgentEvent> {
        parse_json_line(line, |v, out| parse(&self.state, v, out))
    }

    fn passthrough_env(&self) -> &'static [&'static str] {
        &[
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "OPENAI_ORGANIZATION",
            "OPENAI_PROJECT",
            "CODEX_API_KEY",
            "AZURE_OPENAI_API_KEY",
        ]
    }
}

fn parse(state: &SharedState, v: &Value, out: &mut Vec<AgentEvent>) {
    match str_at(v, "type") {
        Some("thread.started") => state.session(str_at(v, "thread_id"), out),
        Some("item.completed") => {
            if let Some(item) = v.get("item") {
                completed_item(state, item, out);
            }
        }
        Some("turn.completed") => {
            if let Some(text) = state.take_last_text() {
                out.push(AgentEvent::Result { text });
            }
            if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
                out.push(AgentEvent::SessionUsage {
                    input_tokens: count_at(u, "input_tokens"),
                    output_tokens: count_at(u, "output_tokens"),
                    cached_input_tokens: count_at(u, "cached_input_tokens"),
                });
            }
        }
        Some("turn.failed") => {
            let message = v
                .get("error")
                .and_then(|e| str_at(e, "message"))
                .unwrap_or("turn failed");
            out.push(AgentEvent::Error {
                message: message.to_owned(),
            });
        }
        Some("error") => out.push(AgentEvent::Error {
            message: str_at(v, "message").unwrap_or("error").to_owned(),
        }),
        _ => {}
    }
}

fn completed_item(state: &SharedState, item: &Value, out: &mut Vec<AgentEvent>) {
    let tool = |name: &str, input: Value| AgentEvent::ToolCall {
        name: name.to_owned(),
        input,
    };
    match str_at(item, "type") {
        Some("agent_message") => {
            let text = str_at(item, "text").unwrap_or_default();
            push_text(out, text);
            state.set_last_text(text);
        }
        // A command the approval policy refused: nobody was there to allow it.
        Some("command_execution") if str_at(item, "status") == Some("declined") => {
            out.push(AgentEvent::PermissionDenied {
                tool: "command_execution".to_owned(),
                target: str_at(item, "command").map(str::to_owned),
            })
        }
        Some("command_execution") => out.push(tool(
            "command_execution",
            json!({ "command": item.get("command").cloned().unwrap_or(Value::Null) }),
        )),
        Some("file_change") => out.push(tool(
            "file_change",
            json!({ "changes": item.get("changes").cloned().unwrap_or(Value::Null) }),
        )),
        Some("mcp_tool_call") => {
            let name = format!(
                "{}/{}",
                str_at(item, "server").unwrap_or_default(),
                str_at(item, "tool").unwrap_or_default()
            );
            out.push(tool(
                &name,
                item.get("arguments").cloned().unwrap_or(Value::Null),
            ));
        }
        Some("web_search") => out.push(tool(
            "web_search",
            json!({ "query": item.get("query").cloned().unwrap_or(Value::Null) }),
        )),
        Some("error") => out.push(AgentEvent::Notice {
            text: str_at(item, "message").unwrap_or("error").to_owned(),
        }),
        _ => {}
    }
}
