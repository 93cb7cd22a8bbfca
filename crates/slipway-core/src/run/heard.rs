//! Who hears how a run ends, exactly once.
//!
//! Each sidecar open on a repository announces itself with a file under
//! `.slipway/sidecars/` that it holds locked while it lives, and tells its
//! editor of every run that ends while it listens.
//!
//! A run nobody watched end in a terminal is also **news** until an editor
//! has shown it: `runs/<run>.news` is written *before* the run's record says
//! it finished, so the end and "nobody has heard yet" are one step — a
//! sidecar that finds the record finished finds the news too, and one that
//! found it still running hears the end itself. A sidecar that started after
//! the end reports a run only when it claims its news: an exclusive lock on
//! the file, held until its editor has shown the report (then the file goes)
//! or until the sidecar dies (then the lock goes, and the next sidecar to
//! look claims it: a client that vanished without showing it loses nothing).
//! Two sidecars starting together cannot both hold the lock, so such a run is
//! reported once.

use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::record::runs_dir;
use crate::ids::RunId;

fn sidecars_dir(slipway_dir: &Path) -> PathBuf {
    slipway_dir.join("sidecars")
}

fn news_path(slipway_dir: &Path, run_id: &RunId) -> PathBuf {
    runs_dir(slipway_dir).join(format!("{run_id}.news"))
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

/// Called as a run ends, before its record says so: unless a person watched
/// it end (`watched`: the terminal that started it shows the result), its end
/// is news for the editors until one of them has shown it.
pub fn ending(slipway_dir: &Path, run_id: &RunId, watched: bool) {
    if watched {
        return;
    }
    let path = news_path(slipway_dir, run_id);
    if let Err(e) = crate::util::write_atomic(&path, b"") {
        tracing::warn!("cannot leave {} for the editors: {e}", path.display());
    }
}

/// A run's news, held by this process until its editor has shown it.
#[derive(Debug)]
pub struct Held {
    path: PathBuf,
    _file: File,
}

impl Held {
    /// The editor showed it: nobody else will be told.
    pub fn delivered(self) {
        remove(&self.path);
    }
}

/// An editor showed a run's end that another sidecar holds the news of:
/// nobody else will be told.
pub fn shown(slipway_dir: &Path, run_id: &RunId) {
    remove(&news_path(slipway_dir, run_id));
}

fn remove(path: &Path) {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            tracing::debug!("cannot remove {}: {e}", path.display());
        }
        _ => {}
    }
}

/// What claiming a run's news found.
#[derive(Debug)]
pub enum Claim {
    /// This caller holds it: its editor is to be told.
    Held(Held),
    /// Another live sidecar holds it: it is telling its editor (or, if its
    /// editor vanished before showing it, the news comes free when it dies).
    Taken,
    /// There is none: an editor has shown it, or a person watched the run end.
    None,
}

/// Takes the news of a run's end, if nobody else holds it.
pub fn claim(slipway_dir: &Path, run_id: &RunId) -> Claim {
    let path = news_path(slipway_dir, run_id);
    let Ok(file) = OpenOptions::new().write(true).open(&path) else {
        return Claim::None;
    };
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Claim::Taken,
        Err(TryLockError::Error(e)) => {
            tracing::debug!("cannot claim {}: {e}", path.display());
            return Claim::Taken;
        }
    }
    // The holder before may have delivered it (removed the file) between our
    // open and our lock: then this lock is on a file nobody will see.
    let same = match (file.metadata(), std::fs::metadata(&path)) {
        (Ok(held), Ok(now)) => held.ino() == now.ino() && held.dev() == now.dev(),
        _ => false,
    };
    if !same {
        return Claim::None;
    }
    Claim::Held(Held { path, _file: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn news_is_held_by_one_claimant_until_delivered_or_dropped() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(runs_dir(dir.path())).expect("runs dir");
        let (watched, run) = (RunId::new(), RunId::new());
        ending(dir.path(), &watched, true);
        assert!(matches!(claim(dir.path(), &watched), Claim::None));
        ending(dir.path(), &run, false);
        let Claim::Held(first) = claim(dir.path(), &run) else {
            panic!("the first claimant holds it");
        };
        assert!(matches!(claim(dir.path(), &run), Claim::Taken));
        // A holder that goes without delivering leaves it to the next one.
        drop(first);
        let Claim::Held(second) = claim(dir.path(), &run) else {
            panic!("free again");
        };
        second.delivered();
        assert!(matches!(claim(dir.path(), &run), Claim::None));
    }
}
