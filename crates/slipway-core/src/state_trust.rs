//! Whether `.slipway/` is slipway's own (DESIGN §2 "Git safety" 5), as git's
//! `safe.directory` asks whether a repository is the user's: a `.slipway/`
//! that git tracks came with a clone or a merge, and one that another user
//! owns (or that is a symlink to somewhere else) was not made by this user's
//! slipway. Its journal, records and locks then say nothing slipway may act
//! on: recovery does not run there and nothing destructive is done, and the
//! user is told why and how to make it slipway's again.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::git::HostRepo;

/// The folders under `.slipway/` whose contents slipway acts on.
const STATE_FOLDERS: &[&str] = &[
    "journal",
    "state",
    "runs",
    "locks",
    "gitdirs",
    "sandboxes",
    "worktrees",
    "quarantine",
    "clones",
];

/// Why `.slipway/` is not trusted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Untrusted {
    /// git tracks files under it (a clone or a merge brought them).
    #[error(
        "{} is tracked by git ({} among its files), so what is in it came with the repository, not from this slipway; nothing was done with it",
        folder.display(), example
    )]
    Tracked { folder: PathBuf, example: String },
    /// Another user owns it.
    #[error(
        "{} belongs to user {owner}, not to you (user {me}); slipway does not act on another user's state",
        path.display()
    )]
    ForeignOwner { path: PathBuf, owner: u32, me: u32 },
    /// A symlink where slipway's folder should be.
    #[error(
        "{} is a symlink, not a folder slipway made; to keep worktrees on another disk set a worktree root instead",
        path.display()
    )]
    Symlink { path: PathBuf },
    /// Something that is not a folder.
    #[error("{} is not a folder", path.display())]
    NotAFolder { path: PathBuf },
}

impl crate::error::Failure for Untrusted {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::UntrustedState
    }

    fn data(&self) -> serde_json::Map<String, serde_json::Value> {
        let path = match self {
            Untrusted::Tracked { folder, .. } => folder,
            Untrusted::ForeignOwner { path, .. }
            | Untrusted::Symlink { path }
            | Untrusted::NotAFolder { path } => path,
        };
        let mut data = serde_json::Map::new();
        data.insert("path".into(), path.display().to_string().into());
        data
    }
}

/// Checks `.slipway/` of `host` and the folders in it slipway acts on.
/// A missing folder is trusted: slipway makes it.
pub fn check(host: &HostRepo) -> Result<(), Untrusted> {
    let folder = host.slipway_dir();
    check_folder(&folder)?;
    for name in STATE_FOLDERS {
        check_folder(&folder.join(name))?;
    }
    // A worktree root the user configured: slipway deletes below it too.
    if crate::worktree::root::is_configured(host.root()) {
        check_folder(&crate::worktree::worktrees_dir(host))?;
    }
    tracked(host, &folder)
}

fn check_folder(path: &Path) -> Result<(), Untrusted> {
    let meta = match path.symlink_metadata() {
        Ok(meta) => meta,
        Err(_) => return Ok(()),
    };
    if meta.file_type().is_symlink() {
        return Err(Untrusted::Symlink {
            path: path.to_path_buf(),
        });
    }
    if !meta.is_dir() {
        return Err(Untrusted::NotAFolder {
            path: path.to_path_buf(),
        });
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(Untrusted::ForeignOwner {
            path: path.to_path_buf(),
            owner: meta.uid(),
            me,
        });
    }
    Ok(())
}

/// Whether the index holds any path under `.slipway/`.
fn tracked(host: &HostRepo, folder: &Path) -> Result<(), Untrusted> {
    let Ok(index) = host.git().index() else {
        return Ok(());
    };
    let Ok(at) = index.find_prefix(".slipway/") else {
        return Ok(());
    };
    match index.get(at) {
        Some(entry) if entry.path.starts_with(b".slipway/") => Err(Untrusted::Tracked {
            folder: folder.to_path_buf(),
            example: String::from_utf8_lossy(&entry.path).into_owned(),
        }),
        _ => Ok(()),
    }
}
