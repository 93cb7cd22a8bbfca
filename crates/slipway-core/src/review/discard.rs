//! Discarding a worktree: the worktree goes by the rules of close (only the
//! folder slipway made, journaled, through the trash) and then its branch
//! goes too, whatever its strategy. Without `force`, uncommitted files or
//! commits no other ref holds keep both, and the answer says why.

use git2::{Oid, Repository};
use serde_json::{Map, Value};

use super::land::LANDED_TIP;
use super::{NoSuchWorktree, find_record, lock_kind};
use crate::error::{ErrorKind, Failure, Hint};
use crate::git::HostRepo;
use crate::git::worktrees;
use crate::worktree::lock::LockError;
use crate::worktree::{CloseError, CloseOutcome, close_locked, lock_branch};

/// Why a discard could not be carried out (a refusal is a `Preserved`
/// outcome, not an error).
#[derive(Debug, thiserror::Error)]
pub enum DiscardError {
    /// No worktree matches.
    #[error(transparent)]
    NotFound(#[from] NoSuchWorktree),
    /// A run, create or close holds the branch.
    #[error(transparent)]
    BranchInUse(#[from] LockError),
    /// Closing failed.
    #[error(transparent)]
    Close(#[from] CloseError),
    /// libgit2 failed.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
    /// `.slipway/` is not slipway's own: nothing is removed.
    #[error(transparent)]
    Untrusted(#[from] crate::state_trust::Untrusted),
}

impl Failure for DiscardError {
    fn kind(&self) -> ErrorKind {
        match self {
            DiscardError::NotFound(e) => e.kind(),
            DiscardError::BranchInUse(e) => lock_kind(e),
            DiscardError::Close(e) => e.kind(),
            DiscardError::Git(_) => ErrorKind::Git,
            DiscardError::Untrusted(_) => ErrorKind::UntrustedState,
        }
    }

    fn data(&self) -> Map<String, Value> {
        match self {
            DiscardError::NotFound(e) => e.data(),
            _ => Map::new(),
        }
    }

    fn hints(&self) -> Vec<Hint> {
        match self {
            DiscardError::NotFound(e) => e.hints(),
            _ => Vec::new(),
        }
    }
}

/// Removes the worktree `selector` names and its branch. Without `force`,
/// a worktree with uncommitted files, or a branch with commits that no
/// other ref holds (and no land brought home), is kept and the answer says
/// why. `force` never overrides the rules of close that protect what slipway
/// did not make (see [`close_locked`]).
pub fn discard(host: &HostRepo, selector: &str, force: bool) -> Result<CloseOutcome, DiscardError> {
    host.state_trusted()?;
    let record = find_record(host, selector)?;
    let lock = lock_branch(host, &record.branch)?;
    let repo = host.git();
    let full = format!("refs/heads/{}", record.branch);
    let tip = worktrees::branch_tip(repo, &record.branch);
    let landed = record
        .extra
        .get(LANDED_TIP)
        .and_then(Value::as_str)
        .and_then(|s| Oid::from_str(s).ok());
    let unique = match tip {
        Some(tip) => unique_commits(repo, tip, &full, landed)?,
        None => 0,
    };
    let changed = if record.path.is_dir() {
        worktrees::changed_paths_at(&record.path).map_err(DiscardError::Git)?
    } else {
        Vec::new()
    };
    if !force && (unique > 0 || !changed.is_empty()) {
        let mut why = Vec::new();
        if !changed.is_empty() {
            why.push(format!(
                "it has uncommitted changes ({} {})",
                changed.len(),
                if changed.len() == 1 { "path" } else { "paths" }
            ));
        }
        if unique > 0 {
            why.push(format!(
                "branch '{}' holds {unique} commit(s) that no other branch, tag or land holds",
                record.branch
            ));
        }
        return Ok(CloseOutcome::Preserved {
            id: record.id.clone(),
            preserved_path: record.path.clone(),
            branch: record.branch.clone(),
            reason: format!(
                "{}; nothing was discarded: land it, or discard with force to lose them",
                why.join(" and ")
            ),
            changed_paths: changed,
            commands: vec![
                format!("cd {}", record.path.display()),
                format!("slipway discard {} --force", record.id),
            ],
        });
    }
    let branch = record.branch.clone();
    let token = crate::git::host_write::new_token();
    // Journaled before anything goes: a discard killed half way (worktree
    // gone, branch not yet) is finished by the next command.
    let journal = crate::journal::Journal::begin(
        &host.slipway_dir(),
        &format!("discard-{}", record.id),
        &crate::journal::Operation::Discard {
            id: record.id.clone(),
            branch: branch.clone(),
            tip: tip.map(|t| t.to_string()),
            token: token.clone(),
        },
    )
    .map_err(|e| DiscardError::Close(CloseError::Io(e.to_string())))?;
    crate::testhook::point("discard");
    let outcome = close_locked(host, record, force, &lock)?;
    let CloseOutcome::Removed {
        id,
        path,
        branch_deleted,
        kept_commit,
        ..
    } = outcome
    else {
        return Ok(outcome);
    };
    crate::testhook::point("discard");
    let deleted = match delete_branch_at(host, &full, tip, &token) {
        Ok(deleted) => deleted || branch_deleted,
        Err(e) => return Err(DiscardError::Git(git2::Error::from_str(&e))),
    };
    crate::testhook::point("discard");
    if let Err(e) = journal.finish() {
        tracing::warn!("{e}");
    }
    Ok(CloseOutcome::Removed {
        id,
        path,
        branch_deleted: deleted,
        branch_kept: None,
        kept_commit,
        discarded_tip: tip.filter(|_| unique > 0).map(|t| {
            format!(
                "branch '{branch}' was at {t}, which no other ref holds: `git branch {branch} {t}` brings it back until git collects its objects"
            )
        }),
        branch,
    })
}

/// Deletes `full` (a branch) while it is still at `tip`, under a lock the
/// next command can tell is slipway's; whether it deleted it.
pub fn delete_branch_at(
    host: &HostRepo,
    full: &str,
    tip: Option<Oid>,
    token: &str,
) -> Result<bool, String> {
    let Some(tip) = tip else {
        return Ok(false);
    };
    match crate::git::host_write::update_ref(
        host.git(),
        host.common_dir(),
        token,
        full,
        Some(tip),
        None,
        "slipway: discard",
    ) {
        Ok(()) => Ok(true),
        // Gone already (close deleted a merged temporary branch), or moved
        // by the user since: theirs.
        Err(crate::git::host_write::RefError::Moved { .. }) => Ok(false),
        Err(e) => Err(e.to_string()),
    }
}

/// How many commits of `tip` no ref but `own` (and no landed tip) holds.
fn unique_commits(
    repo: &Repository,
    tip: Oid,
    own: &str,
    landed: Option<Oid>,
) -> Result<usize, git2::Error> {
    let mut walk = repo.revwalk()?;
    walk.push(tip)?;
    for r in repo.references()? {
        let r = r?;
        if r.name().ok() == Some(own) {
            continue;
        }
        if let Ok(commit) = r.peel_to_commit() {
            walk.hide(commit.id())?;
        }
    }
    if let Some(landed) = landed
        && repo.find_commit(landed).is_ok()
    {
        walk.hide(landed)?;
    }
    Ok(walk.count())
}
