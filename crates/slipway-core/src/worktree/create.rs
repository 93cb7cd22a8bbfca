//! Creating a worktree, or returning the one a branch already has: the
//! checks git makes (a branch checked out elsewhere, one being rebased or
//! bisected), the record, the branch, the registration and checkout, the
//! copy-in. Every step after the checks is journaled, and a create that dies
//! half way is undone (nothing of the user's is in a worktree yet).

use std::path::Path;

use super::*;

/// Creates a worktree, or returns the existing one for the same branch, taking the branch lock.
pub fn create(host: &HostRepo, request: &CreateRequest) -> Result<Created, CreateError> {
    let branch = match &request.target {
        WorktreeTarget::Branch { name, .. } => {
            validate_branch_name(name)?;
            name.clone()
        }
        WorktreeTarget::MergeToHead => new_temp_branch_name(),
    };
    ensure_slipway_dir(host)?;
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
    let _turn = crate::git::queue::turn(host.common_dir());
    let branch = lock.branch().to_owned();
    let id = naming::dir_name(&branch);
    let path = worktrees_dir(host).join(&id);
    let repo = host.git();
    let slipway_dir = host.slipway_dir();
    ensure_slipway_dir(host)?;
    // A create or close of this worktree that died half way is settled
    // first: nothing ever re-uses a half-made worktree.
    recover::recover_own(host, &id).map_err(CreateError::Io)?;

    let registered = worktrees::is_registered(repo, &id);
    let existing = WorktreeRecord::read(&slipway_dir, &id)?;
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
    if let Some((what, where_)) = worktrees::busy_with(repo, host.root(), &branch)? {
        return Err(CreateError::BranchBusy {
            branch,
            what,
            path: where_,
        });
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
    // From here on every step is journaled: a create that dies half way is
    // undone by the next slipway command.
    let journal = crate::journal::Journal::begin(
        &slipway_dir,
        &format!("create-{id}"),
        &crate::journal::Operation::Create {
            id: id.clone(),
            branch: branch.clone(),
            created_branch,
            base: base.commit.clone(),
        },
    )
    .map_err(|e| CreateError::Io(e.to_string()))?;
    let made = make(host, &mut record, &base, created_branch, &request.copy);
    let copy = match made {
        Ok(copy) => copy,
        Err(e) => {
            // Nothing of the user's is in a worktree made a moment ago.
            if let Err(undo) =
                recover::undo_create(host, &id, &branch, created_branch, &base.commit)
            {
                tracing::warn!("could not undo the failed create: {undo}");
                // The journal stays for the next command to finish the undo.
                return Err(e);
            }
            if let Err(j) = journal.finish() {
                tracing::warn!("{j}");
            }
            return Err(e);
        }
    };
    journal
        .finish()
        .map_err(|e| CreateError::Io(e.to_string()))?;
    notes.extend(copy.warnings.iter().cloned());
    Ok(Created {
        record,
        reused: false,
        source_label,
        notes,
        copy,
    })
}

/// The journaled steps of a create: record, branch, registration and
/// checkout, copy-in, the record marked complete.
fn make(
    host: &HostRepo,
    record: &mut WorktreeRecord,
    base: &ResolvedSource,
    created_branch: bool,
    copy: &[String],
) -> Result<CopyReport, CreateError> {
    let repo = host.git();
    let slipway_dir = host.slipway_dir();
    // The record goes first: whatever happens next, the worktree is findable.
    record.save(&slipway_dir)?;
    crate::testhook::point("create");
    if created_branch {
        // A new branch tracks the remote branch the user started from.
        worktrees::create_branch(repo, &record.branch, base.oid(), base.reference.as_deref())?;
        crate::testhook::point("create");
    }
    {
        let _admin = AdminLock::acquire(&locks_dir(host))
            .map_err(|e| CreateError::Io(format!("cannot take the worktree lock: {e}")))?;
        worktrees::add(repo, &record.id, &record.path, &record.branch).map_err(|e| match e {
            worktrees::AddError::Git(e) => CreateError::Git(e),
            worktrees::AddError::Io(e) => CreateError::Io(e.to_string()),
        })?;
    }
    crate::testhook::point("create");
    let copied =
        copy_into_worktree(host, &record.path, copy).map_err(|source| CreateError::Copy {
            source,
            worktree_path: record.path.clone(),
        })?;
    record.creating_pid = None;
    record.save_unsynced(&slipway_dir)?;
    Ok(copied)
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
pub(super) fn recovered_record(
    host: &HostRepo,
    id: &str,
    path: &Path,
    branch: &str,
) -> WorktreeRecord {
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
