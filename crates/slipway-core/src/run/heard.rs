//! Who hears how a run ends. Each sidecar open on a repository announces
//! itself with a file under `.slipway/sidecars/` that it holds locked while it
//! lives (a crash or a reused pid cannot fake a listener). Sidecars open when a
//! run ends each tell their own editor; nothing on disk says "reported". A run
//! that ends while no sidecar listens leaves `runs/<run>.unheard`, which the
//! next sidecar to start claims (exactly one wins) and reports.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

use super::record::runs_dir;

fn sidecars_dir(slipway_dir: &Path) -> PathBuf {
    slipway_dir.join("sidecars")
}

fn unheard_path(slipway_dir: &Path, run_id: &str) -> PathBuf {
    runs_dir(slipway_dir).join(format!("{run_id}.unheard"))
}

/// A sidecar listening on a repository, for as long as this lives.
#[derive(Debug)]
pub struct Presence {
    path: PathBuf,
    // Held locked: the lock, not the file, says the sidecar is alive.
    _file: File,
}

impl Drop for Presence {
    fn drop(&mut self) {
        // A file left behind is unlocked, hence stale, and removed by the next check.
        if let Err(e) = std::fs::remove_file(&self.path) {
            tracing::debug!("cannot remove {}: {e}", self.path.display());
        }
    }
}

/// Announces this process as a listener on the repository whose `.slipway` is `slipway_dir`.
pub fn announce(slipway_dir: &Path) -> std::io::Result<Presence> {
    let dir = sidecars_dir(slipway_dir);
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!(
        "{}-{}.lock",
        std::process::id(),
        crate::util::random_hex(4)
    ));
    let file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)?;
    file.lock()?;
    Ok(Presence { path, _file: file })
}

/// Whether any sidecar listens on the repository now; stale announcements are removed.
pub fn anyone_listening(slipway_dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(sidecars_dir(slipway_dir)) else {
        return false;
    };
    let mut listening = false;
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(file) = OpenOptions::new().write(true).open(&path) else {
            continue;
        };
        match file.try_lock() {
            Err(TryLockError::WouldBlock) => listening = true,
            Ok(()) => {
                // Nobody holds it: its sidecar is gone.
                if let Err(e) = std::fs::remove_file(&path) {
                    tracing::debug!("cannot remove {}: {e}", path.display());
                }
            }
            Err(TryLockError::Error(e)) => {
                tracing::debug!("cannot check {}: {e}", path.display());
            }
        }
    }
    listening
}

/// Called when a run has ended: when no sidecar listens, the run is left to
/// the next one to start.
pub fn ended(slipway_dir: &Path, run_id: &str) {
    if anyone_listening(slipway_dir) {
        return;
    }
    let path = unheard_path(slipway_dir, run_id);
    if let Err(e) = std::fs::write(&path, b"") {
        tracing::warn!("cannot leave {} for the next editor: {e}", path.display());
    }
}

/// Takes the report of a run that ended while no sidecar listened; true for
/// the one caller that gets it.
pub fn claim_unheard(slipway_dir: &Path, run_id: &str) -> bool {
    std::fs::remove_file(unheard_path(slipway_dir, run_id)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listener_is_seen_until_it_goes_and_an_unheard_end_is_claimed_once() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(runs_dir(dir.path())).expect("runs dir");
        assert!(!anyone_listening(dir.path()));
        let presence = announce(dir.path()).expect("announce");
        assert!(anyone_listening(dir.path()));
        ended(dir.path(), "run-1");
        assert!(!claim_unheard(dir.path(), "run-1"), "a listener heard it");
        drop(presence);
        assert!(!anyone_listening(dir.path()));
        ended(dir.path(), "run-2");
        assert!(claim_unheard(dir.path(), "run-2"));
        assert!(!claim_unheard(dir.path(), "run-2"), "claimed once");
    }

    #[test]
    fn an_announcement_left_by_a_dead_sidecar_is_not_a_listener() {
        let dir = tempfile::tempdir().expect("temp dir");
        let stale = sidecars_dir(dir.path());
        std::fs::create_dir_all(&stale).expect("dir");
        std::fs::write(stale.join("12345-dead.lock"), b"").expect("stale file");
        assert!(!anyone_listening(dir.path()));
        assert!(!stale.join("12345-dead.lock").exists(), "removed");
    }
}
