//! Where named workspaces live, and listing, loading and removing them.

use super::*;
/// The folder of named workspaces, from the process environment:
/// `$XDG_CONFIG_HOME/slipway/workspaces`, else `$HOME/.config/slipway/workspaces`.
pub fn workspaces_dir() -> Result<PathBuf, WorkspaceError> {
    crate::util::config_dir()
        .map(|dir| dir.join("workspaces"))
        .ok_or(WorkspaceError::NoConfigDir)
}

/// The folder of named workspaces for the given `XDG_CONFIG_HOME` and `HOME`
/// values (see [`crate::util::config_dir_from`]).
pub fn workspaces_dir_from(
    xdg_config_home: Option<&OsStr>,
    home: Option<&OsStr>,
) -> Option<PathBuf> {
    Some(crate::util::config_dir_from(xdg_config_home, home)?.join("workspaces"))
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

pub(super) fn read_file(path: &Path) -> Result<String, WorkspaceError> {
    std::fs::read_to_string(path).map_err(|source| WorkspaceError::Io {
        path: path.to_path_buf(),
        source,
    })
}
