//! What an agent is doing, in people's words, folded from its event stream:
//! the current step ("editing src/cli.rs", "running cargo test"), the files
//! its edit tools touched, its turns and its usage so far.
//!
//! Each provider names its tools its own way (Claude Code `Edit`, Codex
//! `file_change`, Pi `edit`, Copilot `str_replace_editor`, …): [`tool_kind`]
//! maps them, per provider, to the few kinds of work a person tells apart.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::AgentEvent;

/// The most files an activity lists; more are counted, not named.
const MAX_FILES: usize = 200;

/// An agent's activity so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Activity {
    /// The current step, in one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// Files the agent's edit tools touched, relative to its worktree where
    /// they are inside it, sorted (at most 200).
    #[serde(default)]
    pub files: Vec<String>,
    /// How many files were touched (also those past the listed 200).
    #[serde(default)]
    pub files_touched: usize,
    /// Messages of the model so far, as its stream shows them: lines carrying
    /// its words or tool calls (most agents show a reply's words and its tool
    /// call as two; Codex as one).
    #[serde(default)]
    pub turns: u32,
    /// Tool calls so far.
    #[serde(default)]
    pub tool_calls: u32,
    /// Input tokens so far, as the agent reported them (cached ones included).
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens so far.
    #[serde(default)]
    pub output_tokens: u64,
    /// Cost in US dollars so far, when the agent reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl Activity {
    /// Input and output tokens together.
    pub fn tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// One line for a progress display or a list: the step, then tokens and
    /// cost when known.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if let Some(step) = &self.step {
            parts.push(step.clone());
        }
        if self.tokens() > 0 {
            parts.push(format!("{} tokens", self.tokens()));
        }
        if let Some(cost) = self.cost_usd {
            parts.push(format!("${cost:.2}"));
        }
        parts.join(" · ")
    }
}

/// Folds a provider's events into an [`Activity`].
#[derive(Debug, Clone)]
pub struct Watcher {
    provider: &'static str,
    worktree: std::path::PathBuf,
    files: BTreeSet<String>,
    activity: Activity,
}

impl Watcher {
    /// A watcher of `provider` (its name, as [`super::Agent::name`]) working in `worktree`.
    pub fn new(provider: &'static str, worktree: &Path) -> Watcher {
        Watcher {
            provider,
            worktree: worktree.to_path_buf(),
            files: BTreeSet::new(),
            activity: Activity::default(),
        }
    }

    /// Takes the events parsed from one output line; true when the step or
    /// the files changed.
    pub fn line(&mut self, events: &[AgentEvent]) -> bool {
        let before = (self.activity.step.clone(), self.files.len());
        let mut model = false;
        for event in events {
            match event {
                AgentEvent::ToolCall { name, input } => {
                    model = true;
                    self.activity.tool_calls += 1;
                    let (step, files) = tool_step(self.provider, name, input, &self.worktree);
                    // Paths and steps are the agent's words: shown, never obeyed.
                    self.files
                        .extend(files.iter().map(|f| crate::shown::line(f)));
                    self.activity.step =
                        Some(super::cut(&crate::shown::line(&step), super::STEP_WIDTH));
                }
                AgentEvent::Text { .. } | AgentEvent::Result { .. } => {
                    model |= matches!(event, AgentEvent::Text { .. });
                    if let Some(step) = event.step() {
                        self.activity.step = Some(crate::shown::line(&step));
                    }
                }
                _ => {}
            }
        }
        // Every line of the `command` agent is text, but no model's message.
        if model && self.provider != "command" {
            self.activity.turns += 1;
        }
        (self.activity.step.clone(), self.files.len()) != before
    }

    /// Sets the usage so far (the run adds it up across iterations).
    pub fn usage(&mut self, input_tokens: u64, output_tokens: u64, cost_usd: Option<f64>) {
        self.activity.input_tokens = input_tokens;
        self.activity.output_tokens = output_tokens;
        self.activity.cost_usd = cost_usd;
    }

    /// The activity so far.
    pub fn activity(&self) -> Activity {
        let mut activity = self.activity.clone();
        activity.files = self.files.iter().take(MAX_FILES).cloned().collect();
        activity.files_touched = self.files.len();
        activity
    }
}

/// `file` relative to `worktree` when it is inside it.
fn shown(file: &str, worktree: &Path) -> String {
    Path::new(file)
        .strip_prefix(worktree)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| file.to_owned())
}

/// The kinds of work a person tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// Runs a shell command.
    Run,
    /// Reads a file.
    Read,
    /// Creates, edits or deletes files.
    Edit,
    /// Searches files or names.
    Search,
    /// Lists a folder.
    List,
    /// Fetches or searches the web.
    Web,
    /// Keeps a to-do list.
    Plan,
    /// Anything else: shown by its name.
    Other,
}

/// How `provider` names its tools.
pub fn tool_kind(provider: &str, name: &str) -> ToolKind {
    use ToolKind::*;
    match (provider, name) {
        ("claude-code", "Bash" | "BashOutput") => Run,
        ("claude-code", "Read") => Read,
        ("claude-code", "Edit" | "MultiEdit" | "Write" | "NotebookEdit") => Edit,
        ("claude-code", "Grep" | "Glob") => Search,
        ("claude-code", "LS") => List,
        ("claude-code", "WebFetch" | "WebSearch") => Web,
        ("claude-code", "TodoWrite") => Plan,
        ("codex", "command_execution") => Run,
        ("codex", "file_change") => Edit,
        ("codex", "web_search") => Web,
        ("opencode", "bash") => Run,
        ("opencode", "read") => Read,
        ("opencode", "edit" | "write" | "patch" | "multiedit") => Edit,
        ("opencode", "grep" | "glob") => Search,
        ("opencode", "list") => List,
        ("opencode", "webfetch" | "websearch") => Web,
        ("opencode", "todowrite") => Plan,
        ("pi", "bash") => Run,
        ("pi", "read") => Read,
        ("pi", "edit" | "write") => Edit,
        ("pi", "grep" | "find") => Search,
        ("pi", "ls") => List,
        ("copilot", "bash" | "shell") => Run,
        ("copilot", "view") => Read,
        ("copilot", "edit" | "create" | "str_replace_editor" | "apply_patch") => Edit,
        ("copilot", "grep" | "glob") => Search,
        ("copilot", "web_fetch") => Web,
        ("cursor", "shell") => Run,
        ("cursor", "read") => Read,
        ("cursor", "write" | "edit" | "delete") => Edit,
        ("cursor", "grep" | "glob") => Search,
        ("cursor", "ls") => List,
        ("cursor", "updateTodos" | "todo") => Plan,
        _ => Other,
    }
}

/// The step a tool call is, and the files it touches.
fn tool_step(provider: &str, name: &str, input: &Value, worktree: &Path) -> (String, Vec<String>) {
    let text = |keys: &[&str]| super::argument(input, keys);
    let paths = [
        "file_path",
        "filePath",
        "path",
        "notebook_path",
        "target_file",
    ];
    let path = || text(&paths).map(|p| shown(&p, worktree));
    let with = |verb: &str, on: Option<String>| match on {
        Some(on) => format!("{verb} {on}"),
        None => verb.to_owned(),
    };
    match tool_kind(provider, name) {
        ToolKind::Run => (
            with(
                "running",
                text(&["command", "cmd"]).map(|c| unwrap_shell(&c)),
            ),
            Vec::new(),
        ),
        ToolKind::Read => (with("reading", path()), Vec::new()),
        ToolKind::Edit => {
            let files: Vec<String> = edited_files(input, &paths)
                .iter()
                .map(|f| shown(f, worktree))
                .filter(|f| !f.is_empty())
                .collect();
            let on = match files.as_slice() {
                [] => None,
                [one] => Some(one.clone()),
                [first, rest @ ..] => Some(format!("{first} and {} more", rest.len())),
            };
            (with("editing", on), files)
        }
        ToolKind::Search => (
            with("searching for", text(&["pattern", "query", "glob"])),
            Vec::new(),
        ),
        ToolKind::List => (with("listing", path()), Vec::new()),
        ToolKind::Web => (with("looking up", text(&["url", "query"])), Vec::new()),
        ToolKind::Plan => ("planning".to_owned(), Vec::new()),
        ToolKind::Other => (with(name, path()), Vec::new()),
    }
}

/// The files an edit names: one path argument, or Codex's list of changes.
fn edited_files(input: &Value, keys: &[&str]) -> Vec<String> {
    if let Some(changes) = input.get("changes").and_then(Value::as_array) {
        return changes
            .iter()
            .filter_map(|c| c.get("path").and_then(Value::as_str))
            .map(str::to_owned)
            .collect();
    }
    keys.iter()
        .find_map(|k| input.get(*k).and_then(Value::as_str))
        .map(|p| vec![p.to_owned()])
        .unwrap_or_default()
}

/// `cargo test` from `/bin/bash -lc "cargo test"` (Codex wraps every command
/// in a login shell; a person asked for what is inside).
fn unwrap_shell(command: &str) -> String {
    for shell in ["/bin/bash -lc ", "bash -lc ", "/bin/sh -c ", "sh -c "] {
        if let Some(rest) = command.strip_prefix(shell) {
            let rest = rest.trim();
            for quote in ['"', '\''] {
                if let Some(inner) = rest.strip_prefix(quote).and_then(|r| r.strip_suffix(quote)) {
                    return inner.replace(&format!("\\{quote}"), &quote.to_string());
                }
            }
            return rest.to_owned();
        }
    }
    command.to_owned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(name: &str, input: Value) -> AgentEvent {
        AgentEvent::ToolCall {
            name: name.into(),
            input,
        }
    }

    #[test]
    fn each_providers_edit_tool_is_an_edit_of_its_file() {
        let cases = [
            ("claude-code", "Edit", json!({"file_path": "/w/src/cli.rs"})),
            ("opencode", "edit", json!({"filePath": "/w/src/cli.rs"})),
            ("pi", "edit", json!({"path": "src/cli.rs"})),
            (
                "copilot",
                "str_replace_editor",
                json!({"path": "/w/src/cli.rs"}),
            ),
            ("cursor", "edit", json!({"path": "/w/src/cli.rs"})),
            (
                "codex",
                "file_change",
                json!({"changes": [{"path": "/w/src/cli.rs", "kind": "update"}]}),
            ),
        ];
        for (provider, name, input) in cases {
            let mut w = Watcher::new(provider, Path::new("/w"));
            assert!(w.line(&[call(name, input)]));
            let a = w.activity();
            assert_eq!(a.step.as_deref(), Some("editing src/cli.rs"), "{provider}");
            assert_eq!(a.files, vec!["src/cli.rs".to_owned()], "{provider}");
            assert_eq!((a.turns, a.tool_calls), (1, 1), "{provider}");
        }
    }

    #[test]
    fn steps_say_what_the_tool_does() {
        let mut w = Watcher::new("claude-code", Path::new("/w"));
        w.line(&[call("Read", json!({"file_path": "/w/README.md"}))]);
        assert_eq!(w.activity().step.as_deref(), Some("reading README.md"));
        w.line(&[call("Grep", json!({"pattern": "fn main"}))]);
        assert_eq!(w.activity().step.as_deref(), Some("searching for fn main"));
        w.line(&[call("Mystery", json!({}))]);
        assert_eq!(w.activity().step.as_deref(), Some("Mystery"));
        assert!(w.activity().files.is_empty());
    }

    #[test]
    fn codex_commands_lose_their_login_shell() {
        assert_eq!(unwrap_shell("/bin/bash -lc \"cargo test\""), "cargo test");
        assert_eq!(unwrap_shell("/bin/bash -lc 'echo \\'x\\''"), "echo 'x'");
        assert_eq!(unwrap_shell("cargo test"), "cargo test");
    }

    #[test]
    fn command_output_is_the_step_but_no_turn() {
        let mut w = Watcher::new("command", Path::new("/w"));
        w.line(&[AgentEvent::Text {
            text: "building 3 of 7".into(),
        }]);
        let a = w.activity();
        assert_eq!(a.step.as_deref(), Some("building 3 of 7"));
        assert_eq!(a.turns, 0);
    }

    /// The steps, turns and tool calls a provider's real stream (recorded
    /// from its CLI, see tests/fixtures/agents/real) gives.
    fn real(provider: &str, file: &str) -> (Vec<String>, Activity) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/agents/real")
            .join(file);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let spec: crate::agent::AgentSpec =
            serde_json::from_value(json!({ "type": provider })).expect("spec");
        let agent = spec.build().expect("builds");
        let mut w = Watcher::new(agent.name(), Path::new("/w"));
        let mut steps = Vec::new();
        for line in text.lines() {
            if w.line(&agent.parse_line(line))
                && let Some(step) = w.activity().step
            {
                steps.push(step);
            }
        }
        (steps, w.activity())
    }

    #[test]
    fn each_providers_real_stream_gives_the_command_it_ran_then_its_answer() {
        let done = "All done: hello.txt is committed. <promise>COMPLETE</promise>";
        // Codex shows a reply as one message; the others show its words and
        // its tool call apart.
        for (provider, file, n, turns) in [
            ("claude-code", "claude.jsonl", 2, 3),
            ("codex", "codex.jsonl", 1, 2),
            ("codex", "codex-resume.jsonl", 2, 2),
            ("opencode", "opencode.jsonl", 1, 3),
            ("pi", "pi.jsonl", 1, 3),
            ("copilot", "copilot.jsonl", 1, 3),
        ] {
            let (steps, activity) = real(provider, file);
            let ran = format!(
                "running echo hello-{n} >> hello.txt && git add hello.txt && git commit -q -m 'agent: hello {n}' && echo committed-{n}"
            );
            assert!(steps.contains(&ran), "{file}: {steps:?}");
            assert_eq!(
                steps.last().map(String::as_str),
                Some(done),
                "{file}: {steps:?}"
            );
            assert_eq!(activity.tool_calls, 1, "{file}");
            assert_eq!(activity.turns, turns, "{file}");
            assert!(
                activity.files.is_empty(),
                "{file}: a shell command names no file"
            );
        }
    }

    #[test]
    fn each_providers_real_write_tool_is_an_edit_of_its_file() {
        // The model wrote notes.txt with the agent's own tool (Claude Code
        // `Write`, Codex `apply_patch`, OpenCode and Pi `write`, Copilot
        // `create`), then committed it with the shell tool.
        let done = "All done: notes.txt is committed. <promise>COMPLETE</promise>";
        for (provider, file) in [
            ("claude-code", "claude-write.jsonl"),
            ("codex", "codex-write.jsonl"),
            ("opencode", "opencode-write.jsonl"),
            ("pi", "pi-write.jsonl"),
            ("copilot", "copilot-write.jsonl"),
        ] {
            let (steps, activity) = real(provider, file);
            assert_eq!(
                steps.first().map(String::as_str),
                Some("editing notes.txt"),
                "{file}: {steps:?}"
            );
            assert_eq!(
                steps.last().map(String::as_str),
                Some(done),
                "{file}: {steps:?}"
            );
            assert_eq!(activity.files, vec!["notes.txt".to_owned()], "{file}");
            assert_eq!(activity.files_touched, 1, "{file}");
            assert_eq!(activity.tool_calls, 2, "{file}");
        }
    }

    #[test]
    fn summary_has_tokens_and_cost_when_known() {
        let mut w = Watcher::new("pi", Path::new("/w"));
        w.line(&[call("bash", json!({"command": "cargo test"}))]);
        assert_eq!(w.activity().summary(), "running cargo test");
        w.usage(100, 20, Some(0.5));
        assert_eq!(
            w.activity().summary(),
            "running cargo test · 120 tokens · $0.50"
        );
    }
}
