//! Starting, attaching to and handing sessions into the sandbox of a run.

use super::*;

/// A started sandbox; the isolated one also brings work back before closing.
pub(super) enum ActiveSandbox {
    Host(HostSandbox),
    Docker(Box<crate::sandbox::docker::DockerSandbox>),
    Isolated(Box<crate::sandbox::isolated::IsolatedSandbox>),
    /// A workspace's container: mounts at their `dst`, host paths mapped.
    Mapped(Box<crate::sandbox::mapped::MappedSandbox>),
}

impl ActiveSandbox {
    /// Puts the agent session being resumed where the agent inside looks for
    /// it: under the container's HOME (`/tmp`), with paths rewritten for the
    /// container's working directory. Host runs need nothing: same HOME, same cwd.
    pub(super) async fn hand_in_session(
        &self,
        agent: &AgentSpec,
        host_cwd: &Path,
        staging: &Path,
    ) -> Result<Option<PathBuf>, RunError> {
        use crate::agent::session::SessionPlace;
        let (Some(store), Some(resume)) = (
            agent.session_store(),
            agent.options().and_then(|o| o.resume.as_ref()),
        ) else {
            return Ok(None);
        };
        let (docker, container_cwd) = match self {
            ActiveSandbox::Host(_) | ActiveSandbox::Mapped(_) => return Ok(None),
            ActiveSandbox::Docker(d) => (d.as_ref(), host_cwd.to_path_buf()),
            ActiveSandbox::Isolated(i) => (i.docker(), i.container_worktree().to_path_buf()),
        };
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/"));
        let home_staging = staging.join("home");
        std::fs::create_dir_all(&home_staging).map_err(|e| RunError::Io(e.to_string()))?;
        let copied = store
            .copy(
                &resume.session_id,
                SessionPlace {
                    home: &home,
                    cwd: host_cwd,
                },
                SessionPlace {
                    home: &home_staging,
                    cwd: &container_cwd,
                },
            )
            .map_err(RunError::Session)?;
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
        let _ = std::fs::remove_dir_all(staging);
        Ok(Some(copied))
    }

    pub(super) fn as_dyn(&self) -> &dyn Sandbox {
        match self {
            ActiveSandbox::Host(s) => s,
            ActiveSandbox::Docker(s) => s.as_ref(),
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
    run_id: &str,
) -> Result<crate::sandbox::docker::DockerConfig, RunError> {
    use crate::sandbox::docker;
    let scope = host.common_dir().display().to_string();
    let engine = docker::connect().await?;
    let mut live: Vec<String> = live_runs(&host.slipway_dir());
    live.extend(sandboxes::live_ids(&host.slipway_dir()));
    live.push(run_id.to_owned());
    if let Err(e) = docker::reap_orphans(&engine, Some(&scope), &live).await {
        tracing::warn!("could not reap orphan containers: {e}");
    }
    let mut config = docker::DockerConfig::new(image.to_owned(), run_id);
    config.network = network.clone();
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
        .map(|r| r.run_id)
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
    let docker = sandboxes::attach_docker(&record).await?;
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

/// Starts the sandbox a run asked for.
pub(super) async fn start_sandbox(
    spec: &SandboxSpec,
    host: &HostRepo,
    place: &Place,
    run_id: &str,
) -> Result<ActiveSandbox, RunError> {
    use crate::sandbox::{docker, isolated};
    match spec {
        SandboxSpec::None => Ok(ActiveSandbox::Host(HostSandbox)),
        SandboxSpec::Docker { image, network } => {
            let mut config = docker_config(host, image, network, run_id).await?;
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
            let sandbox = docker::DockerSandbox::start(config).await?;
            Ok(ActiveSandbox::Docker(Box::new(sandbox)))
        }
        SandboxSpec::DockerIsolated { image, network } => {
            if place.record.is_none() {
                return Err(RunError::Invalid(
                    "the docker-isolated sandbox copies code in and out of a worktree; use the merge-to-head or branch strategy, not head".into(),
                ));
            }
            let (seed, base) =
                isolated::build_seed(&place.cwd, &place.branch, &place.copied, None)?;
            let config = docker_config(host, image, network, run_id).await?;
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
