//! `copy_to_worktree` and `.worktreeinclude`: bringing untracked files (build
//! outputs, `node_modules`, `.env`) from the host checkout into a new worktree.
//!
//! Files are copied from the host, never from the worktree; directories merge
//! into existing ones; symlinks stay symlinks; file and directory modes are
//! kept; copy-on-write is used where the filesystem offers it and never hard
//! links (the agent would write into the host's files). A nested repository
//! or worktree (a directory holding `.git`) is never copied: its `.git` would
//! point the copy at someone else's admin directory.
//!
//! `.worktreeinclude` follows Claude Code and worktrunk: a file is copied when
//! git ignores it and the file's patterns (gitignore syntax) match it, judged
//! the way git judges `.gitignore` — a matching directory selects everything
//! below it, and within a directory that does not match, the last pattern
//! matching a file decides.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use globset::{Glob, GlobMatcher};
use ignore::gitignore::Gitignore;
use serde::Serialize;

use crate::git::HostRepo;

/// What a copy-in did.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CopyReport {
    /// Top-level paths copied, relative to the repository root.
    pub copied: Vec<String>,
    /// Files copied in all.
    pub files: usize,
    /// Patterns that matched nothing, and similar non-fatal notes.
    pub warnings: Vec<String>,
    /// Nested repositories and worktrees left out, relative to the repository root.
    pub skipped: Vec<String>,
    /// How the files' bytes were copied; absent when no file was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<CopyMethod>,
}

/// A copy-in failure.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// A pattern that would reach outside the repository.
    #[error(
        "copy pattern '{pattern}' leaves the repository; use a path relative to the repository root"
    )]
    OutsideRepo { pattern: String },
    /// A pattern that is not a valid glob.
    #[error("copy pattern '{pattern}' is not a valid glob: {reason}")]
    BadGlob { pattern: String, reason: String },
    /// The `.worktreeinclude` file could not be read.
    #[error(".worktreeinclude: {0}")]
    Include(String),
    /// A file could not be copied.
    #[error("cannot copy {} to {}: {source}", from.display(), to.display())]
    Io {
        from: PathBuf,
        to: PathBuf,
        source: io::Error,
    },
}

/// One file or symlink to copy.
struct Job {
    from: PathBuf,
    to: PathBuf,
    symlink: bool,
}

/// What copy-in will do, worked out before any file is copied: the
/// directories it made (their modes are set last, so a read-only one can
/// still be filled) and the files to copy.
struct Plan<'a> {
    host: &'a Path,
    worktree: &'a Path,
    jobs: Vec<Job>,
    /// Files (relative) already planned, so overlapping selections copy once.
    planned: HashSet<PathBuf>,
    /// Worktree directories (relative) checked or made: true when usable.
    dirs: HashMap<PathBuf, bool>,
    /// Directories this copy made, in the order made, with the host's mode.
    made: Vec<(PathBuf, PathBuf, u32)>,
    copied: BTreeSet<PathBuf>,
    skipped: BTreeSet<PathBuf>,
    warnings: Vec<String>,
}

fn io_error(from: &Path, to: &Path) -> impl FnOnce(io::Error) -> CopyError {
    let (from, to) = (from.to_path_buf(), to.to_path_buf());
    move |source| CopyError::Io { from, to, source }
}

/// Whether the first component is git's or slipway's own folder.
fn is_admin_path(rel: &Path) -> bool {
    matches!(
        rel.components().next(),
        Some(Component::Normal(name)) if name == ".git" || name == ".slipway"
    )
}

impl<'a> Plan<'a> {
    fn new(host: &'a Path, worktree: &'a Path) -> Plan<'a> {
        let mut dirs = HashMap::new();
        dirs.insert(PathBuf::new(), true);
        Plan {
            host,
            worktree,
            jobs: Vec::new(),
            planned: HashSet::new(),
            dirs,
            made: Vec::new(),
            copied: BTreeSet::new(),
            skipped: BTreeSet::new(),
            warnings: Vec::new(),
        }
    }

    fn skip_nested(&mut self, rel: &Path) {
        if self.skipped.insert(rel.to_path_buf()) {
            self.warnings.push(format!(
                "'{}' is a git repository or worktree of its own; not copied",
                rel.display()
            ));
        }
    }

    /// Makes the worktree directory `rel` and its parents as needed, each with
    /// the mode of the host's directory, without going through a symlink.
    /// False when something other than a directory is in the way.
    fn ensure_dir(&mut self, rel: &Path) -> Result<bool, CopyError> {
        if let Some(&usable) = self.dirs.get(rel) {
            return Ok(usable);
        }
        let parent_usable = match rel.parent() {
            Some(parent) => self.ensure_dir(parent)?,
            None => true,
        };
        let usable = parent_usable && self.make_dir(rel)?;
        self.dirs.insert(rel.to_path_buf(), usable);
        Ok(usable)
    }

    fn make_dir(&mut self, rel: &Path) -> Result<bool, CopyError> {
        let from = self.host.join(rel);
        let to = self.worktree.join(rel);
        match std::fs::create_dir(&to) {
            Ok(()) => {
                let mode = std::fs::metadata(&from)
                    .map_err(io_error(&from, &to))?
                    .permissions()
                    .mode();
                self.made.push((from, to, mode & 0o7777));
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                // Merging into the checkout's own directory keeps its mode;
                // a symlink there (a tracked one) is never written through.
                if to.symlink_metadata().is_ok_and(|m| m.is_dir()) {
                    Ok(true)
                } else {
                    self.warnings.push(format!(
                        "'{}' is not a directory in the worktree; nothing copied into it",
                        rel.display()
                    ));
                    Ok(false)
                }
            }
            Err(e) => Err(io_error(&from, &to)(e)),
        }
    }

    fn add_file(&mut self, rel: &Path, symlink: bool) -> Result<(), CopyError> {
        if !self.planned.insert(rel.to_path_buf()) {
            return Ok(());
        }
        let parent = rel.parent().unwrap_or(Path::new(""));
        if self.ensure_dir(parent)? {
            self.jobs.push(Job {
                from: self.host.join(rel),
                to: self.worktree.join(rel),
                symlink,
            });
        }
        Ok(())
    }

    /// A host directory below the root that holds `.git` (a repository or
    /// worktree) among `rel`'s parents.
    fn nested_repo_above(&self, rel: &Path) -> Option<PathBuf> {
        let mut ancestors: Vec<&Path> = rel
            .ancestors()
            .skip(1)
            .filter(|a| !a.as_os_str().is_empty())
            .collect();
        ancestors.reverse();
        ancestors
            .into_iter()
            .find(|a| self.host.join(a).join(".git").symlink_metadata().is_ok())
            .map(Path::to_path_buf)
    }

    /// Copies the host path `rel` whatever it is: a directory whole, a file,
    /// a symlink as a symlink. False when there is nothing there.
    fn add_path(&mut self, rel: &Path) -> Result<bool, CopyError> {
        if is_admin_path(rel) {
            self.warnings.push(format!(
                "'{}' is git's or slipway's own; not copied",
                rel.display()
            ));
            return Ok(true);
        }
        if let Some(repo) = self.nested_repo_above(rel) {
            self.skip_nested(&repo);
            return Ok(true);
        }
        let from = self.host.join(rel);
        let Ok(meta) = from.symlink_metadata() else {
            return Ok(false);
        };
        let kind = meta.file_type();
        let before = self.jobs.len();
        if kind.is_dir() {
            self.add_tree(rel)?;
        } else if kind.is_file() || kind.is_symlink() {
            self.add_file(rel, kind.is_symlink())?;
        }
        if self.jobs.len() > before || (kind.is_dir() && self.dirs.get(rel) == Some(&true)) {
            self.copied.insert(rel.to_path_buf());
        }
        Ok(true)
    }

    /// Walks the host directory `top`, making its directories in the
    /// worktree and planning its files; nested repositories are left out.
    fn add_tree(&mut self, top: &Path) -> Result<(), CopyError> {
        let mut stack = vec![top.to_path_buf()];
        while let Some(rel) = stack.pop() {
            let from = self.host.join(&rel);
            let to = self.worktree.join(&rel);
            let mut entries: Vec<(OsString, std::fs::FileType)> = Vec::new();
            for entry in std::fs::read_dir(&from).map_err(io_error(&from, &to))? {
                let entry = entry.map_err(io_error(&from, &to))?;
                let kind = entry.file_type().map_err(io_error(&entry.path(), &to))?;
                entries.push((entry.file_name(), kind));
            }
            let at_root = rel.as_os_str().is_empty();
            if !at_root && entries.iter().any(|(name, _)| name == ".git") {
                self.skip_nested(&rel);
                continue;
            }
            if !self.ensure_dir(&rel)? {
                continue;
            }
            for (name, kind) in entries {
                if at_root && (name == ".git" || name == ".slipway") {
                    continue;
                }
                let child = rel.join(&name);
                if kind.is_dir() {
                    stack.push(child);
                } else if kind.is_file() || kind.is_symlink() {
                    self.add_file(&child, kind.is_symlink())?;
                }
                // Sockets, fifos and devices are not files anyone can use
                // from a copy.
            }
        }
        Ok(())
    }
}

/// The patterns of the host's `.worktreeinclude`, or None without one.
fn include_matcher(root: &Path) -> Result<Option<Gitignore>, CopyError> {
    let include_file = root.join(".worktreeinclude");
    if !include_file.is_file() {
        return Ok(None);
    }
    let mut builder = ignore::gitignore::GitignoreBuilder::new(root);
    if let Some(err) = builder.add(&include_file) {
        return Err(CopyError::Include(err.to_string()));
    }
    builder
        .build()
        .map(Some)
        .map_err(|e| CopyError::Include(e.to_string()))
}

/// The directory among `dir` and its parents that `.worktreeinclude`
/// selects, outermost first: a selected directory selects all below it, as
/// an ignored one does in `.gitignore`.
fn selecting_dir(
    matcher: &Gitignore,
    dir: &Path,
    cache: &mut HashMap<PathBuf, Option<PathBuf>>,
) -> Option<PathBuf> {
    if dir.as_os_str().is_empty() {
        return None;
    }
    if let Some(hit) = cache.get(dir) {
        return hit.clone();
    }
    let parent = dir.parent().unwrap_or(Path::new(""));
    let hit = selecting_dir(matcher, parent, cache).or_else(|| {
        matcher
            .matched(dir, true)
            .is_ignore()
            .then(|| dir.to_path_buf())
    });
    cache.insert(dir.to_path_buf(), hit.clone());
    hit
}

/// Plans the ignored host files that `.worktreeinclude` selects.
fn plan_worktreeinclude(host: &HostRepo, plan: &mut Plan) -> Result<(), CopyError> {
    let Some(matcher) = include_matcher(host.root())? else {
        return Ok(());
    };
    let ignored =
        crate::git::ignored_paths(host.git()).map_err(|e| CopyError::Include(e.to_string()))?;
    let mut cache = HashMap::new();
    for path in &ignored {
        let is_dir = path.ends_with('/');
        let rel = PathBuf::from(path.trim_end_matches('/'));
        if is_admin_path(&rel) {
            continue;
        }
        let parent = rel.parent().unwrap_or(Path::new(""));
        let by = selecting_dir(&matcher, parent, &mut cache).or_else(|| {
            matcher
                .matched(&rel, is_dir)
                .is_ignore()
                .then(|| rel.clone())
        });
        let Some(by) = by else { continue };
        if is_dir {
            // git lists a nested repository or worktree as a folder and
            // never looks inside: none of its files are this repository's.
            plan.skip_nested(&rel);
            continue;
        }
        let Ok(meta) = host.root().join(&rel).symlink_metadata() else {
            // Gone since git listed it.
            continue;
        };
        let kind = meta.file_type();
        if kind.is_file() || kind.is_symlink() {
            plan.add_file(&rel, kind.is_symlink())?;
            plan.copied.insert(by);
        }
    }
    Ok(())
}

/// Creates `to` for writing, never through a symlink: whatever is already
/// there (a checked-out file, a link) is replaced, not written into.
fn create_new(to: &Path, mode: u32) -> io::Result<File> {
    let open = || {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(to)
    };
    match open() {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            std::fs::remove_file(to)?;
            open()
        }
        other => other,
    }
}

/// How copy-in moved a file's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum CopyMethod {
    /// Copy-on-write clones (btrfs, XFS, APFS): no data copied at all.
    Reflink,
    /// The kernel's in-place copy (`copy_file_range`): no data through user space.
    CopyFileRange,
    /// Plain reads and writes (a filesystem that offers neither).
    ReadWrite,
    /// Different files took different ways (the source spans filesystems).
    Mixed,
}

/// What one copying thread learnt of the filesystem: once a way fails it is
/// not tried again for the next file.
struct Ways {
    reflink: bool,
    copy_file_range: bool,
}

/// Copies `src` into `dst` with the kernel's `copy_file_range`; `Ok(false)`
/// when the kernel or filesystem does not offer it for these files (nothing
/// was written then).
fn kernel_copy(src: &File, dst: &File, len: u64) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    let mut left = len;
    let mut first = true;
    while left > 0 {
        let chunk = usize::try_from(left.min(1 << 30)).unwrap_or(1 << 30);
        // SAFETY: both descriptors are open for the call; null offsets use
        // and advance the files' own positions.
        let n = unsafe {
            libc::copy_file_range(
                src.as_raw_fd(),
                std::ptr::null_mut(),
                dst.as_raw_fd(),
                std::ptr::null_mut(),
                chunk,
                0,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            let unsupported = matches!(
                e.raw_os_error(),
                Some(libc::EXDEV | libc::ENOSYS | libc::EOPNOTSUPP | libc::EINVAL | libc::EPERM)
            );
            if first && unsupported {
                return Ok(false);
            }
            return Err(e);
        }
        if n == 0 {
            // The file shrank while being copied: what is there is copied.
            break;
        }
        first = false;
        left -= n as u64;
    }
    Ok(true)
}

/// Copies one file: copy-on-write while the filesystem allows it, else the
/// kernel's in-place copy, else reads and writes (each remembered in `ways`
/// once it fails). Never a hard link.
fn copy_file(job: &Job, ways: &mut Ways) -> io::Result<CopyMethod> {
    let mut src = File::open(&job.from)?;
    let meta = src.metadata()?;
    let perms = meta.permissions();
    let mut dst = create_new(&job.to, perms.mode() & 0o777)?;
    let filled = (|| {
        let mut method = None;
        if ways.reflink {
            match reflink_copy::reflink_file(&src, &dst) {
                Ok(()) => method = Some(CopyMethod::Reflink),
                Err(_) => ways.reflink = false,
            }
        }
        if method.is_none() && ways.copy_file_range {
            if kernel_copy(&src, &dst, meta.len())? {
                method = Some(CopyMethod::CopyFileRange);
            } else {
                ways.copy_file_range = false;
            }
        }
        let method = match method {
            Some(m) => m,
            None => {
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let n = io::Read::read(&mut src, &mut buf)?;
                    if n == 0 {
                        break;
                    }
                    io::Write::write_all(&mut dst, &buf[..n])?;
                }
                CopyMethod::ReadWrite
            }
        };
        // The umask trimmed the mode the file was created with.
        dst.set_permissions(perms)?;
        Ok(method)
    })();
    if filled.is_err() {
        // A half-written file would pass for the host's.
        if let Err(rm) = std::fs::remove_file(&job.to) {
            tracing::warn!("cannot remove the partial copy {}: {rm}", job.to.display());
        }
    }
    filled
}

fn copy_symlink(job: &Job) -> io::Result<()> {
    let target = std::fs::read_link(&job.from)?;
    match std::os::unix::fs::symlink(&target, &job.to) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            std::fs::remove_file(&job.to)?;
            std::os::unix::fs::symlink(&target, &job.to)
        }
        other => other,
    }
}

/// Copies every job on a few threads (see [`crate::parallel`]); returns how
/// the files' bytes were moved (`None` when only symlinks were copied).
fn run_jobs(jobs: &[Job]) -> Result<Option<CopyMethod>, CopyError> {
    let methods = crate::parallel::map_runs(
        jobs,
        || {
            Ok(Ways {
                reflink: true,
                copy_file_range: true,
            })
        },
        |ways, job| {
            let done = if job.symlink {
                copy_symlink(job).map(|()| None)
            } else {
                copy_file(job, ways).map(Some)
            };
            match done {
                Ok(method) => {
                    crate::testhook::point("create");
                    Ok(method)
                }
                Err(source) => Err(CopyError::Io {
                    from: job.from.clone(),
                    to: job.to.clone(),
                    source,
                }),
            }
        },
    )?;
    Ok(methods
        .into_iter()
        .flatten()
        .reduce(|a, b| if a == b { a } else { CopyMethod::Mixed }))
}

fn has_glob_chars(pattern: &str) -> bool {
    pattern.contains(['*', '?', '[', '{'])
}

/// Refuses absolute patterns and ones with `..`.
fn check_inside(pattern: &str) -> Result<(), CopyError> {
    let p = Path::new(pattern);
    if p.is_absolute()
        || p.components().any(|c| {
            matches!(
                c,
                Component::ParentDir | Component::RootDir | Component::Prefix(_)
            )
        })
    {
        return Err(CopyError::OutsideRepo {
            pattern: pattern.to_owned(),
        });
    }
    Ok(())
}

/// The plain components of a checked pattern (`./a//b` is `a/b`; `.` is the root).
fn normalized(pattern: &str) -> PathBuf {
    Path::new(pattern)
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect()
}

/// Top-level host paths (relative) that a glob matches; a matching directory
/// is returned whole and not descended into, and neither is a nested
/// repository.
fn expand_glob(root: &Path, matcher: &GlobMatcher) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&rel)) else {
            continue;
        };
        let entries: Vec<_> = entries.flatten().collect();
        let at_root = rel.as_os_str().is_empty();
        if !at_root && entries.iter().any(|e| e.file_name() == ".git") {
            continue;
        }
        for entry in entries {
            let name = entry.file_name();
            if at_root && (name == ".git" || name == ".slipway") {
                continue;
            }
            let child = rel.join(&name);
            if matcher.is_match(&child) {
                out.push(child);
            } else if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(child);
            }
        }
    }
    out.sort();
    out
}

/// Checks every pattern before anything is created: inside the repository and,
/// when it is a glob, well formed.
pub fn check_patterns(patterns: &[String]) -> Result<(), CopyError> {
    for pattern in patterns {
        let pattern = pattern.trim_end_matches('/');
        check_inside(pattern)?;
        if has_glob_chars(pattern) {
            compile(pattern)?;
        }
    }
    Ok(())
}

fn compile(pattern: &str) -> Result<Glob, CopyError> {
    Glob::new(pattern).map_err(|e| CopyError::BadGlob {
        pattern: pattern.to_owned(),
        reason: e.to_string(),
    })
}

/// A relative path as reports show it; the root itself is `.`.
fn display_rel(rel: &Path) -> String {
    if rel.as_os_str().is_empty() {
        ".".to_owned()
    } else {
        rel.to_string_lossy().into_owned()
    }
}

/// Copies the host paths named by `patterns` and by `.worktreeinclude` into `worktree`.
pub fn copy_into_worktree(
    host: &HostRepo,
    worktree: &Path,
    patterns: &[String],
) -> Result<CopyReport, CopyError> {
    let host_root = host.root();
    let mut plan = Plan::new(host_root, worktree);
    for pattern in patterns {
        let pattern = pattern.trim_end_matches('/');
        check_inside(pattern)?;
        if has_glob_chars(pattern) {
            let glob = compile(pattern)?;
            let found = expand_glob(host_root, &glob.compile_matcher());
            if found.is_empty() {
                plan.warnings.push(format!(
                    "copy pattern '{pattern}' matched nothing in the host repository"
                ));
            }
            for rel in found {
                plan.add_path(&rel)?;
            }
        } else if !plan.add_path(&normalized(pattern))? {
            plan.warnings.push(format!(
                "'{pattern}' does not exist in the host repository; nothing copied"
            ));
        }
    }
    plan_worktreeinclude(host, &mut plan)?;

    let files = plan.jobs.len();
    let method = run_jobs(&plan.jobs)?;
    // Children first: a directory without write or search permission is
    // closed only once nothing more goes into it.
    for (from, to, mode) in plan.made.iter().rev() {
        std::fs::set_permissions(to, std::fs::Permissions::from_mode(*mode))
            .map_err(io_error(from, to))?;
    }

    // A path inside one already listed is reported with its parent.
    let mut copied: Vec<PathBuf> = Vec::new();
    for path in plan.copied {
        if !copied.iter().any(|top| path.starts_with(top)) {
            copied.push(path);
        }
    }
    Ok(CopyReport {
        copied: copied.iter().map(|p| display_rel(p)).collect(),
        files,
        warnings: plan.warnings,
        skipped: plan.skipped.iter().map(|p| display_rel(p)).collect(),
        method,
    })
}
