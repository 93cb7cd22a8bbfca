//! Long-lived sandboxes: create a container once for a worktree, run in it
//! many times, exec commands in it, then close it. Closing removes only the
//! container; the worktree follows its own close rules. Each sandbox has a
//! record under `.slipway/sandboxes/`, so any later process can use it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{RunError, SandboxSpec, docker_config};
use crate::git::HostRepo;
use crate::sandbox::docker::{DockerSandbox, Owner, host_user};
use crate::sandbox::isolated::{IsolatedSandbox, build_seed};
use crate::sandbox::{ExecSpec, OutputEvent, Sandbox, SandboxError};
use crate::util::{now_secs, random_hex, write_atomic};
use crate::worktree;

/// What is known of one long-lived sandbox.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxRecord {
    /// Sandbox id (also the container's `slipway.run` label).
    pub id: String,
    /// Which kind of sandbox.
    pub spec: SandboxSpec,
    /// The container.
    pub container_id: String,
    /// The worktree it serves.
    pub worktree_id: String,
    /// That worktree's path on the host.
    pub worktree_path: PathBuf,
    /// Its branch.
    pub branch: String,
    /// The user processes run as.
    pub user: String,
    /// Isolated sandboxes: the branch commit the container already holds.
    pub synced_commit: Option<String>,
    /// Creation time, seconds since the epoch.
    pub created: u64,
    /// The layout of the sandbox's git state: 2 for a private git dir (this
    /// version); absent in records of earlier versions, whose docker
    /// containers had the repository's git dir mounted.
    #[serde(default)]
    pub git_layout: u32,
}

/// The git layout of sandboxes this version makes.
const GIT_LAYOUT: u32 = 2;

/// Why a sandbox operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SandboxesError {
    /// No such sandbox.
    #[error("no sandbox '{0}' in this repository")]
    Unknown(String),
    /// The host sandbox is not long-lived.
    #[error("only docker and docker-isolated sandboxes are long-lived")]
    NotAContainer,
    /// Anything the run machinery reports.
    #[error(transparent)]
    Run(#[from] RunError),
}

/// The refusal for a sandbox made before runs had a private git dir.
pub fn outdated(record: &SandboxRecord) -> Option<RunError> {
    (matches!(record.spec, SandboxSpec::Docker { .. }) && record.git_layout < GIT_LAYOUT).then(|| {
        RunError::Outdated(format!(
            "sandbox '{id}' was made by an earlier slipway, whose containers could write the repository's .git; \
             close it and create it again (the worktree stays)",
            id = record.id
        ))
    })
}

/// Where a long-lived sandbox's private git dir lives on the host.
pub fn private_base(host: &HostRepo, id: &str) -> PathBuf {
    dir(host).join(id)
}

/// A long-lived sandbox's container frozen while slipway reads its git dir.
pub struct Paused {
    docker: DockerSandbox,
}

impl Paused {
    /// Lets the container's processes go on.
    pub async fn resume(self) {
        if let Err(e) = self.docker.unpause().await {
            tracing::warn!("could not unpause the sandbox's container: {e}");
        }
    }
}

/// Pauses a long-lived docker sandbox's container, so no process left in it
/// can write its private git dir while the run's branch is imported. `None`
/// when it is not running (then nothing in it can write either).
pub async fn pause(host: &HostRepo, id: &str) -> Option<Paused> {
    let record = SandboxRecord::load(host, id)?;
    let docker = attach_docker(host, &record).await.ok()?;
    match docker.pause().await {
        Ok(()) => Some(Paused { docker }),
        Err(e) => {
            tracing::warn!("could not pause sandbox {id}: {e}");
            None
        }
    }
}

impl crate::error::Failure for SandboxesError {
    fn kind(&self) -> crate::error::ErrorKind {
        match self {
            SandboxesError::Unknown(_) => crate::error::ErrorKind::UnknownSandbox,
            SandboxesError::NotAContainer => crate::error::ErrorKind::InvalidParams,
            SandboxesError::Run(e) => e.kind(),
        }
    }

    fn data(&self) -> serde_json::Map<String, serde_json::Value> {
        match self {
            SandboxesError::Run(e) => crate::error::Failure::data(e),
            _ => serde_json::Map::new(),
        }
    }

    fn hints(&self) -> Vec<crate::error::Hint> {
        use crate::error::{Field, Hint};
        match self {
            SandboxesError::Unknown(_) => vec![Hint::ListSandboxes],
            SandboxesError::NotAContainer => vec![
                Hint::Give {
                    field: Field::Sandbox,
                },
                Hint::Give {
                    field: Field::Image,
                },
            ],
            SandboxesError::Run(e) => crate::error::Failure::hints(e),
        }
    }
}

fn dir(host: &HostRepo) -> PathBuf {
    host.slipway_dir().join("sandboxes")
}

impl SandboxRecord {
    fn save(&self, host: &HostRepo) -> Result<(), RunError> {
        let bytes = serde_json::to_vec_pretty(self).expect("a sandbox record always serialises");
        write_atomic(&dir(host).join(format!("{}.json", self.id)), &bytes)
            .map_err(|e| RunError::Io(e.to_string()))
    }

    /// Loads one record.
    /// Loads a sandbox's record: `id` must be a sandbox id, and the record
    /// must name that sandbox and a worktree folder where slipway puts
    /// worktrees; anything else is not followed (and left as it is).
    pub fn load(host: &HostRepo, id: &str) -> Option<SandboxRecord> {
        let id = crate::ids::SandboxId::parse(id).ok()?;
        let bytes = std::fs::read(dir(host).join(format!("{id}.json"))).ok()?;
        let record: SandboxRecord = serde_json::from_slice(&bytes).ok()?;
        let worktree = crate::ids::WorktreeId::parse(&record.worktree_id).ok()?;
        let expected = worktree::worktrees_dir(host).join(worktree.as_str());
        if record.id != *id || record.worktree_path != expected {
            tracing::warn!(
                "the sandbox record {id} names another sandbox or a folder slipway did not make; it was left alone"
            );
            return None;
        }
        Some(record)
    }

    /// Every record.
    pub fn list(host: &HostRepo) -> Vec<SandboxRecord> {
        let Ok(entries) = std::fs::read_dir(dir(host)) else {
            return Vec::new();
        };
        let mut out: Vec<SandboxRecord> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
            .filter_map(|e| std::fs::read(e.path()).ok())
            .filter_map(|b| serde_json::from_slice(&b).ok())
            .collect();
        out.sort_by_key(|r: &SandboxRecord| r.created);
        out
    }

    /// Records that the container now holds `commit` of the branch. A
    /// record that cannot be written only costs the next run a full upload.
    pub fn set_synced(
        host: &HostRepo,
        id: &str,
        commit: Option<git2::Oid>,
    ) -> Result<(), RunError> {
        match SandboxRecord::load(host, id) {
            Some(mut record) => {
                record.synced_commit = commit.map(|c| c.to_string());
                record.save(host)
            }
            None => Ok(()),
        }
    }
}

/// Creates a long-lived sandbox for an existing worktree.
pub async fn create(
    host: &HostRepo,
    worktree_selector: &str,
    spec: &SandboxSpec,
) -> Result<SandboxRecord, SandboxesError> {
    let record = worktree::find(host, worktree_selector)
        .ok_or_else(|| RunError::WorktreeNotFound(worktree_selector.to_owned()))?;
    let id = format!("sbx-{}", random_hex(4));
    let (container, synced) = match spec {
        SandboxSpec::None => return Err(SandboxesError::NotAContainer),
        SandboxSpec::Docker {
            image,
            network,
            limits,
        } => {
            let mut config = docker_config(host, image, network, limits, &id, None).await?;
            // The mounts name the private dir's host path, which stays for the
            // sandbox's life; every run in it resets what is in it.
            let git = super::private_git::RunGit::prepare(
                host,
                &record.path,
                &private_base(host, &id),
                false,
                super::private_git::Reach::Mounts { slot: 0 },
                true,
            )
            .map_err(RunError::from)?;
            config.mounts = git.mounts(None).map_err(|e| RunError::Io(e.to_string()))?;
            config.workdir = Some(record.path.clone());
            let sandbox = DockerSandbox::start(config).await.map_err(RunError::from)?;
            sandbox.make_persistent();
            (sandbox.container_id().to_owned(), None)
        }
        SandboxSpec::DockerIsolated {
            image,
            network,
            limits,
        } => {
            let (seed, base) =
                build_seed(&record.path, &record.branch, &[], None).map_err(RunError::from)?;
            let config = docker_config(host, image, network, limits, &id, None).await?;
            let sandbox = IsolatedSandbox::start(config, &record.path, &record.branch, seed, base)
                .await
                .map_err(RunError::from)?;
            sandbox.docker().make_persistent();
            (sandbox.container_id().to_owned(), base)
        }
    };
    let sandbox = SandboxRecord {
        id,
        spec: spec.clone(),
        container_id: container,
        worktree_id: record.id,
        worktree_path: record.path,
        branch: record.branch,
        user: host_user(),
        synced_commit: synced.map(|c| c.to_string()),
        created: now_secs(),
        git_layout: GIT_LAYOUT,
    };
    sandbox.save(host)?;
    Ok(sandbox)
}

/// Attaches to a long-lived sandbox's container, when it is the one slipway
/// made for this sandbox of `host`.
pub async fn attach_docker(
    host: &HostRepo,
    record: &SandboxRecord,
) -> Result<DockerSandbox, RunError> {
    let engine = crate::sandbox::docker::connect().await?;
    let scope = host.common_dir().display().to_string();
    let owner = Owner {
        scope: &scope,
        run: &record.id,
    };
    Ok(DockerSandbox::attach(engine, &record.container_id, record.user.clone(), &owner).await?)
}

/// Runs one command in a long-lived sandbox, in its worktree; returns (exit code, output).
pub async fn exec(
    host: &HostRepo,
    id: &str,
    argv: Vec<String>,
) -> Result<(i32, String), SandboxesError> {
    let record =
        SandboxRecord::load(host, id).ok_or_else(|| SandboxesError::Unknown(id.to_owned()))?;
    if let Some(refusal) = outdated(&record) {
        return Err(refusal.into());
    }
    let docker = attach_docker(host, &record).await?;
    let cwd = match record.spec {
        SandboxSpec::DockerIsolated { .. } => PathBuf::from("/tmp/slipway-work").join(
            record
                .worktree_path
                .file_name()
                .map(PathBuf::from)
                .unwrap_or_default(),
        ),
        _ => record.worktree_path.clone(),
    };
    let mut execution = docker
        .exec(ExecSpec {
            argv,
            cwd,
            env: Vec::new(),
            stdin: None,
            hold: None,
        })
        .await
        .map_err(RunError::from)?;
    let mut output = String::new();
    while let Some(event) = execution.output.recv().await {
        if let OutputEvent::Line(line) = event {
            output.push_str(&line);
            output.push('\n');
        }
    }
    let code = (&mut execution.exit)
        .await
        .map_err(|e| RunError::Sandbox(SandboxError::Other(e.to_string())))?
        .map_err(RunError::from)?;
    Ok((code, output))
}

/// Removes a long-lived sandbox's container and its record; the worktree stays.
pub async fn close(host: &HostRepo, id: &str) -> Result<SandboxRecord, SandboxesError> {
    host.state_trusted().map_err(RunError::from)?;
    let record =
        SandboxRecord::load(host, id).ok_or_else(|| SandboxesError::Unknown(id.to_owned()))?;
    // Running or not, the container goes only when it carries this
    // sandbox's labels: a record naming another container removes nothing.
    let engine = crate::sandbox::docker::connect()
        .await
        .map_err(RunError::from)?;
    let scope = host.common_dir().display().to_string();
    let owner = Owner {
        scope: &scope,
        run: &record.id,
    };
    owner
        .remove(&engine, &record.container_id)
        .await
        .map_err(RunError::from)?;
    let _ = std::fs::remove_file(dir(host).join(format!("{id}.json")));
    let base = private_base(host, id);
    if let Err(e) = std::fs::remove_dir_all(&base)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!("could not remove {}: {e}", base.display());
    }
    Ok(record)
}

/// Ids of every long-lived sandbox (their containers are not orphans).
pub fn live_ids(slipway_dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(slipway_dir.join("sandboxes")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_string_lossy()
                .strip_suffix(".json")
                .map(str::to_owned)
        })
        .collect()
}
