//! The `none` sandbox: a host process in the worktree, in its own process group.
//!
//! The group cannot outlive slipway: beside each process a tiny guard
//! (`sh`, in a group of its own) waits on a pipe only slipway writes. When
//! slipway ends without saying the process is done (a crash, `kill -9`, the
//! terminal closing), the pipe closes and the guard kills the whole group.
//! The process also holds the run's branch lock (inherited, see
//! [`ExecSpec::hold`]), so the branch stays taken while any of it lives.

use std::process::Stdio;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use super::{BoxFuture, ExecSpec, Execution, Killer, OutputEvent, Sandbox, SandboxError};

/// Runs processes directly on the host.
#[derive(Debug, Default, Clone)]
pub struct HostSandbox;

struct GroupKiller {
    pgid: libc::pid_t,
    /// Slipway's end of the guard's pipe (see the module docs).
    guard: std::sync::Mutex<Option<std::fs::File>>,
}

/// The guard: waits for a line on stdin; `done` lets the group be, anything
/// else (the pipe closing because slipway died) kills it.
const GUARD: &str =
    r#"IFS= read -r line; [ "$line" = done ] || kill -s KILL -- "-$1" 2>/dev/null; exit 0"#;

impl GroupKiller {
    /// Starts the guard of process group `pgid`; without `sh` the group is
    /// still killed on every normal path, so a failure only logs.
    fn guarded(pgid: libc::pid_t) -> GroupKiller {
        let guard = (|| -> std::io::Result<std::fs::File> {
            use std::os::unix::process::CommandExt;
            let (read, write) = std::io::pipe()?;
            let mut child = std::process::Command::new("sh")
                .args(["-c", GUARD, "slipway-guard", &pgid.to_string()])
                .stdin(read)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn()?;
            // Reaped when it ends (once told `done`, or when slipway is gone).
            std::thread::spawn(move || child.wait());
            Ok(std::fs::File::from(std::os::fd::OwnedFd::from(write)))
        })();
        if let Err(e) = &guard {
            tracing::warn!("cannot start the guard of process group {pgid}: {e}");
        }
        GroupKiller {
            pgid,
            guard: std::sync::Mutex::new(guard.ok()),
        }
    }
}

impl Drop for GroupKiller {
    /// The process is finished with: its group goes (strays included), then
    /// the guard is told so it does not kill a group number reused later.
    fn drop(&mut self) {
        if self.pgid > 0 {
            // SAFETY: signalling a process group we created; a stale group only yields ESRCH.
            unsafe {
                libc::killpg(self.pgid, libc::SIGKILL);
            }
        }
        let guard = self
            .guard
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(mut guard) = guard
            && let Err(e) = std::io::Write::write_all(&mut guard, b"done\n")
        {
            tracing::debug!("the guard of group {} is gone: {e}", self.pgid);
        }
    }
}

impl Killer for GroupKiller {
    fn kill(&self) -> BoxFuture<'static, ()> {
        let pgid = self.pgid;
        Box::pin(async move {
            if pgid > 0 {
                // SAFETY: signalling a process group we created; a stale group only yields ESRCH.
                unsafe {
                    libc::killpg(pgid, libc::SIGKILL);
                }
            }
        })
    }
}

/// Streams `reader` as lines into `tx`; partial data counts as activity.
async fn pump<R: AsyncRead + Unpin>(mut reader: R, tx: mpsc::UnboundedSender<OutputEvent>) {
    let mut buf = vec![0u8; 64 << 10];
    let mut lines = super::lines::LineSplitter::new(tx);
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => lines.push(&buf[..n]),
        }
    }
    lines.finish();
}

impl Sandbox for HostSandbox {
    fn name(&self) -> &'static str {
        "none"
    }

    fn exec(&self, spec: ExecSpec) -> BoxFuture<'_, Result<Execution, SandboxError>> {
        Box::pin(async move {
            let Some((program, args)) = spec.argv.split_first() else {
                return Err(SandboxError::EmptyCommand);
            };
            let mut command = tokio::process::Command::new(program);
            command
                .args(args)
                .current_dir(&spec.cwd)
                // Programs that trust $PWD over getcwd() (OpenCode, shells) would
                // otherwise work in the directory slipway was started from.
                .env("PWD", spec.cwd.components().collect::<std::path::PathBuf>())
                .envs(spec.env.iter().map(|(k, v)| (k, v)))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .process_group(0)
                .kill_on_drop(false);
            if let Some(fd) = spec.hold {
                // SAFETY: runs in the child between fork and exec and only
                // clears close-on-exec on a descriptor the parent keeps open.
                unsafe {
                    command.pre_exec(move || {
                        if libc::fcntl(fd, libc::F_SETFD, 0) < 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                        Ok(())
                    });
                }
            }
            let mut child = command.spawn().map_err(|source| SandboxError::Spawn {
                program: program.clone(),
                source,
            })?;
            let pid = child.id();
            let (tx, rx) = mpsc::unbounded_channel();
            if let Some(out) = child.stdout.take() {
                tokio::spawn(pump(out, tx.clone()));
            }
            if let Some(err) = child.stderr.take() {
                tokio::spawn(pump(err, tx.clone()));
            }
            drop(tx);
            if let Some(mut stdin) = child.stdin.take() {
                let input = spec.stdin.unwrap_or_default();
                tokio::spawn(async move {
                    // An agent that never reads its stdin is not an error.
                    let _ = stdin.write_all(&input).await;
                    let _ = stdin.shutdown().await;
                });
            }
            let (exit_tx, exit_rx) = oneshot::channel();
            tokio::spawn(async move {
                let status = child
                    .wait()
                    .await
                    .map_err(|e| SandboxError::Other(e.to_string()));
                let code = status.map(|s| {
                    use std::os::unix::process::ExitStatusExt;
                    s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
                });
                let _ = exit_tx.send(code);
            });
            let pgid = pid.and_then(|p| libc::pid_t::try_from(p).ok()).unwrap_or(0);
            Ok(Execution {
                output: rx,
                exit: exit_rx,
                killer: Arc::new(GroupKiller::guarded(pgid)),
                pid,
            })
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}
