//! Landing the winner (`slipway attempts GROUP --land N`,
//! `slipway.landAttempt`): the chosen attempt lands, then every other
//! attempt is discarded, each under discard's rule of what would be lost
//! (refused, and reported, unless forced).

use serde::Serialize;

use super::compare::{GroupError, load};
use super::*;
use crate::review::discard::{DiscardError, discard};
use crate::review::land::{LandError, LandHow, LandRequest, Landed, land};
use crate::worktree::CloseOutcome;

/// Why nothing was picked.
#[derive(Debug, thiserror::Error)]
pub enum PickError {
    /// The group cannot be read.
    #[error(transparent)]
    Group(#[from] GroupError),
    /// No such attempt in the group.
    #[error("group {group} has attempts 1 to {count}; there is no attempt {index}")]
    NoAttempt {
        group: GroupId,
        index: usize,
        count: usize,
    },
    /// The land failed: nothing was landed and nothing discarded.
    #[error("{0}; no attempt was discarded")]
    Land(#[from] LandError),
}

impl Failure for PickError {
    fn kind(&self) -> ErrorKind {
        match self {
            PickError::Group(e) => e.kind(),
            PickError::NoAttempt { .. } => ErrorKind::InvalidParams,
            PickError::Land(e) => e.kind(),
        }
    }
}

/// An attempt the pick did not remove, and why.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Kept {
    /// 1…N.
    pub index: usize,
    /// Its branch.
    pub branch: String,
    /// Why it was kept: what a discard would lose, or what failed.
    pub reason: String,
}

/// What landing an attempt did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Picked {
    /// The group.
    pub group_id: GroupId,
    /// The attempt landed.
    pub index: usize,
    /// What the land did.
    pub landed: Landed,
    /// The attempts discarded (worktree and branch removed).
    pub discarded: Vec<usize>,
    /// The attempts kept, with why: discard again with force to lose them.
    pub kept: Vec<Kept>,
}

/// Lands attempt `index` of group `id` (`how`), then discards the others
/// (`force`: even when that loses their work). A merge-to-head group's
/// winner lands in the branch the group was made for, and its temporary
/// branch goes too once it is home.
pub fn land_attempt(
    host: &HostRepo,
    id: &GroupId,
    index: usize,
    how: LandHow,
    force: bool,
) -> Result<Picked, PickError> {
    let group = load(host, id)?;
    let winner = group.attempt(index).ok_or_else(|| PickError::NoAttempt {
        group: id.clone(),
        index,
        count: group.attempts.len(),
    })?;
    let landed = land(
        host,
        &LandRequest {
            worktree: &winner.branch,
            how,
            into: group.into.as_deref(),
            message: None,
            timeout: std::time::Duration::from_secs(300),
        },
    )?;
    let mut discarded = Vec::new();
    let mut kept = Vec::new();
    for entry in &group.attempts {
        let is_winner = entry.index == index;
        if is_winner && group.strategy == GroupStrategy::Branch {
            continue;
        }
        // The winner's work is home: its temporary branch goes without force.
        let forced = force && !is_winner;
        match discard(host, &entry.branch, forced) {
            Ok(done) => match done.answer {
                CloseOutcome::Removed {
                    branch_kept: None, ..
                } => discarded.push(entry.index),
                CloseOutcome::Removed {
                    branch_kept: Some(why),
                    ..
                } => kept.push(Kept {
                    index: entry.index,
                    branch: entry.branch.clone(),
                    reason: why,
                }),
                CloseOutcome::Preserved { reason, .. } => kept.push(Kept {
                    index: entry.index,
                    branch: entry.branch.clone(),
                    reason,
                }),
            },
            // Discarded before: nothing of it is left.
            Err(DiscardError::NotFound(_)) => {}
            Err(e) => kept.push(Kept {
                index: entry.index,
                branch: entry.branch.clone(),
                reason: e.to_string(),
            }),
        }
    }
    Ok(Picked {
        group_id: id.clone(),
        index,
        landed,
        discarded,
        kept,
    })
}
