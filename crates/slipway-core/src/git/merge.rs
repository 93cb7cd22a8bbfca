//! Bringing a branch back into the host's current branch, all-or-nothing.
//!
//! Nothing is written to the host until the result is known to apply: the merge
//! is computed in memory, conflicts abort before any file changes, and the
//! working tree is updated with a safe checkout that refuses to overwrite the
//! user's uncommitted work. Either the branch moves and the files follow, or
//! HEAD, index and working tree are exactly as before.
//!
//! The merge timeout covers everything before the first write to the host:
//! computing the merge (on a helper thread with its own handle, abandoned when
//! the time is up; it writes nothing the host can see) and the checkout's
//! analysis of which files change. Once files start to change the checkout
//! finishes, because stopping half way would leave the host half merged.

use std::time::{Duration, Instant};

use git2::{Oid, Repository, build::CheckoutBuilder};
use serde::Serialize;

use super::staged_paths;

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
        "host HEAD is detached, so there is no branch to merge into; check out a branch in the host repository and merge '{branch}' yourself"
    )]
    DetachedHost { branch: String },
    /// The branch to merge is gone.
    #[error("branch '{branch}' does not exist")]
    NoSuchBranch { branch: String },
    /// The host's uncommitted changes are in the way.
    #[error("the host repository has uncommitted changes in the way of merging '{branch}' ({}); commit or stash them, then run: git merge {branch}", paths.join(", "))]
    HostDirty { branch: String, paths: Vec<String> },
    /// The branches conflict.
    #[error("merging '{branch}' into '{target}' conflicts in {}; the merge was aborted and nothing changed; resolve it with: git merge {branch}", paths.join(", "))]
    Conflict {
        branch: String,
        target: String,
        paths: Vec<String>,
    },
    /// The merge took longer than the merge timeout; it stopped before the
    /// host changed.
    #[error(
        "merging '{branch}' took longer than the merge timeout of {secs} s and was stopped before anything in the host changed; merge it yourself with: git merge {branch}, or raise the merge timeout"
    )]
    Timeout { branch: String, secs: u64 },
    /// libgit2 failed.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
}

impl MergeError {
    /// Stable machine-readable kind.
    pub fn kind(&self) -> crate::error::ErrorKind {
        match self {
            MergeError::DetachedHost { .. } => crate::error::ErrorKind::DetachedHead,
            MergeError::NoSuchBranch { .. } => crate::error::ErrorKind::UnknownRef,
            MergeError::HostDirty { .. } => crate::error::ErrorKind::HostDirty,
            MergeError::Conflict { .. } => crate::error::ErrorKind::MergeConflict,
            MergeError::Timeout { .. } => crate::error::ErrorKind::MergeTimeout,
            MergeError::Git(_) => crate::error::ErrorKind::Git,
        }
    }
}

/// Merges local branch `branch` into the host's current branch: fast-forward
/// where possible, else a merge commit. Gives up with [`MergeError::Timeout`]
/// if it has not started changing the host within `timeout`.
pub fn merge_into_host(
    host: &Repository,
    branch: &str,
    timeout: Duration,
) -> Result<MergeOutcome, MergeError> {
    let deadline = Deadline {
        // A timeout too large to add is no timeout.
        at: Instant::now().checked_add(timeout),
        secs: timeout.as_secs(),
        branch,
    };
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
        return Ok(MergeOutcome::UpToDate);
    }
    let staged = staged_paths(host)?;
    if !staged.is_empty() {
        return Err(MergeError::HostDirty {
            branch: branch.to_owned(),
            paths: staged,
        });
    }

    let fast_forward = host.graph_descendant_of(theirs.id(), ours.id())?;
    let (new_commit, new_tree) = if fast_forward {
        (theirs.id(), theirs.tree()?)
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
        // Written as a loose object only: no ref moves until the files are in place.
        let commit = host.commit(None, &sig, &sig, &message, &tree, &[&ours, &theirs])?;
        (commit, tree)
    };

    checkout_safely(host, &new_tree, &deadline)?;
    let message = if fast_forward {
        format!("slipway: fast-forward {target} to {branch}")
    } else {
        format!("slipway: merge {branch} into {target}")
    };
    if let Err(err) = host.reference_matching(&target_full, new_commit, true, ours.id(), &message) {
        // Someone moved the branch under us: put the files back as they were.
        let old_tree = ours.tree()?;
        let mut undo = CheckoutBuilder::new();
        undo.force();
        let _ = host.checkout_tree(old_tree.as_object(), Some(&mut undo));
        return Err(MergeError::Git(err));
    }
    Ok(if fast_forward {
        MergeOutcome::FastForward {
            from: ours.id().to_string(),
            to: new_commit.to_string(),
        }
    } else {
        MergeOutcome::Merged {
            commit: new_commit.to_string(),
        }
    })
}

/// When a merge must have started changing the host, and what to say if not.
struct Deadline<'a> {
    at: Option<Instant>,
    secs: u64,
    branch: &'a str,
}

impl Deadline<'_> {
    fn passed(&self) -> bool {
        self.at.is_some_and(|at| Instant::now() >= at)
    }

    fn error(&self) -> MergeError {
        MergeError::Timeout {
            branch: self.branch.to_owned(),
            secs: self.secs,
        }
    }
}

/// An in-memory merge of two commits: its tree, or the conflicting paths.
enum Merged {
    Tree(Oid),
    Conflicts(Vec<String>),
}

/// Merges the trees of `ours` and `theirs` on a helper thread with its own
/// handle, so a merge that outlasts the deadline can be left behind: it only
/// writes tree objects, which nothing refers to.
fn merge_trees_in_time(
    host: &Repository,
    ours: Oid,
    theirs: Oid,
    deadline: &Deadline<'_>,
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

/// Updates the working tree and index to `tree` from HEAD's tree, refusing
/// (before writing anything) when an uncommitted change would be overwritten
/// or when the deadline passes while libgit2 works out what to change.
fn checkout_safely(
    host: &Repository,
    tree: &git2::Tree<'_>,
    deadline: &Deadline<'_>,
) -> Result<(), MergeError> {
    if deadline.passed() {
        return Err(deadline.error());
    }
    let mut blocked: Vec<String> = Vec::new();
    let mut timed_out = false;
    let result = {
        let mut builder = CheckoutBuilder::new();
        builder.safe();
        // libgit2 reports every path while it plans the checkout, before it
        // writes anything; saying no there leaves the host untouched.
        builder.notify_on(
            git2::CheckoutNotificationType::CONFLICT | git2::CheckoutNotificationType::UPDATED,
        );
        builder.notify(|why, path, _, _, _| {
            if deadline.passed() {
                timed_out = true;
                return false;
            }
            if why.contains(git2::CheckoutNotificationType::CONFLICT)
                && let Some(p) = path
            {
                blocked.push(p.to_string_lossy().into_owned());
            }
            true
        });
        host.checkout_tree(tree.as_object(), Some(&mut builder))
    };
    let branch = deadline.branch;
    match result {
        Ok(()) => Ok(()),
        Err(_) if timed_out => Err(deadline.error()),
        Err(e) if e.code() == git2::ErrorCode::Conflict || !blocked.is_empty() => {
            blocked.sort();
            blocked.dedup();
            Err(MergeError::HostDirty {
                branch: branch.to_owned(),
                paths: blocked,
            })
        }
        Err(e) => Err(MergeError::Git(e)),
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
