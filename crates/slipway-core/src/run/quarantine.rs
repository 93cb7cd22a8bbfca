//! After a run, the checkout is searched for what the user's own git would
//! execute or follow out of it (DESIGN §2): a `.git` folder or file below the
//! root (a nested repository git would look into, with its own config and
//! hooks), a symlink whose target leaves the checkout, and gitlinks the run
//! added. The first two are moved to `.slipway/quarantine/<run>/`; gitlinks,
//! which live in commits, are reported. Nothing is ever followed on the way.

use std::collections::BTreeSet;
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

/// What a checkout held before a run that works in the user's own checkout
/// (the `head` strategy), so only what the run added is quarantined.
#[derive(Debug, Default, Clone)]
pub struct Baseline {
    found: BTreeSet<PathBuf>,
    /// A linked worktree's `.git` file (which names its admin dir).
    dot_git_file: Option<Vec<u8>>,
}

impl Baseline {
    /// Reads the nested `.git` entries and escaping symlinks of `root` now,
    /// and the root's `.git` file when it is one.
    pub fn take(root: &Path) -> Baseline {
        let mut found = BTreeSet::new();
        let mut dot_git_file = None;
        if let Ok(dir) = Dir::open(root) {
            walk(&dir, Path::new(""), 0, &mut |rel, _, _| {
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

/// Walks `dir` (the checkout at `rel`), calling `found(rel, kind, target)`
/// for every nested `.git` and escaping symlink; `found` says whether the
/// entry is gone (so the walk does not descend into it).
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
        match kind {
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
        let mut moves: Vec<(PathBuf, Finding, String)> = Vec::new();
        walk(&dir, Path::new(""), 0, &mut |rel, finding, detail| {
            if baseline.is_some_and(|b| b.found.contains(rel)) {
                return false;
            }
            moves.push((rel.to_path_buf(), finding, detail.to_owned()));
            true
        });
        for (rel, finding, detail) in moves {
            let to = quarantine.join(&rel);
            let moved = dir.move_out(&rel, &to);
            out.push(Quarantined {
                path: rel.display().to_string(),
                finding,
                detail: match &moved {
                    Ok(()) => detail,
                    Err(e) => format!("{detail} (could not be moved: {e})"),
                },
                moved_to: moved.ok().map(|()| to),
            });
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
