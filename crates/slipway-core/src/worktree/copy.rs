//! `copy_to_worktree` and `.worktreeinclude`: bringing untracked files (build
//! outputs, `node_modules`, `.env`) from the host checkout into a new worktree.
//!
//! Files are copied from the host, never from the worktree; directories merge
//! into existing ones; symlinks stay symlinks; copy-on-write is used where the
//! filesystem offers it and never hard links (the agent would write into the
//! host's files).

use std::path::{Component, Path, PathBuf};

use globset::{Glob, GlobMatcher};
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
        source: std::io::Error,
    },
}

/// One file or symlink to copy.
struct Job {
    from: PathBuf,
    to: PathBuf,
    symlink: bool,
}

/// Walks `from`, creating directories under `to` (merging into existing ones)
/// and collecting the files and symlinks to copy.
fn plan(from: &Path, to: &Path, jobs: &mut Vec<Job>) -> Result<(), CopyError> {
    let io = |source| CopyError::Io {
        from: from.to_path_buf(),
        to: to.to_path_buf(),
        source,
    };
    let meta = from.symlink_metadata().map_err(io)?;
    if meta.file_type().is_symlink() {
        jobs.push(Job {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
            symlink: true,
        });
    } else if meta.is_dir() {
        if !to.is_dir() {
            std::fs::create_dir_all(to).map_err(io)?;
        }
        for entry in std::fs::read_dir(from).map_err(io)? {
            let entry = entry.map_err(io)?;
            plan(&entry.path(), &to.join(entry.file_name()), jobs)?;
        }
    } else if meta.is_file() {
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        jobs.push(Job {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
            symlink: false,
        });
    }
    Ok(())
}

/// Copies one file: copy-on-write while the filesystem allows it (remembered
/// in `reflink_works`), else an ordinary copy. Never a hard link.
fn copy_one(job: &Job, reflink_works: &mut bool) -> std::io::Result<()> {
    if job.to.symlink_metadata().is_ok() {
        std::fs::remove_file(&job.to)?;
    }
    if job.symlink {
        let target = std::fs::read_link(&job.from)?;
        return std::os::unix::fs::symlink(target, &job.to);
    }
    if *reflink_works {
        match reflink_copy::reflink(&job.from, &job.to) {
            Ok(()) => {
                let perms = std::fs::metadata(&job.from)?.permissions();
                return std::fs::set_permissions(&job.to, perms);
            }
            Err(_) => {
                *reflink_works = false;
                let _ = std::fs::remove_file(&job.to);
            }
        }
    }
    std::fs::copy(&job.from, &job.to).map(|_| ())
}

/// Copies every job; many small files are bound by filesystem latency, not
/// CPU, so a few threads copy at once.
fn run_jobs(jobs: Vec<Job>) -> Result<usize, CopyError> {
    let count = jobs.len();
    let threads = std::thread::available_parallelism()
        .map(|n| n.get() * 2)
        .unwrap_or(4)
        .clamp(1, 8)
        .min(count.div_ceil(256).max(1));
    let chunk = count.div_ceil(threads).max(1);
    let results: Vec<Result<(), CopyError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    let mut reflink_works = true;
                    for job in part {
                        copy_one(job, &mut reflink_works).map_err(|source| CopyError::Io {
                            from: job.from.clone(),
                            to: job.to.clone(),
                            source,
                        })?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(CopyError::Include("a copy thread panicked".into())))
            })
            .collect()
    });
    for r in results {
        r?;
    }
    Ok(count)
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

/// Top-level host paths (relative) that a glob matches; a matching directory
/// is returned whole and not descended into.
fn expand_glob(root: &Path, matcher: &GlobMatcher) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&rel)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if rel.as_os_str().is_empty() && (name == ".git" || name == ".slipway") {
                continue;
            }
            let child = rel.join(&name);
            if matcher.is_match(&child) {
                out.push(child);
            } else if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                stack.push(child);
            }
        }
    }
    out.sort();
    out
}

/// Ignored host paths selected by `.worktreeinclude` (gitignore syntax).
fn worktreeinclude_paths(host: &HostRepo) -> Result<Vec<PathBuf>, CopyError> {
    let root = host.root();
    let include_file = root.join(".worktreeinclude");
    if !include_file.is_file() {
        return Ok(Vec::new());
    }
    let mut builder = ignore::gitignore::GitignoreBuilder::new(root);
    if let Some(err) = builder.add(&include_file) {
        return Err(CopyError::Include(err.to_string()));
    }
    let matcher = builder
        .build()
        .map_err(|e| CopyError::Include(e.to_string()))?;
    let ignored =
        crate::git::ignored_paths(host.git()).map_err(|e| CopyError::Include(e.to_string()))?;
    let mut out = Vec::new();
    for path in &ignored {
        let is_dir = path.ends_with('/');
        let rel = PathBuf::from(path.trim_end_matches('/'));
        if rel.starts_with(".slipway") {
            continue;
        }
        if matcher
            .matched_path_or_any_parents(&rel, is_dir)
            .is_ignore()
        {
            out.push(rel);
        } else if is_dir {
            // A pattern may pick files deep inside an ignored folder.
            let mut stack = vec![rel];
            while let Some(dir) = stack.pop() {
                let Ok(entries) = std::fs::read_dir(root.join(&dir)) else {
                    continue;
                };
                for e in entries.flatten() {
                    let child = dir.join(e.file_name());
                    let child_is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
                    if matcher
                        .matched_path_or_any_parents(&child, child_is_dir)
                        .is_ignore()
                    {
                        out.push(child);
                    } else if child_is_dir {
                        stack.push(child);
                    }
                }
            }
        }
    }
    out.sort();
    Ok(out)
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

/// Copies the host paths named by `patterns` and by `.worktreeinclude` into `worktree`.
pub fn copy_into_worktree(
    host: &HostRepo,
    worktree: &Path,
    patterns: &[String],
) -> Result<CopyReport, CopyError> {
    let host_root = host.root();
    let mut report = CopyReport::default();
    let mut selected: Vec<PathBuf> = Vec::new();
    for pattern in patterns {
        let pattern = pattern.trim_end_matches('/');
        check_inside(pattern)?;
        if has_glob_chars(pattern) {
            let glob = compile(pattern)?;
            let found = expand_glob(host_root, &glob.compile_matcher());
            if found.is_empty() {
                report.warnings.push(format!(
                    "copy pattern '{pattern}' matched nothing in the host repository"
                ));
            }
            selected.extend(found);
        } else if host_root.join(pattern).symlink_metadata().is_ok() {
            selected.push(PathBuf::from(pattern));
        } else {
            report.warnings.push(format!(
                "'{pattern}' does not exist in the host repository; nothing copied"
            ));
        }
    }
    selected.extend(worktreeinclude_paths(host)?);
    selected.sort();
    selected.dedup();
    // A path inside one already selected is copied with its parent.
    let mut tops: Vec<PathBuf> = Vec::new();
    for path in selected {
        if !tops.iter().any(|t| path.starts_with(t)) {
            tops.push(path);
        }
    }
    let mut jobs = Vec::new();
    for rel in &tops {
        plan(&host_root.join(rel), &worktree.join(rel), &mut jobs)?;
        report.copied.push(rel.to_string_lossy().into_owned());
    }
    report.files = run_jobs(jobs)?;
    Ok(report)
}
