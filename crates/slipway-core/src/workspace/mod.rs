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

mod defaults;
pub mod edit;
mod items;
pub mod migrate;
mod names;
mod schema;
mod store;
pub mod validate;

use std::ffi::OsStr;
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;

use serde::Serialize;
use toml_edit::DocumentMut;

use crate::git::policy::SourcePolicy;
use crate::run::workspace::{MountPlan, WorkspacePlan};

pub use defaults::{HookDefaults, RunDefaults};
pub use edit::{EditError, EditRequest, MountArg};
pub use names::{AGENT_NAMES, Isolation, SandboxKind, StrategyKind, UnknownIsolation, parse_agent};
use store::read_file;
pub use store::{
    WorkspaceEntry, WorkspaceStore, check_name, list, workspaces_dir, workspaces_dir_from,
};

/// The schema version this slipway writes.
pub const CURRENT_VERSION: u32 = 2;
pub use validate::ValidationError;

/// The file name of a repository's own defaults, at its root.
pub const REPO_FILE_NAME: &str = "slipway.toml";

/// The user's run defaults, in the config dir beside `workspaces/`.
pub const USER_FILE_NAME: &str = "config.toml";

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
    /// The user's `config.toml` in the config dir: run defaults for every
    /// repository, under each repository's own.
    User,
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
    #[error("no workspace named '{name}' ({} does not exist)", path.display())]
    NotFound {
        /// The name asked for.
        name: String,
        /// Where the file would be.
        path: PathBuf,
    },
    /// `create` for a name that has a file.
    #[error("workspace '{name}' already exists ({})", path.display())]
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

impl crate::error::Failure for WorkspaceError {
    fn kind(&self) -> crate::error::ErrorKind {
        WorkspaceError::kind(self)
    }

    fn hints(&self) -> Vec<crate::error::Hint> {
        use crate::error::Hint;
        match self {
            WorkspaceError::NotFound { name, .. } => {
                vec![Hint::CreateWorkspace { name: name.clone() }]
            }
            WorkspaceError::AlreadyExists { name, .. } => {
                vec![Hint::ChangeWorkspace { name: name.clone() }]
            }
            _ => Vec::new(),
        }
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

impl Workspace {
    /// An empty workspace that will be saved to `path`.
    pub fn new(path: &Path, kind: FileKind) -> Workspace {
        let name = match &kind {
            FileKind::Named(n) => Some(n.clone()),
            FileKind::Repo { .. } | FileKind::User => None,
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

    /// Loads a repository's `slipway.toml` (repo defaults), if it has one, as
    /// it is: runs use it through [`crate::trust::repository_defaults`],
    /// which also asks whether the user trusted its content.
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

    /// The user's run defaults: `config.toml` beside the workspaces folder
    /// (`$XDG_CONFIG_HOME/slipway/config.toml`, else
    /// `~/.config/slipway/config.toml`); none when there is no such file.
    pub fn load_user_defaults() -> Result<RunDefaults, WorkspaceError> {
        let Ok(dir) = workspaces_dir() else {
            return Ok(RunDefaults::default());
        };
        let Some(path) = dir.parent().map(|d| d.join(USER_FILE_NAME)) else {
            return Ok(RunDefaults::default());
        };
        if !path.is_file() {
            return Ok(RunDefaults::default());
        }
        let text = read_file(&path)?;
        Ok(Workspace::parse(&text, &path, FileKind::User)?.defaults)
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
            FileKind::Named(_) | FileKind::User => None,
        };
        let content = schema::read(&doc, path, base)?;
        let name = match &kind {
            FileKind::Named(n) => Some(n.clone()),
            FileKind::Repo { .. } | FileKind::User => None,
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
            FileKind::Named(_) | FileKind::User => None,
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
