//! libgit2's side of slipway's worktrees: registrations, the branches they
//! check out, the safe fast-forward, and the counts `list` shows. The
//! `worktree` module decides what to do; this one only does it in git.

use std::os::unix::ffi::OsStrExt;
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

/// Every worktree registered in the repository, with the branch each is on,
/// read from the admin dirs' `gitdir` and `HEAD` files (see [`admin_dirs`]).
pub fn registered(repo: &Repository) -> Result<Vec<Registered>, git2::Error> {
    Ok(admin_dirs(repo)
        .into_iter()
        .filter(|(_, admin)| admin.join("gitdir").is_file())
        .map(|(id, admin)| {
            let head = std::fs::read_to_string(admin.join("HEAD")).unwrap_or_default();
            let branch = head
                .trim_end()
                .strip_prefix("ref: refs/heads/")
                .map(str::to_owned);
            Registered {
                id,
                path: worktree_folder(&admin),
                branch,
            }
        })
        .collect())
}

/// Whether a worktree is registered under `id`.
pub fn is_registered(repo: &Repository, id: &str) -> bool {
    repo.find_worktree(id).is_ok()
}

/// Why a worktree could not be registered and checked out.
#[derive(Debug, thiserror::Error)]
pub enum AddError {
    /// libgit2 failed.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
    /// A file of the registration or the checkout could not be written.
    #[error("cannot write the worktree: {0}")]
    Io(#[from] std::io::Error),
}

/// Registers worktree `id` at `path` (which must not exist) and checks out
/// local branch `branch` there, as `git worktree add` does: the admin dir
/// `<common>/worktrees/<id>` with `gitdir`, `commondir` and `HEAD`, the
/// folder's `.git` file, the files and the index. The caller has checked
/// that no other checkout holds the branch, so nothing here looks at the
/// other worktrees (libgit2's own add opens every one of them). Each file
/// checked out is a crash point of the create (see [`crate::testhook`]).
pub fn add(repo: &Repository, id: &str, path: &Path, branch: &str) -> Result<(), AddError> {
    let full = format!("refs/heads/{branch}");
    let commit = repo.find_reference(&full)?.peel_to_commit()?.id();
    let common = repo.commondir();
    let admins = common.join("worktrees");
    match std::fs::create_dir(&admins) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e.into()),
        _ => {}
    }
    let admin = admins.join(id);
    std::fs::create_dir(&admin)?;
    std::fs::create_dir(path)?;
    let dot_git = path.join(".git");
    std::fs::write(&dot_git, gitfile_text(&admin))?;
    std::fs::write(admin.join("commondir"), "../..\n")?;
    let mut text = dot_git.as_os_str().as_bytes().to_vec();
    text.push(b'\n');
    std::fs::write(admin.join("gitdir"), &text)?;
    std::fs::write(admin.join("HEAD"), format!("ref: {full}\n"))?;
    match super::checkout::plan(repo, commit)? {
        super::checkout::Planned::Plain(plan) => {
            plan.write(common, path, &admin.join("index"))?;
        }
        super::checkout::Planned::Unusual(why) => {
            tracing::debug!("checkout by libgit2: {why}");
            let worktree = Repository::open(path)?;
            let mut checkout = CheckoutBuilder::new();
            checkout.safe();
            checkout.progress(|_, _, _| crate::testhook::point("create"));
            worktree.checkout_head(Some(&mut checkout))?;
        }
    }
    Ok(())
}

/// Drops the registration `id` (its admin dir under the common git dir,
/// found by name). Its folder is never touched here: libgit2 would take that
/// path from the admin dir's `gitdir` file, which slipway does not trust
/// (see `worktree::removal`). Nothing happens when `id` is not registered.
pub fn unregister(repo: &Repository, id: &str) -> Result<(), git2::Error> {
    let Ok(wt) = repo.find_worktree(id) else {
        // A registration half written (a create killed while writing it)
        // is one git cannot open: its admin dir goes by name.
        let admin = repo.commondir().join("worktrees").join(id);
        if admin.symlink_metadata().is_ok_and(|m| m.is_dir())
            && let Err(e) = std::fs::remove_dir_all(&admin)
        {
            return Err(git2::Error::from_str(&format!(
                "cannot remove {}: {e}",
                admin.display()
            )));
        }
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

/// Every linked worktree's admin dir under `<common>/worktrees/`, read
/// straight from the folder: a name and a few small files each, as git
/// itself reads them, where opening each as a repository costs a config
/// parse per worktree.
fn admin_dirs(repo: &Repository) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(repo.commondir().join("worktrees")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| Some((e.file_name().into_string().ok()?, e.path())))
        .collect()
}

/// The folder of the worktree whose admin dir is `admin` (its `gitdir`
/// file names the folder's `.git`).
fn worktree_folder(admin: &Path) -> PathBuf {
    let text = std::fs::read_to_string(admin.join("gitdir")).unwrap_or_default();
    let dot_git = PathBuf::from(text.trim_end_matches(['\n', '\r']));
    match dot_git.parent() {
        Some(folder) if dot_git.ends_with(".git") => folder.to_path_buf(),
        _ => dot_git,
    }
}

/// Where local branch `branch` is checked out other than in worktree
/// `own_id`: `(true, host root)` for the host checkout, `(false, path)` for
/// another worktree. Reads one `HEAD` file per worktree.
pub fn checked_out_at(
    repo: &Repository,
    host_root: &Path,
    branch: &str,
    own_id: &str,
) -> Result<Option<(bool, PathBuf)>, git2::Error> {
    if head_branch(repo).as_deref() == Some(branch) {
        return Ok(Some((true, host_root.to_path_buf())));
    }
    let wanted = format!("ref: refs/heads/{branch}");
    Ok(admin_dirs(repo)
        .into_iter()
        .filter(|(name, _)| name != own_id)
        .find(|(_, admin)| {
            std::fs::read_to_string(admin.join("HEAD")).is_ok_and(|t| t.trim_end() == wanted)
        })
        .map(|(_, admin)| (false, worktree_folder(&admin))))
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
    let says =
        |file: PathBuf, value: &str| std::fs::read_to_string(file).is_ok_and(|t| t.trim() == value);
    let busy = |git_dir: &Path| {
        for state in ["rebase-merge", "rebase-apply"] {
            if says(git_dir.join(state).join("head-name"), &full) {
                return Some("being rebased");
            }
        }
        says(git_dir.join("BISECT_START"), branch).then_some("being bisected")
    };
    if let Some(what) = busy(repo.path()) {
        return Ok(Some((what, host_root.to_path_buf())));
    }
    Ok(admin_dirs(repo)
        .into_iter()
        .find_map(|(_, admin)| Some((busy(&admin)?, worktree_folder(&admin)))))
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

/// The `.git` file of a worktree whose admin dir is `admin`, byte for byte
/// as a create writes it (so a put-back file is the one the user had).
pub fn gitfile_text(admin: &Path) -> Vec<u8> {
    let mut text = b"gitdir: ".to_vec();
    text.extend_from_slice(admin.as_os_str().as_bytes());
    text.push(b'\n');
    text
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
