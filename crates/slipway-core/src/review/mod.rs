//! Reviewing what a worktree holds and bringing it home: its diff against
//! its base, landing its branch into a host branch (merge, squash or
//! rebase, with the safety of merge-to-head), and discarding it.

pub mod diff;
pub mod discard;
pub mod land;
pub mod sensitive;

use serde_json::{Map, Value, json};

use crate::error::{ErrorKind, Failure, Hint};
use crate::git::HostRepo;
use crate::worktree::lock::LockError;
use crate::worktree::{self, WorktreeRecord};

/// No usable worktree matches a selector; shared by every review operation.
#[derive(Debug, thiserror::Error)]
pub enum NoSuchWorktree {
    /// Nothing matches.
    #[error("no slipway worktree matches '{selector}'; known: {}", if known.is_empty() { "(none)".to_owned() } else { known.join(", ") })]
    Unknown {
        /// What was asked for.
        selector: String,
        /// The worktrees there are (`id (branch)`).
        known: Vec<String>,
    },
    /// The worktree's record cannot be read (it is left for the user to see).
    #[error(transparent)]
    Unreadable(#[from] worktree::RecordError),
}

impl Failure for NoSuchWorktree {
    fn kind(&self) -> ErrorKind {
        match self {
            NoSuchWorktree::Unknown { .. } => ErrorKind::WorktreeNotFound,
            NoSuchWorktree::Unreadable(e) => e.kind(),
        }
    }

    fn data(&self) -> Map<String, Value> {
        let mut data = Map::new();
        if let NoSuchWorktree::Unknown { known, .. } = self {
            data.insert("known".into(), json!(known));
        }
        data
    }

    fn hints(&self) -> Vec<Hint> {
        match self {
            NoSuchWorktree::Unknown { .. } => vec![Hint::ListWorktrees],
            NoSuchWorktree::Unreadable(_) => Vec::new(),
        }
    }
}

/// The record a selector names; an unreadable one is its own error.
fn find_record(host: &HostRepo, selector: &str) -> Result<WorktreeRecord, NoSuchWorktree> {
    worktree::find_readable(host, selector)?.ok_or_else(|| NoSuchWorktree::Unknown {
        selector: selector.to_owned(),
        known: WorktreeRecord::load_all(&host.slipway_dir())
            .into_iter()
            .map(|r| format!("{} ({})", r.id, r.branch))
            .collect(),
    })
}

/// The kind of a branch lock that could not be taken.
fn lock_kind(e: &LockError) -> ErrorKind {
    e.kind()
}
