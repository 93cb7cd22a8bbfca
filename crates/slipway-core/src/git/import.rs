//! Bringing a run's branch from its private git dir into the host (DESIGN §2
//! "Import"): only that branch, object by object, every object hashed again,
//! then the host branch moved by compare-and-swap against its value when the
//! run started. A branch the user moved meanwhile keeps the user's value and
//! the run's commits land on `<branch>-run-<id>`.
//!
//! The private store is read by object id alone: nothing it holds (a
//! commit-graph, an index of packs, an object stored under the wrong id)
//! can make the host take an object whose content does not hash to the id
//! that refers to it. New objects reach the host as one pack, written by
//! libgit2's indexer, which hashes them once more.

use std::collections::HashSet;
use std::path::Path;

use git2::{ObjectType, Odb, Oid, Repository};
use serde::{Deserialize, Serialize};

/// What an import did on the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Imported {
    /// The full ref that now holds the run's tip (the branch itself, or the side branch).
    pub landed_on: String,
    /// Whether the run's own branch moved (false: a side branch was made, or nothing new).
    pub moved: bool,
    /// Set when the branch had moved meanwhile (or the run rewrote its
    /// history): the commits are on this branch instead, and why.
    pub side_branch: Option<SideBranch>,
    /// The commits the host did not have, oldest first.
    pub commits: Vec<String>,
    /// How many objects were written into the host's store.
    pub objects: usize,
}

/// A branch made because the run's own branch could not be moved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SideBranch {
    /// Its short name.
    pub name: String,
    /// Why the run's branch was left alone.
    pub reason: String,
}

/// Why an import failed. The host's refs are as before in every case.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// An object the run's branch needs is not in the private store.
    #[error("the run's branch needs object {id}, which its private git dir does not hold")]
    Missing { id: Oid },
    /// An object's content does not hash to the id it is stored under.
    #[error(
        "object {id} in the run's private git dir does not match its id (its content hashes to {actual}); nothing was imported"
    )]
    Mismatch { id: Oid, actual: Oid },
    /// An object breaks one of git's fsck rules (a tree entry named `.git`
    /// or `..`, a bad mode, a malformed commit, a dangerous `.gitmodules`).
    #[error("{0}; nothing was imported")]
    Refused(#[from] super::fsck::Violation),
    /// libgit2 failed.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
}

impl ImportError {
    /// Stable machine-readable kind.
    pub fn kind(&self) -> crate::error::ErrorKind {
        match self {
            ImportError::Missing { .. }
            | ImportError::Mismatch { .. }
            | ImportError::Refused(_) => crate::error::ErrorKind::ImportRefused,
            ImportError::Git(_) => crate::error::ErrorKind::Git,
        }
    }
}

/// Objects larger than this are written to the host one by one rather than
/// held in memory for the pack.
const PACK_OBJECT_LIMIT: usize = 32 << 20;

/// What to import.
#[derive(Debug, Clone)]
pub struct ImportRequest<'a> {
    /// The host ref the run works on: `refs/heads/<branch>`, or `HEAD` for a
    /// detached `head` run.
    pub refname: &'a str,
    /// The run's tip in its private dir.
    pub tip: Oid,
    /// The host ref's value when the run started (`None`: it did not exist).
    pub start: Option<Oid>,
    /// The run id, for the side branch's name.
    pub run_id: &'a str,
}

/// Imports a run's branch from the private object store at `private_objects`
/// into `host` (a handle on the host repository).
pub fn import_branch(
    host: &Repository,
    private_objects: &Path,
    request: &ImportRequest<'_>,
) -> Result<Imported, ImportError> {
    let _turn = super::queue::turn(host.commondir());
    let count = copy_objects(host, private_objects, request.tip)?;
    land(host, request, count)
}

/// Moves the host ref to the run's tip by compare-and-swap against its value
/// at start, or keeps the tip on a side branch (see [`import_branch`]); the
/// tip's objects must be in the host already. `objects` is only reported.
/// Landing twice is harmless: a ref already at the tip stays.
pub fn land(
    host: &Repository,
    request: &ImportRequest<'_>,
    objects: usize,
) -> Result<Imported, ImportError> {
    let count = objects;
    let current = current_value(host, request.refname);
    let commits = super::commits_between(host, request.start, request.tip)?
        .into_iter()
        .map(|c| c.to_string())
        .collect();
    if current == Some(request.tip) {
        return Ok(Imported {
            landed_on: request.refname.to_owned(),
            moved: false,
            side_branch: None,
            commits,
            objects: count,
        });
    }
    let descends = match request.start {
        None => true,
        Some(start) => start == request.tip || host.graph_descendant_of(request.tip, start)?,
    };
    let moved_meanwhile = current != request.start;
    let common = super::canonical(host.commondir());
    if descends && !moved_meanwhile {
        let message = format!("slipway: run {}", request.run_id);
        // Under a lock the next command can tell is this run's (its token
        // is the run id), so a kill here leaves no lock the user's git trips on.
        let swapped = super::host_write::update_ref(
            host,
            &common,
            request.run_id,
            request.refname,
            request.start,
            Some(request.tip),
            &message,
        );
        match swapped {
            Ok(()) => {
                return Ok(Imported {
                    landed_on: request.refname.to_owned(),
                    moved: true,
                    side_branch: None,
                    commits,
                    objects: count,
                });
            }
            // Lost the race with the user: their value stays.
            Err(super::host_write::RefError::Moved { .. }) => {}
            Err(e) => return Err(git2::Error::from_str(&e.to_string()).into()),
        }
    }
    let reason = if !descends {
        "the run rewrote the branch's history (its tip does not contain the commit it started from)"
    } else {
        "the branch moved on the host while the run went on (kept as you left it)"
    };
    let side = side_branch(host, request, reason)?;
    Ok(Imported {
        landed_on: format!("refs/heads/{}", side.name),
        moved: false,
        side_branch: Some(side),
        commits,
        objects: count,
    })
}

/// After the checkout's branch moved from `from` to `to`, brings the
/// checkout's index in step for the paths those commits changed; every other
/// entry (what the user staged meanwhile) stays. Entries come with the stat
/// data of the run's private index when it holds the same content, so `git
/// status` need not read those files again. Returns the paths updated.
pub fn update_index(
    checkout: &Repository,
    from: Option<Oid>,
    to: Oid,
    private_index: Option<&Path>,
    token: &str,
) -> Result<usize, git2::Error> {
    let old_tree = match from {
        Some(c) => Some(checkout.find_commit(c)?.tree()?),
        None => None,
    };
    let new_tree = checkout.find_commit(to)?.tree()?;
    let mut diff_options = git2::DiffOptions::new();
    diff_options.ignore_submodules(false);
    let diff =
        checkout.diff_tree_to_tree(old_tree.as_ref(), Some(&new_tree), Some(&mut diff_options))?;
    let private = private_index.and_then(|p| git2::Index::open(p).ok());
    let mut changes: Vec<(std::path::PathBuf, Option<git2::IndexEntry>)> = Vec::new();
    for delta in diff.deltas() {
        let new = delta.new_file();
        let Some(path) = new.path().or_else(|| delta.old_file().path()) else {
            continue;
        };
        if delta.status() == git2::Delta::Deleted {
            changes.push((path.to_path_buf(), None));
            continue;
        }
        let from_private = private
            .as_ref()
            .and_then(|p| p.get_path(path, 0))
            .filter(|e| e.id == new.id() && e.mode == u32::from(new.mode()));
        let entry = from_private.unwrap_or_else(|| {
            super::host_write::index_entry(
                &path.to_string_lossy(),
                new.id(),
                u32::from(new.mode()),
                None,
            )
        });
        changes.push((path.to_path_buf(), Some(entry)));
    }
    let updated = changes.len();
    let common = super::canonical(checkout.commondir());
    // The index is read under its lock, so what the user staged a moment
    // ago survives; the lock is one the next command can tell is ours.
    super::host_write::update_index(&common, token, &checkout.path().join("index"), |index| {
        for (path, entry) in &changes {
            let done = match entry {
                Some(entry) => index.add(entry),
                None => index.remove_path(path),
            };
            done.map_err(|e| e.to_string())?;
        }
        Ok(())
    })
    .map_err(|e| git2::Error::from_str(&e.to_string()))?;
    Ok(updated)
}

fn current_value(host: &Repository, refname: &str) -> Option<Oid> {
    let reference = host.find_reference(refname).ok()?;
    // A symbolic HEAD is not the detached HEAD the run started on.
    if refname == "HEAD" && reference.symbolic_target().ok().flatten().is_some() {
        return None;
    }
    reference.target()
}

fn side_branch(
    host: &Repository,
    request: &ImportRequest<'_>,
    reason: &str,
) -> Result<SideBranch, ImportError> {
    let stem = match request.refname.strip_prefix("refs/heads/") {
        Some(branch) => format!("{branch}-run-{}", request.run_id.trim_start_matches("run-")),
        None => format!("slipway/run-{}", request.run_id.trim_start_matches("run-")),
    };
    let message = format!("slipway: run {} (kept aside)", request.run_id);
    let common = super::canonical(host.commondir());
    let mut name = stem.clone();
    for n in 2.. {
        let created = super::host_write::update_ref(
            host,
            &common,
            request.run_id,
            &format!("refs/heads/{name}"),
            None,
            Some(request.tip),
            &message,
        );
        match created {
            Ok(()) => break,
            // Taken already (or its lock is): the next name.
            Err(
                super::host_write::RefError::Moved { .. } | super::host_write::RefError::Lock(_),
            ) if n < 100 => name = format!("{stem}-{n}"),
            Err(e) => return Err(git2::Error::from_str(&e.to_string()).into()),
        }
    }
    Ok(SideBranch {
        name,
        reason: reason.to_owned(),
    })
}

/// Copies every object reachable from `tip` that the host lacks from the
/// private store into the host's, checking each against its id. Returns how
/// many were written.
pub fn copy_objects(
    host: &Repository,
    private_objects: &Path,
    tip: Oid,
) -> Result<usize, ImportError> {
    let host_odb = host.odb()?;
    if host_odb.exists(tip) {
        return Ok(0);
    }
    let private = Odb::new()?;
    let path = private_objects
        .to_str()
        .ok_or_else(|| git2::Error::from_str("the private objects folder is not a UTF-8 path"))?;
    private.add_disk_alternate(path)?;

    let mut pack = super::pack_out::PackOut::default();
    let mut written = 0usize;
    let mut seen: HashSet<Oid> = HashSet::new();
    // Plain blobs are most of an import and need nothing from each other:
    // they are read, hashed and compressed on several threads after the walk.
    let mut blobs: Vec<Oid> = Vec::new();
    let mut todo = vec![Link::to(tip)];
    loop {
        while let Some(Link {
            id,
            blob,
            gitmodules,
        }) = todo.pop()
        {
            if !seen.insert(id) {
                continue;
            }
            if host_odb.exists(id) {
                // A `.gitmodules` a new tree names is checked even when the blob
                // is old: the new tree gives it the name git acts on.
                if gitmodules {
                    check_gitmodules_blob(&host_odb, id)?;
                }
                continue;
            }
            if blob && !gitmodules {
                blobs.push(id);
                continue;
            }
            if gitmodules {
                // Refused before it is read whole.
                check_gitmodules_size(&private, id)?;
            }
            let object = private.read(id).map_err(|_| ImportError::Missing { id })?;
            let kind = object.kind();
            let data = object.data();
            let actual = Oid::hash_object(kind, data)?;
            if actual != id {
                return Err(ImportError::Mismatch { id, actual });
            }
            match kind {
                ObjectType::Commit => {
                    let (tree, parents) = super::fsck::check_commit(id, data)?;
                    todo.push(Link::to(tree));
                    todo.extend(parents.into_iter().map(Link::to));
                }
                ObjectType::Tree => {
                    for entry in super::fsck::check_tree(id, data)? {
                        // Submodule commits are not objects of this repository.
                        if !entry.is_gitlink() {
                            todo.push(Link {
                                id: entry.id,
                                blob: entry.is_blob(),
                                gitmodules: entry.gitmodules,
                            });
                        }
                    }
                }
                ObjectType::Tag => todo.push(Link::to(super::fsck::check_tag(id, data)?)),
                ObjectType::Blob if gitmodules => super::fsck::check_gitmodules(id, data)?,
                _ => {}
            }
            if data.len() > PACK_OBJECT_LIMIT {
                // One loose object: the pack would hold it in memory twice.
                host_odb.write(kind, data)?;
            } else {
                pack.push(kind, data)?;
            }
            written += 1;
        }
        for blob in read_blobs(path, &std::mem::take(&mut blobs))? {
            match blob {
                BlobRead::Packed(entry) => pack.push_encoded(entry)?,
                BlobRead::NotBlob(id) => {
                    // A tree calls it a blob; it is walked and checked as what it is.
                    seen.remove(&id);
                    todo.push(Link::to(id));
                    continue;
                }
                BlobRead::Big(id) => {
                    if !stream_big_blob(&private, &host_odb, id)? {
                        let object = private.read(id).map_err(|_| ImportError::Missing { id })?;
                        let actual = Oid::hash_object(object.kind(), object.data())?;
                        if actual != id {
                            return Err(ImportError::Mismatch { id, actual });
                        }
                        host_odb.write(object.kind(), object.data())?;
                    }
                }
            }
            written += 1;
        }
        if todo.is_empty() {
            break;
        }
    }
    pack.write_into(&host_odb)?;
    host_odb.refresh()?;
    if !host_odb.exists(tip) {
        return Err(ImportError::Missing { id: tip });
    }
    Ok(written)
}

/// A blob the walk found, read on a worker thread.
enum BlobRead {
    /// Checked against its id and compressed as a pack entry.
    Packed(super::pack_out::Encoded),
    /// Larger than [`PACK_OBJECT_LIMIT`]: copied afterwards by a stream.
    Big(Oid),
    /// Not a blob whatever the tree says: read again as what it is.
    NotBlob(Oid),
}

/// Reads, hashes and compresses `ids` (blobs, as their trees name them) on a
/// few threads, each with its own handle on the private store at `objects`.
fn read_blobs(objects: &str, ids: &[Oid]) -> Result<Vec<BlobRead>, ImportError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    crate::parallel::map_runs(
        ids,
        || {
            let odb = Odb::new()?;
            odb.add_disk_alternate(objects)?;
            Ok::<_, ImportError>((odb, super::pack_out::Encoder::default()))
        },
        |(odb, encoder), &id| {
            match odb.read_header(id) {
                Ok((size, ObjectType::Blob)) if size > PACK_OBJECT_LIMIT => {
                    return Ok(BlobRead::Big(id));
                }
                Ok((_, ObjectType::Blob)) => {}
                Ok(_) => return Ok(BlobRead::NotBlob(id)),
                Err(_) => return Err(ImportError::Missing { id }),
            }
            let object = odb.read(id).map_err(|_| ImportError::Missing { id })?;
            let actual = Oid::hash_object(object.kind(), object.data())?;
            if actual != id {
                return Err(ImportError::Mismatch { id, actual });
            }
            Ok(BlobRead::Packed(
                encoder.encode(object.kind(), object.data())?,
            ))
        },
    )
}

/// Checks a `.gitmodules` blob the host already holds (see [`copy_objects`]).
fn check_gitmodules_blob(odb: &Odb<'_>, id: Oid) -> Result<(), ImportError> {
    check_gitmodules_size(odb, id)?;
    let object = odb.read(id)?;
    super::fsck::check_gitmodules(id, object.data())?;
    Ok(())
}

/// A `.gitmodules` entry must name a blob small enough to check.
fn check_gitmodules_size(odb: &Odb<'_>, id: Oid) -> Result<(), ImportError> {
    let Ok(header) = odb.read_header(id) else {
        return Err(ImportError::Missing { id });
    };
    match header {
        (size, ObjectType::Blob) if size <= super::fsck::GITMODULES_LIMIT => Ok(()),
        (size, ObjectType::Blob) => Err(super::fsck::Violation {
            object: id,
            kind: "blob",
            rule: super::fsck::Rule::GitmodulesLarge,
            detail: format!("{size} bytes"),
        }
        .into()),
        _ => Err(super::fsck::Violation {
            object: id,
            kind: "blob",
            rule: super::fsck::Rule::GitmodulesBlob,
            detail: "a .gitmodules entry that names no blob".to_owned(),
        }
        .into()),
    }
}

/// Copies a blob larger than [`PACK_OBJECT_LIMIT`] through a stream, never
/// whole in memory: libgit2 hashes what it writes, and the id it gives back
/// must be the one asked for. `false` when `id` is no such blob, or the
/// private store cannot stream it (packed objects): the caller reads it whole.
fn stream_big_blob(private: &Odb<'_>, host_odb: &Odb<'_>, id: Oid) -> Result<bool, ImportError> {
    use std::io::{Read, Write};
    match private.read_header(id) {
        Ok((size, ObjectType::Blob)) if size > PACK_OBJECT_LIMIT => {}
        _ => return Ok(false),
    }
    let Ok((mut reader, size, kind)) = private.reader(id) else {
        return Ok(false);
    };
    let io = |e: std::io::Error| git2::Error::from_str(&format!("cannot copy object {id}: {e}"));
    let mut writer = host_odb.writer(size, kind)?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = reader.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        writer.write_all(&buf[..n]).map_err(io)?;
    }
    // libgit2 refuses to finish a stream shorter or longer than declared. A
    // blob whose bytes hash to another id lands under that id, unreferenced
    // (harmless); the import is refused either way.
    let actual = writer.finalize()?;
    if actual != id {
        return Err(ImportError::Mismatch { id, actual });
    }
    Ok(true)
}

/// An object another one names: whether a tree names it as a blob, and as
/// a `.gitmodules` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Link {
    id: Oid,
    blob: bool,
    gitmodules: bool,
}

impl Link {
    fn to(id: Oid) -> Link {
        Link {
            id,
            blob: false,
            gitmodules: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bare private store holding one commit whose tree has `blob` as `big.bin`.
    fn private_with(dir: &Path, blob: &[u8]) -> (Repository, Oid, Oid) {
        let repo = Repository::init_bare(dir).expect("private store");
        let blob_id = repo.blob(blob).expect("blob");
        let commit = {
            let mut builder = repo.treebuilder(None).expect("tree");
            builder.insert("big.bin", blob_id, 0o100644).expect("entry");
            let tree = repo
                .find_tree(builder.write().expect("tree"))
                .expect("tree");
            let sig = git2::Signature::now("agent", "agent@slipway.invalid").expect("sig");
            repo.commit(None, &sig, &sig, "big", &tree, &[])
                .expect("commit")
        };
        (repo, commit, blob_id)
    }

    fn big_blob(seed: u8) -> Vec<u8> {
        (0..PACK_OBJECT_LIMIT + (3 << 20))
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    #[test]
    fn a_blob_over_the_pack_limit_is_streamed_in_and_checked() {
        let dir = tempfile::tempdir().expect("temp dir");
        let blob = big_blob(7);
        let (_private, commit, blob_id) = private_with(&dir.path().join("private"), &blob);
        let host = Repository::init_bare(dir.path().join("host")).expect("host");
        let written =
            copy_objects(&host, &dir.path().join("private/objects"), commit).expect("import");
        assert_eq!(written, 3, "commit, tree and the big blob");
        assert_eq!(
            host.find_blob(blob_id).expect("imported").content(),
            &blob[..]
        );
        // It went through the stream, not a whole read.
        let private = Odb::new().expect("odb");
        private
            .add_disk_alternate(dir.path().join("private/objects").to_str().expect("utf8"))
            .expect("alternate");
        let fresh = Repository::init_bare(dir.path().join("fresh")).expect("fresh host");
        assert!(stream_big_blob(&private, &fresh.odb().expect("odb"), blob_id).expect("streams"));
    }

    #[test]
    fn a_big_blob_whose_bytes_are_another_blobs_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (_private, commit, blob_id) = private_with(&dir.path().join("private"), &big_blob(7));
        // Another blob's loose file put where this blob's is: same id, other bytes.
        let other = Repository::init_bare(dir.path().join("other")).expect("other");
        let other_id = other.blob(&big_blob(9)).expect("blob");
        let loose = |root: &Path, id: Oid| {
            let hex = id.to_string();
            root.join("objects").join(&hex[..2]).join(&hex[2..])
        };
        let target = loose(&dir.path().join("private"), blob_id);
        let mut perms = std::fs::metadata(&target).expect("loose").permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(&target, perms).expect("writable");
        std::fs::copy(loose(&dir.path().join("other"), other_id), &target).expect("swap");
        let host = Repository::init_bare(dir.path().join("host")).expect("host");
        let err =
            copy_objects(&host, &dir.path().join("private/objects"), commit).expect_err("refused");
        assert!(
            matches!(err, ImportError::Mismatch { id, .. } if id == blob_id),
            "{err}"
        );
    }
}
