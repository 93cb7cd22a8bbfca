//! The `docker` sandbox: one long-lived container per run, reached through the
//! Docker Engine API (`bollard`), with the worktree and the run's private git
//! dir bind-mounted at their own absolute host paths.
//!
//! How it holds the sandbox rules:
//! - The container runs an init as PID 1 (the engine's `docker-init` via
//!   `init: true`) over a shell keep-alive loop; every agent process is an exec
//!   into it (a run that starts one process only uses [`OneProcessSandbox`],
//!   whose container's own process it is). Teardown is one forced remove
//!   (SIGKILL, no grace period).
//! - Each exec goes through a tiny `sh` wrapper that records its pid in a tmpfs
//!   private to the container and then `exec`s the program: the runtime makes
//!   every exec a session leader, so that pid is also the process group of the
//!   whole tree, and the exec's [`Killer`] is another exec that signals the
//!   group. The wrapper adds no process of its own and puts nothing but argv on
//!   a command line; environment travels in the exec's `Env`.
//! - Containers carry the labels `slipway.managed=true` and `slipway.run=<id>`
//!   (and `slipway.scope` when given) so [`reap_orphans`] can find leftovers.
//! - The binds themselves (the checkout, the run's private git dir, the
//!   host's objects read-only) come from `run::private_git`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bollard::Docker;
use bollard::container::{AttachContainerResults, LogOutput};
use bollard::errors::Error as EngineError;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use bollard::models::{ContainerCreateBody, HostConfig, Mount as EngineMount, MountType};
use bollard::query_parameters::{
    AttachContainerOptions, CreateContainerOptions, ListContainersOptions, RemoveContainerOptions,
};
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};

use super::{BoxFuture, ExecSpec, Execution, Killer, OutputEvent, Sandbox, SandboxError};

mod engine;
mod exec;
mod one_process;
mod reap;

use crate::sandbox::lines::LineSplitter;
pub(crate) use engine::REQUEST_TIMEOUT_SECS;
pub use engine::{
    DockerConfig, EngineInfo, EngineKind, Mount, connect, connect_and_tell, handshake, host_user,
};
use engine::{container_name, engine_error, utf8};
use exec::{ExecKiller, watch_exit};
pub use one_process::OneProcessSandbox;
use one_process::Process;
pub use reap::reap_orphans;

/// Label every slipway container carries.
pub const LABEL_MANAGED: &str = "slipway.managed";

/// The capabilities an agent's container keeps (all others are dropped):
/// what root needs to edit files it does not own and to stop its own
/// processes. Never `MKNOD`, `SETUID`/`SETGID`, `SETFCAP`, `SETPCAP`,
/// `SYS_ADMIN`, `NET_RAW`, `SYS_CHROOT` or `FSETID`.
pub const AGENT_CAPABILITIES: &[&str] = &[
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "KILL",
    "NET_BIND_SERVICE",
];
/// Label holding the run id.
pub const LABEL_RUN: &str = "slipway.run";
/// Label holding the optional scope (e.g. the repository's common git dir).
pub const LABEL_SCOPE: &str = "slipway.scope";

/// A tmpfs inside the container for the pid files of execs. Private to the
/// container, writable by any uid (mode 1777), gone with the container.
const STATE_DIR: &str = "/run/slipway";

/// Runs as `sh -c EXEC_WRAPPER slipway-exec PIDFILE PROGRAM ARGS...`.
/// Records its pid (the process group of the tree it starts), refuses to start
/// the program when a kill already arrived, then becomes the program. When the
/// runtime did not make the exec a group leader (runc and crun do), `setsid`
/// makes it one so the tree can still be killed as a group.
const EXEC_WRAPPER: &str = r#"f=$1; shift
g=
{ read -r _ _ _ _ g _ < /proc/$$/stat; } 2>/dev/null
if [ "$g" != "$$" ] && command -v setsid >/dev/null 2>&1; then set -- setsid "$@"; fi
echo $$ > "$f" || { echo "slipway: cannot write $f" >&2; exit 125; }
if [ -e "$f.kill" ]; then exit 137; fi
exec "$@""#;

/// Runs as `sh -c KILL_SCRIPT slipway-kill PIDFILE`. Leaves a marker first, so
/// a wrapper that has not written its pid yet will not start its program; then
/// signals the recorded group (or the lone pid when it is not a group) and
/// empties the pid file, so a later kill cannot hit a reused group number.
/// Only `sh` builtins: the image needs nothing else. Empty files cost the
/// tmpfs no pages, so thousands of execs fit in it.
const KILL_SCRIPT: &str = r#"f=$1
true 2>/dev/null > "$f.kill"
g=
{ read -r g < "$f"; } 2>/dev/null
case $g in ''|*[!0-9]*) exit 0;; esac
[ "$g" -gt 1 ] || exit 0
kill -s KILL -- "-$g" 2>/dev/null || kill -s KILL -- "$g" 2>/dev/null
true 2>/dev/null > "$f"
exit 0"#;

/// Keeps the container alive under the init without depending on `sleep
/// infinity` (busybox and old coreutils lack it).
const KEEPALIVE: &str = "while :; do sleep 3600; done";

/// How long a kill may take before the killer gives up waiting for the engine.
const KILL_TIMEOUT: Duration = Duration::from_secs(10);

/// A run's container. Every [`Sandbox::exec`] is an exec into it.
pub struct DockerSandbox {
    docker: Docker,
    id: String,
    name: String,
    user: String,
    next_exec: AtomicU64,
    closed: AtomicBool,
    /// A long-lived sandbox: `close` and dropping leave the container running.
    persistent: AtomicBool,
}

impl std::fmt::Debug for DockerSandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DockerSandbox")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

impl DockerSandbox {
    /// Starts the container on `config.engine`, or connects first (see [`connect`]).
    pub async fn start(mut config: DockerConfig) -> Result<DockerSandbox, SandboxError> {
        let docker = match config.engine.take() {
            Some(docker) => docker,
            None => connect().await?,
        };
        DockerSandbox::start_with(docker, config).await
    }

    /// Starts the container on an engine already connected to.
    ///
    /// Fails with a message naming the container-start timeout when creating,
    /// starting and probing take longer than `config.start_timeout`. A half-made
    /// container is removed before returning, or, when the engine is still
    /// making it at the timeout, as soon as it is done (in the background;
    /// [`reap_orphans`] catches it if the process ends first).
    pub async fn start_with(
        docker: Docker,
        config: DockerConfig,
    ) -> Result<DockerSandbox, SandboxError> {
        let (id, name, _) = Self::make(&docker, &config, None).await?;
        Ok(DockerSandbox {
            docker,
            id,
            name,
            user: config.user,
            next_exec: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            persistent: AtomicBool::new(false),
        })
    }

    /// Creates and starts a container of `config` (its process the keep-alive
    /// loop, or `process` attached before it starts), within
    /// `config.start_timeout`; returns its id and name, and the attached
    /// streams of `process`.
    async fn make(
        docker: &Docker,
        config: &DockerConfig,
        process: Option<Process>,
    ) -> Result<(String, String, Option<AttachContainerResults>), SandboxError> {
        let name = container_name(&config.run_id);
        let timeout = config.start_timeout;
        // The creation runs as its own task: a request the engine is still
        // serving when the timeout strikes is not cancelled by dropping it, so
        // the task finishes and then removes what it made.
        let mut task = tokio::spawn({
            let (docker, config, name) = (docker.clone(), config.clone(), name.clone());
            async move { Self::create_and_start(&docker, &config, &name, process.as_ref()).await }
        });
        let failure = match tokio::time::timeout(timeout, &mut task).await {
            Ok(Ok(Ok((id, attached)))) => return Ok((id, name, attached)),
            Ok(Ok(Err(e))) => e,
            Ok(Err(e)) => SandboxError::Other(format!("docker: the start task failed: {e}")),
            Err(_) => {
                let (docker, name) = (docker.clone(), name.clone());
                tokio::spawn(async move {
                    let _ = task.await;
                    remove_forced(&docker, &name).await;
                });
                SandboxError::Other(format!(
                    "container start timed out after {:.1} s (image {})",
                    timeout.as_secs_f64(),
                    config.image
                ))
            }
        };
        // Removal by name also finds a container whose id never reached us.
        remove_forced(docker, &name).await;
        Err(failure)
    }

    async fn create_and_start(
        docker: &Docker,
        config: &DockerConfig,
        name: &str,
        process: Option<&Process>,
    ) -> Result<(String, Option<AttachContainerResults>), SandboxError> {
        let mut init = config.init;
        let mut keep_id = config.engine_kind == EngineKind::Podman;
        loop {
            let id = match Self::create(docker, config, name, init, keep_id, process).await {
                // Rootful Podman maps no ids (the host user's uid is already
                // the container's) and refuses keep-id: ask again without.
                Err(CreateError::KeepIdRefused) => {
                    keep_id = false;
                    continue;
                }
                Err(CreateError::Sandbox(e)) => return Err(e),
                Ok(id) => id,
            };
            // Attached before the start, so no output of the process is lost.
            let attached = match process {
                Some(_) => Some(
                    docker
                        .attach_container(
                            &id,
                            Some(AttachContainerOptions {
                                stream: true,
                                stdin: true,
                                stdout: true,
                                stderr: true,
                                logs: false,
                                ..Default::default()
                            }),
                        )
                        .await
                        .map_err(|e| engine_error("cannot attach to the container", e))?,
                ),
                None => None,
            };
            let started = docker.start_container(&id, None).await;
            match started {
                Ok(()) => {}
                // Engines without an init binary fail the start; the keep-alive
                // shell can be PID 1 instead (zombies are only reaped per exec then).
                Err(e) if init && is_missing_init(&e) => {
                    tracing::warn!("docker: the engine cannot run an init ({e}); starting without");
                    remove_forced(docker, &id).await;
                    init = false;
                    continue;
                }
                Err(e) => return Err(engine_error("cannot start the container", e)),
            }
            return Ok((id, attached));
        }
    }

    async fn create(
        docker: &Docker,
        config: &DockerConfig,
        name: &str,
        init: bool,
        keep_id: bool,
        process: Option<&Process>,
    ) -> Result<String, CreateError> {
        let mut mounts = Vec::with_capacity(config.mounts.len());
        for m in &config.mounts {
            mounts.push(EngineMount {
                target: Some(utf8(&m.container_path)?),
                source: Some(utf8(&m.host_path)?),
                typ: Some(MountType::BIND),
                read_only: Some(m.readonly),
                ..Default::default()
            });
        }
        let mut labels = HashMap::from([
            (LABEL_MANAGED.to_owned(), "true".to_owned()),
            (LABEL_RUN.to_owned(), config.run_id.clone()),
        ]);
        if let Some(scope) = &config.scope {
            labels.insert(LABEL_SCOPE.to_owned(), scope.clone());
        }
        let body = ContainerCreateBody {
            image: Some(config.image.clone()),
            // The image's own entrypoint (often an agent launcher) must not run:
            // the container only hosts execs.
            entrypoint: Some(vec!["sh".into(), "-c".into(), KEEPALIVE.into()]),
            cmd: Some(Vec::new()),
            env: Some(config.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
            user: Some(config.user.clone()),
            working_dir: config.workdir.as_deref().map(utf8).transpose()?,
            labels: Some(labels),
            tty: Some(false),
            attach_stdin: Some(false),
            attach_stdout: Some(false),
            attach_stderr: Some(false),
            host_config: Some(HostConfig {
                init: Some(init),
                // Nothing in the container gains privileges (a setuid `sudo`
                // in the image stays the host user), and root in it keeps only
                // what editing files needs: no device nodes, no uid or gid
                // changes, no file capabilities, no raw sockets.
                security_opt: Some(vec!["no-new-privileges:true".to_owned()]),
                cap_drop: Some(vec!["ALL".to_owned()]),
                cap_add: Some(AGENT_CAPABILITIES.iter().map(|c| (*c).to_owned()).collect()),
                mounts: Some(mounts),
                network_mode: config.network.clone(),
                memory: config.memory_bytes,
                memory_swap: config.memory_bytes,
                pids_limit: config.pids_limit,
                tmpfs: Some(HashMap::from([(
                    STATE_DIR.to_owned(),
                    "mode=1777,size=16m".to_owned(),
                )])),
                userns_mode: keep_id.then(|| "keep-id".to_owned()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let body = match process {
            Some(process) => process.apply(body),
            None => body,
        };
        let options = CreateContainerOptions {
            name: Some(name.to_owned()),
            ..Default::default()
        };
        match docker.create_container(Some(options), body).await {
            Ok(created) => Ok(created.id),
            Err(EngineError::DockerResponseServerError {
                status_code: 404,
                message,
            }) => Err(SandboxError::Other(format!(
                "the image {} is not on the Docker engine ({message}); slipway never pulls: build or pull it first",
                config.image
            ))
            .into()),
            Err(EngineError::DockerResponseServerError { message, .. })
                if keep_id && message.contains("keep-id is only supported in rootless mode") =>
            {
                Err(CreateError::KeepIdRefused)
            }
            Err(e) => Err(engine_error("cannot create the container", e).into()),
        }
    }

    /// The container's id.
    pub fn container_id(&self) -> &str {
        &self.id
    }

    /// The container's name (`slipway-<run id>-<suffix>`).
    pub fn container_name(&self) -> &str {
        &self.name
    }

    /// The engine client, for callers that want to inspect the container.
    pub fn docker(&self) -> &Docker {
        &self.docker
    }

    async fn start_exec(&self, spec: ExecSpec) -> Result<Execution, SandboxError> {
        if spec.argv.is_empty() {
            return Err(SandboxError::EmptyCommand);
        }
        if self.closed.load(Ordering::SeqCst) {
            return Err(SandboxError::Other(
                "the docker sandbox is closed; start a new one".into(),
            ));
        }
        let n = self.next_exec.fetch_add(1, Ordering::Relaxed);
        let pid_file = format!("{STATE_DIR}/exec-{n}");
        let mut cmd = vec![
            "sh".to_owned(),
            "-c".to_owned(),
            EXEC_WRAPPER.to_owned(),
            "slipway-exec".to_owned(),
            pid_file.clone(),
        ];
        cmd.extend(spec.argv.iter().cloned());
        let options = CreateExecOptions {
            attach_stdin: Some(true),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            tty: Some(false),
            // PWD as on the host sandbox: some agents trust it over getcwd().
            env: Some(
                std::iter::once(format!(
                    "PWD={}",
                    utf8(&spec.cwd.components().collect::<PathBuf>())?
                ))
                .chain(spec.env.iter().map(|(k, v)| format!("{k}={v}")))
                .collect(),
            ),
            cmd: Some(cmd),
            user: Some(self.user.clone()),
            working_dir: Some(utf8(&spec.cwd)?),
            ..Default::default()
        };
        let program = spec.argv[0].clone();
        let exec_id = self
            .docker
            .create_exec(&self.id, options)
            .await
            .map_err(|e| engine_error(&format!("cannot create an exec for {program}"), e))?
            .id;
        // Starting attached is the attach: the engine wires the streams before
        // the process starts, so no output is lost.
        let started = self
            .docker
            .start_exec(
                &exec_id,
                Some(StartExecOptions {
                    detach: false,
                    tty: false,
                    output_capacity: None,
                }),
            )
            .await
            .map_err(|e| engine_error(&format!("cannot start {program}"), e))?;
        let StartExecResults::Attached { output, input } = started else {
            return Err(SandboxError::Other(
                "docker: the engine started the exec detached".into(),
            ));
        };

        feed_stdin(input, spec.stdin.unwrap_or_default());
        let (tx, rx) = mpsc::unbounded_channel();
        let (done_tx, done_rx) = oneshot::channel::<()>();
        read_output(output, tx, done_tx);

        let (exit_tx, exit_rx) = oneshot::channel();
        tokio::spawn(watch_exit(self.docker.clone(), exec_id, done_rx, exit_tx));

        Ok(Execution {
            output: rx,
            exit: exit_rx,
            killer: Arc::new(ExecKiller {
                docker: self.docker.clone(),
                container: self.id.clone(),
                user: self.user.clone(),
                pid_file,
            }),
            // The process lives in the container's pid namespace: no host pid to give.
            pid: None,
        })
    }

    async fn shut_down(&self) {
        if self.closed.swap(true, Ordering::SeqCst) || self.persistent.load(Ordering::SeqCst) {
            return;
        }
        remove_forced(&self.docker, &self.id).await;
    }

    /// Makes this a long-lived sandbox: `close` and dropping the handle leave
    /// the container running for later runs; [`destroy`](Self::destroy) removes it.
    pub fn make_persistent(&self) {
        self.persistent.store(true, Ordering::SeqCst);
    }

    /// Removes the container whatever kind of sandbox this is.
    pub async fn destroy(&self) {
        self.closed.store(true, Ordering::SeqCst);
        remove_forced(&self.docker, &self.id).await;
    }

    /// Attaches to the running container of a long-lived sandbox, if it
    /// carries slipway's labels for `owner` (a record naming some other
    /// container is not followed).
    pub async fn attach(
        docker: Docker,
        container: &str,
        user: String,
        owner: &Owner<'_>,
    ) -> Result<DockerSandbox, SandboxError> {
        let inspect = docker
            .inspect_container(container, None)
            .await
            .map_err(|e| engine_error("the sandbox's container is gone", e))?;
        if !owner.owns(&inspect) {
            return Err(owner.refusal(container));
        }
        let running = inspect
            .state
            .as_ref()
            .and_then(|s| s.running)
            .unwrap_or(false);
        if !running {
            return Err(SandboxError::Other(format!(
                "the sandbox's container {container} is not running; close the sandbox and create a new one"
            )));
        }
        let name = inspect
            .name
            .map(|n| n.trim_start_matches('/').to_owned())
            .unwrap_or_else(|| container.to_owned());
        // Earlier processes' pid files are numbered too: start far from them.
        let start = u64::from_str_radix(&crate::util::random_hex(3), 16).unwrap_or(0) << 16;
        Ok(DockerSandbox {
            docker,
            id: inspect.id.unwrap_or_else(|| container.to_owned()),
            name,
            user,
            next_exec: AtomicU64::new(start),
            closed: AtomicBool::new(false),
            persistent: AtomicBool::new(true),
        })
    }
}

/// Whose container a record says it is: slipway's for one run or sandbox of
/// one repository (DESIGN §2 "Git safety" 5).
#[derive(Debug, Clone, Copy)]
pub struct Owner<'a> {
    /// The repository's scope label (its common git dir).
    pub scope: &'a str,
    /// The run or sandbox id in the `slipway.run` label.
    pub run: &'a str,
}

impl Owner<'_> {
    /// Whether the inspected container carries exactly these labels.
    pub fn owns(&self, inspect: &bollard::models::ContainerInspectResponse) -> bool {
        let labels = inspect.config.as_ref().and_then(|c| c.labels.as_ref());
        let label = |key: &str| labels.and_then(|l| l.get(key)).map(String::as_str);
        label(LABEL_MANAGED) == Some("true")
            && label(LABEL_SCOPE) == Some(self.scope)
            && label(LABEL_RUN) == Some(self.run)
    }

    fn refusal(&self, container: &str) -> SandboxError {
        SandboxError::Other(format!(
            "container {container} does not carry slipway's labels for '{}' of this repository, so slipway did not make it; it was left alone",
            self.run
        ))
    }

    /// Removes `container` (forced) only when it is this owner's; whether it was.
    pub async fn remove(&self, docker: &Docker, container: &str) -> Result<(), SandboxError> {
        let inspect = match docker.inspect_container(container, None).await {
            Ok(inspect) => inspect,
            // Gone already: nothing to remove.
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => {
                return Ok(());
            }
            Err(e) => return Err(engine_error("cannot look at the container", e)),
        };
        if !self.owns(&inspect) {
            return Err(self.refusal(container));
        }
        remove_forced(docker, container).await;
        Ok(())
    }
}

impl Sandbox for DockerSandbox {
    fn name(&self) -> &'static str {
        "docker"
    }

    fn reaps_strays_on_close(&self) -> bool {
        true
    }

    fn exec(&self, spec: ExecSpec) -> BoxFuture<'_, Result<Execution, SandboxError>> {
        Box::pin(self.start_exec(spec))
    }

    /// Kills and removes the container at once (SIGKILL through a forced
    /// remove, no stop grace period). Closing twice is harmless.
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.shut_down())
    }
}

impl DockerSandbox {
    /// Extracts a tar archive into the container at `path` (through the API, so
    /// it works against a remote engine too).
    pub async fn upload_tar(&self, path: &str, tar: Vec<u8>) -> Result<(), SandboxError> {
        let options = bollard::query_parameters::UploadToContainerOptionsBuilder::default()
            .path(path)
            .build();
        self.docker
            .upload_to_container(&self.id, Some(options), bollard::body_full(tar.into()))
            .await
            .map_err(|e| engine_error("cannot upload into the container", e))
    }

    /// Freezes every process in the container (the engine's cgroup freezer),
    /// so nothing in it can write while slipway reads what it left.
    pub async fn pause(&self) -> Result<(), SandboxError> {
        self.docker
            .pause_container(&self.id)
            .await
            .map_err(|e| engine_error("cannot pause the container", e))
    }

    /// Lets a paused container's processes go on.
    pub async fn unpause(&self) -> Result<(), SandboxError> {
        self.docker
            .unpause_container(&self.id)
            .await
            .map_err(|e| engine_error("cannot unpause the container", e))
    }

    /// Leaves the container running when this handle goes (for work that
    /// could not be brought out of it any other way).
    pub fn keep(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }
}

impl Drop for DockerSandbox {
    /// A sandbox dropped without `close` (an early return, a panic) still goes.
    fn drop(&mut self) {
        if self.closed.swap(true, Ordering::SeqCst) || self.persistent.load(Ordering::SeqCst) {
            return;
        }
        remove_in_background(self.docker.clone(), self.id.clone());
    }
}

/// Removes container `id` on a thread of its own: Drop cannot await, and the
/// caller's runtime may be the thing shutting down.
pub(super) fn remove_in_background(docker: Docker, id: String) {
    let spawned = std::thread::Builder::new()
        .name("slipway-docker-drop".into())
        .spawn({
            let id = id.clone();
            move || match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt.block_on(remove_forced(&docker, &id)),
                Err(e) => tracing::warn!("docker: cannot remove container {id}: {e}"),
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("docker: cannot remove container {id}: {e}");
    }
}

/// Writes `stdin` to a process's input and closes it.
pub(super) fn feed_stdin(
    mut input: std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>>,
    stdin: Vec<u8>,
) {
    tokio::spawn(async move {
        // A program that never reads its stdin is not an error; shutting
        // the write side down is what the process sees as end of input.
        let _ = input.write_all(&stdin).await;
        let _ = input.shutdown().await;
    });
}

/// Splits a process's output into lines on `tx`; `done` fires when it ends.
pub(super) fn read_output(
    mut output: std::pin::Pin<
        Box<dyn futures_util::Stream<Item = Result<LogOutput, EngineError>> + Send>,
    >,
    tx: mpsc::UnboundedSender<OutputEvent>,
    done: oneshot::Sender<()>,
) {
    tokio::spawn(async move {
        let mut out = LineSplitter::new(tx.clone());
        let mut err = LineSplitter::new(tx);
        while let Some(item) = output.next().await {
            match item {
                Ok(LogOutput::StdOut { message } | LogOutput::Console { message }) => {
                    out.push(&message)
                }
                Ok(LogOutput::StdErr { message }) => err.push(&message),
                Ok(LogOutput::StdIn { .. }) => {}
                Err(_) => break,
            }
        }
        out.finish();
        err.finish();
        let _ = done.send(());
    });
}

/// Whether a start failed because the engine has no init binary to inject.
fn is_missing_init(e: &EngineError) -> bool {
    let text = e.to_string();
    ["docker-init", "catatonit", "init binary", "init path"]
        .iter()
        .any(|needle| text.contains(needle))
}

/// Forced remove: the engine SIGKILLs whatever runs and deletes the container.
async fn remove_forced(docker: &Docker, id: &str) {
    let options = RemoveContainerOptions {
        force: true,
        v: true,
        ..Default::default()
    };
    match docker.remove_container(id, Some(options)).await {
        Ok(()) => {}
        // Already gone (a second close, a reaper): nothing to do.
        Err(EngineError::DockerResponseServerError {
            status_code: 404, ..
        }) => {}
        Err(e) => tracing::warn!("docker: cannot remove container {id}: {e}"),
    }
}

/// Why a container was not created.
enum CreateError {
    /// The engine refused `keep-id`: a rootful Podman, to be asked again without.
    KeepIdRefused,
    /// Anything else, for the run to report.
    Sandbox(SandboxError),
}

impl From<SandboxError> for CreateError {
    fn from(e: SandboxError) -> CreateError {
        CreateError::Sandbox(e)
    }
}
