//! Launching a run on a workspace: several host folders, each mounted at a
//! container path, each shared or isolated in a private worktree or a private
//! clone that starts where its source branch policy says. Mounts are
//! materialised one by one in their fixed order; the host checkouts are never
//! switched, checked out, pulled or fetched.

use std::path::{Path, PathBuf};

use git2::Oid;
use serde::{Deserialize, Serialize};

use super::RunError;
use crate::git::bundle::BundleError;
use crate::git::policy::{self, SourcePolicy};
use crate::git::private_dir::IgnoredRef;
use crate::git::{HostRepo, clone};
use crate::sandbox::docker::Mount;
use crate::worktree::lock::BranchLock;
use crate::worktree::{self, CreateRequest, WorktreeTarget};

/// How one mount is isolated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// The host folder itself.
    Shared,
    /// A private worktree of the repository (host refs visible).
    Worktree,
    /// A private local clone (refs isolated until brought back).
    Clone,
}

/// One mount, as the run needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MountPlan {
    /// Host folder (a repository root for isolated mounts).
    pub src: PathBuf,
    /// Where it appears in the sandbox.
    pub dst: PathBuf,
    /// Mounted read-only (shared mounts only).
    #[serde(default)]
    pub readonly: bool,
    /// Shared, worktree or clone.
    pub isolation: Isolation,
    /// Where an isolated checkout starts.
    pub source: SourcePolicy,
}

/// A workspace, resolved for one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspacePlan {
    /// The workspace's name.
    pub name: String,
    /// The agent's working directory, a path under some mount's `dst`.
    pub workdir: PathBuf,
    /// Mounts, in their fixed order.
    pub mounts: Vec<MountPlan>,
    /// Host paths (globs, relative to each repository) copied into every
    /// isolated checkout before the agent starts.
    #[serde(default)]
    pub copy: Vec<String>,
}

/// What a mount became for this run.
#[derive(Debug)]
pub struct Materialised {
    /// The plan.
    pub plan: MountPlan,
    /// The checkout on the host the sandbox sees at `dst`.
    pub host_path: PathBuf,
    /// The isolated checkout's branch.
    pub branch: Option<String>,
    /// The commit it started from.
    pub base: Option<Oid>,
    /// The host repository of an isolated mount.
    pub repo_root: Option<PathBuf>,
    /// Its common git dir (worktree mounts need it mounted).
    pub common_dir: Option<PathBuf>,
    /// The worktree record id (worktree mounts).
    pub worktree_id: Option<String>,
    /// Held while the run works on the branch.
    pub lock: Option<BranchLock>,
    /// The private git dir the agent's git works in for this checkout.
    pub git: Option<super::private_git::RunGit>,
}

/// What happened to one mount at the end.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct MountResult {
    /// The mount's `dst`.
    pub dst: PathBuf,
    /// Its host folder.
    pub src: PathBuf,
    /// The branch the agent's commits are on, in the host repository.
    pub branch: Option<String>,
    /// The commit the checkout started from.
    pub base_commit: Option<String>,
    /// Commits the run made there, oldest first.
    pub commits: Vec<String>,
    /// The checkout kept (uncommitted changes), if any.
    pub preserved_path: Option<PathBuf>,
    /// Refs the agent changed privately in this checkout's git dir (never carried over).
    #[serde(default)]
    pub refs_ignored: Vec<IgnoredRef>,
    /// What bringing the work back could not do.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Every `ask` mount, in order, with what the user can choose.
pub fn sources_required(plan: &WorkspacePlan) -> Result<Vec<(PathBuf, Vec<String>)>, RunError> {
    let mut out = Vec::new();
    for m in &plan.mounts {
        if m.isolation != Isolation::Shared && m.source == SourcePolicy::Ask {
            let host = HostRepo::open(&m.src).map_err(|e| RunError::Invalid(e.to_string()))?;
            out.push((m.dst.clone(), policy::branch_choices(host.git())?));
        }
    }
    Ok(out)
}

/// The host folder and its path inside the sandbox that cover `workdir`.
pub fn workdir_on_host(plan: &WorkspacePlan, mounts: &[Materialised]) -> Option<PathBuf> {
    mounts
        .iter()
        .filter(|m| plan.workdir.starts_with(&m.plan.dst))
        .max_by_key(|m| m.plan.dst.components().count())
        .map(|m| {
            m.host_path.join(
                plan.workdir
                    .strip_prefix(&m.plan.dst)
                    .unwrap_or(Path::new("")),
            )
        })
}

/// How the agent will reach the mounts' git: a host process (only the
/// checkout covering the workdir gets a private git dir, through the
/// environment) or a container (every isolated checkout gets one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GitReach {
    /// The host sandbox.
    Host,
    /// A docker container.
    Container,
}

/// Creates every mount's checkout in order. On failure, what was made so far is
/// cleaned up by the same never-lose rules.
pub fn materialise(
    plan: &WorkspacePlan,
    run_id: &str,
    reach: GitReach,
) -> Result<Vec<Materialised>, RunError> {
    crate::worktree::copy::check_patterns(&plan.copy)
        .map_err(|e| RunError::Worktree(crate::worktree::CreateError::BadCopyPattern(e)))?;
    let mut done: Vec<Materialised> = Vec::new();
    for (index, mount) in plan.mounts.iter().enumerate() {
        let covering = plan.workdir.starts_with(&mount.dst)
            && !plan.mounts.iter().any(|other| {
                other.dst != mount.dst
                    && other.dst.starts_with(&mount.dst)
                    && plan.workdir.starts_with(&other.dst)
            });
        let reach = match reach {
            GitReach::Container => Some(super::private_git::Reach::Mounts { slot: index }),
            GitReach::Host if covering => Some(super::private_git::Reach::Environment),
            GitReach::Host => None,
        };
        match materialise_one(mount, index, run_id, &plan.copy, reach) {
            Ok(m) => done.push(m),
            Err(e) => {
                let _ = finish(done, run_id);
                return Err(e);
            }
        }
    }
    Ok(done)
}

/// A repository in the middle of a rebase, merge or cherry-pick is not a
/// place to start from.
fn refuse_mid_operation(host: &HostRepo) -> Result<(), RunError> {
    if host.operation_in_progress() {
        return Err(RunError::Invalid(format!(
            "{} is in the middle of a rebase, merge or cherry-pick; finish or abort it first",
            host.root().display()
        )));
    }
    Ok(())
}

fn branch_name(run_id: &str, index: usize) -> String {
    let short = run_id.trim_start_matches("run-");
    format!("slipway/ws-{short}-{index}")
}

fn materialise_one(
    mount: &MountPlan,
    index: usize,
    run_id: &str,
    copy: &[String],
    reach: Option<super::private_git::Reach>,
) -> Result<Materialised, RunError> {
    let shared = |m: &MountPlan| Materialised {
        plan: m.clone(),
        host_path: m.src.clone(),
        branch: None,
        base: None,
        repo_root: None,
        common_dir: None,
        worktree_id: None,
        lock: None,
        git: None,
    };
    match mount.isolation {
        Isolation::Shared => Ok(shared(mount)),
        Isolation::Worktree => {
            let host = HostRepo::open(&mount.src).map_err(|e| RunError::Invalid(e.to_string()))?;
            refuse_mid_operation(&host)?;
            let branch = branch_name(run_id, index);
            worktree::ensure_slipway_dir(&host)?;
            let lock = worktree::lock_branch(&host, &branch)?;
            let created = worktree::create_locked(
                &host,
                &CreateRequest {
                    target: WorktreeTarget::Branch {
                        name: branch.clone(),
                        base: None,
                    },
                    source: mount.source.clone(),
                    copy: copy.to_vec(),
                },
                &lock,
            )?;
            let git = match reach {
                Some(reach) => Some(super::private_git::RunGit::prepare(
                    &host,
                    &created.record.path,
                    &super::private_git::run_base(&host, &format!("{run_id}-{index}")),
                    false,
                    reach,
                    false,
                )?),
                None => None,
            };
            Ok(Materialised {
                plan: mount.clone(),
                host_path: created.record.path.clone(),
                branch: Some(branch),
                base: Oid::from_str(&created.record.base_commit).ok(),
                repo_root: Some(host.root().to_path_buf()),
                common_dir: Some(host.common_dir().to_path_buf()),
                worktree_id: Some(created.record.id),
                lock: Some(lock),
                git,
            })
        }
        Isolation::Clone => {
            let host = HostRepo::open(&mount.src).map_err(|e| RunError::Invalid(e.to_string()))?;
            refuse_mid_operation(&host)?;
            let resolved = policy::resolve(host.git(), &mount.source)
                .map_err(|e| RunError::Invalid(e.to_string()))?;
            let base = resolved.oid();
            let branch = branch_name(run_id, index);
            let dir = host
                .slipway_dir()
                .join("clones")
                .join(format!("{}-{index}", run_id));
            worktree::ensure_slipway_dir(&host)?;
            std::fs::create_dir_all(&dir).map_err(|e| RunError::Io(e.to_string()))?;
            clone::create(host.git(), &dir, base, &branch).map_err(|e| match e {
                BundleError::Git(e) => RunError::Git(e),
                other => RunError::Io(other.to_string()),
            })?;
            crate::worktree::copy::copy_into_worktree(&host, &dir, copy)
                .map_err(|e| RunError::Io(e.to_string()))?;
            // The clone is a repository of its own: its `.git` is covered by a
            // private git dir too, so the agent never writes the clone's
            // config or hooks (a kept clone is then safe to use).
            let git = match reach {
                Some(reach) => {
                    let clone_repo =
                        HostRepo::open(&dir).map_err(|e| RunError::Invalid(e.to_string()))?;
                    Some(super::private_git::RunGit::prepare(
                        &clone_repo,
                        &dir,
                        &super::private_git::run_base(&host, &format!("{run_id}-{index}")),
                        true,
                        reach,
                        false,
                    )?)
                }
                None => None,
            };
            Ok(Materialised {
                plan: mount.clone(),
                host_path: dir,
                branch: Some(branch),
                base: Some(base),
                repo_root: Some(host.root().to_path_buf()),
                common_dir: None,
                worktree_id: None,
                lock: None,
                git,
            })
        }
    }
}

/// Bind mounts for a docker sandbox: every mount at its `dst`; an isolated
/// checkout's `.git` is covered by its private git dir's (see
/// [`super::private_git::RunGit::mounts`]), and nothing else of any host
/// repository is mounted.
pub fn docker_mounts(mounts: &[Materialised]) -> Result<Vec<Mount>, RunError> {
    let mut out = Vec::new();
    for m in mounts {
        match &m.git {
            Some(git) => out.extend(
                git.mounts(Some(&m.plan.dst))
                    .map_err(|e| RunError::Io(e.to_string()))?,
            ),
            None => out.push(Mount {
                host_path: m.host_path.clone(),
                container_path: m.plan.dst.clone(),
                readonly: m.plan.readonly,
            }),
        }
    }
    Ok(out)
}

/// The environment that points a host process's git at the private git dir
/// of the checkout covering the workdir.
pub fn git_env(mounts: &[Materialised]) -> Vec<(String, String)> {
    mounts
        .iter()
        .filter_map(|m| m.git.as_ref())
        .flat_map(|g| g.env())
        .collect()
}

/// Host paths mapped to sandbox paths, for commands whose cwd is a host path.
pub fn path_map(mounts: &[Materialised]) -> Vec<(PathBuf, PathBuf)> {
    mounts
        .iter()
        .map(|m| (m.host_path.clone(), m.plan.dst.clone()))
        .collect()
}

/// Ends every mount: each isolated checkout's branch imported from its
/// private git dir, clone branches brought back into their host repository
/// as branches (a bundle, never a fetch or checkout in the host), then the
/// checkouts closed by the never-lose rules (clean: removed; dirty: kept).
pub fn finish(mounts: Vec<Materialised>, run_id: &str) -> Vec<MountResult> {
    let mut results = Vec::new();
    for mut m in mounts {
        let mut result = MountResult {
            dst: m.plan.dst.clone(),
            src: m.plan.src.clone(),
            branch: m.branch.clone(),
            base_commit: m.base.map(|b| b.to_string()),
            commits: Vec::new(),
            preserved_path: None,
            refs_ignored: Vec::new(),
            warnings: Vec::new(),
        };
        if let Some(git) = m.git.take() {
            import_mount(&m, git, run_id, &mut result);
        }
        match m.plan.isolation {
            Isolation::Shared => {}
            Isolation::Worktree => finish_worktree(&m, &mut result),
            Isolation::Clone => finish_clone(&m, &mut result),
        }
        drop(m.lock);
        results.push(result);
    }
    results
}

/// Imports the branch of one checkout's private git dir into the repository
/// the checkout belongs to (the host repository, or the private clone).
fn import_mount(
    m: &Materialised,
    git: super::private_git::RunGit,
    run_id: &str,
    result: &mut MountResult,
) {
    let repo_of_checkout = match m.plan.isolation {
        Isolation::Clone => HostRepo::open(&m.host_path),
        _ => match &m.repo_root {
            Some(root) => HostRepo::open(root),
            None => return,
        },
    };
    let host = match repo_of_checkout {
        Ok(h) => h,
        Err(e) => {
            result
                .warnings
                .push(format!("cannot open {}: {e}", m.host_path.display()));
            return;
        }
    };
    match git.import(&host, run_id) {
        Ok(report) => {
            result.refs_ignored = report.refs_ignored;
            result.warnings.extend(report.warnings);
            if let Some(side) = report.imported.and_then(|i| i.side_branch) {
                result.warnings.push(format!(
                    "the commits of {} are on '{}': {}",
                    m.plan.dst.display(),
                    side.name,
                    side.reason
                ));
            }
        }
        Err(e) => result.warnings.push(e.to_string()),
    }
}

fn finish_worktree(m: &Materialised, result: &mut MountResult) {
    let (Some(root), Some(branch)) = (&m.repo_root, &m.branch) else {
        return;
    };
    let Ok(host) = HostRepo::open(root) else {
        return;
    };
    if let Ok(tip) = host.git().refname_to_id(&format!("refs/heads/{branch}")) {
        result.commits = crate::git::commits_between(host.git(), m.base, tip)
            .map(|c| c.into_iter().map(|o| o.to_string()).collect())
            .unwrap_or_default();
    }
    let Some(id) = &m.worktree_id else { return };
    if let Some(record) = worktree::record::WorktreeRecord::load(&host.slipway_dir(), id) {
        let closed = match &m.lock {
            Some(lock) => worktree::close_locked(&host, record, false, lock),
            None => return,
        };
        if let Ok(worktree::CloseOutcome::Preserved { preserved_path, .. }) = closed {
            result.preserved_path = Some(preserved_path);
        }
    }
}

fn finish_clone(m: &Materialised, result: &mut MountResult) {
    let (Some(root), Some(branch)) = (&m.repo_root, &m.branch) else {
        return;
    };
    let Some(work) = clone::bring_back(&m.host_path, root, branch, m.base) else {
        return;
    };
    if work.in_host && m.base != Some(work.tip) {
        result.commits = work.commits;
    }
    if work.in_host && !work.dirty {
        let _ = std::fs::remove_dir_all(&m.host_path);
    } else {
        result.preserved_path = Some(m.host_path.clone());
    }
    if !work.in_host || m.base == Some(work.tip) {
        // No branch was made in the host repository.
        result.branch = None;
    }
}
