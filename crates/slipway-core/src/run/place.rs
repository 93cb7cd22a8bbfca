//! Where a run works (the host checkout or a worktree), and what happens to
//! that worktree afterwards.

use super::*;

/// What the run works in.
pub(super) struct Place {
    pub(super) cwd: PathBuf,
    pub(super) branch: String,
    /// `None` for `head`.
    pub(super) record: Option<WorktreeRecord>,
    /// The worktree was handed in and stays after the run.
    pub(super) handle: bool,
    pub(super) lock: BranchLock,
    /// Top-level paths copied into the worktree (they also go into isolated sandboxes).
    pub(super) copied: Vec<String>,
    /// Workspace runs: every mount's checkout (taken at the end to finish them).
    pub(super) workspace: Option<Vec<workspace::Materialised>>,
    /// The private git dir the agent's git works in (taken at the end to import).
    pub(super) git: Option<super::private_git::RunGit>,
    /// What the checkout held before the agent started, for the quarantine check.
    pub(super) baseline: Option<super::quarantine::Baseline>,
}

pub(super) fn prepare_place(
    host: &HostRepo,
    request: &RunRequest,
) -> Result<(Place, Vec<String>), RunError> {
    if let Some(plan) = &request.workspace {
        return prepare_workspace(host, request, plan);
    }
    if let Some(selector) = &request.worktree {
        let record = worktree::find(host, selector)
            .ok_or_else(|| RunError::WorktreeNotFound(selector.clone()))?;
        let lock = worktree::lock_branch(host, &record.branch)?;
        // A reply to a run that made its worktree finishes it as that run would.
        let handle = !request.reply.as_ref().is_some_and(|r| r.owns_worktree);
        return Ok((
            Place {
                cwd: record.path.clone(),
                branch: record.branch.clone(),
                record: Some(record),
                handle,
                lock,
                copied: request.copy.clone(),
                workspace: None,
                git: None,
                baseline: None,
            },
            Vec::new(),
        ));
    }
    let target = match &request.strategy {
        RunStrategy::Head => {
            let branch = host.current_branch().unwrap_or_else(|| "HEAD".to_owned());
            let lock = worktree::lock_branch(host, &branch)?;
            return Ok((
                Place {
                    cwd: host.root().to_path_buf(),
                    branch,
                    record: None,
                    handle: false,
                    lock,
                    copied: Vec::new(),
                    workspace: None,
                    git: None,
                    baseline: None,
                },
                Vec::new(),
            ));
        }
        RunStrategy::MergeToHead => WorktreeTarget::MergeToHead,
        RunStrategy::Branch { name, base } => {
            validate_branch_name(name)?;
            WorktreeTarget::Branch {
                name: name.clone(),
                base: base.clone(),
            }
        }
    };
    let branch = match &target {
        WorktreeTarget::Branch { name, .. } => name.clone(),
        WorktreeTarget::MergeToHead => worktree::new_temp_branch_name(),
    };
    worktree::ensure_slipway_dir(host)?;
    let lock = worktree::lock_branch(host, &branch)?;
    let created = worktree::create_locked(
        host,
        &CreateRequest {
            target,
            source: request.source.clone(),
            copy: request.copy.clone(),
        },
        &lock,
    )?;
    Ok((
        Place {
            cwd: created.record.path.clone(),
            branch: created.record.branch.clone(),
            record: Some(created.record),
            handle: false,
            lock,
            copied: created.copy.copied.clone(),
            workspace: None,
            git: None,
            baseline: None,
        },
        created.notes,
    ))
}

/// After the run: keep, preserve or remove the worktree as the strategy and its state say.
pub(super) fn finish_place(
    ctx: &mut Ctx<'_>,
    host: &HostRepo,
    place: &Place,
    strategy: Option<WorktreeStrategy>,
) {
    let Some(record) = &place.record else { return };
    let slipway_dir = host.slipway_dir();
    let mut record =
        WorktreeRecord::load(&slipway_dir, &record.id).unwrap_or_else(|| record.clone());
    record.run_pid = None;
    // A run that ends asking keeps its worktree for the reply, which
    // finishes it as this run would have.
    let close_after = strategy == Some(WorktreeStrategy::MergeToHead)
        && !place.handle
        && ctx.result.question.is_none();
    if close_after {
        match worktree::close_locked(host, record.clone(), false, &place.lock) {
            Ok(CloseOutcome::Removed { branch_kept, .. }) => {
                if let Some(kept) = branch_kept {
                    ctx.log.line(&format!("[slipway] {kept}"));
                    ctx.result.kept_branch = Some(kept);
                }
                return;
            }
            Ok(CloseOutcome::Preserved {
                preserved_path,
                reason,
                ..
            }) => {
                ctx.log
                    .line(&format!("[slipway] worktree preserved: {reason}"));
                ctx.result.preserved_worktree_path = Some(preserved_path);
                ctx.result.kept_branch = Some(format!(
                    "branch '{}' was kept with the preserved worktree ({reason}); close the worktree once you have looked",
                    place.branch
                ));
                return;
            }
            Err(e) => ctx
                .result
                .warnings
                .push(format!("could not close the worktree: {e}")),
        }
    }
    // Closing (above) checks for changes itself; only a kept worktree needs it here.
    let dirty = crate::git::worktrees::changed_paths_at(&place.cwd).unwrap_or_default();
    // A worktree the run was given (a handoff, `--worktree`) is the user's:
    // what is uncommitted in it may be the user's own editing, so it stays
    // active. One the run made and left dirty is preserved, and flagged.
    record.state = if dirty.is_empty() || place.handle {
        WorktreeState::Active
    } else {
        WorktreeState::Preserved
    };
    record.why = (record.state == WorktreeState::Preserved).then(|| {
        format!(
            "the run left {} uncommitted",
            crate::util::count(dirty.len(), "path", "paths")
        )
    });
    if let Err(e) = record.save(&slipway_dir) {
        ctx.result.warnings.push(e.to_string());
    }
    ctx.result.preserved_worktree_path = Some(place.cwd.clone());
}

/// Materialises a workspace's mounts; the run works in the checkout covering `workdir`.
fn prepare_workspace(
    host: &HostRepo,
    request: &RunRequest,
    plan: &workspace::WorkspacePlan,
) -> Result<(Place, Vec<String>), RunError> {
    let asks = workspace::sources_required(plan)?;
    if !asks.is_empty() {
        return Err(RunError::SourcesRequired { mounts: asks });
    }
    if !matches!(
        request.sandbox,
        SandboxSpec::None | SandboxSpec::Docker { .. }
    ) {
        return Err(RunError::Invalid(
            "workspaces run in the none or docker sandbox".into(),
        ));
    }
    // One run per workspace at a time.
    let lock = worktree::lock_branch(host, &format!("slipway/workspace/{}", plan.name))?;
    let run_id = request.run_id.clone().unwrap_or_else(new_run_id);
    let reach = match request.sandbox {
        SandboxSpec::None => workspace::GitReach::Host,
        _ => workspace::GitReach::Container,
    };
    let mounts = workspace::materialise(plan, &run_id, reach)?;
    let Some(cwd) = workspace::workdir_on_host(plan, &mounts) else {
        let _ = workspace::finish(mounts, &run_id);
        return Err(RunError::Invalid(format!(
            "no mount covers the workdir {}",
            plan.workdir.display()
        )));
    };
    let covering = mounts
        .iter()
        .filter(|m| plan.workdir.starts_with(&m.plan.dst))
        .max_by_key(|m| m.plan.dst.components().count());
    let branch = covering
        .and_then(|m| m.branch.clone())
        .or_else(|| host.current_branch())
        .unwrap_or_else(|| "HEAD".into());
    Ok((
        Place {
            cwd,
            branch,
            record: None,
            handle: false,
            lock,
            copied: Vec::new(),
            workspace: Some(mounts),
            git: None,
            baseline: None,
        },
        Vec::new(),
    ))
}
