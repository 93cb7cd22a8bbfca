//! One queue per repository for slipway's writes to the host's git: branch
//! creation, worktree add and prune, imports, merges back, lands and
//! discards. Parallel attempts do these at once from several threads, and
//! git's own locks (`config.lock`, `packed-refs.lock`, a ref's `.lock`) then
//! fail the second writer instead of making it wait (claude-code#47266).
//! Within one process every such write takes its repository's turn here;
//! between processes git's lock protocol (see [`super::host_write`]) still
//! stands, and a write that finds a lock taken reports it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex, MutexGuard};

/// One mutex per repository (by its common git dir), kept for the life of
/// the process: a process touches few repositories.
static QUEUES: LazyLock<Mutex<HashMap<PathBuf, &'static Mutex<()>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

thread_local! {
    /// The repositories whose turn this thread holds: a write that calls
    /// another (a discard closing its worktree) does not wait for itself.
    static HELD: RefCell<Vec<PathBuf>> = const { RefCell::new(Vec::new()) };
}

/// This thread's turn at a repository's git; the next writer goes when it drops.
#[must_use = "the turn ends when it is dropped"]
pub struct Turn {
    guard: Option<(PathBuf, MutexGuard<'static, ()>)>,
}

/// Waits for the repository's turn (the repository named by its common git
/// dir). Re-entrant: a thread holding the turn gets it again at once.
pub fn turn(common_dir: &Path) -> Turn {
    let key = crate::git::canonical(common_dir);
    if HELD.with(|held| held.borrow().contains(&key)) {
        return Turn { guard: None };
    }
    let queue: &'static Mutex<()> = {
        let mut queues = QUEUES.lock().unwrap_or_else(|p| p.into_inner());
        queues
            .entry(key.clone())
            .or_insert_with(|| Box::leak(Box::new(Mutex::new(()))))
    };
    // The mutex guards no data: a writer that panicked leaves nothing half
    // written here (its git writes are journaled), so a poisoned one is taken.
    let guard = queue.lock().unwrap_or_else(|p| p.into_inner());
    HELD.with(|held| held.borrow_mut().push(key.clone()));
    Turn {
        guard: Some((key, guard)),
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        if let Some((key, _guard)) = &self.guard {
            HELD.with(|held| held.borrow_mut().retain(|k| k != key));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn writers_of_one_repository_go_one_at_a_time() {
        let dir = tempfile::tempdir().expect("temp dir");
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..50 {
                        let _turn = turn(dir.path());
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                });
            }
        });
        assert_eq!(most.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_thread_holding_the_turn_gets_it_again() {
        let dir = tempfile::tempdir().expect("temp dir");
        let _outer = turn(dir.path());
        let inner = turn(dir.path());
        drop(inner);
        // The outer turn still holds: another thread must wait for it.
        let other = std::thread::scope(|s| {
            s.spawn(|| {
                let key = crate::git::canonical(dir.path());
                let queues = QUEUES.lock().unwrap_or_else(|p| p.into_inner());
                queues.get(&key).map(|m| m.try_lock().is_err())
            })
            .join()
            .expect("thread")
        });
        assert_eq!(other, Some(true));
    }
}
