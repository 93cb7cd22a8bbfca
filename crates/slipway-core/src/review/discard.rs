//! Discarding a worktree: the worktree goes by the rules of close (only the
//! folder slipway made, journaled, through the trash) and then its branch
//! goes too, whatever its strategy. Without `force`, uncommitted files or
//! commits no other ref holds keep both, and the answer says why.

use git2::Oid;
use serde_json::{Map, Value};

use super::risk::{self, AtRisk, Preview};
use super::{NoSuchWorktree, Subject, find_subject, lock_kind};
use crate::actions::{ActionKind, WithActions};
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

/// What discarding `selector` would lose (`dryRun`): nothing is changed.
pub fn preview(host: &HostRepo, selector: &str) -> Result<Preview, DiscardError> {
    let subject = find_subject(host, selector)?;
    let at_risk = risk::of_discard(host, &subject)?;
    Ok(Preview::new(&subject, at_risk, ActionKind::Discard))
}

/// Why a discard without force kept everything, from what is at risk.
fn refusal(branch: &str, at_risk: &AtRisk) -> String {
    let mut why = Vec::new();
    let n = at_risk.uncommitted.len();
    if n > 0 {
        why.push(format!(
            "it has uncommitted changes ({n} {})",
            if n == 1 { "path" } else { "paths" }
        ));
    }
    let n = at_risk.commits.len();
    if n > 0 {
        why.push(format!(
            "branch '{branch}' holds {n} {} found on no other branch, remote-tracking ref or tag, and not landed",
            if n == 1 { "commit" } else { "commits" }
        ));
    }
    format!(
        "{}; nothing was discarded: land it, or discard with force to lose them",
        why.join(" and ")
    )
}

/// Removes the worktree (or kept branch) `selector` names and its branch.
/// Without `force`, anything at risk (see [`risk::of_discard`]) keeps both,
/// and the answer says why. `force` never overrides the rules of close that
/// protect what slipway did not make (see [`close_locked`]).
pub fn discard(host: &HostRepo, selector: &str, force: bool) -> Result<Discarded, DiscardError> {
    host.state_trusted()?;
    let subject = find_subject(host, selector)?;
    let _turn = crate::git::queue::turn(host.common_dir());
    let name = subject.selector();
    let (outcome, refused) = remove(host, subject, force)?;
    let actions = match refused {
        // Kept for what is at risk: look, land what is not home, or lose it.
        Some(at_risk) => {
            let mut actions = crate::actions::unlanded(&name);
            if at_risk.commits.is_empty() {
                actions.retain(|a| a.kind != ActionKind::Land);
            }
            actions
        }
        None => outcome.actions(),
    };
    Ok(WithActions {
        answer: outcome,
        actions,
    })
}

/// A discard's answer: close's outcome and what to do next.
pub type Discarded = WithActions<CloseOutcome>;

/// [`discard`] once the subject is found; with what was at risk when that
/// kept everything.
fn remove(
    host: &HostRepo,
    subject: Subject,
    force: bool,
) -> Result<(CloseOutcome, Option<AtRisk>), DiscardError> {
    let lock = lock_branch(host, subject.branch())?;
    let repo = host.git();
    let tip = worktrees::branch_tip(repo, subject.branch());
    let at_risk = risk::of_discard(host, &subject)?;
    if !force && !at_risk.is_empty() {
        let (id, path) = match &subject {
            Subject::Worktree(r) => (r.id.clone(), r.path.clone()),
            Subject::KeptBranch(b) => (b.clone(), std::path::PathBuf::new()),
        };
        let outcome = CloseOutcome::Preserved {
            commands: if path.as_os_str().is_empty() {
                Vec::new()
            } else {
                vec![format!("cd {}", path.display())]
            },
            id,
            preserved_path: path,
            branch: subject.branch().to_owned(),
            reason: refusal(subject.branch(), &at_risk),
            changed_paths: at_risk.uncommitted.clone(),
        };
        return Ok((outcome, Some(at_risk)));
    }
    let lost = !at_risk.commits.is_empty();
    let record = match subject {
        Subject::Worktree(record) => *record,
        Subject::KeptBranch(branch) => {
            let full = format!("refs/heads/{branch}");
            let token = crate::git::host_write::new_token();
            delete_branch_at(host, &full, tip, &token)
                .map_err(|e| DiscardError::Git(git2::Error::from_str(&e)))?;
            let outcome = CloseOutcome::Removed {
                id: branch.clone(),
                path: std::path::PathBuf::new(),
                discarded_tip: tip.filter(|_| lost).map(|t| discarded_tip(&branch, t)),
                branch,
                branch_deleted: true,
                branch_kept: None,
                kept_commit: None,
            };
            return Ok((outcome, None));
        }
    };
    let full = format!("refs/heads/{}", record.branch);
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
        return Ok((outcome, None));
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
    let outcome = CloseOutcome::Removed {
        id,
        path,
        branch_deleted: deleted,
        branch_kept: None,
        kept_commit,
        discarded_tip: tip.filter(|_| lost).map(|t| discarded_tip(&branch, t)),
        branch,
    };
    Ok((outcome, None))
}

/// Where a discarded branch was, and how to bring it back.
fn discarded_tip(branch: &str, tip: Oid) -> String {
    format!(
        "branch '{branch}' was at {tip}, which no other ref holds: `git branch {branch} {tip}` brings it back until git collects its objects"
    )
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
