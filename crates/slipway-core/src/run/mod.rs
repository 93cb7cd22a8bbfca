//! Runs: one agent invocation of up to `max_iterations` iterations in one
//! sandbox on one worktree, with hooks, timeouts, its private git dir and the
//! strategy that brings the work back.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::agent::activity::{Activity, Watcher};
use crate::agent::prompt::{Prompt, PromptError, PromptSource};
use crate::agent::{Agent, AgentEvent, AgentSpec, AgentSpecError};
use crate::git::HostRepo;
use crate::git::import::Imported;
use crate::git::merge::{MergeError, MergeOutcome, MergeRequest, merge_into_host};
use crate::git::policy::SourcePolicy;
use crate::git::private_dir::IgnoredRef;
use crate::git::refname::{InvalidBranchName, validate_branch_name};
use crate::ids::RunId;
use crate::sandbox::host::HostSandbox;
use crate::sandbox::{ExecSpec, OutputEvent, Sandbox, SandboxError};
use crate::worktree::lock::{BranchLock, LockError};
use record::{EventLog, RunRecord, RunState};

mod active;
mod check;
mod collect;
mod drive;
mod engine;
mod error;
pub mod heard;
pub mod listing;
pub mod log_read;
mod place;
pub mod price;
pub mod private_git;
mod process;
pub mod quarantine;
pub mod question;
pub mod record;
pub mod reply;
mod result;
mod returned;
pub mod sandboxes;
mod spec;
pub mod workspace;

use crate::agent::session::TokenTotals;
use crate::worktree::{
    self, CloseOutcome, CreateError, CreateRequest, WorktreeRecord, WorktreeState,
    WorktreeStrategy, WorktreeTarget,
};
pub(crate) use active::docker_config;
use active::{ActiveSandbox, attach_sandbox, sandbox_name, start_sandbox};
pub use check::{CHECK_TAIL_LINES, CheckResult};
use collect::collect_isolated;
use drive::drive;
pub use error::*;
use place::{Place, finish_place, prepare_place};
use process::{IterationEnd, StreamRules, run_hooks, run_iteration, run_to_end};
pub use result::*;
pub use spec::*;

/// The default completion signal.
pub const DEFAULT_COMPLETION_SIGNAL: &str = "<promise>COMPLETE</promise>";

/// Something that happened during a run, for progress displays.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// What the agent is doing now, in a line: its latest words or tool call
    /// (the events file keeps at most a few a second).
    Step { text: String },
    /// The agent's activity so far: step, files, turns, usage (the events
    /// file keeps at most a few a second, and the last one).
    Activity { activity: Activity },
}

impl RunEvent {
    /// The event as the line a progress display shows; `None` for raw output
    /// (a [`RunEvent::Step`] says it in people's words).
    pub fn describe(&self) -> Option<String> {
        match self {
            // The key is for programs; the message says what happens, and
            // where it does not say which step it is, a title does.
            RunEvent::Phase { phase, message } => Some(match phase.as_str() {
                "worktreeReady" => format!("worktree ready: {message}"),
                "hooks" => format!("hook {message}"),
                "promptCommand" => format!("prompt command: {message}"),
                "session" => format!("session: {message}"),
                _ => message.clone(),
            }),
            RunEvent::Iteration { iteration, of } => Some(format!("iteration {iteration} of {of}")),
            RunEvent::Step { text } => Some(text.clone()),
            RunEvent::Output { .. } | RunEvent::Activity { .. } => None,
        }
    }
}

/// How often at most a step reaches the events file: editors follow the
/// run from there, and a chatty agent must not grow it by a line per word.
const STEP_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// Receives run events.
pub type EventSink = Arc<dyn Fn(&RunEvent) + Send + Sync>;

/// Why a run could not be cancelled.
#[derive(Debug, thiserror::Error)]
pub enum CancelError {
    /// No record of that run.
    #[error("no run '{0}' in this repository")]
    UnknownRun(String),
    /// `.slipway/` is not slipway's own: nothing is signalled.
    #[error(transparent)]
    Untrusted(#[from] crate::state_trust::Untrusted),
    /// The record names a process by pid alone (an older slipway wrote it,
    /// or it was planted): nothing is signalled.
    #[error(
        "run '{run_id}' names process {pid} without its start time, so slipway cannot tell it from another process with that pid; nothing was signalled: stop it yourself if it is the run"
    )]
    Unverifiable { run_id: String, pid: u32 },
}

impl CancelError {
    /// Stable machine-readable kind.
    pub fn kind(&self) -> crate::error::ErrorKind {
        match self {
            CancelError::UnknownRun(_) => crate::error::ErrorKind::UnknownRun,
            CancelError::Unverifiable { .. } | CancelError::Untrusted(_) => {
                crate::error::ErrorKind::UntrustedState
            }
        }
    }
}

/// Asks a run to stop: its process gets SIGTERM, kills the agent's tree and
/// finishes with status `cancelled`. Returns the run's state at the time of asking.
pub fn cancel(host: &HostRepo, run_id: &RunId) -> Result<RunState, CancelError> {
    host.state_trusted()?;
    let slipway_dir = host.slipway_dir();
    let mut record = RunRecord::load(&slipway_dir, run_id)
        .ok_or_else(|| CancelError::UnknownRun(run_id.to_string()))?;
    if record.settle_if_dead(&slipway_dir) || record.state == RunState::Finished {
        return Ok(RunState::Finished);
    }
    // Only the process that wrote the record, recognised by its start time
    // and boot, is signalled: a pid alone in a file names nobody.
    match &record.process {
        Some(process) if process.signal(libc::SIGTERM) => Ok(RunState::Running),
        Some(_) => Ok(RunState::Finished),
        None => Err(CancelError::Unverifiable {
            run_id: run_id.to_string(),
            pid: record.pid,
        }),
    }
}

/// A new run id: time plus randomness, sortable.
pub fn new_run_id() -> RunId {
    RunId::new()
}

/// The most of an agent's output a run log keeps by default (`SLIPWAY_LOG_LIMIT`
/// sets another number of bytes); slipway's own lines are always written.
pub const LOG_LIMIT: u64 = 64 << 20;

struct RunLog {
    file: Option<std::fs::File>,
    /// Bytes of agent output written so far, and the most that is kept.
    written: u64,
    limit: u64,
}

impl RunLog {
    fn new(file: Option<std::fs::File>) -> RunLog {
        let limit = std::env::var("SLIPWAY_LOG_LIMIT")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(LOG_LIMIT);
        RunLog {
            file,
            written: 0,
            limit,
        }
    }

    /// One of slipway's own lines.
    fn line(&mut self, text: &str) {
        if let Some(f) = &mut self.file
            && let Err(e) = writeln!(f, "{text}")
        {
            // The log is for people; the run goes on without it.
            tracing::warn!("cannot write the run log: {e}");
            self.file = None;
        }
    }

    /// A line of the agent's output, until the log holds `limit` bytes of
    /// it; then one line says where it was cut, and the rest is not kept.
    fn output(&mut self, text: &str) {
        if self.written >= self.limit {
            return;
        }
        self.written = self.written.saturating_add(text.len() as u64 + 1);
        if self.written < self.limit {
            self.line(text);
        } else {
            self.line(&format!(
                "[slipway] the log reached its limit of {} bytes of agent output here; the rest is not kept (the run goes on)",
                self.limit
            ));
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
    /// When a step last went to the events file.
    step_written: Option<std::time::Instant>,
    /// The agent's activity, once an agent runs.
    watcher: Option<Watcher>,
    /// When the activity last went out, and whether it changed since.
    activity_written: Option<std::time::Instant>,
    activity_dirty: bool,
    /// Where the latest activity is kept for `slipway runs`.
    activity_file: PathBuf,
    /// What the run may use, and when its duration budget ends.
    budgets: Budgets,
    deadline: Option<Instant>,
    /// The user's Docker engine the run was given, its slot held while this lives.
    engine: Option<crate::engines::Placement>,
    /// What the user said the agent's tokens cost, for an agent that reports no cost.
    price: Option<price::Price>,
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
    /// A person watches the run in the terminal that started it, which shows
    /// its result: its end is no news for the editors.
    pub watched: bool,
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
    /// commits, the program-running files they change, and a warning when
    /// they went to a side branch.
    fn record_import(&mut self, host: &HostRepo, imported: Option<Imported>) {
        if let Some(imported) = &imported {
            match crate::review::sensitive::of_commits(host.git(), &imported.commits) {
                Ok(found) => self.result.sensitive_changes = found,
                Err(e) => self.result.warnings.push(format!(
                    "could not check the run's commits for files that run programs: {e}"
                )),
            }
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
        let logged = match event {
            RunEvent::Output { .. } => false,
            RunEvent::Step { .. } => {
                let due = self.step_written.is_none_or(|t| t.elapsed() >= STEP_EVERY);
                if due {
                    self.step_written = Some(std::time::Instant::now());
                }
                due
            }
            _ => true,
        };
        if logged {
            self.event_log.append(&event);
        }
        (self.events)(&event);
    }

    /// What the agent is doing now.
    fn step(&mut self, text: String) {
        self.emit(RunEvent::Step { text });
    }

    /// Takes the events of one line of the agent's output (after the result
    /// took them, so usage is up to date) and sends the step when it changed.
    fn watch(&mut self, events: &[AgentEvent]) {
        let Some(watcher) = &mut self.watcher else {
            return;
        };
        let moved = watcher.line(events);
        let step = watcher.activity().step.filter(|_| moved);
        self.activity_dirty |= moved || self.usage_moved();
        if let Some(step) = step {
            self.step(step);
        }
        self.send_activity(false);
    }

    /// Gives the usage so far its cost at the user's price, where the agent reports none.
    fn price_usage(&mut self) {
        if let (Some(price), Some(usage)) = (&self.price, &mut self.result.usage) {
            price.apply(usage);
        }
    }

    /// Copies the result's usage into the activity; true when it changed.
    fn usage_moved(&mut self) -> bool {
        let (Some(watcher), Some(u)) = (&mut self.watcher, &self.result.usage) else {
            return false;
        };
        let before = watcher.activity();
        watcher.usage(u.input_tokens, u.output_tokens, u.cost_usd);
        let after = watcher.activity();
        (before.input_tokens, before.output_tokens, before.cost_usd)
            != (after.input_tokens, after.output_tokens, after.cost_usd)
    }

    /// When activity held back by the rate limit is to go out.
    fn activity_due(&self) -> Option<Instant> {
        let written = self.activity_written.filter(|_| self.activity_dirty)?;
        Some(Instant::from_std(written + STEP_EVERY))
    }

    /// The activity so far, when an agent runs.
    fn activity(&self) -> Option<Activity> {
        self.watcher.as_ref().map(Watcher::activity)
    }

    /// Sends the activity when it changed: at most every [`STEP_EVERY`]
    /// unless `last` (an iteration ended: what it did is not held back).
    fn send_activity(&mut self, last: bool) {
        if last {
            self.activity_dirty |= self.usage_moved();
        }
        let due = last
            || self
                .activity_written
                .is_none_or(|t| t.elapsed() >= STEP_EVERY);
        if !self.activity_dirty || !due {
            return;
        }
        let Some(activity) = self.activity() else {
            return;
        };
        self.activity_dirty = false;
        self.activity_written = Some(std::time::Instant::now());
        record::save_activity(&self.activity_file, &activity);
        let event = RunEvent::Activity { activity };
        self.event_log.append(&event);
        (self.events)(&event);
    }
}

/// The commits on `branch` that `into` (else the host's current branch) does
/// not have yet: what a merge back brings.
fn arriving_commits(host: &HostRepo, branch: &str, into: Option<&str>) -> Vec<CommitRef> {
    let repo = host.git();
    let tip = |name: &str| repo.refname_to_id(&format!("refs/heads/{name}")).ok();
    let Some(from) = tip(branch) else {
        return Vec::new();
    };
    let target = into
        .map(str::to_owned)
        .or_else(|| crate::git::worktrees::head_branch(repo));
    let base = target.as_deref().and_then(tip);
    crate::git::commits_between(repo, base, from)
        .map(|oids| {
            oids.iter()
                .map(|oid| CommitRef {
                    sha: oid.to_string(),
                })
                .collect()
        })
        .unwrap_or_default()
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
    record.reply_to = request.reply.as_ref().map(|r| r.previous.clone());
    record.agent = Some(request.agent.name().to_owned());
    record.sandbox = Some(request.sandbox.kind_name().to_owned());
    // A run nobody can follow (its record cannot be written: a full disk, a
    // read-only folder) does not start.
    let saved = worktree::ensure_slipway_dir(host)
        .map_err(RunError::from)
        .and_then(|()| {
            record.save(&slipway_dir).map_err(|e| {
                RunError::Io(format!(
                    "cannot write the run record under {}: {e}",
                    slipway_dir.display()
                ))
            })
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
    let mut outcome =
        run_recorded(host, request, run_id, control.clone(), events, &mut record).await;
    match &mut outcome {
        Ok(result) => result.settle_actions(),
        Err(failure) => failure.result.settle_actions(),
    }
    record.state = RunState::Finished;
    record.finished = Some(crate::util::now_secs());
    record.watched = control.watched;
    record.result = Some(match &outcome {
        Ok(result) => result.clone(),
        Err(failure) => (*failure.result).clone(),
    });
    // The news first: whoever reads the record as finished finds it too.
    crate::testhook::point("run-end");
    heard::ending(&slipway_dir, &record.run_id, control.watched);
    crate::testhook::point("run-end");
    let saved = record.save(&slipway_dir);
    crate::testhook::point("run-end");
    if let Err(e) = saved {
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
    outcome
}

async fn run_recorded(
    host: &HostRepo,
    request: RunRequest,
    run_id: RunId,
    control: RunControl,
    events: EventSink,
    record: &mut RunRecord,
) -> Result<RunResult, RunFailure> {
    let log_file = log_read::log_path(&host.slipway_dir(), &run_id);
    let file = worktree::ensure_slipway_dir(host)
        .ok()
        .and_then(|()| std::fs::create_dir_all(log_file.parent()?).ok())
        .and_then(|()| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log_file)
                .ok()
        });
    let mut ctx = Ctx {
        log: RunLog::new(file),
        event_log: EventLog::open(&host.slipway_dir(), &run_id),
        events: &events,
        control: control.clone(),
        timeouts: request.timeouts,
        hold: None,
        step_written: None,
        watcher: None,
        activity_written: None,
        activity_dirty: false,
        activity_file: record::activity_path(&host.slipway_dir(), &run_id),
        budgets: request.budgets,
        deadline: request
            .budgets
            .max_duration_secs
            .map(|secs| process::later(Instant::now(), Duration::from_secs(secs))),
        engine: None,
        price: None,
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
            kept_refs: Vec::new(),
            import: None,
            sensitive_changes: Vec::new(),
            check: None,
            quarantined: Vec::new(),
            warnings: Vec::new(),
            mounts: Vec::new(),
            error: None,
            actions: Vec::new(),
            budget: None,
            merged_commits: Vec::new(),
            question: None,
            reply_to: request.reply.as_ref().map(|r| r.previous.clone()),
        },
    };
    let fail = |mut ctx: Ctx<'_>, error: RunError| {
        ctx.log.line(&format!("[slipway] failed: {error}"));
        if let RunError::BudgetReached(stop) = &error {
            ctx.result.budget = Some(*stop);
        }
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
                        "no sandbox '{id}' in this repository any more (it was closed as the run started)"
                    )),
                );
            }
        }
    }
    // A mistake in the user's price table fails the run before anything is made.
    ctx.price = match price::for_agent(request.agent.name()) {
        Ok(price) => price,
        Err(e) => return fail(ctx, e.into()),
    };
    if let Err(e) = engine::give_engine(&mut ctx, &mut request, record, &host.slipway_dir()).await {
        return fail(ctx, e);
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
    let outcome = match outcome {
        Err(e) => Err(engine::name_lost_engine(&ctx, e).await),
        ok => ok,
    };

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
                for kept in &report.kept {
                    ctx.log.line(&format!(
                        "[slipway] kept: the agent's work on {} is on {} ({})",
                        kept.from, kept.name, kept.commit
                    ));
                }
                ctx.result.kept_refs = report.kept;
                ctx.record_import(host, report.imported);
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
                "[slipway] quarantine: {} ({}) {}",
                q.path,
                q.finding.describe(),
                q.detail
            ));
        }
        if !found.is_empty() {
            ctx.result.warnings.push(format!(
                "the run left {} in {} that your git would run or follow, or that no checkout should hold ({} moved to {}); see `quarantined`",
                crate::util::count(found.len(), "thing", "things"),
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
        let arriving = arriving_commits(host, &landed, into.as_deref());
        let request = MergeRequest {
            branch: &landed,
            into: into.as_deref(),
            timeout: ctx.timeouts.merge,
        };
        match merge_into_host(host, &request) {
            Ok(merge) => {
                ctx.log.line(&format!("[slipway] merge: {merge}"));
                if merge != MergeOutcome::UpToDate {
                    ctx.result.merged_commits = arriving;
                }
                ctx.result.merge = Some(merge);
                ctx.result.merged_into =
                    into.or_else(|| crate::git::worktrees::head_branch(host.git()));
            }
            Err(e) => error = Some(e.into()),
        }
    }
    if error.is_none() && ctx.result.question.is_some() {
        record.resumable = Some(question::Resumable {
            agent: request.agent.clone(),
            sandbox: request.sandbox.clone(),
            strategy: match (&place.record, &request.strategy) {
                (None, _) => RunStrategy::Head,
                (Some(_), strategy) => strategy.clone(),
            },
            worktree: place
                .record
                .as_ref()
                .and_then(|r| crate::ids::WorktreeId::parse(&r.id).ok()),
            owns_worktree: place.record.is_some() && !place.handle,
            sandbox_id: request.sandbox_id.clone(),
            timeouts: request.timeouts,
            budgets: request.budgets,
            completion_signals: request.completion_signals.clone(),
            sandbox_hooks: request.hooks.sandbox_on_sandbox_ready.clone(),
            check: request.check.clone(),
        });
    }
    finish_place(&mut ctx, host, &place, strategy);
    drop(place.lock);
    match error {
        None if ctx.result.question.is_some() => {
            ctx.result.status = RunStatus::NeedsInput;
            ctx.log.line("[slipway] needs input");
            Ok(ctx.result)
        }
        None => {
            ctx.result.status = RunStatus::Completed;
            ctx.log.line("[slipway] completed");
            Ok(ctx.result)
        }
        Some(e) => fail(ctx, e),
    }
}
