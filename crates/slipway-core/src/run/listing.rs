//! The runs of a repository as a list for people and editors: newest first,
//! each with its status, elapsed time, its agent's latest activity and the
//! last line of its log, read from the run records under `.slipway/runs/`.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::log_read::log_path;
use super::record::{RunRecord, RunState};
use crate::git::HostRepo;

/// How much of a log's end is read to find its last line.
const TAIL: u64 = 4096;

/// One run in the list.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunEntry {
    /// Run id.
    pub run_id: crate::ids::RunId,
    /// `running`, or how it ended (`completed`, `failed`, `timedOut`,
    /// `cancelled`, `needsInput`).
    pub status: String,
    /// The agent's provider name, when the record knows it.
    pub agent: Option<String>,
    /// The sandbox kind, when the record knows it.
    pub sandbox: Option<String>,
    /// The user's Docker engine it was given, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// The branch the agent works on, once known.
    pub branch: Option<String>,
    /// Where the agent runs, once known.
    pub worktree_path: Option<PathBuf>,
    /// Start, seconds since the epoch.
    pub started_at: u64,
    /// End, seconds since the epoch, once ended.
    pub ended_at: Option<u64>,
    /// Iterations started (0 while running: the result says).
    pub iterations: u32,
    /// The last non-empty line of its log.
    pub last_line: Option<String>,
    /// Seconds it has run (until its end, once ended).
    pub elapsed_secs: u64,
    /// What its agent is doing (or did last): step, files, turns, tokens, cost.
    pub activity: Option<crate::agent::activity::Activity>,
    /// What it asks, when it ended `needsInput`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<super::question::Question>,
    /// The run whose question it answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<crate::ids::RunId>,
    /// The agent's session, once the run ended and its agent named one: what
    /// `--resume` (or a reply) continues.
    pub session_id: Option<String>,
}

/// Every run of the repository, newest first. A record whose process died
/// without a result is settled as failed on the way (as `slipway runs` does).
pub fn runs(host: &HostRepo) -> Vec<RunEntry> {
    let dir = host.slipway_dir();
    let mut records = RunRecord::load_all(&dir);
    records.reverse();
    records
        .into_iter()
        .map(|mut r| {
            r.settle_if_dead(&dir);
            entry(&dir, r)
        })
        .collect()
}

fn entry(slipway_dir: &Path, r: RunRecord) -> RunEntry {
    let status = match (r.state, &r.result) {
        (RunState::Running, _) => "running".to_owned(),
        (RunState::Finished, Some(result)) => serde_json::to_value(result.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| "failed".to_owned()),
        (RunState::Finished, None) => "failed".to_owned(),
    };
    let end = r.finished.unwrap_or_else(crate::util::now_secs);
    RunEntry {
        last_line: last_line(&log_path(slipway_dir, &r.run_id)),
        elapsed_secs: end.saturating_sub(r.started),
        activity: super::record::load_activity(slipway_dir, &r.run_id),
        iterations: r.result.as_ref().map_or(0, |res| res.iterations),
        question: r.result.as_ref().and_then(|res| res.question.clone()),
        reply_to: r.reply_to.clone(),
        session_id: r.result.as_ref().and_then(|res| res.session_id.clone()),
        status,
        agent: r.agent,
        sandbox: r.sandbox,
        engine: r.engine,
        branch: r.branch,
        worktree_path: r.worktree_path,
        started_at: r.started,
        ended_at: r.finished,
        run_id: r.run_id,
    }
}

/// The last non-empty line of a file, from its last few kilobytes.
fn last_line(path: &Path) -> Option<String> {
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(TAIL))).ok()?;
    let mut buf = Vec::new();
    file.read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf);
    text.lines()
        .rev()
        .map(str::trim_end)
        .find(|l| !l.is_empty())
        .map(crate::shown::line)
}
