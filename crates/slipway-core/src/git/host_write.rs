//! Writing into the user's checkout, index and refs so that a `kill -9` at
//! any moment leaves them as they were or as the operation meant them
//! (DESIGN §2 "Git safety" 8).
//!
//! - **Locks slipway can tell are its own.** git's lock protocol (create
//!   `<file>.lock` exclusively, write it, rename it over `<file>`) is kept, so
//!   the user's git and slipway exclude each other; but slipway's lock is a
//!   hard link of a token file under `<common dir>/slipway-locks/`, named
//!   after the operation. A lock left by a killed slipway is the token's
//!   inode: recovery removes it. A lock that is not (the user's git is
//!   working, or crashed) is reported and never removed.
//! - **Files by rename.** Each file is written under a temporary name in its
//!   folder (`.slipway-<token>-<n>`) and renamed over the path, so a path is
//!   always the old file or the new one, never a partly written one; what a
//!   kill leaves under a temporary name is removed by recovery.
//! - **A plan journaled first.** Every path with the content it had and the
//!   content it gets (the blob, and the bytes a checkout writes for it after
//!   line-ending filters), and the folders the write makes: recovery puts
//!   each path back to exactly its prior bytes and mode unless the ref moved
//!   (then the write was complete), and leaves a path that is neither (the
//!   user changed it since).
//! - **Every path checked.** A path whose component git refuses (`.git` in
//!   any spelling, `..`, an empty name) is never written, and nothing is
//!   followed through a symlink: writes go through [`crate::nofollow`].

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository};
use serde::{Deserialize, Serialize};

use crate::nofollow::{Dir, Kind};

/// Where the token files of slipway's git locks live.
pub fn tokens_dir(common_dir: &Path) -> PathBuf {
    common_dir.join("slipway-locks")
}

/// A new token for one operation's locks and temporary files.
pub fn new_token() -> String {
    crate::util::random_hex(6)
}

fn lock_path(target: &Path) -> PathBuf {
    let mut name = target.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Why a lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Someone else holds it (the user's git, or a git that crashed).
    #[error(
        "{} exists: another git process is working in this repository (or one crashed and left it); nothing was changed",
        lock.display()
    )]
    Busy { lock: PathBuf },
    /// The filesystem refused.
    #[error("cannot take the lock {}: {source}", lock.display())]
    Io {
        lock: PathBuf,
        source: std::io::Error,
    },
}

/// A git lock (`<file>.lock`) that slipway holds and can recognise later.
#[derive(Debug)]
pub struct OwnedLock {
    lock: PathBuf,
    token: PathBuf,
    file: File,
}

impl OwnedLock {
    /// Takes `<target>.lock` as a hard link of the token file `token`
    /// (`<tokens dir>/<name>`), which first records where the lock is.
    pub fn take(target: &Path, tokens: &Path, name: &str) -> Result<OwnedLock, LockError> {
        let lock = lock_path(target);
        let token = tokens.join(name);
        let io = |source| LockError::Io {
            lock: lock.clone(),
            source,
        };
        std::fs::create_dir_all(tokens).map_err(io)?;
        if let Some(parent) = lock.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        // Where the lock is, for a recovery that finds only the token.
        let note = tokens.join(format!("{name}.lockpath"));
        std::fs::write(&note, lock.as_os_str().as_bytes()).map_err(io)?;
        remove_if_there(&token).map_err(io)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&token)
            .map_err(io)?;
        match std::fs::hard_link(&token, &lock) {
            Ok(()) => Ok(OwnedLock { lock, token, file }),
            Err(e) => {
                let cleaned = remove_if_there(&token).and_then(|()| remove_if_there(&note));
                if let Err(c) = cleaned {
                    tracing::warn!("cannot remove {}: {c}", token.display());
                }
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    Err(LockError::Busy { lock })
                } else {
                    Err(io(e))
                }
            }
        }
    }

    /// Writes the new content of the locked file (durably).
    pub fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.file.set_len(0)?;
        self.file.write_all(bytes)?;
        self.file.sync_all()
    }

    /// Puts the new content in place (renames the lock over `target`).
    pub fn commit(self, target: &Path) -> std::io::Result<()> {
        std::fs::rename(&self.lock, target)?;
        self.forget_token()
    }

    /// Gives the lock up without changing the locked file.
    pub fn release(self) -> std::io::Result<()> {
        remove_if_there(&self.lock)?;
        self.forget_token()
    }

    fn forget_token(&self) -> std::io::Result<()> {
        remove_if_there(&self.token)?;
        let mut note = self.token.as_os_str().to_owned();
        note.push(".lockpath");
        remove_if_there(Path::new(&note))
    }
}

fn remove_if_there(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Removes what an operation of `token` that died left under `common_dir`:
/// its locks (only those that are its token's inode), token files and
/// scratch files. Returns what was left for people to look at.
pub fn settle_token(common_dir: &Path, token: &str) -> Vec<String> {
    let tokens = tokens_dir(common_dir);
    let mut notes = Vec::new();
    let Ok(entries) = std::fs::read_dir(&tokens) else {
        return notes;
    };
    let mine: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(OsStr::to_str)
                .is_some_and(|n| n.starts_with(&format!("{token}-")))
        })
        .collect();
    for note in mine
        .iter()
        .filter(|p| p.extension() == Some(OsStr::new("lockpath")))
    {
        let token_file = note.with_extension("");
        let Ok(bytes) = std::fs::read(note) else {
            continue;
        };
        let lock = PathBuf::from(OsStr::from_bytes(&bytes));
        // Only a lock in this repository's git dir is ever looked at.
        if !lock.starts_with(common_dir) || lock.extension() != Some(OsStr::new("lock")) {
            notes.push(format!(
                "{} names no lock of this repository; left",
                note.display()
            ));
            continue;
        }
        match (lock.symlink_metadata(), token_file.symlink_metadata()) {
            (Ok(l), Ok(t)) if l.ino() == t.ino() && l.dev() == t.dev() => {
                if let Err(e) = remove_if_there(&lock) {
                    notes.push(format!(
                        "cannot remove slipway's lock {}: {e}",
                        lock.display()
                    ));
                }
            }
            (Ok(_), _) => notes.push(format!(
                "{} is not slipway's (another git process holds it, or one crashed); it was left",
                lock.display()
            )),
            _ => {}
        }
    }
    for path in mine {
        if let Err(e) = remove_if_there(&path) {
            notes.push(format!("cannot remove {}: {e}", path.display()));
        }
    }
    notes
}

// ---------------------------------------------------------------- refs

/// Why a ref was not moved.
#[derive(Debug, thiserror::Error)]
pub enum RefError {
    /// It is not at the value the caller expected (the user moved it).
    #[error("{refname} moved meanwhile")]
    Moved { refname: String },
    /// Its lock is held by someone else.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// A name git refuses.
    #[error("'{0}' is not a ref name git accepts")]
    Invalid(String),
    /// The filesystem refused.
    #[error("cannot write {refname}: {source}")]
    Io {
        refname: String,
        source: std::io::Error,
    },
    /// libgit2 failed.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
}

/// Moves `refname` (a loose ref under `common_dir`, or `HEAD`) from
/// `expect` to `new` by compare-and-swap under an owned lock: `expect` of
/// `None` creates it, `new` of `None` deletes it. Writes the reflog as git
/// does.
pub fn update_ref(
    repo: &Repository,
    common_dir: &Path,
    token: &str,
    refname: &str,
    expect: Option<Oid>,
    new: Option<Oid>,
    message: &str,
) -> Result<(), RefError> {
    if refname != "HEAD"
        && !(refname.starts_with("refs/") && git2::Reference::is_valid_name(refname))
    {
        return Err(RefError::Invalid(refname.to_owned()));
    }
    let tokens = tokens_dir(common_dir);
    let target = common_dir.join(refname);
    let io = |source| RefError::Io {
        refname: refname.to_owned(),
        source,
    };
    let mut lock = OwnedLock::take(&target, &tokens, &format!("{token}-ref"))?;
    crate::testhook::point("hostwrite");
    let current = current_value(repo, refname);
    if current != expect {
        lock.release().map_err(io)?;
        return Err(RefError::Moved {
            refname: refname.to_owned(),
        });
    }
    match new {
        Some(new) => {
            lock.write_all(format!("{new}\n").as_bytes()).map_err(io)?;
            append_reflog(repo, common_dir, refname, expect, new, message).map_err(io)?;
            crate::testhook::point("hostwrite");
            lock.commit(&target).map_err(io)?;
        }
        None => {
            drop_packed(common_dir, &tokens, token, refname).map_err(io)?;
            crate::testhook::point("hostwrite");
            remove_if_there(&target).map_err(io)?;
            remove_if_there(&common_dir.join("logs").join(refname)).map_err(io)?;
            lock.release().map_err(io)?;
        }
    }
    crate::testhook::point("hostwrite");
    Ok(())
}

/// A ref's value now: a direct ref's target (a symbolic `HEAD` has none).
pub fn current_value(repo: &Repository, refname: &str) -> Option<Oid> {
    let reference = repo.find_reference(refname).ok()?;
    if reference.symbolic_target().ok().flatten().is_some() {
        return None;
    }
    reference.target()
}

/// Rewrites `packed-refs` without `refname` (under an owned lock), when it holds it.
fn drop_packed(
    common_dir: &Path,
    tokens: &Path,
    token: &str,
    refname: &str,
) -> std::io::Result<()> {
    let packed = common_dir.join("packed-refs");
    let Ok(text) = std::fs::read(&packed) else {
        return Ok(());
    };
    let mut out = Vec::with_capacity(text.len());
    let mut dropping = false;
    let mut found = false;
    for line in text.split_inclusive(|&b| b == b'\n') {
        if line.starts_with(b"^") {
            if !dropping {
                out.extend_from_slice(line);
            }
            continue;
        }
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        dropping = body.len() > 41 && &body[41..] == refname.as_bytes();
        found |= dropping;
        if !dropping {
            out.extend_from_slice(line);
        }
    }
    if !found {
        return Ok(());
    }
    let mut lock = OwnedLock::take(&packed, tokens, &format!("{token}-packed"))
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    lock.write_all(&out)?;
    lock.commit(&packed)
}

/// Appends the reflog line git writes for a ref update (and HEAD's, when
/// HEAD points at the ref), where git keeps reflogs.
fn append_reflog(
    repo: &Repository,
    common_dir: &Path,
    refname: &str,
    old: Option<Oid>,
    new: Oid,
    message: &str,
) -> std::io::Result<()> {
    let log_all = repo
        .config()
        .and_then(|c| c.get_bool("core.logAllRefUpdates"))
        .unwrap_or(true);
    let sig = repo
        .signature()
        .or_else(|_| git2::Signature::now("slipway", "slipway@localhost"))
        .map_err(std::io::Error::other)?;
    let when = sig.when();
    let offset = when.offset_minutes();
    let line = format!(
        "{} {new} {} <{}> {} {}{:02}{:02}\t{}\n",
        old.unwrap_or(Oid::ZERO_SHA1),
        sig.name().unwrap_or("slipway"),
        sig.email().unwrap_or("slipway@localhost"),
        when.seconds(),
        if offset < 0 { '-' } else { '+' },
        offset.abs() / 60,
        offset.abs() % 60,
        message.lines().next().unwrap_or_default()
    );
    let mut logs = vec![common_dir.join("logs").join(refname)];
    let head_points_here = repo
        .find_reference("HEAD")
        .ok()
        .and_then(|h| h.symbolic_target().ok().flatten().map(str::to_owned))
        .as_deref()
        == Some(refname);
    if head_points_here {
        logs.push(common_dir.join("logs/HEAD"));
    }
    for log in logs {
        let wanted =
            log.exists() || (log_all && (refname.starts_with("refs/heads/") || refname == "HEAD"));
        if !wanted {
            continue;
        }
        if let Some(parent) = log.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let mut file = OpenOptions::new().create(true).append(true).open(&log)?;
        file.write_all(line.as_bytes())?;
    }
    Ok(())
}

// ---------------------------------------------------------------- index

/// Why an index was not updated.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// Its lock is held by someone else.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The caller's check of the index refused it.
    #[error("{0}")]
    Refused(String),
    /// The filesystem refused.
    #[error("cannot write the index {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// libgit2 failed.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
}

/// Edits the index at `index_path` under an owned lock: `edit` gets it as
/// it is under the lock (what the user staged a moment ago included) and
/// may refuse; libgit2 writes the result into a scratch file, whose bytes
/// become the new index.
pub fn update_index(
    common_dir: &Path,
    token: &str,
    index_path: &Path,
    edit: impl FnOnce(&mut git2::Index) -> Result<(), String>,
) -> Result<(), IndexError> {
    let tokens = tokens_dir(common_dir);
    let io = |source| IndexError::Io {
        path: index_path.to_path_buf(),
        source,
    };
    let mut lock = OwnedLock::take(index_path, &tokens, &format!("{token}-index"))?;
    crate::testhook::point("hostwrite");
    let scratch = tokens.join(format!("{token}-index.scratch"));
    let edited = (|| -> Result<Vec<u8>, IndexError> {
        remove_if_there(&scratch).map_err(io)?;
        if index_path.is_file() {
            std::fs::copy(index_path, &scratch).map_err(io)?;
        }
        let mut index = git2::Index::open(&scratch)?;
        edit(&mut index).map_err(IndexError::Refused)?;
        index.write()?;
        let mut bytes = Vec::new();
        File::open(&scratch)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map_err(io)?;
        Ok(bytes)
    })();
    let cleaned = remove_if_there(&scratch);
    let bytes = match edited {
        Ok(bytes) => bytes,
        Err(e) => {
            lock.release().map_err(io)?;
            return Err(e);
        }
    };
    cleaned.map_err(io)?;
    lock.write_all(&bytes).map_err(io)?;
    crate::testhook::point("hostwrite");
    lock.commit(index_path).map_err(io)?;
    Ok(())
}

/// An index entry for `path` holding `id` with `mode`, with the stat data
/// of the file at `on_disk` when there is one (so `git status` need not
/// read it again).
pub fn index_entry(
    path: &str,
    id: Oid,
    mode: u32,
    on_disk: Option<&std::fs::Metadata>,
) -> git2::IndexEntry {
    let time = |s: i64, ns: i64| git2::IndexTime::new(s as i32, ns as u32);
    let (ctime, mtime, dev, ino, uid, gid, size) = match on_disk {
        Some(m) => (
            time(m.ctime(), m.ctime_nsec()),
            time(m.mtime(), m.mtime_nsec()),
            m.dev() as u32,
            m.ino() as u32,
            m.uid(),
            m.gid(),
            m.size() as u32,
        ),
        None => (time(0, 0), time(0, 0), 0, 0, 0, 0, 0),
    };
    git2::IndexEntry {
        ctime,
        mtime,
        dev,
        ino,
        mode,
        uid,
        gid,
        file_size: size,
        id,
        flags: 0,
        flags_extended: 0,
        path: path.as_bytes().to_vec(),
    }
}

// ---------------------------------------------------------------- files

/// What a path holds on one side of a write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Content {
    /// The tree entry's object (a blob, or a submodule's commit).
    pub id: String,
    /// Its mode (`100644`, `100755`, `120000`, `160000`) in octal as a number.
    pub mode: u32,
    /// The id of the bytes a checkout writes for it (after line-ending
    /// filters); empty for a submodule.
    pub disk: String,
}

/// One path a write changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PathWrite {
    /// The path, relative to the checkout, `/`-separated.
    pub path: String,
    /// What it held (`None`: nothing).
    pub before: Option<Content>,
    /// What it gets (`None`: it goes).
    pub after: Option<Content>,
}

/// Why a planned write cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// A path git would refuse to check out.
    #[error("the path {path:?} is not one git would write ({why}); nothing was changed")]
    UnsafePath { path: String, why: String },
    /// libgit2 failed.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
}

/// Checks every component of `path` as git's `verify_path` does.
pub fn check_path(path: &str, symlink: bool) -> Result<(), PlanError> {
    let parts: Vec<&str> = path.split('/').collect();
    for (n, part) in parts.iter().enumerate() {
        let last = n + 1 == parts.len();
        crate::git::fsck::check_name(part.as_bytes(), symlink && last).map_err(|rule| {
            PlanError::UnsafePath {
                path: path.to_owned(),
                why: rule.name().to_owned(),
            }
        })?;
    }
    Ok(())
}

/// The bytes a checkout writes for `id` at `path` (filters as libgit2's
/// checkout applies them, attributes read from `commit`).
fn checkout_bytes(
    repo: &Repository,
    path: &str,
    id: Oid,
    mode: u32,
    commit: Oid,
) -> Result<Vec<u8>, git2::Error> {
    let blob = repo.find_blob(id)?;
    if mode == 0o120000 {
        return Ok(blob.content().to_vec());
    }
    crate::git::checkout::filtered(&blob, path.as_bytes(), commit)
}

/// What `path` holds in `tree` of `commit`, with the bytes a checkout writes.
pub fn content_in(
    repo: &Repository,
    commit: Oid,
    path: &str,
) -> Result<Option<Content>, PlanError> {
    let tree = repo.find_commit(commit)?.tree()?;
    let Ok(entry) = tree.get_path(Path::new(path)) else {
        return Ok(None);
    };
    let mode = entry.filemode() as u32;
    if mode == 0o40000 {
        // A folder on this side: its files are paths of their own.
        return Ok(None);
    }
    check_path(path, mode == 0o120000)?;
    let disk = if mode == 0o160000 {
        String::new()
    } else {
        let bytes = checkout_bytes(repo, path, entry.id(), mode, commit)?;
        Oid::hash_object(git2::ObjectType::Blob, &bytes)?.to_string()
    };
    Ok(Some(Content {
        id: entry.id().to_string(),
        mode,
        disk,
    }))
}

/// What is at `path` under `root` now, read without following a symlink:
/// the id of its bytes (a symlink's target) and its mode, `160000`-like
/// `040000` for a folder; `None` when nothing is there.
fn on_disk(root: &Dir, path: &str) -> Option<(String, u32)> {
    let rel = Path::new(path);
    let (parent, name) = (rel.parent()?, rel.file_name()?);
    let dir = root.open_dir_or_self(parent).ok()?;
    let mode = dir.mode_of(name).ok()??;
    match mode & libc::S_IFMT {
        libc::S_IFDIR => Some((String::new(), 0o40000)),
        libc::S_IFLNK => {
            let target = dir.read_link(Path::new(name)).ok()?;
            let id =
                Oid::hash_object(git2::ObjectType::Blob, target.as_os_str().as_bytes()).ok()?;
            Some((id.to_string(), 0o120000))
        }
        libc::S_IFREG => {
            let mut file = dir.open_file(Path::new(name)).ok()?;
            let size = file.metadata().ok()?.len();
            let mut hasher = sha1_smol::Sha1::new();
            hasher.update(format!("blob {size}\0").as_bytes());
            let mut buf = vec![0u8; 64 << 10];
            loop {
                let n = file.read(&mut buf).ok()?;
                if n == 0 {
                    break;
                }
                hasher.update(&buf[..n]);
            }
            let exec = if mode & 0o111 != 0 {
                0o100755
            } else {
                0o100644
            };
            Some((hasher.digest().to_string(), exec))
        }
        _ => Some((String::new(), 0)),
    }
}

/// Whether what is on disk is `side`.
fn holds(now: &Option<(String, u32)>, side: &Option<Content>) -> bool {
    match (now, side) {
        (None, None) => true,
        (Some((_, 0o40000)), Some(c)) => c.mode == 0o160000,
        (Some((id, mode)), Some(c)) => c.mode != 0o160000 && *id == c.disk && *mode == c.mode,
        _ => false,
    }
}

/// The folders writing `writes` makes (those missing now), outermost first.
pub fn folders_to_make(root: &Path, writes: &[PathWrite]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in writes.iter().filter(|w| w.after.is_some()) {
        let mut at = String::new();
        let parts: Vec<&str> = w.path.split('/').collect();
        let folders = match &w.after {
            // A submodule's folder is made too.
            Some(c) if c.mode == 0o160000 => &parts[..],
            _ => &parts[..parts.len() - 1],
        };
        for part in folders {
            if !at.is_empty() {
                at.push('/');
            }
            at.push_str(part);
            if root.join(&at).symlink_metadata().is_err() && !out.contains(&at) {
                out.push(at.clone());
            }
        }
    }
    out
}

/// Makes the paths of `writes` hold `after` (or, with `back`, `before`):
/// files by a temporary name and a rename, folders on the way made, a path
/// that goes removed with the folders it leaves empty. `commit` is where the
/// side's attributes come from. Stops at the first failure.
pub fn write_paths(
    repo: &Repository,
    root: &Path,
    token: &str,
    writes: &[PathWrite],
    commit: Oid,
    back: bool,
) -> std::io::Result<()> {
    let root_dir = Dir::open(root)?;
    let to_io = |e: git2::Error| std::io::Error::other(e.to_string());
    // Removals first: a file may take the place of a folder the write empties.
    let side_of = |w: &PathWrite| {
        if back {
            w.before.is_none()
        } else {
            w.after.is_none()
        }
    };
    let order = writes
        .iter()
        .enumerate()
        .filter(|(_, w)| side_of(w))
        .chain(writes.iter().enumerate().filter(|(_, w)| !side_of(w)));
    for (n, w) in order {
        let side = if back { &w.before } else { &w.after };
        let rel = Path::new(&w.path);
        let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
            continue;
        };
        match side {
            Some(c) if c.mode == 0o160000 => {
                root_dir.make_dirs(rel, false)?;
            }
            Some(c) => {
                let dir = if parent.as_os_str().is_empty() {
                    Dir::open(root)?
                } else {
                    root_dir.make_dirs(parent, false)?
                };
                let id = Oid::from_str(&c.id).map_err(to_io)?;
                let bytes = checkout_bytes(repo, &w.path, id, c.mode, commit).map_err(to_io)?;
                let temp = format!(".slipway-{token}-{n}");
                if c.mode == 0o120000 {
                    dir.symlink(Path::new(&temp), Path::new(OsStr::from_bytes(&bytes)))?;
                } else {
                    let mode = if c.mode == 0o100755 { 0o777 } else { 0o666 };
                    let mut file = dir.create_file(Path::new(&temp), mode)?;
                    file.write_all(&bytes)?;
                }
                if dir.kind_of(name)? == Some(Kind::Dir) {
                    // An empty folder where a file goes (a submodule's, say).
                    dir.remove_empty_dir(name)?;
                }
                dir.rename_within(OsStr::new(&temp), name)?;
            }
            None => {
                let Ok(dir) = root_dir.open_dir_or_self(parent) else {
                    continue;
                };
                match dir.kind_of(name)? {
                    Some(Kind::Dir) => {
                        dir.remove_empty_dir(name)?;
                    }
                    Some(_) => dir.unlink(name)?,
                    None => {}
                }
                remove_empty_parents(&root_dir, parent)?;
            }
        }
        crate::testhook::point("hostwrite");
    }
    Ok(())
}

/// Removes `folder` and the folders above it (below `root`) that are empty.
fn remove_empty_parents(root: &Dir, folder: &Path) -> std::io::Result<()> {
    let mut at = folder.to_path_buf();
    while let (Some(parent), Some(name)) = (at.parent().map(Path::to_path_buf), at.file_name()) {
        let Ok(dir) = root.open_dir_or_self(&parent) else {
            break;
        };
        if !dir.remove_empty_dir(name)? {
            break;
        }
        at = parent;
    }
    Ok(())
}

/// Puts every path of `writes` back to `before` wherever it holds `after`
/// (or nothing, where the write removed it): a kill leaves each path whole,
/// one side or the other. A path that holds neither changed since and is
/// left; it is returned. Temporary files of `token` and the folders in
/// `made` that are empty go.
pub fn put_back(
    repo: &Repository,
    root: &Path,
    token: &str,
    writes: &[PathWrite],
    made: &[String],
    ours: Oid,
) -> std::io::Result<Vec<String>> {
    let root_dir = Dir::open(root)?;
    let mut back = Vec::new();
    let mut left = Vec::new();
    for w in writes {
        let now = on_disk(&root_dir, &w.path);
        if holds(&now, &w.before) {
            continue;
        }
        if holds(&now, &w.after) || (now.is_none() && w.after.is_none()) {
            back.push(w.clone());
        } else {
            left.push(w.path.clone());
        }
    }
    write_paths(repo, root, &format!("{token}b"), &back, ours, true)?;
    remove_temporaries(&root_dir, token, writes)?;
    for folder in made.iter().rev() {
        let rel = Path::new(folder);
        if let (Some(parent), Some(name)) = (rel.parent(), rel.file_name())
            && let Ok(dir) = root_dir.open_dir_or_self(parent)
        {
            dir.remove_empty_dir(name)?;
        }
    }
    Ok(left)
}

/// Removes the temporary files (`.slipway-<token>-…`) of a write from the
/// folders of its paths.
fn remove_temporaries(root: &Dir, token: &str, writes: &[PathWrite]) -> std::io::Result<()> {
    let mut folders: Vec<&Path> = writes
        .iter()
        .filter_map(|w| Path::new(&w.path).parent())
        .collect();
    folders.sort();
    folders.dedup();
    let prefixes = [format!(".slipway-{token}-"), format!(".slipway-{token}b-")];
    for folder in folders {
        let Ok(dir) = root.open_dir_or_self(folder) else {
            continue;
        };
        for name in dir.entries()? {
            let text = name.to_string_lossy();
            if prefixes.iter().any(|p| text.starts_with(p.as_str())) {
                dir.remove_tree(&name)?;
            }
        }
    }
    Ok(())
}

/// Sets the index entries of `writes` to one side (`after`, or with `back`
/// `before`); an entry the user changed since is left as it is when
/// `only_if` (the other side) does not match it. Stat data comes from the
/// files under `root`.
pub fn set_index_entries(
    index: &mut git2::Index,
    root: &Path,
    writes: &[PathWrite],
    back: bool,
    only_from_other_side: bool,
) -> Result<(), String> {
    for w in writes {
        let (side, other) = if back {
            (&w.before, &w.after)
        } else {
            (&w.after, &w.before)
        };
        let path = Path::new(&w.path);
        let entry = index.get_path(path, 0).map(|e| (e.id.to_string(), e.mode));
        if only_from_other_side {
            let other_key = other.as_ref().map(|c| (c.id.clone(), c.mode));
            if entry != other_key {
                continue;
            }
        }
        match side {
            Some(c) => {
                let id = Oid::from_str(&c.id).map_err(|e| e.to_string())?;
                let meta = root.join(path).symlink_metadata().ok();
                index
                    .add(&index_entry(&w.path, id, c.mode, meta.as_ref()))
                    .map_err(|e| e.to_string())?;
            }
            None => {
                if entry.is_some() {
                    index.remove_path(path).map_err(|e| e.to_string())?;
                }
            }
        }
    }
    Ok(())
}
