//! Reading a run's log (`.slipway/logs/<run>.log`) in pieces: from a byte
//! offset to the end, cut where a UTF-8 character ends, with whether the
//! run is over and everything was read, so a follower knows when to stop.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use super::record::{RunRecord, RunState};
use crate::error::{ErrorKind, Failure, Hint};
use crate::git::HostRepo;
use crate::ids::RunId;

/// One answer carries at most this much of a log; `next` says where to go on.
const CHUNK: u64 = 1 << 20;

/// A piece of a run's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogChunk {
    /// The text from the offset asked for.
    pub text: String,
    /// The offset to ask for next.
    pub next: u64,
    /// The run has ended and `next` is the end of its log.
    pub done: bool,
}

/// Why a log could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// No record or log of that run.
    #[error("no run '{run_id}' in this repository")]
    UnknownRun {
        /// The run asked for.
        run_id: String,
    },
    /// The log is there but cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The log.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl Failure for LogError {
    fn kind(&self) -> ErrorKind {
        match self {
            LogError::UnknownRun { .. } => ErrorKind::UnknownRun,
            LogError::Io { .. } => ErrorKind::Io,
        }
    }

    fn hints(&self) -> Vec<Hint> {
        match self {
            LogError::UnknownRun { .. } => vec![Hint::ListRuns],
            LogError::Io { .. } => Vec::new(),
        }
    }
}

/// The log file of a run.
pub fn log_path(slipway_dir: &Path, run_id: &RunId) -> PathBuf {
    slipway_dir.join("logs").join(format!("{run_id}.log"))
}

/// Whether a run of this repository is known (a record or a log).
pub fn known(host: &HostRepo, run_id: &RunId) -> bool {
    let dir = host.slipway_dir();
    RunRecord::load(&dir, run_id).is_some()
        || log_path(&dir, run_id).is_file()
        || request_path(&dir, run_id).is_file()
}

/// The request a sidecar wrote for a detached run before starting it.
fn request_path(slipway_dir: &Path, run_id: &RunId) -> PathBuf {
    super::record::runs_dir(slipway_dir).join(format!("{run_id}.request.json"))
}

/// A detached run whose process has not written its record yet is starting,
/// unless its request is older than this (the process never came up).
const START_GRACE: Duration = Duration::from_secs(60);

/// Whether a run without a record is still to start: its request is fresh.
fn starting(slipway_dir: &Path, run_id: &RunId) -> bool {
    std::fs::metadata(request_path(slipway_dir, run_id))
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age < START_GRACE)
}

/// The log of `run_id` from byte `from`, at most a megabyte of it.
pub fn read(host: &HostRepo, run_id: &RunId, from: u64) -> Result<LogChunk, LogError> {
    if !known(host, run_id) {
        return Err(LogError::UnknownRun {
            run_id: run_id.to_string(),
        });
    }
    let dir = host.slipway_dir();
    // Whether it ended is read before the log, so a line written just
    // before the end is in this read or `done` is false.
    let ended = match RunRecord::load(&dir, run_id) {
        Some(mut r) => {
            r.settle_if_dead(&dir);
            r.state == RunState::Finished
        }
        None => !starting(&dir, run_id),
    };
    let path = log_path(&dir, run_id);
    let fail = |source| LogError::Io {
        path: path.clone(),
        source,
    };
    let (bytes, len) = match std::fs::File::open(&path) {
        Ok(mut file) => {
            let len = file.metadata().map_err(fail)?.len();
            let start = from.min(len);
            file.seek(SeekFrom::Start(start)).map_err(fail)?;
            let mut buf = Vec::new();
            file.take(CHUNK).read_to_end(&mut buf).map_err(fail)?;
            (buf, len)
        }
        // A run that has not logged yet has an empty log.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Vec::new(), 0),
        Err(e) => return Err(fail(e)),
    };
    let start = from.min(len);
    let (text, used) = utf8_prefix(&bytes);
    let next = start + used as u64;
    Ok(LogChunk {
        text,
        next,
        done: ended && next >= len,
    })
}

/// The text of `bytes` up to the last whole UTF-8 character, and how many
/// bytes that is: a character cut by the end of a read waits for the next
/// one. Bytes that are not UTF-8 at all become U+FFFD.
fn utf8_prefix(bytes: &[u8]) -> (String, usize) {
    match std::str::from_utf8(bytes) {
        Ok(s) => (s.to_owned(), bytes.len()),
        Err(e) if e.error_len().is_none() => {
            let cut = e.valid_up_to();
            (String::from_utf8_lossy(&bytes[..cut]).into_owned(), cut)
        }
        Err(_) => {
            // Not UTF-8 in the middle: keep going, but never split the last character.
            let cut = bytes.len() - trailing_partial(bytes);
            (String::from_utf8_lossy(&bytes[..cut]).into_owned(), cut)
        }
    }
}

/// How many bytes at the end start a UTF-8 character that is not complete.
fn trailing_partial(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let b = bytes[bytes.len() - back];
        if b & 0xC0 != 0x80 {
            let need = match b {
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                0xF0..=0xF7 => 4,
                _ => 1,
            };
            return if need > back { back } else { 0 };
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_cut_by_the_read_waits_for_the_next() {
        let text = "héllo".as_bytes();
        let (s, used) = utf8_prefix(&text[..2]);
        assert_eq!((s.as_str(), used), ("h", 1));
        let (s, used) = utf8_prefix(text);
        assert_eq!((s.as_str(), used), ("héllo", text.len()));
        let mut bad = b"a\xffb".to_vec();
        bad.extend_from_slice(&"é".as_bytes()[..1]);
        let (s, used) = utf8_prefix(&bad);
        assert_eq!((s.as_str(), used), ("a\u{fffd}b", 3));
    }
}
