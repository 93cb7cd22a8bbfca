//! Slots: an engine of limit N has N lock files, `<name>.<i>.slot`, under the
//! user's state folder. A run holds one with an open-file-description lock
//! (`F_OFD_SETLK`) for its life: two opens conflict even within one process
//! (attempts run on threads of one), the kernel lets go when the process
//! dies however it dies, and `F_OFD_GETLK` can count the held ones without
//! taking any, so listing the load never makes a run pass a slot by.

use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use super::{Engine, EngineError};

/// The folder of slot files: `$XDG_STATE_HOME/slipway/engines`, else
/// `~/.local/state/slipway/engines`, else one under the temp folder per user.
pub fn slots_dir() -> PathBuf {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let state = absolute("XDG_STATE_HOME")
        .or_else(|| absolute("HOME").map(|h| h.join(".local/state")))
        .unwrap_or_else(|| {
            // SAFETY: getuid cannot fail.
            std::env::temp_dir().join(format!("slipway-{}", unsafe { libc::getuid() }))
        });
    state.join("slipway").join("engines")
}

fn slot_path(dir: &Path, engine: &Engine, index: u32) -> PathBuf {
    dir.join(format!("{}.{index}.slot", engine.name))
}

/// A held slot; dropping it lets the slot go.
#[derive(Debug)]
pub struct Slot {
    _file: File,
    index: u32,
}

impl Slot {
    /// Which of the engine's slots (0-based).
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Takes the first free slot of `engine`, writing `run_id` into it;
    /// `None` when all are held.
    pub fn take(dir: &Path, engine: &Engine, run_id: &str) -> Result<Option<Slot>, EngineError> {
        let failed = |source: std::io::Error| EngineError::Slots {
            engine: engine.name.clone(),
            dir: dir.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(failed)?;
        for index in 0..engine.limit {
            let mut file = open(&slot_path(dir, engine, index)).map_err(failed)?;
            if !lock(&file, libc::F_OFD_SETLK).map_err(failed)? {
                continue;
            }
            // Only for people and `slipway engines`: the lock is the slot.
            let named = file
                .set_len(0)
                .and_then(|()| file.write_all(run_id.as_bytes()));
            if let Err(e) = named {
                tracing::warn!("could not name run {run_id} in its engine slot: {e}");
            }
            return Ok(Some(Slot { _file: file, index }));
        }
        Ok(None)
    }
}

/// The runs holding slots of `engine` now (an unnamed holder reads as `?`).
pub fn load(dir: &Path, engine: &Engine) -> Vec<String> {
    (0..engine.limit)
        .filter_map(|index| {
            let path = slot_path(dir, engine, index);
            let file = File::open(&path).ok()?;
            held(&file).then(|| {
                std::fs::read_to_string(&path)
                    .ok()
                    .map(|s| s.trim().to_owned())
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| "?".to_owned())
            })
        })
        .collect()
}

fn open(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

fn whole_file(kind: libc::c_short) -> libc::flock {
    // SAFETY: flock is plain old data; all-zero is a valid value.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = kind;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl
}

/// Takes the write lock without waiting: false when someone holds it.
fn lock(file: &File, command: libc::c_int) -> std::io::Result<bool> {
    let mut fl = whole_file(libc::F_WRLCK as libc::c_short);
    // SAFETY: a valid open fd and a valid flock for the call's lifetime.
    if unsafe { libc::fcntl(file.as_raw_fd(), command, &mut fl) } == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN) | Some(libc::EACCES) => Ok(false),
        _ => Err(e),
    }
}

/// Whether another open file holds the slot (reading takes nothing).
fn held(file: &File) -> bool {
    let mut fl = whole_file(libc::F_WRLCK as libc::c_short);
    // SAFETY: a valid open fd and a valid flock for the call's lifetime.
    let asked = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_GETLK, &mut fl) };
    asked == 0 && fl.l_type != libc::F_UNLCK as libc::c_short
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_held_until_dropped_even_within_one_process() {
        let dir = tempfile::tempdir().expect("temp dir");
        let engine = Engine {
            name: "e".into(),
            url: super::super::EngineUrl::Tcp("h:1".into()),
            limit: 2,
            isolated: false,
        };
        let first = Slot::take(dir.path(), &engine, "run-1")
            .expect("take")
            .expect("free");
        let second = Slot::take(dir.path(), &engine, "run-2")
            .expect("take")
            .expect("free");
        assert_eq!((first.index(), second.index()), (0, 1));
        assert!(
            Slot::take(dir.path(), &engine, "run-3")
                .expect("take")
                .is_none()
        );
        assert_eq!(load(dir.path(), &engine), vec!["run-1", "run-2"]);
        drop(first);
        assert_eq!(load(dir.path(), &engine), vec!["run-2"]);
        let third = Slot::take(dir.path(), &engine, "run-3")
            .expect("take")
            .expect("freed");
        assert_eq!(third.index(), 0);
    }
}
