//! Worktree create, planned the same way from every edge (close decides in
//! `worktree::close`, which both edges call).

use crate::git::HostRepo;
use crate::git::policy::SourcePolicy;
use crate::git::refname::validate_branch_name;
use crate::workspace::StrategyKind;
use crate::worktree::{CreateRequest, WorktreeTarget};

use super::{PlanError, repository_defaults};

/// A worktree create as an edge was given it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreateInput {
    /// branch or merge-to-head (from the branch when unset).
    pub strategy: Option<StrategyKind>,
    /// The branch of the branch strategy.
    pub branch: Option<String>,
    /// Where a new branch starts.
    pub base: Option<String>,
    /// The source policy (default: the defaults' `source`, else `host_head`).
    pub source: Option<SourcePolicy>,
    /// Copy patterns (default: the repository's `copy_to_worktree`).
    pub copy: Vec<String>,
}

/// Checks a create and fills in the repository's defaults.
pub fn plan_create(host: &HostRepo, input: CreateInput) -> Result<CreateRequest, PlanError> {
    let defaults = repository_defaults(host)?;
    let strategy = match (input.strategy, &input.branch) {
        (Some(s), _) => s,
        (None, Some(_)) => StrategyKind::Branch,
        // A default of `head` has no worktree: a create makes merge-to-head.
        (None, None) => match defaults.strategy {
            Some(StrategyKind::Branch) => StrategyKind::Branch,
            _ => StrategyKind::MergeToHead,
        },
    };
    let target = match (strategy, input.branch) {
        (StrategyKind::Head, _) => return Err(PlanError::HeadHasNoWorktree),
        (StrategyKind::Branch, None) => return Err(PlanError::BranchNeeded),
        (StrategyKind::Branch, Some(name)) => {
            validate_branch_name(&name)?;
            WorktreeTarget::Branch {
                name,
                base: input.base,
            }
        }
        (StrategyKind::MergeToHead, Some(_)) => {
            return Err(PlanError::BranchWithStrategy(strategy.name()));
        }
        (StrategyKind::MergeToHead, None) if input.base.is_some() => {
            return Err(PlanError::BaseWithoutBranch);
        }
        (StrategyKind::MergeToHead, None) => WorktreeTarget::MergeToHead,
    };
    let copy = if input.copy.is_empty() {
        defaults.copy_to_worktree
    } else {
        input.copy
    };
    crate::worktree::copy::check_patterns(&copy)?;
    Ok(CreateRequest {
        target,
        source: input
            .source
            .or(defaults.source)
            .unwrap_or(SourcePolicy::HostHead),
        copy,
    })
}
