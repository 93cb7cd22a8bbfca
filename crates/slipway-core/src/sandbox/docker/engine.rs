//! Reaching the engine: the container's configuration, the connection, and
//! the names and paths the engine is given.

use super::*;

/// One bind mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// Path on the engine's host.
    pub host_path: PathBuf,
    /// Path inside the container.
    pub container_path: PathBuf,
    /// Mounted read-only.
    pub readonly: bool,
}

impl Mount {
    /// A mount at the same absolute path inside as outside.
    pub fn same_path(path: impl Into<PathBuf>, readonly: bool) -> Mount {
        let path = path.into();
        Mount {
            host_path: path.clone(),
            container_path: path,
            readonly,
        }
    }
}

/// How to create the container of a run.
#[derive(Debug, Clone)]
pub struct DockerConfig {
    /// Image to run; it must already be on the engine (nothing is pulled).
    pub image: String,
    /// Bind mounts; deeper container paths are layered over shallower ones.
    pub mounts: Vec<Mount>,
    /// Environment of the container (and so of every exec); never on a command line.
    pub env: Vec<(String, String)>,
    /// Working directory of the container's own process; execs use their `cwd`.
    pub workdir: Option<PathBuf>,
    /// Network mode (`none`, `bridge`, `host`, a network name); `None` is the engine's default.
    pub network: Option<String>,
    /// Memory limit in bytes (swap included, so none beyond it); `None`: no limit.
    pub memory_bytes: Option<i64>,
    /// Most processes and threads at once; `None`: no limit.
    pub pids_limit: Option<i64>,
    /// The run id, stored in the `slipway.run` label.
    pub run_id: String,
    /// Optional scope label (e.g. the repository's common git dir), so one
    /// repository's reaper never touches another repository's containers.
    pub scope: Option<String>,
    /// `uid:gid` (or any user spec the engine accepts) the container and every exec run as.
    pub user: String,
    /// Run the engine's init (`docker-init`) as PID 1. When the engine has none,
    /// the start is retried once without it (the keep-alive shell is PID 1 then).
    pub init: bool,
    /// Creating, starting and probing the container must finish within this.
    pub start_timeout: Duration,
    /// The engine already connected to for this run, so a run agrees on the
    /// API version once; `None` connects (see [`connect`]).
    pub engine: Option<Docker>,
}

impl DockerConfig {
    /// A config with the defaults: no mounts or env, the engine's network, the
    /// host user's uid:gid, an init, and a 60 s start timeout.
    pub fn new(image: impl Into<String>, run_id: impl Into<String>) -> DockerConfig {
        DockerConfig {
            image: image.into(),
            mounts: Vec::new(),
            env: Vec::new(),
            workdir: None,
            network: None,
            memory_bytes: None,
            pids_limit: None,
            run_id: run_id.into(),
            scope: None,
            user: host_user(),
            init: true,
            start_timeout: Duration::from_secs(60),
            engine: None,
        }
    }
}

/// The current process's `uid:gid`, the user a sandbox runs as by default so
/// that files it creates in bind mounts belong to the host user.
pub fn host_user() -> String {
    // SAFETY: getuid and getgid cannot fail and touch no memory.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    format!("{uid}:{gid}")
}

/// Connects to the engine named by `DOCKER_HOST` (unix or tcp; Podman's socket
/// works the same), or the local default socket, and agrees on an API version.
pub async fn connect() -> Result<Docker, SandboxError> {
    let host = std::env::var("DOCKER_HOST").unwrap_or_else(|_| "the local socket".into());
    let unreachable = |e: EngineError| {
        SandboxError::Other(format!(
            "cannot reach the Docker engine at {host}: {e} (is the daemon running? DOCKER_HOST selects another engine)"
        ))
    };
    let docker = Docker::connect_with_defaults().map_err(&unreachable)?;
    match tokio::time::timeout(Duration::from_secs(15), docker.negotiate_version()).await {
        Ok(Ok(docker)) => Ok(docker),
        Ok(Err(e)) => Err(unreachable(e)),
        Err(_) => Err(SandboxError::Other(format!(
            "the Docker engine at {host} did not answer within 15 s"
        ))),
    }
}

pub(super) fn engine_error(what: &str, e: EngineError) -> SandboxError {
    SandboxError::Other(format!("docker: {what}: {e}"))
}

pub(super) fn utf8(path: &Path) -> Result<String, SandboxError> {
    path.to_str().map(str::to_owned).ok_or_else(|| {
        SandboxError::Other(format!(
            "the path {} is not UTF-8; the Docker API cannot carry it",
            path.display()
        ))
    })
}

/// A container name that is valid for the engine and unique on it.
pub(super) fn container_name(run_id: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let slug: String = run_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("slipway-{slug}-{:x}{nanos:08x}{n:x}", std::process::id())
}
