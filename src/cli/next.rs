//! What to do next, in the command line's words: each core [`Action`] as the
//! `slipway` command that does it, and the exit codes of outcomes that did
//! nothing.

use std::fmt::Write;
use std::process::ExitCode;

use slipway_core::actions::{Action, ActionKind};
use slipway_core::error::ErrorKind;

/// `worktree close` kept the worktree (uncommitted changes, a lock, a folder
/// slipway did not make).
pub const PRESERVED: u8 = 3;
/// `discard` removed nothing: without `--force` something would have been lost.
pub const NOT_DISCARDED: u8 = 4;
/// A land (or another change to the host) was refused and nothing changed:
/// a conflict, files in the way, a busy or switched host, a branch in use.
pub const REFUSED: u8 = 5;

/// A run ended asking the user (`needsInput`): done, but not finished
/// until `slipway reply` answers it.
pub const NEEDS_INPUT: u8 = 6;

/// The exit code of an error of `kind`.
pub fn error_code(kind: ErrorKind) -> ExitCode {
    match kind {
        ErrorKind::HostDirty
        | ErrorKind::MergeConflict
        | ErrorKind::MergeTimeout
        | ErrorKind::WorktreeDirty
        | ErrorKind::HostSwitched
        | ErrorKind::HostRepoBusy
        | ErrorKind::BranchInUse
        | ErrorKind::BranchCheckedOut => ExitCode::from(REFUSED),
        _ => ExitCode::FAILURE,
    }
}

/// One action as the command that does it.
pub fn command(action: &Action) -> String {
    let target = action.worktree.as_deref().unwrap_or("WORKTREE");
    let force = if action.force { " --force" } else { "" };
    match action.kind {
        ActionKind::Review => format!("slipway diff {target}"),
        ActionKind::Land => format!("slipway land {target} --how merge|squash|rebase"),
        ActionKind::Discard => format!("slipway discard {target}{force}"),
        ActionKind::Close => format!("slipway worktree close {target}{force}"),
        ActionKind::Reply => format!(
            "slipway reply {} \"…\"",
            action.run_id.as_deref().unwrap_or("RUN")
        ),
        ActionKind::Trust => "slipway trust".to_owned(),
    }
}

/// What each action does, for the line beside its command.
fn purpose(action: &Action) -> &'static str {
    match (action.kind, action.force) {
        (ActionKind::Review, _) => "see what it holds",
        (ActionKind::Land, _) => "bring it into your branch",
        (ActionKind::Discard, true) => "throw it away: its work is lost",
        (ActionKind::Discard, false) => "remove the worktree and its branch",
        (ActionKind::Close, true) => "remove the worktree: its uncommitted files are lost",
        (ActionKind::Close, false) => "remove the worktree, keeping its branch",
        (ActionKind::Reply, _) => "answer the agent",
        (ActionKind::Trust, _) => "approve the repository's slipway.toml",
    }
}

/// The actions as indented lines, `next:` then `or:`; empty when there are none.
pub fn lines(actions: &[Action]) -> String {
    let mut out = String::new();
    let width = actions.iter().map(|a| command(a).len()).max().unwrap_or(0);
    for (i, action) in actions.iter().enumerate() {
        let lead = if i == 0 { "next:" } else { "  or:" };
        let _ = writeln!(
            out,
            "  {lead} {:width$}  # {}",
            command(action),
            purpose(action)
        );
    }
    out
}
