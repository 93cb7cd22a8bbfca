//! Worktree records: one JSON file per worktree under `.slipway/state/`,
//! written atomically so a crash leaves the old record or the new one.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::util::write_replacing;

/// Where a worktree's agent commits land.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorktreeStrategy {
    /// A named branch, kept.
    Branch,
    /// A temporary branch merged back into the host's current branch.
    MergeToHead,
}

impl WorktreeStrategy {
    /// The name files and the protocol use.
    pub fn name(self) -> &'static str {
        match self {
            WorktreeStrategy::Branch => "branch",
            WorktreeStrategy::MergeToHead => "merge-to-head",
        }
    }
}

/// The life state of a worktree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorktreeState {
    /// Created, nobody running in it.
    Active,
    /// A run is in progress.
    Running,
    /// Kept on purpose (uncommitted changes); `why` says why.
    Preserved,
}

impl WorktreeState {
    /// The name files and the protocol use.
    pub fn name(self) -> &'static str {
        match self {
            WorktreeState::Active => "active",
            WorktreeState::Running => "running",
            WorktreeState::Preserved => "preserved",
        }
    }
}

/// What slipway knows of one worktree.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WorktreeRecord {
    /// Stable id; also the directory and libgit2 worktree name.
    pub id: String,
    /// Absolute path of the worktree.
    pub path: PathBuf,
    /// The branch checked out in it.
    pub branch: String,
    /// Where its commits land.
    pub strategy: WorktreeStrategy,
    /// The source policy it was created with (`host_head`, `named:origin/x`, …).
    pub source_policy: String,
    /// The commit it started from.
    pub base_commit: String,
    /// The ref the base commit was read from, when there was one.
    pub source_ref: Option<String>,
    /// Where its work lands: the host branch for merge-to-head, the branch itself otherwise.
    pub target_branch: Option<String>,
    /// Creation time, seconds since the epoch.
    pub created: u64,
    /// Life state.
    pub state: WorktreeState,
    /// Why it is in that state, when that needs saying.
    pub why: Option<String>,
    /// The run in progress or last run on it.
    pub run_id: Option<crate::ids::RunId>,
    /// The pid of the process running in it, while `running`.
    pub run_pid: Option<u32>,
    /// The pid of the process creating it, until the worktree is complete; a
    /// status read meanwhile reports it as being created, not as missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creating_pid: Option<u32>,
    /// Fields written by a newer slipway survive a rewrite.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// Reading or writing a record failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// Filesystem error.
    #[error("cannot write worktree record {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The record is there but is not a record (truncated, garbage): it is
    /// never rewritten, only reported.
    #[error("the worktree record {} cannot be read ({why}); it was left as it is: look at it, then move it away to let slipway rebuild it from git", path.display())]
    Corrupt { path: PathBuf, why: String },
}

impl RecordError {
    /// Stable machine-readable kind.
    pub fn kind(&self) -> crate::error::ErrorKind {
        match self {
            RecordError::Io { .. } => crate::error::ErrorKind::Io,
            RecordError::Corrupt { .. } => crate::error::ErrorKind::CorruptRecord,
        }
    }
}

/// The folder holding the records.
pub fn state_dir(slipway_dir: &Path) -> PathBuf {
    slipway_dir.join("state")
}

fn record_path(slipway_dir: &Path, id: &str) -> PathBuf {
    state_dir(slipway_dir).join(format!("{id}.json"))
}

impl WorktreeRecord {
    /// Writes the record atomically.
    pub fn save(&self, slipway_dir: &Path) -> Result<(), RecordError> {
        self.write(slipway_dir, true)
    }

    fn write(&self, slipway_dir: &Path, durable: bool) -> Result<(), RecordError> {
        let path = record_path(slipway_dir, &self.id);
        let mut text = serde_json::to_vec_pretty(self).expect("a record always serialises");
        text.push(b'\n');
        write_replacing(&path, &text, durable).map_err(|source| RecordError::Io { path, source })
    }

    /// Replaces the record atomically without waiting for the disk: for the
    /// last step of a create, whose files are not synced either (as git
    /// syncs none), so that the create does not wait for all of them to reach
    /// the disk. A power cut may lose the step as a whole; the create's
    /// journal, synced before anything was made, then undoes the create.
    pub fn save_unsynced(&self, slipway_dir: &Path) -> Result<(), RecordError> {
        self.write(slipway_dir, false)
    }

    /// Removes the record (a missing one is not an error).
    pub fn delete(slipway_dir: &Path, id: &str) -> Result<(), RecordError> {
        let path = record_path(slipway_dir, id);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(RecordError::Io { path, source }),
        }
    }

    /// Loads one record by id (`None` when it is missing or cannot be read).
    pub fn load(slipway_dir: &Path, id: &str) -> Option<WorktreeRecord> {
        Self::read(slipway_dir, id).ok().flatten()
    }

    /// Reads one record by id: `Ok(None)` when there is none, an error when
    /// the file is there but is not a record.
    pub fn read(slipway_dir: &Path, id: &str) -> Result<Option<WorktreeRecord>, RecordError> {
        let path = record_path(slipway_dir, id);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(RecordError::Io { path, source }),
        };
        let record: WorktreeRecord =
            serde_json::from_slice(&bytes).map_err(|e| RecordError::Corrupt {
                path: path.clone(),
                why: e.to_string(),
            })?;
        record
            .check(slipway_dir, id)
            .map_err(|why| RecordError::Corrupt { path, why })?;
        Ok(Some(record))
    }

    /// What a record read from disk must say to be acted on: the id of its
    /// file, the id slipway derives from its branch (a branch git accepts),
    /// and the folder slipway makes for that id. A record that says anything
    /// else was not written by slipway (DESIGN §2 "Git safety" 5).
    fn check(&self, slipway_dir: &Path, file_id: &str) -> Result<(), String> {
        crate::git::refname::validate_branch_name(&self.branch).map_err(|e| e.to_string())?;
        let id = crate::ids::WorktreeId::parse(&self.id).map_err(|e| e.to_string())?;
        if id != file_id || id != crate::ids::WorktreeId::of_branch(&self.branch) {
            return Err(format!(
                "it names worktree '{}' of branch '{}', which is not the worktree of its file '{file_id}'",
                self.id, self.branch
            ));
        }
        let root = slipway_dir.parent().unwrap_or(slipway_dir);
        let expected = super::root::worktrees_dir_for(root).join(id.as_str());
        if self.path != expected {
            return Err(format!(
                "it names {} as the worktree's folder, which is not where slipway puts it ({})",
                self.path.display(),
                expected.display()
            ));
        }
        Ok(())
    }

    /// The ids of records that are there but cannot be read, with why.
    pub fn corrupt(slipway_dir: &Path) -> Vec<(String, RecordError)> {
        RecordDir::read(slipway_dir).corrupt
    }

    /// Loads every readable record, sorted by creation time then id.
    pub fn load_all(slipway_dir: &Path) -> Vec<WorktreeRecord> {
        RecordDir::read(slipway_dir).records
    }
}

/// Every record file of a state dir, each read and checked once: a listing
/// that needs the records, the corrupt ones and which ids have a file reads
/// the folder one time instead of once for each question.
#[derive(Debug, Default)]
pub struct RecordDir {
    /// The readable records, sorted by creation time then id.
    pub records: Vec<WorktreeRecord>,
    /// The ids of records that are there but corrupt, with why, sorted by id.
    pub corrupt: Vec<(String, RecordError)>,
    /// The id of every record file there, readable or not.
    pub ids: std::collections::HashSet<String>,
}

impl RecordDir {
    /// Reads every record file under `slipway_dir` (none when the folder is missing).
    pub fn read(slipway_dir: &Path) -> RecordDir {
        let mut dir = RecordDir::default();
        let Ok(entries) = std::fs::read_dir(state_dir(slipway_dir)) else {
            return dir;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(id) = name
                .to_str()
                .and_then(|n| n.strip_suffix(".json"))
                .filter(|id| !id.starts_with('.'))
            else {
                continue;
            };
            match WorktreeRecord::read(slipway_dir, id) {
                Ok(Some(record)) => dir.records.push(record),
                Ok(None) => continue,
                Err(e @ RecordError::Corrupt { .. }) => dir.corrupt.push((id.to_owned(), e)),
                // Unreadable for now (permissions, I/O): neither listed nor rewritten.
                Err(_) => {}
            }
            dir.ids.insert(id.to_owned());
        }
        dir.records
            .sort_by(|a, b| a.created.cmp(&b.created).then(a.id.cmp(&b.id)));
        dir.corrupt.sort_by(|a, b| a.0.cmp(&b.0));
        dir
    }
}
