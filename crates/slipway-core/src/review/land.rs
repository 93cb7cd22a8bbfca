//! Landing a worktree's branch into a host branch by merge, squash or
//! rebase, with the safety of merge-to-head: the new commit is made in
//! memory, then the merge engine ([`crate::git::merge`]) checks the host
//! checkout, journals the plan and writes exactly the paths that change
//! before the branch moves by compare-and-swap. A branch that is not
//! checked out anywhere only has its ref moved. Any failure leaves the
//! host's HEAD, index and files as they were.

use std::time::Duration;

use git2::{Oid, Repository};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::{NoSuchWorktree, Subject, find_subject, lock_kind};
use crate::actions::{self, Action, ActionKind};
use crate::error::{ErrorKind, Failure, Field, Hint};
use crate::git::HostRepo;
use crate::git::merge::{self, Deadline, MergeError, MergePlan, Merged};
use crate::git::worktrees;
use crate::review::sensitive::{SensitiveChange, sensitive_changes};
use crate::worktree::lock::LockError;
use crate::worktree::record::RecordError;
use crate::worktree::{WorktreeStrategy, lock_branch};

/// The record field that remembers the branch tip a land brought home, so
/// a discard knows those commits are not lost even when squash or rebase
/// left no ref on them.
pub const LANDED_TIP: &str = "landedTip";

/// How to bring the branch in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LandHow {
    /// A merge commit, or a fast-forward when the target has not moved.
    Merge,
    /// One new commit holding the branch's whole change, on top of the target.
    Squash,
    /// The branch's commits replayed one by one on top of the target.
    Rebase,
}

impl LandHow {
    /// Every mode, as `initialize` lists them.
    pub const ALL: [LandHow; 3] = [LandHow::Merge, LandHow::Squash, LandHow::Rebase];

    /// The name the protocol and the command line use.
    pub fn name(self) -> &'static str {
        match self {
            LandHow::Merge => "merge",
            LandHow::Squash => "squash",
            LandHow::Rebase => "rebase",
        }
    }
}

/// What a land made of the target branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LandKind {
    /// The target moved forward to the branch's tip (it had not moved).
    FastForward,
    /// A merge commit with both tips as parents.
    Merge,
    /// One commit with the target as its only parent.
    Squash,
    /// The branch's commits copied onto the target.
    Rebase,
    /// The target held the branch's work already: nothing moved.
    UpToDate,
}

/// What to land.
#[derive(Debug, Clone)]
pub struct LandRequest<'a> {
    /// The worktree (id, path or branch).
    pub worktree: &'a str,
    /// How.
    pub how: LandHow,
    /// The host branch to land in; `None` takes the host's current branch
    /// (for a merge-to-head worktree: the branch it was made for, which
    /// must still be the current one, as for a run's merge back).
    pub into: Option<&'a str>,
    /// The commit message of a merge or squash commit.
    pub message: Option<&'a str>,
    /// How long working out the new commit and checking the host may take.
    pub timeout: Duration,
}

/// What a land did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Landed {
    /// Always true: a land that did not happen is an error.
    pub landed: bool,
    /// The branch landed in (short name).
    pub into: String,
    /// Its tip now.
    pub commit: String,
    /// What happened to it.
    pub kind: LandKind,
    /// The worktree's branch (left as it was).
    pub branch: String,
    /// Whether the host checkout's files and index were updated (`into` is
    /// its current branch) or only the ref moved.
    pub checkout_updated: bool,
    /// What to do next: the work is home, so the worktree and its branch
    /// can go.
    pub actions: Vec<Action>,
    /// Files the land changed in `into` that make programs run on the host
    /// (`slipway.toml`, git hooks, editor and shell config).
    pub sensitive_changes: Vec<SensitiveChange>,
}

/// Why nothing was landed. In every case the host is exactly as before.
#[derive(Debug, thiserror::Error)]
pub enum LandError {
    /// No worktree matches.
    #[error(transparent)]
    NotFound(#[from] NoSuchWorktree),
    /// A run, create or close holds the worktree's branch.
    #[error(transparent)]
    BranchInUse(#[from] LockError),
    /// The worktree has uncommitted files, which a land would leave behind.
    #[error("worktree '{id}' has uncommitted changes ({}); commit them in {} first (or discard them), then land again; nothing was landed", paths.join(", "), path.display())]
    WorktreeDirty {
        /// The worktree.
        id: String,
        /// Its branch.
        branch: String,
        /// Where it is.
        path: std::path::PathBuf,
        /// What is uncommitted.
        paths: Vec<String>,
    },
    /// The worktree's branch is gone.
    #[error("branch '{branch}' of the worktree does not exist")]
    NoBranch {
        /// The branch.
        branch: String,
    },
    /// The target branch does not exist.
    #[error("there is no local branch '{into}' to land in")]
    NoSuchInto {
        /// What was asked for.
        into: String,
    },
    /// The target is the worktree's own branch.
    #[error("'{branch}' is the worktree's own branch: land it into another branch")]
    SameBranch {
        /// The branch.
        branch: String,
    },
    /// A message with rebase.
    #[error("a message goes with merge or squash; rebase keeps each commit's own message")]
    MessageWithRebase,
    /// The target is checked out in another worktree, whose files would go stale.
    #[error("'{into}' is checked out in another worktree at {}; land it from there, or switch that worktree to another branch", path.display())]
    IntoCheckedOutElsewhere {
        /// The target.
        into: String,
        /// Where it is checked out.
        path: std::path::PathBuf,
    },
    /// The host checkout is in the middle of a merge, rebase or the like.
    #[error(
        "the host repository is in the middle of another git operation (a merge, rebase, cherry-pick…); finish or abort it first; nothing was landed"
    )]
    HostBusy,
    /// The branch and the target conflict.
    #[error("{how} of '{branch}' into '{into}' conflicts in {}; nothing changed; bring '{into}' into '{branch}' in its worktree (a rebase or a merge), then land it again", paths.join(", "))]
    Conflict {
        /// The mode.
        how: &'static str,
        /// The worktree's branch.
        branch: String,
        /// The target.
        into: String,
        /// Conflicting paths.
        paths: Vec<String>,
    },
    /// The merge engine refused (host dirty, host switched, detached, a race, a timeout).
    #[error(transparent)]
    Merge(#[from] MergeError),
    /// The worktree's record cannot be written.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// libgit2 failed.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
    /// `.slipway/` is not slipway's own: nothing is landed.
    #[error(transparent)]
    Untrusted(#[from] crate::state_trust::Untrusted),
}

impl Failure for LandError {
    fn kind(&self) -> ErrorKind {
        match self {
            LandError::NotFound(e) => e.kind(),
            LandError::BranchInUse(e) => lock_kind(e),
            LandError::WorktreeDirty { .. } => ErrorKind::WorktreeDirty,
            LandError::NoBranch { .. } | LandError::NoSuchInto { .. } => ErrorKind::UnknownRef,
            LandError::SameBranch { .. } | LandError::MessageWithRebase => ErrorKind::InvalidParams,
            LandError::IntoCheckedOutElsewhere { .. } => ErrorKind::BranchCheckedOut,
            LandError::HostBusy => ErrorKind::HostRepoBusy,
            LandError::Conflict { .. } => ErrorKind::MergeConflict,
            LandError::Merge(e) => e.kind(),
            LandError::Record(e) => e.kind(),
            LandError::Git(_) => ErrorKind::Git,
            LandError::Untrusted(_) => ErrorKind::UntrustedState,
        }
    }

    fn data(&self) -> Map<String, Value> {
        let mut data = Map::new();
        match self {
            LandError::NotFound(e) => return e.data(),
            LandError::WorktreeDirty { path, paths, .. } => {
                data.insert("worktreePath".into(), json!(path));
                data.insert("paths".into(), json!(paths));
            }
            LandError::Conflict { paths, .. }
            | LandError::Merge(MergeError::Conflict { paths, .. })
            | LandError::Merge(MergeError::HostDirty { paths, .. }) => {
                data.insert("paths".into(), json!(paths));
            }
            LandError::IntoCheckedOutElsewhere { path, .. } => {
                data.insert("path".into(), json!(path));
            }
            _ => {}
        }
        data
    }

    fn hints(&self) -> Vec<Hint> {
        match self {
            LandError::NotFound(e) => e.hints(),
            LandError::MessageWithRebase => vec![Hint::Drop {
                field: Field::Message,
            }],
            LandError::SameBranch { .. } | LandError::NoSuchInto { .. } => {
                vec![Hint::Give { field: Field::Into }]
            }
            _ => Vec::new(),
        }
    }

    fn actions(&self) -> Vec<Action> {
        match self {
            LandError::WorktreeDirty { branch, .. } => actions::uncommitted(branch),
            LandError::Conflict { branch, .. } => vec![
                Action::on(ActionKind::Review, branch),
                Action::on(ActionKind::Discard, branch).forced(),
            ],
            LandError::Merge(e) => e.actions(),
            _ => Vec::new(),
        }
    }
}

/// Lands the worktree's branch (or a kept branch) as `request` says.
pub fn land(host: &HostRepo, request: &LandRequest<'_>) -> Result<Landed, LandError> {
    if request.how == LandHow::Rebase && request.message.is_some() {
        return Err(LandError::MessageWithRebase);
    }
    host.state_trusted()?;
    let subject = find_subject(host, request.worktree)?;
    let branch = subject.branch().to_owned();
    // A run on the branch would move it under the land.
    let _lock = lock_branch(host, &branch)?;
    let _turn = crate::git::queue::turn(host.common_dir());
    let mut record = match subject {
        Subject::Worktree(record) => Some(*record),
        Subject::KeptBranch(_) => None,
    };
    if let Some(record) = &record {
        let uncommitted = worktrees::changed_paths_at(&record.path)?;
        if !uncommitted.is_empty() {
            return Err(LandError::WorktreeDirty {
                id: record.id.clone(),
                branch: branch.clone(),
                path: record.path.clone(),
                paths: uncommitted,
            });
        }
    }
    let repo = host.git();
    let theirs = worktrees::branch_tip(repo, &branch).ok_or_else(|| LandError::NoBranch {
        branch: branch.clone(),
    })?;
    let current = host.current_branch();
    let made_for = record
        .as_ref()
        .map(|r| (r.strategy, r.target_branch.clone()));
    let into = match (request.into, made_for) {
        (Some(into), _) => into.to_owned(),
        // A merge-to-head worktree lands where it was made for, as its run would.
        (None, Some((WorktreeStrategy::MergeToHead, Some(target)))) => {
            if current.as_ref() != Some(&target) {
                return Err(MergeError::HostSwitched {
                    branch,
                    into: target.clone(),
                    now: current.unwrap_or_else(|| "a detached HEAD".to_owned()),
                }
                .into());
            }
            target.clone()
        }
        (None, _) => current.clone().ok_or_else(|| MergeError::DetachedHost {
            branch: branch.clone(),
        })?,
    };
    if into == branch {
        return Err(LandError::SameBranch { branch });
    }
    let ours = worktrees::branch_tip(repo, &into)
        .ok_or_else(|| LandError::NoSuchInto { into: into.clone() })?;
    let checkout = current.as_deref() == Some(into.as_str());
    if checkout && host.operation_in_progress() {
        return Err(LandError::HostBusy);
    }
    if !checkout && let Some((_, path)) = worktrees::checked_out_at(repo, host.root(), &into, "")? {
        return Err(LandError::IntoCheckedOutElsewhere { into, path });
    }
    let deadline = Deadline::new(request.timeout, &branch);
    let landed = |commit: Oid, kind: LandKind, checkout_updated: bool| Landed {
        landed: true,
        into: into.clone(),
        commit: commit.to_string(),
        kind,
        branch: branch.clone(),
        checkout_updated,
        actions: vec![Action::on(ActionKind::Discard, &branch)],
        sensitive_changes: Vec::new(),
    };
    let made = if ours == theirs || repo.graph_descendant_of(ours, theirs)? {
        None
    } else {
        new_commit(repo, request, &branch, &into, ours, theirs, &deadline)?
    };
    let Some((new, kind)) = made else {
        remember_landed(host, record.as_mut(), theirs)?;
        return Ok(landed(ours, LandKind::UpToDate, false));
    };
    let plan = MergePlan {
        branch: branch.clone(),
        target: format!("refs/heads/{into}"),
        ours,
        new,
        // A rebase moves the target forward to the replayed commits, as
        // `git merge --ff-only` after `git rebase` would: only the paths it
        // touches need be clean, as for a fast-forward.
        fast_forward: matches!(kind, LandKind::FastForward | LandKind::Rebase),
        paths: Vec::new(),
        checkout,
        writes: Vec::new(),
        made: Vec::new(),
    };
    let plan = merge::checked(repo, plan, &deadline)?;
    merge::apply_journaled(host, &plan)?;
    remember_landed(host, record.as_mut(), theirs)?;
    let changed = sensitive_changes(
        repo,
        Some(repo.find_commit(ours)?.tree_id()),
        repo.find_commit(new)?.tree_id(),
    )?;
    Ok(Landed {
        sensitive_changes: changed,
        ..landed(new, kind, checkout)
    })
}

/// Notes in the record that the branch's work up to `tip` is home (a kept
/// branch has no record: the target holds its tip, or its patch-ids, now).
fn remember_landed(
    host: &HostRepo,
    record: Option<&mut crate::worktree::WorktreeRecord>,
    tip: Oid,
) -> Result<(), RecordError> {
    let Some(record) = record else {
        return Ok(());
    };
    record
        .extra
        .insert(LANDED_TIP.into(), Value::String(tip.to_string()));
    record.save(&host.slipway_dir())
}

/// The commit the target moves to, and what kind; `None` when the branch's
/// change is in the target already (a squash or rebase with nothing left).
fn new_commit(
    repo: &Repository,
    request: &LandRequest<'_>,
    branch: &str,
    into: &str,
    ours: Oid,
    theirs: Oid,
    deadline: &Deadline,
) -> Result<Option<(Oid, LandKind)>, LandError> {
    let fast_forward = repo.graph_descendant_of(theirs, ours)?;
    let conflict = |paths| LandError::Conflict {
        how: request.how.name(),
        branch: branch.to_owned(),
        into: into.to_owned(),
        paths,
    };
    let merged_tree = || -> Result<Oid, LandError> {
        if fast_forward {
            return Ok(repo.find_commit(theirs)?.tree_id());
        }
        match merge::merge_trees_in_time(repo, ours, theirs, deadline)? {
            Merged::Tree(tree) => Ok(tree),
            Merged::Conflicts(paths) => Err(conflict(paths)),
        }
    };
    let sig = crate::git::signature(repo)?;
    let ours_commit = repo.find_commit(ours)?;
    match request.how {
        LandHow::Merge if fast_forward => Ok(Some((theirs, LandKind::FastForward))),
        LandHow::Rebase if fast_forward => Ok(Some((theirs, LandKind::FastForward))),
        LandHow::Merge => {
            let tree = repo.find_tree(merged_tree()?)?;
            let message = request
                .message
                .map(str::to_owned)
                .unwrap_or_else(|| format!("Merge branch '{branch}' into {into}\n"));
            let theirs_commit = repo.find_commit(theirs)?;
            // An object only: no ref moves until the engine has checked the host.
            let commit = repo.commit(
                None,
                &sig,
                &sig,
                &message,
                &tree,
                &[&ours_commit, &theirs_commit],
            )?;
            Ok(Some((commit, LandKind::Merge)))
        }
        LandHow::Squash => {
            let tree_id = merged_tree()?;
            if tree_id == ours_commit.tree_id() {
                return Ok(None);
            }
            let tree = repo.find_tree(tree_id)?;
            let message = match request.message {
                Some(m) => m.to_owned(),
                None => squash_message(repo, branch, into, ours, theirs)?,
            };
            let commit = repo.commit(None, &sig, &sig, &message, &tree, &[&ours_commit])?;
            Ok(Some((commit, LandKind::Squash)))
        }
        LandHow::Rebase => {
            let tip = replay(repo, ours, theirs, &sig, deadline, conflict)?;
            Ok((tip != ours).then_some((tip, LandKind::Rebase)))
        }
    }
}

/// A squash commit's message: what it squashes, as `git merge --squash` lists it.
fn squash_message(
    repo: &Repository,
    branch: &str,
    into: &str,
    ours: Oid,
    theirs: Oid,
) -> Result<String, git2::Error> {
    let mut message = format!("Squashed branch '{branch}' into {into}\n\n");
    for id in crate::git::commits_between(repo, Some(ours), theirs)? {
        let commit = repo.find_commit(id)?;
        message.push_str(&format!(
            "* {}\n",
            commit.summary().ok().flatten().unwrap_or("(no message)")
        ));
    }
    Ok(message)
}

/// Copies the branch's commits that `ours` lacks onto `ours`, oldest first,
/// as `git rebase` does: merge commits are dropped (the history becomes
/// linear), a commit whose change the target holds already is dropped,
/// authors and messages are kept. Returns the last copy (or `ours`).
fn replay(
    repo: &Repository,
    ours: Oid,
    theirs: Oid,
    sig: &git2::Signature<'_>,
    deadline: &Deadline,
    conflict: impl Fn(Vec<String>) -> LandError,
) -> Result<Oid, LandError> {
    let mut onto = repo.find_commit(ours)?;
    for id in crate::git::commits_between(repo, Some(ours), theirs)? {
        if deadline.passed() {
            return Err(deadline.error().into());
        }
        let commit = repo.find_commit(id)?;
        if commit.parent_count() > 1 {
            continue;
        }
        let mut index = repo.cherrypick_commit(&commit, &onto, 0, None)?;
        if index.has_conflicts() {
            let mut paths = Vec::new();
            for c in index.conflicts()? {
                let c = c?;
                if let Some(entry) = c.our.or(c.their).or(c.ancestor) {
                    paths.push(String::from_utf8_lossy(&entry.path).into_owned());
                }
            }
            paths.sort();
            paths.dedup();
            return Err(conflict(paths));
        }
        let tree_id = index.write_tree_to(repo)?;
        if tree_id == onto.tree_id() {
            continue;
        }
        let tree = repo.find_tree(tree_id)?;
        let message = commit.message_raw().unwrap_or("");
        let copy = repo.commit(None, &commit.author(), sig, message, &tree, &[&onto])?;
        onto = repo.find_commit(copy)?;
    }
    Ok(onto.id())
}
