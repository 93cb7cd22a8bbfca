//! What every failure has in common, for the edges to report: a stable
//! [`ErrorKind`] (the protocol's `data.kind`, the CLI's `--json` `kind`), the
//! message (what happened, in no edge's words), machine-readable data, and
//! [`Hint`]s (what to do), which each edge words its own way: the command
//! line names flags and commands, the protocol names fields and methods.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

macro_rules! kinds {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// Every stable error kind (docs/protocol.md §7.2).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum ErrorKind {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)*
        }

        impl ErrorKind {
            /// Every kind, in the order of the protocol's list.
            pub const ALL: &[ErrorKind] = &[$(ErrorKind::$variant,)*];

            /// The stable name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorKind::$variant => $name,)*
                }
            }
        }
    };
}

kinds! {
    /// A frame whose body is not JSON.
    ParseError = "parseError",
    /// JSON that is not a JSON-RPC 2.0 message.
    InvalidRequest = "invalidRequest",
    /// Malformed or contradictory arguments.
    InvalidParams = "invalidParams",
    /// A protocol command the server does not have.
    UnknownCommand = "unknownCommand",
    /// The path is not inside a (non-bare) repository.
    NotARepository = "notARepository",
    /// The `ask` policy: the user must choose a source branch.
    SourceBranchRequired = "sourceBranchRequired",
    /// `current_branch` (or a merge back) with a detached host HEAD.
    DetachedHead = "detachedHead",
    /// The host repository has no commits.
    UnbornHead = "unbornHead",
    /// `default` found no default branch.
    NoDefaultBranch = "noDefaultBranch",
    /// A named ref that does not exist.
    UnknownRef = "unknownRef",
    /// A branch name git refuses.
    InvalidBranchName = "invalidBranchName",
    /// Another create, run or close holds the branch.
    BranchInUse = "branchInUse",
    /// The branch is checked out elsewhere.
    BranchCheckedOut = "branchCheckedOut",
    /// Something else sits where the worktree would go.
    PathOccupied = "pathOccupied",
    /// Copying files into a new worktree failed (the half-made worktree was removed).
    CopyFailed = "copyFailed",
    /// No worktree matches the selector.
    WorktreeNotFound = "worktreeNotFound",
    /// No record of that run.
    UnknownRun = "unknownRun",
    /// No long-lived sandbox of that id.
    UnknownSandbox = "unknownSandbox",
    /// No group of attempts of that id.
    UnknownGroup = "unknownGroup",
    /// The prompt template needs arguments that were not given.
    MissingPromptArgs = "missingPromptArgs",
    /// The prompt is too long for an agent that takes it as an argument.
    PromptTooLarge = "promptTooLarge",
    /// The agent has no such option.
    Unsupported = "unsupported",
    /// The agent session to resume does not exist.
    SessionNotFound = "sessionNotFound",
    /// The agent session exists but cannot be carried where the run works.
    SessionNotResumable = "sessionNotResumable",
    /// The agent's session has another active writer.
    SessionBusy = "sessionBusy",
    /// `reply`: the run is not waiting for input.
    NotWaitingForInput = "notWaitingForInput",
    /// `reply`: the run named no session to resume.
    NoSessionToResume = "noSessionToResume",
    /// A hook or prompt command failed.
    HookFailed = "hookFailed",
    /// A hook or prompt command ran too long.
    HookTimeout = "hookTimeout",
    /// The agent printed nothing for too long.
    IdleTimeout = "idleTimeout",
    /// The run reached its token, cost or duration budget.
    BudgetReached = "budgetReached",
    /// The agent exited non-zero.
    AgentFailed = "agentFailed",
    /// The agent's CLI is not installed (the message names the install command).
    AgentNotInstalled = "agentNotInstalled",
    /// The run was cancelled.
    Cancelled = "cancelled",
    /// The merge back found uncommitted changes in the host.
    HostDirty = "hostDirty",
    /// The merge back conflicts.
    MergeConflict = "mergeConflict",
    /// The merge back ran out of time before changing the host.
    MergeTimeout = "mergeTimeout",
    /// A worktree with uncommitted changes where only commits can be used (a land).
    WorktreeDirty = "worktreeDirty",
    /// The host switched branches while the merge back was being prepared.
    HostSwitched = "hostSwitched",
    /// The host repository is in the middle of another git operation.
    HostRepoBusy = "hostRepoBusy",
    /// The sandbox failed.
    Sandbox = "sandbox",
    /// The user's engine list breaks a rule (a repeated name, a limit below 1, a url slipway cannot use).
    EngineConfig = "engineConfig",
    /// `--engine` names no engine of the user's list.
    UnknownEngine = "unknownEngine",
    /// No engine of the list (or the one asked for) answers.
    EngineUnreachable = "engineUnreachable",
    /// The engine a run was using went away during it.
    EngineLost = "engineLost",
    /// The run's image is not on the engine it was given.
    ImageMissing = "imageMissing",
    /// The user's prices (`[prices.<agent>]` in `config.toml`) break a rule.
    PriceConfig = "priceConfig",
    /// The run's process ended without a result.
    RunDied = "runDied",
    /// The run's branch could not be imported from its private git dir.
    ImportRefused = "importRefused",
    /// A repository file that runs programs or chooses the sandbox, in content the user has not approved.
    UntrustedConfig = "untrustedConfig",
    /// A record written by a newer or older slipway that this one cannot use.
    OutdatedState = "outdatedState",
    /// An image build failed.
    ImageBuildFailed = "imageBuildFailed",
    /// A workspace file that is not valid TOML.
    WorkspaceSyntax = "workspaceSyntax",
    /// No workspace of that name.
    WorkspaceNotFound = "workspaceNotFound",
    /// A workspace of that name exists already.
    WorkspaceExists = "workspaceExists",
    /// A workspace name that cannot be a file name.
    InvalidWorkspaceName = "invalidWorkspaceName",
    /// A workspace file newer than this slipway.
    VersionTooNew = "versionTooNew",
    /// A workspace file's version that is not a version.
    BadVersion = "badVersion",
    /// There is no config dir for workspaces.
    NoConfigDir = "noConfigDir",
    /// Two spellings of one key.
    ConflictingKeys = "conflictingKeys",
    /// A workspace value of the wrong type.
    WrongType = "wrongType",
    /// A workspace value that is not one of the allowed ones.
    UnknownValue = "unknownValue",
    /// No mount at that `dst`.
    UnknownMount = "unknownMount",
    /// No mount covers the workdir.
    WorkdirNotCovered = "workdirNotCovered",
    /// The workdir is not absolute.
    WorkdirNotAbsolute = "workdirNotAbsolute",
    /// A mount's `src` is not absolute.
    SrcNotAbsolute = "srcNotAbsolute",
    /// A mount's `src` does not exist.
    SrcMissing = "srcMissing",
    /// A mount without `src`.
    MissingSrc = "missingSrc",
    /// A source branch given with a policy other than `named`.
    SourceBranchWithoutNamed = "sourceBranchWithoutNamed",
    /// `named` without a source branch.
    NamedWithoutSourceBranch = "namedWithoutSourceBranch",
    /// A source policy on a shared mount.
    PolicyOnSharedMount = "policyOnSharedMount",
    /// An isolated mount marked read-only.
    ReadonlyIsolatedMount = "readonlyIsolatedMount",
    /// An isolated mount inside another.
    NestedIsolatedMounts = "nestedIsolatedMounts",
    /// A workspace without mounts.
    NoMounts = "noMounts",
    /// Two mounts at one `dst`.
    DuplicateDst = "duplicateDst",
    /// A `dst` that is not absolute.
    DstNotAbsolute = "dstNotAbsolute",
    /// A `dst` of `/`.
    DstIsRoot = "dstIsRoot",
    /// Two isolated mounts of one repository.
    TwoWorktreesOfOneRepository = "twoWorktreesOfOneRepository",
    /// An isolated mount's `src` that is not a repository root.
    NotRepositoryRoot = "notRepositoryRoot",
    /// An isolated mount of a bare repository.
    BareRepository = "bareRepository",
    /// A slipway record that cannot be read.
    CorruptRecord = "corruptRecord",
    /// State under `.slipway/` that slipway cannot have written (a record or
    /// journal naming another path or process, a `.slipway/` git tracks or
    /// another user owns): nothing destructive is done with it.
    UntrustedState = "untrustedState",
    /// Filesystem trouble.
    Io = "io",
    /// libgit2 failed.
    Git = "git",
    /// A bug: a worker panicked.
    Internal = "internal",
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for ErrorKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// An input of a request, as each edge names it: a flag on the command line,
/// a field in the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Field {
    /// The repository (`--repo`, `root`).
    Repository,
    /// The strategy.
    Strategy,
    /// The branch name.
    Branch,
    /// The start point of a new branch.
    Base,
    /// An existing worktree to run in.
    Worktree,
    /// The source policy.
    Source,
    /// The ref of the `named` policy.
    Ref,
    /// Copy patterns.
    Copy,
    /// The sandbox kind.
    Sandbox,
    /// The container image.
    Image,
    /// The agent.
    Agent,
    /// The command agent's program.
    Program,
    /// The inline prompt.
    Prompt,
    /// The prompt file.
    PromptFile,
    /// Template arguments.
    Args,
    /// Iterations at most.
    MaxIterations,
    /// Completion signals.
    CompletionSignals,
    /// The merge timeout.
    MergeTimeout,
    /// A workspace.
    Workspace,
    /// The branch to land in.
    Into,
    /// A land's commit message.
    Message,
}

/// What the user can do about an error, worded by each edge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "do", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum Hint {
    /// Give this input.
    Give {
        /// Which.
        field: Field,
    },
    /// Leave this input out.
    Drop {
        /// Which.
        field: Field,
    },
    /// Give these template arguments.
    GiveArgs {
        /// Their names.
        names: Vec<String>,
    },
    /// Leave this template argument out.
    DropArg {
        /// Its name.
        name: String,
    },
    /// Pick one of the existing worktrees.
    ListWorktrees,
    /// Pick one of the known runs.
    ListRuns,
    /// Pick one of the long-lived sandboxes.
    ListSandboxes,
    /// Make the named workspace first.
    CreateWorkspace {
        /// Its name.
        name: String,
    },
    /// Change or remove the named workspace (it exists).
    ChangeWorkspace {
        /// Its name.
        name: String,
    },
    /// Use another strategy.
    UseStrategy {
        /// Which ones would do.
        strategies: Vec<String>,
    },
    /// Read these files, then approve them in their present content.
    Trust {
        /// The files.
        files: Vec<std::path::PathBuf>,
    },
}

/// A failure as an edge reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The stable kind.
    pub kind: ErrorKind,
    /// What happened, in no edge's words.
    pub message: String,
    /// Machine-readable details (`choices`, `worktreePath`, `branch`, `holder`, …).
    pub data: Map<String, Value>,
    /// What to do about it.
    pub hints: Vec<Hint>,
    /// What to do next, as slipway commands.
    pub actions: Vec<crate::actions::Action>,
}

impl Report {
    /// The message followed by each hint in an edge's words.
    pub fn worded(&self, word: impl Fn(&Hint) -> String) -> String {
        let mut message = self.message.clone();
        for hint in &self.hints {
            message.push_str("; ");
            message.push_str(&word(hint));
        }
        message
    }
}

/// A failure that can be reported at an edge.
pub trait Failure: std::error::Error {
    /// The stable kind.
    fn kind(&self) -> ErrorKind;

    /// Machine-readable details; none by default.
    fn data(&self) -> Map<String, Value> {
        Map::new()
    }

    /// What the user can do; nothing by default.
    fn hints(&self) -> Vec<Hint> {
        Vec::new()
    }

    /// The slipway commands that deal with what was left; none by default.
    fn actions(&self) -> Vec<crate::actions::Action> {
        Vec::new()
    }

    /// Kind, message, data, hints and actions together.
    fn report(&self) -> Report {
        Report {
            kind: self.kind(),
            message: self.to_string(),
            data: self.data(),
            hints: self.hints(),
            actions: self.actions(),
        }
    }
}

/// `Failure` for errors whose own `kind()` is all an edge needs: no data, no
/// hints (their messages say what to do in no edge's words).
macro_rules! failure_by_kind {
    ($($error:ty),* $(,)?) => {
        $(impl Failure for $error {
            fn kind(&self) -> ErrorKind {
                <$error>::kind(self)
            }
        })*
    };
}

failure_by_kind!(
    crate::ids::IdError,
    crate::agent::AgentSpecError,
    crate::agent::session::SessionError,
    crate::workspace::edit::EditError,
    crate::workspace::validate::ValidationError,
    crate::git::import::ImportError,
    crate::worktree::RecordError,
    crate::worktree::CreateError,
    crate::worktree::CloseError,
    crate::run::private_git::RunGitError,
);

/// A merge back or land refused: the branch is kept where it was, so it can
/// be reviewed, landed once the way is clear, or discarded.
impl Failure for crate::git::merge::MergeError {
    fn kind(&self) -> ErrorKind {
        crate::git::merge::MergeError::kind(self)
    }

    fn actions(&self) -> Vec<crate::actions::Action> {
        use crate::git::merge::MergeError;
        match self {
            MergeError::DetachedHost { branch }
            | MergeError::HostSwitched { branch, .. }
            | MergeError::HostDirty { branch, .. }
            | MergeError::Conflict { branch, .. }
            | MergeError::Timeout { branch, .. }
            | MergeError::Raced { branch, .. }
            | MergeError::WriteFailed { branch, .. }
            | MergeError::HostBusy { branch, .. }
            | MergeError::UnsafePath { branch, .. } => crate::actions::unlanded(branch),
            MergeError::Locked(_) => Vec::new(),
            MergeError::NoSuchBranch { .. } | MergeError::Journal(_) | MergeError::Git(_) => {
                Vec::new()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_serde_agrees_with_as_str() {
        let mut seen = std::collections::HashSet::new();
        for kind in ErrorKind::ALL {
            assert!(seen.insert(kind.as_str()), "{kind} twice");
            assert_eq!(
                serde_json::to_value(kind).expect("serialises"),
                Value::String(kind.as_str().to_owned())
            );
        }
    }
}
