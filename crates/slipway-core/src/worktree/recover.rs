//! Finishing or undoing a create or close that died half way (see
//! [`crate::journal`]). A create is undone: nothing of the user's is in a new
//! worktree yet. A close is finished: it had already decided the worktree
//! goes. Folders leave by being renamed into `.slipway/trash/` first, so a
//! crash while deleting never leaves a half-deleted worktree in place.

use std::path::{Path, PathBuf};

use super::*;
use crate::journal::{self, Operation};

fn trash_dir(host: &HostRepo) -> PathBuf {
    host.slipway_dir().join("trash")
}

/// Moves the worktree folder `path` (checked by the caller to be slipway's)
/// into the trash, atomically; `Ok(false)` when there is nothing there.
pub(super) fn move_to_trash(host: &HostRepo, path: &Path) -> std::io::Result<bool> {
    match path.symlink_metadata() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
        Ok(meta) if !meta.is_dir() => {
            return Err(std::io::Error::other(format!(
                "{} is not a folder",
                path.display()
            )));
        }
        Ok(_) => {}
    }
    let trash = trash_dir(host);
    std::fs::create_dir_all(&trash)?;
    let name = format!(
        "{}-{}",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default(),
        random_hex(4)
    );
    std::fs::rename(path, trash.join(name))?;
    Ok(true)
}

/// Deletes what is in the trash (symlinks in it are removed, never followed).
pub(super) fn empty_trash(host: &HostRepo) -> Vec<String> {
    let mut problems = Vec::new();
    let Ok(entries) = std::fs::read_dir(trash_dir(host)) else {
        return problems;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let removed = match entry.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
        if let Err(e) = removed {
            problems.push(format!("could not empty {}: {e}", path.display()));
        }
    }
    problems
}

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
    move_to_trash(host, &path).map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
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
    let problems = empty_trash(host);
    if let Some(p) = problems.first() {
        tracing::warn!("{p}");
    }
    Ok(())
}

/// Finishes a close of worktree `id`: its folder goes (it was checked
/// before the close was journaled), then its registration and record.
pub(super) fn finish_close(host: &HostRepo, id: &str, branch: &str) -> Result<(), String> {
    let path = worktrees_dir(host).join(id);
    if path.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        move_to_trash(host, &path).map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
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
    for p in empty_trash(host) {
        tracing::warn!("{p}");
    }
    Ok(())
}

/// Recovers one interrupted create or close, taking its branch lock (a live
/// create or run on the branch means later). Returns what to tell the user.
pub fn recover(host: &HostRepo, op: &Operation) -> Result<Option<String>, String> {
    let branch = match op {
        Operation::Create { branch, .. } | Operation::Close { branch, .. } => branch,
        Operation::Merge { .. } => return Ok(None),
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
        Operation::Merge { .. } => Ok(None),
    }
}

/// Recovers an interrupted create or close of worktree `id` while the caller
/// already holds that worktree's branch lock.
pub(super) fn recover_own(host: &HostRepo, id: &str) -> Result<(), String> {
    let slipway_dir = host.slipway_dir();
    for name in [format!("create-{id}"), format!("close-{id}")] {
        if let Some(entry) = journal::interrupted_named(&slipway_dir, &name) {
            recover_locked(host, &entry.op)?;
            entry.journal.finish().map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}
