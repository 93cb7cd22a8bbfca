//! `.slipway/worktrees/.trash/`: where a worktree folder goes, by one
//! rename, the moment slipway has decided to remove it. A create undone or a
//! close is over once its folder is there; deleting the files (most of a
//! close's time) goes on in a detached process, so a close returns at once.
//! Whatever is in the trash is slipway's to delete, so a deletion that was
//! killed half way is simply finished by the next slipway command.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use super::{HostRepo, worktrees_dir};
use crate::util::random_hex;

/// The program (and its leading arguments) that empties a trash folder given
/// as its last argument, detached; set by the binary (see [`set_emptier`]).
static EMPTIER: OnceLock<(PathBuf, Vec<OsString>)> = OnceLock::new();

/// Names the program that empties the trash in the background:
/// `program args... <slipway dir>` must call [`empty`] on that folder.
/// Without one (the library on its own, its tests) the trash is emptied in
/// the calling thread.
pub fn set_emptier(program: PathBuf, args: Vec<OsString>) {
    if EMPTIER.set((program, args)).is_err() {
        tracing::debug!("the trash emptier was already set");
    }
}

/// Inside the worktrees folder, so a worktree always moves there by a plain
/// rename (the folder may be a mount of its own); no worktree's name starts
/// with a dot.
pub(super) fn dir(slipway_dir: &Path) -> PathBuf {
    let root = slipway_dir.parent().unwrap_or(slipway_dir);
    super::root::worktrees_dir_for(root).join(".trash")
}

/// Moves the worktree folder `path` (checked by the caller to be slipway's)
/// into the trash, atomically; `Ok(false)` when there is nothing there.
pub(super) fn move_in(host: &HostRepo, path: &Path) -> std::io::Result<bool> {
    match path.symlink_metadata() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
        Ok(meta) if !meta.is_dir() => {
            return Err(std::io::Error::other(format!(
                "{} is not a folder",
                path.display()
            )));
        }
        Ok(_) => {}
    }
    let trash = worktrees_dir(host).join(".trash");
    let name = format!(
        "{}-{}",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default(),
        random_hex(4)
    );
    // An emptier may remove the empty trash folder in between.
    let mut tries = 0;
    loop {
        std::fs::create_dir_all(&trash)?;
        match std::fs::rename(path, trash.join(&name)) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && path.exists() && tries < 3 => {
                tries += 1;
            }
            other => return other.map(|()| true),
        }
    }
}

/// Starts emptying what a killed deletion left in the trash, unless an
/// emptier is at work (it finds everything that is there).
pub fn finish_leftovers(slipway_dir: &Path) {
    let waiting = std::fs::read_dir(dir(slipway_dir)).is_ok_and(|mut d| d.next().is_some());
    if !waiting {
        return;
    }
    let busy = OpenOptions::new()
        .read(true)
        .open(slipway_dir.join("locks").join("trash.lock"))
        .is_ok_and(|f| f.try_lock_shared().is_err());
    if !busy {
        empty_later(slipway_dir);
    }
}

/// Empties the trash in a detached process (or here, without an emptier
/// program): the caller does not wait for the files to go.
pub fn empty_later(slipway_dir: &Path) {
    let Some((program, args)) = EMPTIER.get() else {
        for problem in empty(slipway_dir) {
            tracing::warn!("{problem}");
        }
        return;
    };
    let mut command = Command::new(program);
    command
        .args(args)
        .arg(slipway_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own process group: a Ctrl-C meant for the command that
        // started it does not stop the deletion half way.
        .process_group(0);
    match command.spawn() {
        // Reaped by a thread so a long-lived caller keeps no zombie.
        Ok(mut child) => {
            if let Err(e) = std::thread::Builder::new()
                .name("slipway-trash-reaper".into())
                .spawn(move || child.wait())
            {
                tracing::debug!("cannot watch the trash emptier: {e}");
            }
        }
        Err(e) => {
            tracing::warn!("cannot start the trash emptier ({e}); emptying it now");
            for problem in empty(slipway_dir) {
                tracing::warn!("{problem}");
            }
        }
    }
}

/// The lock one emptier holds while it deletes, so two never race on the
/// same files; a second one waits and then finds what is left.
fn lock(slipway_dir: &Path) -> std::io::Result<File> {
    let locks = slipway_dir.join("locks");
    std::fs::create_dir_all(&locks)?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(locks.join("trash.lock"))?;
    file.lock()?;
    Ok(file)
}

/// Deletes everything in the trash of `slipway_dir` (symlinks in it are
/// removed, never followed), until nothing more arrives; returns what could
/// not be deleted.
pub fn empty(slipway_dir: &Path) -> Vec<String> {
    let trash = dir(slipway_dir);
    let _held = match lock(slipway_dir) {
        Ok(file) => file,
        Err(e) => return vec![format!("cannot lock the trash: {e}")],
    };
    let mut problems = Vec::new();
    // A folder that cannot be deleted is tried once: the loop ends when a
    // listing brings nothing new.
    let mut failed: Vec<PathBuf> = Vec::new();
    loop {
        let Ok(entries) = std::fs::read_dir(&trash) else {
            return problems;
        };
        let fresh: Vec<_> = entries
            .flatten()
            .filter(|e| !failed.contains(&e.path()))
            .collect();
        if fresh.is_empty() {
            break;
        }
        for entry in fresh {
            crate::testhook::point("trash");
            let path = entry.path();
            let removed = match entry.file_type() {
                Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
                _ => std::fs::remove_file(&path),
            };
            match removed {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    problems.push(format!("could not empty {}: {e}", path.display()));
                    failed.push(path);
                }
                _ => {}
            }
        }
    }
    // An empty trash leaves no folder behind among the worktrees.
    if failed.is_empty()
        && let Err(e) = std::fs::remove_dir(&trash)
        && !matches!(
            e.kind(),
            std::io::ErrorKind::NotFound | std::io::ErrorKind::DirectoryNotEmpty
        )
    {
        problems.push(format!("could not remove {}: {e}", trash.display()));
    }
    problems
}
