//! What a run gives back: its status, commits, usage and the whole result.

use super::*;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RunStatus {
    /// Every iteration succeeded (or the completion signal arrived) and the work is where the strategy puts it.
    Completed,
    /// The agent, a hook or the merge failed.
    Failed,
    /// A timeout fired.
    TimedOut,
    /// The run was cancelled.
    Cancelled,
    /// The agent ended asking the user (`question` says what); its work is
    /// brought back as for `completed`, its worktree kept for the reply.
    NeedsInput,
}

/// A commit the run created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitRef {
    /// Full commit id.
    pub sha: String,
}

/// Token usage of a run, as the agent reported it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Input tokens, cached ones included.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Of `input_tokens`, how many were read from the prompt cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Cost in US dollars, when the agent reports one or the user priced its tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// `cost_usd` is the tokens at the user's price (`[prices.<agent>]`), not a cost the agent reported.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cost_priced: bool,
}

/// An error as the result carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorInfo {
    /// Stable kind.
    pub kind: crate::error::ErrorKind,
    /// What happened and what to do.
    pub message: String,
}

/// The result of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    /// Run id.
    pub run_id: crate::ids::RunId,
    /// How it ended.
    pub status: RunStatus,
    /// Iterations started.
    pub iterations: u32,
    /// Commits created, oldest first.
    pub commits: Vec<CommitRef>,
    /// The branch the agent worked on.
    pub branch: String,
    /// Where the agent ran.
    pub worktree_path: PathBuf,
    /// The completion signal that matched.
    pub completion_signal: Option<String>,
    /// The agent's session id (set as soon as the agent names it).
    pub session_id: Option<String>,
    /// Token usage.
    pub usage: Option<Usage>,
    /// The agent's final answer: its last result, or else its last text.
    #[serde(default)]
    pub final_text: Option<String>,
    /// The run's log.
    pub log_file: PathBuf,
    /// Set when the worktree was kept (uncommitted changes, or a worktree handle).
    pub preserved_worktree_path: Option<PathBuf>,
    /// Set when a temporary branch was kept on purpose, with how to merge or discard it.
    pub kept_branch: Option<String>,
    /// What the merge back did (merge-to-head).
    pub merge: Option<MergeOutcome>,
    /// The host branch the merge back went into (merge-to-head).
    #[serde(default)]
    pub merged_into: Option<String>,
    /// Every commit the merge back brought into that branch, oldest first:
    /// the run's and those its branch held before (an interactive session's,
    /// an earlier run's not merged yet).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_commits: Vec<CommitRef>,
    /// Refs the agent changed in its private git dir other than its branch:
    /// listed, never carried to the host.
    #[serde(default)]
    pub refs_ignored: Vec<IgnoredRef>,
    /// Work the agent left on other private branches (or a detached HEAD),
    /// kept under `refs/slipway/kept/<run>/`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept_refs: Vec<super::private_git::KeptRef>,
    /// What the import of the run's branch into the host did, when the run
    /// left commits (the branch moved, or a side branch was made and why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import: Option<Imported>,
    /// Files the run's commits change that make programs run on the host
    /// once they are in a checkout (`slipway.toml`, git hooks, editor and
    /// shell config), for the user to read before their tools do.
    #[serde(default)]
    pub sensitive_changes: Vec<crate::review::sensitive::SensitiveChange>,
    /// What the check after the agent found (`--check`), when one was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<super::CheckResult>,
    /// What the check after the run moved aside or found (nested `.git`
    /// entries, symlinks leaving the checkout, new gitlinks, refused entries).
    #[serde(default)]
    pub quarantined: Vec<quarantine::Quarantined>,
    /// Things the user should know.
    pub warnings: Vec<String>,
    /// Workspace runs: what happened in each mount (branches, commits, kept checkouts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<workspace::MountResult>,
    /// Why it did not complete.
    pub error: Option<ErrorInfo>,
    /// What the agent asks, when it ended asking (status `needsInput`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<super::question::Question>,
    /// The run whose question this run answers (`slipway reply`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<crate::ids::RunId>,
    /// The budget that ended it, when one did (status `timedOut`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetStop>,
    /// What to do next with the work it left (a kept worktree or branch).
    #[serde(default)]
    pub actions: Vec<crate::actions::Action>,
}

impl RunResult {
    /// Fills in `actions` from what the run left: a worktree or a kept
    /// branch whose work is not home yet can be reviewed, landed or discarded.
    pub fn settle_actions(&mut self) {
        let left = self.preserved_worktree_path.is_some() || self.kept_branch.is_some();
        self.actions = if left && !self.branch.is_empty() && self.mounts.is_empty() {
            crate::actions::unlanded(&self.branch)
        } else {
            Vec::new()
        };
    }
}

/// What a merge back did, for people (logs, the command line).
impl std::fmt::Display for MergeOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let short = |sha: &str| sha[..sha.len().min(10)].to_owned();
        match self {
            MergeOutcome::UpToDate => f.write_str("nothing new for the host branch"),
            MergeOutcome::FastForward { from, to } => write!(
                f,
                "fast-forwarded the host branch from {} to {}",
                short(from),
                short(to)
            ),
            MergeOutcome::Merged { commit } => {
                write!(f, "merge commit {} on the host branch", short(commit))
            }
        }
    }
}
