//! Finishing or undoing a create or close that died half way (see
//! [`crate::journal`]). A create is undone: nothing of the user's is in a new
//! worktree yet. A close is finished: it had already decided the worktree
//! goes. Folders leave by being renamed into the trash first (see
//! [`super::trash`]), so a crash while deleting never leaves a half-deleted
//! worktree in place.

use super::trash;
use super::*;
use crate::journal::{self, Operation};

/// Undoes a create of worktree `id` on `branch`: its folder, registration,
/// record, and the branch when the create made it and it holds nothing new.
pub(super) fn undo_create(
    host: &HostRepo,
    id: &str,
    branch: &str,
    created_branch: bool,
    base: &str,
) -> Result<(), String> {
    let path = worktrees_dir(host).join(id);
    // The create checked that nothing was at this path before it journaled,
    // so whatever is there now it made.
    trash::move_in(host, &path).map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
    {
        let _admin = AdminLock::acquire(&locks_dir(host)).map_err(|e| e.to_string())?;
        worktrees::unregister(host.git(), id).map_err(|e| e.to_string())?;
    }
    if created_branch
        && worktrees::branch_tip(host.git(), branch)
            .map(|t| t.to_string())
            .as_deref()
            == Some(base)
    {
        worktrees::delete_branch(host.git(), branch).map_err(|e| e.to_string())?;
    }
    WorktreeRecord::delete(&host.slipway_dir(), id).map_err(|e| e.to_string())?;
    trash::empty_later(&host.slipway_dir());
    Ok(())
}

/// Finishes a close of worktree `id`: its folder goes (it was checked
/// before the close was journaled), then its registration and record.
pub(super) fn finish_close(host: &HostRepo, id: &str, branch: &str) -> Result<(), String> {
    let path = worktrees_dir(host).join(id);
    if path.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        trash::move_in(host, &path)
            .map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
    }
    {
        let _admin = AdminLock::acquire(&locks_dir(host)).map_err(|e| e.to_string())?;
        worktrees::unregister(host.git(), id).map_err(|e| e.to_string())?;
    }
    if let Ok(Some(record)) = WorktreeRecord::read(&host.slipway_dir(), id)
        && record.strategy == WorktreeStrategy::MergeToHead
    {
        delete_temp_branch_if_merged(host, branch, &record.base_commit)
            .map_err(|e| e.to_string())?;
    }
    WorktreeRecord::delete(&host.slipway_dir(), id).map_err(|e| e.to_string())?;
    trash::empty_later(&host.slipway_dir());
    Ok(())
}

/// Recovers one interrupted create or close, taking its branch lock (a live
/// create or run on the branch means later). Returns what to tell the user.
pub fn recover(host: &HostRepo, op: &Operation) -> Result<Option<String>, String> {
    let branch = match op {
        Operation::Create { branch, .. }
        | Operation::Close { branch, .. }
        | Operation::Discard { branch, .. } => branch,
        Operation::Merge { .. } | Operation::Import { .. } => return Ok(None),
    };
    let lock = match lock_branch(host, branch) {
        Ok(lock) => lock,
        Err(e) => return Err(format!("an interrupted operation on '{branch}' waits: {e}")),
    };
    let note = recover_locked(host, op)?;
    drop(lock);
    Ok(note)
}

fn recover_locked(host: &HostRepo, op: &Operation) -> Result<Option<String>, String> {
    match op {
        Operation::Create {
            id,
            branch,
            created_branch,
            base,
        } => {
            undo_create(host, id, branch, *created_branch, base)?;
            Ok(Some(format!(
                "an interrupted create of the worktree for '{branch}' was undone; create it again"
            )))
        }
        Operation::Close { id, branch } => {
            finish_close(host, id, branch)?;
            Ok(Some(format!(
                "an interrupted close of the worktree for '{branch}' was finished"
            )))
        }
        Operation::Discard {
            id,
            branch,
            tip,
            token,
        } => {
            // The discard had decided: the worktree and its branch both go;
            // the lock its branch deletion held goes first.
            for note in crate::git::host_write::settle_token(host.common_dir(), token) {
                tracing::warn!("{note}");
            }
            finish_close(host, id, branch)?;
            let tip = tip.as_deref().and_then(|t| git2::Oid::from_str(t).ok());
            let again = crate::git::host_write::new_token();
            crate::review::discard::delete_branch_at(
                host,
                &format!("refs/heads/{branch}"),
                tip,
                &again,
            )?;
            Ok(Some(format!(
                "an interrupted discard of the worktree for '{branch}' was finished"
            )))
        }
        Operation::Merge { .. } | Operation::Import { .. } => Ok(None),
    }
}

/// Recovers an interrupted create or close of worktree `id` while the caller
/// already holds that worktree's branch lock.
pub(super) fn recover_own(host: &HostRepo, id: &str) -> Result<(), String> {
    let slipway_dir = host.slipway_dir();
    for name in [
        format!("create-{id}"),
        format!("close-{id}"),
        format!("discard-{id}"),
    ] {
        if let Some(entry) = journal::interrupted_named(&slipway_dir, &name) {
            recover_locked(host, &entry.op)?;
            entry.journal.finish().map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}
