//! Trust for repository files that steer what slipway runs on the host.
//!
//! A repository's `slipway.toml` names host hooks and run defaults (which
//! sandbox, which image, which strategy); a prompt template inside a
//! repository names `` !`cmd` `` blocks, which run on the host with the host
//! sandbox. An agent can write either (a merge-to-head run, a land), so
//! slipway uses such a file only in content the user approved: an approval is
//! the file's place and its content's id ([`content_id`]), kept outside every
//! repository ([`TrustStore`]), as direnv's `allow` and mise's `trust` keep
//! theirs. A new, changed or removed file is untrusted until approved again;
//! it is then neither used nor ignored: the request that would read it is
//! refused ([`Untrusted`]), because ignoring a changed file would fall back to
//! the built-in defaults, and the built-in sandbox is the host.

pub mod store;

use std::fmt;
use std::io::{self, Read as _};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::agent::prompt::{Prompt, PromptError};
use crate::error::{ErrorKind, Failure, Hint};
use crate::workspace::{FileKind, REPO_FILE_NAME, RunDefaults, Workspace, WorkspaceError};
pub use store::TrustStore;

/// The id of a file's content: git's blob id (what `git hash-object FILE`
/// prints), computed by libgit2's SHA-1 with collision detection, so two
/// contents made to share an id are refused rather than one passing for the
/// other.
pub fn content_id(bytes: &[u8]) -> Result<String, git2::Error> {
    Ok(git2::Oid::hash_object(git2::ObjectType::Blob, bytes)?.to_string())
}

/// The place an approval is for: the file's folder with every symlink
/// resolved and the file's own name kept. A `slipway.toml` that is a symlink
/// to a file approved elsewhere is therefore not approved here: the same
/// hooks would run in another repository, where `./setup.sh` is another file.
pub fn location(path: &Path) -> io::Result<PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    Ok(parent.canonicalize()?.join(name))
}

/// A file read once, so that what is checked is what is used.
#[derive(Debug, Clone)]
pub struct FileRead {
    /// Its place (see [`location`]).
    pub location: PathBuf,
    /// Its bytes; `None` when no regular file is there (missing, a folder,
    /// a fifo, a device, a dangling symlink).
    pub bytes: Option<Vec<u8>>,
    /// Where it points, when the place holds a symlink.
    pub symlink_to: Option<PathBuf>,
}

/// Reads the file at `path` (following a symlink) without blocking on what
/// is not a regular file.
pub fn read(path: &Path) -> io::Result<FileRead> {
    let location = location(path)?;
    let symlink_to = std::fs::read_link(&location).ok();
    let absent = |location| FileRead {
        location,
        bytes: None,
        symlink_to: symlink_to.clone(),
    };
    // Non-blocking: a fifo planted under the name must not hang slipway.
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&location);
    let mut file = match opened {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(absent(location)),
        Err(e) => return Err(e),
    };
    if !file.metadata()?.is_file() {
        return Ok(absent(location));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(FileRead {
        location,
        bytes: Some(bytes),
        symlink_to,
    })
}

/// Whether `location` lies in a git checkout (some folder above it holds
/// `.git`): an agent's work can reach such a file through a merge or a land.
fn in_repository(location: &Path) -> bool {
    location
        .ancestors()
        .skip(1)
        .any(|dir| dir.join(".git").symlink_metadata().is_ok())
}

/// What a file is to slipway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum FileRole {
    /// A repository's `slipway.toml`: hooks and run defaults.
    RepositoryConfig,
    /// A prompt template whose `` !`cmd` `` blocks run on the host.
    PromptTemplate,
}

impl FileRole {
    /// The role of the file at `path`, by its name.
    pub fn of(path: &Path) -> FileRole {
        if path.file_name() == Some(REPO_FILE_NAME.as_ref()) {
            FileRole::RepositoryConfig
        } else {
            FileRole::PromptTemplate
        }
    }
}

/// A command a file would have slipway run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamedCommand {
    /// Where in the file: `hooks.host.on_worktree_ready`,
    /// `hooks.sandbox.on_sandbox_ready` or `prompt`.
    pub source: String,
    /// The command (run with `sh -c`).
    pub command: String,
}

/// A run default a file would set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setting {
    /// The key, as the file spells it.
    pub key: String,
    /// Its value.
    pub value: String,
}

/// A file as the user is asked to approve it: where it is, its content's id,
/// and everything it would make slipway do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrustSubject {
    /// Its place (see [`location`]).
    pub path: PathBuf,
    /// What it is.
    pub role: FileRole,
    /// Its content's id ([`content_id`]); `None` when the file is gone.
    pub hash: Option<String>,
    /// The commands it names.
    pub commands: Vec<NamedCommand>,
    /// The run defaults it sets.
    pub settings: Vec<Setting>,
    /// Where it points, when it is a symlink.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symlink_to: Option<PathBuf>,
    /// The content approved at this place before, if any.
    pub trusted_hash: Option<String>,
}

impl TrustSubject {
    fn config(
        read: &FileRead,
        hash: String,
        defaults: &RunDefaults,
        trusted: Option<String>,
    ) -> Self {
        let hooks = &defaults.hooks;
        let commands = [
            (
                "hooks.host.on_worktree_ready",
                &hooks.host_on_worktree_ready,
            ),
            (
                "hooks.sandbox.on_sandbox_ready",
                &hooks.sandbox_on_sandbox_ready,
            ),
        ]
        .into_iter()
        .flat_map(|(source, list)| {
            list.iter().map(move |command| NamedCommand {
                source: source.to_owned(),
                command: command.clone(),
            })
        })
        .collect();
        let mut settings = Vec::new();
        let mut set = |key: &str, value: Option<String>| {
            if let Some(value) = value {
                settings.push(Setting {
                    key: key.to_owned(),
                    value,
                });
            }
        };
        set("agent", defaults.agent.clone());
        set("sandbox", defaults.sandbox.map(|k| k.name().to_owned()));
        set("image", defaults.image.clone());
        set("strategy", defaults.strategy.map(|k| k.name().to_owned()));
        set(
            "copy_to_worktree",
            (!defaults.copy_to_worktree.is_empty())
                .then(|| json!(defaults.copy_to_worktree).to_string()),
        );
        TrustSubject {
            path: read.location.clone(),
            role: FileRole::RepositoryConfig,
            hash: Some(hash),
            commands,
            settings,
            symlink_to: read.symlink_to.clone(),
            trusted_hash: trusted,
        }
    }

    fn prompt(read: &FileRead, hash: String, prompt: &Prompt, trusted: Option<String>) -> Self {
        TrustSubject {
            path: read.location.clone(),
            role: FileRole::PromptTemplate,
            hash: Some(hash),
            commands: prompt
                .shell_blocks()
                .into_iter()
                .map(|command| NamedCommand {
                    source: "prompt".to_owned(),
                    command,
                })
                .collect(),
            settings: Vec::new(),
            symlink_to: read.symlink_to.clone(),
            trusted_hash: trusted,
        }
    }

    fn removed(read: &FileRead, trusted: Option<String>) -> Self {
        TrustSubject {
            path: read.location.clone(),
            role: FileRole::of(&read.location),
            hash: None,
            commands: Vec::new(),
            settings: Vec::new(),
            symlink_to: read.symlink_to.clone(),
            trusted_hash: trusted,
        }
    }

    /// One sentence on what approving it means.
    fn summary(&self) -> String {
        let path = self.path.display();
        if self.hash.is_none() {
            return format!(
                "{path}, which you trusted, is gone: the run defaults it set no longer apply"
            );
        }
        let link = self
            .symlink_to
            .as_ref()
            .map(|t| format!(" (a symlink to {})", t.display()))
            .unwrap_or_default();
        let state = if self.trusted_hash.is_some() {
            "has changed since you trusted it"
        } else {
            "is not trusted yet"
        };
        let mut does: Vec<String> = self
            .commands
            .iter()
            .map(|c| format!("run `{}` ({})", c.command, c.source))
            .collect();
        does.extend(
            self.settings
                .iter()
                .map(|s| format!("set {} = {}", s.key, s.value)),
        );
        let does = match does.split_last() {
            None => "it sets nothing (what the approved content set no longer applies)".to_owned(),
            Some((only, [])) => format!("it would {only}"),
            Some((last, rest)) => format!("it would {} and {last}", rest.join(", ")),
        };
        format!("{path}{link} {state}: {does}")
    }
}

/// Files the user has not approved in their present content. Nothing of the
/// request that met them has happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Untrusted {
    /// Each file, as the user would approve it now.
    pub files: Vec<TrustSubject>,
    /// The files changed after an edge showed them (an approval naming the
    /// content it saw): nothing was approved.
    pub changed_since_shown: bool,
}

impl fmt::Display for Untrusted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let summaries: Vec<String> = self.files.iter().map(TrustSubject::summary).collect();
        if self.changed_since_shown {
            write!(
                f,
                "not what was shown: {}; look at it again; nothing was approved",
                summaries.join("; ")
            )
        } else {
            write!(
                f,
                "{}; slipway uses a repository's file that runs programs or chooses the sandbox only in content you approved, and did nothing",
                summaries.join("; ")
            )
        }
    }
}

impl std::error::Error for Untrusted {}

impl Failure for Untrusted {
    fn kind(&self) -> ErrorKind {
        ErrorKind::UntrustedConfig
    }

    fn data(&self) -> Map<String, Value> {
        let mut data = Map::new();
        data.insert("files".into(), json!(self.files));
        // Also here: errors that wrap this one carry its data, not its actions.
        data.insert("actions".into(), json!(self.actions()));
        data
    }

    fn hints(&self) -> Vec<Hint> {
        vec![Hint::Trust {
            files: self.files.iter().map(|s| s.path.clone()).collect(),
        }]
    }

    fn actions(&self) -> Vec<crate::actions::Action> {
        vec![crate::actions::Action {
            kind: crate::actions::ActionKind::Trust,
            worktree: None,
            run_id: None,
            force: false,
        }]
    }
}

/// Why a file could not be checked, read or approved.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The file is not approved in its present content.
    #[error(transparent)]
    Untrusted(Box<Untrusted>),
    /// Reading it failed.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A `slipway.toml` that cannot be used.
    #[error(transparent)]
    Workspace(Box<WorkspaceError>),
    /// A prompt template that cannot be used.
    #[error(transparent)]
    Prompt(PromptError),
    /// Approving a prompt template that is not there.
    #[error("{} is not a file: there is nothing to trust", path.display())]
    NotAFile {
        /// The place.
        path: PathBuf,
    },
    /// No config folder to keep approvals in.
    #[error(
        "cannot find the config folder where approvals are kept: neither XDG_CONFIG_HOME nor HOME is set; set one of them"
    )]
    NoConfigDir,
    /// Hashing failed (libgit2 found a SHA-1 collision attack in the content).
    #[error("git: {0}")]
    Git(#[from] git2::Error),
}

impl From<Untrusted> for TrustError {
    fn from(e: Untrusted) -> Self {
        TrustError::Untrusted(Box::new(e))
    }
}

impl Failure for TrustError {
    fn kind(&self) -> ErrorKind {
        match self {
            TrustError::Untrusted(e) => e.kind(),
            TrustError::Io { .. } => ErrorKind::Io,
            TrustError::Workspace(e) => e.kind(),
            TrustError::Prompt(e) => crate::plan::prompt_kind(e),
            TrustError::NotAFile { .. } => ErrorKind::InvalidParams,
            TrustError::NoConfigDir => ErrorKind::NoConfigDir,
            TrustError::Git(_) => ErrorKind::Git,
        }
    }

    fn data(&self) -> Map<String, Value> {
        match self {
            TrustError::Untrusted(e) => e.data(),
            _ => Map::new(),
        }
    }

    fn hints(&self) -> Vec<Hint> {
        match self {
            TrustError::Untrusted(e) => e.hints(),
            _ => Vec::new(),
        }
    }
}

fn untrusted(subject: TrustSubject) -> TrustError {
    Untrusted {
        files: vec![subject],
        changed_since_shown: false,
    }
    .into()
}

/// A `slipway.toml`'s run defaults from the bytes read.
fn parse_config(read: &FileRead, bytes: &[u8]) -> Result<RunDefaults, TrustError> {
    let text = std::str::from_utf8(bytes).map_err(|e| TrustError::Io {
        path: read.location.clone(),
        source: io::Error::new(io::ErrorKind::InvalidData, e),
    })?;
    let root = read.location.parent().unwrap_or(Path::new("/"));
    Workspace::parse(
        text,
        &read.location,
        FileKind::Repo {
            root: root.to_path_buf(),
        },
    )
    .map(|ws| ws.defaults)
    .map_err(|e| TrustError::Workspace(Box::new(e)))
}

/// The run defaults of the repository at `root` (its `slipway.toml`), when
/// they may be used: the user approved this content, or no content was ever
/// approved there and the file sets nothing. A file that changed from the
/// approved content (emptied or removed included, which would fall back to
/// the host sandbox) is [`Untrusted`].
pub fn repository_defaults(
    root: &Path,
    store: Option<&TrustStore>,
) -> Result<RunDefaults, TrustError> {
    let path = root.join(REPO_FILE_NAME);
    let read = read(&path).map_err(|source| TrustError::Io { path, source })?;
    let trusted = store.and_then(|s| s.approved(&read.location));
    let Some(bytes) = &read.bytes else {
        return match trusted {
            None => Ok(RunDefaults::default()),
            Some(_) => Err(untrusted(TrustSubject::removed(&read, trusted))),
        };
    };
    let defaults = parse_config(&read, bytes)?;
    let hash = content_id(bytes)?;
    match trusted {
        Some(approved) if approved == hash => Ok(defaults),
        None if defaults == RunDefaults::default() => Ok(defaults),
        _ => Err(untrusted(TrustSubject::config(
            &read, hash, &defaults, trusted,
        ))),
    }
}

/// The prompt template at `path`, read once. When its `` !`cmd` `` blocks
/// run on the host (`on_host`) and the file lies in a git checkout, it is
/// used only in content the user approved.
pub fn prompt_template(
    path: &Path,
    on_host: bool,
    store: Option<&TrustStore>,
) -> Result<Prompt, TrustError> {
    let read_error = |source| {
        TrustError::Prompt(PromptError::Read {
            path: path.to_path_buf(),
            source,
        })
    };
    let read = read(path).map_err(read_error)?;
    let Some(bytes) = &read.bytes else {
        return Err(read_error(match read.location.symlink_metadata() {
            Ok(_) => io::Error::other("not a regular file"),
            Err(e) => e,
        }));
    };
    let text = std::str::from_utf8(bytes)
        .map_err(|e| read_error(io::Error::new(io::ErrorKind::InvalidData, e)))?;
    let prompt = Prompt::template(text).map_err(TrustError::Prompt)?;
    if !on_host || prompt.shell_blocks().is_empty() || !in_repository(&read.location) {
        return Ok(prompt);
    }
    let hash = content_id(bytes)?;
    let trusted = store.and_then(|s| s.approved(&read.location));
    if trusted.as_deref() == Some(hash.as_str()) {
        return Ok(prompt);
    }
    Err(untrusted(TrustSubject::prompt(
        &read, hash, &prompt, trusted,
    )))
}

/// The file at `path` as the user would approve it now: a `slipway.toml`
/// with its hooks and defaults (or gone), or a prompt template with its
/// commands.
pub fn describe(path: &Path, store: Option<&TrustStore>) -> Result<TrustSubject, TrustError> {
    let read = read(path).map_err(|source| TrustError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let trusted = store.and_then(|s| s.approved(&read.location));
    let role = FileRole::of(&read.location);
    let Some(bytes) = &read.bytes else {
        return match role {
            FileRole::RepositoryConfig => Ok(TrustSubject::removed(&read, trusted)),
            FileRole::PromptTemplate => Err(TrustError::NotAFile {
                path: read.location,
            }),
        };
    };
    let hash = content_id(bytes)?;
    match role {
        FileRole::RepositoryConfig => {
            let defaults = parse_config(&read, bytes)?;
            Ok(TrustSubject::config(&read, hash, &defaults, trusted))
        }
        FileRole::PromptTemplate => {
            let text = std::str::from_utf8(bytes).map_err(|e| TrustError::Io {
                path: read.location.clone(),
                source: io::Error::new(io::ErrorKind::InvalidData, e),
            })?;
            let prompt = Prompt::template(text).map_err(TrustError::Prompt)?;
            Ok(TrustSubject::prompt(&read, hash, &prompt, trusted))
        }
    }
}

/// One file to approve, with the content the user was shown when an edge
/// showed it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrustRequest {
    /// The file.
    pub path: PathBuf,
    /// The content id the user saw; the approval goes through only if the
    /// file still has it.
    #[serde(default)]
    pub hash: Option<String>,
    /// The user saw the file gone: approve its absence only if it still is.
    #[serde(default)]
    pub removed: bool,
}

impl TrustRequest {
    /// The `slipway.toml` of the repository at `root`, in whatever content it has.
    pub fn repository(root: &Path) -> TrustRequest {
        TrustRequest {
            path: root.join(REPO_FILE_NAME),
            ..TrustRequest::default()
        }
    }
}

/// [`approve`] with the store of the process environment.
pub fn approve_here(
    requests: &[TrustRequest],
    dry_run: bool,
) -> Result<Vec<TrustSubject>, TrustError> {
    let store = TrustStore::from_env().ok_or(TrustError::NoConfigDir)?;
    approve(&store, requests, dry_run)
}

/// Approves every file of `requests` in its present content (a file that
/// is gone: its old approval is dropped), all or nothing: when one no
/// longer has the content the user saw, nothing is approved and the answer
/// is [`Untrusted`] with each such file as it is now. With `dry_run`,
/// nothing is recorded. Returns what was (or would be) approved.
pub fn approve(
    store: &TrustStore,
    requests: &[TrustRequest],
    dry_run: bool,
) -> Result<Vec<TrustSubject>, TrustError> {
    let mut approved = Vec::new();
    let mut changed = Vec::new();
    for request in requests {
        let subject = describe(&request.path, Some(store))?;
        let as_seen = match (&request.hash, request.removed) {
            (Some(hash), _) => subject.hash.as_ref() == Some(hash),
            (None, true) => subject.hash.is_none(),
            (None, false) => true,
        };
        if as_seen {
            approved.push(subject);
        } else {
            changed.push(subject);
        }
    }
    if !changed.is_empty() {
        return Err(Untrusted {
            files: changed,
            changed_since_shown: true,
        }
        .into());
    }
    if !dry_run {
        for subject in &approved {
            match &subject.hash {
                Some(hash) => store.approve(&subject.path, hash),
                None => store.forget(&subject.path),
            }
            .map_err(|source| TrustError::Io {
                path: store.dir().to_path_buf(),
                source,
            })?;
        }
    }
    Ok(approved)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join(".git")).expect(".git");
        dir
    }

    fn write(dir: &Path, text: &str) {
        std::fs::write(dir.join(REPO_FILE_NAME), text).expect("write");
    }

    #[test]
    fn a_file_is_used_only_in_the_content_approved() {
        let repo = repo();
        let home = tempfile::tempdir().expect("temp dir");
        let store = TrustStore::new(home.path());
        let hooked = "[hooks.host]\non_worktree_ready = [\"make\"]\n";
        write(repo.path(), hooked);
        let err = repository_defaults(repo.path(), Some(&store)).expect_err("new file");
        let TrustError::Untrusted(untrusted) = err else {
            panic!("untrusted expected, got {err}");
        };
        let subject = &untrusted.files[0];
        assert_eq!(subject.commands[0].command, "make");
        assert_eq!(subject.trusted_hash, None);
        approve(&store, &[TrustRequest::repository(repo.path())], false).expect("approve");
        let defaults = repository_defaults(repo.path(), Some(&store)).expect("trusted");
        assert_eq!(
            defaults.hooks.host_on_worktree_ready,
            vec!["make".to_owned()]
        );
        // CRLF line ends are another content.
        write(repo.path(), &hooked.replace('\n', "\r\n"));
        assert!(matches!(
            repository_defaults(repo.path(), Some(&store)),
            Err(TrustError::Untrusted(_))
        ));
        // Emptied, or gone: the approved defaults no longer apply, which is a change too.
        write(repo.path(), "version = 2\n");
        assert!(matches!(
            repository_defaults(repo.path(), Some(&store)),
            Err(TrustError::Untrusted(_))
        ));
        std::fs::remove_file(repo.path().join(REPO_FILE_NAME)).expect("remove");
        let err = repository_defaults(repo.path(), Some(&store)).expect_err("gone");
        assert!(err.to_string().contains("is gone"), "{err}");
        approve(&store, &[TrustRequest::repository(repo.path())], false).expect("approve");
        assert_eq!(
            repository_defaults(repo.path(), Some(&store)).expect("nothing to use"),
            RunDefaults::default()
        );
    }

    #[test]
    fn a_file_that_sets_nothing_needs_no_approval() {
        let repo = repo();
        write(repo.path(), "version = 2\n# nothing\n");
        assert_eq!(
            repository_defaults(repo.path(), None).expect("nothing to approve"),
            RunDefaults::default()
        );
    }

    #[test]
    fn an_approval_names_the_content_seen() {
        let repo = repo();
        let home = tempfile::tempdir().expect("temp dir");
        let store = TrustStore::new(home.path());
        write(repo.path(), "sandbox = \"none\"\n");
        let seen = describe(&repo.path().join(REPO_FILE_NAME), Some(&store)).expect("describe");
        write(
            repo.path(),
            "sandbox = \"none\"\n[hooks.host]\non_worktree_ready = [\"x\"]\n",
        );
        let request = TrustRequest {
            path: repo.path().join(REPO_FILE_NAME),
            hash: seen.hash.clone(),
            removed: false,
        };
        let err = approve(&store, &[request], false).expect_err("changed since shown");
        assert!(err.to_string().starts_with("not what was shown"), "{err}");
        assert_eq!(store.approved(&seen.path), None);
    }

    #[test]
    fn prompt_commands_need_approval_only_on_the_host_in_a_checkout() {
        let repo = repo();
        let outside = tempfile::tempdir().expect("temp dir");
        let text = "Log: !`git log -1`\n";
        for dir in [repo.path(), outside.path()] {
            std::fs::write(dir.join("p.md"), text).expect("write");
        }
        let inside = repo.path().join("p.md");
        assert!(
            prompt_template(&inside, false, None).is_ok(),
            "in a container"
        );
        assert!(
            prompt_template(&outside.path().join("p.md"), true, None).is_ok(),
            "the user's own file"
        );
        assert!(matches!(
            prompt_template(&inside, true, None),
            Err(TrustError::Untrusted(_))
        ));
        std::fs::write(&inside, "no commands\n").expect("write");
        assert!(prompt_template(&inside, true, None).is_ok(), "nothing runs");
    }
}
