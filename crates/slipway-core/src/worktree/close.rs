//! Closing a worktree by git's rules, deleting only what slipway made.

use super::*;

/// Closes a worktree: dirty → preserved (unless `force`); clean → removed,
/// and a temporary branch deleted unless it holds commits on no other branch.
pub fn close(host: &HostRepo, selector: &str, force: bool) -> Result<CloseOutcome, CloseError> {
    host.state_trusted()?;
    let Some(record) = find_readable(host, selector).map_err(CloseError::Record)? else {
        return Err(CloseError::NotFound {
            selector: selector.to_owned(),
            known: WorktreeRecord::load_all(&host.slipway_dir())
                .into_iter()
                .map(|r| format!("{} ({})", r.id, r.branch))
                .collect(),
        });
    };
    let lock = lock_branch(host, &record.branch)?;
    recover::recover_own(host, &record.id).map_err(CloseError::Io)?;
    // Recovery may have finished an earlier close of this very worktree.
    let Some(record) = WorktreeRecord::read(&host.slipway_dir(), &record.id)? else {
        return Err(CloseError::NotFound {
            selector: selector.to_owned(),
            known: Vec::new(),
        });
    };
    close_locked(host, record, force, &lock)
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
    let _turn = crate::git::queue::turn(host.common_dir());
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
            // Even `--force` leaves a locked worktree: the lock is the user's
            // own "keep this", as git's single `--force` respects it too.
            let why = why.trim();
            let reason = if why.is_empty() {
                "it is locked (`git worktree lock`); unlock it first, then close it again"
                    .to_owned()
            } else {
                format!(
                    "it is locked (`git worktree lock`: {why}); unlock it first, then close it again"
                )
            };
            let mut outcome = preserved(&record, reason, Vec::new());
            if let CloseOutcome::Preserved { commands, .. } = &mut outcome {
                *commands = vec![
                    format!("cd {}", record.path.display()),
                    format!("git worktree unlock {}", record.path.display()),
                ];
            }
            return Ok(outcome);
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
    // Decided: from here on the close is journaled and a crash is finished
    // by the next slipway command. The folder leaves first, in one rename.
    let journal = crate::journal::Journal::begin(
        &slipway_dir,
        &format!("close-{}", record.id),
        &crate::journal::Operation::Close {
            id: record.id.clone(),
            branch: record.branch.clone(),
        },
    )
    .map_err(|e| CloseError::Io(e.to_string()))?;
    if let Some(dir) = verified {
        trash::move_in(host, dir.path()).map_err(|e| CloseError::Io(e.to_string()))?;
        crate::testhook::point("close");
    }
    if registered {
        let _admin =
            AdminLock::acquire(&locks_dir(host)).map_err(|e| CloseError::Io(e.to_string()))?;
        worktrees::unregister(repo, &record.id)?;
        crate::testhook::point("close");
    }
    let (branch_deleted, branch_kept) = match record.strategy {
        WorktreeStrategy::Branch => (false, None),
        WorktreeStrategy::MergeToHead => {
            delete_temp_branch_if_merged(host, &record.branch, &record.base_commit)?
        }
    };
    WorktreeRecord::delete(&slipway_dir, &record.id)?;
    crate::testhook::point("close");
    journal
        .finish()
        .map_err(|e| CloseError::Io(e.to_string()))?;
    // The files go in a detached process: the close is done.
    trash::empty_later(&slipway_dir);
    Ok(CloseOutcome::Removed {
        id: record.id,
        path: record.path,
        branch: record.branch,
        branch_deleted,
        branch_kept,
        kept_commit,
        discarded_tip: None,
    })
}
