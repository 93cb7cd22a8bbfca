//! After a run, the checkout is searched for what the user's own git would
//! execute or follow out of it (DESIGN §2): a `.git` folder or file below the
//! root (a nested repository git would look into, with its own config and
//! hooks), a symlink whose target leaves the checkout, and gitlinks the run
//! added. The first two are moved to `.slipway/quarantine/<run>/`; gitlinks,
//! which live in commits, are reported. Nothing is ever followed on the way.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

use git2::{Oid, Repository};
use serde::{Deserialize, Serialize};

use crate::nofollow::{Dir, Kind};

/// What was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Finding {
    /// A `.git` folder or file below the checkout's root.
    NestedGit,
    /// A symlink whose target is outside the checkout.
    EscapingSymlink,
    /// A submodule entry the run's commits added.
    NewGitlink,
    /// Something returned from an isolated sandbox that was not written.
    RefusedEntry,
    /// A device node, fifo or socket (removed: nothing in a checkout needs
    /// one, and a device node made as root opens the host's hardware).
    SpecialFile,
    /// A file or folder with its set-user-id or set-group-id bit on
    /// (cleared: a set-id binary a container's root made runs as root on
    /// the host).
    SetIdBits,
}

impl Finding {
    /// What it is, for people.
    pub fn describe(self) -> &'static str {
        match self {
            Finding::NestedGit => "a .git inside the checkout",
            Finding::EscapingSymlink => "a symlink leaving the checkout",
            Finding::NewGitlink => "a new submodule entry",
            Finding::RefusedEntry => "a returned entry not written",
            Finding::SpecialFile => "a device node, fifo or socket",
            Finding::SetIdBits => "set-id bits",
        }
    }
}

/// One thing the check found, and where it went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Quarantined {
    /// The path, relative to the checkout.
    pub path: String,
    /// What it is.
    pub finding: Finding,
    /// Details for people (a symlink's target, why an entry was refused).
    pub detail: String,
    /// Where it was moved (`None`: reported only).
    pub moved_to: Option<PathBuf>,
}

/// The folder a run's quarantined entries go to.
pub fn folder(slipway_dir: &Path, run_id: &str) -> PathBuf {
    slipway_dir.join("quarantine").join(run_id)
}

/// What a checkout held before a run (the user's own files in a `head`
/// run's checkout, a submodule's gitfile, a vendored repository), so only
/// what the run added or changed is quarantined.
#[derive(Debug, Default, Clone)]
pub struct Baseline {
    found: BTreeSet<PathBuf>,
    /// A linked worktree's `.git` file (which names its admin dir).
    dot_git_file: Option<Vec<u8>>,
    /// Every nested `.git` as it was: a gitfile's bytes, or what of a
    /// `.git` folder names programs git runs.
    git_entries: BTreeMap<PathBuf, GitEntry>,
}

/// A nested `.git` as far as what git would run or follow from it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum GitEntry {
    /// A gitfile (`gitdir: …`): where git looks for config and hooks.
    File(Vec<u8>),
    /// A `.git` folder: the files of it that name programs or other git
    /// dirs, and its hooks, with their bytes and modes.
    Dir(BTreeMap<String, (u32, Vec<u8>)>),
    /// Too large or unreadable to keep: any such entry counts as changed.
    Unknown,
}

/// The files of a `.git` folder that make git run or follow something.
const GIT_DIR_FILES: &[&str] = &[
    "config",
    "config.worktree",
    "commondir",
    "gitdir",
    "info/attributes",
    "objects/info/alternates",
];

/// The most of a nested git entry kept to compare with after the run.
const GIT_ENTRY_LIMIT: u64 = 1 << 20;

impl GitEntry {
    /// Reads the nested `.git` at `rel` below `root`.
    fn read(root: &Dir, rel: &Path) -> GitEntry {
        let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
            return GitEntry::Unknown;
        };
        let Ok(dir) = root.open_dir_or_self(parent) else {
            return GitEntry::Unknown;
        };
        match dir.kind_of(name).ok().flatten() {
            Some(Kind::File) => dir
                .read(Path::new(name), GIT_ENTRY_LIMIT)
                .map(GitEntry::File)
                .unwrap_or(GitEntry::Unknown),
            Some(Kind::Dir) => {
                let Ok(git) = dir.open_dir(Path::new(name)) else {
                    return GitEntry::Unknown;
                };
                let mut files = BTreeMap::new();
                let mut keep = |git: &Dir, rel: String| {
                    let path = Path::new(&rel);
                    let (Some(p), Some(n)) = (path.parent(), path.file_name()) else {
                        return;
                    };
                    let Ok(holder) = git.open_dir_or_self(p) else {
                        return;
                    };
                    let mode = holder.mode_of(n).ok().flatten().unwrap_or(0);
                    let bytes = holder
                        .read(Path::new(n), GIT_ENTRY_LIMIT)
                        .unwrap_or_default();
                    files.insert(rel, (mode, bytes));
                };
                for name in GIT_DIR_FILES {
                    keep(&git, (*name).to_owned());
                }
                if let Ok(hooks) = git.open_dir(Path::new("hooks"))
                    && let Ok(names) = hooks.entries()
                {
                    for hook in names {
                        keep(&git, format!("hooks/{}", hook.to_string_lossy()));
                    }
                }
                GitEntry::Dir(files)
            }
            _ => GitEntry::Unknown,
        }
    }
}

impl Baseline {
    /// Reads the nested `.git` entries, escaping symlinks, special files and
    /// set-id files of `root` now, every nested `.git` as it is, and the
    /// root's `.git` file when it is one.
    pub fn take(root: &Path) -> Baseline {
        let mut found = BTreeSet::new();
        let mut dot_git_file = None;
        let mut git_entries = BTreeMap::new();
        if let Ok(dir) = Dir::open(root) {
            walk(&dir, Path::new(""), 0, &mut |rel, finding, _| {
                if finding == Finding::NestedGit {
                    git_entries.insert(rel.to_path_buf(), GitEntry::read(&dir, rel));
                }
                found.insert(rel.to_path_buf());
                false
            });
            if dir.kind_of(".git".as_ref()).ok().flatten() == Some(Kind::File) {
                dot_git_file = dir.read(Path::new(".git"), 4096).ok();
            }
        }
        Baseline {
            found,
            dot_git_file,
            git_entries,
        }
    }

    /// Whether `rel` was there before the run, as it is now.
    fn unchanged(&self, root: &Dir, rel: &Path, finding: Finding) -> bool {
        if !self.found.contains(rel) {
            return false;
        }
        if finding != Finding::NestedGit {
            return true;
        }
        match self.git_entries.get(rel) {
            Some(GitEntry::Unknown) | None => false,
            Some(before) => *before == GitEntry::read(root, rel),
        }
    }
}

/// Whether a symlink at `rel` (relative to the root) pointing at `target`
/// resolves outside the root, read as text alone.
pub fn escapes(rel: &Path, target: &Path) -> bool {
    if target.is_absolute() {
        return true;
    }
    let mut depth: usize = rel.components().count().saturating_sub(1);
    for c in target.components() {
        match c {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => {
                if depth == 0 {
                    return true;
                }
                depth -= 1;
            }
            Component::RootDir | Component::Prefix(_) => return true,
        }
    }
    false
}

/// Walks `dir` (the checkout at `rel`), calling `found(rel, kind, detail)`
/// for every nested `.git`, escaping symlink, special file and set-id
/// file or folder; `found` says whether the entry is gone (so the walk
/// does not descend into it).
fn walk(dir: &Dir, rel: &Path, depth: usize, found: &mut dyn FnMut(&Path, Finding, &str) -> bool) {
    // Deeper than any real project: a planted maze is not walked further.
    if depth > 64 {
        return;
    }
    let Ok(names) = dir.entries() else { return };
    for name in names {
        let child = rel.join(&name);
        let top = rel.as_os_str().is_empty();
        // The checkout's own `.git` and the host checkout's `.slipway` are slipway's.
        if top && (name == ".git" || name == ".slipway") {
            continue;
        }
        let kind = dir.kind_of(&name).ok().flatten();
        if is_git_name(&name) {
            found(&child, Finding::NestedGit, "");
            continue;
        }
        if matches!(kind, Some(Kind::File | Kind::Dir))
            && let Some(mode) = dir.mode_of(&name).ok().flatten()
            && mode & 0o6000 != 0
        {
            found(
                &child,
                Finding::SetIdBits,
                &format!("mode {:o}", mode & 0o7777),
            );
        }
        match kind {
            Some(Kind::Other) => {
                found(&child, Finding::SpecialFile, &special_kind(dir, &name));
            }
            Some(Kind::Dir) => {
                if let Ok(sub) = dir.open_dir(Path::new(&name)) {
                    walk(&sub, &child, depth + 1, found);
                }
            }
            Some(Kind::Symlink) => {
                if let Some(target) = read_link(dir, &name)
                    && escapes(&child, &target)
                {
                    found(
                        &child,
                        Finding::EscapingSymlink,
                        &target.display().to_string(),
                    );
                }
            }
            _ => {}
        }
    }
}

/// What kind of special file `name` is, for people.
fn special_kind(dir: &Dir, name: &OsStr) -> String {
    let kind = match dir.mode_of(name).ok().flatten().map(|m| m & libc::S_IFMT) {
        Some(libc::S_IFBLK) => "a block device",
        Some(libc::S_IFCHR) => "a character device",
        Some(libc::S_IFIFO) => "a fifo",
        Some(libc::S_IFSOCK) => "a socket",
        _ => "a special file",
    };
    format!("{kind}; removed")
}

fn is_git_name(name: &OsStr) -> bool {
    name.as_encoded_bytes().eq_ignore_ascii_case(b".git")
}

fn read_link(dir: &Dir, name: &OsStr) -> Option<PathBuf> {
    dir.read_link(Path::new(name)).ok()
}

/// Checks the checkout at `root` after run `run_id`: nested `.git` entries
/// and escaping symlinks (not in `baseline`) are moved under `quarantine`;
/// gitlinks in `tip`'s tree that `base`'s tree lacks are reported.
pub fn check(
    root: &Path,
    quarantine: &Path,
    baseline: Option<&Baseline>,
    repo: Option<&Repository>,
    base: Option<Oid>,
    tip: Option<Oid>,
) -> Vec<Quarantined> {
    let mut out = Vec::new();
    if let Ok(dir) = Dir::open(root) {
        if let Some(expected) = baseline.and_then(|b| b.dot_git_file.as_ref())
            && dir.read(Path::new(".git"), 4096).ok().as_ref() != Some(expected)
        {
            // The worktree's `.git` file names where the user's git looks for
            // config and hooks: a changed one is put back as it was.
            let to = quarantine.join(".git");
            let moved = dir.move_out(Path::new(".git"), &to).is_ok();
            let restored = dir.write(Path::new(".git"), expected, 0o644);
            out.push(Quarantined {
                path: ".git".into(),
                finding: Finding::NestedGit,
                detail: match restored {
                    Ok(()) => "the worktree's .git file was changed; it was put back".into(),
                    Err(e) => format!(
                        "the worktree's .git file was changed and could not be put back: {e}"
                    ),
                },
                moved_to: moved.then_some(to),
            });
        }
        let mut found: Vec<(PathBuf, Finding, String)> = Vec::new();
        walk(&dir, Path::new(""), 0, &mut |rel, finding, detail| {
            if baseline.is_some_and(|b| b.unchanged(&dir, rel, finding)) {
                return false;
            }
            let changed = baseline.is_some_and(|b| b.found.contains(rel));
            let detail = if changed {
                "it was there before the run and the run changed it".to_owned()
            } else {
                detail.to_owned()
            };
            found.push((rel.to_path_buf(), finding, detail));
            // A set-id folder stays and is walked; everything else goes.
            finding != Finding::SetIdBits
        });
        for (rel, finding, detail) in found {
            let before = baseline.and_then(|b| match b.git_entries.get(&rel) {
                Some(GitEntry::File(bytes)) => Some(bytes.clone()),
                _ => None,
            });
            let mut settled = settle(&dir, quarantine, rel.clone(), finding, detail);
            // A submodule's gitfile the run re-pointed goes back to where it pointed.
            if let (Some(bytes), Some(_)) = (before, &settled.moved_to) {
                settled.detail = match dir.write(&rel, &bytes, 0o644) {
                    Ok(()) => format!("{}; the run changed it, it was put back", settled.detail),
                    Err(e) => format!("{}; it could not be put back: {e}", settled.detail),
                };
            }
            out.push(settled);
        }
    }
    if let (Some(repo), Some(tip)) = (repo, tip) {
        let before = base.map(|b| gitlinks(repo, b)).unwrap_or_default();
        for (path, commit) in gitlinks(repo, tip) {
            if !before.iter().any(|(p, _)| *p == path) {
                out.push(Quarantined {
                    path,
                    finding: Finding::NewGitlink,
                    detail: format!(
                        "the run's commits add a submodule entry at {commit}; its folder holds no repository"
                    ),
                    moved_to: None,
                });
            }
        }
    }
    out
}

/// Deals with one finding: a nested `.git` or escaping symlink is moved
/// under `quarantine`, a special file removed, set-id bits cleared.
fn settle(
    dir: &Dir,
    quarantine: &Path,
    rel: PathBuf,
    finding: Finding,
    detail: String,
) -> Quarantined {
    let path = rel.display().to_string();
    let failed = |what: &str, e: std::io::Error| format!("{detail} (could not be {what}: {e})");
    match finding {
        Finding::SpecialFile => {
            let removed = dir.remove_file(&rel);
            Quarantined {
                path,
                finding,
                detail: match removed {
                    Ok(_) => detail,
                    Err(e) => failed("removed", e),
                },
                moved_to: None,
            }
        }
        Finding::SetIdBits => {
            let cleared = match (rel.parent(), rel.file_name()) {
                (Some(parent), Some(name)) => dir
                    .open_dir_or_self(parent)
                    .and_then(|d| d.clear_set_id(name)),
                _ => Err(std::io::Error::other("no file name")),
            };
            Quarantined {
                path,
                finding,
                detail: match cleared {
                    Ok(()) => format!("{detail}; the set-id bits were cleared"),
                    Err(e) => failed("cleared", e),
                },
                moved_to: None,
            }
        }
        _ => {
            let to = quarantine.join(&rel);
            let moved = dir.move_out(&rel, &to);
            Quarantined {
                path,
                finding,
                detail: match &moved {
                    Ok(()) => detail,
                    Err(e) => failed("moved", std::io::Error::new(e.kind(), e.to_string())),
                },
                moved_to: moved.ok().map(|()| to),
            }
        }
    }
}

/// Every gitlink (submodule entry) of a commit's tree, with the commit it names.
fn gitlinks(repo: &Repository, commit: Oid) -> Vec<(String, String)> {
    let Ok(tree) = repo.find_commit(commit).and_then(|c| c.tree()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let walked = tree.walk(git2::TreeWalkMode::PreOrder, |parent, entry| {
        if entry.filemode() == 0o160000 {
            out.push((
                format!("{parent}{}", entry.name().unwrap_or("?")),
                entry.id().to_string(),
            ));
        }
        git2::TreeWalkResult::Ok
    });
    if walked.is_err() {
        tracing::warn!("could not read the tree of {commit} for gitlinks");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_that_leave_the_root_are_found_by_their_text() {
        assert!(escapes(Path::new("a"), Path::new("/etc/passwd")));
        assert!(escapes(Path::new("a"), Path::new("../x")));
        assert!(escapes(Path::new("d/a"), Path::new("../../x")));
        assert!(!escapes(Path::new("d/a"), Path::new("../x")));
        assert!(!escapes(Path::new("d/a"), Path::new("./b/c")));
        assert!(escapes(Path::new("d/a"), Path::new("b/../../../x")));
    }
}
