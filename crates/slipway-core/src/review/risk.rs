//! What closing or discarding a worktree would lose: its uncommitted files
//! (staged, unstaged and untracked, as `git status --porcelain` lists them)
//! and the commits of its branch that are not safe anywhere else. A commit is
//! safe when another branch, a remote-tracking ref or a tag holds it, when a
//! land brought it home, or when its change is upstream already: its patch-id
//! matches a commit there (rebase- and cherry-pick-landed work), or merging
//! the whole branch there would change nothing (squash-landed work), as
//! `git cherry` and worktrunk's "integrated" check judge it. Read-only.

use std::collections::HashSet;

use git2::{Oid, Repository};
use serde::Serialize;

use super::{NoSuchWorktree, Subject, find_subject};
use crate::actions::{Action, ActionKind};
use crate::git::HostRepo;
use crate::git::worktrees;

/// Upstream commits looked at for patch-ids, at most: past that a commit is
/// reported at risk rather than searched for (the list errs on the safe side).
const UPSTREAM_LIMIT: usize = 5000;

/// A commit that would be lost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RiskyCommit {
    /// Its full id.
    pub sha: String,
    /// The first line of its message, made safe to show ([`crate::shown::line`]).
    pub subject: String,
}

/// Everything a close or discard would lose.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AtRisk {
    /// Uncommitted paths in the worktree.
    pub uncommitted: Vec<String>,
    /// Commits found nowhere else, oldest first.
    pub commits: Vec<RiskyCommit>,
}

impl AtRisk {
    /// Nothing would be lost.
    pub fn is_empty(&self) -> bool {
        self.uncommitted.is_empty() && self.commits.is_empty()
    }
}

/// What a close or discard would do, without doing it (`dryRun`): what it
/// would lose and what to do next.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preview {
    /// The branch of the worktree (or the kept branch).
    pub branch: String,
    /// The worktree that would be removed (none for a kept branch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<std::path::PathBuf>,
    /// What would be lost: without force nothing is removed unless this is
    /// empty, so an edge asks only when it is not.
    pub at_risk: AtRisk,
    /// What to do next; the close or discard itself comes last, forced when
    /// something is at risk.
    pub actions: Vec<Action>,
}

impl Preview {
    /// The preview of doing `what` (close or discard) to `subject`.
    pub fn new(subject: &Subject, at_risk: AtRisk, what: ActionKind) -> Preview {
        let name = subject.selector();
        let mut actions = Vec::new();
        if !at_risk.is_empty() {
            actions.push(Action::on(ActionKind::Review, &name));
            if !at_risk.commits.is_empty() {
                actions.push(Action::on(ActionKind::Land, &name));
            }
        }
        let act = Action::on(what, &name);
        actions.push(if at_risk.is_empty() {
            act
        } else {
            act.forced()
        });
        Preview {
            branch: subject.branch().to_owned(),
            path: match subject {
                Subject::Worktree(r) => Some(r.path.clone()),
                Subject::KeptBranch(_) => None,
            },
            at_risk,
            actions,
        }
    }
}

/// Why a preview could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PreviewError {
    /// No worktree matches.
    #[error(transparent)]
    NotFound(#[from] NoSuchWorktree),
    /// libgit2 failed.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
}

impl crate::error::Failure for PreviewError {
    fn kind(&self) -> crate::error::ErrorKind {
        match self {
            PreviewError::NotFound(e) => e.kind(),
            PreviewError::Git(_) => crate::error::ErrorKind::Git,
        }
    }

    fn data(&self) -> serde_json::Map<String, serde_json::Value> {
        match self {
            PreviewError::NotFound(e) => e.data(),
            PreviewError::Git(_) => serde_json::Map::new(),
        }
    }

    fn hints(&self) -> Vec<crate::error::Hint> {
        match self {
            PreviewError::NotFound(e) => e.hints(),
            PreviewError::Git(_) => Vec::new(),
        }
    }
}

/// What closing the worktree `selector` names would lose (`dryRun`):
/// nothing is changed. A kept branch has no worktree to close.
pub fn preview_close(host: &HostRepo, selector: &str) -> Result<Preview, PreviewError> {
    let subject = match find_subject(host, selector)? {
        Subject::KeptBranch(_) => return Err(super::unknown(host, selector).into()),
        worktree => worktree,
    };
    let at_risk = of_close(&subject)?;
    Ok(Preview::new(&subject, at_risk, ActionKind::Close))
}

/// What discarding `subject` (its worktree and its branch) would lose.
pub fn of_discard(host: &HostRepo, subject: &Subject) -> Result<AtRisk, git2::Error> {
    let uncommitted = uncommitted(subject)?;
    let branch = subject.branch();
    let commits = match worktrees::branch_tip(host.git(), branch) {
        Some(tip) => {
            let landed = match subject {
                Subject::Worktree(r) => super::landed_tip(r),
                Subject::KeptBranch(_) => None,
            };
            let target = super::target_of(host, subject);
            unlanded_commits(host, branch, tip, landed, target.as_deref())?
        }
        None => Vec::new(),
    };
    Ok(AtRisk {
        uncommitted,
        commits,
    })
}

/// What closing `subject` would lose: only its uncommitted files, since a
/// close keeps every branch that holds commits found nowhere else.
pub fn of_close(subject: &Subject) -> Result<AtRisk, git2::Error> {
    Ok(AtRisk {
        uncommitted: uncommitted(subject)?,
        commits: Vec::new(),
    })
}

fn uncommitted(subject: &Subject) -> Result<Vec<String>, git2::Error> {
    match subject {
        Subject::Worktree(r) if r.path.is_dir() => worktrees::changed_paths_at(&r.path),
        _ => Ok(Vec::new()),
    }
}

/// The commits of `branch` (at `tip`) that would be gone with it: held by
/// no other branch, remote-tracking ref or tag, not brought home by a land
/// (`landed`), and whose change is not upstream already.
pub fn unlanded_commits(
    host: &HostRepo,
    branch: &str,
    tip: Oid,
    landed: Option<Oid>,
    target: Option<&str>,
) -> Result<Vec<RiskyCommit>, git2::Error> {
    let repo = host.git();
    let own = format!("refs/heads/{branch}");
    let mut walk = repo.revwalk()?;
    walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::REVERSE)?;
    walk.push(tip)?;
    for reference in repo.references()? {
        let reference = reference?;
        let Ok(name) = reference.name() else {
            continue;
        };
        let holds = name.starts_with("refs/heads/")
            || name.starts_with("refs/remotes/")
            || name.starts_with("refs/tags/");
        if !holds || name == own {
            continue;
        }
        if let Ok(commit) = reference.peel_to_commit() {
            walk.hide(commit.id())?;
        }
    }
    if let Some(landed) = landed.filter(|l| repo.find_commit(*l).is_ok()) {
        walk.hide(landed)?;
    }
    let mut candidates: Vec<Oid> = walk.collect::<Result<_, _>>()?;
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    for upstream in upstreams(host, branch, target) {
        if merging_changes_nothing(repo, upstream, tip)? {
            return Ok(Vec::new());
        }
        let ids = upstream_patch_ids(repo, upstream, tip)?;
        candidates.retain(|c| {
            patch_id(repo, *c)
                .ok()
                .flatten()
                .is_none_or(|p| !ids.contains(&p))
        });
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
    }
    // A merge commit carries no change of its own once every commit it
    // brought in is safe.
    if candidates
        .iter()
        .all(|c| repo.find_commit(*c).is_ok_and(|c| c.parent_count() > 1))
    {
        return Ok(Vec::new());
    }
    candidates
        .into_iter()
        .map(|id| {
            let commit = repo.find_commit(id)?;
            Ok(RiskyCommit {
                sha: id.to_string(),
                subject: crate::shown::line(commit.summary().ok().flatten().unwrap_or("")),
            })
        })
        .collect()
}

/// The tips the branch's work may have gone into: the target branch and its
/// upstream, the branch's own upstream, and the default branch.
fn upstreams(host: &HostRepo, branch: &str, target: Option<&str>) -> Vec<Oid> {
    let repo = host.git();
    let mut refs = Vec::new();
    if let Some(target) = target {
        refs.push(format!("refs/heads/{target}"));
        refs.extend(crate::git::branches::upstream_ref(repo, target));
    }
    refs.extend(crate::git::branches::upstream_ref(repo, branch));
    refs.extend(crate::git::policy::default_branch_ref(repo).ok());
    let mut seen = HashSet::new();
    refs.into_iter()
        .filter_map(|r| repo.find_reference(&r).ok()?.peel_to_commit().ok())
        .map(|c| c.id())
        .filter(|id| seen.insert(*id))
        .collect()
}

/// Whether merging `tip` into `upstream` would leave `upstream`'s tree as it
/// is: everything the branch changed is there already (a squash landed it).
fn merging_changes_nothing(
    repo: &Repository,
    upstream: Oid,
    tip: Oid,
) -> Result<bool, git2::Error> {
    let ours = repo.find_commit(upstream)?;
    let theirs = repo.find_commit(tip)?;
    let mut index = repo.merge_commits(&ours, &theirs, None)?;
    if index.has_conflicts() {
        return Ok(false);
    }
    Ok(index.write_tree_to(repo)? == ours.tree_id())
}

/// The patch-ids of the commits `upstream` has and `tip` lacks.
fn upstream_patch_ids(
    repo: &Repository,
    upstream: Oid,
    tip: Oid,
) -> Result<HashSet<Oid>, git2::Error> {
    let mut walk = repo.revwalk()?;
    walk.push(upstream)?;
    walk.hide(tip)?;
    let mut ids = HashSet::new();
    for id in walk.take(UPSTREAM_LIMIT) {
        if let Some(p) = patch_id(repo, id?)? {
            ids.insert(p);
        }
    }
    Ok(ids)
}

/// A commit's patch-id (its change against its only parent, whitespace and
/// line numbers aside); `None` for root and merge commits.
fn patch_id(repo: &Repository, id: Oid) -> Result<Option<Oid>, git2::Error> {
    let commit = repo.find_commit(id)?;
    if commit.parent_count() != 1 {
        return Ok(None);
    }
    let parent = commit.parent(0)?.tree()?;
    let diff = repo.diff_tree_to_tree(Some(&parent), Some(&commit.tree()?), None)?;
    diff.patchid(None).map(Some)
}
