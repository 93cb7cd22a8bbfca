//! Files and folders an agent could have written, reached without following
//! any symlink: every component is opened relative to an open directory with
//! `O_NOFOLLOW`, so a symlink planted anywhere on the way cannot send a read,
//! a write or a removal outside the folder it started from.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

/// What sits at a name inside a [`Dir`], without following it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (never followed).
    Symlink,
    /// A fifo, socket or device.
    Other,
}

/// A directory opened without following symlinks; everything below it is
/// reached through it.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
}

fn c_name(name: &std::ffi::OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "a path component holds a NUL byte",
        )
    })
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// The plain components of a relative path; `..`, `.`, roots and empty
/// paths are refused, since they could leave the directory or name nothing.
pub fn normal_components(rel: &Path) -> io::Result<Vec<&std::ffi::OsStr>> {
    let mut out = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(name) => out.push(name),
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} is not a plain relative path", rel.display()),
                ));
            }
        }
    }
    if out.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "an empty path names nothing",
        ));
    }
    Ok(out)
}

/// Whether a path has a component git treats as its own control folder
/// (`.git` in any letter case): nothing returned from a sandbox may go there.
pub fn names_git_dir(rel: &Path) -> bool {
    rel.components().any(|c| match c {
        Component::Normal(name) => name.as_bytes().eq_ignore_ascii_case(b".git"),
        _ => false,
    })
}

impl Dir {
    /// Opens `path` as a directory. The last component must not be a symlink;
    /// the components before it are slipway's own choice and trusted.
    pub fn open(path: &Path) -> io::Result<Dir> {
        let c = c_name(path.as_os_str())?;
        // SAFETY: a valid NUL-terminated path; the fd is owned from here on.
        let fd = check(unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        })?;
        // SAFETY: `fd` was just opened and nothing else owns it.
        Ok(Dir {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Opens `name` in this directory with `flags` (plus `O_NOFOLLOW` and
    /// `O_CLOEXEC`, always), creating it with `mode` when `flags` say so.
    fn open_at(
        &self,
        name: &std::ffi::OsStr,
        flags: libc::c_int,
        mode: u32,
    ) -> io::Result<OwnedFd> {
        let c = c_name(name)?;
        // SAFETY: `self.fd` is an open directory and `c` a valid name.
        let fd = check(unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                (mode & 0o777) as libc::c_uint,
            )
        })?;
        // SAFETY: `fd` was just opened and nothing else owns it.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    fn open_child(&self, name: &std::ffi::OsStr) -> io::Result<Dir> {
        Ok(Dir {
            fd: self.open_at(name, libc::O_RDONLY | libc::O_DIRECTORY, 0)?,
        })
    }

    /// Opens the directory at `rel` below this one; a symlink anywhere on
    /// the way is an error (`ELOOP` or `ENOTDIR`), never followed.
    pub fn open_dir(&self, rel: &Path) -> io::Result<Dir> {
        let mut dir = self.dup()?;
        for name in normal_components(rel)? {
            dir = dir.open_child(name)?;
        }
        Ok(dir)
    }

    fn dup(&self) -> io::Result<Dir> {
        Ok(Dir {
            fd: self.fd.try_clone()?,
        })
    }

    /// The folder at `rel` below this one, or this one for an empty `rel`.
    pub fn open_dir_or_self(&self, rel: &Path) -> io::Result<Dir> {
        if rel.as_os_str().is_empty() {
            self.dup()
        } else {
            self.open_dir(rel)
        }
    }

    /// The directory holding `rel` and `rel`'s last component.
    fn parent_of<'p>(&self, rel: &'p Path) -> io::Result<(Dir, &'p std::ffi::OsStr)> {
        let names = normal_components(rel)?;
        let (last, dirs) = names
            .split_last()
            .expect("normal_components is never empty");
        let mut dir = self.dup()?;
        for name in dirs {
            dir = dir.open_child(name)?;
        }
        Ok((dir, last))
    }

    /// What is at `name` directly in this directory, if anything.
    pub fn kind_of(&self, name: &std::ffi::OsStr) -> io::Result<Option<Kind>> {
        Ok(self.mode_of(name)?.map(|mode| match mode & libc::S_IFMT {
            libc::S_IFREG => Kind::File,
            libc::S_IFDIR => Kind::Dir,
            libc::S_IFLNK => Kind::Symlink,
            _ => Kind::Other,
        }))
    }

    /// Opens the regular file at `rel` for reading.
    pub fn open_file(&self, rel: &Path) -> io::Result<File> {
        let (dir, name) = self.parent_of(rel)?;
        let file = File::from(dir.open_at(name, libc::O_RDONLY | libc::O_NONBLOCK, 0)?);
        if !file.metadata()?.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a regular file", rel.display()),
            ));
        }
        Ok(file)
    }

    /// Reads the regular file at `rel`, at most `limit` bytes (more is an error).
    pub fn read(&self, rel: &Path, limit: u64) -> io::Result<Vec<u8>> {
        use std::io::Read;
        let file = self.open_file(rel)?;
        let mut out = Vec::new();
        file.take(limit + 1).read_to_end(&mut out)?;
        if out.len() as u64 > limit {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} is larger than {limit} bytes", rel.display()),
            ));
        }
        Ok(out)
    }

    /// Makes every directory of `rel` that is missing and returns the last.
    /// With `replace`, a file or symlink in the way is removed first (it is
    /// replaced by a directory, never followed); without, it is an error.
    pub fn make_dirs(&self, rel: &Path, replace: bool) -> io::Result<Dir> {
        let mut dir = self.dup()?;
        for name in normal_components(rel)? {
            match dir.kind_of(name)? {
                Some(Kind::Dir) => {}
                None => dir.mkdir(name)?,
                Some(_) if replace => {
                    dir.unlink(name)?;
                    dir.mkdir(name)?;
                }
                Some(_) => {
                    return Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        format!("{} is in the way of a folder", name.to_string_lossy()),
                    ));
                }
            }
            dir = dir.open_child(name)?;
        }
        Ok(dir)
    }

    fn mkdir(&self, name: &std::ffi::OsStr) -> io::Result<()> {
        let c = c_name(name)?;
        // SAFETY: `self.fd` is open and `c` valid.
        match check(unsafe { libc::mkdirat(self.fd.as_raw_fd(), c.as_ptr(), 0o777) }) {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Removes the file or symlink `name` directly in this directory.
    pub fn unlink(&self, name: &std::ffi::OsStr) -> io::Result<()> {
        let c = c_name(name)?;
        // SAFETY: `self.fd` is open and `c` valid.
        check(unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) }).map(|_| ())
    }

    /// Creates (or replaces) the regular file at `rel` with `mode` and returns
    /// it open for writing. Whatever was there (a file, a symlink) is removed
    /// first, so the write can never go through a link; folders on the way
    /// are made as needed, replacing files or symlinks in the way.
    pub fn create_file(&self, rel: &Path, mode: u32) -> io::Result<File> {
        let names = normal_components(rel)?;
        let (last, dirs) = names
            .split_last()
            .expect("normal_components is never empty");
        let parent = if dirs.is_empty() {
            self.dup()?
        } else {
            self.make_dirs(&dirs.iter().collect::<std::path::PathBuf>(), true)?
        };
        match parent.kind_of(last)? {
            None => {}
            Some(Kind::Dir) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} is a folder", rel.display()),
                ));
            }
            Some(_) => parent.unlink(last)?,
        }
        Ok(File::from(parent.open_at(
            last,
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
            mode & 0o777,
        )?))
    }

    /// The mode (type and permission bits) of `name` directly in this
    /// directory, not following a symlink; `None` when nothing is there.
    pub fn mode_of(&self, name: &std::ffi::OsStr) -> io::Result<Option<u32>> {
        let c = c_name(name)?;
        // SAFETY: an all-zero stat is a valid value to be overwritten.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `self.fd` is open, `c` valid, `st` writable.
        let rc = unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::NotFound {
                Ok(None)
            } else {
                Err(e)
            };
        }
        Ok(Some(st.st_mode))
    }

    /// Clears the set-user-id and set-group-id bits of the file or folder
    /// `name` directly in this directory, through a descriptor opened
    /// without following a symlink (a symlink or special file is refused).
    pub fn clear_set_id(&self, name: &std::ffi::OsStr) -> io::Result<()> {
        // An `O_PATH` descriptor needs no read permission (a `chmod 4711`
        // file is still reached) and, with `O_NOFOLLOW`, names a symlink
        // itself rather than its target.
        let fd = self.open_at(name, libc::O_PATH, 0)?;
        // SAFETY: an all-zero stat is a valid value to be overwritten.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `fd` is open and `st` writable.
        check(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
        let kind = st.st_mode & libc::S_IFMT;
        if kind != libc::S_IFREG && kind != libc::S_IFDIR {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file or folder",
            ));
        }
        // The descriptor's magic link is the very inode opened above.
        let by_fd = c_name(std::ffi::OsStr::new(&format!(
            "/proc/self/fd/{}",
            fd.as_raw_fd()
        )))?;
        // SAFETY: `by_fd` is a valid C string naming the open descriptor.
        check(unsafe { libc::chmod(by_fd.as_ptr(), st.st_mode & 0o1777) }).map(|_| ())
    }

    /// Writes `bytes` as the file at `rel` (see [`Dir::create_file`]).
    pub fn write(&self, rel: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
        use std::io::Write;
        let mut file = self.create_file(rel, mode)?;
        file.write_all(bytes)
    }

    /// Creates a symlink `rel` → `target` (whatever was at `rel` goes first).
    pub fn symlink(&self, rel: &Path, target: &Path) -> io::Result<()> {
        let names = normal_components(rel)?;
        let (last, dirs) = names
            .split_last()
            .expect("normal_components is never empty");
        let parent = if dirs.is_empty() {
            self.dup()?
        } else {
            self.make_dirs(&dirs.iter().collect::<std::path::PathBuf>(), true)?
        };
        if let Some(kind) = parent.kind_of(last)? {
            if kind == Kind::Dir {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} is a folder", rel.display()),
                ));
            }
            parent.unlink(last)?;
        }
        let t = c_name(target.as_os_str())?;
        let c = c_name(last)?;
        // SAFETY: `parent.fd` is open; both names are valid.
        check(unsafe { libc::symlinkat(t.as_ptr(), parent.fd.as_raw_fd(), c.as_ptr()) }).map(|_| ())
    }

    /// Renames `from` to `to`, both directly in this directory (atomically
    /// replacing a file or symlink at `to`).
    pub fn rename_within(&self, from: &std::ffi::OsStr, to: &std::ffi::OsStr) -> io::Result<()> {
        let (f, t) = (c_name(from)?, c_name(to)?);
        // SAFETY: `self.fd` is open; both names are valid.
        check(unsafe {
            libc::renameat(
                self.fd.as_raw_fd(),
                f.as_ptr(),
                self.fd.as_raw_fd(),
                t.as_ptr(),
            )
        })
        .map(|_| ())
    }

    /// Removes the empty folder `name` directly in this directory;
    /// `Ok(false)` when it is not empty or not there.
    pub fn remove_empty_dir(&self, name: &std::ffi::OsStr) -> io::Result<bool> {
        let c = c_name(name)?;
        // SAFETY: `self.fd` is open and `c` valid.
        match check(unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), libc::AT_REMOVEDIR) })
        {
            Ok(_) => Ok(true),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOTEMPTY | libc::EEXIST | libc::ENOENT | libc::ENOTDIR)
                ) =>
            {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// The target of the symlink at `rel`, as written in it.
    pub fn read_link(&self, rel: &Path) -> io::Result<std::path::PathBuf> {
        use std::os::unix::ffi::OsStringExt;
        let (dir, name) = self.parent_of(rel)?;
        let c = c_name(name)?;
        let mut buf = vec![0u8; libc::PATH_MAX as usize];
        // SAFETY: `dir.fd` is open, `c` valid, `buf` writable for its length.
        let n = unsafe {
            libc::readlinkat(
                dir.fd.as_raw_fd(),
                c.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        buf.truncate(n as usize);
        Ok(std::ffi::OsString::from_vec(buf).into())
    }

    /// Removes the file or symlink at `rel` (never what a link points at).
    /// A missing entry, or a folder on the way that is not a folder, is not
    /// an error: there is nothing there to remove.
    pub fn remove_file(&self, rel: &Path) -> io::Result<bool> {
        let (dir, name) = match self.parent_of(rel) {
            Ok(found) => found,
            // No folder there (missing, a file, a symlink): nothing to remove.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOENT | libc::ENOTDIR | libc::ELOOP)
                ) =>
            {
                return Ok(false);
            }
            Err(e) => return Err(e),
        };
        match dir.kind_of(name)? {
            None | Some(Kind::Dir) => Ok(false),
            Some(_) => dir.unlink(name).map(|()| true),
        }
    }

    /// Removes whatever is at `name` directly in this directory: a file, a
    /// symlink (not what it points at), or a folder with everything in it.
    pub fn remove_tree(&self, name: &std::ffi::OsStr) -> io::Result<()> {
        match self.kind_of(name)? {
            None => Ok(()),
            Some(Kind::Dir) => {
                let sub = self.open_child(name)?;
                for child in sub.entries()? {
                    sub.remove_tree(&child)?;
                }
                drop(sub);
                let c = c_name(name)?;
                // SAFETY: `self.fd` is open and `c` valid.
                check(unsafe {
                    libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), libc::AT_REMOVEDIR)
                })
                .map(|_| ())
            }
            Some(_) => self.unlink(name),
        }
    }

    /// Moves `rel` below this directory to `to`, a path on the same
    /// filesystem chosen by slipway (its folders are made as needed).
    pub fn move_out(&self, rel: &Path, to: &Path) -> io::Result<()> {
        let (dir, name) = self.parent_of(rel)?;
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let c = c_name(name)?;
        let t = c_name(to.as_os_str())?;
        // SAFETY: `dir.fd` is open; both names are valid; an absolute `to`
        // ignores the directory argument.
        check(unsafe { libc::renameat(dir.fd.as_raw_fd(), c.as_ptr(), libc::AT_FDCWD, t.as_ptr()) })
            .map(|_| ())
    }

    /// The names in this directory (without `.` and `..`).
    pub fn entries(&self) -> io::Result<Vec<std::ffi::OsString>> {
        let path = format!("/proc/self/fd/{}", self.fd.as_raw_fd());
        // Reading through the descriptor lists exactly the directory this
        // handle opened, even if its path was swapped meanwhile.
        let mut out = Vec::new();
        for entry in std::fs::read_dir(path)? {
            out.push(entry?.file_name());
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlinked_folder_is_never_followed() {
        let tmp = tempfile::tempdir().expect("tmp");
        let outside = tmp.path().join("outside");
        let root = tmp.path().join("root");
        std::fs::create_dir_all(&outside).expect("outside");
        std::fs::create_dir_all(&root).expect("root");
        std::os::unix::fs::symlink(&outside, root.join("link")).expect("symlink");
        let dir = Dir::open(&root).expect("open");
        assert!(dir.open_dir(Path::new("link")).is_err());
        assert!(dir.read(Path::new("link/x"), 10).is_err());
        dir.write(Path::new("link/x"), b"hi", 0o644)
            .expect("write replaces the link");
        assert!(
            !outside.join("x").exists(),
            "nothing written through the link"
        );
        assert_eq!(std::fs::read(root.join("link/x")).expect("read"), b"hi");
        assert!(root.join("link").symlink_metadata().expect("meta").is_dir());
    }

    #[test]
    fn a_symlinked_file_is_replaced_not_written_through() {
        let tmp = tempfile::tempdir().expect("tmp");
        let target = tmp.path().join("target");
        std::fs::write(&target, b"keep").expect("target");
        let root = tmp.path().join("root");
        std::fs::create_dir_all(&root).expect("root");
        std::os::unix::fs::symlink(&target, root.join("f")).expect("symlink");
        let dir = Dir::open(&root).expect("open");
        dir.write(Path::new("f"), b"new", 0o644).expect("write");
        assert_eq!(std::fs::read(&target).expect("target"), b"keep");
        assert_eq!(std::fs::read(root.join("f")).expect("f"), b"new");
        assert!(dir.remove_file(Path::new("f")).expect("remove"));
        assert!(!dir.remove_file(Path::new("f")).expect("second remove"));
    }

    #[test]
    fn paths_that_leave_are_refused() {
        for bad in ["../x", "/etc/passwd", "", "a/../../b", "./"] {
            assert!(normal_components(Path::new(bad)).is_err(), "{bad}");
        }
        assert!(names_git_dir(Path::new("a/.GIT/hooks/pre-commit")));
        assert!(!names_git_dir(Path::new("a/.github/x")));
    }
}
