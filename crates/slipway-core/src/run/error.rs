//! Why a run failed, and the failure that carries its partial result.

use super::*;

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The request does not pass the plan's checks.
    #[error(transparent)]
    Plan(#[from] crate::plan::PlanError),
    /// The prompt cannot be used.
    #[error(transparent)]
    Prompt(#[from] PromptError),
    /// The agent spec cannot be used.
    #[error(transparent)]
    Agent(#[from] AgentSpecError),
    /// A bad branch name.
    #[error(transparent)]
    InvalidBranch(#[from] InvalidBranchName),
    /// The worktree could not be created.
    #[error(transparent)]
    Worktree(#[from] CreateError),
    /// The branch is locked by another create or run.
    #[error(transparent)]
    BranchInUse(#[from] LockError),
    /// Workspace mounts with the `ask` policy need a choice.
    #[error("a source branch must be chosen for {}", mounts.iter().map(|(dst, choices)| format!("{} (one of: {})", dst.display(), choices.join(", "))).collect::<Vec<_>>().join("; "))]
    SourcesRequired {
        /// Every `ask` mount's `dst`, in order, with its choices.
        mounts: Vec<(PathBuf, Vec<String>)>,
    },
    /// `--worktree` named nothing.
    #[error("no slipway worktree matches '{0}'")]
    WorktreeNotFound(String),
    /// A hook failed.
    #[error("hook `{command}` ({stage}) failed with exit code {code}:\n{output}")]
    Hook {
        stage: &'static str,
        command: String,
        code: i32,
        output: String,
    },
    /// A hook or prompt command ran too long.
    #[error("hook `{command}` ({stage}) timed out after {secs} s")]
    HookTimeout {
        stage: &'static str,
        command: String,
        secs: u64,
    },
    /// The agent printed nothing for too long.
    #[error("the agent was idle for {secs} s (idle timeout) and was stopped")]
    IdleTimeout { secs: u64 },
    /// The run reached one of its budgets.
    #[error("the run reached its {} budget ({}) and the agent was stopped; its work is kept", .0.budget.name(), .0)]
    BudgetReached(BudgetStop),
    /// The agent exited non-zero, or exited 0 after reporting an error as its outcome.
    #[error("the agent {} in iteration {iteration}{}", exit_text(*code), reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    AgentFailed {
        code: i32,
        iteration: u32,
        /// The error the agent reported last, if any.
        reason: Option<String>,
    },
    /// The agent's session has another writer (an interactive agent still
    /// holds it): the agent would not work on it.
    #[error(
        "the {agent} session is busy: another process (an interactive {agent} left open?) is writing to it, so the agent did not work; close that one and reply or hand off again (the agent said: {said})"
    )]
    SessionBusy { agent: &'static str, said: String },
    /// The session to resume cannot be found or moved where the run needs it.
    #[error(transparent)]
    Session(#[from] crate::agent::session::SessionError),
    /// The run was cancelled.
    #[error("the run was cancelled")]
    Cancelled,
    /// The merge back was aborted.
    #[error(transparent)]
    Merge(#[from] MergeError),
    /// The agent's CLI is not installed where the run looks for it.
    #[error("the {agent} agent's program `{program}` is not installed (no such program on PATH); {}", match install {
        Some(command) => format!("install it with `{command}`, or choose another agent"),
        None => "install it, or choose another agent".to_owned(),
    })]
    AgentNotInstalled {
        agent: &'static str,
        program: String,
        install: Option<&'static str>,
    },
    /// The sandbox failed.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The user's engines could not give the run one, or its engine went away.
    #[error(transparent)]
    Engine(#[from] crate::engines::EngineError),
    /// The user's price table cannot be read.
    #[error(transparent)]
    Price(#[from] super::price::PriceError),
    /// `head` with a worktree handle or similar misuse.
    #[error("{0}")]
    Invalid(String),
    /// State made by an earlier version that cannot be used safely.
    #[error("{0}")]
    Outdated(String),
    /// Filesystem trouble.
    #[error("{0}")]
    Io(String),
    /// libgit2 failed.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
    /// The run's private git state could not be made, or its work imported.
    #[error(transparent)]
    PrivateGit(#[from] private_git::RunGitError),
    /// `.slipway/` is not slipway's own.
    #[error(transparent)]
    Untrusted(#[from] crate::state_trust::Untrusted),
}

impl From<worktree::SlipwayDirError> for RunError {
    fn from(e: worktree::SlipwayDirError) -> Self {
        match e {
            worktree::SlipwayDirError::Untrusted(e) => RunError::Untrusted(e),
            worktree::SlipwayDirError::Io(e) => RunError::Io(e.to_string()),
        }
    }
}

impl RunError {
    /// Stable machine-readable kind.
    pub fn kind(&self) -> crate::error::ErrorKind {
        match self {
            RunError::Plan(e) => crate::error::Failure::kind(e),
            RunError::Prompt(e) => crate::plan::prompt_kind(e),
            RunError::Agent(e) => e.kind(),
            RunError::Invalid(_) => crate::error::ErrorKind::InvalidParams,
            RunError::Outdated(_) => crate::error::ErrorKind::OutdatedState,
            RunError::InvalidBranch(_) => crate::error::ErrorKind::InvalidBranchName,
            RunError::Worktree(e) => e.kind(),
            RunError::BranchInUse(e) => e.kind(),
            RunError::Io(_) => crate::error::ErrorKind::Io,
            RunError::WorktreeNotFound(_) => crate::error::ErrorKind::WorktreeNotFound,
            RunError::SourcesRequired { .. } => crate::error::ErrorKind::SourceBranchRequired,
            RunError::Hook { .. } => crate::error::ErrorKind::HookFailed,
            RunError::HookTimeout { .. } => crate::error::ErrorKind::HookTimeout,
            RunError::IdleTimeout { .. } => crate::error::ErrorKind::IdleTimeout,
            RunError::BudgetReached(_) => crate::error::ErrorKind::BudgetReached,
            RunError::AgentFailed { .. } => crate::error::ErrorKind::AgentFailed,
            RunError::SessionBusy { .. } => crate::error::ErrorKind::SessionBusy,
            RunError::Session(e) => e.kind(),
            RunError::Cancelled => crate::error::ErrorKind::Cancelled,
            RunError::Merge(e) => e.kind(),
            RunError::AgentNotInstalled { .. } => crate::error::ErrorKind::AgentNotInstalled,
            RunError::Sandbox(_) => crate::error::ErrorKind::Sandbox,
            RunError::Engine(e) => crate::error::Failure::kind(e),
            RunError::Price(e) => crate::error::Failure::kind(e),
            RunError::Git(_) => crate::error::ErrorKind::Git,
            RunError::PrivateGit(e) => e.kind(),
            RunError::Untrusted(_) => crate::error::ErrorKind::UntrustedState,
        }
    }

    /// The status a run that failed this way ends with.
    pub fn status(&self) -> RunStatus {
        match self {
            RunError::IdleTimeout { .. }
            | RunError::BudgetReached(_)
            | RunError::HookTimeout { .. }
            | RunError::Merge(MergeError::Timeout { .. }) => RunStatus::TimedOut,
            RunError::Cancelled => RunStatus::Cancelled,
            _ => RunStatus::Failed,
        }
    }
}

/// How an agent's exit reads in an error message.
fn exit_text(code: i32) -> String {
    if code == 0 {
        "reported an error and exited".to_owned()
    } else {
        format!("exited with code {code}")
    }
}

/// A failed run: the typed error and everything the result says (the
/// preserved worktree path, kept branch, commits, log file).
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct RunFailure {
    /// What went wrong.
    pub error: RunError,
    /// The result with every field filled in as far as the run got.
    pub result: Box<RunResult>,
}
