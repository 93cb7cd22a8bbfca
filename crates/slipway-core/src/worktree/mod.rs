//! Private worktrees under `<host>/.slipway/worktrees/`: create, re-use, copy-in,
//! list, close, and the records that make every worktree findable after a crash.

pub mod copy;
pub mod lock;
pub mod naming;
pub mod record;
pub mod removal;

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
pub use record::{WorktreeRecord, WorktreeState, WorktreeStrategy};

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
    /// The branch is checked out in a worktree slipway does not own.
    #[error("branch '{branch}' is checked out in another worktree at {}; use another branch name, or remove that worktree with `git worktree remove`", path.display())]
    CheckedOutElsewhere { branch: String, path: PathBuf },
    /// Something that is not a registered worktree sits where the worktree would go.
    #[error("{} exists but is not a registered worktree; look inside, move it away, and try again", path.display())]
    PathOccupied { path: PathBuf },
    /// A copy pattern is malformed or leaves the repository; nothing was created.
    #[error("{0}; nothing was created")]
    BadCopyPattern(CopyError),
    /// Copy-in failed after the worktree was created; the worktree is left for inspection.
    #[error("{source}; the worktree was created at {}", worktree_path.display())]
    Copy {
        source: CopyError,
        worktree_path: PathBuf,
    },
    /// Filesystem trouble under `.slipway/`.
    #[error("{0}")]
    Io(String),
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
            CreateError::BranchInUse(LockError::InUse { .. }) => {
                crate::error::ErrorKind::BranchInUse
            }
            CreateError::BranchInUse(LockError::Io { .. }) | CreateError::Io(_) => {
                crate::error::ErrorKind::Io
            }
            CreateError::CheckedOutInHost { .. } | CreateError::CheckedOutElsewhere { .. } => {
                crate::error::ErrorKind::BranchCheckedOut
            }
            CreateError::PathOccupied { .. } => crate::error::ErrorKind::PathOccupied,
            CreateError::Copy { .. } => crate::error::ErrorKind::CopyFailed,
            CreateError::BadCopyPattern(_) => crate::error::ErrorKind::InvalidParams,
            CreateError::Git(_) => crate::error::ErrorKind::Git,
        }
    }

    /// The worktree this error leaves behind, if any.
    pub fn worktree_path(&self) -> Option<&Path> {
        match self {
            CreateError::Copy { worktree_path, .. } => Some(worktree_path),
            _ => None,
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
        CreateError::Io(e.to_string())
    }
}

/// Where worktrees live.
pub fn worktrees_dir(host: &HostRepo) -> PathBuf {
    host.slipway_dir().join("worktrees")
}

fn locks_dir(host: &HostRepo) -> PathBuf {
    host.slipway_dir().join("locks")
}

/// Creates `.slipway/` with a `.gitignore` of `*`, so nothing in it shows in `git status`.
pub fn ensure_slipway_dir(host: &HostRepo) -> std::io::Result<()> {
    let dir = host.slipway_dir();
    std::fs::create_dir_all(dir.join("worktrees"))?;
    let ignore = dir.join(".gitignore");
    if !ignore.exists() {
        crate::util::write_atomic(&ignore, b"*\n")?;
    }
    Ok(())
}

/// Takes the per-branch lock that creates and runs hold.
pub fn lock_branch(host: &HostRepo, branch: &str) -> Result<BranchLock, LockError> {
    BranchLock::acquire(&locks_dir(host), &naming::dir_name(branch), branch)
}

/// The branch a new merge-to-head worktree works on.
pub fn new_temp_branch_name() -> String {
    format!("slipway/merge-{}", random_hex(4))
}

/// Creates a worktree, or returns the existing one for the same branch, taking the branch lock.
pub fn create(host: &HostRepo, request: &CreateRequest) -> Result<Created, CreateError> {
    let branch = match &request.target {
        WorktreeTarget::Branch { name, .. } => {
            validate_branch_name(name)?;
            name.clone()
        }
        WorktreeTarget::MergeToHead => new_temp_branch_name(),
    };
    ensure_slipway_dir(host).map_err(|e| CreateError::Io(e.to_string()))?;
    let lock = lock_branch(host, &branch)?;
    create_locked(host, request, &lock)
}

/// Creates or re-uses a worktree while the caller holds `lock` for its branch.
pub fn create_locked(
    host: &HostRepo,
    request: &CreateRequest,
    lock: &BranchLock,
) -> Result<Created, CreateError> {
    copy::check_patterns(&request.copy).map_err(CreateError::BadCopyPattern)?;
    let branch = lock.branch().to_owned();
    let id = naming::dir_name(&branch);
    let path = worktrees_dir(host).join(&id);
    let repo = host.git();
    let slipway_dir = host.slipway_dir();
    ensure_slipway_dir(host).map_err(|e| CreateError::Io(e.to_string()))?;

    let registered = worktrees::is_registered(repo, &id);
    let existing = WorktreeRecord::load(&slipway_dir, &id);
    if registered && path.exists() {
        return reuse(host, &branch, &id, &path, existing, request);
    }
    if registered {
        // Registered but the directory is gone: drop the stale registration.
        let _admin =
            AdminLock::acquire(&locks_dir(host)).map_err(|e| CreateError::Io(e.to_string()))?;
        worktrees::unregister(repo, &id)?;
    }
    if path.symlink_metadata().is_ok() {
        let empty = std::fs::read_dir(&path)
            .map(|mut d| d.next().is_none())
            .unwrap_or(false);
        if empty {
            std::fs::remove_dir(&path).map_err(|e| CreateError::Io(e.to_string()))?;
        } else {
            return Err(CreateError::PathOccupied { path });
        }
    }
    if let Some((in_host, where_)) = worktrees::checked_out_at(repo, host.root(), &branch, &id)? {
        return Err(if in_host {
            CreateError::CheckedOutInHost {
                branch,
                path: where_,
            }
        } else {
            CreateError::CheckedOutElsewhere {
                branch,
                path: where_,
            }
        });
    }

    let mut notes = Vec::new();
    let full = format!("refs/heads/{branch}");
    let existing_tip = worktrees::branch_tip(repo, &branch);
    let (base, created_branch, source_label, policy_text) = match existing_tip {
        Some(tip) => {
            if !matches!(request.source, SourcePolicy::HostHead)
                || matches!(
                    &request.target,
                    WorktreeTarget::Branch { base: Some(_), .. }
                )
            {
                notes.push(format!(
                    "branch '{branch}' already exists: it is used as it is and the source policy is ignored"
                ));
            }
            let resolved = ResolvedSource {
                commit: tip.to_string(),
                reference: Some(full.clone()),
                label: format!("{branch} (existing branch)"),
            };
            (
                resolved,
                false,
                format!("{branch} (existing branch)"),
                "existing".to_owned(),
            )
        }
        None => {
            let policy = match &request.target {
                WorktreeTarget::Branch {
                    base: Some(base), ..
                } => SourcePolicy::Named {
                    reference: base.clone(),
                },
                _ => request.source.clone(),
            };
            let resolved = policy::resolve(repo, &policy)?;
            let label = resolved.label.clone();
            (resolved, true, label, policy.to_string())
        }
    };

    let target_branch = match request.target {
        WorktreeTarget::MergeToHead => host.current_branch(),
        WorktreeTarget::Branch { .. } => Some(branch.clone()),
    };
    let mut record = WorktreeRecord {
        id: id.clone(),
        path: path.clone(),
        branch: branch.clone(),
        strategy: match request.target {
            WorktreeTarget::Branch { .. } => WorktreeStrategy::Branch,
            WorktreeTarget::MergeToHead => WorktreeStrategy::MergeToHead,
        },
        source_policy: policy_text,
        base_commit: base.commit.clone(),
        source_ref: base.reference.as_deref().map(|r| short_ref(r).to_owned()),
        target_branch,
        created: now_secs(),
        state: WorktreeState::Active,
        why: None,
        run_id: None,
        run_pid: None,
        creating_pid: Some(std::process::id()),
        extra: existing.map(|r| r.extra).unwrap_or_default(),
    };
    // The record goes first: whatever happens next, the worktree is findable.
    record.save(&slipway_dir)?;

    let rollback = |created_branch: bool| {
        if created_branch {
            // A branch created a moment ago holds no commits of its own.
            let _ = worktrees::delete_branch(repo, &branch);
        }
        let _ = WorktreeRecord::delete(&slipway_dir, &id);
    };
    if created_branch
        // A new branch tracks the remote branch the user started from.
        && let Err(e) =
            worktrees::create_branch(repo, &branch, base.oid(), base.reference.as_deref())
    {
        let _ = WorktreeRecord::delete(&slipway_dir, &id);
        return Err(e.into());
    }
    let add = match AdminLock::acquire(&locks_dir(host)) {
        Ok(_admin) => worktrees::add(repo, &id, &path, &branch).map_err(CreateError::from),
        Err(e) => Err(CreateError::Io(format!(
            "cannot take the worktree lock: {e}"
        ))),
    };
    if let Err(e) = add {
        rollback(created_branch);
        return Err(e);
    }
    let copied = copy_into_worktree(host, &path, &request.copy);
    record.creating_pid = None;
    record.save(&slipway_dir)?;
    let copy = copied.map_err(|source| CreateError::Copy {
        source,
        worktree_path: path.clone(),
    })?;
    notes.extend(copy.warnings.iter().cloned());
    Ok(Created {
        record,
        reused: false,
        source_label,
        notes,
        copy,
    })
}

/// Returns the existing worktree for a branch, fast-forwarding it when that is safe.
fn reuse(
    host: &HostRepo,
    branch: &str,
    id: &str,
    path: &Path,
    existing: Option<WorktreeRecord>,
    request: &CreateRequest,
) -> Result<Created, CreateError> {
    let mut notes = Vec::new();
    let upstream = upstream_ref(host.git(), branch);
    match worktrees::fast_forward(path, branch, upstream.as_deref())? {
        FastForward::NotOnBranch => notes.push(format!(
            "re-used as is: its HEAD is not on '{branch}' (detached or switched)"
        )),
        FastForward::Dirty => notes.push(
            "re-used as is: it has uncommitted changes, so it was not fast-forwarded".to_owned(),
        ),
        FastForward::NoUpstream | FastForward::UpToDate => {}
        FastForward::Moved { upstream } => notes.push(format!("fast-forwarded to {upstream}")),
        FastForward::Ahead { upstream } => {
            notes.push(format!("ahead of {upstream}: nothing to fast-forward"))
        }
        FastForward::Diverged { upstream } => notes.push(format!(
            "re-used as is: '{branch}' and {upstream} have diverged"
        )),
    }
    let record = match existing {
        Some(r) => r,
        None => {
            let r = recovered_record(host, id, path, branch);
            r.save(&host.slipway_dir())?;
            r
        }
    };
    if !request.copy.is_empty() {
        notes.push("re-used worktree: copy patterns were not applied again".to_owned());
    }
    let source_label = format!("{branch} (existing worktree)");
    Ok(Created {
        record,
        reused: true,
        source_label,
        notes,
        copy: CopyReport::default(),
    })
}

/// A record rebuilt for a worktree found without one (an interrupted create).
fn recovered_record(host: &HostRepo, id: &str, path: &Path, branch: &str) -> WorktreeRecord {
    let repo = host.git();
    let tip = worktrees::branch_tip(repo, branch);
    let base = match (tip, host.head_commit()) {
        (Some(t), Some(h)) => worktrees::merge_base(repo, t, h).or(Some(t)),
        (t, _) => t,
    };
    WorktreeRecord {
        id: id.to_owned(),
        path: path.to_path_buf(),
        branch: branch.to_owned(),
        strategy: if branch.starts_with("slipway/merge-") {
            WorktreeStrategy::MergeToHead
        } else {
            WorktreeStrategy::Branch
        },
        source_policy: "unknown".to_owned(),
        base_commit: base.map(|b| b.to_string()).unwrap_or_default(),
        source_ref: None,
        target_branch: host.current_branch(),
        created: now_secs(),
        state: WorktreeState::Active,
        why: Some("recovered: found without a record (an interrupted create)".to_owned()),
        run_id: None,
        run_pid: None,
        creating_pid: None,
        extra: Default::default(),
    }
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
    /// Commits on the branch since the base commit.
    pub ahead: usize,
    /// Life state.
    pub state: WorktreeState,
    /// Why it is in that state.
    pub why: Option<String>,
    /// The run in progress or last run.
    pub run_id: Option<String>,
    /// Whether record and disk agree.
    pub health: Health,
    /// The commit it started from.
    pub base_commit: String,
}

/// Lists every slipway worktree of the repository, after reconciling records with git.
pub fn list(host: &HostRepo) -> Result<Vec<WorktreeStatus>, git2::Error> {
    list_with(host, read_status)
}

/// A present worktree's changed paths and commits ahead of its base, read
/// from disk (a `git status` of the whole checkout).
pub fn read_status(record: &WorktreeRecord) -> Result<(Vec<String>, usize), git2::Error> {
    worktrees::status_at(&record.path, &record.branch, &record.base_commit)
}

/// [`list`], asking `status` for each present worktree's changed paths and
/// commits ahead (the sidecar answers from a cache when nothing changed).
pub fn list_with(
    host: &HostRepo,
    mut status: impl FnMut(&WorktreeRecord) -> Result<(Vec<String>, usize), git2::Error>,
) -> Result<Vec<WorktreeStatus>, git2::Error> {
    reconcile(host)?;
    let repo = host.git();
    let mut out = Vec::new();
    for record in WorktreeRecord::load_all(&host.slipway_dir()) {
        let creating = record.creating_pid.is_some_and(pid_alive);
        let present = record.path.is_dir() && worktrees::is_registered(repo, &record.id);
        let (changed, ahead) = if present && !creating {
            status(&record)?
        } else {
            (Vec::new(), 0)
        };
        out.push(WorktreeStatus {
            id: record.id,
            path: record.path,
            branch: record.branch,
            strategy: record.strategy,
            dirty: !changed.is_empty(),
            changed_files: changed.len(),
            changed_paths: changed,
            ahead,
            state: record.state,
            why: record.why,
            run_id: record.run_id,
            health: if creating {
                Health::Creating
            } else if present {
                Health::Ok
            } else {
                Health::Missing
            },
            base_commit: record.base_commit,
        });
    }
    Ok(out)
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

/// Brings records in line with `git worktree list`: registered slipway
/// worktrees without a record get one; `running` records whose process is gone
/// become `active` (or `preserved` when dirty). Never deletes anything.
pub fn reconcile(host: &HostRepo) -> Result<(), git2::Error> {
    let repo = host.git();
    let slipway_dir = host.slipway_dir();
    let wt_dir = canonical(&worktrees_dir(host));
    for wt in worktrees::registered(repo)? {
        let path = canonical(&wt.path);
        if !path.starts_with(&wt_dir) || !path.is_dir() {
            continue;
        }
        if WorktreeRecord::load(&slipway_dir, &wt.id).is_some() {
            continue;
        }
        let Some(branch) = wt.branch else { continue };
        let record = recovered_record(host, &wt.id, &path, &branch);
        let _ = record.save(&slipway_dir);
    }
    for mut record in WorktreeRecord::load_all(&slipway_dir) {
        if record.state != WorktreeState::Running {
            continue;
        }
        if record.run_pid.is_some_and(pid_alive) {
            continue;
        }
        let dirty = worktrees::changed_paths_at(&record.path).is_ok_and(|c| !c.is_empty());
        record.state = if dirty {
            WorktreeState::Preserved
        } else {
            WorktreeState::Active
        };
        record.why = Some(format!(
            "run {} ended without finishing (its process is gone)",
            record.run_id.as_deref().unwrap_or("?")
        ));
        record.run_pid = None;
        let _ = record.save(&slipway_dir);
    }
    Ok(())
}

/// Finds a worktree record by id, path (the worktree or anything inside it) or branch name.
pub fn find(host: &HostRepo, selector: &str) -> Option<WorktreeRecord> {
    let _ = reconcile(host);
    let records = WorktreeRecord::load_all(&host.slipway_dir());
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
    /// libgit2 failed.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
}

impl CloseError {
    /// Stable machine-readable kind.
    pub fn kind(&self) -> crate::error::ErrorKind {
        match self {
            CloseError::NotFound { .. } => crate::error::ErrorKind::WorktreeNotFound,
            CloseError::BranchInUse(LockError::InUse { .. }) => {
                crate::error::ErrorKind::BranchInUse
            }
            CloseError::BranchInUse(LockError::Io { .. }) | CloseError::Io(_) => {
                crate::error::ErrorKind::Io
            }
            CloseError::Git(_) => crate::error::ErrorKind::Git,
        }
    }
}

impl From<record::RecordError> for CloseError {
    fn from(e: record::RecordError) -> Self {
        CloseError::Io(e.to_string())
    }
}

/// Closes a worktree: dirty → preserved (unless `force`); clean → removed,
/// and a temporary branch deleted unless it holds commits on no other branch.
pub fn close(host: &HostRepo, selector: &str, force: bool) -> Result<CloseOutcome, CloseError> {
    let Some(record) = find(host, selector) else {
        return Err(CloseError::NotFound {
            selector: selector.to_owned(),
            known: WorktreeRecord::load_all(&host.slipway_dir())
                .into_iter()
                .map(|r| format!("{} ({})", r.id, r.branch))
                .collect(),
        });
    };
    let lock = lock_branch(host, &record.branch)?;
    close_locked(host, record, force, &lock)
}

/// The commands that inspect or discard a preserved worktree.
pub fn preserved_commands(path: &Path) -> Vec<String> {
    vec![
        format!("cd {}", path.display()),
        format!("git worktree remove --force {}", path.display()),
    ]
}

/// Closes a worktree while the caller holds its branch lock.
///
/// Nothing is removed unless every rule holds: the folder is the one slipway
/// made (see [`removal`]), git still knows it (so its changes can be read),
/// it is not locked with `git worktree lock`, and it has no uncommitted
/// changes unless `force`. A detached HEAD whose commit no ref holds is kept
/// on `refs/slipway/kept/<id>` first. Anything else preserves the worktree
/// and says why; `force` never overrides the first three.
pub fn close_locked(
    host: &HostRepo,
    mut record: WorktreeRecord,
    force: bool,
    _lock: &BranchLock,
) -> Result<CloseOutcome, CloseError> {
    let repo = host.git();
    let slipway_dir = host.slipway_dir();
    let preserved =
        |record: &WorktreeRecord, reason: String, changed: Vec<String>| CloseOutcome::Preserved {
            id: record.id.clone(),
            preserved_path: record.path.clone(),
            branch: record.branch.clone(),
            reason,
            changed_paths: changed,
            commands: preserved_commands(&record.path),
        };
    let verified = match removal::verify(host, &record) {
        Ok(v) => v,
        Err(not_ours) => {
            return Ok(CloseOutcome::Preserved {
                id: record.id.clone(),
                preserved_path: record.path.clone(),
                branch: record.branch.clone(),
                reason: format!("slipway will not delete it: {not_ours}"),
                changed_paths: Vec::new(),
                commands: vec![format!("cd {}", record.path.display())],
            });
        }
    };
    let registered = worktrees::is_registered(repo, &record.id);
    let mut kept_commit = None;
    if let Some(dir) = &verified {
        if !registered {
            let reason = format!(
                "git no longer knows it as a worktree, so what in it is uncommitted cannot be told; look inside, then remove it yourself with `rm -rf {}`",
                dir.path().display()
            );
            return Ok(CloseOutcome::Preserved {
                id: record.id.clone(),
                preserved_path: record.path.clone(),
                branch: record.branch.clone(),
                reason,
                changed_paths: Vec::new(),
                commands: vec![format!("cd {}", record.path.display())],
            });
        }
        if let Some(why) = worktrees::lock_reason(repo, &record.id) {
            let reason = if why.is_empty() {
                "it is locked (`git worktree lock`); unlock it with `git worktree unlock` first"
                    .to_owned()
            } else {
                format!(
                    "it is locked (`git worktree lock`: {why}); unlock it with `git worktree unlock` first"
                )
            };
            return Ok(preserved(&record, reason, Vec::new()));
        }
        let changed = worktrees::changed_paths_at(dir.path())?;
        if !changed.is_empty() && !force {
            let reason = format!(
                "it has uncommitted changes ({} {}): {}",
                changed.len(),
                if changed.len() == 1 { "path" } else { "paths" },
                summarize(&changed)
            );
            record.state = WorktreeState::Preserved;
            record.why = Some(reason.clone());
            record.save(&slipway_dir)?;
            return Ok(preserved(&record, reason, changed));
        }
        if let Some(commit) = worktrees::detached_only_commit(dir.path()) {
            let name = worktrees::keep_commit(repo, &record.id, commit)?;
            kept_commit = Some(format!(
                "its detached HEAD held commit {commit}, which no branch holds: it was kept as {name} (`git branch <name> {name}` makes it a branch)"
            ));
        }
    }
    if let Some(dir) = verified {
        dir.remove().map_err(|e| CloseError::Io(e.to_string()))?;
    }
    if registered {
        let _admin =
            AdminLock::acquire(&locks_dir(host)).map_err(|e| CloseError::Io(e.to_string()))?;
        worktrees::unregister(repo, &record.id)?;
    }
    let (branch_deleted, branch_kept) = match record.strategy {
        WorktreeStrategy::Branch => (false, None),
        WorktreeStrategy::MergeToHead => {
            delete_temp_branch_if_merged(host, &record.branch, &record.base_commit)?
        }
    };
    WorktreeRecord::delete(&slipway_dir, &record.id)?;
    Ok(CloseOutcome::Removed {
        id: record.id,
        path: record.path,
        branch: record.branch,
        branch_deleted,
        branch_kept,
        kept_commit,
    })
}

fn summarize(paths: &[String]) -> String {
    let mut s = paths.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    if paths.len() > 5 {
        s.push_str(&format!(", and {} more", paths.len() - 5));
    }
    s
}
