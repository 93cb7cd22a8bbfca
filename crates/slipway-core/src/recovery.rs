//! The next slipway command after a crash finishes or undoes what the
//! crashed one left half done (see [`crate::journal`]). The CLI calls
//! [`recover`] for the repository a command names; the sidecar calls it
//! when it first opens a repository.

use crate::git::HostRepo;
use crate::journal::{self, Operation};

/// What recovery did, for people.
pub fn recover(host: &HostRepo) -> Vec<String> {
    let slipway_dir = host.slipway_dir();
    let (interrupted, unreadable) = journal::interrupted(&slipway_dir);
    let mut notes: Vec<String> = unreadable
        .into_iter()
        .map(|p| {
            format!(
                "an unreadable journal was kept aside as {} (nothing was done with it)",
                p.display()
            )
        })
        .collect();
    for entry in interrupted {
        let done = match &entry.op {
            Operation::Merge { target, ours, new } => recover_merge(host, target, ours, new),
            Operation::Create { .. } | Operation::Close { .. } => {
                crate::worktree::recover(host, &entry.op)
            }
        };
        match done {
            Ok(note) => {
                notes.extend(note);
                if let Err(e) = entry.journal.finish() {
                    notes.push(e.to_string());
                }
            }
            // The journal stays: the next command tries again.
            Err(e) => notes.push(e),
        }
    }
    notes
}

fn recover_merge(
    host: &HostRepo,
    target: &str,
    ours: &str,
    new: &str,
) -> Result<Option<String>, String> {
    use crate::git::merge::{Recovered, recover};
    let (Ok(ours), Ok(new)) = (git2::Oid::from_str(ours), git2::Oid::from_str(new)) else {
        return Ok(Some("a merge journal named no commits; ignored".into()));
    };
    match recover(host.git(), target, ours, new).map_err(|e| e.to_string())? {
        Recovered::Finished | Recovered::LeftAlone => Ok(None),
        Recovered::Undone { left } if left.is_empty() => Ok(Some(format!(
            "an interrupted merge into {target} was undone: the host is as it was before it"
        ))),
        Recovered::Undone { left } => Ok(Some(format!(
            "an interrupted merge into {target} was undone; these files changed since and were left as they are: {}",
            left.join(", ")
        ))),
    }
}
