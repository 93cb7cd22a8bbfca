//! Bringing a branch back into the host's current branch, all-or-nothing.
//!
//! Nothing is written to the host until the result is known to apply: the merge
//! is computed in memory, conflicts abort before any file changes, and the
//! working tree is updated with a safe checkout that refuses to overwrite the
//! user's uncommitted work. Either the branch moves and the files follow, or
//! HEAD, index and working tree are exactly as before.

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
    /// libgit2 failed.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
}

impl MergeError {
    /// Stable machine-readable kind.
    pub fn kind(&self) -> &'static str {
        match self {
            MergeError::DetachedHost { .. } => "detachedHead",
            MergeError::NoSuchBranch { .. } => "unknownRef",
            MergeError::HostDirty { .. } => "hostDirty",
            MergeError::Conflict { .. } => "mergeConflict",
            MergeError::Git(_) => "git",
        }
    }
}

/// Merges local branch `branch` into the host's current branch: fast-forward
/// where possible, else a merge commit.
pub fn merge_into_host(host: &Repository, branch: &str) -> Result<MergeOutcome, MergeError> {
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
        let mut index = host.merge_commits(&ours, &theirs, None)?;
        if index.has_conflicts() {
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
            return Err(MergeError::Conflict {
                branch: branch.to_owned(),
                target,
                paths,
            });
        }
        let tree_id = index.write_tree_to(host)?;
        let tree = host.find_tree(tree_id)?;
        let sig = super::signature(host)?;
        let message = format!("Merge branch '{branch}' into {target}\n");
        // Written as a loose object only: no ref moves until the files are in place.
        let commit = host.commit(None, &sig, &sig, &message, &tree, &[&ours, &theirs])?;
        (commit, tree)
    };

    checkout_safely(host, &new_tree, branch)?;
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

/// Updates the working tree and index to `tree` from HEAD's tree, refusing
/// (before writing anything) when an uncommitted change would be overwritten.
fn checkout_safely(
    host: &Repository,
    tree: &git2::Tree<'_>,
    branch: &str,
) -> Result<(), MergeError> {
    let mut blocked: Vec<String> = Vec::new();
    let result = {
        let mut builder = CheckoutBuilder::new();
        builder.safe();
        builder.notify_on(git2::CheckoutNotificationType::CONFLICT);
        builder.notify(|_, path, _, _, _| {
            if let Some(p) = path {
                blocked.push(p.to_string_lossy().into_owned());
            }
            true
        });
        host.checkout_tree(tree.as_object(), Some(&mut builder))
    };
    match result {
        Ok(()) => Ok(()),
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
