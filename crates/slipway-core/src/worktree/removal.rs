//! What slipway may delete (DESIGN §2 "Git safety" 4): only the folder it
//! made for a worktree, found from its own record and checked on disk, never
//! from a path read out of a file in `.git` (which a run could have written).
//! The checks: the record's id is the encoding of its branch, its path is
//! exactly `<host>/.slipway/worktrees/<id>` with no symlink on the way, it is
//! neither the host checkout nor above it, and it is not another repository
//! (its `.git` is a file naming this repository's admin dir for `<id>`).

use std::path::{Path, PathBuf};

use crate::git::HostRepo;

use super::record::WorktreeRecord;

/// A worktree folder that passed every check and may be removed.
#[derive(Debug)]
pub struct Verified {
    path: PathBuf,
}

/// Why a folder is not slipway's to delete.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotOurs {
    /// The record does not describe a folder slipway would have made.
    #[error("its record names {} as the folder of '{branch}', which is not where slipway puts it ({}); the record was altered", path.display(), expected.display())]
    AlteredRecord {
        path: PathBuf,
        expected: PathBuf,
        branch: String,
    },
    /// A symlink where a folder should be.
    #[error("{} is a symlink, not the folder slipway made", path.display())]
    Symlink { path: PathBuf },
    /// The folder holds a repository of its own.
    #[error("{} holds a repository of its own (its .git is a folder)", path.display())]
    AnotherRepository { path: PathBuf },
    /// The folder's `.git` names a different admin dir.
    #[error("{}'s .git points to {}, not to this repository's worktree '{id}'", path.display(), target)]
    ForeignWorktree {
        path: PathBuf,
        target: String,
        id: String,
    },
    /// The folder has no `.git` at all, so what is in it cannot be checked.
    #[error("{} has no .git file, so git cannot say what in it is uncommitted", path.display())]
    NoGitFile { path: PathBuf },
}

fn lstat_is_dir(path: &Path) -> Option<bool> {
    path.symlink_metadata().ok().map(|m| m.file_type().is_dir())
}

/// Checks that the folder of `record` is the one slipway made for it.
/// `Ok(None)` when there is no folder at all (nothing to remove).
pub fn verify(host: &HostRepo, record: &WorktreeRecord) -> Result<Option<Verified>, NotOurs> {
    let root = host.root();
    let worktrees = super::worktrees_dir(host);
    let expected = worktrees.join(super::naming::dir_name(&record.branch));
    let altered = || NotOurs::AlteredRecord {
        path: record.path.clone(),
        expected: expected.clone(),
        branch: record.branch.clone(),
    };
    if record.id != super::naming::dir_name(&record.branch) || record.path != expected {
        return Err(altered());
    }
    // `.slipway` and the worktrees folder must be real folders (the
    // configured root was resolved once), so the path cannot lead anywhere else.
    for folder in [host.slipway_dir(), worktrees.clone()] {
        match lstat_is_dir(&folder) {
            Some(true) => {}
            None => return Ok(None),
            Some(false) => return Err(NotOurs::Symlink { path: folder }),
        }
    }
    match lstat_is_dir(&expected) {
        None => return Ok(None),
        Some(false) => return Err(NotOurs::Symlink { path: expected }),
        Some(true) => {}
    }
    // Never the host checkout or a folder above it; below the worktrees
    // folder by construction (its own, or the user's worktree root).
    if root.starts_with(&expected) || !expected.starts_with(&worktrees) {
        return Err(altered());
    }
    let dot_git = expected.join(".git");
    let meta = match dot_git.symlink_metadata() {
        Ok(m) => m,
        Err(_) => return Err(NotOurs::NoGitFile { path: expected }),
    };
    if meta.is_dir() {
        return Err(NotOurs::AnotherRepository { path: expected });
    }
    if !meta.is_file() {
        return Err(NotOurs::NoGitFile { path: expected });
    }
    let text = std::fs::read_to_string(&dot_git).unwrap_or_default();
    let target = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("gitdir:"))
        .map(str::trim)
        .unwrap_or_default()
        .to_owned();
    let admin = host.common_dir().join("worktrees").join(&record.id);
    let names_admin = crate::git::canonical(Path::new(&target)) == crate::git::canonical(&admin);
    if !names_admin {
        return Err(NotOurs::ForeignWorktree {
            path: expected,
            target,
            id: record.id.clone(),
        });
    }
    Ok(Some(Verified { path: expected }))
}

impl Verified {
    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the folder and everything in it (symlinks inside are removed,
    /// never followed).
    pub fn remove(self) -> std::io::Result<()> {
        match std::fs::remove_dir_all(&self.path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
}
