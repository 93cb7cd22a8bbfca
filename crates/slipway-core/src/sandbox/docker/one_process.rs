//! A container whose own process is the agent, as `docker run --rm` runs
//! it: for a run that starts exactly one process in its sandbox (one
//! iteration, no sandbox hooks, no prompt commands, no session handed in),
//! the container is created when that process is asked for, with it as the
//! container's command, attached before it starts. That saves the exec's
//! round-trips (create, start, and the inspections that find its exit code);
//! the engine's wait gives the exit code, and killing the container kills
//! the whole tree. The mounts, user, limits and labels are those of
//! [`DockerSandbox`]: the same [`DockerConfig`] builds both.

use std::sync::Mutex;

use bollard::query_parameters::{KillContainerOptions, WaitContainerOptions};

use super::*;

/// The one process the container runs.
#[derive(Debug, Clone)]
pub(super) struct Process {
    argv: Vec<String>,
    env: Vec<String>,
    cwd: String,
}

impl Process {
    /// The container's body with this process as its command, its stdin open
    /// once (closed after the prompt), and its environment added to the
    /// container's.
    pub(super) fn apply(&self, mut body: ContainerCreateBody) -> ContainerCreateBody {
        body.entrypoint = Some(self.argv.clone());
        body.cmd = Some(Vec::new());
        body.env
            .get_or_insert_with(Vec::new)
            .extend(self.env.iter().cloned());
        body.working_dir = Some(self.cwd.clone());
        body.open_stdin = Some(true);
        body.stdin_once = Some(true);
        body.attach_stdin = Some(true);
        body.attach_stdout = Some(true);
        body.attach_stderr = Some(true);
        body
    }
}

/// A docker sandbox that runs one process as the container itself.
pub struct OneProcessSandbox {
    docker: Docker,
    config: DockerConfig,
    /// The container, once the process was started.
    container: Mutex<Option<String>>,
    started: AtomicBool,
    closed: AtomicBool,
}

impl std::fmt::Debug for OneProcessSandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OneProcessSandbox")
            .field("image", &self.config.image)
            .field("container", &self.container_id())
            .finish_non_exhaustive()
    }
}

impl OneProcessSandbox {
    /// A sandbox of `config` on `config.engine` (or a new connection);
    /// nothing is created until its process is started.
    pub async fn new(mut config: DockerConfig) -> Result<OneProcessSandbox, SandboxError> {
        let docker = match config.engine.take() {
            Some(docker) => docker,
            None => connect().await?,
        };
        Ok(OneProcessSandbox {
            docker,
            config,
            container: Mutex::new(None),
            started: AtomicBool::new(false),
            closed: AtomicBool::new(false),
        })
    }

    /// The container, once its process started.
    pub fn container_id(&self) -> Option<String> {
        self.container
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    async fn start(&self, spec: ExecSpec) -> Result<Execution, SandboxError> {
        if spec.argv.is_empty() {
            return Err(SandboxError::EmptyCommand);
        }
        if self.closed.load(Ordering::SeqCst) || self.started.swap(true, Ordering::SeqCst) {
            return Err(SandboxError::Other(
                "this docker sandbox runs one process, and it was started already".into(),
            ));
        }
        // PWD as on the host sandbox: some agents trust it over getcwd().
        let pwd = utf8(&spec.cwd.components().collect::<PathBuf>())?;
        let process = Process {
            argv: spec.argv.clone(),
            env: std::iter::once(format!("PWD={pwd}"))
                .chain(spec.env.iter().map(|(k, v)| format!("{k}={v}")))
                .collect(),
            cwd: utf8(&spec.cwd)?,
        };
        let (id, _name, attached) =
            DockerSandbox::make(&self.docker, &self.config, Some(process)).await?;
        *self.container.lock().unwrap_or_else(|p| p.into_inner()) = Some(id.clone());
        if self.closed.load(Ordering::SeqCst) {
            // Closed while it was being made: it goes at once.
            remove_forced(&self.docker, &id).await;
        }
        let Some(AttachContainerResults { output, input }) = attached else {
            return Err(SandboxError::Other(
                "docker: the container's process was started unattached".into(),
            ));
        };
        feed_stdin(input, spec.stdin.unwrap_or_default());
        let (tx, rx) = mpsc::unbounded_channel();
        let (done_tx, _done_rx) = oneshot::channel::<()>();
        read_output(output, tx, done_tx);
        let (exit_tx, exit_rx) = oneshot::channel();
        let docker = self.docker.clone();
        let waited = id.clone();
        tokio::spawn(async move {
            let mut wait = docker.wait_container(&waited, None::<WaitContainerOptions>);
            let code = match wait.next().await {
                Some(Ok(exit)) => Ok(i32::try_from(exit.status_code).unwrap_or(-1)),
                // A non-zero exit arrives as this error, with its code.
                Some(Err(EngineError::DockerContainerWaitError { code, .. })) => {
                    Ok(i32::try_from(code).unwrap_or(-1))
                }
                Some(Err(e)) => Err(engine_error("lost track of the container's process", e)),
                None => Err(SandboxError::Other(
                    "docker: the engine ended the wait without an exit code".into(),
                )),
            };
            let _ = exit_tx.send(code);
        });
        Ok(Execution {
            output: rx,
            exit: exit_rx,
            killer: Arc::new(ContainerKiller {
                docker: self.docker.clone(),
                container: id,
            }),
            pid: None,
        })
    }

    async fn shut_down(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some(id) = self.container_id() {
            remove_forced(&self.docker, &id).await;
        }
    }
}

/// Kills the container's whole process tree with one signal to the container.
struct ContainerKiller {
    docker: Docker,
    container: String,
}

impl Killer for ContainerKiller {
    fn kill(&self) -> BoxFuture<'static, ()> {
        let (docker, container) = (self.docker.clone(), self.container.clone());
        Box::pin(async move {
            let options = KillContainerOptions {
                signal: "KILL".to_owned(),
            };
            let killed = tokio::time::timeout(
                KILL_TIMEOUT,
                docker.kill_container(&container, Some(options)),
            )
            .await;
            match killed {
                Ok(Ok(())) => {}
                // Already stopped or gone: nothing left to kill.
                Ok(Err(e)) => tracing::debug!("docker: kill of {container}: {e}"),
                Err(_) => {
                    tracing::warn!("docker: the kill of {container} did not finish within 10 s")
                }
            }
        })
    }
}

impl Sandbox for OneProcessSandbox {
    fn name(&self) -> &'static str {
        "docker"
    }

    fn reaps_strays_on_close(&self) -> bool {
        true
    }

    fn exec(&self, spec: ExecSpec) -> BoxFuture<'_, Result<Execution, SandboxError>> {
        Box::pin(self.start(spec))
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.shut_down())
    }
}

impl Drop for OneProcessSandbox {
    fn drop(&mut self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some(id) = self.container_id() {
            remove_in_background(self.docker.clone(), id);
        }
    }
}
