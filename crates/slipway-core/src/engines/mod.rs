//! The user's Docker engines: a list in the user's `config.toml`
//! (`[[engines]]`, never a repository's `slipway.toml`, since an engine is
//! where programs run), each with a limit of concurrent runs. A run goes to
//! the first engine, in file order, with a free slot; a slot is a lock file
//! under the user's state folder, held by the run's process for the run's
//! life, so runs in several processes share the limits and a killed run
//! frees its slot. No engines listed: runs use `DOCKER_HOST` or the local
//! socket, as they always did.

mod config;
mod slots;
mod ssh;

use std::time::Duration;

use bollard::Docker;

use crate::sandbox::docker::{EngineInfo, EngineKind, handshake};

pub use config::{Engine, EngineUrl, config_file, load, load_from, parse};
pub use slots::{Slot, slots_dir};
pub use ssh::{Forward, SshTarget};

/// How long `slipway engines` waits for an engine to answer a ping.
pub const PING_DEADLINE: Duration = Duration::from_secs(3);

/// How long connecting to an engine for a run may take.
const CONNECT_DEADLINE: Duration = Duration::from_secs(15);

/// How often a run waiting for a slot looks again. Slots are lock files,
/// which tell no one when they are let go.
const SLOT_POLL: Duration = Duration::from_millis(200);

/// Why the engines could not be read, reached or used.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The user's config file cannot be read.
    #[error("cannot read {}: {source}", file.display())]
    Read {
        /// The file.
        file: std::path::PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The engine list breaks a rule; the message says which and how to fix it.
    #[error("{}: {message}", file.display())]
    Config {
        /// The file.
        file: std::path::PathBuf,
        /// What is wrong and what to write instead.
        message: String,
    },
    /// `--engine` names no engine of the list.
    #[error("no engine named '{name}' in {}; {}", file.display(), known_engines(known))]
    Unknown {
        /// The name asked for.
        name: String,
        /// The config file.
        file: std::path::PathBuf,
        /// The engines there are.
        known: Vec<String>,
    },
    /// A run asked for an engine without a Docker sandbox.
    #[error(
        "--engine '{name}' picks a Docker engine, but the run's sandbox is none: add --sandbox docker (or docker-isolated) and --image"
    )]
    NeedsDocker {
        /// The engine asked for.
        name: String,
    },
    /// No engine of the list could be reached.
    #[error(
        "cannot reach the Docker engine '{engine}' at {url}: {reason} (is its daemon running? `slipway engines` shows which engines answer)"
    )]
    Unreachable {
        /// The engine's name.
        engine: String,
        /// Its url.
        url: String,
        /// What the connection said.
        reason: String,
    },
    /// The image is not on the engine the run was given.
    #[error(
        "the image {image} is not on the engine '{engine}' ({url}); nothing is pulled: copy it there with `docker save {image} | docker -H {url} load`, or build it there"
    )]
    ImageMissing {
        /// The engine's name.
        engine: String,
        /// Its url.
        url: String,
        /// The image.
        image: String,
    },
    /// The engine stopped answering while the run used it.
    #[error(
        "the Docker engine '{engine}' ({url}) went away during the run ({detail}); the run's commits made so far were brought back. Start the engine again, or remove it from the engine list"
    )]
    Lost {
        /// The engine's name.
        engine: String,
        /// Its url.
        url: String,
        /// What the sandbox reported.
        detail: String,
    },
    /// The engine cannot see the host's files, and the run needs it to.
    #[error(
        "the engine '{engine}' is isolated (it cannot see the host's files), and a workspace's mounts need an engine that can: pick another with --engine"
    )]
    IsolatedWorkspace {
        /// The engine's name.
        engine: String,
    },
    /// The slot files cannot be made or locked.
    #[error("cannot take a slot of the engine '{engine}' in {}: {source}", dir.display())]
    Slots {
        /// The engine's name.
        engine: String,
        /// The slots' folder.
        dir: std::path::PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

fn known_engines(known: &[String]) -> String {
    if known.is_empty() {
        "the file lists no engines: add an [[engines]] table with name, url and limit".to_owned()
    } else {
        format!("the engines are: {}", known.join(", "))
    }
}

impl crate::error::Failure for EngineError {
    fn kind(&self) -> crate::error::ErrorKind {
        use crate::error::ErrorKind;
        match self {
            EngineError::Read { .. } | EngineError::Slots { .. } => ErrorKind::Io,
            EngineError::Config { .. } => ErrorKind::EngineConfig,
            EngineError::Unknown { .. } => ErrorKind::UnknownEngine,
            EngineError::NeedsDocker { .. } | EngineError::IsolatedWorkspace { .. } => {
                ErrorKind::InvalidParams
            }
            EngineError::Unreachable { .. } => ErrorKind::EngineUnreachable,
            EngineError::ImageMissing { .. } => ErrorKind::ImageMissing,
            EngineError::Lost { .. } => ErrorKind::EngineLost,
        }
    }

    fn data(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut data = serde_json::Map::new();
        match self {
            EngineError::Unreachable { engine, url, .. }
            | EngineError::Lost { engine, url, .. }
            | EngineError::ImageMissing { engine, url, .. } => {
                data.insert("engine".into(), engine.clone().into());
                data.insert("url".into(), url.clone().into());
            }
            EngineError::Unknown { known, .. } => {
                data.insert("choices".into(), known.clone().into());
            }
            _ => {}
        }
        data
    }
}

/// A run's engine: which, the connection, and the slot it holds until dropped.
pub struct Placement {
    /// The engine.
    pub engine: Engine,
    /// Connected, with the API version agreed.
    pub docker: Docker,
    /// Which engine it is.
    pub kind: EngineKind,
    /// The slot, held for the life of this value.
    pub slot: Slot,
    /// An `ssh://` engine's forward, up for the life of this value.
    _forward: Option<Forward>,
}

impl std::fmt::Debug for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Placement")
            .field("engine", &self.engine.name)
            .field("slot", &self.slot.index())
            .finish_non_exhaustive()
    }
}

impl Placement {
    /// Fails with [`EngineError::ImageMissing`] when `image` is not on the engine.
    pub async fn check_image(&self, image: &str) -> Result<(), EngineError> {
        match self.docker.inspect_image(image).await {
            Ok(_) => Ok(()),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Err(EngineError::ImageMissing {
                engine: self.engine.name.clone(),
                url: self.engine.url.to_string(),
                image: image.to_owned(),
            }),
            Err(e) => Err(self.unreachable(e.to_string())),
        }
    }

    /// Whether the engine still answers, within [`PING_DEADLINE`].
    pub async fn answers(&self) -> bool {
        matches!(
            tokio::time::timeout(PING_DEADLINE, self.docker.ping()).await,
            Ok(Ok(_))
        )
    }

    /// The failure of a run whose engine went away, carrying what the sandbox said.
    pub fn lost(&self, detail: String) -> EngineError {
        EngineError::Lost {
            engine: self.engine.name.clone(),
            url: self.engine.url.to_string(),
            detail,
        }
    }

    fn unreachable(&self, reason: String) -> EngineError {
        self.engine.unreachable(reason)
    }
}

/// Connects to `engine` and agrees on an API version, within `deadline`,
/// telling which engine answered; an `ssh://` engine's forward comes with the
/// client and must be kept with it.
pub async fn connect(
    engine: &Engine,
    deadline: Duration,
) -> Result<(Docker, EngineInfo, Option<Forward>), EngineError> {
    /// Where the client's requests go.
    enum Target {
        Socket(std::path::PathBuf),
        Tcp(String),
    }
    let (target, forward) = match &engine.url {
        EngineUrl::Unix(path) => (Target::Socket(path.clone()), None),
        EngineUrl::Tcp(addr) => (Target::Tcp(addr.clone()), None),
        EngineUrl::Ssh(target) => {
            let forward = Forward::open(target, deadline)
                .await
                .map_err(|reason| engine.unreachable(reason))?;
            (
                Target::Socket(forward.socket().to_path_buf()),
                Some(forward),
            )
        }
    };
    let client_at = |version: &bollard::ClientVersion| match &target {
        Target::Socket(path) => EngineUrl::unix_client(path, version),
        Target::Tcp(addr) => EngineUrl::tcp_client(addr, version),
    };
    let docker =
        client_at(bollard::API_DEFAULT_VERSION).map_err(|e| engine.unreachable(e.to_string()))?;
    let handshake = handshake(docker, |version| Some(client_at(version)));
    match tokio::time::timeout(deadline, handshake).await {
        Ok(Ok((docker, info))) => Ok((docker, info, forward)),
        Ok(Err(e)) => Err(engine.unreachable(e.to_string())),
        Err(_) => Err(engine.unreachable(format!("no answer within {} s", deadline.as_secs()))),
    }
}

/// Checks what a run asks of the engines before anything is made: the
/// user's list reads (for a docker run), and `only`, when given, is on it
/// and goes with a docker sandbox.
pub fn check(only: Option<&str>, docker: bool) -> Result<(), EngineError> {
    match only {
        Some(name) if !docker => Err(EngineError::NeedsDocker {
            name: name.to_owned(),
        }),
        Some(name) => listed(Some(name)).map(drop),
        None if docker => load().map(drop),
        None => Ok(()),
    }
}

/// The engines a run may go to: every listed one, or only the one named.
fn listed(only: Option<&str>) -> Result<Vec<Engine>, EngineError> {
    let file = config_file();
    let engines = match &file {
        Some(file) => load_from(file)?,
        None => Vec::new(),
    };
    let Some(name) = only else {
        return Ok(engines);
    };
    let known: Vec<String> = engines.iter().map(|e| e.name.clone()).collect();
    let picked: Vec<Engine> = engines.into_iter().filter(|e| e.name == name).collect();
    if picked.is_empty() {
        return Err(EngineError::Unknown {
            name: name.to_owned(),
            file: file.unwrap_or_default(),
            known,
        });
    }
    Ok(picked)
}

/// Gives a run of `run_id` an engine: the first in the list with a free slot
/// (only `only` when given), waiting while all are full and telling
/// `waiting` once why. `None` when the user lists no engines and none was
/// asked for: the run uses `DOCKER_HOST` or the local socket. An engine that
/// does not answer is passed over; when none answers, the first one's
/// failure is returned.
pub async fn place(
    run_id: &str,
    only: Option<&str>,
    waiting: &mut (dyn FnMut(String) + Send),
) -> Result<Option<Placement>, EngineError> {
    let engines = listed(only)?;
    if engines.is_empty() {
        return Ok(None);
    }
    let dir = slots_dir();
    let mut down: Vec<Option<EngineError>> = engines.iter().map(|_| None).collect();
    let mut told = false;
    loop {
        for (engine, down) in engines.iter().zip(down.iter_mut()) {
            if down.is_some() {
                continue;
            }
            let Some(slot) = Slot::take(&dir, engine, run_id)? else {
                continue;
            };
            match connect(engine, CONNECT_DEADLINE).await {
                Ok((docker, info, forward)) => {
                    return Ok(Some(Placement {
                        engine: engine.clone(),
                        docker,
                        kind: info.kind,
                        slot,
                        _forward: forward,
                    }));
                }
                Err(e) => {
                    tracing::warn!("{e}; trying the next engine");
                    *down = Some(e);
                }
            }
        }
        if down.iter().all(Option::is_some) {
            let first = down.into_iter().flatten().next();
            return Err(first.expect("there is at least one engine, and every one failed"));
        }
        if !told {
            told = true;
            let load: Vec<String> = engines
                .iter()
                .zip(&down)
                .filter(|(_, d)| d.is_none())
                .map(|(e, _)| format!("{} {}/{}", e.name, slots::load(&dir, e).len(), e.limit))
                .collect();
            waiting(format!(
                "every engine is busy ({}): waiting for a free slot",
                load.join(", ")
            ));
        }
        tokio::time::sleep(SLOT_POLL).await;
    }
}

/// One engine as `slipway engines` shows it.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EngineStatus {
    /// Its name.
    pub name: String,
    /// Its url.
    pub url: String,
    /// Most runs at once.
    pub limit: u32,
    /// It cannot see the host's files (runs there use the isolated sandbox).
    pub isolated: bool,
    /// Runs holding a slot now.
    pub load: usize,
    /// Their ids, as far as their slot files say.
    pub runs: Vec<String>,
    /// It answered a ping within [`PING_DEADLINE`].
    pub reachable: bool,
    /// The engine's version, when it answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Why it did not answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Every listed engine with its load, pinging them all at once.
pub async fn status() -> Result<Vec<EngineStatus>, EngineError> {
    let engines = load()?;
    let dir = slots_dir();
    let pings = engines.iter().map(|engine| async {
        let runs = slots::load(&dir, engine);
        let answer = match connect(engine, PING_DEADLINE).await {
            Ok((_, info, _)) => Ok(info.version),
            Err(EngineError::Unreachable { reason, .. }) => Err(reason),
            Err(e) => Err(e.to_string()),
        };
        EngineStatus {
            name: engine.name.clone(),
            url: engine.url.to_string(),
            limit: engine.limit,
            isolated: engine.isolated,
            load: runs.len(),
            runs,
            reachable: answer.is_ok(),
            version: answer.as_ref().ok().cloned(),
            error: answer.err(),
        }
    });
    Ok(futures_util::future::join_all(pings).await)
}
