//! Worktree statuses the sidecar keeps between refreshes, so an idle sidecar
//! does not run `git status` on every worktree twice a second. A filesystem
//! watcher (inotify, FSEvents, …) on each worktree and on its admin dir under
//! the common git dir (index, HEAD, reflog: a commit changes those, not the
//! files) marks a worktree changed, and one on `refs/heads` marks them all (a
//! branch moved from outside changes what is ahead); it is read again on the next
//! refresh, which is what debounces a burst of writes. A worktree that cannot
//! be watched (no watcher, or the system's watch limit) is read on every
//! refresh, and any status older than [`MAX_AGE`] is read again in case an
//! event was lost.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use slipway_core::worktree::{WorktreeRecord, WorktreeState};

/// The longest a status is trusted without being read again.
pub const MAX_AGE: Duration = Duration::from_secs(30);

/// [`MAX_AGE`], or what `SLIPWAY_TEST_STATUS_MAX_AGE_SECS` says: the tests
/// lengthen it so that a change can only have been seen by the watcher.
fn max_age() -> Duration {
    static AGE: std::sync::LazyLock<Duration> = std::sync::LazyLock::new(|| {
        std::env::var("SLIPWAY_TEST_STATUS_MAX_AGE_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .map_or(MAX_AGE, Duration::from_secs)
    });
    *AGE
}

/// More unread events than this means "everything changed".
const EVENT_BACKLOG: usize = 4096;

/// A worktree's changed paths and commits ahead of its base.
pub type Status = slipway_core::worktree::Counts;

/// What a cached status was read for: a change in any of these (a run
/// started or ended, the branch moved on) means reading again.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RecordKey {
    /// A worktree closed and made again at the same path is another worktree.
    created: u64,
    state: WorktreeState,
    run_id: Option<slipway_core::ids::RunId>,
    branch: String,
    base_commit: String,
}

impl RecordKey {
    fn of(record: &WorktreeRecord) -> RecordKey {
        RecordKey {
            created: record.created,
            state: record.state,
            run_id: record.run_id.clone(),
            branch: record.branch.clone(),
            base_commit: record.base_commit.clone(),
        }
    }
}

struct Entry {
    key: RecordKey,
    status: Status,
    read_at: Instant,
}

/// Paths the watcher reported since they were last looked at.
#[derive(Default)]
struct Events {
    paths: Vec<PathBuf>,
    overflowed: bool,
}

/// The cached statuses of one repository's worktrees.
pub struct StatusCache {
    common_dir: PathBuf,
    /// `<common>/refs/heads`, when it is watched.
    branch_refs: Option<PathBuf>,
    entries: HashMap<PathBuf, Entry>,
    /// Worktree path → when that worktree was made, and the folders watched for it.
    watched: HashMap<PathBuf, (u64, Vec<PathBuf>)>,
    events: Arc<Mutex<Events>>,
    watcher: Option<RecommendedWatcher>,
}

fn lock(events: &Mutex<Events>) -> MutexGuard<'_, Events> {
    // A panic while holding this lock cannot leave it inconsistent: it only
    // holds a list of paths.
    events
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl StatusCache {
    /// A cache for the repository whose common git dir is `common_dir`.
    pub fn new(common_dir: &Path) -> StatusCache {
        let events = Arc::new(Mutex::new(Events::default()));
        let sink = events.clone();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                let mut events = lock(&sink);
                match event {
                    // Reads (ours included) change nothing.
                    Ok(event) if matches!(event.kind, EventKind::Access(_)) => {}
                    Ok(event) if events.paths.len() + event.paths.len() <= EVENT_BACKLOG => {
                        events.paths.extend(event.paths)
                    }
                    // Too many to keep, or the watcher lost track: assume everything changed.
                    Ok(_) | Err(_) => {
                        events.paths.clear();
                        events.overflowed = true;
                    }
                }
            })
            .ok();
        let refs = common_dir.join("refs").join("heads");
        let branch_refs = watcher
            .as_mut()
            .and_then(|w| w.watch(&refs, RecursiveMode::Recursive).ok())
            .map(|()| refs);
        StatusCache {
            common_dir: common_dir.to_path_buf(),
            branch_refs,
            entries: HashMap::new(),
            watched: HashMap::new(),
            events,
            watcher,
        }
    }

    /// The status of `record`'s worktree: the cached one while nothing says
    /// it changed, else `read()` (whose answer is kept).
    pub fn status(
        &mut self,
        record: &WorktreeRecord,
        read: impl FnOnce() -> Result<Status, git2::Error>,
    ) -> Result<Status, git2::Error> {
        self.absorb_events();
        let key = RecordKey::of(record);
        if let Some(entry) = self.entries.get(&record.path)
            && entry.key == key
            && entry.read_at.elapsed() < max_age()
            && self
                .watched
                .get(&record.path)
                .is_some_and(|(created, _)| *created == record.created)
        {
            return Ok(entry.status.clone());
        }
        // Watch before reading, so a change during the read is not missed.
        self.watch(record);
        let read_at = Instant::now();
        let status = read()?;
        self.entries.insert(
            record.path.clone(),
            Entry {
                key,
                status: status.clone(),
                read_at,
            },
        );
        Ok(status)
    }

    /// Forgets (and stops watching) every worktree not in `present`.
    pub fn retain(&mut self, present: &HashSet<PathBuf>) {
        self.entries.retain(|path, _| present.contains(path));
        let gone: Vec<PathBuf> = self
            .watched
            .keys()
            .filter(|path| !present.contains(*path))
            .cloned()
            .collect();
        for path in gone {
            self.unwatch(&path);
        }
    }

    fn unwatch(&mut self, path: &Path) {
        if let (Some((_, folders)), Some(watcher)) = (self.watched.remove(path), &mut self.watcher)
        {
            for folder in folders {
                let _ = watcher.unwatch(&folder);
            }
        }
    }

    fn watch(&mut self, record: &WorktreeRecord) {
        match self.watched.get(&record.path) {
            Some((created, _)) if *created == record.created => return,
            // The folder was removed and made again: its old watch died with it.
            Some(_) => self.unwatch(&record.path),
            None => {}
        }
        let Some(watcher) = &mut self.watcher else {
            return;
        };
        let folders = [
            record.path.clone(),
            self.common_dir.join("worktrees").join(&record.id),
        ];
        let mut done = Vec::new();
        for folder in folders {
            match watcher.watch(&folder, RecursiveMode::Recursive) {
                Ok(()) => done.push(folder),
                Err(_) => {
                    // Half watched is not watched: this worktree is read on
                    // every refresh instead.
                    for folder in &done {
                        let _ = watcher.unwatch(folder);
                    }
                    return;
                }
            }
        }
        self.watched
            .insert(record.path.clone(), (record.created, done));
    }

    /// Drops the cached status of every worktree an event touched.
    fn absorb_events(&mut self) {
        let events = std::mem::take(&mut *lock(&self.events));
        if events.overflowed {
            self.entries.clear();
            return;
        }
        if events.paths.is_empty() {
            return;
        }
        if let Some(refs) = &self.branch_refs
            && events.paths.iter().any(|p| p.starts_with(refs))
        {
            self.entries.clear();
        }
        let stale: Vec<PathBuf> = self
            .watched
            .iter()
            .filter(|(_, (_, folders))| {
                events
                    .paths
                    .iter()
                    .any(|p| folders.iter().any(|f| p.starts_with(f)))
            })
            .map(|(path, _)| path.clone())
            .collect();
        for path in stale {
            self.entries.remove(&path);
        }
        // An event on a watched folder itself is its removal (or a move): its
        // watch is gone, so it must be watched again when it is next read.
        let lost: Vec<PathBuf> = self
            .watched
            .iter()
            .filter(|(_, (_, folders))| folders.iter().any(|f| events.paths.contains(f)))
            .map(|(path, _)| path.clone())
            .collect();
        for path in lost {
            self.unwatch(&path);
        }
    }
}
