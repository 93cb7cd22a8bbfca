//! Reaching the engine: the container's configuration, the connection, and
//! the names and paths the engine is given.

use bollard::ClientVersion;

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
    /// Which engine `engine` is. Podman runs the container in the host
    /// user's ids (`keep-id`) where it is rootless, where the container's
    /// uids would otherwise be the user's subordinate ones: files in the
    /// bind mounts would not be the user's and git would find them dubious.
    pub engine_kind: EngineKind,
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
            engine_kind: EngineKind::Docker,
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

/// Which engine answered: Podman's Docker-compatible API differs where it
/// maps users.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EngineKind {
    /// Docker, or any engine not known to differ from it.
    #[default]
    Docker,
    /// Podman (rootful or rootless), which names itself "Podman Engine" in `/version`.
    Podman,
}

/// What the engine told of itself in the handshake.
#[derive(Debug, Clone)]
pub struct EngineInfo {
    /// Docker or Podman.
    pub kind: EngineKind,
    /// The engine's own version (`24.0.7`, `4.3.1`), empty when it named none.
    pub version: String,
}

/// Agrees on an API version with the engine behind `client` in one `/version`
/// request and tells which engine it is. When the engine speaks an older API
/// than `client`, `at_version` makes the client for that version (nothing is
/// sent); where it cannot (`None`), bollard's own negotiation asks again.
pub async fn handshake(
    client: Docker,
    at_version: impl FnOnce(&ClientVersion) -> Option<Result<Docker, EngineError>>,
) -> Result<(Docker, EngineInfo), EngineError> {
    let answer = client.version().await?;
    let podman = answer
        .components
        .iter()
        .flatten()
        .any(|c| c.name == "Podman Engine");
    let kind = if podman {
        EngineKind::Podman
    } else {
        EngineKind::Docker
    };
    let info = EngineInfo {
        kind,
        version: answer.version.clone().unwrap_or_default(),
    };
    let server = answer
        .api_version
        .as_deref()
        .and_then(api_version)
        .ok_or(EngineError::APIVersionParseError {})?;
    if server >= client.client_version() {
        return Ok((client, info));
    }
    match at_version(&server) {
        Some(rebuilt) => Ok((rebuilt?, info)),
        None => Ok((client.negotiate_version().await?, info)),
    }
}

/// `1.41` as a client version; `None` for anything else.
fn api_version(text: &str) -> Option<ClientVersion> {
    let (major, minor) = text.split_once('.')?;
    Some(ClientVersion {
        major_version: major.parse().ok()?,
        minor_version: minor.parse().ok()?,
    })
}

/// Connects to the engine named by `DOCKER_HOST` (unix or tcp; Podman's socket
/// works the same), or the local default socket, and agrees on an API version.
pub async fn connect() -> Result<Docker, SandboxError> {
    Ok(connect_and_tell().await?.0)
}

/// [`connect`], also telling which engine answered.
pub async fn connect_and_tell() -> Result<(Docker, EngineInfo), SandboxError> {
    let host = std::env::var("DOCKER_HOST").ok();
    let named = host.clone().unwrap_or_else(|| "the local socket".into());
    let unreachable = |e: EngineError| {
        SandboxError::Other(format!(
            "cannot reach the Docker engine at {named}: {e} (is the daemon running? DOCKER_HOST selects another engine)"
        ))
    };
    let docker = Docker::connect_with_defaults().map_err(&unreachable)?;
    // The schemes bollard's defaults read without TLS; others negotiate again.
    let at_version = |version: &ClientVersion| match host.as_deref() {
        None => Some(Docker::connect_with_unix(
            DEFAULT_SOCKET,
            REQUEST_TIMEOUT_SECS,
            version,
        )),
        Some(h) if h.starts_with("unix://") => {
            Some(Docker::connect_with_unix(h, REQUEST_TIMEOUT_SECS, version))
        }
        Some(h)
            if (h.starts_with("tcp://") || h.starts_with("http://"))
                && std::env::var_os("DOCKER_TLS_VERIFY").is_none() =>
        {
            Some(Docker::connect_with_http(h, REQUEST_TIMEOUT_SECS, version))
        }
        Some(_) => None,
    };
    match tokio::time::timeout(Duration::from_secs(15), handshake(docker, at_version)).await {
        Ok(Ok(connected)) => Ok(connected),
        Ok(Err(e)) => Err(unreachable(e)),
        Err(_) => Err(SandboxError::Other(format!(
            "the Docker engine at {named} did not answer within 15 s"
        ))),
    }
}

/// bollard's own request timeout, for every client slipway makes itself.
pub(crate) const REQUEST_TIMEOUT_SECS: u64 = 120;

/// The socket bollard's defaults use when `DOCKER_HOST` is unset.
const DEFAULT_SOCKET: &str = "unix:///var/run/docker.sock";

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engines_api_version_reads_as_major_and_minor() {
        let v = api_version("1.41").expect("1.41");
        assert_eq!((v.major_version, v.minor_version), (1, 41));
        assert!(api_version("1.41") < api_version("1.53"));
        for bad in ["", "1", "1.", "v1.41", "1.x", "-1.2"] {
            assert!(api_version(bad).is_none(), "{bad:?}");
        }
    }
}
