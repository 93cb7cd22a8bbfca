//! Bringing an isolated sandbox's work back into the host (DESIGN §2): the
//! results archive arrives as a file (never whole in memory); its bundle is
//! unpacked into a private object store on the host and the run's branch is
//! imported from there like any run's (hashed again, compare-and-swap);
//! returned files are written component by component without following any
//! symlink, only inside the worktree, and never under a `.git`.

use std::io::Read;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use super::quarantine::{Finding, Quarantined, escapes};
use crate::git::HostRepo;
use crate::git::import::{self, ImportRequest, Imported};
use crate::nofollow::{Dir, names_git_dir, normal_components};

/// What came back and where it went.
#[derive(Debug, Default)]
pub struct Returned {
    /// The import of the branch, when the agent committed.
    pub imported: Option<Imported>,
    /// Files written into the host worktree.
    pub files: Vec<String>,
    /// Files removed from it.
    pub deleted: Vec<String>,
    /// Entries that were not written (escaping symlinks, `.git` paths, links, devices).
    pub refused: Vec<Quarantined>,
}

/// The small lists in the archive are not allowed to be huge.
const LIST_LIMIT: u64 = 64 << 20;

fn bad(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what}: {e}")
}

/// Why the returned work could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The branch's objects were refused (see [`crate::git::import`]).
    #[error(transparent)]
    Refused(#[from] import::ImportError),
    /// The archive or the worktree could not be used.
    #[error("{0}")]
    Other(String),
}

impl From<String> for ApplyError {
    fn from(message: String) -> ApplyError {
        ApplyError::Other(message)
    }
}

/// Applies the results archive `archive` of an isolated run to the host
/// worktree `worktree` of `host`, whose branch `branch` stood at `base` when
/// the sandbox started. `staging` is a folder of slipway's for the bundle and
/// its private object store.
pub fn apply(
    host: &HostRepo,
    worktree: &Path,
    branch: &str,
    base: Option<Oid>,
    archive: &Path,
    staging: &Path,
    run_id: &str,
) -> Result<Returned, ApplyError> {
    let mut returned = Returned::default();
    std::fs::create_dir_all(staging).map_err(|e| bad("cannot make the staging folder", e))?;
    let bundle_file = staging.join("repo.bundle");
    let mut deleted_text = Vec::new();
    let mut has_bundle = false;
    // First pass: the bundle and the list of deleted files.
    let mut tar = open_archive(archive)?;
    for entry in tar.entries().map_err(|e| bad("bad results archive", e))? {
        let mut entry = entry.map_err(|e| bad("bad results archive", e))?;
        let rel = inner_path(&entry)?;
        if rel == Path::new("repo.bundle") {
            let mut out = std::fs::File::create(&bundle_file)
                .map_err(|e| bad("cannot stage the bundle", e))?;
            std::io::copy(&mut entry, &mut out).map_err(|e| bad("cannot stage the bundle", e))?;
            has_bundle = true;
        } else if rel == Path::new("deleted.txt") {
            (&mut entry)
                .take(LIST_LIMIT)
                .read_to_end(&mut deleted_text)
                .map_err(|e| bad("bad results archive", e))?;
        }
    }
    let mut moved_to_tip = None;
    if has_bundle {
        let imported = import_bundle(host, branch, base, &bundle_file, staging, run_id)?;
        if imported.moved {
            moved_to_tip = host
                .git()
                .refname_to_id(&format!("refs/heads/{branch}"))
                .ok();
        }
        returned.imported = Some(imported);
    }
    if let Some(tip) = moved_to_tip {
        // The worktree is where the sandbox started (plus what was seeded,
        // which comes back below): its files and index follow the new tip.
        let wt = Repository::open(worktree).map_err(|e| bad("cannot open the worktree", e))?;
        let commit = wt
            .find_commit(tip)
            .map_err(|e| bad("cannot read the new tip", e))?;
        let mut checkout = git2::build::CheckoutBuilder::new();
        checkout.force();
        wt.checkout_tree(commit.as_object(), Some(&mut checkout))
            .map_err(|e| bad("cannot update the worktree", e))?;
    }

    // Second pass: the files, streamed one by one.
    let root = Dir::open(worktree).map_err(|e| bad("cannot open the worktree", e))?;
    let mut tar = open_archive(archive)?;
    for entry in tar.entries().map_err(|e| bad("bad results archive", e))? {
        let mut entry = entry.map_err(|e| bad("bad results archive", e))?;
        let rel = inner_path(&entry)?;
        let Ok(file) = rel.strip_prefix("files") else {
            continue;
        };
        if file.as_os_str().is_empty() {
            continue;
        }
        let shown = file.display().to_string();
        let refuse = |returned: &mut Returned, detail: String| {
            returned.refused.push(Quarantined {
                path: shown.clone(),
                finding: Finding::RefusedEntry,
                detail,
                moved_to: None,
            });
        };
        if normal_components(file).is_err() || names_git_dir(file) {
            refuse(
                &mut returned,
                "a path that leaves the worktree or names a .git folder".into(),
            );
            continue;
        }
        let kind = entry.header().entry_type();
        let written = if kind.is_dir() {
            root.make_dirs(file, true).map(|_| false)
        } else if kind.is_file() {
            // Only the permission bits a checkout would give: no setuid.
            let mode = match entry.header().mode() {
                Ok(m) if m & 0o111 != 0 => 0o755,
                _ => 0o644,
            };
            root.create_file(file, mode)
                .and_then(|mut out| std::io::copy(&mut entry, &mut out).map(|_| true))
        } else if kind.is_symlink() {
            let target = match entry.link_name() {
                Ok(Some(t)) => t.into_owned(),
                _ => {
                    refuse(&mut returned, "a symlink without a target".into());
                    continue;
                }
            };
            if escapes(file, &target) {
                refuse(
                    &mut returned,
                    format!(
                        "a symlink to {} (outside the worktree) was not created",
                        target.display()
                    ),
                );
                returned.refused.last_mut().expect("just pushed").finding =
                    Finding::EscapingSymlink;
                continue;
            }
            root.symlink(file, &target).map(|()| true)
        } else {
            refuse(
                &mut returned,
                format!("{} is not a file slipway writes", entry_kind(kind)),
            );
            continue;
        };
        match written {
            Ok(true) => returned.files.push(shown),
            Ok(false) => {}
            Err(e) => refuse(&mut returned, format!("could not be written: {e}")),
        }
    }
    for line in String::from_utf8_lossy(&deleted_text).lines() {
        let rel = Path::new(line);
        if line.is_empty() || normal_components(rel).is_err() || names_git_dir(rel) {
            continue;
        }
        if root.remove_file(rel).unwrap_or(false) {
            returned.deleted.push(line.to_owned());
        }
    }
    Ok(returned)
}

fn open_archive(path: &Path) -> Result<tar::Archive<std::fs::File>, String> {
    let file = std::fs::File::open(path).map_err(|e| bad("cannot read the results archive", e))?;
    Ok(tar::Archive::new(file))
}

/// An entry's path below the archive's top folder (`slipway-out/`).
fn inner_path<R: Read>(entry: &tar::Entry<'_, R>) -> Result<PathBuf, String> {
    let path = entry.path().map_err(|e| bad("bad results archive", e))?;
    Ok(path.components().skip(1).collect())
}

/// Unpacks a bundle into a private object store under `staging` (whose only
/// link to the host is an alternate naming the host's objects, for the thin
/// pack's bases) and imports `branch` from it.
fn import_bundle(
    host: &HostRepo,
    branch: &str,
    base: Option<Oid>,
    bundle_file: &Path,
    staging: &Path,
    run_id: &str,
) -> Result<Imported, ApplyError> {
    let _turn = crate::git::queue::turn(host.common_dir());
    let store = staging.join("git");
    let repo =
        Repository::init_bare(&store).map_err(|e| bad("cannot make the staging store", e))?;
    let alternates = store.join("objects").join("info").join("alternates");
    std::fs::create_dir_all(alternates.parent().expect("alternates has a folder"))
        .and_then(|()| {
            let mut line = host
                .common_dir()
                .join("objects")
                .into_os_string()
                .into_encoded_bytes();
            line.push(b'\n');
            std::fs::write(&alternates, line)
        })
        .map_err(|e| bad("cannot make the staging store", e))?;
    let repo =
        Repository::open_bare(repo.path()).map_err(|e| bad("cannot open the staging store", e))?;
    let refs = crate::git::bundle::import_file(&repo, bundle_file)
        .map_err(|e| bad("cannot unpack the sandbox's commits", e))?;
    let refname = format!("refs/heads/{branch}");
    let Some((tip, _)) = refs.into_iter().find(|(_, name)| *name == refname) else {
        return Err(ApplyError::Other(format!(
            "the sandbox's bundle does not hold {refname}; its work stays in the container"
        )));
    };
    import::import_branch(
        host.git(),
        &store.join("objects"),
        &ImportRequest {
            refname: &refname,
            tip,
            start: base,
            run_id,
        },
    )
    .map_err(ApplyError::Refused)
}

/// An archive entry's type in people's words.
fn entry_kind(kind: tar::EntryType) -> &'static str {
    match kind {
        tar::EntryType::Link => "a hard link",
        tar::EntryType::Char => "a character device",
        tar::EntryType::Block => "a block device",
        tar::EntryType::Fifo => "a fifo",
        tar::EntryType::Directory => "a folder",
        tar::EntryType::Symlink => "a symlink",
        _ => "an entry of an unusual type",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worktree-like checkout: a repository with one commit.
    fn checkout(dir: &Path) -> HostRepo {
        crate::git::init_with_first_commit(dir, ("t", "t@example.invalid"), &[], "first")
            .expect("repo");
        HostRepo::open(dir).expect("open")
    }

    fn raw_entry(
        tar: &mut tar::Builder<Vec<u8>>,
        kind: tar::EntryType,
        path: &[u8],
        link: Option<&str>,
        data: &[u8],
    ) {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(kind);
        header.set_size(data.len() as u64);
        header.set_mode(0o4755);
        // Written as raw bytes: the tar crate would refuse `..` itself.
        let name = &mut header.as_gnu_mut().expect("gnu").name;
        name[..path.len()].copy_from_slice(path);
        if let Some(link) = link {
            header.set_link_name(link).expect("link name");
        }
        header.set_cksum();
        tar.append(&header, data).expect("append");
    }

    #[test]
    fn a_crafted_archive_writes_nothing_outside_and_nothing_under_git() {
        let tmp = tempfile::tempdir().expect("tmp");
        let wt = tmp.path().join("wt");
        std::fs::create_dir_all(&wt).expect("wt");
        let host = checkout(&wt);
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(&outside).expect("outside");
        std::os::unix::fs::symlink(&outside, wt.join("link")).expect("symlink");

        let mut tar = tar::Builder::new(Vec::new());
        use tar::EntryType as E;
        raw_entry(&mut tar, E::Regular, b"out/files/../escape.txt", None, b"x");
        raw_entry(
            &mut tar,
            E::Regular,
            b"out/files/sub/.git/hooks/pre-commit",
            None,
            b"x",
        );
        raw_entry(&mut tar, E::Regular, b"out/files/.GIT/config", None, b"x");
        raw_entry(
            &mut tar,
            E::Regular,
            b"out/files/link/through.txt",
            None,
            b"kept inside",
        );
        raw_entry(
            &mut tar,
            E::Symlink,
            b"out/files/up",
            Some("../../outside"),
            b"",
        );
        raw_entry(&mut tar, E::Symlink, b"out/files/abs", Some("/etc"), b"");
        raw_entry(&mut tar, E::Symlink, b"out/files/ok", Some("sub/file"), b"");
        raw_entry(&mut tar, E::Link, b"out/files/hard", Some("README"), b"");
        raw_entry(&mut tar, E::Char, b"out/files/dev", None, b"");
        raw_entry(
            &mut tar,
            E::Regular,
            b"out/files/plain.sh",
            None,
            b"#!/bin/sh\n",
        );
        raw_entry(
            &mut tar,
            E::Regular,
            b"out/deleted.txt",
            None,
            b"../../outside/victim\nlink/victim\n",
        );
        let archive = tmp.path().join("results.tar");
        std::fs::write(&archive, tar.into_inner().expect("tar")).expect("write");
        std::fs::write(outside.join("victim"), "keep").expect("victim");

        let staging = tmp.path().join("staging");
        let returned =
            apply(&host, &wt, "main", None, &archive, &staging, "run-test").expect("applied");

        let refused: Vec<&str> = returned.refused.iter().map(|q| q.path.as_str()).collect();
        for path in [
            "../escape.txt",
            "sub/.git/hooks/pre-commit",
            ".GIT/config",
            "up",
            "abs",
            "hard",
            "dev",
        ] {
            assert!(refused.contains(&path), "{path} refused: {refused:?}");
        }
        assert!(!tmp.path().join("escape.txt").exists());
        assert!(!wt.join("sub/.git").exists() && !wt.join(".GIT").exists());
        assert_eq!(
            std::fs::read_dir(&outside).expect("outside").count(),
            1,
            "nothing written outside"
        );
        assert_eq!(
            std::fs::read_to_string(outside.join("victim")).expect("victim"),
            "keep"
        );
        // The symlink in the way became a folder inside the worktree.
        assert!(wt.join("link").symlink_metadata().expect("link").is_dir());
        assert_eq!(
            std::fs::read_to_string(wt.join("link/through.txt")).expect("f"),
            "kept inside"
        );
        assert_eq!(
            std::fs::read_link(wt.join("ok")).expect("ok"),
            Path::new("sub/file")
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(wt.join("plain.sh"))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o755, "no setuid bit survives");
    }
}
