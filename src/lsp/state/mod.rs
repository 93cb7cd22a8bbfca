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

mod publish;
mod refresh;
mod reports;

use super::protocol::{
    ACTIVITY_EVERY, RunActivity, RunActivityParams, RunFinished, RunFinishedParams, SlipwayStatus,
};
use super::status_cache::StatusCache;
use refresh::compute;
pub use refresh::open_paths;
use slipway_core::git::{HostRepo, canonical};
use slipway_core::ids::RunId;
use slipway_core::run::record::{RunRecord, RunState, read_events};
use slipway_core::run::{RunEvent, heard};
use slipway_core::worktree::{self, WorktreeState, WorktreeStatus};

/// How often the state is refreshed when nothing pokes it.
const TICK: Duration = Duration::from_millis(500);

/// One run as the status summary shows it.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    run_id: RunId,
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
    /// Each worktree's path with symlinks resolved, worked out once per
    /// refresh so a status request is answered without a system call.
    #[serde(skip)]
    canonical_paths: Vec<PathBuf>,
    runs: Vec<RunSummary>,
    running: usize,
    dirty_preserved: usize,
}

struct Follow {
    offset: u64,
    progress: ProgressState,
    /// The latest activity not sent yet, and when one was last sent.
    activity: Option<slipway_core::agent::activity::Activity>,
    activity_sent: Option<std::time::Instant>,
}

impl Follow {
    /// A run followed from its start.
    fn new() -> Follow {
        Follow {
            offset: 0,
            progress: ProgressState::None,
            activity: None,
            activity_sent: None,
        }
    }
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
    follows: HashMap<RunId, Follow>,
    /// Shared with the blocking refresh task, hence a plain mutex.
    statuses: Arc<std::sync::Mutex<StatusCache>>,
    /// This sidecar listening on the repository (`run::heard`), once announced.
    presence: Arc<std::sync::Mutex<Option<heard::Presence>>>,
    /// Finished runs this sidecar has told its client about, or decided not
    /// to (watched in a terminal, or heard by another editor already).
    heard: HashSet<RunId>,
    /// The runs that had finished when this sidecar first looked (`None`
    /// until then): their news is reported only when this sidecar claims it.
    before: Option<HashSet<RunId>>,
    /// News reported to the client and held until it says it has shown it.
    held: HashMap<RunId, heard::Held>,
}

impl Repo {
    /// A repository not refreshed yet.
    fn new(common_dir: &Path, root: PathBuf) -> Repo {
        Repo {
            root,
            snapshot: None,
            follows: HashMap::new(),
            statuses: Arc::new(std::sync::Mutex::new(StatusCache::new(common_dir))),
            presence: Arc::new(std::sync::Mutex::new(None)),
            heard: HashSet::new(),
            before: None,
            held: HashMap::new(),
        }
    }
}

/// The sidecar's state.
pub struct State {
    repos: Mutex<BTreeMap<PathBuf, Repo>>,
    pending_roots: Mutex<Vec<PathBuf>>,
    progress_supported: AtomicBool,
    /// The client calls `slipway.seen` once it has shown a run's end, so news
    /// is held until then (and outlives a client that vanished first).
    confirms_seen: AtomicBool,
    poke: Notify,
    stop: CancellationToken,
    published: Mutex<HashMap<Uri, Vec<Diagnostic>>>,
    last_status: Mutex<Value>,
}

/// What the blocking refresh of one repository shares with the state.
struct Shared {
    statuses: Arc<std::sync::Mutex<StatusCache>>,
    presence: Arc<std::sync::Mutex<Option<heard::Presence>>>,
    heard: HashSet<RunId>,
}

/// What one refresh of one repository found (computed on a blocking thread).
struct Refresh {
    common_dir: PathBuf,
    slipway_dir: PathBuf,
    snapshot: Snapshot,
    running: Vec<RunId>,
    finished: Vec<RunRecord>,
    events: Vec<(RunId, Vec<RunEvent>, u64)>,
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
            confirms_seen: AtomicBool::new(false),
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

    /// Records whether the client confirms each run's end it has shown.
    pub fn set_confirms_seen(&self, yes: bool) {
        self.confirms_seen.store(yes, Ordering::SeqCst);
    }

    /// `slipway.seen`: the client has shown these runs' ends; their news goes,
    /// so no other editor is told. Returns how many this sidecar held.
    pub async fn seen(&self, run_ids: &[RunId]) -> usize {
        let mut delivered = Vec::new();
        let mut shown = Vec::new();
        {
            let mut repos = self.repos.lock().await;
            for repo in repos.values_mut() {
                for id in run_ids {
                    match repo.held.remove(id) {
                        Some(held) => delivered.push(held),
                        // Told live while another sidecar held its news: it
                        // is shown now, so none will tell another editor.
                        None if repo.heard.contains(id) => {
                            shown.push((repo.root.join(".slipway"), id.clone()));
                        }
                        None => {}
                    }
                }
            }
        }
        let count = delivered.len();
        let done = tokio::task::spawn_blocking(move || {
            delivered.into_iter().for_each(heard::Held::delivered);
            for (slipway_dir, id) in shown {
                heard::shown(&slipway_dir, &id);
            }
        })
        .await;
        if done.is_err() {
            tracing::warn!("delivering run news failed");
        }
        count
    }

    /// Adds a folder to watch; it is opened on the next refresh.
    pub async fn add_root(&self, root: PathBuf) {
        self.pending_roots.lock().await.push(root);
        self.poke();
    }

    /// Registers a repository by its common dir and root (idempotent).
    pub async fn register(&self, common_dir: PathBuf, root: PathBuf) {
        let mut repos = self.repos.lock().await;
        repos
            .entry(common_dir.clone())
            .or_insert_with(|| Repo::new(&common_dir, root));
    }

    /// The watched status cache of `host`'s repository, registering it when
    /// new; for blocking threads only (it waits for the state's lock).
    pub fn cache_blocking(&self, host: &HostRepo) -> Arc<std::sync::Mutex<StatusCache>> {
        let common_dir = host.common_dir().to_path_buf();
        let mut repos = self.repos.blocking_lock();
        repos
            .entry(common_dir.clone())
            .or_insert_with(|| Repo::new(&common_dir, host.root().to_path_buf()))
            .statuses
            .clone()
    }

    /// What the blocking refresh of a registered repository needs.
    async fn statuses(&self, common_dir: &Path) -> Option<Shared> {
        let repos = self.repos.lock().await;
        repos.get(common_dir).map(|r| Shared {
            statuses: r.statuses.clone(),
            presence: r.presence.clone(),
            heard: r.heard.clone(),
        })
    }

    /// Starts following a run started by this sidecar.
    pub async fn follow(&self, common_dir: &Path, run_id: &RunId) {
        let mut repos = self.repos.lock().await;
        if let Some(repo) = repos.get_mut(common_dir) {
            repo.follows
                .entry(run_id.clone())
                .or_insert_with(Follow::new);
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
    pub fn run_of_token(token: &NumberOrString) -> Option<RunId> {
        match token {
            NumberOrString::String(s) => s
                .strip_prefix("slipway-")
                .and_then(|id| RunId::parse(id).ok()),
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
                    path.starts_with(slipway_core::worktree::root::worktrees_dir_for(Path::new(
                        root,
                    )))
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
                .zip(&snapshot.canonical_paths)
                .find(|(_, at)| path.starts_with(at))
                .map(|(w, _)| w)
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
}
