//! Listing worktrees with their health, and bringing records in line with
//! what git has registered.

use std::path::Path;

use super::*;

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
    reconcile(host)?;
    let repo = host.git();
    let slipway_dir = host.slipway_dir();
    let mut out = Vec::new();
    for record in WorktreeRecord::load_all(&slipway_dir) {
        let building = record
            .creating_pid
            .map(|_| creation_state(&slipway_dir, &record.id));
        let present = record.path.is_dir() && worktrees::is_registered(repo, &record.id);
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
    for (id, error) in WorktreeRecord::corrupt(&slipway_dir) {
        let registered = worktrees::registered(repo)?
            .into_iter()
            .find(|w| w.id == id);
        out.push(WorktreeStatus {
            path: worktrees_dir(host).join(&id),
            branch: registered.and_then(|w| w.branch).unwrap_or_default(),
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
    let repo = host.git();
    let slipway_dir = host.slipway_dir();
    let wt_dir = canonical(&worktrees_dir(host));
    for wt in worktrees::registered(repo)? {
        let path = canonical(&wt.path);
        if !path.starts_with(&wt_dir) || !path.is_dir() {
            continue;
        }
        // A record that is there but unreadable is reported, never rewritten.
        if !matches!(WorktreeRecord::read(&slipway_dir, &wt.id), Ok(None)) {
            continue;
        }
        let Some(branch) = wt.branch else { continue };
        let record = create::recovered_record(host, &wt.id, &path, &branch);
        if let Err(e) = record.save(&slipway_dir) {
            tracing::warn!("{e}");
        }
    }
    for mut record in WorktreeRecord::load_all(&slipway_dir) {
        if record.state != WorktreeState::Running {
            continue;
        }
        if run_alive(host, &record) {
            continue;
        }
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
        if let Err(e) = record.save(&slipway_dir) {
            tracing::warn!("{e}");
        }
    }
    Ok(())
}
