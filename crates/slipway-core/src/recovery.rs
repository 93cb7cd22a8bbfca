//! The next slipway command after a crash finishes or undoes what the
//! crashed one left half done (see [`crate::journal`]). The CLI calls
//! [`recover`] for the repository a command names; the sidecar calls it
//! when it first opens a repository.

use crate::git::HostRepo;
use crate::journal::{self, Operation};

/// What recovery did, for people.
pub fn recover(host: &HostRepo) -> Vec<String> {
    // A journal in a `.slipway/` that is not slipway's own says nothing
    // slipway may act on.
    if let Err(untrusted) = host.state_trusted() {
        return vec![format!("nothing was recovered: {untrusted}")];
    }
    let slipway_dir = host.slipway_dir();
    let found = journal::interrupted(&slipway_dir);
    let mut notes: Vec<String> = found
        .unreadable
        .into_iter()
        .map(|p| {
            format!(
                "an unreadable journal was kept aside as {} (nothing was done with it)",
                p.display()
            )
        })
        .collect();
    notes.extend(found.refused.into_iter().map(|(path, why)| {
        format!(
            "the journal entry {} was left as it is and nothing was done with it: {why}",
            path.display()
        )
    }));
    for entry in found.interrupted {
        let done = match &entry.op {
            // A ref that did not move changed nothing: no file to put back.
            Operation::Merge {
                target,
                ours,
                new,
                ref_only,
                token,
                writes,
                made,
            } => recover_merge(
                host,
                target,
                ours,
                new,
                *ref_only,
                token.as_deref(),
                writes,
                made,
            ),
            Operation::Create { .. } | Operation::Close { .. } | Operation::Discard { .. } => {
                crate::worktree::recover(host, &entry.op)
            }
            Operation::Import { .. } => recover_import(host, &entry.op),
        };
        match done {
            Ok(note) => {
                notes.extend(note);
                if let Err(e) = entry.journal.finish() {
                    notes.push(e.to_string());
                }
            }
            // The journal stays: the next command tries again.
            Err(e) => notes.push(format!(
                "the journal entry {} was left as it is: {e}",
                entry.journal.path().display()
            )),
        }
    }
    // Folders whose deletion was killed half way are slipway's to finish.
    crate::worktree::trash::finish_leftovers(&slipway_dir);
    notes
}

#[allow(clippy::too_many_arguments)]
fn recover_merge(
    host: &HostRepo,
    target: &str,
    ours: &str,
    new: &str,
    ref_only: bool,
    token: Option<&str>,
    writes: &[crate::git::host_write::PathWrite],
    made: &[String],
) -> Result<Option<String>, String> {
    use crate::git::merge::{Interrupted, Recovered, recover};
    let (Ok(ours), Ok(new)) = (git2::Oid::from_str(ours), git2::Oid::from_str(new)) else {
        return Ok(Some("a merge journal named no commits; ignored".into()));
    };
    if ref_only {
        // Only the ref was to move: nothing to put back but its own lock.
        let notes = token
            .map(|t| crate::git::host_write::settle_token(host.common_dir(), t))
            .unwrap_or_default();
        return Ok((!notes.is_empty()).then(|| notes.join("; ")));
    }
    let merge = Interrupted {
        target,
        ours,
        new,
        token,
        writes,
        made,
    };
    let (recovered, notes) = recover(host, &merge).map_err(|e| e.to_string())?;
    let extra = if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join("; "))
    };
    match recovered {
        Recovered::Finished | Recovered::LeftAlone if notes.is_empty() => Ok(None),
        Recovered::Finished | Recovered::LeftAlone => Ok(Some(format!(
            "an interrupted merge into {target} was settled{extra}"
        ))),
        Recovered::Undone { left } if left.is_empty() => Ok(Some(format!(
            "an interrupted merge into {target} was undone: the host is as it was before it{extra}"
        ))),
        Recovered::Undone { left } => Ok(Some(format!(
            "an interrupted merge into {target} was undone; these files changed since and were left as they are: {}",
            left.join(", ")
        ))),
    }
}

/// Imports what a run that died left in its private git dir: its branch
/// lands like any run's (hashed again, compare-and-swap, or a side branch if
/// the ref moved), the checkout's index follows, the private dir goes.
fn recover_import(host: &HostRepo, op: &Operation) -> Result<Option<String>, String> {
    use crate::git::import::{ImportRequest, copy_objects, land};
    use crate::git::private_dir::PrivateGitDir;
    let Operation::Import {
        run_id,
        refname,
        start,
        sandbox,
        worktree,
        lock_branch,
        keep,
        private_dir: legacy_dir,
        checkout: legacy_checkout,
    } = op
    else {
        return Ok(None);
    };
    // Every path comes from the repository root and an id; an older entry's
    // paths are taken only when they are exactly what its ids derive.
    let (sandbox, worktree) = match (legacy_dir, legacy_checkout) {
        (Some(dir), Some(checkout)) if sandbox.is_none() && worktree.is_none() => {
            legacy_ids(host, run_id, dir, checkout)?
        }
        _ => (sandbox.clone(), worktree.clone()),
    };
    let private_dir = &match &sandbox {
        Some(id) => crate::run::sandboxes::private_base(host, id).join("git"),
        None => crate::run::private_git::run_base(host, run_id).join("git"),
    };
    let checkout = &match &worktree {
        Some(id) => crate::worktree::worktrees_dir(host).join(id.as_str()),
        None => host.root().to_path_buf(),
    };
    // A host run may have died while the worktree's `.git` pointed at its
    // private dir: the worktree is the user's again first.
    if worktree.is_some()
        && sandbox.is_none()
        && checkout.join(".git").is_file()
        && let Err(e) =
            crate::run::private_git::restore_worktree_git_file(checkout, host.common_dir())
    {
        return Err(format!(
            "the .git file of {} could not be put back: {e}",
            checkout.display()
        ));
    }
    // An agent of the run that still lives holds the branch lock: later.
    let lock = crate::worktree::lock_branch(host, lock_branch).map_err(|e| {
        format!("the work of run {run_id} is imported once nothing of it runs any more: {e}")
    })?;
    // Locks and scratch files the run's import held when it died go first.
    let settled = crate::git::host_write::settle_token(host.common_dir(), run_id);
    let start = start.as_deref().and_then(|s| git2::Oid::from_str(s).ok());
    let dir = PrivateGitDir::open(private_dir, refname);
    let tip = match dir.tip() {
        Ok(tip) => tip,
        Err(_) if !private_dir.exists() => None,
        Err(e) => return Err(e.to_string()),
    };
    let mut note = (!settled.is_empty()).then(|| settled.join("; "));
    if let Some(tip) = tip.filter(|t| Some(*t) != start) {
        let request = ImportRequest {
            refname,
            tip,
            start,
            run_id,
        };
        let objects = copy_objects(host.git(), &dir.objects(), tip).map_err(|e| {
            format!(
                "the work of run {run_id} stays in {}: {e}",
                private_dir.display()
            )
        })?;
        let landed = land(host.git(), &request, objects).map_err(|e| e.to_string())?;
        let mut warnings = Vec::new();
        // The ref may have moved before the crash, the index not yet: it
        // follows whenever the ref is at the run's tip now.
        let at_tip = host
            .git()
            .find_reference(refname)
            .ok()
            .and_then(|r| r.target())
            == Some(tip);
        if at_tip && checkout.is_dir() {
            crate::run::private_git::update_checkout_index(
                checkout,
                refname,
                start,
                tip,
                Some(private_dir),
                run_id,
                &mut warnings,
            );
        }
        let mut text = match &landed.side_branch {
            Some(side) => format!(
                "run {run_id} ended without bringing its work in; its commits are on '{}' ({})",
                side.name, side.reason
            ),
            None => format!(
                "run {run_id} ended without bringing its work in; its commits were brought into {refname}"
            ),
        };
        for w in warnings {
            text.push_str("; ");
            text.push_str(&w);
        }
        note = Some(text);
    }
    if !keep
        && sandbox.is_none()
        && let Some(base) = private_dir.parent()
        && let Err(e) = std::fs::remove_dir_all(base)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!("cannot remove {}: {e}", base.display());
    }
    drop(lock);
    Ok(note)
}

/// The ids an entry of an older slipway meant by its paths: its run's own
/// private dir or a sandbox's, and the host checkout or a worktree. Any
/// other path is refused.
fn legacy_ids(
    host: &HostRepo,
    run_id: &crate::ids::RunId,
    dir: &std::path::Path,
    checkout: &std::path::Path,
) -> Result<
    (
        Option<crate::ids::SandboxId>,
        Option<crate::ids::WorktreeId>,
    ),
    String,
> {
    let refused = |what: &std::path::Path| {
        format!(
            "the journal of run {run_id} names {}, which is not where slipway keeps its state; nothing was done",
            what.display()
        )
    };
    let sandbox = if dir == crate::run::private_git::run_base(host, run_id).join("git") {
        None
    } else {
        let id = dir
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .and_then(|n| crate::ids::SandboxId::parse(n).ok())
            .filter(|id| crate::run::sandboxes::private_base(host, id).join("git") == dir)
            .ok_or_else(|| refused(dir))?;
        Some(id)
    };
    let worktree = if checkout == host.root() {
        None
    } else {
        let id = checkout
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| crate::ids::WorktreeId::parse(n).ok())
            .filter(|id| crate::worktree::worktrees_dir(host).join(id.as_str()) == checkout)
            .ok_or_else(|| refused(checkout))?;
        Some(id)
    };
    Ok((sandbox, worktree))
}
