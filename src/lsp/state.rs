//! What the sidecar knows, keyed on each repository's common git dir: a
//! snapshot of its worktrees and runs (for `slipway/status`, `slipway.status`
//! and diagnostics), and the runs it follows (for progress and
//! `slipway/runFinished`). A loop refreshes it twice a second, or at once after
//! a command changed something; a worktree's `git status` is read again only
//! when it changed on disk (see `status_cache`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::{Mutex, Notify};
use tokio_util::sync::CancellationToken;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::notification::Progress;
use tower_lsp_server::ls_types::request::WorkDoneProgressCreate;
use tower_lsp_server::ls_types::{
    Diagnostic, DiagnosticSeverity, NumberOrString, Position, ProgressParams, ProgressParamsValue,
    Range, Uri, WorkDoneProgress, WorkDoneProgressBegin, WorkDoneProgressCreateParams,
    WorkDoneProgressEnd, WorkDoneProgressReport,
};

use super::protocol::{RunFinished, RunFinishedParams, SlipwayStatus};
use super::status_cache::StatusCache;
use slipway_core::git::{HostRepo, canonical};
use slipway_core::run::RunEvent;
use slipway_core::run::record::{RunRecord, RunState, read_events};
use slipway_core::worktree::{self, WorktreeState, WorktreeStatus};

/// How often the state is refreshed when nothing pokes it.
const TICK: Duration = Duration::from_millis(500);

/// One run as the status summary shows it.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    run_id: String,
    state: RunState,
    branch: Option<String>,
    worktree_path: Option<PathBuf>,
}

/// Everything a status line needs about one repository.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    root: PathBuf,
    common_dir: PathBuf,
    worktrees: Vec<WorktreeStatus>,
    runs: Vec<RunSummary>,
    running: usize,
    dirty_preserved: usize,
}

struct Follow {
    offset: u64,
    progress: ProgressState,
}

/// Where a followed run's `$/progress` stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ProgressState {
    /// Not asked for (client without work-done progress, or not yet).
    None,
    /// `window/workDoneProgress/create` was sent.
    Requested,
    /// The client accepted the token; begin was sent.
    Active,
}

struct Repo {
    root: PathBuf,
    snapshot: Option<Snapshot>,
    follows: HashMap<String, Follow>,
    /// Shared with the blocking refresh task, hence a plain mutex.
    statuses: Arc<std::sync::Mutex<StatusCache>>,
}

/// The sidecar's state.
pub struct State {
    repos: Mutex<BTreeMap<PathBuf, Repo>>,
    pending_roots: Mutex<Vec<PathBuf>>,
    progress_supported: AtomicBool,
    poke: Notify,
    stop: CancellationToken,
    published: Mutex<HashMap<Uri, Vec<Diagnostic>>>,
    last_status: Mutex<Value>,
}

/// What one refresh of one repository found (computed on a blocking thread).
struct Refresh {
    common_dir: PathBuf,
    snapshot: Snapshot,
    running: Vec<String>,
    finished: Vec<RunRecord>,
    events: Vec<(String, Vec<RunEvent>, u64)>,
}

fn token_for(run_id: &str) -> NumberOrString {
    NumberOrString::String(format!("slipway-{run_id}"))
}

impl State {
    /// Empty state.
    pub fn new() -> Arc<State> {
        Arc::new(State {
            repos: Mutex::new(BTreeMap::new()),
            pending_roots: Mutex::new(Vec::new()),
            progress_supported: AtomicBool::new(false),
            poke: Notify::new(),
            stop: CancellationToken::new(),
            published: Mutex::new(HashMap::new()),
            last_status: Mutex::new(Value::Null),
        })
    }

    /// Records whether the client accepts `window/workDoneProgress/create`.
    pub fn set_progress_supported(&self, yes: bool) {
        self.progress_supported.store(yes, Ordering::SeqCst);
    }

    /// Adds a folder to watch; it is opened on the next refresh.
    pub async fn add_root(&self, root: PathBuf) {
        self.pending_roots.lock().await.push(root);
        self.poke();
    }

    /// Registers a repository by its common dir and root (idempotent).
    pub async fn register(&self, common_dir: PathBuf, root: PathBuf) {
        let mut repos = self.repos.lock().await;
        repos.entry(common_dir.clone()).or_insert_with(|| Repo {
            root,
            snapshot: None,
            follows: HashMap::new(),
            statuses: Arc::new(std::sync::Mutex::new(StatusCache::new(&common_dir))),
        });
    }

    /// The status cache of a registered repository.
    async fn statuses(&self, common_dir: &Path) -> Option<Arc<std::sync::Mutex<StatusCache>>> {
        let repos = self.repos.lock().await;
        repos.get(common_dir).map(|r| r.statuses.clone())
    }

    /// Starts following a run started by this sidecar.
    pub async fn follow(&self, common_dir: &Path, run_id: &str) {
        let mut repos = self.repos.lock().await;
        if let Some(repo) = repos.get_mut(common_dir) {
            repo.follows.entry(run_id.to_owned()).or_insert(Follow {
                offset: 0,
                progress: ProgressState::None,
            });
        }
        drop(repos);
        self.poke();
    }

    /// The repository root a run belongs to, if the sidecar has seen it.
    pub async fn root_of_run(&self, run_id: &str) -> Option<PathBuf> {
        let repos = self.repos.lock().await;
        repos.values().find_map(|r| {
            let known = r.follows.contains_key(run_id)
                || r.snapshot
                    .as_ref()
                    .is_some_and(|s| s.runs.iter().any(|x| x.run_id == run_id));
            known.then(|| r.root.clone())
        })
    }

    /// Every repository root served.
    pub async fn roots(&self) -> Vec<PathBuf> {
        self.repos
            .lock()
            .await
            .values()
            .map(|r| r.root.clone())
            .collect()
    }

    /// The run id a progress token belongs to.
    pub fn run_of_token(token: &NumberOrString) -> Option<String> {
        match token {
            NumberOrString::String(s) => s.strip_prefix("slipway-").map(str::to_owned),
            NumberOrString::Number(_) => None,
        }
    }

    /// Asks for a refresh now.
    pub fn poke(&self) {
        self.poke.notify_one();
    }

    /// Stops the refresh loop.
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// Cheap state for one path, from the cache (opening the repository once if new).
    pub async fn status_for(self: &Arc<Self>, path: &Path) -> Value {
        let path = canonical(path);
        if let Some(answer) = self.status_from_cache(&path).await {
            // A path under a repository's worktrees folder that the cache does not
            // know yet is a worktree created since the last refresh: look again.
            let stale = answer["inWorktree"] == false
                && answer["root"].as_str().is_some_and(|root| {
                    path.starts_with(Path::new(root).join(".slipway").join("worktrees"))
                });
            if !stale {
                return answer;
            }
            if let Some(root) = answer["root"].as_str().map(PathBuf::from) {
                self.refresh_now(&root).await;
                if let Some(fresh) = self.status_from_cache(&path).await {
                    return fresh;
                }
            }
        }
        let opened = {
            let p = path.clone();
            tokio::task::spawn_blocking(move || open_paths(&p)).await
        };
        let Ok(Some((common, root))) = opened else {
            return json!({ "inWorktree": false, "root": null, "id": null, "branch": null, "dirty": false, "runId": null });
        };
        self.register(common.clone(), root.clone()).await;
        let Some(statuses) = self.statuses(&common).await else {
            return Value::Null;
        };
        if let Ok(Some(refresh)) =
            tokio::task::spawn_blocking(move || compute(&common, &root, &HashMap::new(), &statuses))
                .await
        {
            let mut repos = self.repos.lock().await;
            if let Some(repo) = repos.get_mut(&refresh.common_dir) {
                repo.snapshot = Some(refresh.snapshot);
            }
        }
        self.status_from_cache(&path).await.unwrap_or(Value::Null)
    }

    /// Recomputes one repository's snapshot at once (blocking work on a thread).
    async fn refresh_now(&self, root: &Path) {
        let Some(common) = ({
            let repos = self.repos.lock().await;
            repos
                .iter()
                .find(|(_, r)| r.root == root)
                .map(|(c, _)| c.clone())
        }) else {
            return;
        };
        let root = root.to_path_buf();
        let common_for_task = common.clone();
        let Some(statuses) = self.statuses(&common).await else {
            return;
        };
        if let Ok(Some(refresh)) = tokio::task::spawn_blocking(move || {
            compute(&common_for_task, &root, &HashMap::new(), &statuses)
        })
        .await
        {
            let mut repos = self.repos.lock().await;
            if let Some(repo) = repos.get_mut(&common) {
                repo.snapshot = Some(refresh.snapshot);
            }
        }
    }

    async fn status_from_cache(&self, path: &Path) -> Option<Value> {
        let repos = self.repos.lock().await;
        for repo in repos.values() {
            let Some(snapshot) = &repo.snapshot else {
                continue;
            };
            if let Some(w) = snapshot
                .worktrees
                .iter()
                .find(|w| path.starts_with(canonical(&w.path)))
            {
                return Some(json!({
                    "inWorktree": true,
                    "root": snapshot.root,
                    "path": w.path,
                    "id": w.id,
                    "branch": w.branch,
                    "dirty": w.dirty,
                    "state": w.state,
                    "runId": if w.state == WorktreeState::Running { w.run_id.clone() } else { None },
                    "dirtyPreserved": snapshot.dirty_preserved,
                }));
            }
            if path.starts_with(&snapshot.root) {
                return Some(json!({
                    "inWorktree": false,
                    "root": snapshot.root,
                    "id": null,
                    "branch": null,
                    "dirty": false,
                    "runId": null,
                    "dirtyPreserved": snapshot.dirty_preserved,
                }));
            }
        }
        None
    }

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

    async fn tick(&self, client: &Client) {
        let pending: Vec<PathBuf> = std::mem::take(&mut *self.pending_roots.lock().await);
        for root in pending {
            if let Ok(Some((common, root))) =
                tokio::task::spawn_blocking(move || open_paths(&root)).await
            {
                self.register(common, root).await;
            }
        }
        type Work = (
            PathBuf,
            PathBuf,
            HashMap<String, u64>,
            Arc<std::sync::Mutex<StatusCache>>,
        );
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
                    (common.clone(), r.root.clone(), offsets, r.statuses.clone())
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

    async fn apply(&self, client: &Client, refresh: Refresh) {
        let progress = self.progress_supported.load(Ordering::SeqCst);
        let mut to_begin = Vec::new();
        let mut reports = Vec::new();
        let mut to_finish = Vec::new();
        {
            let mut repos = self.repos.lock().await;
            let Some(repo) = repos.get_mut(&refresh.common_dir) else {
                return;
            };
            for run_id in &refresh.running {
                if !repo.follows.contains_key(run_id) {
                    repo.follows.insert(
                        run_id.clone(),
                        Follow {
                            offset: 0,
                            progress: ProgressState::None,
                        },
                    );
                }
            }
            for (run_id, events, offset) in refresh.events {
                if let Some(f) = repo.follows.get_mut(&run_id) {
                    f.offset = offset;
                    if progress && f.progress == ProgressState::None {
                        f.progress = ProgressState::Requested;
                        to_begin.push(run_id.clone());
                    }
                    if !events.is_empty() {
                        let active = f.progress == ProgressState::Active;
                        reports.push((run_id, events, active));
                    }
                }
            }
            for run_id in &refresh.running {
                if let Some(f) = repo.follows.get_mut(run_id)
                    && progress
                    && f.progress == ProgressState::None
                {
                    f.progress = ProgressState::Requested;
                    to_begin.push(run_id.clone());
                }
            }
            for record in refresh.finished {
                let had_token = repo
                    .follows
                    .remove(&record.run_id)
                    .is_some_and(|f| f.progress == ProgressState::Active);
                to_finish.push((record, had_token, repo.root.clone()));
            }
            repo.snapshot = Some(refresh.snapshot);
        }
        to_begin.sort();
        to_begin.dedup();
        let mut begun_now = HashSet::new();
        for run_id in to_begin {
            let token = token_for(&run_id);
            let created = tokio::time::timeout(
                Duration::from_secs(2),
                client.send_request::<WorkDoneProgressCreate>(WorkDoneProgressCreateParams {
                    token: token.clone(),
                }),
            )
            .await;
            if !matches!(created, Ok(Ok(()))) {
                continue;
            }
            self.set_progress(&run_id, ProgressState::Active).await;
            begun_now.insert(run_id.clone());
            send_progress(
                client,
                &token,
                WorkDoneProgress::Begin(WorkDoneProgressBegin {
                    title: "slipway: agent run".into(),
                    cancellable: Some(true),
                    message: Some(run_id.clone()),
                    percentage: None,
                }),
            )
            .await;
        }
        for (run_id, events, active) in reports {
            // The follow of a run that finished in this refresh is already gone,
            // so whether to report was decided when the events were collected.
            if !(active || begun_now.contains(&run_id)) {
                continue;
            }
            let token = token_for(&run_id);
            for event in events {
                let (message, percentage) = match event {
                    RunEvent::Phase { phase, message } => (format!("{phase}: {message}"), None),
                    RunEvent::Iteration { iteration, of } => (
                        format!("iteration {iteration} of {of}"),
                        Some(((iteration.saturating_sub(1)) * 100 / of.max(1)).min(100)),
                    ),
                    RunEvent::Output { .. } => continue,
                };
                if progress {
                    send_progress(
                        client,
                        &token,
                        WorkDoneProgress::Report(WorkDoneProgressReport {
                            cancellable: Some(true),
                            message: Some(message),
                            percentage,
                        }),
                    )
                    .await;
                }
            }
        }
        for (record, had_token, root) in to_finish {
            let Some(result) = record.result.clone() else {
                continue;
            };
            if had_token || begun_now.contains(&record.run_id) {
                send_progress(
                    client,
                    &token_for(&record.run_id),
                    WorkDoneProgress::End(WorkDoneProgressEnd {
                        message: serde_json::to_value(result.status)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_owned)),
                    }),
                )
                .await;
            }
            client
                .send_notification::<RunFinished>(RunFinishedParams {
                    run_id: record.run_id.clone(),
                    root: root.clone(),
                    status: result.status,
                    commits: result.commits,
                    branch: result.branch,
                    worktree_path: result.worktree_path,
                    preserved_worktree_path: result.preserved_worktree_path,
                    kept_branch: result.kept_branch,
                    log_file: result.log_file,
                    error: result.error,
                    iterations: result.iterations,
                    completion_signal: result.completion_signal,
                    session_id: result.session_id,
                    usage: result.usage,
                    final_text: result.final_text,
                })
                .await;
            let run_id = record.run_id.clone();
            let _ = tokio::task::spawn_blocking(move || mark_reported(&root, &run_id)).await;
        }
    }

    async fn set_progress(&self, run_id: &str, state: ProgressState) {
        let mut repos = self.repos.lock().await;
        for repo in repos.values_mut() {
            if let Some(f) = repo.follows.get_mut(run_id) {
                f.progress = state;
            }
        }
    }

    /// Pushes `slipway/status` and diagnostics when they changed.
    async fn publish(&self, client: &Client) {
        let snapshots: Vec<Snapshot> = {
            let repos = self.repos.lock().await;
            repos.values().filter_map(|r| r.snapshot.clone()).collect()
        };
        let status = json!({ "repositories": snapshots });
        let changed = {
            let mut last = self.last_status.lock().await;
            if *last == status {
                false
            } else {
                *last = status.clone();
                true
            }
        };
        if !changed {
            return;
        }
        client.send_notification::<SlipwayStatus>(status).await;

        let mut wanted: HashMap<Uri, Vec<Diagnostic>> = HashMap::new();
        for snapshot in &snapshots {
            for w in snapshot
                .worktrees
                .iter()
                .filter(|w| w.state == WorktreeState::Preserved && w.dirty)
            {
                for changed in &w.changed_paths {
                    let Some(uri) = Uri::from_file_path(w.path.join(changed)) else {
                        continue;
                    };
                    wanted
                        .entry(uri)
                        .or_default()
                        .push(dirty_diagnostic(w, changed));
                }
            }
        }
        let mut published = self.published.lock().await;
        let stale: HashSet<Uri> = published
            .keys()
            .filter(|u| !wanted.contains_key(*u))
            .cloned()
            .collect();
        for uri in stale {
            published.remove(&uri);
            client.publish_diagnostics(uri, Vec::new(), None).await;
        }
        for (uri, diags) in wanted {
            if published.get(&uri) != Some(&diags) {
                client
                    .publish_diagnostics(uri.clone(), diags.clone(), None)
                    .await;
                published.insert(uri, diags);
            }
        }
    }
}

fn dirty_diagnostic(w: &WorktreeStatus, file: &str) -> Diagnostic {
    Diagnostic {
        range: Range::new(Position::new(0, 0), Position::new(0, 0)),
        severity: Some(DiagnosticSeverity::WARNING),
        code: Some(NumberOrString::String("dirty-preserved-worktree".into())),
        source: Some("slipway".into()),
        message: format!(
            "'{file}' has uncommitted changes in the preserved worktree {} (branch {}); inspect: cd {}; discard: git worktree remove --force {}",
            w.id,
            w.branch,
            w.path.display(),
            w.path.display()
        ),
        ..Diagnostic::default()
    }
}

async fn send_progress(client: &Client, token: &NumberOrString, value: WorkDoneProgress) {
    client
        .send_notification::<Progress>(ProgressParams {
            token: token.clone(),
            value: ProgressParamsValue::WorkDone(value),
        })
        .await;
}

/// The common dir and root of the repository `path` is in (blocking).
/// A repository seen for the first time also gets what a crashed slipway
/// left half done finished or undone.
pub fn open_paths(path: &Path) -> Option<(PathBuf, PathBuf)> {
    let host = HostRepo::open(path).ok()?;
    for note in slipway_core::recovery::recover(&host) {
        tracing::info!("{}: {note}", host.root().display());
    }
    Some((host.common_dir().to_path_buf(), host.root().to_path_buf()))
}

/// Reads one repository's worktrees and runs (blocking).
fn compute(
    common: &Path,
    root: &Path,
    offsets: &HashMap<String, u64>,
    statuses: &std::sync::Mutex<StatusCache>,
) -> Option<Refresh> {
    let host = HostRepo::open(root).ok()?;
    // Refreshes of one repository take turns; a poisoned cache is only stale.
    let mut cache = statuses
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let worktrees = worktree::list_with(&host, |record| {
        cache.status(record, || worktree::read_status(record))
    })
    .ok()?;
    cache.retain(&worktrees.iter().map(|w| w.path.clone()).collect());
    drop(cache);
    let slipway_dir = host.slipway_dir();
    let mut records = RunRecord::load_all(&slipway_dir);
    for r in &mut records {
        r.settle_if_dead(&slipway_dir);
    }
    let running: Vec<String> = records
        .iter()
        .filter(|r| r.state == RunState::Running)
        .map(|r| r.run_id.clone())
        .collect();
    let finished: Vec<RunRecord> = records
        .iter()
        .filter(|r| r.state == RunState::Finished && !r.reported)
        .cloned()
        .collect();
    let mut events = Vec::new();
    let followed: std::collections::BTreeSet<&String> =
        running.iter().chain(offsets.keys()).collect();
    for run_id in followed {
        let offset = offsets.get(run_id).copied().unwrap_or(0);
        let (evs, new_offset) = read_events(&slipway_dir, run_id, offset);
        events.push((run_id.clone(), evs, new_offset));
    }
    let runs: Vec<RunSummary> = records
        .iter()
        .filter(|r| r.state == RunState::Running || !r.reported)
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
        snapshot: Snapshot {
            root: host.root().to_path_buf(),
            common_dir: host.common_dir().to_path_buf(),
            running: running.len(),
            worktrees,
            runs,
            dirty_preserved,
        },
        running,
        finished,
        events,
    })
}

fn mark_reported(root: &Path, run_id: &str) {
    let Ok(host) = HostRepo::open(root) else {
        return;
    };
    let dir = host.slipway_dir();
    if let Some(mut record) = RunRecord::load(&dir, run_id) {
        record.reported = true;
        let _ = record.save(&dir);
    }
}
