//! Agents: the programs that do the work. Each provider builds its unattended
//! and interactive command lines and parses its output stream.
//!
//! Providers: `command` (any program), `claude-code`, `codex`, `opencode`, `pi`,
//! `cursor` and `copilot`. The flags each provider passes, and the documents they
//! come from, are written next to the code in the provider's module.
//!
//! Prompts go to the agent on stdin where its CLI reads them there (Claude Code,
//! Codex, OpenCode, Pi, `command`). Cursor and Copilot take the prompt as a
//! command-line argument; [`MAX_ARG_PROMPT_BYTES`] guards those, because the
//! kernel refuses a single argument longer than 128 KiB (`MAX_ARG_STRLEN`) with
//! `E2BIG`, which would otherwise surface as an obscure spawn failure.

pub mod activity;
pub mod prompt;
pub mod session;

mod claude;
mod codex;
mod copilot;
mod cursor;
mod opencode;
mod pi;

pub use claude::ClaudeCode;
pub use codex::Codex;
pub use copilot::Copilot;
pub use cursor::Cursor;
pub use opencode::OpenCode;
pub use pi::Pi;
pub use session::SessionStore;

use std::sync::{Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The largest prompt, in bytes, that slipway passes as a single command-line
/// argument. Linux refuses any one argument over 128 KiB (`MAX_ARG_STRLEN`,
/// 32 pages); 100 000 bytes leaves room for the rest of the command line.
pub const MAX_ARG_PROMPT_BYTES: usize = 100_000;

/// How to start an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInvocation {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// What goes to its stdin.
    #[serde(skip)]
    pub stdin: Option<String>,
    /// Environment it needs.
    #[serde(skip)]
    pub env: Vec<(String, String)>,
}

/// Something an agent reported, parsed from one output line.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum AgentEvent {
    /// The assistant's text (for `command`, every output line).
    Text {
        /// The text.
        text: String,
    },
    /// The agent called a tool.
    ToolCall {
        /// Tool name as the agent names it (`Bash`, `command_execution`, `read`, …).
        name: String,
        /// The tool's arguments as the agent reported them.
        input: Value,
    },
    /// The agent's final answer for this invocation.
    Result {
        /// The answer.
        text: String,
    },
    /// The agent's session id (emitted once per id, when first seen).
    SessionId {
        /// The id, as the agent's resume flag takes it.
        id: String,
    },
    /// Token usage. Add up every `Usage` event of an invocation for its total.
    Usage {
        /// Input tokens, cached ones included.
        input_tokens: u64,
        /// Output tokens (reasoning included where the agent counts it there).
        output_tokens: u64,
        /// Of `input_tokens`, how many were read from the prompt cache.
        cached_input_tokens: u64,
        /// Cost in US dollars, when the agent reports one.
        #[serde(skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    /// The session's running token total (Codex reports usage this way): the
    /// invocation's usage is what the total grew by.
    SessionUsage {
        /// Input tokens so far, cached ones included.
        input_tokens: u64,
        /// Output tokens so far.
        output_tokens: u64,
        /// Of `input_tokens`, how many were read from the prompt cache.
        cached_input_tokens: u64,
    },
    /// The agent reported an error (it may still exit 0).
    Error {
        /// What the agent said.
        message: String,
    },
    /// The agent was refused a permission it asked for (nobody is there to
    /// grant it in an unattended run): the run ends asking the user.
    PermissionDenied {
        /// The tool it wanted (`Bash`, `command_execution`, …).
        tool: String,
        /// What it wanted it for (the command, the file), when it says.
        #[serde(skip_serializing_if = "Option::is_none")]
        target: Option<String>,
    },
    /// Something besides the assistant's words: a line outside the agent's
    /// event stream (a warning on stderr, a question, a banner) or a notice in
    /// it (a retry, missing model metadata). It goes to the log; it is never
    /// the agent's answer, an error, or a completion signal.
    Notice {
        /// The line or the notice.
        text: String,
    },
}

/// The longest step line shown; longer ones are cut with an ellipsis.
const STEP_WIDTH: usize = 120;

impl AgentEvent {
    /// What the agent is doing, in one line for a progress display: its
    /// latest words, or the tool it called and on what; `None` for events
    /// that are not work (a session id, usage).
    pub fn step(&self) -> Option<String> {
        let line = match self {
            AgentEvent::Text { text } | AgentEvent::Result { text } => text
                .lines()
                .rev()
                .map(str::trim)
                .find(|l| !l.is_empty())?
                .to_owned(),
            AgentEvent::ToolCall { name, input } => {
                let keys = [
                    "command",
                    "cmd",
                    "file_path",
                    "filePath",
                    "path",
                    "pattern",
                    "url",
                ];
                match argument(input, &keys) {
                    Some(on) => format!("{name}: {on}"),
                    None => name.clone(),
                }
            }
            _ => return None,
        };
        Some(cut(&line, STEP_WIDTH))
    }
}

/// The first of `keys` a tool's input has, as one line of text (a list of
/// words joined by spaces); `None` when none is there or it is blank.
pub(crate) fn argument(input: &Value, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|k| input.get(*k))
        .map(|v| match v {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" "),
            other => other.to_string(),
        })
        .map(|s| s.lines().next().unwrap_or_default().trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// `text` cut to `width` characters, an ellipsis marking the cut.
pub(crate) fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// An agent provider.
pub trait Agent: Send + Sync {
    /// The provider's name (`command`, `claude-code`, …).
    fn name(&self) -> &'static str;
    /// The command line for an unattended run with `prompt`. Fails when the
    /// prompt cannot reach the agent (too long for a command-line argument) or
    /// the spec asks for something this mode of the agent cannot do.
    fn unattended(&self, prompt: &str) -> Result<AgentInvocation, AgentSpecError>;
    /// The command line a person runs in a terminal.
    fn interactive(&self) -> AgentInvocation;

    /// The command line a person runs in a terminal in a checkout whose git
    /// dirs `git_dirs` lie outside it (a linked worktree's): an agent whose
    /// own sandbox allows writes only in its workspace (Codex) is also given
    /// those, so that it can commit. The others need nothing more.
    fn interactive_in(&self, _git_dirs: &[std::path::PathBuf]) -> AgentInvocation {
        self.interactive()
    }
    /// Parses one output line. Lines that are not JSON become [`AgentEvent::Notice`];
    /// JSON of a kind the provider does not know is ignored. Never panics.
    fn parse_line(&self, line: &str) -> Vec<AgentEvent>;

    /// Environment the agent needs inside a container sandbox, set by slipway
    /// (never on the command line).
    fn container_env(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// Names of the variables the agent's CLI reads for its endpoint and
    /// credentials. A container gets only declared environment: these are
    /// declared, and passed in from slipway's own environment when set there.
    fn passthrough_env(&self) -> &'static [&'static str] {
        &[]
    }

    /// Where the agent writes a log of `session_id` that holds token counts its
    /// output stream leaves out (Copilot), as a path for `sh` inside double
    /// quotes (it may use `$HOME` and other variables of the agent's environment).
    fn session_log(&self, _session_id: &str) -> Option<String> {
        None
    }

    /// Parses one line of [`Agent::session_log`] into the usage it records.
    fn parse_session_log_line(&self, _line: &str) -> Option<AgentEvent> {
        None
    }
}

/// How to install an agent's CLI, for the error that says it is missing:
/// the npm package of each provider the tests run (`scripts/agents.txt`).
pub fn install_command(agent: &str) -> Option<&'static str> {
    Some(match agent {
        "claude-code" => "npm install -g @anthropic-ai/claude-code",
        "codex" => "npm install -g @openai/codex",
        "opencode" => "npm install -g opencode-ai",
        "pi" => "npm install -g @mariozechner/pi-coding-agent",
        "copilot" => "npm install -g @github/copilot",
        "cursor" => "curl https://cursor.com/install -fsS | bash",
        _ => return None,
    })
}

/// How much an agent may do without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PermissionMode {
    /// Everything, without asking (the default for unattended runs: the agent
    /// works in its own worktree or sandbox and nobody is there to answer).
    Bypass,
    /// File edits without asking; other actions as the agent's own rules say.
    AcceptEdits,
    /// Read and plan only, no edits (`readOnly` is accepted as a synonym).
    #[serde(alias = "readOnly")]
    Plan,
    /// The agent's own default (the default for interactive sessions).
    Default,
}

/// Continue an earlier session of the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResumeSpec {
    /// The agent's session id (as [`AgentEvent::SessionId`] reported it).
    pub session_id: String,
    /// Start a new session from a copy of that one instead of continuing it.
    #[serde(default)]
    pub fork: bool,
}

/// Options every agent provider (other than `command`) takes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentOptions {
    /// Model, in the agent's own naming (`opencode` wants `provider/model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Reasoning effort, in the agent's own words: Claude Code `--effort`,
    /// Codex `model_reasoning_effort`, OpenCode `--variant`, Pi `--thinking`,
    /// Copilot `--effort`. Cursor has none (pick a model variant instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    /// Permission mode; unset means [`PermissionMode::Bypass`] for unattended
    /// runs and [`PermissionMode::Default`] interactively.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<PermissionMode>,
    /// Program name or path, instead of the provider's usual one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<String>,
    /// Extra arguments, placed after slipway's flags (before the prompt).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_args: Vec<String>,
    /// Continue (or fork) an earlier session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<ResumeSpec>,
}

/// Which agent to run, as the CLI and the protocol name it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum AgentSpec {
    /// Any program; the prompt reaches it on stdin and in `SLIPWAY_PROMPT`.
    Command {
        /// Program and arguments.
        command: Vec<String>,
    },
    /// Anthropic's Claude Code (`claude`).
    ClaudeCode(AgentOptions),
    /// OpenAI's Codex CLI (`codex`).
    Codex(AgentOptions),
    /// OpenCode (`opencode`).
    Opencode(AgentOptions),
    /// The Pi coding agent (`pi`).
    Pi(AgentOptions),
    /// Cursor's CLI agent (`cursor-agent`).
    Cursor(AgentOptions),
    /// GitHub Copilot CLI (`copilot`).
    Copilot(AgentOptions),
}

/// An agent spec that cannot be used, or a prompt it cannot take.
#[derive(Debug, thiserror::Error)]
pub enum AgentSpecError {
    /// `command` without a program.
    #[error("the command agent needs a program")]
    EmptyCommand,
    /// No provider has that name.
    #[error(
        "unknown agent `{0}`: use command, claude-code, codex, opencode, pi, cursor or copilot"
    )]
    UnknownAgent(String),
    /// An option value that cannot be passed to the agent.
    #[error("invalid {option} `{value}` for {agent}: {reason}")]
    InvalidOption {
        /// Provider name.
        agent: &'static str,
        /// Option name as the spec spells it.
        option: &'static str,
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The agent has no such option.
    #[error("{agent} does not support {option}: {hint}")]
    Unsupported {
        /// Provider name.
        agent: &'static str,
        /// What was asked for.
        option: &'static str,
        /// What to do instead.
        hint: &'static str,
    },
    /// The prompt is too long to pass as a command-line argument.
    #[error(
        "the prompt is {bytes} bytes, but {agent} takes its prompt as a command-line argument, \
         limited to {limit} bytes; shorten the prompt or use an agent that reads it on stdin \
         (claude-code, codex, opencode, pi)"
    )]
    PromptTooLarge {
        /// Provider name.
        agent: &'static str,
        /// Prompt size.
        bytes: usize,
        /// The limit ([`MAX_ARG_PROMPT_BYTES`]).
        limit: usize,
    },
}

impl AgentSpecError {
    /// A stable name for the protocol's `data.kind`.
    pub fn kind(&self) -> crate::error::ErrorKind {
        match self {
            AgentSpecError::EmptyCommand
            | AgentSpecError::UnknownAgent(_)
            | AgentSpecError::InvalidOption { .. } => crate::error::ErrorKind::InvalidParams,
            AgentSpecError::Unsupported { .. } => crate::error::ErrorKind::Unsupported,
            AgentSpecError::PromptTooLarge { .. } => crate::error::ErrorKind::PromptTooLarge,
        }
    }
}

impl AgentSpec {
    /// A provider spec from its name (`claude-code`, `codex`, `opencode`, `pi`,
    /// `cursor`, `copilot`) and options, as the CLI builds it from
    /// `--agent NAME --model M …`. `command` is not built here (it has a program,
    /// not options).
    pub fn named(name: &str, options: AgentOptions) -> Result<AgentSpec, AgentSpecError> {
        Ok(match name {
            "claude-code" => AgentSpec::ClaudeCode(options),
            "codex" => AgentSpec::Codex(options),
            "opencode" => AgentSpec::Opencode(options),
            "pi" => AgentSpec::Pi(options),
            "cursor" => AgentSpec::Cursor(options),
            "copilot" => AgentSpec::Copilot(options),
            other => return Err(AgentSpecError::UnknownAgent(other.to_owned())),
        })
    }

    /// The provider's name, as in the JSON `type`.
    pub fn name(&self) -> &'static str {
        match self {
            AgentSpec::Command { .. } => "command",
            AgentSpec::ClaudeCode(_) => claude::NAME,
            AgentSpec::Codex(_) => codex::NAME,
            AgentSpec::Opencode(_) => opencode::NAME,
            AgentSpec::Pi(_) => pi::NAME,
            AgentSpec::Cursor(_) => cursor::NAME,
            AgentSpec::Copilot(_) => copilot::NAME,
        }
    }

    /// The provider options (none for `command`).
    pub fn options(&self) -> Option<&AgentOptions> {
        match self {
            AgentSpec::Command { .. } => None,
            AgentSpec::ClaudeCode(o)
            | AgentSpec::Codex(o)
            | AgentSpec::Opencode(o)
            | AgentSpec::Pi(o)
            | AgentSpec::Cursor(o)
            | AgentSpec::Copilot(o) => Some(o),
        }
    }

    /// The provider options, to change them (none for `command`).
    pub fn options_mut(&mut self) -> Option<&mut AgentOptions> {
        match self {
            AgentSpec::Command { .. } => None,
            AgentSpec::ClaudeCode(o)
            | AgentSpec::Codex(o)
            | AgentSpec::Opencode(o)
            | AgentSpec::Pi(o)
            | AgentSpec::Cursor(o)
            | AgentSpec::Copilot(o) => Some(o),
        }
    }

    /// The session store of agents whose sessions slipway can carry into a
    /// sandbox (Claude Code, Codex, Pi).
    pub fn session_store(&self) -> Option<SessionStore> {
        match self {
            AgentSpec::ClaudeCode(_) => Some(SessionStore::ClaudeCode),
            AgentSpec::Codex(_) => Some(SessionStore::Codex),
            AgentSpec::Pi(_) => Some(SessionStore::Pi),
            _ => None,
        }
    }

    /// For a handoff: when no session is named, resume the newest one the agent
    /// keeps for `cwd` (the interactive conversation in that worktree), if it
    /// keeps any. Returns the session id chosen.
    pub fn resume_latest_session(&mut self, cwd: &std::path::Path) -> Option<String> {
        let store = self.session_store()?;
        let options = self.options_mut()?;
        if options.resume.is_some() {
            return None;
        }
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from)?;
        let root = store.root_in_env(&home, |name| std::env::var_os(name));
        let id = store.latest_for_cwd(&root, cwd)?;
        options.resume = Some(ResumeSpec {
            session_id: id.clone(),
            fork: false,
        });
        Some(id)
    }

    /// Builds the provider, checking every option.
    pub fn build(&self) -> Result<Box<dyn Agent>, AgentSpecError> {
        match self {
            AgentSpec::Command { command } if command.is_empty() => {
                Err(AgentSpecError::EmptyCommand)
            }
            AgentSpec::Command { command } => Ok(Box::new(CommandAgent {
                argv: command.clone(),
            })),
            AgentSpec::ClaudeCode(o) => Ok(Box::new(ClaudeCode::new(o.clone())?)),
            AgentSpec::Codex(o) => Ok(Box::new(Codex::new(o.clone())?)),
            AgentSpec::Opencode(o) => Ok(Box::new(OpenCode::new(o.clone())?)),
            AgentSpec::Pi(o) => Ok(Box::new(Pi::new(o.clone())?)),
            AgentSpec::Cursor(o) => Ok(Box::new(Cursor::new(o.clone())?)),
            AgentSpec::Copilot(o) => Ok(Box::new(Copilot::new(o.clone())?)),
        }
    }
}

/// Any program: prompt on stdin and in `SLIPWAY_PROMPT`; every line is text.
#[derive(Debug, Clone)]
pub struct CommandAgent {
    /// Program and arguments.
    pub argv: Vec<String>,
}

impl Agent for CommandAgent {
    fn name(&self) -> &'static str {
        "command"
    }

    fn unattended(&self, prompt: &str) -> Result<AgentInvocation, AgentSpecError> {
        Ok(AgentInvocation {
            argv: self.argv.clone(),
            stdin: Some(prompt.to_owned()),
            env: vec![("SLIPWAY_PROMPT".to_owned(), prompt.to_owned())],
        })
    }

    fn interactive(&self) -> AgentInvocation {
        AgentInvocation {
            argv: self.argv.clone(),
            stdin: None,
            env: Vec::new(),
        }
    }

    fn parse_line(&self, line: &str) -> Vec<AgentEvent> {
        vec![AgentEvent::Text {
            text: line.to_owned(),
        }]
    }
}

// ---------------------------------------------------------------------------
// Shared by the providers.
// ---------------------------------------------------------------------------

/// Options checked and resolved for one provider.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    /// Provider name, for errors.
    pub agent: &'static str,
    /// Program to run.
    pub binary: String,
    /// The options as given.
    pub opts: AgentOptions,
}

/// What a provider supports, for [`Resolved::check`].
pub(crate) struct Supports {
    /// Has an effort / reasoning option.
    pub effort: bool,
    /// Can fork a session.
    pub fork: bool,
}

impl Resolved {
    /// Checks `opts` for provider `agent` whose program is usually `binary`.
    pub fn check(
        agent: &'static str,
        binary: &str,
        opts: AgentOptions,
        supports: Supports,
    ) -> Result<Resolved, AgentSpecError> {
        let invalid = |option: &'static str, value: &str, reason: &'static str| {
            AgentSpecError::InvalidOption {
                agent,
                option,
                value: value.to_owned(),
                reason,
            }
        };
        if let Some(model) = &opts.model
            && !is_flag_value(model)
        {
            return Err(invalid(
                "model",
                model,
                "must be non-empty, without spaces, and not start with `-`",
            ));
        }
        if let Some(effort) = &opts.effort {
            if !supports.effort {
                return Err(AgentSpecError::Unsupported {
                    agent,
                    option: "effort",
                    hint: "choose a model that carries the reasoning level in its name instead",
                });
            }
            if effort.is_empty()
                || effort.starts_with('-')
                || !effort
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            {
                return Err(invalid(
                    "effort",
                    effort,
                    "must be a word such as low, medium or high",
                ));
            }
        }
        if let Some(binary) = &opts.binary
            && (binary.is_empty() || binary.starts_with('-') || binary.contains('\0'))
        {
            return Err(invalid("binary", binary, "must be a program name or path"));
        }
        if let Some(resume) = &opts.resume {
            if !is_session_id(&resume.session_id) {
                return Err(invalid(
                    "resume.sessionId",
                    &resume.session_id,
                    "must be letters, digits, `.`, `_`, `:` or `-`, starting with a letter or digit",
                ));
            }
            if resume.fork && !supports.fork {
                return Err(AgentSpecError::Unsupported {
                    agent,
                    option: "resume.fork",
                    hint: "resume the session without forking it",
                });
            }
        }
        if let Some(arg) = opts.extra_args.iter().find(|a| a.contains('\0')) {
            return Err(invalid("extraArgs", arg, "may not contain NUL"));
        }
        Ok(Resolved {
            agent,
            binary: opts.binary.clone().unwrap_or_else(|| binary.to_owned()),
            opts,
        })
    }

    /// The permission mode in force.
    pub fn permission(&self, unattended: bool) -> PermissionMode {
        self.opts.permission_mode.unwrap_or(if unattended {
            PermissionMode::Bypass
        } else {
            PermissionMode::Default
        })
    }

    /// The session to resume, if any: `(id, fork)`.
    pub fn resume(&self) -> Option<(&str, bool)> {
        self.opts
            .resume
            .as_ref()
            .map(|r| (r.session_id.as_str(), r.fork))
    }

    /// Fails when `prompt` cannot be passed as one argument.
    pub fn check_arg_prompt(&self, prompt: &str) -> Result<(), AgentSpecError> {
        if prompt.len() > MAX_ARG_PROMPT_BYTES {
            return Err(AgentSpecError::PromptTooLarge {
                agent: self.agent,
                bytes: prompt.len(),
                limit: MAX_ARG_PROMPT_BYTES,
            });
        }
        Ok(())
    }
}

/// A value that can follow a flag: non-empty, no whitespace or control
/// characters, not starting with `-` (it would read as another flag).
fn is_flag_value(value: &str) -> bool {
    !value.is_empty()
        && !value.starts_with('-')
        && !value.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// A session id every supported agent can take after its resume flag.
fn is_session_id(id: &str) -> bool {
    let mut chars = id.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
        && id.len() <= 256
}

/// Argument vector under construction.
#[derive(Debug, Default)]
pub(crate) struct Argv(pub Vec<String>);

impl Argv {
    /// Starts with the program.
    pub fn new(program: &str) -> Argv {
        Argv(vec![program.to_owned()])
    }

    /// Appends arguments.
    pub fn args<const N: usize>(&mut self, args: [&str; N]) -> &mut Argv {
        self.0.extend(args.iter().map(|a| (*a).to_owned()));
        self
    }

    /// Appends `flag value` when there is a value.
    pub fn opt(&mut self, flag: &str, value: Option<&str>) -> &mut Argv {
        if let Some(value) = value {
            self.0.push(flag.to_owned());
            self.0.push(value.to_owned());
        }
        self
    }

    /// Appends owned arguments.
    pub fn extend(&mut self, args: &[String]) -> &mut Argv {
        self.0.extend(args.iter().cloned());
        self
    }

    /// The invocation.
    pub fn invocation(self, stdin: Option<&str>) -> AgentInvocation {
        AgentInvocation {
            argv: self.0,
            stdin: stdin.map(str::to_owned),
            env: Vec::new(),
        }
    }
}

/// Per-stream parser state: the session id already reported and the last
/// assistant text (for agents whose final result is their last message).
#[derive(Debug, Default)]
pub(crate) struct StreamState {
    session: Option<String>,
    last_text: Option<String>,
}

/// [`StreamState`] shared by `&self` parsers.
#[derive(Debug, Default)]
pub(crate) struct SharedState(Mutex<StreamState>);

impl SharedState {
    fn lock(&self) -> MutexGuard<'_, StreamState> {
        // A panic elsewhere while holding the lock leaves plain data behind: keep going.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A `SessionId` event when `id` was not reported before.
    pub fn session(&self, id: Option<&str>, out: &mut Vec<AgentEvent>) {
        let Some(id) = id.filter(|id| !id.is_empty()) else {
            return;
        };
        let mut state = self.lock();
        if state.session.as_deref() != Some(id) {
            state.session = Some(id.to_owned());
            out.push(AgentEvent::SessionId { id: id.to_owned() });
        }
    }

    /// Remembers the latest assistant text.
    pub fn set_last_text(&self, text: &str) {
        self.lock().last_text = Some(text.to_owned());
    }

    /// Takes the remembered text.
    pub fn take_last_text(&self) -> Option<String> {
        self.lock().last_text.take()
    }
}

/// Parses a line as a JSON object. `Err(Some(notice))` for a line that is not
/// JSON (it becomes a notice), `Err(None)` for blank lines and JSON that is not an
/// object (ignored).
pub(crate) fn json_object(line: &str) -> Result<Value, Option<AgentEvent>> {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return Err(None);
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(None),
        Err(_) => Err(Some(AgentEvent::Notice {
            text: line.trim_end_matches(['\r', '\n']).to_owned(),
        })),
    }
}

/// Runs a provider's JSON parser over one line with the shared fallbacks.
pub(crate) fn parse_json_line(
    line: &str,
    parse: impl FnOnce(&Value, &mut Vec<AgentEvent>),
) -> Vec<AgentEvent> {
    match json_object(line) {
        Ok(value) => {
            let mut out = Vec::new();
            parse(&value, &mut out);
            out
        }
        Err(text) => text.into_iter().collect(),
    }
}

/// `value[key]` as a string.
pub(crate) fn str_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// `value[key]` as a count (0 when absent or not a number).
pub(crate) fn count_at(value: &Value, key: &str) -> u64 {
    match value.get(key) {
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
            .unwrap_or(0),
        _ => 0,
    }
}

/// `value[key]` as a float.
pub(crate) fn float_at(value: &Value, key: &str) -> Option<f64> {
    value.get(key).and_then(Value::as_f64)
}

/// Pushes a `Text` event for non-empty text.
pub(crate) fn push_text(out: &mut Vec<AgentEvent>, text: &str) {
    if !text.trim().is_empty() {
        out.push(AgentEvent::Text {
            text: text.to_owned(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_spec_json_is_unchanged() {
        let spec: AgentSpec =
            serde_json::from_str(r#"{"type":"command","command":["sh"]}"#).expect("parses");
        assert_eq!(
            spec,
            AgentSpec::Command {
                command: vec!["sh".into()]
            }
        );
        assert_eq!(
            serde_json::to_string(&spec).expect("serializes"),
            r#"{"type":"command","command":["sh"]}"#
        );
        let agent = spec.build().expect("builds");
        assert_eq!(agent.name(), "command");
        let inv = agent.unattended("do it").expect("infallible");
        assert_eq!(inv.argv, vec!["sh".to_owned()]);
        assert_eq!(inv.stdin.as_deref(), Some("do it"));
        assert_eq!(
            inv.env,
            vec![("SLIPWAY_PROMPT".to_owned(), "do it".to_owned())]
        );
        assert_eq!(agent.interactive().argv, vec!["sh".to_owned()]);
        assert_eq!(
            agent.parse_line("{\"type\":\"x\"}"),
            vec![AgentEvent::Text {
                text: "{\"type\":\"x\"}".into()
            }]
        );
    }

    #[test]
    fn empty_command_is_refused() {
        let spec = AgentSpec::Command { command: vec![] };
        assert!(matches!(spec.build(), Err(AgentSpecError::EmptyCommand)));
    }

    #[test]
    fn session_ids_are_checked() {
        assert!(is_session_id("0199a213-81c0-7800-8aa1-bbab2a035a53"));
        assert!(is_session_id("ses_494719016ffe85dkDMj0FPRbHK"));
        assert!(!is_session_id("-rf"));
        assert!(!is_session_id("../x"));
        assert!(!is_session_id(""));
    }

    #[test]
    fn shared_state_reports_each_session_once() {
        let state = SharedState::default();
        let mut out = Vec::new();
        state.session(Some("a"), &mut out);
        state.session(Some("a"), &mut out);
        state.session(Some("b"), &mut out);
        state.session(None, &mut out);
        assert_eq!(
            out,
            vec![
                AgentEvent::SessionId { id: "a".into() },
                AgentEvent::SessionId { id: "b".into() }
            ]
        );
    }
}
