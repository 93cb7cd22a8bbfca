//! The comparison of a group's attempts (`slipway attempts GROUP`,
//! `slipway.attempts`): per attempt its agent, status, check, what its branch
//! changes against the group's source commit, its time and its usage.

use serde::Serialize;

use super::*;
use crate::run::record::{RunRecord, RunState};
use crate::run::{CheckResult, RunStatus, Usage};

/// Why a group cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum GroupError {
    /// No record of it, or one slipway could not have written.
    #[error("no group of attempts '{0}' in this repository (or its record is not slipway's)")]
    Unknown(GroupId),
    /// `.slipway/` is not slipway's own.
    #[error(transparent)]
    Untrusted(#[from] crate::state_trust::Untrusted),
}

impl Failure for GroupError {
    fn kind(&self) -> ErrorKind {
        match self {
            GroupError::Unknown(_) => ErrorKind::UnknownGroup,
            GroupError::Untrusted(_) => ErrorKind::UntrustedState,
        }
    }
}

/// Reads and checks the group's record.
pub fn load(host: &HostRepo, id: &GroupId) -> Result<GroupRecord, GroupError> {
    host.state_trusted()?;
    GroupRecord::load(&host.slipway_dir(), id).ok_or_else(|| GroupError::Unknown(id.clone()))
}

/// A group as the list of groups shows it (`slipway attempts`,
/// `slipway.attemptGroups`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupSummary {
    /// Its id.
    pub group_id: GroupId,
    /// When it started, seconds since the epoch.
    pub created: u64,
    /// The commit every attempt started from.
    pub source_commit: String,
    /// Branch or merge-to-head.
    pub strategy: GroupStrategy,
    /// Merge-to-head: the host branch the winner lands in.
    pub into: Option<String>,
    /// The check each attempt runs after its agent.
    pub check: Option<String>,
    /// The prompt's first line, when the record keeps it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// How many attempts.
    pub attempts: usize,
    /// How many of them are running now (a run not started yet has no
    /// record and is not counted).
    pub running: usize,
}

/// Every group of attempts of the repository, newest first; a record that
/// fails the checks is skipped (and logged).
pub fn groups(host: &HostRepo) -> Result<Vec<GroupSummary>, GroupError> {
    host.state_trusted()?;
    let slipway_dir = host.slipway_dir();
    Ok(GroupRecord::load_all(&slipway_dir)
        .into_iter()
        .map(|group| {
            let running = group
                .attempts
                .iter()
                .filter(|entry| {
                    RunRecord::load(&slipway_dir, &entry.run_id).is_some_and(|mut r| {
                        r.settle_if_dead(&slipway_dir);
                        r.state == RunState::Running
                    })
                })
                .count();
            GroupSummary {
                attempts: group.attempts.len(),
                running,
                group_id: group.group_id,
                created: group.created,
                source_commit: group.source_commit,
                strategy: group.strategy,
                into: group.into,
                check: group.check,
                prompt: group.prompt,
            }
        })
        .collect())
}

/// One attempt as the comparison shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttemptRow {
    /// 1…N.
    pub index: usize,
    /// Its run.
    pub run_id: RunId,
    /// The agent's name.
    pub agent: String,
    /// Its branch.
    pub branch: String,
    /// The branch is still there (not landed and discarded).
    pub branch_present: bool,
    /// `running`, or how it ended; `null` when its run left no record.
    pub status: Option<String>,
    /// The check after the agent, when the group had one and it ran.
    pub check: Option<CheckResult>,
    /// Commits on the branch since the source commit.
    pub commits: usize,
    /// Files the branch changes against the source commit.
    pub files_changed: usize,
    /// Lines added.
    pub lines_added: usize,
    /// Lines removed.
    pub lines_removed: usize,
    /// Seconds from start to end (so far, while running).
    pub seconds: Option<u64>,
    /// Tokens and cost, when the agent reported them.
    pub usage: Option<Usage>,
}

/// A group and its attempts side by side.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// The group.
    #[serde(flatten)]
    pub group: GroupRecord,
    /// Each attempt, in order.
    pub rows: Vec<AttemptRow>,
}

/// Compares the attempts of group `id`.
pub fn compare(host: &HostRepo, id: &GroupId) -> Result<Comparison, GroupError> {
    let group = load(host, id)?;
    let slipway_dir = host.slipway_dir();
    let source = git2::Oid::from_str(&group.source_commit).ok();
    let rows = group
        .attempts
        .iter()
        .map(|entry| {
            let record = RunRecord::load(&slipway_dir, &entry.run_id).map(|mut r| {
                r.settle_if_dead(&slipway_dir);
                r
            });
            let tip = crate::git::worktrees::branch_tip(host.git(), &entry.branch);
            let stats = match (source, tip) {
                (Some(source), Some(tip)) => change_stats(host.git(), source, tip),
                _ => None,
            };
            let (commits, files_changed, lines_added, lines_removed) = stats.unwrap_or_default();
            let result = record.as_ref().and_then(|r| r.result.as_ref());
            let status = record.as_ref().map(|r| match (&r.state, result) {
                (RunState::Finished, Some(result)) => status_name(result.status).to_owned(),
                (RunState::Finished, None) => "died".to_owned(),
                _ => "running".to_owned(),
            });
            let seconds = record.as_ref().map(|r| {
                r.finished
                    .unwrap_or_else(crate::util::now_secs)
                    .saturating_sub(r.started)
            });
            AttemptRow {
                index: entry.index,
                run_id: entry.run_id.clone(),
                agent: entry.agent.clone(),
                branch: entry.branch.clone(),
                branch_present: tip.is_some(),
                status,
                check: result.and_then(|r| r.check.clone()),
                commits,
                files_changed,
                lines_added,
                lines_removed,
                seconds,
                usage: result.and_then(|r| r.usage),
            }
        })
        .collect();
    Ok(Comparison { group, rows })
}

/// The status as the protocol spells it.
fn status_name(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Completed => "completed",
        RunStatus::Failed => "failed",
        RunStatus::TimedOut => "timedOut",
        RunStatus::Cancelled => "cancelled",
        RunStatus::NeedsInput => "needsInput",
    }
}

/// Commits, files changed, lines added and removed from `source` to `tip`.
fn change_stats(
    repo: &git2::Repository,
    source: git2::Oid,
    tip: git2::Oid,
) -> Option<(usize, usize, usize, usize)> {
    let old = repo.find_commit(source).ok()?.tree().ok()?;
    let new = repo.find_commit(tip).ok()?.tree().ok()?;
    let diff = repo.diff_tree_to_tree(Some(&old), Some(&new), None).ok()?;
    let stats = diff.stats().ok()?;
    let mut walk = repo.revwalk().ok()?;
    walk.push(tip).ok()?;
    walk.hide(source).ok()?;
    Some((
        walk.count(),
        stats.files_changed(),
        stats.insertions(),
        stats.deletions(),
    ))
}
