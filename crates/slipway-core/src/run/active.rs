//! Starting, attaching to and handing sessions into the sandbox of a run.

use super::*;
use crate::agent::session::{SessionError, TokenTotals, rewrite_paths};
use crate::sandbox::docker;

/// A started sandbox; the isolated one also brings work back before closing.
pub(super) enum ActiveSandbox {
    Host(HostSandbox),
    Docker(Box<crate::sandbox::docker::DockerSandbox>),
    /// A container whose own process is the run's only one.
    OneProcess(Box<crate::sandbox::docker::OneProcessSandbox>),
    Isolated(Box<crate::sandbox::isolated::IsolatedSandbox>),
    /// A workspace's container: mounts at their `dst`, host paths mapped.
    Mapped(Box<crate::sandbox::mapped::MappedSandbox>),
}

/// What handing the resumed session in did.
#[derive(Debug, Default)]
pub(super) struct HandedIn {
    /// What to tell the user, when something was moved.
    pub(super) note: Option<String>,
    /// The session's running token total before the run (Codex).
    pub(super) usage_total: TokenTotals,
}

impl ActiveSandbox {
    /// Whether the agent runs in a container (which gets only declared environment).
    pub(super) fn is_container(&self) -> bool {
        !matches!(self, ActiveSandbox::Host(_))
    }

    /// Puts the agent session being resumed where the agent will look for it.
    /// On the host, a session recorded in another working directory (a
    /// worktree merged and removed since) is carried into this one's. In a
    /// container, it goes under the container's HOME (`/tmp`) with its paths
    /// rewritten for the container's working directory. What cannot be carried
    /// is refused before the agent starts, with a typed error.
    pub(super) async fn hand_in_session(
        &self,
        agent: &AgentSpec,
        host_cwd: &Path,
        staging: &Path,
    ) -> Result<HandedIn, RunError> {
        let Some(resume) = agent.options().and_then(|o| o.resume.as_ref()) else {
            return Ok(HandedIn::default());
        };
        let id = resume.session_id.as_str();
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/"));
        let not_carried = |reason: &str| {
            RunError::Session(SessionError::NotCarried {
                agent: agent.name(),
                id: id.to_owned(),
                reason: reason.to_owned(),
            })
        };
        let Some(store) = agent.session_store() else {
            return match (self, agent) {
                (ActiveSandbox::Host(_), AgentSpec::Opencode(o)) => {
                    let binary = o.binary.as_deref().unwrap_or("opencode");
                    let note =
                        carry_opencode_session(agent.name(), binary, id, host_cwd, staging).await?;
                    Ok(HandedIn {
                        note,
                        usage_total: TokenTotals::default(),
                    })
                }
                (ActiveSandbox::Host(_), _) => Ok(HandedIn::default()),
                _ => Err(not_carried(
                    "slipway carries only Claude Code, Codex and Pi sessions into a container; \
                     resume it with the host sandbox (none)",
                )),
            };
        };
        let host_root = store.root_in_env(&home, |name| std::env::var_os(name));
        let (docker, container_cwd) = match self {
            ActiveSandbox::Host(_) => {
                let carried = store.carry(id, &host_root, &host_root, host_cwd)?;
                return Ok(HandedIn {
                    note: carried.copied_from.map(|from| {
                        format!(
                            "the session was carried from {} to {}",
                            from.display(),
                            carried.file.display()
                        )
                    }),
                    usage_total: carried.usage_total.unwrap_or_default(),
                });
            }
            ActiveSandbox::Mapped(_) => {
                return Err(not_carried(
                    "slipway does not carry sessions into a workspace's container yet; \
                     resume it in a worktree run",
                ));
            }
            ActiveSandbox::Docker(d) => (d.as_ref(), host_cwd.to_path_buf()),
            // A run that resumes a session is never given this sandbox.
            ActiveSandbox::OneProcess(_) => {
                return Err(not_carried(
                    "the session must be copied in before the agent starts",
                ));
            }
            ActiveSandbox::Isolated(i) => (i.docker(), i.container_worktree().to_path_buf()),
        };
        let home_staging = staging.join("home");
        std::fs::create_dir_all(&home_staging).map_err(|e| RunError::Io(e.to_string()))?;
        let carried = store.carry(id, &host_root, &store.root(&home_staging), &container_cwd)?;
        let mut builder = tar::Builder::new(Vec::new());
        for entry in std::fs::read_dir(&home_staging).map_err(|e| RunError::Io(e.to_string()))? {
            let entry = entry.map_err(|e| RunError::Io(e.to_string()))?;
            crate::sandbox::isolated::add_tree(
                &mut builder,
                &home_staging,
                Path::new(&entry.file_name()),
                ".",
            )?;
        }
        let tar = builder
            .into_inner()
            .map_err(|e| RunError::Io(e.to_string()))?;
        docker.upload_tar("/tmp", tar).await?;
        if let Err(e) = std::fs::remove_dir_all(staging) {
            tracing::warn!("could not remove {}: {e}", staging.display());
        }
        Ok(HandedIn {
            note: Some(format!(
                "the agent session {id} was handed into the sandbox"
            )),
            usage_total: carried.usage_total.unwrap_or_default(),
        })
    }

    pub(super) fn as_dyn(&self) -> &dyn Sandbox {
        match self {
            ActiveSandbox::Host(s) => s,
            ActiveSandbox::Docker(s) => s.as_ref(),
            ActiveSandbox::OneProcess(s) => s.as_ref(),
            ActiveSandbox::Isolated(s) => s.as_ref(),
            ActiveSandbox::Mapped(s) => s.as_ref(),
        }
    }
}

/// The container configuration every Docker sandbox of a run shares, after
/// reaping containers of this repository whose runs are gone.
pub(crate) async fn docker_config(
    host: &HostRepo,
    image: &str,
    network: &Option<String>,
    limits: &super::Limits,
    run_id: &str,
    engine: Option<(bollard::Docker, docker::EngineKind)>,
) -> Result<docker::DockerConfig, RunError> {
    let scope = host.common_dir().display().to_string();
    let (engine, engine_kind) = match engine {
        Some(engine) => engine,
        None => {
            let (engine, info) = docker::connect_and_tell().await?;
            (engine, info.kind)
        }
    };
    let mut live: Vec<String> = live_runs(&host.slipway_dir());
    live.extend(sandboxes::live_ids(&host.slipway_dir()));
    live.push(run_id.to_owned());
    // Reaping goes on while the container is made: the run's own container
    // is among the live ones, and nothing waits for a listing first.
    let reaper = engine.clone();
    let reap_scope = scope.clone();
    tokio::spawn(async move {
        if let Err(e) = docker::reap_orphans(&reaper, Some(&reap_scope), &live).await {
            tracing::warn!("could not reap orphan containers: {e}");
        }
    });
    let mut config = docker::DockerConfig::new(image.to_owned(), run_id);
    config.engine = Some(engine);
    config.engine_kind = engine_kind;
    config.network = network.clone();
    (config.memory_bytes, config.pids_limit) = limits.resolved();
    config.scope = Some(scope);
    // /tmp exists in every image and is the container's own; git setup inside
    // the sandbox uses a config file private to it.
    config.env = vec![
        ("HOME".into(), "/tmp".into()),
        ("GIT_CONFIG_GLOBAL".into(), "/tmp/.slipway-gitconfig".into()),
        ("GIT_CONFIG_NOSYSTEM".into(), "1".into()),
    ];
    Ok(config)
}

/// Ids of run records in the `running` state whose process is alive.
fn live_runs(slipway_dir: &Path) -> Vec<String> {
    RunRecord::load_all(slipway_dir)
        .into_iter()
        .filter(|r| r.state == RunState::Running && crate::worktree::pid_alive(r.pid))
        .map(|r| r.run_id.to_string())
        .collect()
}

/// Attaches to a long-lived sandbox; an isolated one gets what changed since
/// it was last synced.
pub(super) async fn attach_sandbox(
    ctx: &mut Ctx<'_>,
    host: &HostRepo,
    place: &Place,
    id: &str,
) -> Result<ActiveSandbox, RunError> {
    use crate::sandbox::isolated;
    let record = sandboxes::SandboxRecord::load(host, id)
        .ok_or_else(|| RunError::Invalid(format!("no sandbox '{id}' in this repository")))?;
    let docker = sandboxes::attach_docker(host, &record).await?;
    match record.spec {
        SandboxSpec::DockerIsolated { .. } => {
            let have = record
                .synced_commit
                .as_deref()
                .and_then(|c| git2::Oid::from_str(c).ok());
            let (seed, base) =
                isolated::build_seed(&place.cwd, &place.branch, &place.copied, have)?;
            ctx.phase(
                "sandbox",
                format!(
                    "shipping {} bytes into sandbox {id}{}",
                    seed.len(),
                    have.map(|h| format!(
                        " (only what is new since {})",
                        crate::git::policy::short_id(h)
                    ))
                    .unwrap_or_default()
                ),
            );
            let sandbox =
                isolated::IsolatedSandbox::attach(docker, &place.cwd, &place.branch, seed, base)
                    .await?;
            Ok(ActiveSandbox::Isolated(Box::new(sandbox)))
        }
        _ => Ok(ActiveSandbox::Docker(Box::new(docker))),
    }
}

/// Starts the sandbox a run asked for. With `one_process` (the run starts
/// nothing in the sandbox but its agent, once), a docker run's agent is the
/// container's own process.
pub(super) async fn start_sandbox(
    spec: &SandboxSpec,
    host: &HostRepo,
    place: &Place,
    run_id: &str,
    one_process: bool,
    engine: Option<(bollard::Docker, docker::EngineKind)>,
) -> Result<ActiveSandbox, RunError> {
    use crate::sandbox::isolated;
    match spec {
        SandboxSpec::None => Ok(ActiveSandbox::Host(HostSandbox)),
        SandboxSpec::Docker {
            image,
            network,
            limits,
        } => {
            let mut config =
                docker_config(host, image, network, limits, run_id, engine.clone()).await?;
            if let Some(mounts) = &place.workspace {
                config.mounts = super::workspace::docker_mounts(mounts)?;
                let sandbox = docker::DockerSandbox::start(config).await?;
                let mapped = crate::sandbox::mapped::MappedSandbox::new(
                    Box::new(sandbox),
                    super::workspace::path_map(mounts),
                );
                return Ok(ActiveSandbox::Mapped(Box::new(mapped)));
            }
            let git = place.git.as_ref().ok_or_else(|| {
                RunError::Invalid("a docker run needs its private git dir".into())
            })?;
            config.mounts = git.mounts(None).map_err(|e| RunError::Io(e.to_string()))?;
            config.workdir = Some(place.cwd.clone());
            if one_process {
                let sandbox = docker::OneProcessSandbox::new(config).await?;
                return Ok(ActiveSandbox::OneProcess(Box::new(sandbox)));
            }
            let sandbox = docker::DockerSandbox::start(config).await?;
            Ok(ActiveSandbox::Docker(Box::new(sandbox)))
        }
        SandboxSpec::DockerIsolated {
            image,
            network,
            limits,
        } => {
            if place.record.is_none() {
                return Err(RunError::Invalid(
                    "the docker-isolated sandbox copies code in and out of a worktree; use the merge-to-head or branch strategy, not head".into(),
                ));
            }
            let (seed, base) =
                isolated::build_seed(&place.cwd, &place.branch, &place.copied, None)?;
            let config =
                docker_config(host, image, network, limits, run_id, engine.clone()).await?;
            let sandbox =
                isolated::IsolatedSandbox::start(config, &place.cwd, &place.branch, seed, base)
                    .await?;
            Ok(ActiveSandbox::Isolated(Box::new(sandbox)))
        }
    }
}

pub(super) fn sandbox_name(spec: &SandboxSpec) -> &'static str {
    match spec {
        SandboxSpec::None => "none",
        SandboxSpec::Docker { .. } => "docker",
        SandboxSpec::DockerIsolated { .. } => "docker-isolated",
    }
}

/// Makes an OpenCode session resumable in `cwd`. OpenCode resumes a session in
/// the directory it was created in and fails when that is gone, so a session
/// from elsewhere is exported, its paths rewritten to `cwd`, and imported
/// again under the same id. Returns a note when it moved.
async fn carry_opencode_session(
    agent: &'static str,
    binary: &str,
    id: &str,
    cwd: &Path,
    staging: &Path,
) -> Result<Option<String>, RunError> {
    let failed = |reason: String| {
        RunError::Session(SessionError::NotCarried {
            agent,
            id: id.to_owned(),
            reason,
        })
    };
    let exported = opencode(binary, &["export", id], cwd)
        .await
        .map_err(|e| failed(format!("`{binary} export {id}` failed: {e}")))?;
    let session: serde_json::Value = serde_json::from_slice(&exported)
        .map_err(|e| failed(format!("`{binary} export {id}` printed no session ({e})")))?;
    let Some(old) = session
        .get("info")
        .and_then(|i| i.get("directory"))
        .and_then(|d| d.as_str())
        .map(str::to_owned)
    else {
        return Err(failed(format!(
            "`{binary} export {id}` names no directory for the session"
        )));
    };
    let new = cwd
        .to_str()
        .ok_or_else(|| failed(format!("{} is not valid UTF-8", cwd.display())))?;
    if Path::new(&old) == cwd {
        return Ok(None);
    }
    std::fs::create_dir_all(staging).map_err(|e| RunError::Io(e.to_string()))?;
    let file = staging.join(format!("opencode-{id}.json"));
    std::fs::write(&file, rewrite_paths(&exported, &old, new))
        .map_err(|e| RunError::Io(format!("{}: {e}", file.display())))?;
    let file_arg = file.display().to_string();
    let imported = opencode(binary, &["import", &file_arg], cwd).await;
    if let Err(e) = std::fs::remove_dir_all(staging) {
        tracing::warn!("could not remove {}: {e}", staging.display());
    }
    imported.map_err(|e| failed(format!("`{binary} import` failed: {e}")))?;
    Ok(Some(format!(
        "the OpenCode session {id} was carried from {old} to {new}"
    )))
}

/// Runs the OpenCode CLI on the host in `cwd` (with `PWD` to match, which
/// OpenCode trusts); returns its stdout, or what went wrong.
async fn opencode(binary: &str, args: &[&str], cwd: &Path) -> Result<Vec<u8>, String> {
    let run = tokio::process::Command::new(binary)
        .args(args)
        .current_dir(cwd)
        .env("PWD", cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(Duration::from_secs(60), run).await {
        Err(_) => Err("no answer within 60 s".into()),
        Ok(Err(e)) => Err(e.to_string()),
        Ok(Ok(out)) if out.status.success() => Ok(out.stdout),
        Ok(Ok(out)) => Err(format!(
            "{}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}
