//! Errors at the edge: a stable kind, a message that says what to do, and any
//! data a machine needs (choices, preserved paths).

use serde::Serialize;
use serde_json::Value;
use slipway_core::error::{ErrorKind, Failure, Field, Hint};
use slipway_core::plan::PlanError;

/// An error as the CLI reports it.
#[derive(Debug, Serialize)]
pub struct CliError {
    pub kind: ErrorKind,
    pub message: String,
    /// Machine-readable details; `actions` among them when there are any.
    #[serde(skip_serializing_if = "Value::is_null")]
    pub data: Value,
    /// What to do next, printed as commands under the message.
    #[serde(skip)]
    pub actions: Vec<slipway_core::actions::Action>,
}

impl CliError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> CliError {
        CliError {
            kind,
            message: message.into(),
            data: Value::Null,
            actions: Vec::new(),
        }
    }

    pub fn with_data(mut self, data: Value) -> CliError {
        self.data = data;
        self
    }
}

impl From<slipway_core::git::OpenError> for CliError {
    fn from(e: slipway_core::git::OpenError) -> Self {
        CliError::from_failure(&e)
    }
}

impl From<slipway_core::git::policy::PolicyArgError> for CliError {
    fn from(e: slipway_core::git::policy::PolicyArgError) -> Self {
        CliError::new(ErrorKind::InvalidParams, e.to_string())
    }
}

impl From<slipway_core::worktree::CreateError> for CliError {
    fn from(e: slipway_core::worktree::CreateError) -> Self {
        use slipway_core::worktree::CreateError;
        match e {
            CreateError::Source(inner) => CliError::from_failure(&inner),
            other => CliError::new(other.kind(), other.to_string()),
        }
    }
}

impl From<slipway_core::worktree::CloseError> for CliError {
    fn from(e: slipway_core::worktree::CloseError) -> Self {
        CliError::from_failure(&e)
    }
}

impl From<git2::Error> for CliError {
    fn from(e: git2::Error) -> Self {
        CliError::new(ErrorKind::Git, format!("git: {e}"))
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        CliError::new(ErrorKind::Io, e.to_string())
    }
}

/// A flag, as the command line spells the input.
fn flag(field: Field) -> &'static str {
    match field {
        Field::Repository => "--repo PATH",
        Field::Strategy => "--strategy",
        Field::Branch => "--branch NAME",
        Field::Base => "--base",
        Field::Worktree => "--worktree ID",
        Field::Source => "--source",
        Field::Ref => "--ref REF",
        Field::Copy => "--copy",
        Field::Sandbox => "--sandbox docker",
        Field::Image => "--image IMAGE",
        Field::Agent => "--agent",
        Field::Program => "the program after `--` (e.g. `slipway run -- ./agent.sh`)",
        Field::Prompt => "--prompt TEXT",
        Field::PromptFile => "--prompt-file FILE",
        Field::Args => "--arg KEY=VALUE",
        Field::MaxIterations => "--max-iterations N (1 or more)",
        Field::CompletionSignals => "--completion-signal S",
        Field::MergeTimeout => "--merge-timeout SECS",
        Field::Workspace => "--workspace NAME",
        Field::Into => "--into BRANCH (another local branch)",
        Field::Message => "--message M",
    }
}

/// A hint in the command line's words.
pub fn hint_text(hint: &Hint) -> String {
    match hint {
        Hint::Give { field } => format!("add {}", flag(*field)),
        Hint::Drop { field } => format!("drop {}", flag(*field)),
        Hint::GiveArgs { names } => format!(
            "give each with --arg: {}",
            names
                .iter()
                .map(|n| format!("--arg {n}=VALUE"))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        Hint::DropArg { name } => format!("drop --arg {name}=…"),
        Hint::ListWorktrees => "see `slipway worktree list`".into(),
        Hint::ListRuns => "see `slipway runs`".into(),
        Hint::ListSandboxes => "see `slipway sandbox list`".into(),
        Hint::CreateWorkspace { name } => {
            format!("create it with `slipway workspace create {name} --mount SRC:DST`")
        }
        Hint::ChangeWorkspace { name } => format!(
            "change it with `slipway workspace edit {name}` or remove it with `slipway workspace rm {name}`"
        ),
        Hint::UseStrategy { strategies } => {
            format!("or use --strategy {}", strategies.join(" or "))
        }
        Hint::Trust { files } => format!(
            "read it, and if you want what it does, approve it with `slipway trust{}` and run again",
            files
                .iter()
                .map(|f| format!(" --file {}", f.display()))
                .collect::<String>()
        ),
    }
}

impl CliError {
    /// A core failure in the command line's words: the message, then each hint.
    pub fn from_failure(e: &dyn Failure) -> CliError {
        let report = e.report();
        let message = report.worded(hint_text);
        let mut data = report.data;
        if !report.actions.is_empty() {
            data.insert("actions".into(), serde_json::json!(report.actions));
        }
        let data = if data.is_empty() {
            Value::Null
        } else {
            Value::Object(data)
        };
        CliError {
            kind: report.kind,
            message,
            data,
            actions: report.actions,
        }
    }
}

impl From<PlanError> for CliError {
    fn from(e: PlanError) -> Self {
        CliError::from_failure(&e)
    }
}
