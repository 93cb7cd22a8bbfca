//! The only place that touches git.
//!
//! Every host-side operation goes through libgit2, which never runs a program
//! that the repository names (hooks, fsmonitor, filter/diff/merge drivers,
//! credential helpers, pagers, editors, signing programs). The git CLI is
//! never invoked on the host. The branch listing alone also reads ref files and
//! pack files itself (read-only parsing, libgit2 for anything unusual), because
//! it must answer for thousands of branches faster than `git for-each-ref`.

pub mod attributes;
pub mod branch_config;
pub mod branches;
pub mod bundle;
pub mod checkout;
pub mod clone;
pub mod config_text;
pub mod fsck;
pub mod host_write;
pub mod import;
pub mod index_file;
pub mod merge;
pub mod pack_commits;
pub mod pack_out;
pub mod policy;
pub mod private_dir;
pub mod queue;
pub mod refname;
pub mod worktrees;

use std::path::{Path, PathBuf};

use git2::Repository;

/// Why a repository could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The path is not inside a git repository.
    #[error("{} is not inside a git repository", path.display())]
    NotARepository { path: PathBuf },
    /// The path does not exist or is not a directory.
    #[error("{} does not exist or is not a directory", path.display())]
    NoSuchPath { path: PathBuf },
    /// A bare repository has no working tree to branch worktrees from.
    #[error("{} is a bare repository; slipway needs a repository with a working tree", path.display())]
    Bare { path: PathBuf },
    /// libgit2 failed while opening.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
}

impl OpenError {
    /// Stable machine-readable kind.
    pub fn kind(&self) -> crate::error::ErrorKind {
        match self {
            OpenError::NotARepository { .. } | OpenError::Bare { .. } => {
                crate::error::ErrorKind::NotARepository
            }
            OpenError::NoSuchPath { .. } => crate::error::ErrorKind::InvalidParams,
            OpenError::Git(_) => crate::error::ErrorKind::Git,
        }
    }
}

/// A handle on the user's host repository, opened from any path inside it or
/// inside one of its worktrees.
pub struct HostRepo {
    repo: Repository,
    common_dir: PathBuf,
    root: PathBuf,
    /// Whether `.slipway/` is slipway's own, once asked.
    state_trust: std::cell::OnceCell<Result<(), crate::state_trust::Untrusted>>,
}

impl HostRepo {
    /// Opens the host repository that `path` belongs to (the main checkout even
    /// when `path` is inside a linked worktree).
    pub fn open(path: &Path) -> Result<HostRepo, OpenError> {
        static LIBGIT2_OPTIONS: std::sync::Once = std::sync::Once::new();
        // Re-hashing every object read costs a tenth of a branch listing; the
        // git CLI does not verify on read either.
        LIBGIT2_OPTIONS.call_once(|| {
            git2::opts::strict_hash_verification(false);
            git2::opts::enable_caching(false);
        });
        // A file stands for the folder it is in.
        let path = if path.is_file() {
            path.parent().unwrap_or(path)
        } else {
            path
        };
        if !path.is_dir() {
            return Err(OpenError::NoSuchPath {
                path: path.to_path_buf(),
            });
        }
        let found = Repository::discover(path).map_err(|e| match e.code() {
            git2::ErrorCode::NotFound => OpenError::NotARepository {
                path: path.to_path_buf(),
            },
            _ => OpenError::Git(e),
        })?;
        let common_dir = canonical(found.commondir());
        let repo = if found.is_worktree() {
            // The main working tree is the parent of the common git dir.
            let main = common_dir
                .parent()
                .ok_or_else(|| OpenError::Bare {
                    path: common_dir.clone(),
                })?
                .to_path_buf();
            Repository::open(&main).map_err(|_| OpenError::Bare {
                path: common_dir.clone(),
            })?
        } else {
            found
        };
        if repo.is_bare() {
            return Err(OpenError::Bare {
                path: common_dir.clone(),
            });
        }
        let root = canonical(repo.workdir().ok_or_else(|| OpenError::Bare {
            path: common_dir.clone(),
        })?);
        Ok(HostRepo {
            repo,
            common_dir,
            root,
            state_trust: std::cell::OnceCell::new(),
        })
    }

    /// The libgit2 handle of the host checkout.
    pub fn git(&self) -> &Repository {
        &self.repo
    }

    /// The common git dir: the key of all slipway state for this repository.
    pub fn common_dir(&self) -> &Path {
        &self.common_dir
    }

    /// The host checkout's working directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<root>/.slipway`, where worktrees, records, locks and logs live.
    pub fn slipway_dir(&self) -> PathBuf {
        self.root.join(".slipway")
    }

    /// Whether `.slipway/` is slipway's own (see [`crate::state_trust`]);
    /// asked once per handle.
    pub fn state_trusted(&self) -> Result<(), crate::state_trust::Untrusted> {
        self.state_trust
            .get_or_init(|| crate::state_trust::check(self))
            .clone()
    }

    /// The host's current branch (short name), or `None` when HEAD is detached or unborn.
    pub fn current_branch(&self) -> Option<String> {
        let head = self.repo.find_reference("HEAD").ok()?;
        let target = head.symbolic_target().ok().flatten()?;
        target.strip_prefix("refs/heads/").map(str::to_owned)
    }

    /// The commit host HEAD points at, if any.
    pub fn head_commit(&self) -> Option<git2::Oid> {
        self.repo
            .head()
            .ok()
            .and_then(|h| h.peel_to_commit().ok())
            .map(|c| c.id())
    }

    /// The user's configured name and email, when both are set.
    pub fn identity(&self) -> Option<(String, String)> {
        let sig = self.repo.signature().ok()?;
        Some((sig.name().ok()?.to_owned(), sig.email().ok()?.to_owned()))
    }

    /// Whether a rebase, merge, cherry-pick or similar is under way in the host checkout.
    pub fn operation_in_progress(&self) -> bool {
        self.repo.state() != git2::RepositoryState::Clean
    }

    /// Opens a linked worktree (or any checkout) of this repository by path.
    pub fn open_checkout(path: &Path) -> Result<Repository, git2::Error> {
        Repository::open(path)
    }
}

/// A remote URL with any user, password or token taken out of it.
pub fn strip_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((_, host)) => format!("{scheme}://{host}{path}"),
        None => url.to_owned(),
    }
}

/// The host's `origin` URL without credentials, for a private git dir or a
/// clone: only URLs a plain transport serves (https, http, ssh, git, a
/// path, or `host:path`), never one that names a program (`ext::`), and
/// nothing with control characters.
pub fn origin_url_without_credentials(host: &Repository) -> Option<String> {
    let remote = host.find_remote("origin").ok()?;
    let url = strip_credentials(remote.url().ok()?);
    let plain_scheme = match url.split_once("://") {
        Some((scheme, _)) => matches!(scheme, "https" | "http" | "ssh" | "git" | "file"),
        None => !url.contains("::"),
    };
    (plain_scheme && !url.chars().any(char::is_control)).then_some(url)
}

/// What a folder is to git, read without changing anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Folder {
    /// The root of a checkout, with its repository's common git dir.
    CheckoutRoot { common_dir: PathBuf },
    /// Inside a checkout (or its git dir) whose root is elsewhere.
    Inside { root: PathBuf },
    /// A bare repository: no checkout.
    Bare,
    /// Not in any repository (or one libgit2 cannot open: the message).
    NotRepository { message: String },
}

/// Reads what `path` (already canonical) is to git: opened as a repository
/// first, discovered upwards when that fails.
pub fn inspect_folder(path: &Path) -> Folder {
    match Repository::open(path) {
        Ok(repo) => match repo.workdir().map(canonical) {
            None => Folder::Bare,
            Some(root) if root == path => Folder::CheckoutRoot {
                common_dir: canonical(repo.commondir()),
            },
            // `path` is the git dir itself, or a folder libgit2 opened as one.
            Some(root) => Folder::Inside { root },
        },
        Err(open_error) => match Repository::discover(path)
            .ok()
            .and_then(|r| r.workdir().map(canonical))
        {
            Some(root) if path.starts_with(&root) => Folder::Inside { root },
            _ => Folder::NotRepository {
                message: open_error.message().to_owned(),
            },
        },
    }
}

/// An operation a checkout is in the middle of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InProgress {
    /// `git merge` stopped on conflicts.
    Merge,
    /// `git revert`.
    Revert,
    /// `git cherry-pick`.
    CherryPick,
    /// `git bisect`.
    Bisect,
    /// `git rebase`.
    Rebase,
    /// `git am`.
    ApplyMailbox,
}

/// What the checkout whose root is `root` is in the middle of, if anything.
pub fn in_progress_at(root: &Path) -> Result<Option<InProgress>, git2::Error> {
    use git2::RepositoryState as S;
    Ok(match Repository::open(root)?.state() {
        S::Clean => None,
        S::Merge => Some(InProgress::Merge),
        S::Revert | S::RevertSequence => Some(InProgress::Revert),
        S::CherryPick | S::CherryPickSequence => Some(InProgress::CherryPick),
        S::Bisect => Some(InProgress::Bisect),
        S::Rebase | S::RebaseInteractive | S::RebaseMerge => Some(InProgress::Rebase),
        S::ApplyMailbox | S::ApplyMailboxOrRebase => Some(InProgress::ApplyMailbox),
    })
}

/// Makes a new repository at `dir` whose local identity is `identity` (name,
/// email) and whose first commit holds `files` (paths relative to `dir`,
/// already written). For demos and fixtures: the user's config is not touched.
pub fn init_with_first_commit(
    dir: &Path,
    identity: (&str, &str),
    files: &[&str],
    message: &str,
) -> Result<(), git2::Error> {
    let repo = Repository::init(dir)?;
    let mut config = repo.config()?.open_level(git2::ConfigLevel::Local)?;
    config.set_str("user.name", identity.0)?;
    config.set_str("user.email", identity.1)?;
    let mut index = repo.index()?;
    for file in files {
        index.add_path(Path::new(file))?;
    }
    index.write()?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let sig = git2::Signature::now(identity.0, identity.1)?;
    repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &[])?;
    Ok(())
}

/// Resolves symlinks where possible so paths compare equal across spellings.
pub fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Paths that `git status --porcelain` would list for a checkout: staged,
/// unstaged and untracked (recursing into untracked folders), never ignored,
/// regardless of the repository's `status.showUntrackedFiles`.
pub fn changed_paths(repo: &Repository) -> Result<Vec<String>, git2::Error> {
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(false)
        .renames_head_to_index(false);
    let statuses = repo.statuses(Some(&mut opts))?;
    let mut out = Vec::new();
    for entry in statuses.iter() {
        if entry.status().is_ignored() || entry.status() == git2::Status::CURRENT {
            continue;
        }
        if let Ok(path) = entry.path() {
            out.push(path.to_owned());
        }
    }
    Ok(out)
}

/// Every ignored file of a checkout, one by one, as
/// `git ls-files --others --ignored --exclude-standard` lists them: what sits
/// inside an ignored folder is listed file by file (even where the folder also
/// holds tracked files, which are not listed), and a nested repository or
/// worktree is one entry ending in `/`, never looked into.
pub fn ignored_paths(repo: &Repository) -> Result<Vec<String>, git2::Error> {
    let mut opts = git2::StatusOptions::new();
    // Untracked folders are walked because ignored files hide in them
    // (`cache/data.json` with nothing else in `cache/`); ignored folders are
    // walked because libgit2, told not to, drops the ignored files of an
    // ignored folder that also holds a tracked file.
    opts.include_ignored(true)
        .recurse_ignored_dirs(true)
        .include_untracked(true)
        .recurse_untracked_dirs(true);
    let statuses = repo.statuses(Some(&mut opts))?;
    Ok(statuses
        .iter()
        .filter(|e| e.status().is_ignored())
        .filter_map(|e| e.path().ok().map(str::to_owned))
        .collect())
}

/// Paths whose index entry differs from HEAD (staged changes).
pub fn staged_paths(repo: &Repository) -> Result<Vec<String>, git2::Error> {
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(false).include_ignored(false);
    let statuses = repo.statuses(Some(&mut opts))?;
    let staged = git2::Status::INDEX_NEW
        | git2::Status::INDEX_MODIFIED
        | git2::Status::INDEX_DELETED
        | git2::Status::INDEX_RENAMED
        | git2::Status::INDEX_TYPECHANGE
        | git2::Status::CONFLICTED;
    Ok(statuses
        .iter()
        .filter(|e| e.status().intersects(staged))
        .filter_map(|e| e.path().ok().map(str::to_owned))
        .collect())
}

/// The signature slipway writes merge commits with: the user's configured
/// identity, or a neutral one when none is configured.
pub fn signature(repo: &Repository) -> Result<git2::Signature<'static>, git2::Error> {
    repo.signature()
        .or_else(|_| git2::Signature::now("slipway", "slipway@localhost"))
}

/// Commits reachable from `tip` but not from `base`, oldest first.
pub fn commits_between(
    repo: &Repository,
    base: Option<git2::Oid>,
    tip: git2::Oid,
) -> Result<Vec<git2::Oid>, git2::Error> {
    let mut walk = repo.revwalk()?;
    walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::REVERSE)?;
    walk.push(tip)?;
    if let Some(base) = base {
        walk.hide(base)?;
    }
    walk.collect()
}
