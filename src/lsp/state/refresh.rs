//! The refresh loop: each repository read again on a blocking thread, twice a
//! second or when poked; what it found goes to `reports` and `publish`.

use super::*;

impl State {
    /// The refresh loop: runs until `stop`.
    pub async fn run_loop(self: Arc<Self>, client: Client) {
        loop {
            self.tick(&client).await;
            tokio::select! {
                () = tokio::time::sleep(TICK) => {}
                () = self.poke.notified() => {}
                () = self.stop.cancelled() => break,
            }
        }
    }

    pub(super) async fn tick(&self, client: &Client) {
        let pending: Vec<PathBuf> = std::mem::take(&mut *self.pending_roots.lock().await);
        for root in pending {
            if let Ok(Some((common, root))) =
                tokio::task::spawn_blocking(move || open_paths(&root)).await
            {
                self.register(common, root).await;
            }
        }
        type Work = (PathBuf, PathBuf, HashMap<RunId, u64>, Shared);
        let work: Vec<Work> = {
            let repos = self.repos.lock().await;
            repos
                .iter()
                .map(|(common, r)| {
                    let offsets = r
                        .follows
                        .iter()
                        .map(|(id, f)| (id.clone(), f.offset))
                        .collect();
                    let shared = Shared {
                        statuses: r.statuses.clone(),
                        presence: r.presence.clone(),
                        heard: r.heard.clone(),
                    };
                    (common.clone(), r.root.clone(), offsets, shared)
                })
                .collect()
        };
        for (common, root, offsets, statuses) in work {
            let refresh =
                tokio::task::spawn_blocking(move || compute(&common, &root, &offsets, &statuses))
                    .await;
            if let Ok(Some(refresh)) = refresh {
                self.apply(client, refresh).await;
            }
        }
        self.publish(client).await;
    }
}

/// The common dir and root of the repository `path` is in (blocking), after
/// finishing or undoing what a crashed slipway left half done (one listing of
/// `.slipway/journal/` when nothing was).
pub fn open_paths(path: &Path) -> Option<(PathBuf, PathBuf)> {
    let host = HostRepo::open(path).ok()?;
    for note in slipway_core::recovery::recover(&host) {
        tracing::info!("{}: {note}", host.root().display());
    }
    Some((host.common_dir().to_path_buf(), host.root().to_path_buf()))
}

/// Reads one repository's worktrees and runs (blocking).
pub(super) fn compute(
    common: &Path,
    root: &Path,
    offsets: &HashMap<RunId, u64>,
    shared: &Shared,
) -> Option<Refresh> {
    let host = HostRepo::open(root).ok()?;
    {
        // Listening from the first refresh on; a poisoned lock only means a retry.
        let mut presence = shared
            .presence
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if presence.is_none() && worktree::ensure_slipway_dir(&host).is_ok() {
            match heard::announce(&host.slipway_dir()) {
                Ok(p) => *presence = Some(p),
                Err(e) => tracing::warn!("cannot announce this sidecar in {}: {e}", root.display()),
            }
        }
    }
    // Refreshes of one repository take turns; a poisoned cache is only stale.
    let mut cache = shared
        .statuses
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let worktrees = worktree::list_with(&host, |record| {
        cache.status(record, || worktree::read_status(&host, record))
    })
    .ok()?;
    cache.retain(&worktrees.iter().map(|w| w.path.clone()).collect());
    drop(cache);
    let slipway_dir = host.slipway_dir();
    let mut records = RunRecord::load_all(&slipway_dir);
    for r in &mut records {
        r.settle_if_dead(&slipway_dir);
    }
    let running: Vec<RunId> = records
        .iter()
        .filter(|r| r.state == RunState::Running)
        .map(|r| r.run_id.clone())
        .collect();
    let finished: Vec<RunRecord> = records
        .iter()
        .filter(|r| r.state == RunState::Finished && !shared.heard.contains(&r.run_id))
        .cloned()
        .collect();
    let mut events = Vec::new();
    let followed: std::collections::BTreeSet<&RunId> =
        running.iter().chain(offsets.keys()).collect();
    for run_id in followed {
        let offset = offsets.get(run_id).copied().unwrap_or(0);
        let (evs, new_offset) = read_events(&slipway_dir, run_id, offset);
        events.push((run_id.clone(), evs, new_offset));
    }
    let runs: Vec<RunSummary> = records
        .iter()
        .filter(|r| r.state == RunState::Running || !shared.heard.contains(&r.run_id))
        .map(|r| RunSummary {
            run_id: r.run_id.clone(),
            state: r.state,
            branch: r.branch.clone(),
            worktree_path: r.worktree_path.clone(),
        })
        .collect();
    let dirty_preserved = worktrees
        .iter()
        .filter(|w| w.state == WorktreeState::Preserved && w.dirty)
        .count();
    Some(Refresh {
        common_dir: common.to_path_buf(),
        slipway_dir: slipway_dir.clone(),
        snapshot: Snapshot {
            root: host.root().to_path_buf(),
            common_dir: host.common_dir().to_path_buf(),
            running: running.len(),
            canonical_paths: worktrees.iter().map(|w| canonical(&w.path)).collect(),
            worktrees,
            runs,
            dirty_preserved,
        },
        running,
        finished,
        events,
    })
}
