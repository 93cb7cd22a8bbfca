//! Bringing a branch back into the host's branch, all-or-nothing, by git's
//! rules for a checkout the user works in (DESIGN §2 "Runs").
//!
//! A merge is planned first, writing nothing the host can see: the branch it
//! goes into must still be the host's current branch (else nothing is merged),
//! the merge is computed in memory onto that branch's tip *now* (the user may
//! have committed meanwhile), and every path it changes is checked against
//! the host: a path that is staged, modified, untracked or ignored there (or
//! sits under such a file, or holds such files where a file would go) stops
//! it before anything changes. Changes to other paths stay as they are, the
//! index included (the merge commit is made from trees, never from the index).
//!
//! Then exactly the planned paths are written, the branch moves by
//! compare-and-swap, and a failure restores exactly those paths, which were
//! clean. The caller journals the plan first (see [`crate::journal`]), so a
//! merge that was killed half way is undone by [`recover`].
//!
//! The merge timeout covers the planning: computing the merged tree (on a
//! helper thread with its own handle, abandoned when the time is up) and the
//! checks. Once files start to change the merge finishes, because stopping
//! half way would leave the host half merged.

use std::time::{Duration, Instant};

use std::path::Path;

use git2::{Oid, Repository};
use serde::Serialize;

/// What a successful merge did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum MergeOutcome {
    /// The host branch already contained every commit.
    UpToDate,
    /// The host branch moved forward to the branch tip.
    FastForward { from: String, to: String },
    /// A merge commit was created.
    Merged { commit: String },
}

/// Why a merge was aborted. In every case the host is exactly as before.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// The host has no current branch to merge into.
    #[error(
        "host HEAD is detached, so there is no branch to merge into; '{branch}' is kept: check out a branch in the host repository, then land it"
    )]
    DetachedHost { branch: String },
    /// The host switched to another branch since the work started.
    #[error(
        "the host is now on '{now}', not on '{into}' where the work was to land, so nothing was merged; '{branch}' is kept: switch back and land it, or land it into another branch"
    )]
    HostSwitched {
        branch: String,
        into: String,
        now: String,
    },
    /// The branch to merge is gone.
    #[error("branch '{branch}' does not exist")]
    NoSuchBranch { branch: String },
    /// The host's uncommitted changes are in the way.
    #[error("the host repository has uncommitted or ignored files in the way of merging '{branch}' ({}); nothing changed: commit, stash or move them, then land '{branch}' again", paths.join(", "))]
    HostDirty { branch: String, paths: Vec<String> },
    /// The branches conflict.
    #[error("merging '{branch}' into '{target}' conflicts in {}; the merge was aborted and nothing changed; '{branch}' is kept: bring '{target}' into it in its worktree (a rebase or a merge), then land it again", paths.join(", "))]
    Conflict {
        branch: String,
        target: String,
        paths: Vec<String>,
    },
    /// The merge took longer than the merge timeout; it stopped before the
    /// host changed.
    #[error(
        "merging '{branch}' took longer than the merge timeout of {secs} s and was stopped before anything in the host changed; '{branch}' is kept: land it again with a longer merge timeout"
    )]
    Timeout { branch: String, secs: u64 },
    /// The branch moved while the files were written (the user committed
    /// that instant): the files were put back.
    #[error(
        "'{target}' moved while '{branch}' was being merged into it; the merged files were put back and nothing changed; '{branch}' is kept: land it again"
    )]
    Raced { branch: String, target: String },
    /// Writing the merged files failed part-way (a full disk, a lock): what
    /// was written went back.
    #[error("writing the files of '{branch}' into the host failed ({cause}); {}", if left.is_empty() {
        format!("every file written was put back and nothing changed: free space (or remove the lock), then land '{branch}' again")
    } else {
        format!("these paths could not be put back and need a look: {}; then land '{branch}' again", left.join(", "))
    })]
    WriteFailed {
        branch: String,
        cause: String,
        left: Vec<String>,
    },
    /// The host is in the middle of another git operation, or its index
    /// has unresolved conflicts: `git merge` would refuse too.
    #[error(
        "the host repository is {what}; nothing was merged: finish or abort that first, then land '{branch}' again"
    )]
    HostBusy { branch: String, what: String },
    /// A path the merge would write is one git would refuse to check out.
    #[error(
        "merging '{branch}' would write {path:?}, which git refuses to check out ({why}); nothing was changed"
    )]
    UnsafePath {
        branch: String,
        path: String,
        why: String,
    },
    /// Another git process holds the index or the branch's lock.
    #[error("{0}")]
    Locked(String),
    /// The journal could not be written, so the merge did not start.
    #[error(transparent)]
    Journal(#[from] crate::journal::JournalError),
    /// libgit2 failed.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
}

impl MergeError {
    /// Stable machine-readable kind.
    pub fn kind(&self) -> crate::error::ErrorKind {
        match self {
            MergeError::DetachedHost { .. } => crate::error::ErrorKind::DetachedHead,
            MergeError::HostSwitched { .. } => crate::error::ErrorKind::HostSwitched,
            MergeError::NoSuchBranch { .. } => crate::error::ErrorKind::UnknownRef,
            MergeError::HostDirty { .. } => crate::error::ErrorKind::HostDirty,
            MergeError::Conflict { .. } | MergeError::Raced { .. } => {
                crate::error::ErrorKind::MergeConflict
            }
            MergeError::Timeout { .. } => crate::error::ErrorKind::MergeTimeout,
            MergeError::HostBusy { .. } | MergeError::Locked(_) => {
                crate::error::ErrorKind::HostRepoBusy
            }
            MergeError::UnsafePath { .. } => crate::error::ErrorKind::ImportRefused,
            MergeError::Journal(_) | MergeError::WriteFailed { .. } => crate::error::ErrorKind::Io,
            MergeError::Git(_) => crate::error::ErrorKind::Git,
        }
    }
}

/// A merge worked out and checked, not yet written: what [`apply`] does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergePlan {
    /// The branch being merged (short name).
    pub branch: String,
    /// The host branch it goes into (full ref).
    pub target: String,
    /// That branch's tip when planned.
    pub ours: Oid,
    /// Its tip afterwards (the branch's tip, or a new merge commit).
    pub new: Oid,
    /// A fast-forward (no merge commit).
    pub fast_forward: bool,
    /// Every path whose file changes.
    pub paths: Vec<String>,
    /// `target` is the host's checked-out branch: its files and index are
    /// written too. Otherwise only the ref moves.
    pub checkout: bool,
    /// Each path with what it holds now and what it gets (filled in by
    /// [`checked`]), journaled before the first write.
    pub writes: Vec<super::host_write::PathWrite>,
    /// The folders the write makes, outermost first.
    pub made: Vec<String>,
}

/// What merging needs to know besides the repository.
#[derive(Debug, Clone, Copy)]
pub struct MergeRequest<'a> {
    /// The branch to merge (short name).
    pub branch: &'a str,
    /// The host branch the work was meant for (short name); `None` takes the
    /// host's current branch, whichever it is.
    pub into: Option<&'a str>,
    /// How long planning may take.
    pub timeout: Duration,
}

/// Plans merging `request.branch` into the host's current branch. `Ok(None)`
/// when the host already holds every commit.
pub fn plan(
    host: &Repository,
    request: &MergeRequest<'_>,
) -> Result<Option<MergePlan>, MergeError> {
    let branch = request.branch;
    let deadline = Deadline::new(request.timeout, branch);
    let head_ref = host.find_reference("HEAD")?;
    let Some(target_full) = head_ref.symbolic_target().ok().flatten().map(str::to_owned) else {
        return Err(MergeError::DetachedHost {
            branch: branch.to_owned(),
        });
    };
    let target = target_full
        .strip_prefix("refs/heads/")
        .unwrap_or(&target_full)
        .to_owned();
    if let Some(into) = request.into
        && into != target
    {
        return Err(MergeError::HostSwitched {
            branch: branch.to_owned(),
            into: into.to_owned(),
            now: target,
        });
    }
    let theirs = host
        .find_reference(&format!("refs/heads/{branch}"))
        .and_then(|r| r.peel_to_commit())
        .map_err(|_| MergeError::NoSuchBranch {
            branch: branch.to_owned(),
        })?;
    let ours = host
        .find_reference(&target_full)
        .and_then(|r| r.peel_to_commit())
        .map_err(|_| MergeError::DetachedHost {
            branch: branch.to_owned(),
        })?;
    if ours.id() == theirs.id() || host.graph_descendant_of(ours.id(), theirs.id())? {
        return Ok(None);
    }
    let fast_forward = host.graph_descendant_of(theirs.id(), ours.id())?;
    let new_commit = if fast_forward {
        theirs.id()
    } else {
        let tree_id = match merge_trees_in_time(host, ours.id(), theirs.id(), &deadline)? {
            Merged::Tree(tree_id) => tree_id,
            Merged::Conflicts(paths) => {
                return Err(MergeError::Conflict {
                    branch: branch.to_owned(),
                    target,
                    paths,
                });
            }
        };
        let tree = host.find_tree(tree_id)?;
        let sig = super::signature(host)?;
        let message = format!("Merge branch '{branch}' into {target}\n");
        // Written as an object only: no ref moves until the files are in place.
        host.commit(None, &sig, &sig, &message, &tree, &[&ours, &theirs])?
    };
    let plan = MergePlan {
        branch: branch.to_owned(),
        target: target_full,
        ours: ours.id(),
        new: new_commit,
        fast_forward,
        paths: Vec::new(),
        checkout: true,
        writes: Vec::new(),
        made: Vec::new(),
    };
    checked(host, plan, &deadline).map(Some)
}

/// Fills in the paths a plan writes and checks the host checkout can take
/// them (see [`in_the_way`]); a plan for a branch that is not checked out
/// (`checkout` false) writes no file and moves only the ref.
pub fn checked(
    host: &Repository,
    mut plan: MergePlan,
    deadline: &Deadline,
) -> Result<MergePlan, MergeError> {
    if !plan.checkout {
        return Ok(plan);
    }
    refuse_like_git(host, &plan)?;
    let ours_tree = host.find_commit(plan.ours)?.tree()?;
    let new_tree = host.find_commit(plan.new)?.tree()?;
    let changes = changed_paths_between(host, Some(&ours_tree), &new_tree)?;
    if deadline.passed() {
        return Err(deadline.error());
    }
    let blocked = in_the_way(host, &changes)?;
    if !blocked.is_empty() {
        return Err(MergeError::HostDirty {
            branch: plan.branch,
            paths: blocked,
        });
    }
    if deadline.passed() {
        return Err(deadline.error());
    }
    plan.paths = changes.into_iter().map(|c| c.path).collect();
    plan.writes = planned_writes(host, plan.ours, plan.new, &plan.paths).map_err(|e| match e {
        super::host_write::PlanError::UnsafePath { path, why } => MergeError::UnsafePath {
            branch: plan.branch.clone(),
            path,
            why,
        },
        super::host_write::PlanError::Git(e) => MergeError::Git(e),
    })?;
    let root = host
        .workdir()
        .ok_or_else(|| git2::Error::from_str("the host has no working tree"))?;
    plan.made = super::host_write::folders_to_make(root, &plan.writes);
    Ok(plan)
}

/// What each of `paths` holds in `ours` and gets from `new`.
fn planned_writes(
    repo: &Repository,
    ours: Oid,
    new: Oid,
    paths: &[String],
) -> Result<Vec<super::host_write::PathWrite>, super::host_write::PlanError> {
    use super::host_write::{PathWrite, content_in};
    paths
        .iter()
        .map(|path| {
            Ok(PathWrite {
                path: path.clone(),
                before: content_in(repo, ours, path)?,
                after: content_in(repo, new, path)?,
            })
        })
        .collect()
}

/// Refuses, as `git merge` does, a host in the middle of another git
/// operation (merge, rebase, cherry-pick, revert, bisect, am), an index with
/// unresolved conflicts or skipped-worktree (sparse) entries in the way, and,
/// for a merge that makes a merge commit, any staged change (git's
/// strategies require the index to match HEAD; a fast-forward only needs the
/// paths it touches to be clean, as `git merge --ff` does).
fn refuse_like_git(host: &Repository, plan: &MergePlan) -> Result<(), MergeError> {
    let busy = |what: &str| MergeError::HostBusy {
        branch: plan.branch.clone(),
        what: what.to_owned(),
    };
    let gitdir = host.path();
    let in_progress = [
        ("MERGE_HEAD", "in the middle of a merge"),
        ("rebase-merge", "in the middle of a rebase"),
        ("rebase-apply", "in the middle of a rebase or `git am`"),
        ("CHERRY_PICK_HEAD", "in the middle of a cherry-pick"),
        ("REVERT_HEAD", "in the middle of a revert"),
        ("BISECT_LOG", "in the middle of a bisect"),
    ];
    for (file, what) in in_progress {
        if gitdir.join(file).exists() {
            return Err(busy(what));
        }
    }
    if host.state() != git2::RepositoryState::Clean {
        return Err(busy("in the middle of another git operation"));
    }
    let mut index = host.index()?;
    // The handle may be older than what the user staged or committed since.
    index.read(false)?;
    if index.has_conflicts() {
        return Err(busy("holding unresolved conflicts in its index"));
    }
    let ours_tree = host.find_commit(plan.ours)?.tree()?;
    let new_tree = host.find_commit(plan.new)?.tree()?;
    let mut sparse = Vec::new();
    for change in changed_paths_between(host, Some(&ours_tree), &new_tree)? {
        if let Some(entry) = index.get_path(Path::new(&change.path), 0)
            && entry.flags_extended & SKIP_WORKTREE != 0
        {
            sparse.push(change.path);
        }
    }
    if !sparse.is_empty() {
        return Err(MergeError::HostDirty {
            branch: plan.branch.clone(),
            paths: sparse,
        });
    }
    if !plan.fast_forward {
        let staged = staged_paths(host, &ours_tree, &index)?;
        if !staged.is_empty() {
            return Err(MergeError::HostDirty {
                branch: plan.branch.clone(),
                paths: staged,
            });
        }
    }
    Ok(())
}

/// libgit2's flag for a skip-worktree (sparse checkout) index entry.
const SKIP_WORKTREE: u16 = 1 << 14;

/// Paths whose index entry differs from the tree (what `git diff --cached` lists).
fn staged_paths(
    host: &Repository,
    tree: &git2::Tree<'_>,
    index: &git2::Index,
) -> Result<Vec<String>, git2::Error> {
    let diff = host.diff_tree_to_index(Some(tree), Some(index), None)?;
    Ok(diff
        .deltas()
        .filter_map(|d| {
            d.new_file()
                .path()
                .or_else(|| d.old_file().path())
                .map(|p| p.to_string_lossy().into_owned())
        })
        .collect())
}

/// Merges `request.branch` into the host: plans it, journals the plan, writes
/// it. Nothing changes on any error; a merge killed half way is undone by the
/// next slipway command (see [`crate::recovery`]).
pub fn merge_into_host(
    host: &super::HostRepo,
    request: &MergeRequest<'_>,
) -> Result<MergeOutcome, MergeError> {
    let _turn = super::queue::turn(host.common_dir());
    let Some(plan) = plan(host.git(), request)? else {
        return Ok(MergeOutcome::UpToDate);
    };
    apply_journaled(host, &plan)
}

/// Writes a checked plan (see [`apply`]) under a journal entry naming every
/// path with its content before and after, so a merge killed half way is
/// undone by the next slipway command (see [`recover`]).
pub fn apply_journaled(
    host: &super::HostRepo,
    plan: &MergePlan,
) -> Result<MergeOutcome, MergeError> {
    let token = super::host_write::new_token();
    let journal = crate::journal::Journal::begin(
        &host.slipway_dir(),
        &format!("merge-{token}"),
        &crate::journal::Operation::Merge {
            target: plan.target.clone(),
            ours: plan.ours.to_string(),
            new: plan.new.to_string(),
            ref_only: !plan.checkout,
            token: Some(token.clone()),
            writes: plan.writes.clone(),
            made: plan.made.clone(),
        },
    )?;
    crate::testhook::point("hostwrite");
    let outcome = apply(host, plan, &token);
    // The outcome stands either way (applied, or put back): the journal has
    // nothing left to recover.
    if let Err(e) = journal.finish() {
        tracing::warn!("{e}");
    }
    outcome
}

/// One path a merge changes, and whether the new tree holds a file there.
#[derive(Debug, Clone)]
struct Change {
    path: String,
    file_after: bool,
}

fn changed_paths_between(
    repo: &Repository,
    old: Option<&git2::Tree<'_>>,
    new: &git2::Tree<'_>,
) -> Result<Vec<Change>, git2::Error> {
    let diff = repo.diff_tree_to_tree(old, Some(new), None)?;
    let mut out = Vec::new();
    for delta in diff.deltas() {
        let (old_file, new_file) = (delta.old_file(), delta.new_file());
        if let Some(path) = new_file.path().or_else(|| old_file.path()) {
            out.push(Change {
                path: path.to_string_lossy().into_owned(),
                file_after: delta.status() != git2::Delta::Deleted,
            });
        }
    }
    Ok(out)
}

/// The paths the merge would touch that the host's uncommitted, untracked or
/// ignored files are in the way of, as `git status --ignored` names them.
fn in_the_way(host: &Repository, changes: &[Change]) -> Result<Vec<String>, git2::Error> {
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(false)
        .include_ignored(true)
        .recurse_ignored_dirs(false)
        .exclude_submodules(false)
        .renames_head_to_index(false);
    let statuses = host.statuses(Some(&mut opts))?;
    let mut blocked = Vec::new();
    for entry in statuses.iter() {
        if entry.status() == git2::Status::CURRENT {
            continue;
        }
        let Ok(raw) = entry.path() else { continue };
        let held = raw.trim_end_matches('/');
        for change in changes {
            let p = change.path.as_str();
            let same = p == held;
            // The merge writes inside a folder, or over a file, the user holds.
            let below = p.starts_with(held) && p.as_bytes().get(held.len()) == Some(&b'/');
            // The merge puts a file where the user holds files below it.
            let above = change.file_after
                && held.starts_with(p)
                && held.as_bytes().get(p.len()) == Some(&b'/');
            if same || below || above {
                blocked.push(raw.to_owned());
                break;
            }
        }
    }
    blocked.sort();
    blocked.dedup();
    Ok(blocked)
}

/// Writes a planned merge: under the host index's lock (re-checked there:
/// what the plan found clean must still be), the planned paths' files and
/// index entries, then the branch by compare-and-swap. If the branch moved
/// meanwhile, or a write fails, what was written is put back.
pub fn apply(
    host: &super::HostRepo,
    plan: &MergePlan,
    token: &str,
) -> Result<MergeOutcome, MergeError> {
    use super::host_write::{self, IndexError, RefError};
    let repo = host.git();
    let common = host.common_dir();
    let root = host.root();
    let index_path = repo.path().join("index");
    if plan.checkout {
        // The user may have switched since the plan was checked: its files
        // would go into the wrong checkout.
        let now = super::worktrees::head_branch(repo);
        let short = plan.target.trim_start_matches("refs/heads/");
        if now.as_deref() != Some(short) {
            return Err(MergeError::HostSwitched {
                branch: plan.branch.clone(),
                into: short.to_owned(),
                now: now.unwrap_or_else(|| "a detached HEAD".to_owned()),
            });
        }
        let mut write_failure = None;
        let written = host_write::update_index(common, token, &index_path, |index| {
            for w in &plan.writes {
                let entry = index
                    .get_path(Path::new(&w.path), 0)
                    .map(|e| (e.id.to_string(), e.mode));
                if entry != w.before.as_ref().map(|c| (c.id.clone(), c.mode)) {
                    return Err(format!("{} was staged meanwhile", w.path));
                }
            }
            if let Err(e) =
                host_write::write_paths(repo, root, token, &plan.writes, plan.new, false)
            {
                write_failure = Some(e.to_string());
                return Err("a write failed".to_owned());
            }
            host_write::set_index_entries(index, root, &plan.writes, false, false)
        });
        match written {
            Ok(()) => {}
            Err(e) => {
                // Whatever is on disk now of the planned paths is this write's
                // (they were clean a moment ago): it goes back.
                let left = match host_write::put_back(
                    repo,
                    root,
                    token,
                    &plan.writes,
                    &plan.made,
                    plan.ours,
                ) {
                    Ok(left) => left,
                    Err(undo) => plan
                        .writes
                        .iter()
                        .map(|w| format!("{} ({undo})", w.path))
                        .collect(),
                };
                return Err(match (e, write_failure) {
                    (_, Some(cause)) => MergeError::WriteFailed {
                        branch: plan.branch.clone(),
                        cause,
                        left,
                    },
                    (IndexError::Lock(lock), None) => MergeError::Locked(lock.to_string()),
                    (IndexError::Refused(why), None) => MergeError::HostDirty {
                        branch: plan.branch.clone(),
                        paths: vec![why],
                    },
                    (other, None) => MergeError::WriteFailed {
                        branch: plan.branch.clone(),
                        cause: other.to_string(),
                        left,
                    },
                });
            }
        }
    }
    let message = if plan.fast_forward {
        format!("slipway: fast-forward to {}", plan.branch)
    } else {
        format!("slipway: merge {}", plan.branch)
    };
    let swapped = host_write::update_ref(
        repo,
        common,
        token,
        &plan.target,
        Some(plan.ours),
        Some(plan.new),
        &message,
    );
    if let Err(e) = swapped {
        if plan.checkout {
            undo_written(host, plan, token)?;
        }
        return Err(match e {
            RefError::Moved { .. } => MergeError::Raced {
                branch: plan.branch.clone(),
                target: plan.target.trim_start_matches("refs/heads/").to_owned(),
            },
            RefError::Lock(lock) => MergeError::Locked(lock.to_string()),
            RefError::Git(e) => MergeError::Git(e),
            other => MergeError::WriteFailed {
                branch: plan.branch.clone(),
                cause: other.to_string(),
                left: Vec::new(),
            },
        });
    }
    Ok(if plan.fast_forward {
        MergeOutcome::FastForward {
            from: plan.ours.to_string(),
            to: plan.new.to_string(),
        }
    } else {
        MergeOutcome::Merged {
            commit: plan.new.to_string(),
        }
    })
}

/// Puts the files and index entries a write made back (the branch did not move).
fn undo_written(
    host: &super::HostRepo,
    plan: &MergePlan,
    token: &str,
) -> Result<Vec<String>, MergeError> {
    use super::host_write;
    let (repo, root) = (host.git(), host.root());
    let left = host_write::put_back(repo, root, token, &plan.writes, &plan.made, plan.ours)
        .map_err(|e| MergeError::WriteFailed {
            branch: plan.branch.clone(),
            cause: e.to_string(),
            left: Vec::new(),
        })?;
    let index_path = repo.path().join("index");
    host_write::update_index(
        host.common_dir(),
        &format!("{token}u"),
        &index_path,
        |index| host_write::set_index_entries(index, root, &plan.writes, true, true),
    )
    .map_err(|e| MergeError::WriteFailed {
        branch: plan.branch.clone(),
        cause: e.to_string(),
        left: left.clone(),
    })?;
    Ok(left)
}

/// What recovering an interrupted merge did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovered {
    /// The branch had moved: the merge was complete.
    Finished,
    /// The branch had not moved: the files the merge wrote were put back.
    Undone {
        /// Paths changed since the merge was interrupted, left as they are.
        left: Vec<String>,
    },
    /// The branch is somewhere else now: nothing was touched.
    LeftAlone,
}

/// An interrupted merge as its journal names it.
pub struct Interrupted<'a> {
    /// The branch it moved (full ref).
    pub target: &'a str,
    /// The branch's value before, and the one it was to get.
    pub ours: Oid,
    /// The value it was to get.
    pub new: Oid,
    /// Its locks' and temporary files' token (`None`: an older slipway's
    /// journal, which held libgit2's own locks).
    pub token: Option<&'a str>,
    /// Every path with its content before and after (empty in an older
    /// slipway's journal: worked out from the commits).
    pub writes: &'a [super::host_write::PathWrite],
    /// The folders it made.
    pub made: &'a [String],
}

/// Finishes or undoes a merge that was interrupted: its own locks and
/// temporary files go; when the branch moved to `new` the merge was
/// complete, when it did not every planned path that holds what the merge
/// wrote (or nothing, where it removed a file) gets its prior bytes and
/// mode back, index entry included, and the folders it made and left empty
/// go; a path changed since is left as it is and named.
pub fn recover(
    host: &super::HostRepo,
    merge: &Interrupted<'_>,
) -> Result<(Recovered, Vec<String>), MergeError> {
    use super::host_write;
    let repo = host.git();
    let mut notes = match merge.token {
        Some(token) => host_write::settle_token(host.common_dir(), token),
        None => Vec::new(),
    };
    let now = host_write::current_value(repo, merge.target);
    let token = merge.token.unwrap_or("old");
    let computed;
    let writes = if merge.writes.is_empty() {
        let (old, new) = (
            repo.find_commit(merge.ours)?.tree()?,
            repo.find_commit(merge.new)?.tree()?,
        );
        let paths: Vec<String> = changed_paths_between(repo, Some(&old), &new)?
            .into_iter()
            .map(|c| c.path)
            .collect();
        computed = planned_writes(repo, merge.ours, merge.new, &paths).map_err(|e| {
            MergeError::WriteFailed {
                branch: merge.target.to_owned(),
                cause: e.to_string(),
                left: Vec::new(),
            }
        })?;
        &computed[..]
    } else {
        merge.writes
    };
    let plan = MergePlan {
        branch: merge.target.trim_start_matches("refs/heads/").to_owned(),
        target: merge.target.to_owned(),
        ours: merge.ours,
        new: merge.new,
        fast_forward: false,
        paths: writes.iter().map(|w| w.path.clone()).collect(),
        checkout: true,
        writes: writes.to_vec(),
        made: merge.made.to_vec(),
    };
    if now == Some(merge.new) {
        // The branch moves last: every file and the index were in place.
        return Ok((Recovered::Finished, notes));
    }
    if now != Some(merge.ours) {
        return Ok((Recovered::LeftAlone, notes));
    }
    let left = undo_written(host, &plan, token)?;
    notes.extend(left.iter().cloned());
    Ok((Recovered::Undone { left }, notes))
}

/// When a merge must have started changing the host, and what to say if not.
pub struct Deadline {
    at: Option<Instant>,
    secs: u64,
    branch: String,
}

impl Deadline {
    /// `timeout` from now, for merging `branch`.
    pub fn new(timeout: Duration, branch: &str) -> Deadline {
        Deadline {
            // A timeout too large to add is no timeout.
            at: Instant::now().checked_add(timeout),
            secs: timeout.as_secs(),
            branch: branch.to_owned(),
        }
    }

    /// Whether the time is up.
    pub fn passed(&self) -> bool {
        self.at.is_some_and(|at| Instant::now() >= at)
    }

    /// The error of a merge that ran out of time.
    pub fn error(&self) -> MergeError {
        MergeError::Timeout {
            branch: self.branch.clone(),
            secs: self.secs,
        }
    }
}

/// An in-memory merge of two commits: its tree, or the conflicting paths.
pub enum Merged {
    /// The merged tree, written as an object.
    Tree(Oid),
    /// The paths that conflict.
    Conflicts(Vec<String>),
}

/// Merges the trees of `ours` and `theirs` on a helper thread with its own
/// handle, so a merge that outlasts the deadline can be left behind: it only
/// writes tree objects, which nothing refers to.
pub fn merge_trees_in_time(
    host: &Repository,
    ours: Oid,
    theirs: Oid,
    deadline: &Deadline,
) -> Result<Merged, MergeError> {
    let git_dir = host.path().to_path_buf();
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let merged = (|| -> Result<Merged, git2::Error> {
            let repo = Repository::open(&git_dir)?;
            let ours = repo.find_commit(ours)?;
            let theirs = repo.find_commit(theirs)?;
            let mut index = repo.merge_commits(&ours, &theirs, None)?;
            if !index.has_conflicts() {
                return Ok(Merged::Tree(index.write_tree_to(&repo)?));
            }
            let mut paths = Vec::new();
            for conflict in index.conflicts()? {
                let conflict = conflict?;
                let entry = conflict.our.or(conflict.their).or(conflict.ancestor);
                if let Some(entry) = entry {
                    paths.push(String::from_utf8_lossy(&entry.path).into_owned());
                }
            }
            paths.sort();
            paths.dedup();
            Ok(Merged::Conflicts(paths))
        })();
        // The caller may have stopped waiting; then nobody needs the answer.
        let _ = send.send(merged);
    });
    let answer = match deadline.at {
        Some(at) => receive.recv_timeout(at.saturating_duration_since(Instant::now())),
        None => receive
            .recv()
            .map_err(|_| std::sync::mpsc::RecvTimeoutError::Disconnected),
    };
    match answer {
        Ok(merged) if !deadline.passed() => Ok(merged?),
        Ok(_) | Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(deadline.error()),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(MergeError::Git(
            git2::Error::from_str("the merge thread stopped without an answer"),
        )),
    }
}

/// Whether every commit of `tip` is also on some other local or remote-tracking branch.
pub fn is_contained_elsewhere(
    repo: &Repository,
    tip: Oid,
    except: &str,
) -> Result<bool, git2::Error> {
    for r in repo.references()? {
        let r = r?;
        let Some(name) = r.name().ok() else { continue };
        if name == except || !(name.starts_with("refs/heads/") || name.starts_with("refs/remotes/"))
        {
            continue;
        }
        let Some(other) = r.resolve().ok().and_then(|r| r.target()) else {
            continue;
        };
        if other == tip || repo.graph_descendant_of(other, tip)? {
            return Ok(true);
        }
    }
    Ok(false)
}
