//! Writing a git index (format version 2) for a fresh checkout, with each
//! file's stat data so that the next `git status` compares stat data instead
//! of hashing every file. libgit2 inserts entries one by one; a checkout
//! already has them all, so they are sorted once and written in one pass.

use std::fs::Metadata;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use git2::Oid;

/// One index entry (stage 0).
#[derive(Debug, Clone)]
pub struct IndexEntry {
    path: Vec<u8>,
    oid: Oid,
    mode: u32,
    stat: [u32; 9],
}

impl IndexEntry {
    /// An entry for `path` (relative, `/`-separated) holding `oid`, with the
    /// stat data of the file written for it (none for a submodule).
    pub fn new(path: Vec<u8>, oid: Oid, mode: u32, meta: Option<&Metadata>) -> IndexEntry {
        // The index keeps the low 32 bits of each field, as git does.
        let stat = meta.map_or([0; 9], |m| {
            [
                m.ctime() as u32,
                m.ctime_nsec() as u32,
                m.mtime() as u32,
                m.mtime_nsec() as u32,
                m.dev() as u32,
                m.ino() as u32,
                m.uid(),
                m.gid(),
                m.size() as u32,
            ]
        });
        IndexEntry {
            path,
            oid,
            mode,
            stat,
        }
    }
}

/// Writes `entries` (sorted here, by path bytes as git sorts them) as the
/// index at `path`: through `<path>.lock` renamed into place, as git does.
pub fn write(path: &Path, entries: &mut [IndexEntry]) -> std::io::Result<()> {
    entries.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    let count = u32::try_from(entries.len())
        .map_err(|_| std::io::Error::other("too many index entries"))?;
    let mut out = Vec::with_capacity(12 + entries.len() * 96);
    out.extend_from_slice(b"DIRC");
    out.extend_from_slice(&2u32.to_be_bytes());
    out.extend_from_slice(&count.to_be_bytes());
    for e in entries.iter() {
        let start = out.len();
        let [ctime, ctime_ns, mtime, mtime_ns, dev, ino, uid, gid, size] = e.stat;
        for field in [
            ctime, ctime_ns, mtime, mtime_ns, dev, ino, e.mode, uid, gid, size,
        ] {
            out.extend_from_slice(&field.to_be_bytes());
        }
        out.extend_from_slice(e.oid.as_bytes());
        let flags = u16::try_from(e.path.len().min(0xFFF)).unwrap_or(0xFFF);
        out.extend_from_slice(&flags.to_be_bytes());
        out.extend_from_slice(&e.path);
        // NUL-padded to a multiple of 8 bytes, at least one NUL.
        let len = out.len() - start;
        let padded = (len + 8) & !7;
        out.resize(start + padded, 0);
    }
    let mut hasher = sha1_smol::Sha1::new();
    hasher.update(&out);
    out.extend_from_slice(&hasher.digest().bytes());
    let lock = path.with_extension("lock");
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&lock)?;
        file.write_all(&out)?;
        std::fs::rename(&lock, path)
    })();
    if written.is_err()
        && let Err(e) = std::fs::remove_file(&lock)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!("cannot remove {}: {e}", lock.display());
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libgit2_reads_the_index_back_in_git_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = git2::Repository::init(dir.path()).expect("init");
        let blob = repo.blob(b"hello\n").expect("blob");
        std::fs::write(dir.path().join("a-b"), "hello\n").expect("write");
        let meta = std::fs::metadata(dir.path().join("a-b")).expect("meta");
        let mut entries = vec![
            IndexEntry::new(b"a/b".to_vec(), blob, 0o100644, None),
            IndexEntry::new(b"a-b".to_vec(), blob, 0o100644, Some(&meta)),
            IndexEntry::new(b"x/long-name.txt".to_vec(), blob, 0o100755, None),
        ];
        let path = dir.path().join(".git/index");
        write(&path, &mut entries).expect("written");
        let index = git2::Index::open(&path).expect("libgit2 reads it");
        let paths: Vec<String> = index
            .iter()
            .map(|e| String::from_utf8_lossy(&e.path).into_owned())
            .collect();
        assert_eq!(paths, ["a-b", "a/b", "x/long-name.txt"]);
        let first = index.get(0).expect("entry");
        assert_eq!(first.file_size as u64, meta.size());
        assert_eq!(first.id, blob);
        assert_eq!(index.get(2).expect("entry").mode, 0o100755);
    }
}
