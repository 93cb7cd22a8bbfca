//! Starting a run as a detached process so it outlives the editor: its own
//! session, no terminal, output to files under `.slipway/runs/`, state in its
//! run record.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use slipway_core::git::HostRepo;
use slipway_core::ids::{GroupId, RunId};
use slipway_core::run::RunRequest;
use slipway_core::run::record::runs_dir;

/// Starts `slipway run --request-file …` detached; returns once the process exists.
pub fn spawn_run(host: &HostRepo, request: &RunRequest) -> std::io::Result<RunId> {
    let run_id = request
        .run_id
        .clone()
        .ok_or_else(|| std::io::Error::other("a detached run needs its id up front"))?;
    spawn(host, request, run_id.as_str(), &[])?;
    Ok(run_id)
}

/// Starts the attempts of the prepared group `group` in one detached process.
pub fn spawn_group(host: &HostRepo, request: &RunRequest, group: &GroupId) -> std::io::Result<()> {
    spawn(host, request, group.as_str(), &["--group", group.as_str()])
}

/// `slipway run --request-file <runs>/<name>.request.json EXTRA…`, detached,
/// its output in `<name>.out` and `<name>.err`.
fn spawn(host: &HostRepo, request: &RunRequest, name: &str, extra: &[&str]) -> std::io::Result<()> {
    let run_id = name;
    let dir = runs_dir(&host.slipway_dir());
    std::fs::create_dir_all(&dir)?;
    let request_file = dir.join(format!("{run_id}.request.json"));
    let bytes = serde_json::to_vec_pretty(request).map_err(std::io::Error::other)?;
    slipway_core::util::write_atomic(&request_file, &bytes)?;
    let stdout = std::fs::File::create(dir.join(format!("{run_id}.out")))?;
    let stderr = std::fs::File::create(dir.join(format!("{run_id}.err")))?;
    let exe = std::env::current_exe()?;
    let mut command = Command::new(exe);
    command
        .arg("--repo")
        .arg(host.root())
        .arg("--json")
        .arg("run")
        .arg("--request-file")
        .arg(&request_file)
        .args(extra)
        .current_dir(host.root())
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr);
    // SAFETY: setsid is async-signal-safe; it gives the run its own session so
    // the editor's terminal or process group going away does not take it down.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command.spawn()?;
    // Reap it in the background so it never lingers as a zombie of the sidecar.
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(())
}
