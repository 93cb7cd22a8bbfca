//! What a worktree holds against the commit it started from: its commits
//! and its uncommitted files (untracked ones included, ignored ones not)
//! together, as `git diff -M <base>` shows them in the worktree once its
//! untracked files are added with `git add -N`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use git2::{Delta, Diff, DiffFindOptions, DiffOptions, Oid, Repository};
use serde::Serialize;
use serde_json::{Map, Value};

use super::{NoSuchWorktree, Subject, find_subject};
use crate::error::{ErrorKind, Failure, Hint};
use crate::git::HostRepo;
use crate::review::sensitive::{Classifier, Sensitivity};

/// A text larger than this is not sent whole (the editor shows a diff, not a dump).
const TEXT_LIMIT: u64 = 8 << 20;

/// How a file differs from the base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum FileStatus {
    /// New since the base (committed, or an untracked file).
    Added,
    /// Changed content or mode (a type change counts here).
    Modified,
    /// Gone.
    Deleted,
    /// Moved, maybe changed (git's `-M` similarity, 50%).
    Renamed,
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChange {
    /// Its path now (the old path for a deleted file).
    pub path: String,
    /// Where a renamed file was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    /// How it differs.
    pub status: FileStatus,
    /// Lines added (0 for binary files, as `git diff --numstat` says `-`).
    pub additions: usize,
    /// Lines removed.
    pub deletions: usize,
    /// Whether git takes it for binary.
    pub binary: bool,
    /// Some of the change is in the worktree's commits.
    pub committed: bool,
    /// Some of the change is not committed yet.
    pub uncommitted: bool,
    /// Set when the file makes programs run on the host once it is in a
    /// checkout (`slipway.toml`, git hooks, editor and shell config).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sensitive: Option<Sensitivity>,
}

/// A worktree's whole change against its base.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorktreeDiff {
    /// Where the branch and its target meet now (their merge base), so what
    /// the target took in since the worktree started is not listed as the
    /// worktree's; the recorded base when there is no target.
    pub base: String,
    /// The commit the worktree started from, as its record keeps it (none
    /// for a kept branch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_base: Option<String>,
    /// The branch the work lands in by default, compared with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The branch of the worktree compared with instead, when one was asked
    /// for: `base` is then its tip.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub against: Option<String>,
    /// The worktree's HEAD commit (a kept branch's tip).
    pub head: String,
    /// Every changed file, sorted by path.
    pub files: Vec<FileChange>,
    /// What to do next.
    pub actions: Vec<crate::actions::Action>,
}

/// One file's two sides, for an editor's diff view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileTexts {
    /// The path asked for.
    pub path: String,
    /// The file at the base (at its old path when it was renamed); absent
    /// when it is new, or binary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_text: Option<String>,
    /// The file in the worktree now (a symlink's target, as git stores
    /// it); absent when it is gone, or binary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree_text: Option<String>,
    /// Either side holds a NUL byte (git's test) or is not UTF-8.
    pub binary: bool,
}

/// Why a diff could not be made.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    /// No worktree matches.
    #[error(transparent)]
    NotFound(#[from] NoSuchWorktree),
    /// The path is absolute or leaves the worktree.
    #[error(
        "'{path}' is not a path inside the worktree (give it relative to the worktree root, without `..`)"
    )]
    BadPath {
        /// The path given.
        path: String,
    },
    /// The worktree's base commit is not in the repository.
    #[error("the base commit {base} of worktree '{id}' is not in the repository")]
    NoBase {
        /// The worktree.
        id: String,
        /// Its recorded base.
        base: String,
    },
    /// The worktree to compare against has no commit to compare with.
    #[error("worktree '{selector}' has no commit to compare against: its branch is gone")]
    NoAgainstTip {
        /// The `against` given.
        selector: String,
    },
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// Which.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// libgit2 failed.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
}

impl Failure for DiffError {
    fn kind(&self) -> ErrorKind {
        match self {
            DiffError::NotFound(e) => e.kind(),
            DiffError::BadPath { .. } => ErrorKind::InvalidParams,
            DiffError::NoBase { .. } | DiffError::NoAgainstTip { .. } => ErrorKind::UnknownRef,
            DiffError::Io { .. } => ErrorKind::Io,
            DiffError::Git(_) => ErrorKind::Git,
        }
    }

    fn data(&self) -> Map<String, Value> {
        match self {
            DiffError::NotFound(e) => e.data(),
            _ => Map::new(),
        }
    }

    fn hints(&self) -> Vec<Hint> {
        match self {
            DiffError::NotFound(e) => e.hints(),
            _ => Vec::new(),
        }
    }
}

/// The worktree (or kept branch) `selector` names, opened, with its base
/// now and HEAD commits.
struct Opened {
    repo: Repository,
    /// The worktree's folder; `None` for a kept branch (its tip is all there is).
    root: Option<PathBuf>,
    base: Oid,
    recorded_base: Option<Oid>,
    target: Option<String>,
    head: Option<Oid>,
    branch: String,
    /// The branch of the worktree compared against, when one was asked for.
    against: Option<String>,
}

/// The worktree (or kept branch) `selector` names, its base the merge base
/// with its target now, or the tip of the worktree `against` names.
fn open(host: &HostRepo, selector: &str, against: Option<&str>) -> Result<Opened, DiffError> {
    let subject = find_subject(host, selector)?;
    let target = super::target_of(host, &subject);
    let (repo, root, recorded_base) = match &subject {
        Subject::Worktree(record) => {
            let no_base = || DiffError::NoBase {
                id: record.id.clone(),
                base: record.base_commit.clone(),
            };
            let base = Oid::from_str(&record.base_commit).map_err(|_| no_base())?;
            if host.git().find_commit(base).is_err() {
                return Err(no_base());
            }
            (
                Repository::open(&record.path)?,
                Some(record.path.clone()),
                Some(base),
            )
        }
        Subject::KeptBranch(_) => (Repository::open(host.root())?, None, None),
    };
    let head = match &root {
        Some(_) => repo
            .head()
            .ok()
            .and_then(|h| h.peel_to_commit().ok())
            .map(|c| c.id()),
        None => crate::git::worktrees::branch_tip(&repo, subject.branch()),
    };
    let against = match against {
        Some(other) => {
            let other_subject = find_subject(host, other)?;
            let branch = other_subject.branch().to_owned();
            let tip = crate::git::worktrees::branch_tip(host.git(), &branch).ok_or_else(|| {
                DiffError::NoAgainstTip {
                    selector: other.to_owned(),
                }
            })?;
            Some((branch, tip))
        }
        None => None,
    };
    let base = match &against {
        Some((_, tip)) => *tip,
        None => head
            .and_then(|h| super::base_now(&repo, h, target.as_deref(), recorded_base))
            .or(recorded_base)
            .ok_or_else(|| DiffError::NoBase {
                id: subject.selector(),
                base: String::new(),
            })?,
    };
    Ok(Opened {
        repo,
        root,
        base,
        recorded_base,
        target,
        head,
        branch: subject.branch().to_owned(),
        against: against.map(|(branch, _)| branch),
    })
}

/// The base tree against the working tree through the index, untracked
/// files included as if `git add -N` had added them, renames found as
/// `git diff -M` finds them.
/// A kept branch (`head` given) has no working tree: its tip's tree is compared.
fn combined<'r>(
    repo: &'r Repository,
    base: &git2::Tree<'_>,
    head: Option<&git2::Tree<'_>>,
) -> Result<Diff<'r>, git2::Error> {
    let mut opts = DiffOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .show_untracked_content(true)
        .include_typechange(true);
    let mut diff = match head {
        Some(head) => repo.diff_tree_to_tree(Some(base), Some(head), Some(&mut opts))?,
        None => repo.diff_tree_to_workdir_with_index(Some(base), Some(&mut opts))?,
    };
    let mut find = DiffFindOptions::new();
    find.renames(true).for_untracked(true);
    diff.find_similar(Some(&mut find))?;
    Ok(diff)
}

/// Every path (old and new) a diff touches.
fn touched(diff: &Diff<'_>) -> HashSet<String> {
    let mut out = HashSet::new();
    for delta in diff.deltas() {
        for file in [delta.old_file(), delta.new_file()] {
            if let Some(p) = file.path() {
                out.insert(p.to_string_lossy().into_owned());
            }
        }
    }
    out
}

/// What the worktree `selector` holds against its base, committed and not;
/// with `against`, against the tip of that worktree (or kept branch) instead.
pub fn diff(
    host: &HostRepo,
    selector: &str,
    against: Option<&str>,
) -> Result<WorktreeDiff, DiffError> {
    let opened = open(host, selector, against)?;
    let repo = &opened.repo;
    let base_tree = repo.find_commit(opened.base)?.tree()?;
    let head_tree = match opened.head {
        Some(h) => Some(repo.find_commit(h)?.tree()?),
        None => None,
    };
    let committed = touched(&repo.diff_tree_to_tree(Some(&base_tree), head_tree.as_ref(), None)?);
    let uncommitted = match opened.root {
        Some(_) => {
            let mut opts = DiffOptions::new();
            opts.include_untracked(true).recurse_untracked_dirs(true);
            touched(&repo.diff_tree_to_workdir_with_index(head_tree.as_ref(), Some(&mut opts))?)
        }
        None => HashSet::new(),
    };
    let tip_only = opened
        .root
        .is_none()
        .then_some(head_tree.as_ref())
        .flatten();
    let diff = combined(repo, &base_tree, tip_only)?;
    let classifier = Classifier::for_repo(host.git());
    let mut files = Vec::new();
    for (i, delta) in diff.deltas().enumerate() {
        let status = match delta.status() {
            Delta::Added | Delta::Untracked | Delta::Copied => FileStatus::Added,
            Delta::Deleted => FileStatus::Deleted,
            Delta::Renamed => FileStatus::Renamed,
            Delta::Modified | Delta::Typechange => FileStatus::Modified,
            // Unmodified, ignored, unreadable and conflicted entries are no change.
            _ => continue,
        };
        let name = |f: git2::DiffFile<'_>| f.path().map(|p| p.to_string_lossy().into_owned());
        let (old, new) = (name(delta.old_file()), name(delta.new_file()));
        let Some(path) = new.clone().or_else(|| old.clone()) else {
            continue;
        };
        let old_path = (status == FileStatus::Renamed)
            .then(|| old.clone())
            .flatten();
        let patch = git2::Patch::from_diff(&diff, i)?;
        let binary = patch
            .as_ref()
            .is_some_and(|p| p.delta().flags().is_binary())
            || delta.flags().is_binary();
        let (additions, deletions) = match (&patch, binary) {
            (Some(p), false) => {
                let (_, add, del) = p.line_stats()?;
                (add, del)
            }
            _ => (0, 0),
        };
        let either = |set: &HashSet<String>| {
            set.contains(&path) || old_path.as_ref().is_some_and(|o| set.contains(o))
        };
        let sensitive = classifier
            .classify(&path)
            .or_else(|| old_path.as_deref().and_then(|o| classifier.classify(o)));
        files.push(FileChange {
            sensitive,
            committed: either(&committed),
            uncommitted: either(&uncommitted),
            path,
            old_path,
            status,
            additions,
            deletions,
            binary,
        });
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    // This answer is the review; what comes after it: land what is
    // committed, or (uncommitted files stop a land) close losing them.
    let actions: Vec<_> = if files.iter().any(|f| f.uncommitted) {
        crate::actions::uncommitted(&opened.branch)
    } else {
        crate::actions::unlanded(&opened.branch)
    }
    .into_iter()
    .filter(|a| a.kind != crate::actions::ActionKind::Review)
    .collect();
    Ok(WorktreeDiff {
        base: opened.base.to_string(),
        recorded_base: opened.recorded_base.map(|b| b.to_string()),
        target: opened.target,
        against: opened.against,
        head: opened.head.map(|h| h.to_string()).unwrap_or_default(),
        files,
        actions,
    })
}

/// One file's base and worktree text (`path` relative to the worktree root);
/// with `against`, its base side from the tip of that worktree.
pub fn file_texts(
    host: &HostRepo,
    selector: &str,
    path: &str,
    against: Option<&str>,
) -> Result<FileTexts, DiffError> {
    let bad = || DiffError::BadPath {
        path: path.to_owned(),
    };
    let rel = Path::new(path);
    if crate::nofollow::normal_components(rel).is_err() || crate::nofollow::names_git_dir(rel) {
        return Err(bad());
    }
    let opened = open(host, selector, against)?;
    let repo = &opened.repo;
    let base_tree = repo.find_commit(opened.base)?.tree()?;
    let tip_tree = match (&opened.root, opened.head) {
        (None, Some(head)) => Some(repo.find_commit(head)?.tree()?),
        _ => None,
    };
    // A renamed file's base side is at its old path.
    let diff = combined(repo, &base_tree, tip_tree.as_ref())?;
    let base_path = diff
        .deltas()
        .find(|d| d.status() == Delta::Renamed && d.new_file().path() == Some(rel))
        .and_then(|d| d.old_file().path().map(Path::to_path_buf))
        .unwrap_or_else(|| rel.to_path_buf());
    let base_bytes = match base_tree.get_path(&base_path) {
        Ok(entry) if entry.kind() == Some(git2::ObjectType::Blob) => {
            Some(repo.find_blob(entry.id())?.content().to_vec())
        }
        _ => None,
    };
    let worktree_bytes = match (&opened.root, &tip_tree) {
        (Some(root), _) => read_in_worktree(root, rel)?,
        (None, Some(tip)) => match tip.get_path(rel) {
            Ok(entry) if entry.kind() == Some(git2::ObjectType::Blob) => {
                Some(repo.find_blob(entry.id())?.content().to_vec())
            }
            _ => None,
        },
        (None, None) => None,
    };
    let text = |bytes: &Option<Vec<u8>>| -> Result<Option<String>, ()> {
        match bytes {
            None => Ok(None),
            Some(b) if looks_binary(b) => Err(()),
            Some(b) => String::from_utf8(b.clone()).map(Some).map_err(|_| ()),
        }
    };
    match (text(&base_bytes), text(&worktree_bytes)) {
        (Ok(base_text), Ok(worktree_text)) => Ok(FileTexts {
            path: path.to_owned(),
            base_text,
            worktree_text,
            binary: false,
        }),
        _ => Ok(FileTexts {
            path: path.to_owned(),
            base_text: None,
            worktree_text: None,
            binary: true,
        }),
    }
}

/// git's binary test: a NUL byte in the first 8000 bytes.
fn looks_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(8000).any(|&b| b == 0)
}

/// The file at `rel` in the worktree, never following a symlink on the way
/// (a symlink there is read as its target, as git stores it).
fn read_in_worktree(root: &Path, rel: &Path) -> Result<Option<Vec<u8>>, DiffError> {
    use crate::nofollow::{Dir, Kind};
    let fail = |source| DiffError::Io {
        path: root.join(rel),
        source,
    };
    let dir = Dir::open(root).map_err(fail)?;
    let parent = match rel.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(p) => match dir.open_dir(p) {
            Ok(d) => d,
            // A missing folder (or a symlink or file where one would be)
            // means no file there.
            Err(_) => return Ok(None),
        },
        None => dir,
    };
    let Some(name) = rel.file_name() else {
        return Ok(None);
    };
    match parent.kind_of(name).map_err(fail)? {
        Some(Kind::File) => parent
            .read(Path::new(name), TEXT_LIMIT)
            .map(Some)
            .map_err(fail),
        Some(Kind::Symlink) => std::fs::read_link(root.join(rel))
            .map(|t| Some(t.into_os_string().into_encoded_bytes()))
            .map_err(fail),
        _ => Ok(None),
    }
}

/// A unified diff of two texts, for people (the CLI's `diff --path`).
pub fn unified(texts: &FileTexts) -> Result<String, git2::Error> {
    if texts.binary {
        return Ok(format!("Binary file {} differs\n", texts.path));
    }
    let old = texts.base_text.as_deref().map(str::as_bytes);
    let new = texts.worktree_text.as_deref().map(str::as_bytes);
    let mut patch = git2::Patch::from_buffers(
        old.unwrap_or_default(),
        old.map(|_| Path::new(&texts.path)),
        new.unwrap_or_default(),
        new.map(|_| Path::new(&texts.path)),
        None,
    )?;
    let buf = patch.to_buf()?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}
