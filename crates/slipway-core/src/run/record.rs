//! Run records: `.slipway/runs/<run>.json` says whether a run is going on, in
//! which process, and, once it ended, its full result. Progress events go to
//! `.slipway/runs/<run>.events` as JSON lines. Any process (the CLI, a detached
//! run, a sidecar started later) can read both, so a run outlives the editor
//! that started it.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{ErrorInfo, RunEvent, RunResult, RunStatus};
use crate::ids::RunId;
use crate::util::{now_secs, write_atomic};
use crate::worktree::pid_alive;

/// Whether a run is going on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    /// Its process is working.
    Running,
    /// It ended; the record holds the result.
    Finished,
}

/// What is known of one run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    /// Run id.
    pub run_id: RunId,
    /// The process doing the run.
    pub pid: u32,
    /// That process as it can be recognised again (start time and boot):
    /// only it is ever signalled. Absent in records of an older slipway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<crate::process_id::ProcessId>,
    /// Running or finished.
    pub state: RunState,
    /// Start time, seconds since the epoch.
    pub started: u64,
    /// End time.
    pub finished: Option<u64>,
    /// The branch the agent works on, once known.
    pub branch: Option<String>,
    /// Where the agent runs, once known.
    pub worktree_path: Option<PathBuf>,
    /// The branch's commit when the agent started, once known: a run that
    /// died still reports the commits its branch gained since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_commit: Option<String>,
    /// The agent's provider name (`command`, `claude-code`, …); absent in
    /// records of an older slipway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The sandbox kind (`none`, `docker`, `docker-isolated`); absent in
    /// records of an older slipway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// The user's Docker engine the run was given (see [`crate::engines`]);
    /// absent when the user lists none, or before one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// The result, once finished.
    pub result: Option<RunResult>,
    /// A person watched it end in the terminal that started it: the editors
    /// do not report it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub watched: bool,
    /// The run whose question this run answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<RunId>,
    /// What a reply needs, once the run ended asking the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumable: Option<super::question::Resumable>,
}

/// The folder of run records.
pub fn runs_dir(slipway_dir: &Path) -> PathBuf {
    slipway_dir.join("runs")
}

fn record_path(slipway_dir: &Path, run_id: &RunId) -> PathBuf {
    runs_dir(slipway_dir).join(format!("{run_id}.json"))
}

/// The events file of a run.
pub fn events_path(slipway_dir: &Path, run_id: &RunId) -> PathBuf {
    runs_dir(slipway_dir).join(format!("{run_id}.events"))
}

/// Where a run keeps its agent's latest activity.
pub fn activity_path(slipway_dir: &Path, run_id: &RunId) -> PathBuf {
    runs_dir(slipway_dir).join(format!("{run_id}.activity.json"))
}

/// Keeps `activity` as the run's latest (a person looking misses nothing
/// but a step or two when this fails: it is only logged).
pub(crate) fn save_activity(path: &Path, activity: &crate::agent::activity::Activity) {
    let bytes = serde_json::to_vec(activity).expect("an activity always serialises");
    if let Err(e) = write_atomic(path, &bytes) {
        tracing::debug!("cannot write {}: {e}", path.display());
    }
}

/// A run's latest activity, when its agent reported any.
pub fn load_activity(
    slipway_dir: &Path,
    run_id: &RunId,
) -> Option<crate::agent::activity::Activity> {
    let bytes = std::fs::read(activity_path(slipway_dir, run_id)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

impl RunRecord {
    /// A record for a run starting now in this process.
    pub fn starting(run_id: &RunId) -> RunRecord {
        RunRecord {
            run_id: run_id.clone(),
            pid: std::process::id(),
            process: crate::process_id::ProcessId::current(),
            state: RunState::Running,
            started: now_secs(),
            finished: None,
            branch: None,
            worktree_path: None,
            start_commit: None,
            agent: None,
            sandbox: None,
            engine: None,
            result: None,
            watched: false,
            reply_to: None,
            resumable: None,
        }
    }

    /// Writes the record atomically.
    pub fn save(&self, slipway_dir: &Path) -> std::io::Result<()> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("a run record always serialises");
        bytes.push(b'\n');
        write_atomic(&record_path(slipway_dir, &self.run_id), &bytes)
    }

    /// Loads one record; one that names another run than its file's (a
    /// planted or copied record) is not this run's.
    pub fn load(slipway_dir: &Path, run_id: &RunId) -> Option<RunRecord> {
        let bytes = std::fs::read(record_path(slipway_dir, run_id)).ok()?;
        serde_json::from_slice::<RunRecord>(&bytes)
            .ok()
            .filter(|r| r.run_id == *run_id)
    }

    /// Loads every record, oldest first.
    pub fn load_all(slipway_dir: &Path) -> Vec<RunRecord> {
        let Ok(entries) = std::fs::read_dir(runs_dir(slipway_dir)) else {
            return Vec::new();
        };
        let mut out: Vec<RunRecord> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name();
                let stem = name.to_str()?.strip_suffix(".json")?;
                RunId::parse(stem).ok()
            })
            .filter_map(|id| RunRecord::load(slipway_dir, &id))
            .collect();
        out.sort_by(|a: &RunRecord, b| a.started.cmp(&b.started).then(a.run_id.cmp(&b.run_id)));
        out
    }

    /// Marks a `running` record whose process is gone as finished and failed,
    /// so nobody waits for it forever. Returns whether it changed.
    pub fn settle_if_dead(&mut self, slipway_dir: &Path) -> bool {
        if self.state != RunState::Running || self.process_alive() {
            return false;
        }
        // The process may have written its result just before exiting.
        if let Some(fresh) = RunRecord::load(slipway_dir, &self.run_id)
            && fresh.state == RunState::Finished
        {
            *self = fresh;
            return true;
        }
        self.state = RunState::Finished;
        self.finished = Some(now_secs());
        let message = format!(
            "the run's process ({}) ended without writing a result; see its log",
            self.pid
        );
        self.result = Some(self.failed_result(slipway_dir, message));
        // Nobody saw it end, whoever started it: news, written before the record.
        self.watched = false;
        super::heard::ending(slipway_dir, &self.run_id, false);
        if let Err(e) = self.save(slipway_dir) {
            tracing::warn!("cannot write the run record of {}: {e}", self.run_id);
        }
        true
    }

    /// Whether the run's own process still runs: the one the record names by
    /// start time and boot, or (records of an older slipway) any process
    /// with its pid.
    pub fn process_alive(&self) -> bool {
        match &self.process {
            Some(process) => process.is_alive(),
            None => pid_alive(self.pid),
        }
    }

    /// The result of a run that died (`runDied` with `message`), with the
    /// commits its branch gained since it started.
    pub fn failed_result(&self, slipway_dir: &Path, message: String) -> RunResult {
        RunResult {
            run_id: self.run_id.clone(),
            status: RunStatus::Failed,
            iterations: 0,
            commits: self.commits_since_start(slipway_dir),
            branch: self.branch.clone().unwrap_or_default(),
            worktree_path: self.worktree_path.clone().unwrap_or_default(),
            completion_signal: None,
            session_id: None,
            usage: None,
            final_text: None,
            log_file: slipway_dir
                .join("logs")
                .join(format!("{}.log", self.run_id)),
            preserved_worktree_path: self.worktree_path.clone(),
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
            error: Some(ErrorInfo {
                kind: crate::error::ErrorKind::RunDied,
                message,
            }),
            actions: Vec::new(),
            question: None,
            reply_to: self.reply_to.clone(),
            budget: None,
            merged_commits: Vec::new(),
        }
    }

    /// The commits the run's branch holds beyond the commit it started at
    /// (none when it does not descend from it any more).
    fn commits_since_start(&self, slipway_dir: &Path) -> Vec<super::CommitRef> {
        let (Some(branch), Some(start)) = (&self.branch, &self.start_commit) else {
            return Vec::new();
        };
        let Some(root) = slipway_dir.parent() else {
            return Vec::new();
        };
        let Ok(host) = crate::git::HostRepo::open(root) else {
            return Vec::new();
        };
        let (Some(tip), Ok(start)) = (
            crate::git::worktrees::branch_tip(host.git(), branch),
            git2::Oid::from_str(start),
        ) else {
            return Vec::new();
        };
        if tip != start && !host.git().graph_descendant_of(tip, start).unwrap_or(false) {
            return Vec::new();
        }
        crate::git::commits_between(host.git(), Some(start), tip)
            .map(|c| {
                c.into_iter()
                    .map(|sha| super::CommitRef {
                        sha: sha.to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Appends progress events as JSON lines.
pub struct EventLog {
    file: Option<std::fs::File>,
}

impl EventLog {
    /// Opens (creates) the events file of a run.
    pub fn open(slipway_dir: &Path, run_id: &RunId) -> EventLog {
        let path = events_path(slipway_dir, run_id);
        let file = std::fs::create_dir_all(runs_dir(slipway_dir))
            .and_then(|()| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
            })
            .ok();
        EventLog { file }
    }

    /// Appends one event.
    pub fn append(&mut self, event: &RunEvent) {
        if let Some(f) = &mut self.file
            && let Ok(mut line) = serde_json::to_vec(event)
        {
            line.push(b'\n');
            let _ = f.write_all(&line);
        }
    }
}

/// Reads the events appended since byte `offset`; returns them and the new offset.
pub fn read_events(slipway_dir: &Path, run_id: &RunId, offset: u64) -> (Vec<RunEvent>, u64) {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(events_path(slipway_dir, run_id)) else {
        return (Vec::new(), offset);
    };
    if f.seek(SeekFrom::Start(offset)).is_err() {
        return (Vec::new(), offset);
    }
    let mut buf = Vec::new();
    if f.read_to_end(&mut buf).is_err() {
        return (Vec::new(), offset);
    }
    // Only whole lines: a line being written now is read next time.
    let end = buf
        .iter()
        .rposition(|&b| b == b'\n')
        .map(|p| p + 1)
        .unwrap_or(0);
    let events = buf[..end]
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect();
    (events, offset + end as u64)
}
