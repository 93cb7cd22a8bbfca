//! One lock per branch: an advisory lock on a file holding pid, branch and time.
//!
//! The kernel releases the lock when its holder dies, so a lock file left by a
//! dead process is simply taken over; the file's contents only say who holds it.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Who holds a branch lock.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct LockHolder {
    /// Process id of the holder.
    pub pid: u32,
    /// The branch it holds.
    pub branch: String,
    /// When it took the lock, seconds since the epoch.
    pub time: u64,
    /// The run that holds it, when a run does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The agent of that run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

impl LockHolder {
    /// Who holds it, in words: the run and its agent, else the process.
    fn describe(&self) -> String {
        let since = crate::util::utc_clock(self.time);
        match (&self.run_id, &self.agent) {
            (Some(run), Some(agent)) => format!("run {run} ({agent}) since {since}"),
            (Some(run), None) => format!("run {run} since {since}"),
            _ => format!("process {} since {since}", self.pid),
        }
    }
}

/// A held branch lock; dropping it releases the lock.
#[derive(Debug)]
pub struct BranchLock {
    file: File,
    path: PathBuf,
    /// What this process wrote in the file (its branch among it).
    holder: LockHolder,
}

/// Why a lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another live process holds the branch.
    #[error("branch '{branch}' is in use by {} (lock file {}); wait for it or cancel that run", holder.as_deref().map(LockHolder::describe).unwrap_or_else(|| "another slipway process".into()), path.display())]
    InUse {
        branch: String,
        holder: Option<Box<LockHolder>>,
        path: PathBuf,
    },
    /// The lock file could not be opened.
    #[error("cannot open lock file {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// `.slipway/` is not slipway's own: no lock is taken (nor written) there.
    #[error(transparent)]
    Untrusted(#[from] crate::state_trust::Untrusted),
}

impl LockError {
    /// Stable machine-readable kind.
    pub fn kind(&self) -> crate::error::ErrorKind {
        match self {
            LockError::InUse { .. } => crate::error::ErrorKind::BranchInUse,
            LockError::Io { .. } => crate::error::ErrorKind::Io,
            LockError::Untrusted(_) => crate::error::ErrorKind::UntrustedState,
        }
    }
}

impl BranchLock {
    /// Takes the lock for `branch` in `dir`, failing at once if it is held.
    pub fn acquire(dir: &Path, file_name: &str, branch: &str) -> Result<BranchLock, LockError> {
        let path = dir.join(format!("{file_name}.lock"));
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(LockError::InUse {
                    branch: branch.to_owned(),
                    holder: read_holder(&mut file).map(Box::new),
                    path,
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
        }
        let holder = LockHolder {
            pid: std::process::id(),
            branch: branch.to_owned(),
            time: crate::util::now_secs(),
            run_id: None,
            agent: None,
        };
        let mut lock = BranchLock {
            file,
            path: path.clone(),
            holder,
        };
        lock.write_holder().map_err(io)?;
        Ok(lock)
    }

    /// Names the run (and its agent) that holds the lock, so whoever finds the
    /// branch taken is told which run to wait for or cancel.
    pub fn name_run(&mut self, run_id: &str, agent: &str) -> std::io::Result<()> {
        self.holder.run_id = Some(run_id.to_owned());
        self.holder.agent = Some(agent.to_owned());
        self.write_holder()
    }

    fn write_holder(&mut self) -> std::io::Result<()> {
        let text = serde_json::to_string(&self.holder).expect("a lock holder always serialises");
        self.file.set_len(0)?;
        self.file.seek(SeekFrom::Start(0))?;
        self.file.write_all(text.as_bytes())?;
        self.file.flush()
    }

    /// The branch this lock holds.
    pub fn branch(&self) -> &str {
        &self.holder.branch
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open lock file, for a process that must hold the lock too: a
    /// child that inherits it keeps the branch taken for as long as it lives.
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.file.as_raw_fd()
    }
}

impl Drop for BranchLock {
    fn drop(&mut self) {
        // The contents stay: only the kernel lock says whether it is held, and a
        // process that just failed to take it can still read who held it.
        let _ = self.file.unlock();
    }
}

/// Reads the holder, waiting briefly for a new holder that has the lock but has
/// not written its name yet.
fn read_holder(file: &mut File) -> Option<LockHolder> {
    for _ in 0..50 {
        let mut text = String::new();
        if file.seek(SeekFrom::Start(0)).is_ok()
            && file.read_to_string(&mut text).is_ok()
            && let Ok(holder) = serde_json::from_str(&text)
        {
            return Some(holder);
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    None
}

/// A repository-wide lock held only around libgit2's worktree add and prune,
/// which are not safe to run concurrently in one repository.
#[derive(Debug)]
pub struct AdminLock {
    file: File,
}

impl AdminLock {
    /// Waits for and takes the lock.
    pub fn acquire(dir: &Path) -> std::io::Result<AdminLock> {
        std::fs::create_dir_all(dir)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join("worktree-admin.lock"))?;
        file.lock()?;
        Ok(AdminLock { file })
    }
}

impl Drop for AdminLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}
