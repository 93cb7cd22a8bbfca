//! Several attempts at one prompt: N runs from one source commit, each on
//! its own branch, worktree and sandbox, in parallel, as one group with one
//! id (`slipway run --attempts N`, `--agent A --agent B`). Their host git
//! writes go one at a time through [`crate::git::queue`]; the group's record
//! names the runs, and [`compare`] and [`pick`] read it back.

use std::sync::Arc;

use crate::agent::AgentSpec;
use crate::error::{ErrorKind, Failure};
use crate::git::HostRepo;
use crate::git::policy::{self, SourcePolicy};
use crate::git::refname::validate_branch_name;
use crate::ids::{GroupId, RunId};
use crate::run::{RunControl, RunEvent, RunRequest, RunResult, RunStrategy};

pub mod compare;
pub mod pick;
pub mod record;

pub use record::{AttemptEntry, GroupRecord, GroupStrategy, MAX_ATTEMPTS, PROMPT_CHARS};

/// Receives the events of attempt `index` (1…N).
pub type AttemptSink = Arc<dyn Fn(usize, &RunEvent) + Send + Sync>;

/// Why a group could not start.
#[derive(Debug, thiserror::Error)]
pub enum AttemptsError {
    /// The request cannot be made into attempts.
    #[error("{0}")]
    Invalid(String),
    /// The source could not be resolved.
    #[error(transparent)]
    Source(#[from] policy::SourceError),
    /// `.slipway/` is not slipway's own.
    #[error(transparent)]
    Untrusted(#[from] crate::state_trust::Untrusted),
    /// The group record could not be written.
    #[error("cannot write the attempts record: {0}")]
    Io(String),
}

impl Failure for AttemptsError {
    fn kind(&self) -> ErrorKind {
        match self {
            AttemptsError::Invalid(_) => ErrorKind::InvalidParams,
            AttemptsError::Source(e) => e.kind(),
            AttemptsError::Untrusted(_) => ErrorKind::UntrustedState,
            AttemptsError::Io(_) => ErrorKind::Io,
        }
    }
}

/// A group as it ended: its record and each attempt's result, in order.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupOutcome {
    /// The group.
    #[serde(flatten)]
    pub group: GroupRecord,
    /// Each attempt's run result.
    pub results: Vec<RunResult>,
}

/// The agents of `count` attempts of each of `agents`, in order: every
/// agent's attempts together.
pub fn agents_for(agents: &[AgentSpec], count: usize) -> Vec<AgentSpec> {
    agents
        .iter()
        .flat_map(|a| std::iter::repeat_n(a.clone(), count))
        .collect()
}

/// The group's branches and where they start, before anything is made.
fn plan_branches(
    host: &HostRepo,
    request: &RunRequest,
    group: &GroupId,
    count: usize,
) -> Result<(GroupStrategy, Vec<String>, String, Option<String>), AttemptsError> {
    if request.worktree.is_some() || request.sandbox_id.is_some() || request.workspace.is_some() {
        return Err(AttemptsError::Invalid(
            "attempts each make their own worktree: drop --worktree, --in-sandbox and --workspace"
                .into(),
        ));
    }
    let (strategy, stem, policy) = match &request.strategy {
        RunStrategy::Head => {
            return Err(AttemptsError::Invalid(
                "attempts cannot all work in the host checkout: use --branch NAME (attempts on NAME/1…N) or merge-to-head".into(),
            ));
        }
        RunStrategy::Branch { name, base } => (
            GroupStrategy::Branch,
            name.clone(),
            match base {
                Some(reference) => SourcePolicy::Named {
                    reference: reference.clone(),
                },
                None => request.source.clone(),
            },
        ),
        RunStrategy::MergeToHead => (
            GroupStrategy::MergeToHead,
            format!("slipway/{group}"),
            request.source.clone(),
        ),
    };
    validate_branch_name(&stem).map_err(|e| AttemptsError::Invalid(e.to_string()))?;
    if crate::git::worktrees::branch_tip(host.git(), &stem).is_some() {
        return Err(AttemptsError::Invalid(format!(
            "branch '{stem}' exists, and git cannot keep the attempts' branches '{stem}/1'… beside it: choose another --branch"
        )));
    }
    let branches: Vec<String> = (1..=count).map(|n| format!("{stem}/{n}")).collect();
    for branch in &branches {
        if crate::git::worktrees::branch_tip(host.git(), branch).is_some() {
            return Err(AttemptsError::Invalid(format!(
                "branch '{branch}' exists already: choose another --branch for the attempts"
            )));
        }
    }
    // Resolved once: every attempt starts from this very commit, whatever
    // moves while they are made.
    let source = policy::resolve(host.git(), &policy)?.commit;
    let into = match strategy {
        GroupStrategy::MergeToHead => Some(host.current_branch().ok_or_else(|| {
            AttemptsError::Invalid(
                "the host's HEAD is detached: the winner of merge-to-head attempts would have no branch to land in; check out a branch or use --branch".into(),
            )
        })?),
        GroupStrategy::Branch => None,
    };
    Ok((strategy, branches, source, into))
}

/// Starts one attempt per entry of `agents` from `request` and waits for
/// them all (see [`prepare_group`] and [`run_group`]).
pub fn run_attempts(
    host: &HostRepo,
    request: &RunRequest,
    agents: &[AgentSpec],
    control: &RunControl,
    events: AttemptSink,
) -> Result<GroupOutcome, AttemptsError> {
    let group = prepare_group(host, request, agents)?;
    Ok(run_group(host, request, agents, group, control, events))
}

/// Checks the request, resolves the source once and writes the group's
/// record naming every attempt's run and branch; nothing is created yet.
pub fn prepare_group(
    host: &HostRepo,
    request: &RunRequest,
    agents: &[AgentSpec],
) -> Result<GroupRecord, AttemptsError> {
    host.state_trusted()?;
    if agents.is_empty() || agents.len() > MAX_ATTEMPTS {
        return Err(AttemptsError::Invalid(format!(
            "{} attempts asked for: give 1 to {MAX_ATTEMPTS}",
            agents.len()
        )));
    }
    let group_id = GroupId::new();
    let (strategy, branches, source, into) = plan_branches(host, request, &group_id, agents.len())?;
    let attempts: Vec<AttemptEntry> = branches
        .iter()
        .zip(agents)
        .enumerate()
        .map(|(n, (branch, agent))| AttemptEntry {
            index: n + 1,
            run_id: RunId::new(),
            agent: agent.name().to_owned(),
            branch: branch.clone(),
        })
        .collect();
    let group = GroupRecord {
        group_id,
        created: crate::util::now_secs(),
        source_commit: source.clone(),
        strategy,
        into,
        check: request.check.clone(),
        prompt: match &request.prompt {
            crate::agent::prompt::PromptSource::Inline(text) => record::prompt_line(text),
            crate::agent::prompt::PromptSource::File(_) => None,
        },
        attempts,
    };
    crate::worktree::ensure_slipway_dir(host).map_err(|e| AttemptsError::Io(e.to_string()))?;
    group
        .save(&host.slipway_dir())
        .map_err(|e| AttemptsError::Io(e.to_string()))?;
    Ok(group)
}

/// Runs the attempts of a prepared group, one per entry of `agents`, and
/// waits for them all. Each runs on its own thread with its own repository
/// handle; a stop request on `control` stops them all.
pub fn run_group(
    host: &HostRepo,
    request: &RunRequest,
    agents: &[AgentSpec],
    group: GroupRecord,
    control: &RunControl,
    events: AttemptSink,
) -> GroupOutcome {
    let source = group.source_commit.clone();
    let root = host.root().to_path_buf();
    let results: Vec<RunResult> = std::thread::scope(|scope| {
        let handles: Vec<_> = group
            .attempts
            .iter()
            .zip(agents)
            .map(|(entry, agent)| {
                let mut one = request.clone();
                one.run_id = Some(entry.run_id.clone());
                one.agent = agent.clone();
                one.strategy = RunStrategy::Branch {
                    name: entry.branch.clone(),
                    base: Some(source.clone()),
                };
                let index = entry.index;
                let sink = events.clone();
                let control = control.clone();
                let root = root.clone();
                let run_id = entry.run_id.clone();
                scope.spawn(move || {
                    let events: crate::run::EventSink =
                        Arc::new(move |event: &RunEvent| sink(index, event));
                    run_one(&root, one, control, events, run_id)
                })
            })
            .collect();
        handles
            .into_iter()
            .zip(&group.attempts)
            .map(|(handle, entry)| {
                handle
                    .join()
                    .unwrap_or_else(|_| died(&entry.run_id, "the attempt's thread panicked".into()))
            })
            .collect()
    });
    GroupOutcome { group, results }
}

/// One attempt on this thread: its own repository handle and runtime.
fn run_one(
    root: &std::path::Path,
    request: RunRequest,
    control: RunControl,
    events: crate::run::EventSink,
    run_id: RunId,
) -> RunResult {
    let host = match HostRepo::open(root) {
        Ok(host) => host,
        Err(e) => return died(&run_id, format!("cannot open the repository: {e}")),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return died(&run_id, format!("cannot start the attempt's runtime: {e}")),
    };
    match runtime.block_on(crate::run::run(&host, request, control, events)) {
        Ok(result) => result,
        Err(failure) => *failure.result,
    }
}

/// The result of an attempt that never got to run.
fn died(run_id: &RunId, message: String) -> RunResult {
    crate::run::record::RunRecord::starting(run_id).failed_result(std::path::Path::new(""), message)
}
