//! Listing worktrees with their health, and bringing records in line with
//! what git has registered.

use std::path::Path;

use super::*;
use record::RecordDir;

/// Lists every slipway worktree of the repository, after reconciling records with git.
pub fn list(host: &HostRepo) -> Result<Vec<WorktreeStatus>, git2::Error> {
    list_with(host, |record| read_status(host, record))
}

/// What reading a present worktree found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Uncommitted paths.
    pub changed: Vec<String>,
    /// Commits on its branch that are not home yet (see [`crate::review::ahead_behind`]).
    pub ahead: usize,
    /// Commits its target has that the branch lacks.
    pub behind: usize,
}

/// A present worktree's changed paths (a `git status` of the whole
/// checkout) and its branch's commits ahead of and behind its target,
/// counted from where they meet now.
pub fn read_status(host: &HostRepo, record: &WorktreeRecord) -> Result<Counts, git2::Error> {
    let repo = host.git();
    let changed = worktrees::changed_paths_at(&record.path)?;
    let (ahead, behind) = match worktrees::branch_tip(repo, &record.branch) {
        Some(tip) => crate::review::ahead_behind(
            repo,
            tip,
            crate::review::target_for(host, record).as_deref(),
            git2::Oid::from_str(&record.base_commit).ok(),
            crate::review::landed_tip(record),
        ),
        None => (0, 0),
    };
    Ok(Counts {
        changed,
        ahead,
        behind,
    })
}

/// [`list`], asking `status` for each present worktree's changed paths and
/// commits ahead and behind (the sidecar answers from a cache when nothing changed).
pub fn list_with(
    host: &HostRepo,
    mut status: impl FnMut(&WorktreeRecord) -> Result<Counts, git2::Error>,
) -> Result<Vec<WorktreeStatus>, git2::Error> {
    let slipway_dir = host.slipway_dir();
    let (dir, registered) = reconciled(host)?;
    let registered_ids: std::collections::HashSet<&str> =
        registered.iter().map(|w| w.id.as_str()).collect();
    let mut out = Vec::new();
    for record in dir.records {
        let building = record
            .creating_pid
            .map(|_| creation_state(&slipway_dir, &record.id));
        let present = registered_ids.contains(record.id.as_str()) && record.path.is_dir();
        let Counts {
            changed,
            ahead,
            behind,
        } = if present && building.is_none() {
            status(&record)?
        } else {
            Counts::default()
        };
        let actions = if !present || building.is_some() {
            Vec::new()
        } else if !changed.is_empty() {
            crate::actions::uncommitted(&record.branch)
        } else if ahead > 0 {
            crate::actions::unlanded(&record.branch)
        } else {
            vec![crate::actions::Action::on(
                crate::actions::ActionKind::Discard,
                &record.branch,
            )]
        };
        out.push(WorktreeStatus {
            id: record.id,
            path: record.path,
            branch: record.branch,
            strategy: record.strategy,
            dirty: !changed.is_empty(),
            changed_files: changed.len(),
            changed_paths: changed,
            ahead,
            behind,
            state: record.state,
            why: record.why,
            run_id: record.run_id,
            health: match building {
                Some(health) => health,
                None if present => Health::Ok,
                None => Health::Missing,
            },
            base_commit: record.base_commit,
            actions,
        });
    }
    for (id, error) in dir.corrupt {
        let branch = registered
            .iter()
            .find(|w| w.id == id)
            .and_then(|w| w.branch.clone());
        out.push(WorktreeStatus {
            path: worktrees_dir(host).join(&id),
            branch: branch.unwrap_or_default(),
            id,
            strategy: WorktreeStrategy::Branch,
            dirty: false,
            changed_files: 0,
            changed_paths: Vec::new(),
            ahead: 0,
            behind: 0,
            state: WorktreeState::Preserved,
            why: Some(error.to_string()),
            run_id: None,
            health: Health::Corrupt,
            base_commit: String::new(),
            actions: Vec::new(),
        });
    }
    Ok(out)
}

/// Whether the create of worktree `id` still runs (its journal is held) or
/// died half way (its journal is free, or was never written).
fn creation_state(slipway_dir: &Path, id: &str) -> Health {
    let name = format!("create-{id}");
    match crate::journal::interrupted_named(slipway_dir, &name) {
        Some(_) => Health::Incomplete,
        None if crate::journal::exists(slipway_dir, &name) => Health::Creating,
        None => Health::Incomplete,
    }
}

/// Whether the run recorded as working in a worktree still runs: it holds
/// the worktree's branch lock for its whole life (its agent too), whatever
/// became of its pid.
fn run_alive(host: &HostRepo, record: &WorktreeRecord) -> bool {
    lock_branch(host, &record.branch).is_err()
}

/// Brings records in line with `git worktree list`: registered slipway
/// worktrees without a record get one; `running` records whose process is gone
/// become `active` (or `preserved` when dirty). Never deletes anything.
pub fn reconcile(host: &HostRepo) -> Result<(), git2::Error> {
    let registered = worktrees::registered(host.git())?;
    reconcile_with(host, &RecordDir::read(&host.slipway_dir()), &registered);
    Ok(())
}

/// The records after [`reconcile`], with git's registrations: each read once
/// for the whole listing (a listing of 200 worktrees read each record five
/// times before), the records again only when reconciling wrote one.
pub(super) fn reconciled(
    host: &HostRepo,
) -> Result<(RecordDir, Vec<worktrees::Registered>), git2::Error> {
    let registered = worktrees::registered(host.git())?;
    let slipway_dir = host.slipway_dir();
    let mut dir = RecordDir::read(&slipway_dir);
    if reconcile_with(host, &dir, &registered) {
        dir = RecordDir::read(&slipway_dir);
    }
    Ok((dir, registered))
}

/// [`reconcile`] over registrations and records already read; whether it
/// wrote any record (the caller then reads them again).
fn reconcile_with(host: &HostRepo, dir: &RecordDir, registered: &[worktrees::Registered]) -> bool {
    let slipway_dir = host.slipway_dir();
    let mut wrote = false;
    let mut wt_dir = None;
    for wt in registered {
        // A record that is there, readable or not, is never rewritten here.
        if dir.ids.contains(&wt.id) {
            continue;
        }
        let wt_dir = wt_dir.get_or_insert_with(|| canonical(&worktrees_dir(host)));
        let path = canonical(&wt.path);
        if !path.starts_with(&*wt_dir) || !path.is_dir() {
            continue;
        }
        let Some(branch) = &wt.branch else { continue };
        let record = create::recovered_record(host, &wt.id, &path, branch);
        match record.save(&slipway_dir) {
            Ok(()) => wrote = true,
            Err(e) => tracing::warn!("{e}"),
        }
    }
    for record in &dir.records {
        if record.state != WorktreeState::Running || run_alive(host, record) {
            continue;
        }
        let mut record = record.clone();
        let dirty = worktrees::changed_paths_at(&record.path).is_ok_and(|c| !c.is_empty());
        record.state = if dirty {
            WorktreeState::Preserved
        } else {
            WorktreeState::Active
        };
        record.why = Some(format!(
            "run {} ended without finishing (its process is gone)",
            record.run_id.as_deref().unwrap_or("?")
        ));
        record.run_pid = None;
        match record.save(&slipway_dir) {
            Ok(()) => wrote = true,
            Err(e) => tracing::warn!("{e}"),
        }
    }
    wrote
}
