//! One exec's plumbing: its exit code, the killer that signals its process
//! group, quiet helper execs, and splitting its output into lines.

use super::*;

/// Reports the exec's exit code. The output stream ending is the usual sign
/// that the process is gone; a slower poll also catches an exit while strays
/// still hold the pipes (the run loop then kills them, closing the stream).
pub(super) async fn watch_exit(
    docker: Docker,
    exec_id: String,
    mut done: oneshot::Receiver<()>,
    exit_tx: oneshot::Sender<Result<i32, SandboxError>>,
) {
    const SLOW_POLL: Duration = Duration::from_millis(500);
    let mut stream_done = false;
    let mut fast = Duration::from_millis(5);
    let mut failures = 0u32;
    loop {
        if exit_tx.is_closed() {
            return;
        }
        if stream_done {
            tokio::time::sleep(fast).await;
            fast = (fast * 2).min(Duration::from_millis(200));
        } else {
            tokio::select! {
                _ = &mut done => stream_done = true,
                () = tokio::time::sleep(SLOW_POLL) => {}
            }
        }
        match docker.inspect_exec(&exec_id).await {
            Ok(state) if state.running == Some(false) => {
                // No code with `running: false` means the container died under
                // the exec (killed with it): report it like a SIGKILL.
                let code = state
                    .exit_code
                    .and_then(|c| i32::try_from(c).ok())
                    .unwrap_or(128 + libc::SIGKILL);
                let _ = exit_tx.send(Ok(code));
                return;
            }
            Ok(_) => failures = 0,
            Err(e) => {
                failures += 1;
                // The exec vanishes with its container (closed or reaped).
                if failures >= 5
                    || matches!(
                        &e,
                        EngineError::DockerResponseServerError {
                            status_code: 404,
                            ..
                        }
                    )
                {
                    let _ = exit_tx.send(Err(engine_error(
                        "lost track of a process (was the container removed?)",
                        e,
                    )));
                    return;
                }
            }
        }
    }
}

/// Kills one exec's process group with another exec.
pub(super) struct ExecKiller {
    pub(super) docker: Docker,
    pub(super) container: String,
    pub(super) user: String,
    pub(super) pid_file: String,
}

impl Killer for ExecKiller {
    fn kill(&self) -> BoxFuture<'static, ()> {
        let docker = self.docker.clone();
        let container = self.container.clone();
        let user = self.user.clone();
        let cmd = vec![
            "sh".to_owned(),
            "-c".to_owned(),
            KILL_SCRIPT.to_owned(),
            "slipway-kill".to_owned(),
            self.pid_file.clone(),
        ];
        Box::pin(async move {
            let killed =
                tokio::time::timeout(KILL_TIMEOUT, run_quiet(&docker, &container, &user, cmd))
                    .await;
            match killed {
                Ok(Ok(_)) => {}
                // A container that is gone has no processes left to kill.
                Ok(Err(e)) => tracing::debug!("docker: kill exec failed: {e}"),
                Err(_) => tracing::warn!("docker: kill exec did not finish within 10 s"),
            }
        })
    }
}

/// Runs a short helper command to completion and returns (exit code, output).
pub(super) async fn run_quiet(
    docker: &Docker,
    container: &str,
    user: &str,
    cmd: Vec<String>,
) -> Result<(i32, String), SandboxError> {
    let options = CreateExecOptions {
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        tty: Some(false),
        cmd: Some(cmd),
        user: Some(user.to_owned()),
        working_dir: Some("/".to_owned()),
        ..Default::default()
    };
    let exec_id = docker
        .create_exec(container, options)
        .await
        .map_err(|e| engine_error("cannot create an exec", e))?
        .id;
    let started = docker
        .start_exec(&exec_id, None)
        .await
        .map_err(|e| engine_error("cannot start an exec", e))?;
    let mut text = Vec::new();
    if let StartExecResults::Attached { mut output, .. } = started {
        while let Some(Ok(item)) = output.next().await {
            text.extend_from_slice(&item.into_bytes());
        }
    }
    let mut delay = Duration::from_millis(2);
    for _ in 0..50 {
        let state = docker
            .inspect_exec(&exec_id)
            .await
            .map_err(|e| engine_error("cannot inspect an exec", e))?;
        if state.running == Some(false) {
            let code = state
                .exit_code
                .and_then(|c| i32::try_from(c).ok())
                .unwrap_or(-1);
            return Ok((code, String::from_utf8_lossy(&text).into_owned()));
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_millis(100));
    }
    Err(SandboxError::Other(
        "docker: a helper exec did not finish".into(),
    ))
}
