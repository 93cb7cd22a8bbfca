//! Reviewing what a worktree holds and bringing it home: its diff against
//! its base, landing its branch into a host branch (merge, squash or
//! rebase, with the safety of merge-to-head), and discarding it.

pub mod diff;

use crate::git::HostRepo;
use crate::worktree::{self, WorktreeRecord};

/// The record a selector names, or every known worktree for the error.
fn find_record(host: &HostRepo, selector: &str) -> Result<WorktreeRecord, Vec<String>> {
    worktree::find(host, selector).ok_or_else(|| {
        WorktreeRecord::load_all(&host.slipway_dir())
            .into_iter()
            .map(|r| format!("{} ({})", r.id, r.branch))
            .collect()
    })
}

/// The known worktrees, for a "no worktree matches" message.
fn known_list(known: &[String]) -> String {
    if known.is_empty() {
        "(none)".to_owned()
    } else {
        known.join(", ")
    }
}
