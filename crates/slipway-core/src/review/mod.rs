//! Reviewing what a worktree holds and bringing it home: its diff against
//! its base, landing its branch into a host branch (merge, squash or
//! rebase, with the safety of merge-to-head), and discarding it.

pub mod diff;
pub mod discard;
pub mod land;

use serde_json::{Map, Value, json};

use crate::error::{ErrorKind, Failure, Hint};
use crate::git::HostRepo;
use crate::worktree::lock::LockError;
use crate::worktree::{self, WorktreeRecord};

/// No worktree matches a selector; shared by every review operation.
#[derive(Debug, thiserror::Error)]
#[error("no slipway worktree matches '{selector}'; known: {}", if known.is_empty() { "(none)".to_owned() } else { known.join(", ") })]
pub struct NoSuchWorktree {
    /// What was asked for.
    pub selector: String,
    /// The worktrees there are (`id (branch)`).
    pub known: Vec<String>,
}

impl Failure for NoSuchWorktree {
    fn kind(&self) -> ErrorKind {
        ErrorKind::WorktreeNotFound
    }

    fn data(&self) -> Map<String, Value> {
        let mut data = Map::new();
        data.insert("known".into(), json!(self.known));
        data
    }

    fn hints(&self) -> Vec<Hint> {
        vec![Hint::ListWorktrees]
    }
}

/// The record a selector names.
fn find_record(host: &HostRepo, selector: &str) -> Result<WorktreeRecord, NoSuchWorktree> {
    worktree::find(host, selector).ok_or_else(|| NoSuchWorktree {
        selector: selector.to_owned(),
        known: WorktreeRecord::load_all(&host.slipway_dir())
            .into_iter()
            .map(|r| format!("{} ({})", r.id, r.branch))
            .collect(),
    })
}

/// The kind of a branch lock that could not be taken.
fn lock_kind(e: &LockError) -> ErrorKind {
    match e {
        LockError::InUse { .. } => ErrorKind::BranchInUse,
        LockError::Io { .. } => ErrorKind::Io,
    }
}
