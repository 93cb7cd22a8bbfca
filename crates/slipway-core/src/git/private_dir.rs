//! The private git dir of a run (DESIGN §2 "Sandboxes and the run's private
//! git state"): the only git dir an agent's git writes. slipway makes it
//! before the agent starts and only reads it after the agent is gone.
//!
//! It holds `HEAD` on the run's branch, the host's refs copied at start
//! (`packed-refs`, symbolic refs as loose files), the checkout's index, a
//! `config` of the format version and extensions alone, `info/exclude` from
//! the host, and an `objects/` whose only link to the host is
//! `objects/info/alternates`: the host's object store, which the agent reads
//! and never writes. No hooks, no `commondir`, no `modules`, no `shallow`.
//!
//! Everything here is written and read through [`crate::nofollow`], since a
//! previous run in a long-lived sandbox may have left symlinks anywhere in it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository};
use serde::{Deserialize, Serialize};

use crate::nofollow::{Dir, Kind};

/// Where the agent's `HEAD` points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrivateHead {
    /// On a local branch (short name).
    Branch(String),
    /// Detached at a commit (a `head` run on a detached host).
    Detached(Oid),
}

impl PrivateHead {
    /// The full ref the run's work is read from (`HEAD` when detached).
    pub fn refname(&self) -> String {
        match self {
            PrivateHead::Branch(b) => format!("refs/heads/{b}"),
            PrivateHead::Detached(_) => "HEAD".to_owned(),
        }
    }
}

/// A ref's value: a commit or another ref.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RefValue {
    /// Points at an object.
    Direct(String),
    /// Points at another ref.
    Symbolic(String),
}

/// A ref the agent changed privately, other than its branch: reported, never
/// carried to the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IgnoredRef {
    /// Full ref name.
    pub name: String,
    /// Its value when the run started (`None`: it did not exist).
    pub before: Option<String>,
    /// Its value in the private dir at the end (`None`: deleted).
    pub after: Option<String>,
}

/// A private git dir on the host.
#[derive(Debug, Clone)]
pub struct PrivateGitDir {
    path: PathBuf,
    head: PrivateHead,
    /// The refs as written at start, to tell what the agent changed.
    written: BTreeMap<String, RefValue>,
}

/// Making or reading a private git dir failed.
#[derive(Debug, thiserror::Error)]
pub enum PrivateDirError {
    /// The filesystem refused.
    #[error("the run's private git dir {}: {what}: {source}", path.display())]
    Io {
        path: PathBuf,
        what: &'static str,
        source: std::io::Error,
    },
    /// libgit2 failed reading the host.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
}

/// Refs larger than this are not refs.
const REF_FILE_LIMIT: u64 = 4096;
/// `packed-refs` larger than this is not read (it would be a million refs).
const PACKED_REFS_LIMIT: u64 = 512 << 20;

impl PrivateGitDir {
    /// Makes (or resets) the private git dir at `path` for a run of the host
    /// repository `host`: `HEAD` as `head`, the host's refs, `index` copied
    /// from `index_from` (when it exists), and `alternates` as the path the
    /// agent will see the host's object store at.
    ///
    /// A reset keeps `objects/` (objects are only ever read by hash) and
    /// replaces everything else, whatever a previous run left there.
    pub fn prepare(
        path: &Path,
        host: &Repository,
        head: PrivateHead,
        index_from: Option<&Path>,
        alternates: &Path,
    ) -> Result<PrivateGitDir, PrivateDirError> {
        let io = |what: &'static str| {
            let path = path.to_path_buf();
            move |source| PrivateDirError::Io { path, what, source }
        };
        std::fs::create_dir_all(path).map_err(io("cannot create it"))?;
        let dir = Dir::open(path).map_err(io("cannot open it"))?;
        for name in dir.entries().map_err(io("cannot list it"))? {
            if name == "objects" && dir.kind_of(&name).ok().flatten() == Some(Kind::Dir) {
                continue;
            }
            dir.remove_tree(&name).map_err(io("cannot clear it"))?;
        }
        let objects = dir
            .make_dirs(Path::new("objects"), true)
            .map_err(io("cannot make objects/"))?;
        // Only slipway's own link to the host store stays; a commit-graph or
        // multi-pack index from a previous run could lie about objects.
        if let Ok(info) = objects.open_dir(Path::new("info")) {
            for name in info.entries().map_err(io("cannot list objects/info"))? {
                info.remove_tree(&name)
                    .map_err(io("cannot clear objects/info"))?;
            }
        }
        // The pack folder may hold a previous run's packs; a multi-pack index
        // there is dropped (git rebuilds it if it wants one).
        if objects.kind_of("pack".as_ref()).ok().flatten() == Some(Kind::Dir)
            && let Ok(pack) = objects.open_dir(Path::new("pack"))
        {
            for name in pack.entries().map_err(io("cannot list objects/pack"))? {
                let keep = name.to_string_lossy().ends_with(".pack")
                    || name.to_string_lossy().ends_with(".idx");
                if !keep || pack.kind_of(&name).ok().flatten() != Some(Kind::File) {
                    pack.remove_tree(&name)
                        .map_err(io("cannot clear objects/pack"))?;
                }
            }
        }
        let mut alt = alternates.as_os_str().as_encoded_bytes().to_vec();
        alt.push(b'\n');
        dir.write(Path::new("objects/info/alternates"), &alt, 0o644)
            .map_err(io("cannot write objects/info/alternates"))?;
        dir.make_dirs(Path::new("refs/heads"), true)
            .map_err(io("cannot make refs/"))?;
        dir.make_dirs(Path::new("refs/tags"), true)
            .map_err(io("cannot make refs/"))?;

        let head_text = match &head {
            PrivateHead::Branch(b) => format!("ref: refs/heads/{b}\n"),
            PrivateHead::Detached(oid) => format!("{oid}\n"),
        };
        dir.write(Path::new("HEAD"), head_text.as_bytes(), 0o644)
            .map_err(io("cannot write HEAD"))?;
        dir.write(Path::new("config"), &config_text(host)?, 0o644)
            .map_err(io("cannot write config"))?;
        let exclude = host.commondir().join("info").join("exclude");
        if let Ok(bytes) = std::fs::read(&exclude) {
            dir.write(Path::new("info/exclude"), &bytes, 0o644)
                .map_err(io("cannot write info/exclude"))?;
        }
        if let Some(index) = index_from
            && let Ok(bytes) = std::fs::read(index)
        {
            dir.write(Path::new("index"), &bytes, 0o644)
                .map_err(io("cannot write the index"))?;
        }

        let written = host_refs(host)?;
        let mut packed = String::from("# pack-refs with: sorted \n");
        for (name, value) in &written {
            match value {
                RefValue::Direct(oid) => packed.push_str(&format!("{oid} {name}\n")),
                RefValue::Symbolic(target) => {
                    // Symbolic refs cannot be packed: a loose file each.
                    dir.write(
                        Path::new(name),
                        format!("ref: {target}\n").as_bytes(),
                        0o644,
                    )
                    .map_err(io("cannot write a symbolic ref"))?;
                }
            }
        }
        dir.write(Path::new("packed-refs"), packed.as_bytes(), 0o644)
            .map_err(io("cannot write packed-refs"))?;
        Ok(PrivateGitDir {
            path: path.to_path_buf(),
            head,
            written,
        })
    }

    /// An existing private dir, for reading what a run left in it: `refname`
    /// is the ref its work is on (`refs/heads/<branch>` or `HEAD`).
    pub fn open(path: &Path, refname: &str) -> PrivateGitDir {
        let head = match refname.strip_prefix("refs/heads/") {
            Some(branch) => PrivateHead::Branch(branch.to_owned()),
            None => PrivateHead::Detached(Oid::ZERO_SHA1),
        };
        PrivateGitDir {
            path: path.to_path_buf(),
            head,
            written: BTreeMap::new(),
        }
    }

    /// The folder on the host.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where `HEAD` pointed at start.
    pub fn head(&self) -> &PrivateHead {
        &self.head
    }

    /// The private objects folder on the host.
    pub fn objects(&self) -> PathBuf {
        self.path.join("objects")
    }

    /// The private index file on the host.
    pub fn index(&self) -> PathBuf {
        self.path.join("index")
    }

    /// The commit the run's work ends at: the private value of its branch
    /// (or of `HEAD` when detached), read without following any symlink.
    pub fn tip(&self) -> Result<Option<Oid>, PrivateDirError> {
        let refs = self.read_refs()?;
        let name = self.head.refname();
        Ok(match refs.get(&name) {
            Some(RefValue::Direct(hex)) => Oid::from_str(hex).ok(),
            _ => None,
        })
    }

    /// Every ref the agent changed other than its own branch (and `HEAD`).
    pub fn ignored_refs(&self) -> Result<Vec<IgnoredRef>, PrivateDirError> {
        let now = self.read_refs()?;
        let own = self.head.refname();
        let describe = |v: &RefValue| match v {
            RefValue::Direct(oid) => oid.clone(),
            RefValue::Symbolic(t) => format!("-> {t}"),
        };
        let names: std::collections::BTreeSet<&String> =
            self.written.keys().chain(now.keys()).collect();
        let mut out = Vec::new();
        for name in names {
            if *name == own || name == "HEAD" {
                continue;
            }
            let (before, after) = (self.written.get(name), now.get(name));
            if before != after {
                out.push(IgnoredRef {
                    name: name.clone(),
                    before: before.map(describe),
                    after: after.map(describe),
                });
            }
        }
        Ok(out)
    }

    /// The commit the private `HEAD` is detached at, if the agent left it
    /// detached.
    pub fn detached_head(&self) -> Result<Option<git2::Oid>, PrivateDirError> {
        Ok(match self.read_refs()?.get("HEAD") {
            Some(RefValue::Direct(hex)) => git2::Oid::from_str(hex).ok(),
            _ => None,
        })
    }

    /// Reads `HEAD`, `packed-refs` and every loose ref, never following a
    /// symlink (a symlinked ref or folder is skipped: git itself would not
    /// write one).
    fn read_refs(&self) -> Result<BTreeMap<String, RefValue>, PrivateDirError> {
        let io = |what: &'static str| {
            let path = self.path.clone();
            move |source| PrivateDirError::Io { path, what, source }
        };
        let dir = Dir::open(&self.path).map_err(io("cannot open it"))?;
        let mut refs = BTreeMap::new();
        if let Ok(bytes) = dir.read(Path::new("packed-refs"), PACKED_REFS_LIMIT) {
            for line in bytes.split(|&b| b == b'\n') {
                // Comments, and the peeled values (`^…`) of the tags above.
                if line.is_empty() || line.starts_with(b"#") || line.starts_with(b"^") {
                    continue;
                }
                let Ok(text) = std::str::from_utf8(line) else {
                    continue;
                };
                if let Some((hex, name)) = text.split_once(' ')
                    && Oid::from_str(hex).is_ok()
                    && name.starts_with("refs/")
                {
                    refs.insert(name.to_owned(), RefValue::Direct(hex.to_owned()));
                }
            }
        }
        if let Ok(refs_dir) = dir.open_dir(Path::new("refs")) {
            read_loose(&refs_dir, "refs", &mut refs, 0);
        }
        if let Some(value) = dir
            .read(Path::new("HEAD"), REF_FILE_LIMIT)
            .ok()
            .and_then(|b| parse_ref(&b))
        {
            refs.insert("HEAD".to_owned(), value);
        }
        Ok(refs)
    }

    /// Removes the private dir (after its work was imported).
    pub fn remove(self) -> std::io::Result<()> {
        // std's remove_dir_all never follows symlinks inside the tree.
        match std::fs::remove_dir_all(&self.path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
}

fn parse_ref(bytes: &[u8]) -> Option<RefValue> {
    let text = std::str::from_utf8(bytes).ok()?.trim_end();
    if let Some(target) = text.strip_prefix("ref: ") {
        return Some(RefValue::Symbolic(target.trim().to_owned()));
    }
    Oid::from_str(text)
        .ok()
        .map(|_| RefValue::Direct(text.to_owned()))
}

fn read_loose(dir: &Dir, prefix: &str, refs: &mut BTreeMap<String, RefValue>, depth: usize) {
    // Deeper than any sensible ref name: a planted maze is not walked.
    if depth > 32 {
        return;
    }
    let Ok(names) = dir.entries() else { return };
    for name in names {
        let Some(text) = name.to_str() else { continue };
        let full = format!("{prefix}/{text}");
        match dir.kind_of(&name) {
            Ok(Some(Kind::Dir)) => {
                if let Ok(sub) = dir.open_dir(Path::new(&name)) {
                    read_loose(&sub, &full, refs, depth + 1);
                }
            }
            Ok(Some(Kind::File)) => {
                if text.ends_with(".lock") {
                    continue;
                }
                if let Some(value) = dir
                    .read(Path::new(&name), REF_FILE_LIMIT)
                    .ok()
                    .and_then(|b| parse_ref(&b))
                {
                    refs.insert(full, value);
                }
            }
            _ => {}
        }
    }
}

/// The host's refs (trusted: no run can write the host's `.git`).
fn host_refs(host: &Repository) -> Result<BTreeMap<String, RefValue>, git2::Error> {
    let mut out = BTreeMap::new();
    for r in host.references()? {
        let r = r?;
        let Ok(name) = r.name() else { continue };
        if !name.starts_with("refs/") || name.starts_with("refs/slipway/") {
            continue;
        }
        let value = match (r.symbolic_target().ok().flatten(), r.target()) {
            (Some(t), _) => RefValue::Symbolic(t.to_owned()),
            (None, Some(oid)) => RefValue::Direct(oid.to_string()),
            (None, None) => continue,
        };
        out.insert(name.to_owned(), value);
    }
    Ok(out)
}

/// The private `config`: the format version and the host's object format
/// alone. No key that names a program, no `core.worktree`, no includes.
fn config_text(host: &Repository) -> Result<Vec<u8>, git2::Error> {
    let format = host
        .config()?
        .get_string("extensions.objectformat")
        .ok()
        .filter(|f| f.chars().all(|c| c.is_ascii_alphanumeric()));
    let mut text = String::from("[core]\n");
    match format {
        Some(f) => text.push_str(&format!(
            "\trepositoryformatversion = 1\n[extensions]\n\tobjectformat = {f}\n"
        )),
        None => text.push_str("\trepositoryformatversion = 0\n"),
    }
    Ok(text.into_bytes())
}
