//! `slipway logs` (or `log`): print a run's log, and follow it while the run
//! goes on; with `--json`, one document `{runId, text, next, done}` once the
//! log is read (to the run's end with `--follow`).

use slipway_core::error::ErrorKind;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use slipway_core::git::HostRepo;
use slipway_core::run::log_read;
use slipway_core::run::record::RunRecord;

use super::CliError;

pub fn print_log(
    host: &HostRepo,
    run: Option<&str>,
    follow: bool,
    json: bool,
) -> Result<ExitCode, CliError> {
    let dir = host.slipway_dir();
    let run_id = match run {
        Some(id) => slipway_core::ids::RunId::parse(id).map_err(|e| CliError::from_failure(&e))?,
        None => RunRecord::load_all(&dir)
            .last()
            .map(|r| r.run_id.clone())
            .ok_or_else(|| {
                CliError::new(ErrorKind::UnknownRun, "no runs yet in this repository")
            })?,
    };
    let terminal = std::io::stdout().is_terminal();
    let mut next = 0;
    let mut text = String::new();
    let done = loop {
        let chunk = log_read::read(host, &run_id, next).map_err(|e| CliError::from_failure(&e))?;
        let advanced = chunk.next > next;
        next = chunk.next;
        if json {
            text.push_str(&chunk.text);
        } else if terminal {
            // A person reads it: the agent's bytes cannot command their terminal.
            stdout!("{}", chunk.text);
        } else {
            // A pipe or a file gets the record byte for byte.
            let mut out = std::io::stdout().lock();
            out.write_all(chunk.text.as_bytes())?;
            out.flush()?;
        }
        if chunk.done {
            break true;
        }
        // A read that found something may have stopped at a chunk's end: read on at once.
        if !advanced {
            if !follow {
                break false;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    if json {
        super::print_json(&serde_json::json!({
            "runId": run_id, "text": text, "next": next, "done": done,
        }));
    }
    Ok(ExitCode::SUCCESS)
}
