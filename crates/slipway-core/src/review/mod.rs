//! Reviewing what a worktree holds and bringing it home: its diff against
//! its base, landing its branch into a host branch (merge, squash or
//! rebase, with the safety of merge-to-head), and discarding it.

pub mod diff;
pub mod discard;
pub mod land;
pub mod risk;
pub mod sensitive;

use git2::Oid;
use serde_json::{Map, Value, json};

use crate::error::{ErrorKind, Failure, Hint};
use crate::git::HostRepo;
use crate::git::worktrees;
use crate::worktree::lock::LockError;
use crate::worktree::{self, WorktreeRecord, WorktreeStrategy};

/// The namespace of the temporary branches merge-to-head makes; one of them
/// left without a worktree (its merge back failed) is a kept branch.
const KEPT_PREFIX: &str = "slipway/merge-";

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

/// What a review command acts on: a worktree slipway made, or a branch a
/// merge-to-head run kept without one (its merge back failed).
#[derive(Debug, Clone)]
pub enum Subject {
    /// A worktree and its record.
    Worktree(Box<WorktreeRecord>),
    /// A kept temporary branch with no worktree (short name).
    KeptBranch(String),
}

impl Subject {
    /// Its branch.
    pub fn branch(&self) -> &str {
        match self {
            Subject::Worktree(r) => &r.branch,
            Subject::KeptBranch(b) => b,
        }
    }

    /// The selector that names it again in actions (its branch: ids and
    /// branches are both accepted, and a branch survives a re-created worktree).
    pub fn selector(&self) -> String {
        self.branch().to_owned()
    }
}

/// The kept branches: temporary merge-to-head branches with no worktree
/// record, oldest name first.
pub fn kept_branches(host: &HostRepo) -> Vec<String> {
    let Ok(refs) = host
        .git()
        .references_glob(&format!("refs/heads/{KEPT_PREFIX}*"))
    else {
        return Vec::new();
    };
    let mut out: Vec<String> = refs
        .flatten()
        .filter_map(|r| r.shorthand().ok().map(str::to_owned))
        .collect();
    // The records are read only when there is a candidate (a listing calls
    // this each time, and most repositories have no kept branch).
    if !out.is_empty() {
        let records = WorktreeRecord::load_all(&host.slipway_dir());
        out.retain(|b| !records.iter().any(|r| &r.branch == b));
    }
    out.sort();
    out
}

/// A kept branch as `list` shows it beside the worktrees.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptBranch {
    /// Its name.
    pub branch: String,
    /// Its tip.
    pub commit: String,
    /// Commits not in its target yet.
    pub ahead: usize,
    /// Commits its target has that it lacks.
    pub behind: usize,
    /// What to do with it.
    pub actions: Vec<crate::actions::Action>,
}

/// Every kept branch with its counts against the host's current branch.
pub fn kept(host: &HostRepo) -> Vec<KeptBranch> {
    kept_branches(host)
        .into_iter()
        .filter_map(|branch| {
            let tip = worktrees::branch_tip(host.git(), &branch)?;
            let target = target_of(host, &Subject::KeptBranch(branch.clone()));
            let (ahead, behind) = ahead_behind(host.git(), tip, target.as_deref(), None, None);
            Some(KeptBranch {
                actions: crate::actions::unlanded(&branch),
                branch,
                commit: tip.to_string(),
                ahead,
                behind,
            })
        })
        .collect()
}

/// The worktree, or else the kept branch, a selector names.
pub fn find_subject(host: &HostRepo, selector: &str) -> Result<Subject, NoSuchWorktree> {
    if let Some(record) = worktree::find_readable(host, selector)? {
        return Ok(Subject::Worktree(Box::new(record)));
    }
    let branch = selector.strip_prefix("refs/heads/").unwrap_or(selector);
    if branch.starts_with(KEPT_PREFIX) && worktrees::branch_tip(host.git(), branch).is_some() {
        return Ok(Subject::KeptBranch(branch.to_owned()));
    }
    Err(unknown(host, selector))
}

fn unknown(host: &HostRepo, selector: &str) -> NoSuchWorktree {
    let mut known: Vec<String> = WorktreeRecord::load_all(&host.slipway_dir())
        .into_iter()
        .map(|r| format!("{} ({})", r.id, r.branch))
        .collect();
    known.extend(kept_branches(host));
    NoSuchWorktree::Unknown {
        selector: selector.to_owned(),
        known,
    }
}

/// The host branch a subject's work lands in by default (short name): a
/// merge-to-head worktree's own target, else the host's current branch.
/// `None` when there is none (a detached host) or it is the subject's own branch.
pub fn target_of(host: &HostRepo, subject: &Subject) -> Option<String> {
    match subject {
        Subject::Worktree(r) => target_for(host, r),
        Subject::KeptBranch(b) => host.current_branch().filter(|t| t != b),
    }
}

/// [`target_of`] a worktree's record.
pub fn target_for(host: &HostRepo, record: &WorktreeRecord) -> Option<String> {
    let recorded = (record.strategy == WorktreeStrategy::MergeToHead)
        .then(|| record.target_branch.clone())
        .flatten()
        .filter(|t| worktrees::branch_tip(host.git(), t).is_some());
    recorded
        .or_else(|| host.current_branch())
        .filter(|t| *t != record.branch)
}

/// The tip a land remembered for a worktree (see [`land::LANDED_TIP`]).
pub fn landed_tip(record: &WorktreeRecord) -> Option<Oid> {
    record
        .extra
        .get(land::LANDED_TIP)
        .and_then(Value::as_str)
        .and_then(|s| Oid::from_str(s).ok())
}

/// Where a branch at `tip` and its target meet now: the merge base of the
/// two tips, so work the target took in since (a rebase, a land) no longer
/// counts as the branch's. Falls back to `recorded` (the base the worktree
/// started from) when there is no target or no common history.
pub fn base_now(
    repo: &git2::Repository,
    tip: Oid,
    target: Option<&str>,
    recorded: Option<Oid>,
) -> Option<Oid> {
    target
        .and_then(|t| worktrees::branch_tip(repo, t))
        .and_then(|t| worktrees::merge_base(repo, tip, t))
        .or(recorded)
}

/// Commits on the branch at `tip` that are not home yet, and commits its
/// target has that the branch lacks. Ahead counts from the merge base with
/// the target now, less what a land brought home (`landed`: squash and
/// rebase leave no ref on those commits); with no target, from `recorded`.
pub fn ahead_behind(
    repo: &git2::Repository,
    tip: Oid,
    target: Option<&str>,
    recorded: Option<Oid>,
    landed: Option<Oid>,
) -> (usize, usize) {
    let target_tip = target.and_then(|t| worktrees::branch_tip(repo, t));
    let behind = target_tip
        .and_then(|t| repo.graph_ahead_behind(tip, t).ok())
        .map_or(0, |(_, behind)| behind);
    let ahead = (|| -> Result<usize, git2::Error> {
        let mut walk = repo.revwalk()?;
        walk.push(tip)?;
        for hide in [target_tip.or(recorded), landed].into_iter().flatten() {
            if repo.find_commit(hide).is_ok() {
                walk.hide(hide)?;
            }
        }
        Ok(walk.count())
    })()
    .unwrap_or(0);
    (ahead, behind)
}

/// The kind of a branch lock that could not be taken.
fn lock_kind(e: &LockError) -> ErrorKind {
    e.kind()
}
