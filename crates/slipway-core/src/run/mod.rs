//! Runs: one agent invocation of up to `max_iterations` iterations in one
//! sandbox on one worktree, with hooks, timeouts, the ref guard and the
//! strategy that brings the work back.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::agent::prompt::{Prompt, PromptError, PromptSource};
use crate::agent::{Agent, AgentEvent, AgentSpec, AgentSpecError};
use crate::git::HostRepo;
use crate::git::import::Imported;
use crate::git::merge::{MergeError, MergeOutcome, MergeRequest, merge_into_host};
use crate::git::policy::SourcePolicy;
use crate::git::private_dir::IgnoredRef;
use crate::git::refname::{InvalidBranchName, validate_branch_name};
use crate::sandbox::host::HostSandbox;
use crate::sandbox::{ExecSpec, OutputEvent, Sandbox, SandboxError};
use crate::worktree::lock::{BranchLock, LockError};
use record::{EventLog, RunRecord, RunState};

mod active;
pub mod heard;
pub mod listing;
pub mod log_read;
mod place;
pub mod private_git;
mod process;
pub mod quarantine;
pub mod record;
mod returned;
pub mod sandboxes;
pub mod workspace;

use crate::agent::session::TokenTotals;
use crate::worktree::{
    self, CloseOutcome, CreateError, CreateRequest, WorktreeRecord, WorktreeState,
    WorktreeStrategy, WorktreeTarget,
};
pub(crate) use active::docker_config;
use active::{ActiveSandbox, attach_sandbox, sandbox_name, start_sandbox};
use place::{Place, finish_place, prepare_place};
use process::{IterationEnd, StreamRules, run_hooks, run_iteration, run_to_end};

/// The default completion signal.
pub const DEFAULT_COMPLETION_SIGNAL: &str = "<promise>COMPLETE</promise>";

/// Where the agent's commits land.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum RunStrategy {
    /// Straight into the host working directory.
    Head,
    /// A temporary branch in a worktree, merged back into the host's current branch.
    MergeToHead,
    /// A named branch in a worktree, kept.
    Branch { name: String, base: Option<String> },
}

/// Which sandbox runs the agent.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum SandboxSpec {
    /// A host process in the worktree.
    #[default]
    None,
    /// A Docker container (Engine API) with the worktree bind-mounted at its
    /// own path and the run's private git dir beside it.
    Docker {
        /// The image; it must be on the engine already (nothing is pulled).
        image: String,
        /// Network mode; `None` is the engine's default.
        #[serde(default)]
        network: Option<String>,
        /// Memory and process limits.
        #[serde(default, skip_serializing_if = "Limits::is_default")]
        limits: Limits,
    },
    /// A Docker container that sees no host path: code goes in as a git bundle
    /// plus files, commits and files come back. Works with a remote engine.
    DockerIsolated {
        /// The image; it must be on the engine already (nothing is pulled).
        image: String,
        /// Network mode; `None` is the engine's default.
        #[serde(default)]
        network: Option<String>,
        /// Memory and process limits.
        #[serde(default, skip_serializing_if = "Limits::is_default")]
        limits: Limits,
    },
}

/// What a container may take of the machine. Unset means the default: half
/// the machine's memory (no swap beyond it) and 4096 processes; 0 means no
/// limit at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Memory in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// Processes and threads at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pids: Option<u64>,
}

/// The default process limit of a container.
pub const DEFAULT_PIDS: u64 = 4096;

impl Limits {
    fn is_default(&self) -> bool {
        *self == Limits::default()
    }

    /// The limits to apply, defaults filled in (`None`: no limit).
    pub fn resolved(&self) -> (Option<i64>, Option<i64>) {
        let memory = match self.memory_bytes {
            Some(0) => None,
            Some(bytes) => Some(bytes),
            None => machine_memory().map(|m| m / 2),
        };
        let pids = match self.pids {
            Some(0) => None,
            Some(n) => Some(n),
            None => Some(DEFAULT_PIDS),
        };
        let signed = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        (memory.map(signed), pids.map(signed))
    }

    /// Parses a memory size: a number of bytes, or with `k`, `m`, `g` or `t`
    /// (powers of 1024, as Docker reads them); `0` means no limit.
    pub fn parse_memory(text: &str) -> Result<u64, String> {
        let t = text.trim().to_ascii_lowercase();
        let t = t.strip_suffix('b').unwrap_or(&t);
        let (digits, shift) = match t.chars().last() {
            Some('k') => (&t[..t.len() - 1], 10),
            Some('m') => (&t[..t.len() - 1], 20),
            Some('g') => (&t[..t.len() - 1], 30),
            Some('t') => (&t[..t.len() - 1], 40),
            _ => (t, 0),
        };
        let n: u64 = digits.parse().map_err(|_| {
            format!(
                "'{text}' is not a memory size; give bytes or a size like 512m or 4g (0: no limit)"
            )
        })?;
        n.checked_mul(1u64 << shift)
            .ok_or_else(|| format!("'{text}' is larger than any machine's memory"))
    }
}

/// The machine's physical memory in bytes.
fn machine_memory() -> Option<u64> {
    // SAFETY: sysconf has no preconditions.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (pages > 0 && size > 0).then(|| (pages as u64).saturating_mul(size as u64))
}

impl SandboxSpec {
    /// The kind's name, as in the JSON `type`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            SandboxSpec::None => "none",
            SandboxSpec::Docker { .. } => "docker",
            SandboxSpec::DockerIsolated { .. } => "docker-isolated",
        }
    }
}

/// Commands run before the agent.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Hooks {
    /// On the host, in the worktree, before the sandbox starts.
    pub host_on_worktree_ready: Vec<String>,
    /// Inside the sandbox, before the agent.
    pub sandbox_on_sandbox_ready: Vec<String>,
}

/// Every timeout of a run.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Timeouts {
    /// No output for this long kills the agent.
    #[serde(with = "secs")]
    pub idle: Duration,
    /// Each hook and each prompt command.
    #[serde(with = "secs")]
    pub hook: Duration,
    /// Silence after the completion signal that ends the iteration successfully.
    #[serde(with = "secs")]
    pub completion_grace: Duration,
    /// Merging back into the host, up to the first change to the host.
    #[serde(with = "secs", default = "default_merge_timeout")]
    pub merge: Duration,
    /// Bringing an isolated sandbox's work to the host.
    #[serde(with = "secs", default = "default_collect_timeout")]
    pub collect: Duration,
}

fn default_collect_timeout() -> Duration {
    Timeouts::default().collect
}

fn default_merge_timeout() -> Duration {
    Timeouts::default().merge
}

/// Durations as whole seconds in files.
mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_secs())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_secs(u64::deserialize(d)?))
    }
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            idle: Duration::from_secs(600),
            hook: Duration::from_secs(300),
            completion_grace: Duration::from_secs(60),
            merge: Duration::from_secs(300),
            collect: Duration::from_secs(600),
        }
    }
}

/// Everything a run needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRequest {
    /// Run id; generated when `None`.
    pub run_id: Option<String>,
    /// Branch strategy (ignored when `worktree` names an existing one, whose strategy wins).
    pub strategy: RunStrategy,
    /// An existing worktree (id, path or branch) to run in; it is kept after the run.
    pub worktree: Option<String>,
    /// Where a new branch starts.
    pub source: SourcePolicy,
    /// Paths copied from the host into a new worktree.
    pub copy: Vec<String>,
    /// Which agent.
    pub agent: AgentSpec,
    /// Which sandbox.
    pub sandbox: SandboxSpec,
    /// Run on a workspace: several mounts, each shared or isolated (see [`workspace`]).
    #[serde(default)]
    pub workspace: Option<workspace::WorkspacePlan>,
    /// Run in this long-lived sandbox (see [`sandboxes`]) instead of a new one;
    /// its worktree and kind win over `worktree` and `sandbox`.
    #[serde(default)]
    pub sandbox_id: Option<String>,
    /// The prompt.
    pub prompt: PromptSource,
    /// Template arguments.
    pub prompt_args: BTreeMap<String, String>,
    /// Iterations at most.
    pub max_iterations: u32,
    /// Output that ends the run early.
    pub completion_signals: Vec<String>,
    /// Timeouts.
    pub timeouts: Timeouts,
    /// Hooks.
    pub hooks: Hooks,
}

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
    /// Cost in US dollars, when the agent reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
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
    pub run_id: String,
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
    /// Refs the agent changed in its private git dir other than its branch:
    /// listed, never carried to the host.
    #[serde(default)]
    pub refs_ignored: Vec<IgnoredRef>,
    /// What the import of the run's branch into the host did, when the run
    /// left commits (the branch moved, or a side branch was made and why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import: Option<Imported>,
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
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The request does not pass the plan's checks.
    #[error(transparent)]
    Plan(#[from] crate::plan::PlanError),
    /// The prompt cannot be used.
    #[error(transparent)]
    Prompt(#[from] PromptError),
    /// The agent spec cannot be used.
    #[error(transparent)]
    Agent(#[from] AgentSpecError),
    /// A bad branch name.
    #[error(transparent)]
    InvalidBranch(#[from] InvalidBranchName),
    /// The worktree could not be created.
    #[error(transparent)]
    Worktree(#[from] CreateError),
    /// The branch is locked by another create or run.
    #[error(transparent)]
    BranchInUse(#[from] LockError),
    /// Workspace mounts with the `ask` policy need a choice.
    #[error("a source branch must be chosen for {}", mounts.iter().map(|(dst, choices)| format!("{} (one of: {})", dst.display(), choices.join(", "))).collect::<Vec<_>>().join("; "))]
    SourcesRequired {
        /// Every `ask` mount's `dst`, in order, with its choices.
        mounts: Vec<(PathBuf, Vec<String>)>,
    },
    /// `--worktree` named nothing.
    #[error("no slipway worktree matches '{0}'")]
    WorktreeNotFound(String),
    /// A hook failed.
    #[error("hook `{command}` ({stage}) failed with exit code {code}:\n{output}")]
    Hook {
        stage: &'static str,
        command: String,
        code: i32,
        output: String,
    },
    /// A hook or prompt command ran too long.
    #[error("hook `{command}` ({stage}) timed out after {secs} s")]
    HookTimeout {
        stage: &'static str,
        command: String,
        secs: u64,
    },
    /// The agent printed nothing for too long.
    #[error("the agent was idle for {secs} s (idle timeout) and was stopped")]
    IdleTimeout { secs: u64 },
    /// The agent exited non-zero, or exited 0 after reporting an error as its outcome.
    #[error("the agent {} in iteration {iteration}{}", exit_text(*code), reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    AgentFailed {
        code: i32,
        iteration: u32,
        /// The error the agent reported last, if any.
        reason: Option<String>,
    },
    /// The session to resume cannot be found or moved where the run needs it.
    #[error(transparent)]
    Session(#[from] crate::agent::session::SessionError),
    /// The run was cancelled.
    #[error("the run was cancelled")]
    Cancelled,
    /// The merge back was aborted.
    #[error(transparent)]
    Merge(#[from] MergeError),
    /// The sandbox failed.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// `head` with a worktree handle or similar misuse.
    #[error("{0}")]
    Invalid(String),
    /// State made by an earlier version that cannot be used safely.
    #[error("{0}")]
    Outdated(String),
    /// Filesystem trouble.
    #[error("{0}")]
    Io(String),
    /// libgit2 failed.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
    /// The run's private git state could not be made, or its work imported.
    #[error(transparent)]
    PrivateGit(#[from] private_git::RunGitError),
}

impl RunError {
    /// Stable machine-readable kind.
    pub fn kind(&self) -> crate::error::ErrorKind {
        match self {
            RunError::Plan(e) => crate::error::Failure::kind(e),
            RunError::Prompt(e) => crate::plan::prompt_kind(e),
            RunError::Agent(e) => e.kind(),
            RunError::Invalid(_) => crate::error::ErrorKind::InvalidParams,
            RunError::Outdated(_) => crate::error::ErrorKind::OutdatedState,
            RunError::InvalidBranch(_) => crate::error::ErrorKind::InvalidBranchName,
            RunError::Worktree(e) => e.kind(),
            RunError::BranchInUse(LockError::InUse { .. }) => crate::error::ErrorKind::BranchInUse,
            RunError::BranchInUse(_) | RunError::Io(_) => crate::error::ErrorKind::Io,
            RunError::WorktreeNotFound(_) => crate::error::ErrorKind::WorktreeNotFound,
            RunError::SourcesRequired { .. } => crate::error::ErrorKind::SourceBranchRequired,
            RunError::Hook { .. } => crate::error::ErrorKind::HookFailed,
            RunError::HookTimeout { .. } => crate::error::ErrorKind::HookTimeout,
            RunError::IdleTimeout { .. } => crate::error::ErrorKind::IdleTimeout,
            RunError::AgentFailed { .. } => crate::error::ErrorKind::AgentFailed,
            RunError::Session(e) => e.kind(),
            RunError::Cancelled => crate::error::ErrorKind::Cancelled,
            RunError::Merge(e) => e.kind(),
            RunError::Sandbox(_) => crate::error::ErrorKind::Sandbox,
            RunError::Git(_) => crate::error::ErrorKind::Git,
            RunError::PrivateGit(e) => e.kind(),
        }
    }

    /// The status a run that failed this way ends with.
    pub fn status(&self) -> RunStatus {
        match self {
            RunError::IdleTimeout { .. }
            | RunError::HookTimeout { .. }
            | RunError::Merge(MergeError::Timeout { .. }) => RunStatus::TimedOut,
            RunError::Cancelled => RunStatus::Cancelled,
            _ => RunStatus::Failed,
        }
    }
}

/// How an agent's exit reads in an error message.
fn exit_text(code: i32) -> String {
    if code == 0 {
        "reported an error and exited".to_owned()
    } else {
        format!("exited with code {code}")
    }
}

/// A failed run: the typed error and everything the result says (the
/// preserved worktree path, kept branch, commits, log file).
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct RunFailure {
    /// What went wrong.
    pub error: RunError,
    /// The result with every field filled in as far as the run got.
    pub result: Box<RunResult>,
}

/// Something that happened during a run, for progress displays.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "event",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum RunEvent {
    /// A phase started: `worktreeReady`, `hooks`, `agentStarted`, `merging`, …
    Phase { phase: String, message: String },
    /// An iteration started.
    Iteration { iteration: u32, of: u32 },
    /// A line of agent output.
    Output { line: String },
}

/// Receives run events.
pub type EventSink = Arc<dyn Fn(&RunEvent) + Send + Sync>;

/// Why a run could not be cancelled.
#[derive(Debug, thiserror::Error)]
pub enum CancelError {
    /// No record of that run.
    #[error("no run '{0}' in this repository")]
    UnknownRun(String),
}

impl CancelError {
    /// Stable machine-readable kind.
    pub fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::UnknownRun
    }
}

/// Asks a run to stop: its process gets SIGTERM, kills the agent's tree and
/// finishes with status `cancelled`. Returns the run's state at the time of asking.
pub fn cancel(host: &HostRepo, run_id: &str) -> Result<RunState, CancelError> {
    let slipway_dir = host.slipway_dir();
    let mut record = RunRecord::load(&slipway_dir, run_id)
        .ok_or_else(|| CancelError::UnknownRun(run_id.to_owned()))?;
    if record.settle_if_dead(&slipway_dir) || record.state == RunState::Finished {
        return Ok(RunState::Finished);
    }
    if let Ok(pid) = libc::pid_t::try_from(record.pid) {
        // SAFETY: signalling the run process named in its own record.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
    Ok(RunState::Running)
}

/// A new run id: time plus randomness, sortable.
pub fn new_run_id() -> String {
    let secs = crate::util::now_secs();
    format!("run-{secs}-{}", crate::util::random_hex(3))
}

struct RunLog {
    file: Option<std::fs::File>,
}

impl RunLog {
    fn line(&mut self, text: &str) {
        if let Some(f) = &mut self.file {
            let _ = writeln!(f, "{text}");
        }
    }
}

struct Ctx<'a> {
    log: RunLog,
    event_log: EventLog,
    events: &'a EventSink,
    result: RunResult,
    control: RunControl,
    timeouts: Timeouts,
    /// The branch lock every process of the run holds (see [`ExecSpec::hold`]).
    hold: Option<std::os::fd::RawFd>,
}

/// How a run is asked to stop. `cancel` stops the agent; the work it did is
/// still brought back. `abandon`, a second request, also stops bringing back
/// an isolated sandbox's work (it then stays in the container, and the result
/// says how to copy it out).
#[derive(Debug, Clone, Default)]
pub struct RunControl {
    /// Stop the agent.
    pub cancel: CancellationToken,
    /// Stop waiting for the work to come back too.
    pub abandon: CancellationToken,
}

impl RunControl {
    /// Controls whose first and second stop requests come from one signal
    /// stream: call [`RunControl::stop`] for each request.
    pub fn new() -> RunControl {
        RunControl::default()
    }

    /// A stop request: the first cancels, any later one abandons.
    pub fn stop(&self) {
        if self.cancel.is_cancelled() {
            self.abandon.cancel();
        } else {
            self.cancel.cancel();
        }
    }
}

impl Ctx<'_> {
    fn phase(&mut self, phase: &str, message: String) {
        self.log.line(&format!("[slipway] {phase}: {message}"));
        self.emit(RunEvent::Phase {
            phase: phase.to_owned(),
            message,
        });
    }

    /// Puts what the import of the run's branch did into the result: its
    /// commits, and a warning when they went to a side branch.
    fn record_import(&mut self, imported: Option<Imported>) {
        if let Some(imported) = &imported {
            self.result.commits = imported
                .commits
                .iter()
                .map(|sha| CommitRef { sha: sha.clone() })
                .collect();
            if let Some(side) = &imported.side_branch {
                self.result.warnings.push(format!(
                    "the run's commits are on '{}': {}",
                    side.name, side.reason
                ));
            }
        }
        self.result.import = imported;
    }

    /// Sends an event to the caller and to the run's events file.
    fn emit(&mut self, event: RunEvent) {
        if !matches!(event, RunEvent::Output { .. }) {
            self.event_log.append(&event);
        }
        (self.events)(&event);
    }
}

/// The user's identity for the agent's commits, as environment (never as
/// config: the user's global git config is not touched).
fn identity_env(host: &HostRepo) -> Vec<(String, String)> {
    let Some((name, email)) = host.identity() else {
        return Vec::new();
    };
    vec![
        ("GIT_AUTHOR_NAME".into(), name.clone()),
        ("GIT_AUTHOR_EMAIL".into(), email.clone()),
        ("GIT_COMMITTER_NAME".into(), name),
        ("GIT_COMMITTER_EMAIL".into(), email),
    ]
}

/// Runs an agent as the request says. Returns the result, or the typed error
/// together with the result as far as it got. The run's record under
/// `.slipway/runs/` says it is running while it runs and holds the result after.
pub async fn run(
    host: &HostRepo,
    request: RunRequest,
    control: RunControl,
    events: EventSink,
) -> Result<RunResult, RunFailure> {
    let run_id = request.run_id.clone().unwrap_or_else(new_run_id);
    let slipway_dir = host.slipway_dir();
    let mut record = RunRecord::starting(&run_id);
    record.agent = Some(request.agent.name().to_owned());
    record.sandbox = Some(request.sandbox.kind_name().to_owned());
    // A run nobody can follow (its record cannot be written: a full disk, a
    // read-only folder) does not start.
    let saved = worktree::ensure_slipway_dir(host)
        .and_then(|()| record.save(&slipway_dir))
        .map_err(|e| {
            RunError::Io(format!(
                "cannot write the run record under {}: {e}",
                slipway_dir.display()
            ))
        });
    if let Err(error) = saved {
        let mut result = RunRecord::starting(&run_id).failed_result(&slipway_dir, String::new());
        result.error = Some(ErrorInfo {
            kind: error.kind().to_owned(),
            message: error.to_string(),
        });
        return Err(RunFailure {
            error,
            result: Box::new(result),
        });
    }
    let mut outcome = run_recorded(host, request, run_id, control, events, &mut record).await;
    record.state = RunState::Finished;
    record.finished = Some(crate::util::now_secs());
    record.result = Some(match &outcome {
        Ok(result) => result.clone(),
        Err(failure) => (*failure.result).clone(),
    });
    if let Err(e) = record.save(&slipway_dir) {
        // The run's work is where its result says; only the record of it is
        // missing, and whoever reads the record later learns it from git.
        tracing::error!("cannot write the run record: {e}");
        let warning = format!(
            "the run record could not be written ({e}): editors and `slipway runs` will report this run as died; its commits are on its branch"
        );
        match &mut outcome {
            Ok(result) => result.warnings.push(warning),
            Err(failure) => failure.result.warnings.push(warning),
        }
    }
    heard::ended(&slipway_dir, &record.run_id);
    outcome
}

async fn run_recorded(
    host: &HostRepo,
    request: RunRequest,
    run_id: String,
    control: RunControl,
    events: EventSink,
    record: &mut RunRecord,
) -> Result<RunResult, RunFailure> {
    let logs_dir = host.slipway_dir().join("logs");
    let log_file = logs_dir.join(format!("{run_id}.log"));
    let file = worktree::ensure_slipway_dir(host)
        .and_then(|()| std::fs::create_dir_all(&logs_dir))
        .and_then(|()| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log_file)
        })
        .ok();
    let mut ctx = Ctx {
        log: RunLog { file },
        event_log: EventLog::open(&host.slipway_dir(), &run_id),
        events: &events,
        control: control.clone(),
        timeouts: request.timeouts,
        hold: None,
        result: RunResult {
            run_id: run_id.clone(),
            status: RunStatus::Failed,
            iterations: 0,
            commits: Vec::new(),
            branch: String::new(),
            worktree_path: host.root().to_path_buf(),
            completion_signal: None,
            session_id: None,
            usage: None,
            final_text: None,
            log_file: log_file.clone(),
            preserved_worktree_path: None,
            kept_branch: None,
            merge: None,
            merged_into: None,
            refs_ignored: Vec::new(),
            import: None,
            quarantined: Vec::new(),
            warnings: Vec::new(),
            mounts: Vec::new(),
            error: None,
        },
    };
    let fail = |mut ctx: Ctx<'_>, error: RunError| {
        ctx.log.line(&format!("[slipway] failed: {error}"));
        ctx.result.status = error.status();
        ctx.result.error = Some(ErrorInfo {
            kind: error.kind(),
            message: error.to_string(),
        });
        Err(RunFailure {
            error,
            result: Box::new(ctx.result),
        })
    };

    // Everything that can be checked is checked before anything is created,
    // by the same checks every edge's plan ends with.
    let (prompt, agent) = match crate::plan::check(host, &request) {
        Ok(checked) => {
            ctx.result.warnings.extend(checked.warnings);
            (checked.prompt, checked.agent)
        }
        Err(e) => return fail(ctx, e.into()),
    };

    let mut request = request;
    if let Some(id) = request.sandbox_id.clone() {
        match sandboxes::SandboxRecord::load(host, &id) {
            Some(sandbox) if let Some(refusal) = sandboxes::outdated(&sandbox) => {
                return fail(ctx, refusal);
            }
            Some(sandbox) => {
                request.worktree = Some(sandbox.worktree_id);
                request.sandbox = sandbox.spec;
            }
            None => {
                return fail(
                    ctx,
                    RunError::Invalid(format!(
                        "no sandbox '{id}' in this repository; see `slipway sandbox list`"
                    )),
                );
            }
        }
    }
    let (mut place, notes) = match prepare_place(host, &request) {
        Ok(p) => p,
        Err(e) => return fail(ctx, e),
    };
    if let Err(e) = place.lock.name_run(&run_id, request.agent.name()) {
        // Only the wording of a "branch in use" error depends on it.
        tracing::warn!("could not name the run in its branch lock: {e}");
    }
    ctx.result.warnings.extend(notes);
    ctx.result.branch = place.branch.clone();
    ctx.result.worktree_path = place.cwd.clone();
    record.branch = Some(place.branch.clone());
    record.worktree_path = Some(place.cwd.clone());
    record.start_commit = if place.record.is_none() {
        host.head_commit()
    } else {
        crate::git::worktrees::branch_tip(host.git(), &place.branch)
    }
    .map(|c| c.to_string());
    if let Err(e) = record.save(&host.slipway_dir()) {
        let strategy = place.record.as_ref().map(|r| r.strategy);
        finish_place(&mut ctx, host, &place, strategy);
        return fail(
            ctx,
            RunError::Io(format!("cannot write the run record: {e}")),
        );
    }
    let strategy = place.record.as_ref().map(|r| r.strategy);
    if let Some(mut record) = place.record.clone() {
        record.state = WorktreeState::Running;
        record.run_id = Some(run_id.clone());
        record.run_pid = Some(std::process::id());
        record.why = None;
        if let Err(e) = record.save(&host.slipway_dir()) {
            return fail(ctx, RunError::Io(e.to_string()));
        }
    }
    ctx.phase(
        "worktreeReady",
        format!("{} on {}", place.cwd.display(), place.branch),
    );

    let mut place = place;
    ctx.hold = Some(place.lock.raw_fd());
    // The branch's commit before the agent ran (for the quarantine's gitlinks).
    let tip_at_start = if place.record.is_none() {
        host.head_commit()
    } else {
        crate::git::worktrees::branch_tip(host.git(), &place.branch)
    };
    let outcome = drive(
        &mut ctx,
        host,
        &request,
        &mut place,
        &prompt,
        agent.as_ref(),
        &control.cancel,
    )
    .await;

    // Nothing in the sandbox can write any more: bring the branch in.
    let mut import_error = None;
    if let Some(git) = place.git.take() {
        ctx.phase(
            "importing",
            format!("bringing {} into the host", git.refname()),
        );
        let paused = match &request.sandbox_id {
            Some(id) => sandboxes::pause(host, id).await,
            None => None,
        };
        match git.import(host, &run_id) {
            Ok(report) => {
                for ignored in &report.refs_ignored {
                    ctx.log.line(&format!(
                        "[slipway] ignored: {} changed privately ({} -> {})",
                        ignored.name,
                        ignored.before.as_deref().unwrap_or("absent"),
                        ignored.after.as_deref().unwrap_or("deleted")
                    ));
                }
                ctx.result.warnings.extend(report.warnings);
                ctx.result.refs_ignored = report.refs_ignored;
                ctx.record_import(report.imported);
            }
            Err(e) => import_error = Some(RunError::from(e)),
        }
        if let Some(paused) = paused {
            paused.resume().await;
        }
    }

    if let Some(baseline) = place.baseline.take() {
        let base = tip_at_start;
        let tip = ctx
            .result
            .commits
            .last()
            .and_then(|c| git2::Oid::from_str(&c.sha).ok());
        let found = quarantine::check(
            &place.cwd,
            &quarantine::folder(&host.slipway_dir(), &run_id),
            Some(&baseline),
            Some(host.git()),
            base,
            tip,
        );
        for q in &found {
            ctx.log.line(&format!(
                "[slipway] quarantine: {} ({:?}) {}",
                q.path, q.finding, q.detail
            ));
        }
        if !found.is_empty() {
            ctx.result.warnings.push(format!(
                "the run left {} thing(s) in {} that your git would run or follow ({} moved to {}); see `quarantined`",
                found.len(),
                place.cwd.display(),
                found.iter().filter(|q| q.moved_to.is_some()).count(),
                quarantine::folder(&host.slipway_dir(), &run_id).display()
            ));
        }
        ctx.result.quarantined.extend(found);
    }
    if let Some(mounts) = place.workspace.take() {
        ctx.phase("workspace", "bringing the mounts' work back".into());
        let results = workspace::finish(mounts, &run_id);
        if let Some(plan) = &request.workspace
            && let Some(covering) = results
                .iter()
                .filter(|r| plan.workdir.starts_with(&r.dst) && r.branch.is_some())
                .max_by_key(|r| r.dst.components().count())
        {
            ctx.result.commits = covering
                .commits
                .iter()
                .map(|sha| CommitRef { sha: sha.clone() })
                .collect();
        }
        for r in &results {
            if let Some(kept) = &r.preserved_path {
                ctx.result.warnings.push(format!(
                    "the checkout of {} was kept at {}: it has uncommitted changes",
                    r.dst.display(),
                    kept.display()
                ));
            }
        }
        ctx.result.mounts = results;
    }

    let mut error = match (outcome.err(), import_error) {
        (Some(run), Some(import)) => {
            ctx.result.warnings.push(import.to_string());
            Some(run)
        }
        (run, import) => run.or(import),
    };
    if error.is_none() && strategy == Some(WorktreeStrategy::MergeToHead) {
        ctx.phase(
            "merging",
            format!("merging {} into the host's current branch", place.branch),
        );
        let landed = ctx
            .result
            .import
            .as_ref()
            .and_then(|i| i.side_branch.as_ref().map(|s| s.name.clone()))
            .unwrap_or_else(|| place.branch.clone());
        let into = place.record.as_ref().and_then(|r| r.target_branch.clone());
        let request = MergeRequest {
            branch: &landed,
            into: into.as_deref(),
            timeout: ctx.timeouts.merge,
        };
        match merge_into_host(host, &request) {
            Ok(merge) => {
                ctx.log.line(&format!("[slipway] merge: {merge:?}"));
                ctx.result.merge = Some(merge);
                ctx.result.merged_into =
                    into.or_else(|| crate::git::worktrees::head_branch(host.git()));
            }
            Err(e) => error = Some(e.into()),
        }
    }
    finish_place(&mut ctx, host, &place, strategy);
    drop(place.lock);
    match error {
        None => {
            ctx.result.status = RunStatus::Completed;
            ctx.log.line("[slipway] completed");
            Ok(ctx.result)
        }
        Some(e) => fail(ctx, e),
    }
}

/// Brings an isolated sandbox's work back: the results archive is streamed
/// to the host within the collect timeout (a stop request that arrives while
/// collecting ends it too), the container goes, then the archive is applied.
/// When the work cannot be brought back it is saved to `.slipway/rescue/`,
/// or failing that the container is kept; the message says which.
async fn collect_isolated(
    ctx: &mut Ctx<'_>,
    host: &HostRepo,
    isolated: &crate::sandbox::isolated::IsolatedSandbox,
    staging: &Path,
) -> Result<returned::Returned, String> {
    let archive = staging.join("results.tar");
    let secs = ctx.timeouts.collect.as_secs();
    let stopped_before = ctx.control.cancel.is_cancelled();
    let stop = ctx.control.clone();
    let stopped = async move {
        if stopped_before {
            stop.abandon.cancelled().await
        } else {
            tokio::select! {
                () = stop.cancel.cancelled() => {},
                () = stop.abandon.cancelled() => {},
            }
        }
    };
    let keep = |why: String| {
        isolated.keep();
        let id = isolated.container_id().to_owned();
        format!(
            "{why}; the container {id} was kept with the work: copy it out with `docker cp {id}:{} .`, then remove it with `docker rm -f {id}`",
            isolated.container_worktree().display()
        )
    };
    let downloaded = async {
        std::fs::create_dir_all(staging).map_err(|e| e.to_string())?;
        isolated
            .download_results(&archive)
            .await
            .map_err(|e| e.to_string())
    };
    let outcome = tokio::select! {
        done = tokio::time::timeout(ctx.timeouts.collect, downloaded) => match done {
            Ok(done) => done,
            Err(_) => return Err(keep(format!("bringing the work back took longer than the collect timeout of {secs} s"))),
        },
        () = stopped => return Err(keep("bringing the work back was stopped".into())),
    };
    if let Err(e) = outcome {
        ctx.log
            .line(&format!("[slipway] could not bring the work back: {e}"));
        let dest = host.slipway_dir().join("rescue").join(&ctx.result.run_id);
        let rescued = tokio::time::timeout(ctx.timeouts.collect, isolated.rescue(&dest)).await;
        return Err(match rescued {
            Ok(Ok(tar)) => format!(
                "could not bring the sandbox's work back ({e}); the container's whole worktree, commits included, was saved to {}",
                tar.display()
            ),
            Ok(Err(rescue_error)) => keep(format!(
                "could not bring the sandbox's work back ({e}) nor save it ({rescue_error})"
            )),
            Err(_) => keep(format!(
                "could not bring the sandbox's work back ({e}) nor save it within {secs} s"
            )),
        });
    }
    let (host_root, worktree) = (
        host.root().to_path_buf(),
        isolated.host_worktree().to_path_buf(),
    );
    let (branch, base) = (isolated.branch().to_owned(), isolated.base());
    let (staging, run_id) = (staging.to_path_buf(), ctx.result.run_id.clone());
    let applied = tokio::task::spawn_blocking(move || {
        let host = HostRepo::open(&host_root).map_err(|e| e.to_string())?;
        returned::apply(&host, &worktree, &branch, base, &archive, &staging, &run_id)
    })
    .await
    .map_err(|e| e.to_string())
    .and_then(|r| r);
    applied.map_err(|e| {
        format!(
            "could not apply the sandbox's work ({e}); it is saved in {}",
            staging_archive(host, &ctx.result.run_id).display()
        )
    })
}

fn staging_archive(host: &HostRepo, run_id: &str) -> PathBuf {
    private_git::run_base(host, run_id)
        .join("returned")
        .join("results.tar")
}

/// Hooks, prompt commands and iterations.
async fn drive(
    ctx: &mut Ctx<'_>,
    host: &HostRepo,
    request: &RunRequest,
    place: &mut Place,
    prompt: &Prompt,
    agent: &dyn Agent,
    cancel: &CancellationToken,
) -> Result<(), RunError> {
    let target_branch = match place.record.as_ref().map(|r| r.strategy) {
        Some(WorktreeStrategy::MergeToHead) => {
            host.current_branch().unwrap_or_else(|| "HEAD".into())
        }
        _ => place.branch.clone(),
    };
    let mut env = identity_env(host);
    env.push(("SLIPWAY_SOURCE_BRANCH".into(), place.branch.clone()));
    env.push(("SLIPWAY_TARGET_BRANCH".into(), target_branch.clone()));
    env.push(("SLIPWAY_RUN_ID".into(), ctx.result.run_id.clone()));
    env.push(("SLIPWAY_WORKTREE".into(), place.cwd.display().to_string()));

    let host_sandbox = HostSandbox;
    run_hooks(
        ctx,
        &host_sandbox,
        "host.on_worktree_ready",
        &request.hooks.host_on_worktree_ready,
        &place.cwd,
        &env,
    )
    .await?;
    // After the host's hooks (their commits are the run's starting point),
    // before the sandbox: the agent's git works in a private git dir.
    // Isolated sandboxes build theirs inside the container, workspaces one
    // per isolated mount.
    let reach = match &request.sandbox {
        SandboxSpec::None => Some(private_git::Reach::Environment),
        SandboxSpec::Docker { .. } => Some(private_git::Reach::Mounts { slot: 0 }),
        SandboxSpec::DockerIsolated { .. } => None,
    };
    if let Some(reach) = reach
        && place.workspace.is_none()
    {
        let (base, keep) = match &request.sandbox_id {
            Some(id) => (sandboxes::private_base(host, id), true),
            None => (private_git::run_base(host, &ctx.result.run_id), false),
        };
        let mut git = private_git::RunGit::prepare(
            host,
            &place.cwd,
            &base,
            place.record.is_none(),
            reach,
            keep,
        )?;
        git.begin_journal(host, &ctx.result.run_id, place.lock.branch())?;
        env.extend(git.env());
        place.git = Some(git);
    }
    if let Some(mounts) = &place.workspace {
        env.extend(workspace::git_env(mounts));
    } else {
        place.baseline = Some(quarantine::Baseline::take(&place.cwd));
    }
    let place: &Place = place;
    ctx.phase(
        "sandbox",
        format!("starting the {} sandbox", sandbox_name(&request.sandbox)),
    );
    let active = match &request.sandbox_id {
        Some(id) => attach_sandbox(ctx, host, place, id).await?,
        None => start_sandbox(&request.sandbox, host, place, &ctx.result.run_id).await?,
    };
    let sandbox = active.as_dyn();
    let staging = host
        .slipway_dir()
        .join("runs")
        .join(format!("{}.session", ctx.result.run_id));
    let handed = match active
        .hand_in_session(&request.agent, &place.cwd, &staging)
        .await
    {
        Ok(handed) => handed,
        Err(e) => {
            sandbox.close().await;
            return Err(e);
        }
    };
    if let Some(note) = &handed.note {
        ctx.phase("session", note.clone());
    }
    // A container gets only declared environment: what the agent's CLI needs
    // for its endpoint and credentials is declared by its provider.
    let mut agent_env = Vec::new();
    if active.is_container() {
        for name in agent.passthrough_env() {
            if let Ok(value) = std::env::var(name) {
                agent_env.push(((*name).to_owned(), value));
            }
        }
        agent_env.extend(agent.container_env());
    }
    let result = async {
        run_hooks(
            ctx,
            sandbox,
            "sandbox.on_sandbox_ready",
            &request.hooks.sandbox_on_sandbox_ready,
            &place.cwd,
            &env,
        )
        .await?;

        let mut outputs = Vec::new();
        for command in prompt.shell_blocks() {
            ctx.phase("promptCommand", command.clone());
            let spec = ExecSpec {
                argv: vec!["sh".into(), "-c".into(), command.clone()],
                cwd: place.cwd.clone(),
                env: env.clone(),
                stdin: None,
                hold: ctx.hold,
            };
            match run_to_end(sandbox, spec, request.timeouts.hook, cancel).await? {
                None => {
                    return Err(RunError::HookTimeout {
                        stage: "prompt command",
                        command,
                        secs: request.timeouts.hook.as_secs(),
                    });
                }
                Some((0, out)) => outputs.push(out),
                Some((code, output)) => {
                    return Err(RunError::Hook {
                        stage: "prompt command",
                        command,
                        code,
                        output,
                    });
                }
            }
        }
        let mut values = request.prompt_args.clone();
        values.insert("SOURCE_BRANCH".into(), place.branch.clone());
        values.insert("TARGET_BRANCH".into(), target_branch.clone());
        let text = prompt.render(&values, &outputs);

        let signals: Vec<String> = if request.completion_signals.is_empty() {
            vec![DEFAULT_COMPLETION_SIGNAL.to_owned()]
        } else {
            request.completion_signals.clone()
        };
        let resume = request.agent.options().and_then(|o| o.resume.as_ref());
        let mut running_total = handed.usage_total;
        for iteration in 1..=request.max_iterations {
            ctx.result.iterations = iteration;
            ctx.emit(RunEvent::Iteration {
                iteration,
                of: request.max_iterations,
            });
            ctx.log.line(&format!(
                "[slipway] iteration {iteration} of {}",
                request.max_iterations
            ));
            let invocation = agent.unattended(&text)?;
            let mut iter_env = env.clone();
            iter_env.extend(agent_env.iter().cloned());
            iter_env.extend(invocation.env.iter().cloned());
            iter_env.push(("SLIPWAY_ITERATION".into(), iteration.to_string()));
            let spec = ExecSpec {
                argv: invocation.argv.clone(),
                cwd: place.cwd.clone(),
                env: iter_env,
                stdin: invocation.stdin.map(String::into_bytes),
                hold: ctx.hold,
            };
            // A running total (Codex) counts from where the session stood before
            // this invocation: zero for a new session, the source's total for a
            // fork, where the previous iteration left it when resuming.
            let mut session_total = match resume {
                None => TokenTotals::default(),
                Some(r) if r.fork => handed.usage_total,
                Some(_) => running_total,
            };
            let mut rules = StreamRules {
                signals: &signals,
                resume_id: resume.filter(|r| !r.fork).map(|r| r.session_id.as_str()),
                session_total: &mut session_total,
            };
            let end = run_iteration(ctx, sandbox, agent, spec, iteration, &mut rules).await;
            running_total = session_total;
            match end? {
                IterationEnd::Signalled(signal) => {
                    ctx.result.completion_signal = Some(signal);
                    break;
                }
                IterationEnd::Exited => {}
            }
        }
        Ok(())
    }
    .await;
    if let ActiveSandbox::Isolated(isolated) = &active {
        // Whatever happened, the work comes back before the container goes.
        ctx.phase(
            "collecting",
            "bringing commits and files back from the sandbox".into(),
        );
        let staging = private_git::run_base(host, &ctx.result.run_id).join("returned");
        let returned = collect_isolated(ctx, host, isolated, &staging).await;
        match returned {
            Ok(returned) => {
                if let Some(id) = &request.sandbox_id {
                    let tip = host
                        .git()
                        .refname_to_id(&format!("refs/heads/{}", place.branch))
                        .ok();
                    if let Err(e) = sandboxes::SandboxRecord::set_synced(host, id, tip) {
                        ctx.result.warnings.push(e.to_string());
                    }
                }
                if !returned.files.is_empty() || !returned.deleted.is_empty() {
                    ctx.log.line(&format!(
                        "[slipway] from the sandbox: {} changed file(s), {} deleted",
                        returned.files.len(),
                        returned.deleted.len()
                    ));
                }
                ctx.record_import(returned.imported);
                ctx.result.quarantined.extend(returned.refused);
                if let Err(e) = std::fs::remove_dir_all(&staging) {
                    tracing::warn!("could not remove {}: {e}", staging.display());
                }
            }
            Err(message) => {
                sandbox.close().await;
                return Err(RunError::Sandbox(SandboxError::Other(message)));
            }
        }
    }
    sandbox.close().await;
    result
}
