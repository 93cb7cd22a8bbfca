//! Workspace rules. Every error names the file, the mount (by its `dst`) and
//! the fix, and has a stable [`ValidationError::kind`].
//!
//! Host repositories are only read (through `git::inspect_folder` and
//! `git::in_progress_at`): nothing here writes to them or runs a program they name.

use std::path::{Path, PathBuf};

use super::{FileKind, Isolation, Workspace, normalize};
use crate::git::policy::SourcePolicy;
use crate::git::{Folder, InProgress, in_progress_at, inspect_folder};

/// A workspace file that breaks a rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// `version` is not a positive whole number.
    #[error("{}: version = {found} is not a schema version; use a whole number such as version = {}", file.display(), super::CURRENT_VERSION)]
    BadVersion {
        /// The file.
        file: PathBuf,
        /// The value as written.
        found: String,
    },
    /// The file was written by a newer slipway.
    #[error("{}: this workspace file is version {version}; this slipway understands up to {supported}: upgrade slipway", file.display())]
    VersionTooNew {
        /// The file.
        file: PathBuf,
        /// Its version.
        version: u32,
        /// The newest version this binary reads.
        supported: u32,
    },
    /// A key holds the wrong kind of value.
    #[error("{}: {at}: {key} must be {expected}, not {found}", file.display())]
    WrongType {
        /// The file.
        file: PathBuf,
        /// Where: `top level`, `mount /work/app`, `[hooks.host]`.
        at: String,
        /// The key.
        key: String,
        /// What it must be.
        expected: String,
        /// What it is.
        found: String,
    },
    /// A name that is not one of the allowed ones.
    #[error("{}: {at}: {key} = \"{value}\" is not known; use {expected}", file.display())]
    UnknownValue {
        /// The file.
        file: PathBuf,
        /// Where.
        at: String,
        /// The key.
        key: String,
        /// The value as written.
        value: String,
        /// The allowed values.
        expected: String,
    },
    /// A mount without `src`.
    #[error("{}: mount {mount} has no src; add src = \"/host/path\", the host folder to mount", file.display())]
    MissingSrc {
        /// The file.
        file: PathBuf,
        /// The mount (dst, else `#N`).
        mount: String,
    },
    /// A version 1 `isolated` beside a version 2 `isolation`.
    #[error("{}: mount {mount} has both isolated (version 1) and isolation (version 2); remove isolated and keep isolation", file.display())]
    ConflictingKeys {
        /// The file.
        file: PathBuf,
        /// The mount.
        mount: String,
    },
    /// `source_branch` with a policy other than `named`.
    #[error("{}: mount {mount} has source_branch = \"{branch}\" but source_branch_policy is {policy}; source_branch only goes with the named policy: set source_branch_policy = \"named\", or remove source_branch", file.display())]
    SourceBranchWithoutNamed {
        /// The file.
        file: PathBuf,
        /// The mount.
        mount: String,
        /// The policy it has.
        policy: String,
        /// The branch given.
        branch: String,
    },
    /// `named` without `source_branch`.
    #[error("{}: mount {mount} has source_branch_policy = \"named\" but no source_branch; add source_branch = \"BRANCH\" (a local branch such as main, or a remote-tracking one such as origin/main)", file.display())]
    NamedWithoutSourceBranch {
        /// The file.
        file: PathBuf,
        /// The mount.
        mount: String,
    },
    /// A shared mount with a policy other than `host_head`.
    #[error("{}: mount {mount} is shared but has source_branch_policy = \"{policy}\"; a shared mount is the host folder itself, at whatever the host has checked out, so only host_head applies: set isolation = \"worktree\" (or \"clone\") to start from another branch, or remove source_branch_policy", file.display())]
    PolicyOnSharedMount {
        /// The file.
        file: PathBuf,
        /// The mount.
        mount: String,
        /// The policy's name.
        policy: String,
    },
    /// A relative `src`.
    #[error("{}: mount {mount}: src = \"{}\" is not an absolute path; write the full host path, e.g. \"/home/me/project\"", file.display(), src.display())]
    SrcNotAbsolute {
        /// The file.
        file: PathBuf,
        /// The mount.
        mount: String,
        /// The src.
        src: PathBuf,
    },
    /// A `src` that does not exist.
    #[error("{}: mount {mount}: src {} does not exist; create it, or point src at an existing host path", file.display(), src.display())]
    SrcMissing {
        /// The file.
        file: PathBuf,
        /// The mount.
        mount: String,
        /// The src.
        src: PathBuf,
    },
    /// A relative `dst`, or one with `..`.
    #[error("{}: mount {mount}: dst must be an absolute container path without '..', such as /work/app", file.display())]
    DstNotAbsolute {
        /// The file.
        file: PathBuf,
        /// The mount (its dst as written).
        mount: String,
    },
    /// `dst = "/"`.
    #[error("{}: mount {mount}: dst cannot be / (the container's root); mount it at a folder such as /work/app", file.display())]
    DstIsRoot {
        /// The file.
        file: PathBuf,
        /// The mount.
        mount: String,
    },
    /// Two mounts with one `dst`.
    #[error("{}: two mounts have dst {mount}; give each mount its own container path", file.display())]
    DuplicateDst {
        /// The file.
        file: PathBuf,
        /// The shared dst.
        mount: String,
    },
    /// A relative `workdir`.
    #[error("{}: workdir = \"{}\" is not an absolute container path; use the dst of a mount, or a folder inside one", file.display(), workdir.display())]
    WorkdirNotAbsolute {
        /// The file.
        file: PathBuf,
        /// The workdir.
        workdir: PathBuf,
    },
    /// A `workdir` no mount covers.
    #[error("{}: workdir {} is not inside any mount; set workdir to one of {dsts} (or a folder inside one), or add a mount that covers it", file.display(), workdir.display())]
    WorkdirNotCovered {
        /// The file.
        file: PathBuf,
        /// The workdir.
        workdir: PathBuf,
        /// The mounts' dsts, comma-separated.
        dsts: String,
    },
    /// A named workspace without mounts.
    #[error("{}: the workspace has no mounts; add a [[mounts]] table with src and dst", file.display())]
    NoMounts {
        /// The file.
        file: PathBuf,
    },
    /// An isolated mount whose `src` is no repository.
    #[error("{}: mount {mount}: src {} is not a git repository, so it cannot be isolated in a {isolation}; point src at a repository root, or set isolation = \"shared\"", file.display(), src.display())]
    NotARepository {
        /// The file.
        file: PathBuf,
        /// The mount.
        mount: String,
        /// The src.
        src: PathBuf,
        /// `worktree` or `clone`.
        isolation: Isolation,
    },
    /// An isolated mount whose `src` is a folder inside a repository.
    #[error("{}: mount {mount}: src {} is a folder inside the repository at {}; a {isolation} mount isolates a whole repository: set src = \"{}\", or set isolation = \"shared\"", file.display(), src.display(), root.display(), root.display())]
    NotRepositoryRoot {
        /// The file.
        file: PathBuf,
        /// The mount.
        mount: String,
        /// The src.
        src: PathBuf,
        /// The repository's root.
        root: PathBuf,
        /// `worktree` or `clone`.
        isolation: Isolation,
    },
    /// An isolated mount of a bare repository.
    #[error("{}: mount {mount}: src {} is a bare repository, with no checkout to isolate; point src at a repository with a working tree, or set isolation = \"shared\"", file.display(), src.display())]
    BareRepository {
        /// The file.
        file: PathBuf,
        /// The mount.
        mount: String,
        /// The src.
        src: PathBuf,
    },
    /// `readonly` on an isolated mount.
    #[error("{}: mount {mount} is readonly but isolated ({isolation}); a private checkout exists for the agent to write in: remove readonly, or set isolation = \"shared\" for a read-only view of the host folder", file.display())]
    ReadonlyIsolated {
        /// The file.
        file: PathBuf,
        /// The mount.
        mount: String,
        /// `worktree` or `clone`.
        isolation: Isolation,
    },
    /// One isolated mount's host folder inside another's.
    #[error("{}: isolated mounts may not nest: mount {inner} (src {}) is inside mount {outer} (src {}); isolate only one of them and set the other to isolation = \"shared\"", file.display(), inner_src.display(), outer_src.display())]
    NestedIsolatedSrc {
        /// The file.
        file: PathBuf,
        /// The enclosing mount.
        outer: String,
        /// Its src (resolved).
        outer_src: PathBuf,
        /// The enclosed mount.
        inner: String,
        /// Its src (resolved).
        inner_src: PathBuf,
    },
    /// One isolated mount's container path inside another's.
    #[error("{}: isolated mounts may not nest: mount {inner} is inside mount {outer} in the container; give them separate container paths, e.g. /work/a and /work/b", file.display())]
    NestedIsolatedDst {
        /// The file.
        file: PathBuf,
        /// The enclosing mount.
        outer: String,
        /// The enclosed mount.
        inner: String,
    },
    /// Two `worktree` mounts of one repository.
    #[error("{}: mounts {first} and {second} are both worktree mounts of the repository at {}; a workspace gets one worktree of a repository: remove one of them, or set one to isolation = \"clone\"", file.display(), repo.display())]
    TwoWorktreesOfOneRepository {
        /// The file.
        file: PathBuf,
        /// The first mount.
        first: String,
        /// The second mount.
        second: String,
        /// The repository (its common git dir's working tree, resolved).
        repo: PathBuf,
    },
    /// A host repository in the middle of a rebase, merge, cherry-pick, ….
    #[error("{}: mount {mount}: the host repository {} is in the middle of a {operation}; finish or abort it first ({commands}), then launch again", file.display(), repo.display())]
    HostRepoBusy {
        /// The file.
        file: PathBuf,
        /// The mount.
        mount: String,
        /// The repository.
        repo: PathBuf,
        /// `rebase`, `merge`, `cherry-pick`, `revert`, `bisect`, `git am`.
        operation: String,
        /// How to finish or abort it.
        commands: String,
    },
    /// libgit2 failed while reading a repository.
    #[error("{}: mount {mount}: cannot read the repository at {}: {message}", file.display(), src.display())]
    Git {
        /// The file.
        file: PathBuf,
        /// The mount.
        mount: String,
        /// The src.
        src: PathBuf,
        /// libgit2's message.
        message: String,
    },
}

impl ValidationError {
    /// Stable machine-readable kind.
    pub fn kind(&self) -> crate::error::ErrorKind {
        match self {
            ValidationError::BadVersion { .. } => crate::error::ErrorKind::BadVersion,
            ValidationError::VersionTooNew { .. } => crate::error::ErrorKind::VersionTooNew,
            ValidationError::WrongType { .. } => crate::error::ErrorKind::WrongType,
            ValidationError::UnknownValue { .. } => crate::error::ErrorKind::UnknownValue,
            ValidationError::MissingSrc { .. } => crate::error::ErrorKind::MissingSrc,
            ValidationError::ConflictingKeys { .. } => crate::error::ErrorKind::ConflictingKeys,
            ValidationError::SourceBranchWithoutNamed { .. } => {
                crate::error::ErrorKind::SourceBranchWithoutNamed
            }
            ValidationError::NamedWithoutSourceBranch { .. } => {
                crate::error::ErrorKind::NamedWithoutSourceBranch
            }
            ValidationError::PolicyOnSharedMount { .. } => {
                crate::error::ErrorKind::PolicyOnSharedMount
            }
            ValidationError::SrcNotAbsolute { .. } => crate::error::ErrorKind::SrcNotAbsolute,
            ValidationError::SrcMissing { .. } => crate::error::ErrorKind::SrcMissing,
            ValidationError::DstNotAbsolute { .. } => crate::error::ErrorKind::DstNotAbsolute,
            ValidationError::DstIsRoot { .. } => crate::error::ErrorKind::DstIsRoot,
            ValidationError::DuplicateDst { .. } => crate::error::ErrorKind::DuplicateDst,
            ValidationError::WorkdirNotAbsolute { .. } => {
                crate::error::ErrorKind::WorkdirNotAbsolute
            }
            ValidationError::WorkdirNotCovered { .. } => crate::error::ErrorKind::WorkdirNotCovered,
            ValidationError::NoMounts { .. } => crate::error::ErrorKind::NoMounts,
            ValidationError::NotARepository { .. } => crate::error::ErrorKind::NotARepository,
            ValidationError::NotRepositoryRoot { .. } => crate::error::ErrorKind::NotRepositoryRoot,
            ValidationError::BareRepository { .. } => crate::error::ErrorKind::BareRepository,
            ValidationError::ReadonlyIsolated { .. } => {
                crate::error::ErrorKind::ReadonlyIsolatedMount
            }
            ValidationError::NestedIsolatedSrc { .. }
            | ValidationError::NestedIsolatedDst { .. } => {
                crate::error::ErrorKind::NestedIsolatedMounts
            }
            ValidationError::TwoWorktreesOfOneRepository { .. } => {
                crate::error::ErrorKind::TwoWorktreesOfOneRepository
            }
            ValidationError::HostRepoBusy { .. } => crate::error::ErrorKind::HostRepoBusy,
            ValidationError::Git { .. } => crate::error::ErrorKind::Git,
        }
    }

    /// The mount the error is about (its dst as written), when it is about one.
    pub fn mount(&self) -> Option<&str> {
        match self {
            ValidationError::MissingSrc { mount, .. }
            | ValidationError::ConflictingKeys { mount, .. }
            | ValidationError::SourceBranchWithoutNamed { mount, .. }
            | ValidationError::NamedWithoutSourceBranch { mount, .. }
            | ValidationError::PolicyOnSharedMount { mount, .. }
            | ValidationError::SrcNotAbsolute { mount, .. }
            | ValidationError::SrcMissing { mount, .. }
            | ValidationError::DstNotAbsolute { mount, .. }
            | ValidationError::DstIsRoot { mount, .. }
            | ValidationError::DuplicateDst { mount, .. }
            | ValidationError::NotARepository { mount, .. }
            | ValidationError::NotRepositoryRoot { mount, .. }
            | ValidationError::BareRepository { mount, .. }
            | ValidationError::ReadonlyIsolated { mount, .. }
            | ValidationError::HostRepoBusy { mount, .. }
            | ValidationError::Git { mount, .. } => Some(mount),
            ValidationError::NestedIsolatedSrc { inner, .. }
            | ValidationError::NestedIsolatedDst { inner, .. } => Some(inner),
            ValidationError::TwoWorktreesOfOneRepository { second, .. } => Some(second),
            _ => None,
        }
    }
}

/// What validation learnt about an isolated mount's repository.
struct RepoFacts {
    /// The mount's index.
    index: usize,
    /// The resolved working tree (= the resolved src).
    root: PathBuf,
    /// The resolved common git dir (one per repository, shared by its worktrees).
    common_dir: PathBuf,
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| normalize(path))
}

/// Checks that an isolated mount's src is a repository root.
fn check_repo_root(
    file: &Path,
    mount: &str,
    src: &Path,
    isolation: Isolation,
) -> Result<(PathBuf, PathBuf), ValidationError> {
    let resolved = canonical(src);
    match inspect_folder(&resolved) {
        Folder::CheckoutRoot { common_dir } => Ok((resolved, common_dir)),
        Folder::Bare => Err(ValidationError::BareRepository {
            file: file.to_path_buf(),
            mount: mount.to_owned(),
            src: src.to_path_buf(),
        }),
        Folder::Inside { root } => Err(ValidationError::NotRepositoryRoot {
            file: file.to_path_buf(),
            mount: mount.to_owned(),
            src: src.to_path_buf(),
            root,
            isolation,
        }),
        Folder::NotRepository { .. } => Err(ValidationError::NotARepository {
            file: file.to_path_buf(),
            mount: mount.to_owned(),
            src: src.to_path_buf(),
            isolation,
        }),
    }
}

/// Every rule that does not depend on repository state, in a fixed order:
/// each mount in turn, then rules across mounts, then `workdir`.
pub(crate) fn problems(ws: &Workspace) -> Vec<ValidationError> {
    let file = ws.path.as_path();
    let mut out = Vec::new();
    let mut repos: Vec<RepoFacts> = Vec::new();
    // Mounts whose src and dst are usable for the rules across mounts.
    let mut sound = vec![true; ws.mounts.len()];

    for (i, m) in ws.mounts.iter().enumerate() {
        let mount = m.label();
        let dst_ok = m.dst.is_absolute()
            && !m
                .dst
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir));
        if !dst_ok {
            out.push(ValidationError::DstNotAbsolute {
                file: file.to_path_buf(),
                mount: mount.clone(),
            });
            sound[i] = false;
        } else if normalize(&m.dst) == Path::new("/") {
            out.push(ValidationError::DstIsRoot {
                file: file.to_path_buf(),
                mount: mount.clone(),
            });
            sound[i] = false;
        }
        if m.isolation == Isolation::Shared && m.policy != SourcePolicy::HostHead {
            out.push(ValidationError::PolicyOnSharedMount {
                file: file.to_path_buf(),
                mount: mount.clone(),
                policy: m.policy.name().to_owned(),
            });
        }
        if m.isolation.is_isolated() && m.readonly {
            out.push(ValidationError::ReadonlyIsolated {
                file: file.to_path_buf(),
                mount: mount.clone(),
                isolation: m.isolation,
            });
        }
        if !m.src.is_absolute() {
            out.push(ValidationError::SrcNotAbsolute {
                file: file.to_path_buf(),
                mount: mount.clone(),
                src: m.src.clone(),
            });
            sound[i] = false;
            continue;
        }
        if !m.src.exists() {
            out.push(ValidationError::SrcMissing {
                file: file.to_path_buf(),
                mount: mount.clone(),
                src: m.src.clone(),
            });
            sound[i] = false;
            continue;
        }
        if m.isolation.is_isolated() {
            match check_repo_root(file, &mount, &m.src, m.isolation) {
                Ok((root, common_dir)) => repos.push(RepoFacts {
                    index: i,
                    root,
                    common_dir,
                }),
                Err(e) => {
                    out.push(e);
                    sound[i] = false;
                }
            }
        }
    }

    if ws.mounts.is_empty() && matches!(ws.file_kind(), FileKind::Named(_)) {
        out.push(ValidationError::NoMounts {
            file: file.to_path_buf(),
        });
    }

    // dst unique.
    for (j, m) in ws.mounts.iter().enumerate() {
        if !sound[j] {
            continue;
        }
        let dst = normalize(&m.dst);
        if ws.mounts[..j]
            .iter()
            .enumerate()
            .any(|(i, o)| sound[i] && normalize(&o.dst) == dst)
        {
            out.push(ValidationError::DuplicateDst {
                file: file.to_path_buf(),
                mount: m.label(),
            });
        }
    }

    // One worktree mount per repository (resolved: symlinks, `..`, linked worktrees).
    for (b, rb) in repos.iter().enumerate() {
        if ws.mounts[rb.index].isolation != Isolation::Worktree {
            continue;
        }
        if let Some(ra) = repos[..b].iter().find(|ra| {
            ws.mounts[ra.index].isolation == Isolation::Worktree && ra.common_dir == rb.common_dir
        }) {
            let repo = match rb.common_dir.file_name() {
                Some(n) if n == ".git" => rb
                    .common_dir
                    .parent()
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| rb.common_dir.clone()),
                _ => rb.common_dir.clone(),
            };
            out.push(ValidationError::TwoWorktreesOfOneRepository {
                file: file.to_path_buf(),
                first: ws.mounts[ra.index].label(),
                second: ws.mounts[rb.index].label(),
                repo,
            });
        }
    }

    // Isolated mounts do not nest, on the host or in the container.
    for (b, rb) in repos.iter().enumerate() {
        for ra in &repos[..b] {
            let (a, bm) = (&ws.mounts[ra.index], &ws.mounts[rb.index]);
            if ra.common_dir == rb.common_dir
                && a.isolation == Isolation::Worktree
                && bm.isolation == Isolation::Worktree
            {
                continue; // already reported as one repository twice
            }
            let nested = if rb.root == ra.root {
                None // the same repository twice (a clone beside a worktree, say)
            } else if rb.root.starts_with(&ra.root) {
                Some((ra, rb))
            } else if ra.root.starts_with(&rb.root) {
                Some((rb, ra))
            } else {
                None
            };
            if let Some((outer, inner)) = nested {
                out.push(ValidationError::NestedIsolatedSrc {
                    file: file.to_path_buf(),
                    outer: ws.mounts[outer.index].label(),
                    outer_src: outer.root.clone(),
                    inner: ws.mounts[inner.index].label(),
                    inner_src: inner.root.clone(),
                });
            }
        }
    }
    let isolated: Vec<usize> = (0..ws.mounts.len())
        .filter(|&i| sound[i] && ws.mounts[i].isolation.is_isolated())
        .collect();
    for (bi, &b) in isolated.iter().enumerate() {
        for &a in &isolated[..bi] {
            let (da, db) = (normalize(&ws.mounts[a].dst), normalize(&ws.mounts[b].dst));
            if da == db {
                continue; // a duplicate dst, reported above
            }
            let nested = if db.starts_with(&da) {
                Some((a, b))
            } else if da.starts_with(&db) {
                Some((b, a))
            } else {
                None
            };
            if let Some((outer, inner)) = nested {
                out.push(ValidationError::NestedIsolatedDst {
                    file: file.to_path_buf(),
                    outer: ws.mounts[outer].label(),
                    inner: ws.mounts[inner].label(),
                });
            }
        }
    }

    if let Some(workdir) = &ws.workdir {
        if !workdir.is_absolute() {
            out.push(ValidationError::WorkdirNotAbsolute {
                file: file.to_path_buf(),
                workdir: workdir.clone(),
            });
        } else if !ws.mounts.is_empty() {
            let w = normalize(workdir);
            let covered = ws
                .mounts
                .iter()
                .any(|m| m.dst.is_absolute() && w.starts_with(normalize(&m.dst)));
            if !covered {
                let dsts = ws
                    .mounts
                    .iter()
                    .map(Mount::label)
                    .collect::<Vec<_>>()
                    .join(", ");
                out.push(ValidationError::WorkdirNotCovered {
                    file: file.to_path_buf(),
                    workdir: workdir.clone(),
                    dsts,
                });
            }
        }
    }
    out
}

use super::Mount;

/// The operation a repository is in the middle of, and how to finish or abort it.
fn busy(operation: InProgress) -> (&'static str, &'static str) {
    match operation {
        InProgress::Merge => ("merge", "git commit, or git merge --abort"),
        InProgress::Revert => ("revert", "git revert --continue, or git revert --abort"),
        InProgress::CherryPick => (
            "cherry-pick",
            "git cherry-pick --continue, or git cherry-pick --abort",
        ),
        InProgress::Bisect => ("bisect", "git bisect reset"),
        InProgress::Rebase => ("rebase", "git rebase --continue, or git rebase --abort"),
        InProgress::ApplyMailbox => ("git am", "git am --continue, or git am --abort"),
    }
}

/// Launch-time checks: no host repository behind a mount (every isolated
/// mount, and every shared mount whose src is a repository root) is in the
/// middle of a rebase, merge, cherry-pick, revert, bisect or `git am`.
pub(crate) fn launch_checks(ws: &Workspace) -> Result<(), ValidationError> {
    let file = ws.path.as_path();
    for m in &ws.mounts {
        let state = match in_progress_at(&m.src) {
            Ok(state) => state,
            Err(e) if m.isolation.is_isolated() => {
                return Err(ValidationError::Git {
                    file: file.to_path_buf(),
                    mount: m.label(),
                    src: m.src.clone(),
                    message: e.message().to_owned(),
                });
            }
            Err(_) => continue, // a shared folder that is no repository root
        };
        if !matches!(
            inspect_folder(&canonical(&m.src)),
            Folder::CheckoutRoot { .. }
        ) {
            continue;
        }
        if let Some((operation, commands)) = state.map(busy) {
            return Err(ValidationError::HostRepoBusy {
                file: file.to_path_buf(),
                mount: m.label(),
                repo: m.src.clone(),
                operation: operation.to_owned(),
                commands: commands.to_owned(),
            });
        }
    }
    Ok(())
}
