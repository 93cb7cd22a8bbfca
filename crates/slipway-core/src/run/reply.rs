//! Answering a run that ended asking the user: a new run that resumes the
//! same session, in the same worktree and sandbox, with the same strategy,
//! whose record names the run it answers.

use super::question::ReplyLink;
use super::record::{RunRecord, RunState};
use super::*;
use crate::error::{ErrorKind, Failure, Hint};

/// Why a reply cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ReplyError {
    /// `.slipway/` is not slipway's own: its records are not acted on.
    #[error(transparent)]
    Untrusted(#[from] crate::state_trust::Untrusted),
    /// No record of that run.
    #[error("no run '{0}' in this repository; see `slipway runs`")]
    UnknownRun(String),
    /// The run is not waiting for an answer.
    #[error("run '{run_id}' is not waiting for input: {why}")]
    NotWaitingForInput {
        /// The run.
        run_id: String,
        /// What it is instead.
        why: String,
    },
    /// The run's agent keeps sessions, but the run named none.
    #[error(
        "run '{run_id}' asked, but its {agent} agent named no session to resume; start a new run with the answer in its prompt"
    )]
    NoSession {
        /// The run.
        run_id: String,
        /// Its agent.
        agent: &'static str,
    },
    /// An empty answer.
    #[error("the answer is empty; give the text to send to the agent")]
    EmptyAnswer,
}

impl Failure for ReplyError {
    fn kind(&self) -> ErrorKind {
        match self {
            ReplyError::Untrusted(_) => ErrorKind::UntrustedState,
            ReplyError::UnknownRun(_) => ErrorKind::UnknownRun,
            ReplyError::NotWaitingForInput { .. } => ErrorKind::NotWaitingForInput,
            ReplyError::NoSession { .. } => ErrorKind::NoSessionToResume,
            ReplyError::EmptyAnswer => ErrorKind::InvalidParams,
        }
    }

    fn hints(&self) -> Vec<Hint> {
        match self {
            ReplyError::UnknownRun(_) | ReplyError::NotWaitingForInput { .. } => {
                vec![Hint::ListRuns]
            }
            _ => Vec::new(),
        }
    }
}

/// The run `run_id` as it waits for an answer: its record, which holds a
/// `needsInput` result and what a reply needs, and which no run answered yet.
pub fn waiting(host: &HostRepo, run_id: &RunId) -> Result<RunRecord, ReplyError> {
    host.state_trusted()?;
    let dir = host.slipway_dir();
    let mut record =
        RunRecord::load(&dir, run_id).ok_or_else(|| ReplyError::UnknownRun(run_id.to_string()))?;
    record.settle_if_dead(&dir);
    let not = |why: String| ReplyError::NotWaitingForInput {
        run_id: run_id.to_string(),
        why,
    };
    if record.state == RunState::Running {
        return Err(not("it is still running".into()));
    }
    let status = record.result.as_ref().map(|r| r.status);
    if status != Some(RunStatus::NeedsInput) || record.resumable.is_none() {
        let word = status
            .and_then(|s| serde_json::to_value(s).ok())
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| "failed".into());
        return Err(not(format!("it ended {word}")));
    }
    // A reply that failed or was cancelled did not answer: another may.
    let answered = |r: &RunRecord| {
        r.state == RunState::Running
            || r.result
                .as_ref()
                .is_some_and(|res| !matches!(res.status, RunStatus::Failed | RunStatus::Cancelled))
    };
    if let Some(later) = RunRecord::load_all(&dir)
        .into_iter()
        .find(|r| r.reply_to.as_ref() == Some(run_id) && answered(r))
    {
        return Err(not(format!("run '{}' answered it already", later.run_id)));
    }
    Ok(record)
}

/// The runs of the repository waiting for an answer, newest first.
pub fn waiting_runs(host: &HostRepo) -> Vec<RunRecord> {
    let dir = host.slipway_dir();
    let mut all = RunRecord::load_all(&dir);
    all.reverse();
    all.into_iter()
        .filter(|r| waiting(host, &r.run_id).is_ok())
        .collect()
}

/// The request of the run that answers `run_id` with `answer`: the same
/// agent resuming the session the run named, the same sandbox, worktree and
/// strategy, its limits; the answer is its prompt.
pub fn request(host: &HostRepo, run_id: &RunId, answer: &str) -> Result<RunRequest, ReplyError> {
    if answer.trim().is_empty() {
        return Err(ReplyError::EmptyAnswer);
    }
    let record = waiting(host, run_id)?;
    let Some(basis) = record.resumable else {
        return Err(ReplyError::NotWaitingForInput {
            run_id: run_id.to_string(),
            why: "its record does not say how to resume it".into(),
        });
    };
    let session = record.result.as_ref().and_then(|r| {
        r.question
            .as_ref()
            .and_then(|q| q.session_id.clone())
            .or_else(|| r.session_id.clone())
    });
    let mut agent = basis.agent;
    let name = agent.name();
    if let Some(options) = agent.options_mut() {
        let Some(session_id) = session else {
            return Err(ReplyError::NoSession {
                run_id: run_id.to_string(),
                agent: name,
            });
        };
        options.resume = Some(crate::agent::ResumeSpec {
            session_id,
            fork: false,
        });
    }
    Ok(RunRequest {
        run_id: Some(new_run_id()),
        strategy: basis.strategy,
        worktree: basis.worktree.map(|w| w.to_string()),
        source: SourcePolicy::HostHead,
        copy: Vec::new(),
        agent,
        sandbox: basis.sandbox,
        workspace: None,
        sandbox_id: basis.sandbox_id,
        prompt: PromptSource::Inline(answer.to_owned()),
        prompt_args: BTreeMap::new(),
        max_iterations: 1,
        completion_signals: basis.completion_signals,
        timeouts: basis.timeouts,
        hooks: Hooks {
            host_on_worktree_ready: Vec::new(),
            sandbox_on_sandbox_ready: basis.sandbox_hooks,
        },
        budgets: basis.budgets,
        check: basis.check,
        reply: Some(ReplyLink {
            previous: run_id.clone(),
            owns_worktree: basis.owns_worktree,
        }),
        // The engine the question came from holds nothing the reply needs
        // (the worktree and session are on the host), so any free one does.
        engine: None,
    })
}
