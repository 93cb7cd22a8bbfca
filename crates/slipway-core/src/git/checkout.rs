//! Checking a commit out into a new, empty worktree folder and writing its
//! index, as `git worktree add` does with `checkout.workers`: the files are
//! written on a few threads, run by run of one folder each (see
//! [`crate::parallel`]), and content filters are only asked about the files
//! they may change (see [`super::attributes`]). libgit2's own checkout is
//! single-threaded and looks attributes up for every file.
//!
//! A tree this does not handle plainly (a name git would refuse or that
//! needs care, an unusual mode) is left to libgit2's checkout, which knows
//! every rule: [`Planned::Unusual`].

use std::ffi::OsStr;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use super::attributes::{self, Filters, Source};
use super::index_file::{self, IndexEntry};

/// What a file of the tree is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File {
        executable: bool,
    },
    Symlink,
    /// A submodule's commit: an empty folder, as git leaves it.
    Gitlink,
}

/// One entry of the tree to write.
struct Job {
    path: Vec<u8>,
    oid: Oid,
    kind: Kind,
    /// A content filter may change it: libgit2 filters it.
    filter: bool,
}

/// The whole checkout, worked out before anything is written.
pub struct Plan {
    folders: Vec<Vec<u8>>,
    jobs: Vec<Job>,
    commit: Oid,
}

/// What planning found.
pub enum Planned {
    /// Ready to write.
    Plain(Plan),
    /// Something only libgit2's checkout should handle; why.
    Unusual(String),
}

/// A name that is safe to create as it is on any filesystem git protects
/// against: no `.git` in any case or spelling, no `.`/`..`, no separators,
/// no trailing dot or space, nothing NTFS or HFS would alias.
fn plain_name(name: &[u8]) -> bool {
    if name.is_empty() || name == b"." || name == b".." {
        return false;
    }
    if name
        .iter()
        .any(|&b| b == b'/' || b == b'\\' || b == b':' || b == 0 || b >= 0x80)
    {
        return false;
    }
    if matches!(name.last(), Some(b'.' | b' ')) {
        return false;
    }
    let lower = name.to_ascii_lowercase();
    !(lower.starts_with(b".git") && (lower.len() == 4 || !lower[4].is_ascii_alphanumeric())
        || lower.starts_with(b"git~"))
}

/// Walks `commit`'s tree: folders parent first, then each folder's files
/// together (so a run of jobs stays in one folder).
pub fn plan(repo: &Repository, commit: Oid) -> Result<Planned, git2::Error> {
    let tree = repo.find_commit(commit)?.tree()?;
    let mut folders = Vec::new();
    let mut jobs = Vec::new();
    let mut sources = Vec::new();
    let mut stack = vec![(Vec::new(), tree)];
    while let Some((prefix, tree)) = stack.pop() {
        let mut names = std::collections::HashSet::new();
        let mut subtrees = Vec::new();
        for entry in tree.iter() {
            let name = entry.name_bytes();
            if !plain_name(name) || !names.insert(name.to_vec()) {
                return Ok(Planned::Unusual(format!(
                    "the tree names '{}'",
                    String::from_utf8_lossy(name)
                )));
            }
            let mut path = prefix.clone();
            if !path.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(name);
            let kind = match entry.filemode() {
                0o040000 => {
                    subtrees.push((path, entry.id()));
                    continue;
                }
                0o100644 => Kind::File { executable: false },
                0o100755 => Kind::File { executable: true },
                0o120000 => Kind::Symlink,
                0o160000 => Kind::Gitlink,
                mode => {
                    return Ok(Planned::Unusual(format!(
                        "'{}' has mode {mode:o}",
                        String::from_utf8_lossy(&path)
                    )));
                }
            };
            if name == b".gitattributes" && kind != Kind::Gitlink {
                let blob = repo.find_blob(entry.id())?;
                sources.push(Source {
                    base: PathBuf::from(OsStr::from_bytes(&prefix)),
                    text: String::from_utf8_lossy(blob.content()).into_owned(),
                    in_tree: true,
                });
            }
            if kind == Kind::Gitlink {
                folders.push(path.clone());
            }
            jobs.push(Job {
                path,
                oid: entry.id(),
                kind,
                filter: false,
            });
        }
        // Popped last first: push in reverse so folders come in tree order.
        for (path, id) in subtrees.into_iter().rev() {
            folders.push(path.clone());
            stack.push((path, repo.find_tree(id)?));
        }
    }
    // Folders must exist before their files: parents sort before children.
    folders.sort();
    sources.extend(attributes::outside_sources(repo));
    // In-tree files come first (lowest precedence after system and global
    // does not matter here: any relevant line makes a file a candidate).
    let mut filters = attributes::plan(repo, &sources);
    for job in &mut jobs {
        if matches!(job.kind, Kind::Gitlink) {
            continue;
        }
        job.filter = match &mut filters {
            Filters::None => false,
            Filters::All => true,
            Filters::Some(rules) => rules.may_filter(Path::new(OsStr::from_bytes(&job.path))),
        };
    }
    Ok(Planned::Plain(Plan {
        folders,
        jobs,
        commit,
    }))
}

/// A thread's repository handle: bare, so attributes come from the commit
/// and `info/` alone (never from the half-written folder), with an empty
/// index so the host's staged `.gitattributes` count for nothing.
struct Reader {
    repo: Repository,
}

impl Reader {
    fn open(common_dir: &Path) -> Result<Reader, std::io::Error> {
        let repo = Repository::open_bare(common_dir).map_err(std::io::Error::other)?;
        let mut index = git2::Index::new().map_err(std::io::Error::other)?;
        repo.set_index(&mut index).map_err(std::io::Error::other)?;
        Ok(Reader { repo })
    }
}

/// Filters a blob as checkout would, with attributes from `commit`.
pub(crate) fn filtered(
    blob: &git2::Blob<'_>,
    path: &[u8],
    commit: Oid,
) -> Result<Vec<u8>, git2::Error> {
    use git2::Binding;
    use libgit2_sys as raw;

    /// `git_blob_filter_options` (libgit2 1.9), which libgit2-sys does not bind.
    #[repr(C)]
    struct BlobFilterOptions {
        version: libc::c_int,
        flags: u32,
        commit_id: *mut raw::git_oid,
        attr_commit_id: raw::git_oid,
    }
    const CHECK_FOR_BINARY: u32 = 1 << 0;
    const ATTRIBUTES_FROM_COMMIT: u32 = 1 << 3;
    unsafe extern "C" {
        fn git_blob_filter(
            out: *mut raw::git_buf,
            blob: *mut raw::git_blob,
            as_path: *const libc::c_char,
            opts: *mut BlobFilterOptions,
        ) -> libc::c_int;
    }

    let path = std::ffi::CString::new(path.to_vec())?;
    let mut opts = BlobFilterOptions {
        version: 1,
        flags: CHECK_FOR_BINARY | ATTRIBUTES_FROM_COMMIT,
        commit_id: std::ptr::null_mut(),
        // SAFETY: `Oid::raw` points at a valid `git_oid` for `commit`'s lifetime.
        attr_commit_id: unsafe { *commit.raw() },
    };
    let mut out = raw::git_buf {
        ptr: std::ptr::null_mut(),
        reserved: 0,
        size: 0,
    };
    // SAFETY: every pointer is valid for the call; `out` is disposed of
    // once its bytes are copied.
    unsafe {
        let rc = git_blob_filter(&mut out, blob.raw(), path.as_ptr(), &mut opts);
        if rc < 0 {
            raw::git_buf_dispose(&mut out);
            return Err(git2::Error::last_error(rc));
        }
        // No filter applied: libgit2 leaves the buffer empty for a binary blob.
        let bytes = if out.ptr.is_null() {
            blob.content().to_vec()
        } else {
            std::slice::from_raw_parts(out.ptr.cast::<u8>(), out.size).to_vec()
        };
        raw::git_buf_dispose(&mut out);
        Ok(bytes)
    }
}

fn to_io(e: git2::Error) -> std::io::Error {
    std::io::Error::other(e)
}

/// Writes one entry under `root`; its index entry.
fn write_one(reader: &Reader, root: &Path, job: &Job, commit: Oid) -> std::io::Result<IndexEntry> {
    let path = root.join(OsStr::from_bytes(&job.path));
    let meta = match job.kind {
        Kind::Gitlink => None,
        Kind::Symlink => {
            let blob = reader.repo.find_blob(job.oid).map_err(to_io)?;
            std::os::unix::fs::symlink(OsStr::from_bytes(blob.content()), &path)?;
            Some(path.symlink_metadata()?)
        }
        Kind::File { executable } => {
            let blob = reader.repo.find_blob(job.oid).map_err(to_io)?;
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .mode(if executable { 0o777 } else { 0o666 })
                .open(&path)?;
            if job.filter {
                file.write_all(&filtered(&blob, &job.path, commit).map_err(to_io)?)?;
            } else {
                file.write_all(blob.content())?;
            }
            Some(file.metadata()?)
        }
    };
    let mode = match job.kind {
        Kind::File { executable: false } => 0o100644,
        Kind::File { executable: true } => 0o100755,
        Kind::Symlink => 0o120000,
        Kind::Gitlink => 0o160000,
    };
    Ok(IndexEntry::new(
        job.path.clone(),
        job.oid,
        mode,
        meta.as_ref(),
    ))
}

/// How many files a checkout wrote, and how many went through a filter.
#[derive(Debug, Clone, Copy, Default)]
pub struct Written {
    /// Entries written.
    pub files: usize,
    /// Files libgit2's filters were asked about.
    pub filtered: usize,
}

impl Plan {
    /// Writes the planned checkout into the empty folder `root` and its index
    /// to `index`. Each file written is a crash point of the create (see
    /// [`crate::testhook`]).
    pub fn write(&self, common_dir: &Path, root: &Path, index: &Path) -> std::io::Result<Written> {
        for folder in &self.folders {
            std::fs::create_dir(root.join(OsStr::from_bytes(folder)))?;
        }
        let commit = self.commit;
        let mut entries = crate::parallel::map_runs(
            &self.jobs,
            || Reader::open(common_dir),
            |reader, job| {
                let entry = write_one(reader, root, job, commit).map_err(|e| {
                    std::io::Error::new(
                        e.kind(),
                        format!("{}: {e}", String::from_utf8_lossy(&job.path)),
                    )
                })?;
                crate::testhook::point("create");
                Ok(entry)
            },
        )?;
        index_file::write(index, &mut entries)?;
        Ok(Written {
            files: self.jobs.len(),
            filtered: self.jobs.iter().filter(|j| j.filter).count(),
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_git_would_refuse_or_alias_are_not_plain() {
        for bad in [
            &b".git"[..],
            b".GIT",
            b".Git ",
            b"git~1",
            b"..",
            b".",
            b"a/b",
            b"a\\b",
            b"x.",
            b"",
            "\u{200c}.git".as_bytes(),
        ] {
            assert!(
                !super::plain_name(bad),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        for good in [
            &b".gitignore"[..],
            b".gitattributes",
            b"src",
            b"a.b",
            b".github",
        ] {
            assert!(
                super::plain_name(good),
                "{:?}",
                String::from_utf8_lossy(good)
            );
        }
    }
}
