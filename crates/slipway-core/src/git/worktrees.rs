//! libgit2's side of slipway's worktrees: registrations, the branches they
//! check out, the safe fast-forward, and the counts `list` shows. The
//! `worktree` module decides what to do; this one only does it in git.

use std::path::{Path, PathBuf};

use git2::{BranchType, Oid, Repository, build::CheckoutBuilder};

use super::merge::is_contained_elsewhere;
use super::{HostRepo, changed_paths, commits_between};

/// A worktree libgit2 has registered.
#[derive(Debug, Clone)]
pub struct Registered {
    /// Its registration name (slipway uses the directory name).
    pub id: String,
    /// Where its files are.
    pub path: PathBuf,
    /// The local branch its HEAD is on, if any.
    pub branch: Option<String>,
}

/// Every worktree registered in the repository, with the branch each is on.
pub fn registered(repo: &Repository) -> Result<Vec<Registered>, git2::Error> {
    let mut out = Vec::new();
    for name in repo.worktrees()?.iter().filter_map(|n| n.ok().flatten()) {
        let Ok(wt) = repo.find_worktree(name) else {
            continue;
        };
        let branch = Repository::open_from_worktree(&wt)
            .ok()
            .and_then(|r| head_branch(&r));
        out.push(Registered {
            id: name.to_owned(),
            path: wt.path().to_path_buf(),
            branch,
        });
    }
    Ok(out)
}

/// Whether a worktree is registered under `id`.
pub fn is_registered(repo: &Repository, id: &str) -> bool {
    repo.find_worktree(id).is_ok()
}

/// Registers worktree `id` at `path` and checks out local branch `branch`
/// there. Each file checked out is a crash point of the create (see
/// [`crate::testhook`]); git2 gives no way to watch the checkout of a new
/// worktree, so libgit2 is called directly.
pub fn add(repo: &Repository, id: &str, path: &Path, branch: &str) -> Result<(), git2::Error> {
    use git2::Binding;
    use libgit2_sys as raw;
    use std::os::unix::ffi::OsStrExt;

    extern "C" fn each_file(
        _path: *const std::ffi::c_char,
        _done: libc::size_t,
        _total: libc::size_t,
        _payload: *mut std::ffi::c_void,
    ) {
        crate::testhook::point("create");
    }

    let reference = repo.find_reference(&format!("refs/heads/{branch}"))?;
    let name = std::ffi::CString::new(id)?;
    let dir = std::ffi::CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: the options are initialised by libgit2 before use; `reference`,
    // `name` and `dir` outlive the call; the worktree handle is freed once.
    unsafe {
        let mut opts: raw::git_worktree_add_options = std::mem::zeroed();
        let rc =
            raw::git_worktree_add_options_init(&mut opts, raw::GIT_WORKTREE_ADD_OPTIONS_VERSION);
        if rc < 0 {
            return Err(git2::Error::last_error(rc));
        }
        opts.reference = reference.raw();
        opts.checkout_options.progress_cb = Some(each_file);
        let mut out: *mut raw::git_worktree = std::ptr::null_mut();
        let rc = raw::git_worktree_add(&mut out, repo.raw(), name.as_ptr(), dir.as_ptr(), &opts);
        if rc < 0 {
            return Err(git2::Error::last_error(rc));
        }
        raw::git_worktree_free(out);
    }
    Ok(())
}

/// Drops the registration `id` (its admin dir under the common git dir,
/// found by name). Its folder is never touched here: libgit2 would take that
/// path from the admin dir's `gitdir` file, which slipway does not trust
/// (see `worktree::removal`). Nothing happens when `id` is not registered.
pub fn unregister(repo: &Repository, id: &str) -> Result<(), git2::Error> {
    let Ok(wt) = repo.find_worktree(id) else {
        return Ok(());
    };
    let mut opts = git2::WorktreePruneOptions::new();
    opts.valid(true).locked(true).working_tree(false);
    wt.prune(Some(&mut opts))
}

/// Why worktree `id` is locked (`git worktree lock`), when it is: `Some("")`
/// for a lock without a reason.
pub fn lock_reason(repo: &Repository, id: &str) -> Option<String> {
    let wt = repo.find_worktree(id).ok()?;
    match wt.is_locked().ok()? {
        git2::WorktreeLockStatus::Locked(reason) => Some(reason.unwrap_or_default()),
        git2::WorktreeLockStatus::Unlocked => None,
    }
}

/// The commit a checkout's HEAD holds when HEAD is detached and no branch,
/// remote-tracking ref or tag contains it (closing would leave it on no ref).
pub fn detached_only_commit(path: &Path) -> Option<Oid> {
    let repo = Repository::open(path).ok()?;
    if !repo.head_detached().ok()? {
        return None;
    }
    let head = repo.head().ok()?.peel_to_commit().ok()?.id();
    let refs = repo.references().ok()?;
    for r in refs.flatten() {
        let Ok(name) = r.name() else { continue };
        if !(name.starts_with("refs/heads/")
            || name.starts_with("refs/remotes/")
            || name.starts_with("refs/tags/")
            || name.starts_with("refs/slipway/kept/"))
        {
            continue;
        }
        let Some(tip) = r.peel_to_commit().ok().map(|c| c.id()) else {
            continue;
        };
        if tip == head || repo.graph_descendant_of(tip, head).unwrap_or(false) {
            return None;
        }
    }
    Some(head)
}

/// Keeps `commit` reachable as `refs/slipway/kept/<id>`; returns the ref.
pub fn keep_commit(repo: &Repository, id: &str, commit: Oid) -> Result<String, git2::Error> {
    let name = format!("refs/slipway/kept/{id}");
    repo.reference(
        &name,
        commit,
        true,
        "slipway: commit of a closed worktree's detached HEAD",
    )?;
    Ok(name)
}

/// Where local branch `branch` is checked out other than in worktree
/// `own_id`: `(true, host root)` for the host checkout, `(false, path)` for
/// another worktree.
pub fn checked_out_at(
    repo: &Repository,
    host_root: &Path,
    branch: &str,
    own_id: &str,
) -> Result<Option<(bool, PathBuf)>, git2::Error> {
    if head_branch(repo).as_deref() == Some(branch) {
        return Ok(Some((true, host_root.to_path_buf())));
    }
    Ok(registered(repo)?
        .into_iter()
        .find(|wt| wt.id != own_id && wt.branch.as_deref() == Some(branch))
        .map(|wt| (false, wt.path)))
}

/// What the host checkout or another worktree is in the middle of on local
/// branch `branch` (a rebase or a bisect started from it), and where: git
/// refuses to check such a branch out elsewhere, and so does slipway.
pub fn busy_with(
    repo: &Repository,
    host_root: &Path,
    branch: &str,
) -> Result<Option<(&'static str, PathBuf)>, git2::Error> {
    let full = format!("refs/heads/{branch}");
    let mut places = vec![(repo.path().to_path_buf(), host_root.to_path_buf())];
    for name in repo.worktrees()?.iter().filter_map(|n| n.ok().flatten()) {
        if let Ok(wt) = repo.find_worktree(name) {
            places.push((
                repo.commondir().join("worktrees").join(name),
                wt.path().to_path_buf(),
            ));
        }
    }
    let says =
        |file: PathBuf, value: &str| std::fs::read_to_string(file).is_ok_and(|t| t.trim() == value);
    for (git_dir, path) in places {
        for state in ["rebase-merge", "rebase-apply"] {
            if says(git_dir.join(state).join("head-name"), &full) {
                return Ok(Some(("being rebased", path)));
            }
        }
        if says(git_dir.join("BISECT_START"), branch) {
            return Ok(Some(("being bisected", path)));
        }
    }
    Ok(None)
}

/// The local branch a checkout's HEAD is on (short name), if any.
pub fn head_branch(repo: &Repository) -> Option<String> {
    let head = repo.find_reference("HEAD").ok()?;
    let target = head.symbolic_target().ok().flatten()?;
    target.strip_prefix("refs/heads/").map(str::to_owned)
}

/// The commit at the tip of local branch `branch`.
pub fn branch_tip(repo: &Repository, branch: &str) -> Option<Oid> {
    repo.find_reference(&format!("refs/heads/{branch}"))
        .and_then(|r| r.peel_to_commit())
        .map(|c| c.id())
        .ok()
}

/// Creates local branch `branch` at `at`; when `track` names a
/// remote-tracking ref (`refs/remotes/origin/x`) the branch tracks it, like
/// `git branch --track`.
pub fn create_branch(
    repo: &Repository,
    branch: &str,
    at: Oid,
    track: Option<&str>,
) -> Result<(), git2::Error> {
    let commit = repo.find_commit(at)?;
    let mut created = repo.branch(branch, &commit, false)?;
    if let Some(upstream) = track.and_then(|t| t.strip_prefix("refs/remotes/")) {
        // A branch that cannot track is still a good branch.
        let _ = created.set_upstream(Some(upstream));
    }
    Ok(())
}

/// Deletes local branch `branch` if it exists.
pub fn delete_branch(repo: &Repository, branch: &str) -> Result<(), git2::Error> {
    match repo.find_branch(branch, BranchType::Local) {
        Ok(mut b) => b.delete(),
        Err(_) => Ok(()),
    }
}

/// The newest commit both `a` and `b` contain, if they share history.
pub fn merge_base(repo: &Repository, a: Oid, b: Oid) -> Option<Oid> {
    repo.merge_base(a, b).ok()
}

/// Uncommitted paths of the checkout at `path` (see [`changed_paths`]).
pub fn changed_paths_at(path: &Path) -> Result<Vec<String>, git2::Error> {
    changed_paths(&Repository::open(path)?)
}

/// The checkout at `path`: its uncommitted paths (see [`changed_paths`]) and
/// the commits on local branch `branch` that `base` does not have (0 when
/// either is unknown), read through one handle.
pub fn status_at(
    path: &Path,
    branch: &str,
    base: &str,
) -> Result<(Vec<String>, usize), git2::Error> {
    let repo = Repository::open(path)?;
    let ahead = match (branch_tip(&repo, branch), Oid::from_str(base)) {
        (Some(tip), Ok(base)) => repo
            .graph_ahead_behind(tip, base)
            .map(|(ahead, _)| ahead)
            .unwrap_or(0),
        _ => 0,
    };
    Ok((changed_paths(&repo)?, ahead))
}

/// What re-using a worktree found about its branch and the branch's upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FastForward {
    /// HEAD is not on the branch (detached or switched): left alone.
    NotOnBranch,
    /// Uncommitted changes: left alone.
    Dirty,
    /// The branch has no upstream, or the upstream is gone.
    NoUpstream,
    /// Already at the upstream.
    UpToDate,
    /// Moved forward to the upstream (short name).
    Moved { upstream: String },
    /// Ahead of the upstream: nothing to do.
    Ahead { upstream: String },
    /// Branch and upstream have diverged: left alone.
    Diverged { upstream: String },
}

/// Fast-forwards branch `branch` in the checkout at `path` to `upstream` (a
/// full ref) when that is safe: HEAD on the branch, no uncommitted changes,
/// and the upstream strictly ahead. The checkout refuses to overwrite anything.
pub fn fast_forward(
    path: &Path,
    branch: &str,
    upstream: Option<&str>,
) -> Result<FastForward, git2::Error> {
    let repo = Repository::open(path)?;
    if head_branch(&repo).as_deref() != Some(branch) {
        return Ok(FastForward::NotOnBranch);
    }
    if !changed_paths(&repo)?.is_empty() {
        return Ok(FastForward::Dirty);
    }
    let Some(upstream) = upstream else {
        return Ok(FastForward::NoUpstream);
    };
    let short = super::policy::short_ref(upstream).to_owned();
    let full = format!("refs/heads/{branch}");
    let tip = repo.find_reference(&full)?.peel_to_commit()?;
    let Ok(up) = repo
        .find_reference(upstream)
        .and_then(|r| r.peel_to_commit())
    else {
        return Ok(FastForward::NoUpstream);
    };
    if up.id() == tip.id() {
        return Ok(FastForward::UpToDate);
    }
    if repo.graph_descendant_of(up.id(), tip.id())? {
        let mut checkout = CheckoutBuilder::new();
        checkout.safe();
        repo.checkout_tree(up.as_object(), Some(&mut checkout))?;
        repo.reference_matching(
            &full,
            up.id(),
            true,
            tip.id(),
            "slipway: fast-forward to upstream",
        )?;
        return Ok(FastForward::Moved { upstream: short });
    }
    if repo.graph_descendant_of(tip.id(), up.id())? {
        return Ok(FastForward::Ahead { upstream: short });
    }
    Ok(FastForward::Diverged { upstream: short })
}

/// Deletes a temporary branch unless it holds commits that are on no other
/// branch; returns (deleted, why kept).
pub fn delete_temp_branch_if_merged(
    host: &HostRepo,
    branch: &str,
    base_commit: &str,
) -> Result<(bool, Option<String>), git2::Error> {
    let repo = host.git();
    let full = format!("refs/heads/{branch}");
    let Ok(mut reference) = repo.find_reference(&full) else {
        return Ok((false, None));
    };
    let tip = reference.peel_to_commit()?.id();
    let base = Oid::from_str(base_commit).ok();
    let in_base =
        base.is_some_and(|b| b == tip || repo.graph_descendant_of(b, tip).unwrap_or(false));
    let in_head = host
        .head_commit()
        .is_some_and(|h| h == tip || repo.graph_descendant_of(h, tip).unwrap_or(false));
    if in_base || in_head || is_contained_elsewhere(repo, tip, &full)? {
        reference.delete()?;
        return Ok((true, None));
    }
    let unique = commits_between(repo, base, tip)
        .map(|c| c.len())
        .unwrap_or(0);
    Ok((
        false,
        Some(format!(
            "branch '{branch}' was kept: it holds {} on no other branch; review it, then land or discard it",
            crate::util::count(unique, "commit", "commits")
        )),
    ))
}
