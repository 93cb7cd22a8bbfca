//! Errors at the edge: a stable kind, a message that says what to do, and any
//! data a machine needs (choices, preserved paths).

use serde::Serialize;
use serde_json::Value;
use slipway_core::error::ErrorKind;

/// An error as the CLI reports it.
#[derive(Debug, Serialize)]
pub struct CliError {
    pub kind: ErrorKind,
    pub message: String,
    #[serde(skip_serializing_if = "Value::is_null")]
    pub data: Value,
}

impl CliError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> CliError {
        CliError {
            kind,
            message: message.into(),
            data: Value::Null,
        }
    }

    pub fn with_data(mut self, data: Value) -> CliError {
        self.data = data;
        self
    }
}

impl From<slipway_core::git::OpenError> for CliError {
    fn from(e: slipway_core::git::OpenError) -> Self {
        CliError::new(e.kind(), e.to_string())
    }
}

impl From<slipway_core::git::policy::SourceError> for CliError {
    fn from(e: slipway_core::git::policy::SourceError) -> Self {
        let choices = e.choices().to_vec();
        let err = CliError::new(e.kind(), e.to_string());
        if choices.is_empty() {
            err
        } else {
            err.with_data(serde_json::json!({ "choices": choices }))
        }
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
        let path = e.worktree_path().map(|p| p.display().to_string());
        match e {
            CreateError::Source(inner) => inner.into(),
            other => {
                let err = CliError::new(other.kind(), other.to_string());
                match path {
                    Some(p) => err.with_data(serde_json::json!({ "worktreePath": p })),
                    None => err,
                }
            }
        }
    }
}

impl From<slipway_core::worktree::CloseError> for CliError {
    fn from(e: slipway_core::worktree::CloseError) -> Self {
        CliError::new(e.kind(), e.to_string())
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
