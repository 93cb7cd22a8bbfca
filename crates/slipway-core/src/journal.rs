//! The journal of multi-step host operations (create, merge, close): before
//! an operation touches anything it writes what it is about to do to
//! `.slipway/journal/<name>.json` and holds an advisory lock on that file
//! until it is done. A journal whose lock nobody holds belongs to a process
//! that died half way; the next slipway command (the CLI, or the sidecar
//! when it opens the repository) finishes or undoes that operation, see
//! [`crate::recovery`].

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::ids::{RunId, SandboxId, WorktreeId};

/// An operation under way, as much as its recovery needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum Operation {
    /// A merge into the host checkout: `target` moves from `ours` to `new`
    /// once the files of the paths between them are written.
    Merge {
        target: String,
        ours: String,
        new: String,
        /// Only the ref moves (the target is not checked out): there are no
        /// files to put back. Absent in journals of an older slipway.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        ref_only: bool,
        /// What names the merge's locks and temporary files; absent in
        /// journals of an older slipway.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token: Option<String>,
        /// Every path it writes, with its content before and after.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        writes: Vec<crate::git::host_write::PathWrite>,
        /// The folders it makes, outermost first.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        made: Vec<String>,
    },
    /// A worktree being made: its record, registration, checkout and copy-in.
    Create {
        id: String,
        branch: String,
        /// The branch was made by this create (and holds nothing else yet).
        created_branch: bool,
        /// The commit the branch was made at.
        base: String,
    },
    /// A worktree being removed (it was checked clean, or forced).
    Close { id: String, branch: String },
    /// A worktree and its branch being discarded (the checks passed, or
    /// forced): recovery finishes both, the branch only while it is still
    /// at `tip`.
    Discard {
        id: String,
        branch: String,
        tip: Option<String>,
        /// What names the branch deletion's lock.
        #[serde(default)]
        token: String,
    },
    /// A run working in a private git dir, from before its agent starts
    /// until its branch is imported: a run that dies leaves its work there,
    /// and recovery imports it (once nothing of the run holds `lock_branch`).
    Import {
        run_id: RunId,
        /// The host ref the run works on, and its value at start.
        refname: String,
        start: Option<String>,
        /// The long-lived sandbox whose private git dir the run used
        /// (`None`: the run's own, under `gitdirs/<run>`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sandbox: Option<SandboxId>,
        /// The worktree whose index follows the ref (`None`: the host
        /// checkout, for `head` runs).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        worktree: Option<WorktreeId>,
        /// The branch lock every process of the run holds.
        lock_branch: String,
        /// A long-lived sandbox's dir stays after the import.
        keep: bool,
        /// The paths an older slipway wrote instead of ids: used only when
        /// they are exactly what ids derive (see [`crate::recovery`]).
        #[serde(default, skip_serializing)]
        private_dir: Option<PathBuf>,
        #[serde(default, skip_serializing)]
        checkout: Option<PathBuf>,
    },
}

impl Operation {
    /// Checks what an entry read from disk names: ids that are plain file
    /// names, branch and ref names git accepts, a worktree id that is its
    /// branch's encoding. An entry that fails is not acted on.
    pub fn check(&self) -> Result<(), String> {
        use crate::git::refname::validate_branch_name;
        let branch_ref = |name: &str| -> Result<(), String> {
            let branch = name
                .strip_prefix("refs/heads/")
                .ok_or_else(|| format!("'{name}' is not a local branch"))?;
            validate_branch_name(branch).map_err(|e| e.to_string())
        };
        let oid = |text: &str| -> Result<(), String> {
            git2::Oid::from_str(text)
                .map(|_| ())
                .map_err(|_| format!("'{text}' is not a commit id"))
        };
        match self {
            Operation::Merge {
                target,
                ours,
                new,
                token,
                writes,
                made,
                ..
            } => {
                branch_ref(target)?;
                oid(ours)?;
                oid(new)?;
                if let Some(token) = token
                    && (token.is_empty() || !token.bytes().all(|b| b.is_ascii_hexdigit()))
                {
                    return Err(format!("'{token}' is not a token slipway makes"));
                }
                for w in writes {
                    crate::git::host_write::check_path(&w.path, false)
                        .map_err(|e| e.to_string())?;
                    for side in [&w.before, &w.after].into_iter().flatten() {
                        oid(&side.id)?;
                    }
                }
                for folder in made {
                    crate::git::host_write::check_path(folder, false).map_err(|e| e.to_string())?;
                }
                Ok(())
            }
            Operation::Create {
                id, branch, base, ..
            } => {
                validate_branch_name(branch).map_err(|e| e.to_string())?;
                oid(base)?;
                worktree_of(id, branch)
            }
            Operation::Close { id, branch } => {
                validate_branch_name(branch).map_err(|e| e.to_string())?;
                worktree_of(id, branch)
            }
            Operation::Discard {
                id,
                branch,
                tip,
                token,
            } => {
                validate_branch_name(branch).map_err(|e| e.to_string())?;
                if !token.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(format!("'{token}' is not a token slipway makes"));
                }
                if let Some(tip) = tip {
                    oid(tip)?;
                }
                worktree_of(id, branch)
            }
            Operation::Import {
                refname,
                start,
                lock_branch,
                ..
            } => {
                if refname != "HEAD" {
                    branch_ref(refname)?;
                }
                if let Some(start) = start {
                    oid(start)?;
                }
                validate_branch_name(lock_branch).map_err(|e| e.to_string())
            }
        }
    }
}

/// A worktree id must be exactly the one slipway derives from its branch.
fn worktree_of(id: &str, branch: &str) -> Result<(), String> {
    let parsed = WorktreeId::parse(id).map_err(|e| e.to_string())?;
    if parsed != WorktreeId::of_branch(branch) {
        return Err(format!(
            "'{id}' is not the worktree slipway makes for '{branch}'"
        ));
    }
    Ok(())
}

/// A journal entry held by the live operation that wrote it.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
}

/// The journal could not be written: the operation must not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the journal {}: {source}", path.display())]
pub struct JournalError {
    /// The journal file.
    pub path: PathBuf,
    /// Why.
    pub source: std::io::Error,
}

/// The folder of the journal.
pub fn dir(slipway_dir: &Path) -> PathBuf {
    slipway_dir.join("journal")
}

impl Journal {
    /// Writes `op` as `name`'s journal (durably, before returning) and
    /// holds it until [`Journal::finish`]. The entry is written and locked
    /// under a temporary name and then renamed into place, so a recovery
    /// looking at the journal never sees an entry that is not yet held.
    pub fn begin(slipway_dir: &Path, name: &str, op: &Operation) -> Result<Journal, JournalError> {
        let folder = dir(slipway_dir);
        let path = folder.join(format!("{name}.json"));
        let tmp = folder.join(format!(".{name}.{}.tmp", crate::util::random_hex(4)));
        let fail = |source| JournalError {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(&folder).map_err(fail)?;
        let written = (|| {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&tmp)?;
            file.try_lock().map_err(|e| match e {
                std::fs::TryLockError::WouldBlock => {
                    std::io::Error::other("a fresh file is locked")
                }
                std::fs::TryLockError::Error(e) => e,
            })?;
            let bytes = serde_json::to_vec(op).expect("an operation always serialises");
            file.write_all(&bytes)?;
            file.sync_all()?;
            std::fs::rename(&tmp, &path)?;
            File::open(&folder)?.sync_all()?;
            Ok(file)
        })();
        match written {
            Ok(file) => Ok(Journal { path, file }),
            Err(e) => {
                if let Err(cleanup) = std::fs::remove_file(&tmp)
                    && cleanup.kind() != std::io::ErrorKind::NotFound
                {
                    tracing::warn!("cannot remove {}: {cleanup}", tmp.display());
                }
                Err(fail(e))
            }
        }
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The operation is complete: its journal goes.
    pub fn finish(self) -> Result<(), JournalError> {
        let result = std::fs::remove_file(&self.path);
        drop(self.file);
        result.map_err(|source| JournalError {
            path: self.path.clone(),
            source,
        })
    }
}

/// An interrupted operation: its journal, locked by the caller now.
#[derive(Debug)]
pub struct Interrupted {
    /// What was under way.
    pub op: Operation,
    /// Held while the recovery runs; finished to remove the journal.
    pub journal: Journal,
}

/// Whether a journal `name` is there (held or not).
pub fn exists(slipway_dir: &Path, name: &str) -> bool {
    dir(slipway_dir).join(format!("{name}.json")).is_file()
}

/// The journal `name` when its writer is gone, locked now (and only when
/// what it names passes [`Operation::check`]).
pub fn interrupted_named(slipway_dir: &Path, name: &str) -> Option<Interrupted> {
    let path = dir(slipway_dir).join(format!("{name}.json"));
    let file = OpenOptions::new().read(true).write(true).open(&path).ok()?;
    file.try_lock().ok()?;
    let op = serde_json::from_slice::<Operation>(&std::fs::read(&path).ok()?).ok()?;
    op.check().ok()?;
    Some(Interrupted {
        op,
        journal: Journal { path, file },
    })
}

/// What the journal folder holds that nobody is working on.
#[derive(Debug, Default)]
pub struct Found {
    /// Entries whose writer is gone, locked now.
    pub interrupted: Vec<Interrupted>,
    /// Entries that could not be read, kept aside as `<name>.json.corrupt`.
    pub unreadable: Vec<PathBuf>,
    /// Entries that name something slipway would not have written (a path,
    /// an id or a ref that is not its own): left as they are, and why.
    pub refused: Vec<(PathBuf, String)>,
}

/// Every journal entry whose writer is gone (its lock is free), sorted into
/// those to recover, unreadable ones and refused ones (see [`Found`]).
pub fn interrupted(slipway_dir: &Path) -> Found {
    let mut found = Found::default();
    let Ok(entries) = std::fs::read_dir(dir(slipway_dir)) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let Ok(file) = OpenOptions::new().read(true).write(true).open(&path) else {
            continue;
        };
        // A live operation holds its lock: not ours to touch.
        if file.try_lock().is_err() {
            continue;
        }
        // JSON that is no entry slipway writes (an id that is not an id, an
        // unknown operation) is refused and left; bytes that are not JSON at
        // all are kept aside.
        let json = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
        match json {
            Some(json) => match serde_json::from_value::<Operation>(json) {
                Ok(op) => match op.check() {
                    Ok(()) => found.interrupted.push(Interrupted {
                        op,
                        journal: Journal { path, file },
                    }),
                    Err(why) => found.refused.push((path, why)),
                },
                Err(e) => found.refused.push((path, e.to_string())),
            },
            None => {
                let aside = path.with_extension("json.corrupt");
                if std::fs::rename(&path, &aside).is_ok() {
                    found.unreadable.push(aside);
                }
            }
        }
    }
    found
}
