//! Private worktrees under `<host>/.slipway/worktrees/` (or the user's
//! worktree root, see [`root`]): create, re-use, copy-in,
//! list, close, and the records that make every worktree findable after a crash.

mod close;
pub mod copy;
mod create;
pub mod lock;
pub mod naming;
pub mod record;
mod recover;
pub mod removal;
pub mod root;
mod status;
pub mod trash;

pub use close::{close, close_locked};
pub use create::{create, create_locked};
pub use recover::recover;
pub use status::{Counts, list, list_with, read_status, reconcile};

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::git::branches::upstream_ref;
use crate::git::policy::{self, ResolvedSource, SourceError, SourcePolicy, short_ref};
use crate::git::refname::{InvalidBranchName, validate_branch_name};
pub use crate::git::worktrees::delete_temp_branch_if_merged;
use crate::git::worktrees::{self, FastForward};
use crate::git::{HostRepo, canonical};
use crate::util::{now_secs, random_hex};
use copy::{CopyError, CopyReport, copy_into_worktree};
use lock::{AdminLock, BranchLock, LockError};
pub use record::{RecordError, WorktreeRecord, WorktreeState, WorktreeStrategy};

/// Which branch a new worktree works on. There is no `head` here: `head`
/// writes straight into the host checkout and has no worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorktreeTarget {
    /// A named branch, kept. `base` is used only when the branch is new.
    Branch { name: String, base: Option<String> },
    /// A temporary branch merged back into the host's current branch.
    MergeToHead,
}

/// What to create.
#[derive(Debug, Clone)]
pub struct CreateRequest {
    /// Branch strategy.
    pub target: WorktreeTarget,
    /// Where a new branch starts.
    pub source: SourcePolicy,
    /// Paths (globs) copied from the host before anything else runs.
    pub copy: Vec<String>,
}

/// A created or re-used worktree.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Created {
    /// Its record.
    #[serde(flatten)]
    pub record: WorktreeRecord,
    /// Whether an existing worktree was returned.
    pub reused: bool,
    /// How the start point was chosen, for people.
    pub source_label: String,
    /// What the user should know: fast-forwards, reasons for not fast-forwarding, ignored options.
    pub notes: Vec<String>,
    /// What copy-in did.
    pub copy: CopyReport,
}

/// Why a worktree could not be created.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// The branch name breaks git's rules.
    #[error(transparent)]
    InvalidBranch(#[from] InvalidBranchName),
    /// The source policy could not be resolved.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// Another process holds the branch.
    #[error(transparent)]
    BranchInUse(LockError),
    /// The branch is checked out in the host checkout.
    #[error("branch '{branch}' is checked out in the host repository at {}; use another branch name, or switch the host to another branch first", path.display())]
    CheckedOutInHost { branch: String, path: PathBuf },
    /// A rebase or bisect started from the branch is under way somewhere.
    #[error("branch '{branch}' is {what} in {}; finish or abort that first (git refuses to check it out elsewhere too)", path.display())]
    BranchBusy {
        branch: String,
        what: &'static str,
        path: PathBuf,
    },
    /// The branch is checked out in a worktree slipway does not own.
    #[error("branch '{branch}' is checked out in another worktree at {}; use another branch name, or remove that worktree with `git worktree remove`", path.display())]
    CheckedOutElsewhere { branch: String, path: PathBuf },
    /// Something that is not a registered worktree sits where the worktree would go.
    #[error("{} exists but is not a registered worktree; look inside, move it away, and try again", path.display())]
    PathOccupied { path: PathBuf },
    /// A copy pattern is malformed or leaves the repository; nothing was created.
    #[error("{0}; nothing was created")]
    BadCopyPattern(CopyError),
    /// Copy-in failed; the half-made worktree was removed again.
    #[error("{source}; nothing was created (the worktree at {} was removed again)", worktree_path.display())]
    Copy {
        source: CopyError,
        worktree_path: PathBuf,
    },
    /// Filesystem trouble under `.slipway/`.
    #[error("{0}")]
    Io(String),
    /// `.slipway/` is not slipway's own (see [`crate::state_trust`]).
    #[error(transparent)]
    Untrusted(#[from] crate::state_trust::Untrusted),
    /// A record could not be read or written.
    #[error(transparent)]
    Record(record::RecordError),
    /// libgit2 failed.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
}

impl CreateError {
    /// Stable machine-readable kind.
    pub fn kind(&self) -> crate::error::ErrorKind {
        match self {
            CreateError::InvalidBranch(_) => crate::error::ErrorKind::InvalidBranchName,
            CreateError::Source(e) => e.kind(),
            CreateError::BranchInUse(e) => e.kind(),
            CreateError::Io(_) => crate::error::ErrorKind::Io,
            CreateError::CheckedOutInHost { .. }
            | CreateError::CheckedOutElsewhere { .. }
            | CreateError::BranchBusy { .. } => crate::error::ErrorKind::BranchCheckedOut,
            CreateError::PathOccupied { .. } => crate::error::ErrorKind::PathOccupied,
            CreateError::Copy { .. } => crate::error::ErrorKind::CopyFailed,
            CreateError::Record(e) => e.kind(),
            CreateError::BadCopyPattern(_) => crate::error::ErrorKind::InvalidParams,
            CreateError::Git(_) => crate::error::ErrorKind::Git,
            CreateError::Untrusted(_) => crate::error::ErrorKind::UntrustedState,
        }
    }
}

impl From<SlipwayDirError> for CreateError {
    fn from(e: SlipwayDirError) -> Self {
        match e {
            SlipwayDirError::Untrusted(e) => CreateError::Untrusted(e),
            SlipwayDirError::Io(e) => CreateError::Io(e.to_string()),
        }
    }
}

impl From<LockError> for CreateError {
    fn from(e: LockError) -> Self {
        CreateError::BranchInUse(e)
    }
}

impl From<record::RecordError> for CreateError {
    fn from(e: record::RecordError) -> Self {
        CreateError::Record(e)
    }
}

/// Where worktrees live.
pub fn worktrees_dir(host: &HostRepo) -> PathBuf {
    root::worktrees_dir_for(host.root())
}

fn locks_dir(host: &HostRepo) -> PathBuf {
    host.slipway_dir().join("locks")
}

/// Why `.slipway/` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SlipwayDirError {
    /// It is not slipway's own.
    #[error(transparent)]
    Untrusted(#[from] crate::state_trust::Untrusted),
    /// It cannot be made.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Creates `.slipway/` with a `.gitignore` of `*`, so nothing in it shows in
/// `git status`; one that is not slipway's own is refused (nothing is
/// written into it).
pub fn ensure_slipway_dir(host: &HostRepo) -> Result<(), SlipwayDirError> {
    host.state_trusted()?;
    let dir = host.slipway_dir();
    std::fs::create_dir_all(worktrees_dir(host))?;
    let ignore = dir.join(".gitignore");
    if !ignore.exists() {
        crate::util::write_atomic(&ignore, b"*\n")?;
    }
    Ok(())
}

/// Takes the per-branch lock that creates and runs hold.
pub fn lock_branch(host: &HostRepo, branch: &str) -> Result<BranchLock, LockError> {
    host.state_trusted()?;
    BranchLock::acquire(&locks_dir(host), &naming::dir_name(branch), branch)
}

/// The branch a new merge-to-head worktree works on.
pub fn new_temp_branch_name() -> String {
    format!("slipway/merge-{}", random_hex(4))
}

/// The health of a worktree as records and git see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Health {
    /// Record, registration and directory agree.
    Ok,
    /// A record whose worktree directory is gone (orphan record).
    Missing,
    /// Being created by a live process right now.
    Creating,
    /// A create that died half way: not usable until the next slipway
    /// command undoes it (creating the worktree again does that too).
    Incomplete,
    /// Its record cannot be read; `why` says which file and what to do.
    Corrupt,
}

/// One worktree as `list` shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorktreeStatus {
    /// Stable id.
    pub id: String,
    /// Absolute path.
    pub path: PathBuf,
    /// Checked-out branch.
    pub branch: String,
    /// `branch` or `merge-to-head`.
    pub strategy: WorktreeStrategy,
    /// Uncommitted changes present.
    pub dirty: bool,
    /// Number of changed paths (as `git status --porcelain` lists them).
    pub changed_files: usize,
    /// The changed paths themselves.
    pub changed_paths: Vec<String>,
    /// Commits on the branch that are not home yet: counted from where the
    /// branch and its target meet now, less what a land brought home.
    pub ahead: usize,
    /// Commits its target has that the branch lacks.
    pub behind: usize,
    /// Life state.
    pub state: WorktreeState,
    /// Why it is in that state.
    pub why: Option<String>,
    /// The run in progress or last run.
    pub run_id: Option<crate::ids::RunId>,
    /// Whether record and disk agree.
    pub health: Health,
    /// The commit it started from.
    pub base_commit: String,
    /// What to do next.
    pub actions: Vec<crate::actions::Action>,
}

/// The git dirs a person's agent working in the checkout at `path` writes
/// when it commits: a linked worktree's own admin dir (`<common>/worktrees/<id>`,
/// its index and HEAD) and the common dir (objects and refs). Empty for a
/// main checkout (its `.git` is inside it) or a path git does not know.
pub fn commit_dirs(path: &Path) -> Vec<PathBuf> {
    let Ok(repo) = git2::Repository::open(path) else {
        return Vec::new();
    };
    if !repo.is_worktree() {
        return Vec::new();
    }
    let trim = |p: &Path| p.components().collect::<PathBuf>();
    let mut dirs = vec![trim(repo.path()), trim(repo.commondir())];
    dirs.dedup();
    dirs
}

/// Whether a process is alive.
pub fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Like [`find`], but a selector naming a record that cannot be read is that
/// record's error, never "not found" (and never a rebuilt record).
pub fn find_readable(
    host: &HostRepo,
    selector: &str,
) -> Result<Option<WorktreeRecord>, record::RecordError> {
    // Only the records the selector can name as an id (itself, or its
    // branch's folder name) are read here; `find` reads the rest.
    let slipway_dir = host.slipway_dir();
    let plain = |id: &str| !id.is_empty() && !id.starts_with('.') && !id.contains('/');
    for id in [selector.to_owned(), naming::dir_name(selector)] {
        if plain(&id)
            && let Err(e @ record::RecordError::Corrupt { .. }) =
                WorktreeRecord::read(&slipway_dir, &id)
        {
            return Err(e);
        }
    }
    Ok(find(host, selector))
}

/// Finds a worktree record by id, path (the worktree or anything inside it) or branch name.
pub fn find(host: &HostRepo, selector: &str) -> Option<WorktreeRecord> {
    // Reconciled and read in one pass; a reconcile git refuses still finds
    // the records there are.
    let records = match status::reconciled(host) {
        Ok((dir, _)) => dir.records,
        Err(e) => {
            tracing::warn!("cannot read git's worktree registrations: {e}");
            WorktreeRecord::load_all(&host.slipway_dir())
        }
    };
    if let Some(r) = records.iter().find(|r| r.id == selector) {
        return Some(r.clone());
    }
    if let Some(r) = records.iter().find(|r| r.branch == selector) {
        return Some(r.clone());
    }
    let as_path = canonical(Path::new(selector));
    records
        .into_iter()
        .find(|r| as_path.starts_with(canonical(&r.path)))
}

/// What closing did.
#[derive(Debug, Clone, Serialize)]
#[serde(
    tag = "outcome",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum CloseOutcome {
    /// The worktree was removed.
    Removed {
        id: String,
        path: PathBuf,
        branch: String,
        branch_deleted: bool,
        /// Why the branch was kept, with the commands to merge or discard it.
        branch_kept: Option<String>,
        /// Where a commit only the worktree's detached HEAD held was kept.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kept_commit: Option<String>,
        /// A discard that deleted commits no other ref held: where the branch
        /// was, and how to bring it back.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        discarded_tip: Option<String>,
    },
    /// The worktree has uncommitted changes and was kept.
    Preserved {
        id: String,
        preserved_path: PathBuf,
        branch: String,
        reason: String,
        changed_paths: Vec<String>,
        commands: Vec<String>,
    },
}

impl CloseOutcome {
    /// What to do next: a worktree kept for its uncommitted changes can be
    /// looked at and closed losing them; a temporary branch kept for its
    /// commits can be reviewed, landed or discarded.
    pub fn actions(&self) -> Vec<crate::actions::Action> {
        match self {
            CloseOutcome::Removed {
                branch,
                branch_kept: Some(_),
                ..
            } => crate::actions::unlanded(branch),
            CloseOutcome::Removed { .. } => Vec::new(),
            CloseOutcome::Preserved {
                branch,
                changed_paths,
                ..
            } if !changed_paths.is_empty() => crate::actions::uncommitted(branch),
            // Kept for what is not slipway's to decide (a lock, a folder it
            // did not make): nothing slipway can do about it.
            CloseOutcome::Preserved { .. } => Vec::new(),
        }
    }
}

/// Why a worktree could not be closed.
#[derive(Debug, thiserror::Error)]
pub enum CloseError {
    /// No worktree matches.
    #[error("no slipway worktree matches '{selector}'; known: {}", if known.is_empty() { "(none)".to_owned() } else { known.join(", ") })]
    NotFound {
        selector: String,
        known: Vec<String>,
    },
    /// A run holds the branch.
    #[error(transparent)]
    BranchInUse(#[from] LockError),
    /// Filesystem trouble under `.slipway/`.
    #[error("{0}")]
    Io(String),
    /// The worktree's record cannot be read or written.
    #[error(transparent)]
    Record(record::RecordError),
    /// libgit2 failed.
    /// `.slipway/` is not slipway's own: nothing is removed.
    #[error(transparent)]
    Untrusted(#[from] crate::state_trust::Untrusted),
    #[error("git: {0}")]
    Git(#[from] git2::Error),
}

impl CloseError {
    /// Stable machine-readable kind.
    pub fn kind(&self) -> crate::error::ErrorKind {
        match self {
            CloseError::NotFound { .. } => crate::error::ErrorKind::WorktreeNotFound,
            CloseError::BranchInUse(e) => e.kind(),
            CloseError::Io(_) => crate::error::ErrorKind::Io,
            CloseError::Record(e) => e.kind(),
            CloseError::Git(_) => crate::error::ErrorKind::Git,
            CloseError::Untrusted(_) => crate::error::ErrorKind::UntrustedState,
        }
    }
}

impl From<record::RecordError> for CloseError {
    fn from(e: record::RecordError) -> Self {
        CloseError::Record(e)
    }
}

/// The commands that inspect a preserved worktree (what to do with it is in
/// its actions, as slipway commands).
pub fn preserved_commands(path: &Path) -> Vec<String> {
    vec![format!("cd {}", path.display())]
}

fn summarize(paths: &[String]) -> String {
    let mut s = paths.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    if paths.len() > 5 {
        s.push_str(&format!(", and {} more", paths.len() - 5));
    }
    s
}
