//! Why a request cannot be planned: each with its kind, data and hints (see
//! [`crate::error`]); the wording of flags and fields is the edges'.

use std::path::PathBuf;

use serde_json::{Map, Value, json};

use crate::agent::AgentSpecError;
use crate::agent::prompt::PromptError;
use crate::error::{ErrorKind, Failure, Field, Hint};
use crate::git::branches::BranchInfo;
use crate::git::policy::SourceError;
use crate::git::refname::InvalidBranchName;
use crate::git::{HostRepo, OpenError};
use crate::trust::TrustError;
use crate::workspace::WorkspaceError;
use crate::workspace::validate::ValidationError;
use crate::worktree::CreateError;
use crate::worktree::lock::LockError;

/// Why a run, create or close request cannot be carried out as given.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The repository cannot be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// A workspace with no mount that is a repository, and no repository named.
    #[error("the workspace has no mount that is a git repository to keep the run's records in")]
    NoRepository,
    /// The branch strategy without a branch.
    #[error("the branch strategy needs a branch name")]
    BranchNeeded,
    /// A branch with head or merge-to-head.
    #[error("a branch name only goes with the branch strategy, not {0}")]
    BranchWithStrategy(&'static str),
    /// A base without a new branch.
    #[error("a base only goes with the branch strategy (it is where the new branch starts)")]
    BaseWithoutBranch,
    /// `head` with a source or copy patterns.
    #[error("the head strategy runs in the host checkout: a source and copy patterns do not apply")]
    HeadWithSourceOrCopy,
    /// `head` for a worktree create.
    #[error("the head strategy writes into the host checkout and has no worktree")]
    HeadHasNoWorktree,
    /// A bad branch name.
    #[error(transparent)]
    InvalidBranch(#[from] InvalidBranchName),
    /// A handoff without its worktree.
    #[error("a handoff needs the worktree to hand off (id, path or branch)")]
    HandoffNeedsWorktree,
    /// The worktree selector matches nothing.
    #[error("no slipway worktree matches '{0}'")]
    WorktreeNotFound(String),
    /// The user's engine list cannot be read, or does not have the engine asked for.
    #[error(transparent)]
    Engine(#[from] crate::engines::EngineError),
    /// The worktree's record cannot be read.
    #[error(transparent)]
    Record(#[from] crate::worktree::RecordError),
    /// The long-lived sandbox does not exist.
    #[error("no sandbox '{0}' in this repository")]
    SandboxNotFound(String),
    /// An image for a host process.
    #[error("an image only applies to the docker and docker-isolated sandboxes")]
    ImageWithoutDocker,
    /// A docker sandbox without an image.
    #[error(
        "the {0} sandbox needs an image that is on the engine already (nothing is pulled): give one for this run, or set `image` in slipway.toml or the workspace"
    )]
    ImageNeeded(&'static str),
    /// A workspace in a sandbox that cannot mount it.
    #[error("workspaces run in the none or docker sandbox, not {0}")]
    WorkspaceSandbox(&'static str),
    /// Model, effort or resume for the command agent.
    #[error("a model, effort or session to resume do not apply to the command agent")]
    OptionsForCommand,
    /// The agent cannot be used.
    #[error(transparent)]
    Agent(#[from] AgentSpecError),
    /// Both kinds of prompt.
    #[error("give a prompt or a prompt file, not both")]
    TwoPrompts,
    /// The prompt cannot be used.
    #[error(transparent)]
    Prompt(#[from] PromptError),
    /// No iterations.
    #[error("the number of iterations must be at least 1")]
    ZeroIterations,
    /// A budget that cannot be used.
    #[error("{0}")]
    BadBudget(String),
    /// An empty completion signal.
    #[error("a completion signal cannot be empty (it would match every line)")]
    EmptySignal,
    /// A copy pattern that cannot be used.
    #[error(transparent)]
    Copy(Box<CreateError>),
    /// The source cannot be resolved. `branches` are the full entries of the choices.
    #[error("{error}")]
    Source {
        /// Why.
        error: SourceError,
        /// The branches to choose from, as `slipway.branches` lists them.
        branches: Vec<BranchInfo>,
    },
    /// Workspace mounts with the `ask` policy need a choice.
    #[error("a source branch must be chosen for {}", mounts.iter().map(|(dst, choices)| format!("{} (one of: {})", dst.display(), choices.iter().map(|b| b.name.as_str()).collect::<Vec<_>>().join(", "))).collect::<Vec<_>>().join("; "))]
    SourcesRequired {
        /// Every `ask` mount's `dst`, in order, with its choices (as `slipway.branches` lists them).
        mounts: Vec<(PathBuf, Vec<BranchInfo>)>,
    },
    /// The branch is held by another create, run or close.
    #[error("{error}")]
    Lock {
        /// The branch.
        branch: String,
        /// Who holds it.
        error: LockError,
    },
    /// The workspace cannot be loaded.
    #[error(transparent)]
    Workspace(Box<WorkspaceError>),
    /// The workspace cannot be launched.
    #[error(transparent)]
    Validation(Box<ValidationError>),
    /// A repository file that runs programs is not trusted, or cannot be read.
    #[error(transparent)]
    Trust(Box<TrustError>),
    /// libgit2 failed.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
}

impl From<TrustError> for PlanError {
    fn from(e: TrustError) -> Self {
        PlanError::Trust(Box::new(e))
    }
}

impl From<WorkspaceError> for PlanError {
    fn from(e: WorkspaceError) -> Self {
        PlanError::Workspace(Box::new(e))
    }
}

impl From<ValidationError> for PlanError {
    fn from(e: ValidationError) -> Self {
        PlanError::Validation(Box::new(e))
    }
}

impl From<crate::worktree::copy::CopyError> for PlanError {
    fn from(e: crate::worktree::copy::CopyError) -> Self {
        PlanError::Copy(Box::new(CreateError::BadCopyPattern(e)))
    }
}

impl PlanError {
    /// A source error, with the full branch entries of its choices.
    pub fn source(host: &HostRepo, error: SourceError) -> PlanError {
        let branches = entries(host, error.choices());
        PlanError::Source { error, branches }
    }
}

/// The full branch entries of `names`, in the order of `names`.
pub(super) fn entries(host: &HostRepo, names: &[String]) -> Vec<BranchInfo> {
    if names.is_empty() {
        return Vec::new();
    }
    let mut all = crate::git::branches::list_branches(host.git()).unwrap_or_default();
    names
        .iter()
        .filter_map(|n| {
            let at = all.iter().position(|b| &b.name == n)?;
            Some(all.swap_remove(at))
        })
        .collect()
}

impl Failure for PlanError {
    fn kind(&self) -> ErrorKind {
        match self {
            PlanError::Engine(e) => e.kind(),
            PlanError::Open(e) => e.kind(),
            PlanError::NoRepository => ErrorKind::NotARepository,
            PlanError::BranchNeeded
            | PlanError::BranchWithStrategy(_)
            | PlanError::BaseWithoutBranch
            | PlanError::HeadWithSourceOrCopy
            | PlanError::HeadHasNoWorktree
            | PlanError::HandoffNeedsWorktree
            | PlanError::ImageWithoutDocker
            | PlanError::ImageNeeded(_)
            | PlanError::WorkspaceSandbox(_)
            | PlanError::OptionsForCommand
            | PlanError::TwoPrompts
            | PlanError::ZeroIterations
            | PlanError::EmptySignal
            | PlanError::BadBudget(_) => ErrorKind::InvalidParams,
            PlanError::InvalidBranch(_) => ErrorKind::InvalidBranchName,
            PlanError::WorktreeNotFound(_) => ErrorKind::WorktreeNotFound,
            PlanError::Record(e) => e.kind(),
            PlanError::SandboxNotFound(_) => ErrorKind::UnknownSandbox,
            PlanError::Agent(e) => e.kind(),
            PlanError::Prompt(e) => prompt_kind(e),
            PlanError::Copy(e) => e.kind(),
            PlanError::Source { error, .. } => error.kind(),
            PlanError::SourcesRequired { .. } => ErrorKind::SourceBranchRequired,
            PlanError::Lock {
                error: LockError::InUse { .. },
                ..
            } => ErrorKind::BranchInUse,
            PlanError::Lock { .. } => ErrorKind::Io,
            PlanError::Workspace(e) => e.kind(),
            PlanError::Validation(e) => e.kind(),
            PlanError::Trust(e) => e.kind(),
            PlanError::Git(_) => ErrorKind::Git,
        }
    }

    fn data(&self) -> Map<String, Value> {
        let mut data = Map::new();
        match self {
            PlanError::Source { branches, .. } => {
                data.insert("choices".into(), json!(branches));
            }
            PlanError::SourcesRequired { mounts } => {
                let list: Vec<Value> = mounts
                    .iter()
                    .map(|(dst, choices)| json!({ "dst": dst, "choices": choices }))
                    .collect();
                let first = mounts.first().map(|(_, c)| c.clone()).unwrap_or_default();
                data.insert("mounts".into(), Value::Array(list));
                data.insert("choices".into(), json!(first));
            }
            PlanError::Lock { branch, error } => {
                data.insert("branch".into(), json!(branch));
                let holder = match error {
                    LockError::InUse { holder, .. } => json!(holder),
                    LockError::Io { .. } | LockError::Untrusted(_) => Value::Null,
                };
                data.insert("holder".into(), holder);
            }
            PlanError::Trust(e) => data = e.data(),
            PlanError::Engine(e) => data = e.data(),
            _ => {}
        }
        data
    }

    fn hints(&self) -> Vec<Hint> {
        match self {
            PlanError::BranchNeeded => vec![Hint::Give {
                field: Field::Branch,
            }],
            PlanError::BranchWithStrategy(_) => vec![
                Hint::Drop {
                    field: Field::Branch,
                },
                Hint::UseStrategy {
                    strategies: vec!["branch".into()],
                },
            ],
            PlanError::BaseWithoutBranch => vec![Hint::Give {
                field: Field::Branch,
            }],
            PlanError::HeadWithSourceOrCopy => vec![
                Hint::Drop {
                    field: Field::Source,
                },
                Hint::Drop { field: Field::Copy },
            ],
            PlanError::HeadHasNoWorktree => vec![Hint::UseStrategy {
                strategies: vec!["branch".into(), "merge-to-head".into()],
            }],
            PlanError::HandoffNeedsWorktree => vec![Hint::Give {
                field: Field::Worktree,
            }],
            PlanError::WorktreeNotFound(_) => vec![Hint::ListWorktrees],
            PlanError::SandboxNotFound(_) => vec![Hint::ListSandboxes],
            PlanError::Workspace(e) => crate::error::Failure::hints(e.as_ref()),
            PlanError::Trust(e) => e.hints(),
            PlanError::ImageWithoutDocker => vec![Hint::Give {
                field: Field::Sandbox,
            }],
            PlanError::ImageNeeded(_) => vec![Hint::Give {
                field: Field::Image,
            }],
            PlanError::TwoPrompts => vec![Hint::Drop {
                field: Field::PromptFile,
            }],
            PlanError::ZeroIterations => vec![Hint::Give {
                field: Field::MaxIterations,
            }],
            PlanError::Agent(AgentSpecError::EmptyCommand) => vec![Hint::Give {
                field: Field::Program,
            }],
            PlanError::Prompt(e) => prompt_hints(e),
            PlanError::Open(OpenError::NotARepository { .. }) => vec![Hint::Give {
                field: Field::Repository,
            }],
            PlanError::NoRepository => vec![Hint::Give {
                field: Field::Repository,
            }],
            _ => Vec::new(),
        }
    }
}

/// The kind of a prompt error.
pub fn prompt_kind(e: &PromptError) -> ErrorKind {
    match e {
        PromptError::MissingArgs { .. } => ErrorKind::MissingPromptArgs,
        _ => ErrorKind::InvalidParams,
    }
}

impl Failure for OpenError {
    fn kind(&self) -> ErrorKind {
        OpenError::kind(self)
    }

    fn hints(&self) -> Vec<Hint> {
        match self {
            OpenError::NotARepository { .. } => vec![Hint::Give {
                field: Field::Repository,
            }],
            _ => Vec::new(),
        }
    }
}

impl Failure for SourceError {
    fn kind(&self) -> ErrorKind {
        SourceError::kind(self)
    }

    fn data(&self) -> Map<String, Value> {
        let mut data = Map::new();
        if !matches!(self, SourceError::UnbornHead) {
            data.insert("choices".into(), json!(self.choices()));
        }
        data
    }
}

impl Failure for crate::run::RunError {
    fn kind(&self) -> ErrorKind {
        crate::run::RunError::kind(self)
    }

    fn data(&self) -> Map<String, Value> {
        match self {
            crate::run::RunError::Plan(e) => e.data(),
            crate::run::RunError::Engine(e) => e.data(),
            _ => Map::new(),
        }
    }

    fn hints(&self) -> Vec<Hint> {
        match self {
            crate::run::RunError::Plan(e) => e.hints(),
            crate::run::RunError::WorktreeNotFound(_) => vec![Hint::ListWorktrees],
            crate::run::RunError::Prompt(e) => prompt_hints(e),
            _ => Vec::new(),
        }
    }
}

/// What to do about a prompt error.
fn prompt_hints(e: &PromptError) -> Vec<Hint> {
    match e {
        PromptError::MissingArgs { missing } => vec![Hint::GiveArgs {
            names: missing.clone(),
        }],
        PromptError::BuiltInOverride { name } => vec![Hint::DropArg { name: name.clone() }],
        PromptError::ArgsWithInline => vec![Hint::Give {
            field: Field::PromptFile,
        }],
        PromptError::Missing => vec![
            Hint::Give {
                field: Field::Prompt,
            },
            Hint::Give {
                field: Field::PromptFile,
            },
        ],
        PromptError::Read { .. } | PromptError::UnclosedShell => Vec::new(),
    }
}

impl Failure for crate::run::CancelError {
    fn kind(&self) -> ErrorKind {
        crate::run::CancelError::kind(self)
    }

    fn hints(&self) -> Vec<Hint> {
        vec![Hint::ListRuns]
    }
}
