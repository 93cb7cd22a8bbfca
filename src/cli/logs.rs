//! `slipway logs`: print a run's log, and follow it while the run goes on.

use slipway_core::error::ErrorKind;
use std::io::{Read, Seek, SeekFrom, Write};
use std::process::ExitCode;
use std::time::Duration;

use slipway_core::git::HostRepo;
use slipway_core::run::record::{RunRecord, RunState};

use super::CliError;

pub fn print_log(host: &HostRepo, run: Option<&str>, follow: bool) -> Result<ExitCode, CliError> {
    let dir = host.slipway_dir();
    let run_id = match run {
        Some(id) => id.to_owned(),
        None => RunRecord::load_all(&dir)
            .last()
            .map(|r| r.run_id.clone())
            .ok_or_else(|| {
                CliError::new(ErrorKind::UnknownRun, "no runs yet in this repository")
            })?,
    };
    let path = dir.join("logs").join(format!("{run_id}.log"));
    if !path.exists() && RunRecord::load(&dir, &run_id).is_none() {
        return Err(CliError::new(
            ErrorKind::UnknownRun,
            format!("no run '{run_id}' in this repository; see `slipway runs`"),
        ));
    }
    let mut offset = 0u64;
    let stdout = std::io::stdout();
    loop {
        if let Ok(mut f) = std::fs::File::open(&path) {
            f.seek(SeekFrom::Start(offset))?;
            let mut buf = Vec::new();
            f.read_to_end(&mut buf)?;
            offset += buf.len() as u64;
            let mut out = stdout.lock();
            out.write_all(&buf)?;
            out.flush()?;
        }
        if !follow {
            return Ok(ExitCode::SUCCESS);
        }
        let finished = match RunRecord::load(&dir, &run_id) {
            Some(mut r) => {
                r.settle_if_dead(&dir);
                r.state == RunState::Finished
            }
            None => true,
        };
        if finished {
            // One last read catches lines written just before the end.
            if let Ok(mut f) = std::fs::File::open(&path) {
                f.seek(SeekFrom::Start(offset))?;
                let mut buf = Vec::new();
                f.read_to_end(&mut buf)?;
                stdout.lock().write_all(&buf)?;
            }
            return Ok(ExitCode::SUCCESS);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
