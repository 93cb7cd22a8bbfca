//! Workspaces: what an agent's container sees.
//!
//! A workspace is a TOML file listing mounts: host folders (`src`), each
//! mounted at a container path (`dst`), each `shared` (the host folder
//! itself), or isolated in a private `worktree` or a private `clone` that
//! starts from the branch its source branch policy names. It also carries run
//! defaults (agent, sandbox, image, strategy, hooks, `copy_to_worktree`).
//!
//! Named workspaces live one per file in
//! `$XDG_CONFIG_HOME/slipway/workspaces/<name>.toml` (else
//! `$HOME/.config/slipway/workspaces/<name>.toml`); a repository may carry a
//! `slipway.toml` at its root with the same keys as repo defaults.
//!
//! Files are versioned ([`migrate`]); loading migrates in memory, saving writes
//! the migrated file. Every edit goes through a `toml_edit` document, so
//! comments, order and keys slipway does not know survive a read → write.

pub mod edit;
pub mod migrate;
mod schema;
pub mod validate;

use std::ffi::OsStr;
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;

use serde::Serialize;
use toml_edit::DocumentMut;

use crate::git::policy::SourcePolicy;
use crate::run::workspace::{MountPlan, WorkspacePlan};

pub use edit::{EditError, EditRequest, MountArg};
pub use migrate::CURRENT_VERSION;
pub use validate::ValidationError;

/// The file name of a repository's own defaults, at its root.
pub const REPO_FILE_NAME: &str = "slipway.toml";

/// How a mount reaches the container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// The host folder itself is mounted (writes land in the host checkout).
    Shared,
    /// A private git worktree of the host repository (host refs visible).
    Worktree,
    /// A private local clone (refs isolated until brought back).
    Clone,
}

impl Isolation {
    /// The name files, JSON and the command line use.
    pub fn name(self) -> &'static str {
        match self {
            Isolation::Shared => "shared",
            Isolation::Worktree => "worktree",
            Isolation::Clone => "clone",
        }
    }

    /// `worktree` and `clone` give the agent a private checkout.
    pub fn is_isolated(self) -> bool {
        !matches!(self, Isolation::Shared)
    }
}

impl fmt::Display for Isolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<Isolation> for crate::run::workspace::Isolation {
    fn from(i: Isolation) -> Self {
        match i {
            Isolation::Shared => crate::run::workspace::Isolation::Shared,
            Isolation::Worktree => crate::run::workspace::Isolation::Worktree,
            Isolation::Clone => crate::run::workspace::Isolation::Clone,
        }
    }
}

/// An isolation name that is none of `shared`, `worktree`, `clone`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown isolation '{0}'; use shared, worktree or clone")]
pub struct UnknownIsolation(pub String);

impl FromStr for Isolation {
    type Err = UnknownIsolation;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "shared" => Ok(Isolation::Shared),
            "worktree" => Ok(Isolation::Worktree),
            "clone" => Ok(Isolation::Clone),
            other => Err(UnknownIsolation(other.to_owned())),
        }
    }
}

/// One host folder and where the container sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mount {
    /// The host path (absolute; for an isolated mount, a repository root).
    pub src: PathBuf,
    /// The container path (absolute, unique within the workspace).
    pub dst: PathBuf,
    /// Mounted read-only (shared mounts only).
    pub readonly: bool,
    /// Shared, or isolated in a private worktree or clone.
    pub isolation: Isolation,
    /// Where an isolated checkout starts. A missing `source_branch_policy` is
    /// `host_head`, so files written before policies existed keep their behaviour.
    #[serde(rename = "source")]
    pub policy: SourcePolicy,
}

impl Mount {
    /// A shared, writable mount of `src` at `dst`, starting at host HEAD.
    pub fn new(src: impl Into<PathBuf>, dst: impl Into<PathBuf>) -> Mount {
        Mount {
            src: src.into(),
            dst: dst.into(),
            readonly: false,
            isolation: Isolation::Shared,
            policy: SourcePolicy::HostHead,
        }
    }

    /// The mount's name in messages: its container path.
    pub fn label(&self) -> String {
        self.dst.display().to_string()
    }
}

/// Where a run's agent runs, as a workspace file names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxKind {
    /// A host process.
    None,
    /// A Docker container with bind mounts.
    Docker,
    /// A Docker container with code copied in and out.
    DockerIsolated,
}

impl SandboxKind {
    /// Every kind, in the order messages list them.
    pub const ALL: [SandboxKind; 3] = [
        SandboxKind::None,
        SandboxKind::Docker,
        SandboxKind::DockerIsolated,
    ];

    /// The name files and the command line use.
    pub fn name(self) -> &'static str {
        match self {
            SandboxKind::None => "none",
            SandboxKind::Docker => "docker",
            SandboxKind::DockerIsolated => "docker-isolated",
        }
    }

    /// Parses `none`, `docker`, `docker-isolated` (or `docker_isolated`).
    pub fn parse(s: &str) -> Option<SandboxKind> {
        let s = s.replace('_', "-");
        SandboxKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// Where the agent's commits land, as a workspace file names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StrategyKind {
    /// Straight into the host checkout.
    Head,
    /// A temporary branch merged back into the host's current branch.
    MergeToHead,
    /// A named branch, kept.
    Branch,
}

impl StrategyKind {
    /// Every strategy, in the order messages list them.
    pub const ALL: [StrategyKind; 3] = [
        StrategyKind::Head,
        StrategyKind::MergeToHead,
        StrategyKind::Branch,
    ];

    /// The name files and the command line use.
    pub fn name(self) -> &'static str {
        match self {
            StrategyKind::Head => "head",
            StrategyKind::MergeToHead => "merge-to-head",
            StrategyKind::Branch => "branch",
        }
    }

    /// Parses `head`, `merge-to-head` (or `merge_to_head`), `branch`.
    pub fn parse(s: &str) -> Option<StrategyKind> {
        let s = s.replace('_', "-");
        StrategyKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// The agent names a workspace file may use (as the command line spells them).
pub const AGENT_NAMES: [&str; 7] = [
    "command",
    "claude-code",
    "codex",
    "opencode",
    "pi",
    "cursor",
    "copilot",
];

/// Normalises an agent name (`claude_code` → `claude-code`), or `None` when unknown.
pub fn parse_agent(s: &str) -> Option<&'static str> {
    let s = s.replace('_', "-");
    AGENT_NAMES.into_iter().find(|n| *n == s)
}

/// Commands run before the agent: `hooks.host.on_worktree_ready` and
/// `hooks.sandbox.on_sandbox_ready`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookDefaults {
    /// Run on the host, in the checkout, before the sandbox starts.
    pub host_on_worktree_ready: Vec<String>,
    /// Run inside the sandbox before the agent.
    pub sandbox_on_sandbox_ready: Vec<String>,
}

impl HookDefaults {
    /// No hooks at all.
    pub fn is_empty(&self) -> bool {
        self.host_on_worktree_ready.is_empty() && self.sandbox_on_sandbox_ready.is_empty()
    }
}

/// Run defaults a workspace (or a repository's `slipway.toml`) carries; the
/// command line overrides each of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunDefaults {
    /// The agent (`claude-code`, `codex`, …, or `command`).
    pub agent: Option<String>,
    /// Where the agent runs.
    pub sandbox: Option<SandboxKind>,
    /// The container image of docker sandboxes.
    pub image: Option<String>,
    /// Where the agent's commits land.
    pub strategy: Option<StrategyKind>,
    /// Hooks.
    pub hooks: HookDefaults,
    /// Host paths (globs) copied into each new private checkout.
    pub copy_to_worktree: Vec<String>,
}

impl RunDefaults {
    /// These defaults, with each unset field taken from `fallback` (e.g. a
    /// workspace's defaults over its repository's `slipway.toml`).
    pub fn or(&self, fallback: &RunDefaults) -> RunDefaults {
        RunDefaults {
            agent: self.agent.clone().or_else(|| fallback.agent.clone()),
            sandbox: self.sandbox.or(fallback.sandbox),
            image: self.image.clone().or_else(|| fallback.image.clone()),
            strategy: self.strategy.or(fallback.strategy),
            hooks: HookDefaults {
                host_on_worktree_ready: if self.hooks.host_on_worktree_ready.is_empty() {
                    fallback.hooks.host_on_worktree_ready.clone()
                } else {
                    self.hooks.host_on_worktree_ready.clone()
                },
                sandbox_on_sandbox_ready: if self.hooks.sandbox_on_sandbox_ready.is_empty() {
                    fallback.hooks.sandbox_on_sandbox_ready.clone()
                } else {
                    self.hooks.sandbox_on_sandbox_ready.clone()
                },
            },
            copy_to_worktree: if self.copy_to_worktree.is_empty() {
                fallback.copy_to_worktree.clone()
            } else {
                self.copy_to_worktree.clone()
            },
        }
    }
}

/// What kind of file a workspace came from; the rules differ slightly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileKind {
    /// A named workspace in the user's config dir: needs at least one mount.
    Named(String),
    /// A repository's `slipway.toml`: mounts are optional, and a relative
    /// `src` is relative to the repository root.
    Repo {
        /// The repository root the file sits in.
        root: PathBuf,
    },
}

/// A workspace: typed content plus the TOML document it was read from.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Workspace {
    /// The workspace name (named workspaces only).
    pub name: Option<String>,
    /// The file it is read from and saved to.
    pub path: PathBuf,
    /// The schema version it was migrated from, when it was older than [`CURRENT_VERSION`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub migrated_from: Option<u32>,
    /// The container path the agent starts in (default: the first mount's `dst`).
    pub workdir: Option<PathBuf>,
    /// The mounts, in file order (materialised in this order).
    pub mounts: Vec<Mount>,
    /// Run defaults.
    #[serde(flatten)]
    pub defaults: RunDefaults,
    #[serde(skip)]
    kind: FileKind,
    #[serde(skip)]
    doc: DocumentMut,
}

/// Why a workspace could not be found, read, written or used.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// Reading or writing the file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not TOML.
    #[error("{}: not valid TOML: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's message (with line and column).
        message: String,
    },
    /// No file for that name.
    #[error("no workspace named '{name}' ({} does not exist); create it with `slipway workspace create {name} --mount SRC:DST`", path.display())]
    NotFound {
        /// The name asked for.
        name: String,
        /// Where the file would be.
        path: PathBuf,
    },
    /// `create` for a name that has a file.
    #[error("workspace '{name}' already exists ({}); change it with `slipway workspace edit {name}` or remove it with `slipway workspace rm {name}`", path.display())]
    AlreadyExists {
        /// The name.
        name: String,
        /// Its file.
        path: PathBuf,
    },
    /// A name that cannot be a file name.
    #[error(
        "invalid workspace name '{name}': use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"
    )]
    InvalidName {
        /// The name given.
        name: String,
    },
    /// Neither `XDG_CONFIG_HOME` nor `HOME` is set.
    #[error(
        "cannot find the config folder: neither XDG_CONFIG_HOME nor HOME is set; set one of them"
    )]
    NoConfigDir,
    /// The file's content breaks a rule.
    #[error(transparent)]
    Invalid(Box<ValidationError>),
    /// A command-line edit that cannot be applied.
    #[error(transparent)]
    Edit(Box<EditError>),
}

impl From<ValidationError> for WorkspaceError {
    fn from(e: ValidationError) -> Self {
        WorkspaceError::Invalid(Box::new(e))
    }
}

impl From<EditError> for WorkspaceError {
    fn from(e: EditError) -> Self {
        WorkspaceError::Edit(Box::new(e))
    }
}

impl WorkspaceError {
    /// Stable machine-readable kind.
    pub fn kind(&self) -> crate::error::ErrorKind {
        match self {
            WorkspaceError::Io { .. } => crate::error::ErrorKind::Io,
            WorkspaceError::Syntax { .. } => crate::error::ErrorKind::WorkspaceSyntax,
            WorkspaceError::NotFound { .. } => crate::error::ErrorKind::WorkspaceNotFound,
            WorkspaceError::AlreadyExists { .. } => crate::error::ErrorKind::WorkspaceExists,
            WorkspaceError::InvalidName { .. } => crate::error::ErrorKind::InvalidWorkspaceName,
            WorkspaceError::NoConfigDir => crate::error::ErrorKind::NoConfigDir,
            WorkspaceError::Invalid(e) => e.kind(),
            WorkspaceError::Edit(e) => e.kind(),
        }
    }
}

/// The folder of named workspaces, from the process environment:
/// `$XDG_CONFIG_HOME/slipway/workspaces`, else `$HOME/.config/slipway/workspaces`.
pub fn workspaces_dir() -> Result<PathBuf, WorkspaceError> {
    workspaces_dir_from(
        std::env::var_os("XDG_CONFIG_HOME").as_deref(),
        std::env::var_os("HOME").as_deref(),
    )
    .ok_or(WorkspaceError::NoConfigDir)
}

/// The folder of named workspaces for the given `XDG_CONFIG_HOME` and `HOME`
/// values. A relative or empty `XDG_CONFIG_HOME` is ignored, as the XDG base
/// directory specification says.
pub fn workspaces_dir_from(
    xdg_config_home: Option<&OsStr>,
    home: Option<&OsStr>,
) -> Option<PathBuf> {
    let config = match xdg_config_home.map(Path::new) {
        Some(x) if x.is_absolute() => x.to_path_buf(),
        _ => {
            let home = home.map(Path::new).filter(|h| !h.as_os_str().is_empty())?;
            home.join(".config")
        }
    };
    Some(config.join("slipway").join("workspaces"))
}

/// Checks a workspace name: 1 to 64 of `[A-Za-z0-9._-]`, starting with a letter or digit.
pub fn check_name(name: &str) -> Result<(), WorkspaceError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(WorkspaceError::InvalidName {
            name: name.to_owned(),
        })
    }
}

/// A named workspace file found by [`WorkspaceStore::list`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkspaceEntry {
    /// The workspace name (the file stem).
    pub name: String,
    /// The file.
    pub path: PathBuf,
}

/// The folder of named workspaces.
#[derive(Debug, Clone)]
pub struct WorkspaceStore {
    dir: PathBuf,
}

impl WorkspaceStore {
    /// The store in `dir` (which need not exist yet).
    pub fn new(dir: impl Into<PathBuf>) -> WorkspaceStore {
        WorkspaceStore { dir: dir.into() }
    }

    /// The store of the process environment (see [`workspaces_dir`]).
    pub fn from_env() -> Result<WorkspaceStore, WorkspaceError> {
        Ok(WorkspaceStore::new(workspaces_dir()?))
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of workspace `name` (checked).
    pub fn path_of(&self, name: &str) -> Result<PathBuf, WorkspaceError> {
        check_name(name)?;
        Ok(self.dir.join(format!("{name}.toml")))
    }

    /// Loads workspace `name` (migrated in memory; the file is not rewritten).
    pub fn load(&self, name: &str) -> Result<Workspace, WorkspaceError> {
        let path = self.path_of(name)?;
        if !path.is_file() {
            return Err(WorkspaceError::NotFound {
                name: name.to_owned(),
                path,
            });
        }
        let text = read_file(&path)?;
        Workspace::parse(&text, &path, FileKind::Named(name.to_owned()))
    }

    /// A new, empty workspace `name` in this store, refused when its file exists.
    pub fn new_workspace(&self, name: &str) -> Result<Workspace, WorkspaceError> {
        let path = self.path_of(name)?;
        if path.exists() {
            return Err(WorkspaceError::AlreadyExists {
                name: name.to_owned(),
                path,
            });
        }
        Ok(Workspace::new(&path, FileKind::Named(name.to_owned())))
    }

    /// Every `<name>.toml` in the folder, sorted by name (none when the folder is missing).
    pub fn list(&self) -> Result<Vec<WorkspaceEntry>, WorkspaceError> {
        let read = match std::fs::read_dir(&self.dir) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(WorkspaceError::Io {
                    path: self.dir.clone(),
                    source,
                });
            }
        };
        let mut entries = Vec::new();
        for entry in read {
            let entry = entry.map_err(|source| WorkspaceError::Io {
                path: self.dir.clone(),
                source,
            })?;
            let path = entry.path();
            let Some(name) = path
                .file_name()
                .and_then(OsStr::to_str)
                .and_then(|f| f.strip_suffix(".toml"))
            else {
                continue;
            };
            if check_name(name).is_ok() && path.is_file() {
                entries.push(WorkspaceEntry {
                    name: name.to_owned(),
                    path: path.clone(),
                });
            }
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    /// Removes workspace `name`'s file; returns its path.
    pub fn remove(&self, name: &str) -> Result<PathBuf, WorkspaceError> {
        let path = self.path_of(name)?;
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(WorkspaceError::NotFound {
                name: name.to_owned(),
                path,
            }),
            Err(source) => Err(WorkspaceError::Io { path, source }),
        }
    }
}

/// Every named workspace of the process environment's store.
pub fn list() -> Result<Vec<WorkspaceEntry>, WorkspaceError> {
    WorkspaceStore::from_env()?.list()
}

fn read_file(path: &Path) -> Result<String, WorkspaceError> {
    std::fs::read_to_string(path).map_err(|source| WorkspaceError::Io {
        path: path.to_path_buf(),
        source,
    })
}

impl Workspace {
    /// An empty workspace that will be saved to `path`.
    pub fn new(path: &Path, kind: FileKind) -> Workspace {
        let name = match &kind {
            FileKind::Named(n) => Some(n.clone()),
            FileKind::Repo { .. } => None,
        };
        Workspace {
            name,
            path: path.to_path_buf(),
            migrated_from: None,
            workdir: None,
            mounts: Vec::new(),
            defaults: RunDefaults::default(),
            kind,
            doc: DocumentMut::new(),
        }
    }

    /// Loads the workspace file at `path`. A file named `slipway.toml` holds
    /// repo defaults for the folder it is in; any other file is a named
    /// workspace whose name is the file stem.
    pub fn load(path: &Path) -> Result<Workspace, WorkspaceError> {
        let text = read_file(path)?;
        let kind = if path.file_name() == Some(OsStr::new(REPO_FILE_NAME)) {
            FileKind::Repo {
                root: path.parent().unwrap_or(Path::new("/")).to_path_buf(),
            }
        } else {
            let stem = path
                .file_stem()
                .and_then(OsStr::to_str)
                .unwrap_or_default()
                .to_owned();
            FileKind::Named(stem)
        };
        Workspace::parse(&text, path, kind)
    }

    /// Loads the named workspace from the user's config dir.
    pub fn load_named(name: &str) -> Result<Workspace, WorkspaceError> {
        WorkspaceStore::from_env()?.load(name)
    }

    /// Loads a repository's `slipway.toml` (repo defaults), if it has one.
    pub fn load_repo_defaults(repo_root: &Path) -> Result<Option<Workspace>, WorkspaceError> {
        let path = repo_root.join(REPO_FILE_NAME);
        if !path.is_file() {
            return Ok(None);
        }
        let text = read_file(&path)?;
        Workspace::parse(
            &text,
            &path,
            FileKind::Repo {
                root: repo_root.to_path_buf(),
            },
        )
        .map(Some)
    }

    /// Parses a workspace file's text. `path` is where it came from (named in
    /// every message). Older versions are migrated in memory.
    pub fn parse(text: &str, path: &Path, kind: FileKind) -> Result<Workspace, WorkspaceError> {
        let mut doc: DocumentMut =
            text.parse()
                .map_err(|e: toml_edit::TomlError| WorkspaceError::Syntax {
                    path: path.to_path_buf(),
                    message: e.to_string().trim_end().to_owned(),
                })?;
        let migrated_from = migrate::migrate(&mut doc, path)?;
        let base = match &kind {
            FileKind::Repo { root } => Some(root.as_path()),
            FileKind::Named(_) => None,
        };
        let content = schema::read(&doc, path, base)?;
        let name = match &kind {
            FileKind::Named(n) => Some(n.clone()),
            FileKind::Repo { .. } => None,
        };
        Ok(Workspace {
            name,
            path: path.to_path_buf(),
            migrated_from,
            workdir: content.workdir,
            mounts: content.mounts,
            defaults: content.defaults,
            kind,
            doc,
        })
    }

    /// What kind of file this is.
    pub fn file_kind(&self) -> &FileKind {
        &self.kind
    }

    /// The file as it would be saved: the original document (comments, order,
    /// unknown keys kept) with every changed value written in.
    pub fn to_toml(&self) -> String {
        let mut doc = self.doc.clone();
        let base = match &self.kind {
            FileKind::Repo { root } => Some(root.as_path()),
            FileKind::Named(_) => None,
        };
        schema::write(&mut doc, self, base);
        doc.to_string()
    }

    /// Validates (see [`Workspace::validate`]) and writes the file atomically.
    pub fn save(&mut self) -> Result<(), WorkspaceError> {
        self.validate()?;
        let text = self.to_toml();
        crate::util::write_atomic(&self.path, text.as_bytes()).map_err(|source| {
            WorkspaceError::Io {
                path: self.path.clone(),
                source,
            }
        })?;
        // The saved text is the new baseline for later edits.
        if let Ok(doc) = text.parse::<DocumentMut>() {
            self.doc = doc;
        }
        self.migrated_from = None;
        Ok(())
    }

    /// Every rule that holds without looking at repository state: paths,
    /// policies, nesting, one worktree per repository. Returns the first problem.
    pub fn validate(&self) -> Result<(), ValidationError> {
        match validate::problems(self).into_iter().next() {
            Some(problem) => Err(problem),
            None => Ok(()),
        }
    }

    /// Every problem [`Workspace::validate`] finds, in mount order.
    pub fn problems(&self) -> Vec<ValidationError> {
        validate::problems(self)
    }

    /// [`Workspace::validate`], plus the launch-time checks: no host repository
    /// behind a mount is in the middle of a rebase, merge, cherry-pick, revert
    /// or bisect.
    pub fn validate_for_launch(&self) -> Result<(), ValidationError> {
        self.validate()?;
        validate::launch_checks(self)
    }

    /// The run's view of this workspace, without checks: name, effective
    /// workdir and mounts in file order (container paths normalised). `None`
    /// when there are no mounts. Launch with [`Workspace::launch_plan`].
    pub fn plan(&self) -> Option<WorkspacePlan> {
        let workdir = normalize(self.effective_workdir()?);
        let name = self.name.clone().unwrap_or_else(|| {
            self.path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        Some(WorkspacePlan {
            name,
            workdir,
            mounts: self
                .mounts
                .iter()
                .map(|m| MountPlan {
                    src: m.src.clone(),
                    dst: normalize(&m.dst),
                    readonly: m.readonly,
                    isolation: m.isolation.into(),
                    source: m.policy.clone(),
                })
                .collect(),
            copy: self.defaults.copy_to_worktree.clone(),
        })
    }

    /// [`Workspace::validate_for_launch`], then [`Workspace::plan`]: what
    /// `RunRequest::workspace` takes.
    pub fn launch_plan(&self) -> Result<WorkspacePlan, ValidationError> {
        self.validate_for_launch()?;
        self.plan().ok_or_else(|| ValidationError::NoMounts {
            file: self.path.clone(),
        })
    }

    /// The container path the agent starts in: `workdir`, else the first mount's `dst`.
    pub fn effective_workdir(&self) -> Option<&Path> {
        self.workdir
            .as_deref()
            .or_else(|| self.mounts.first().map(|m| m.dst.as_path()))
    }

    /// The mount whose `dst` covers the working directory (the deepest one).
    pub fn workdir_mount(&self) -> Option<&Mount> {
        let workdir = normalize(self.effective_workdir()?);
        self.mounts
            .iter()
            .filter(|m| workdir.starts_with(normalize(&m.dst)))
            .max_by_key(|m| normalize(&m.dst).components().count())
    }

    /// The mount at container path `dst` (compared after lexical normalisation).
    pub fn mount(&self, dst: &Path) -> Option<&Mount> {
        let dst = normalize(dst);
        self.mounts.iter().find(|m| normalize(&m.dst) == dst)
    }

    /// The isolated mounts whose policy is `ask`, in mount order: the caller
    /// must choose a branch for each before launch.
    pub fn ask_mounts(&self) -> Vec<&Mount> {
        self.mounts
            .iter()
            .filter(|m| m.isolation.is_isolated() && m.policy == SourcePolicy::Ask)
            .collect()
    }

    /// Keys slipway does not know (kept on save), as dotted paths, e.g.
    /// `mounts[1].cache_size`: worth a warning, since a typo lands here.
    pub fn unknown_keys(&self) -> Vec<String> {
        schema::unknown_keys(&self.doc)
    }
}

/// Lexical normalisation of an absolute container path: `.` and empty
/// components dropped, `..` applied (never above `/`), no trailing slash.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::RootDir => out.push("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            Component::Prefix(p) => out.push(p.as_os_str()),
        }
    }
    out
}
