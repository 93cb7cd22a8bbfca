//! Command-line edits of a workspace (`slipway workspace create|edit`):
//! the grammar of `--mount`, `--mount-isolation` and `--mount-source-branch`,
//! and applying them to a [`Workspace`] so that comments and unknown keys of
//! the file survive.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::{Isolation, Mount, SandboxKind, StrategyKind, Workspace, normalize, parse_agent};
use crate::git::policy::SourcePolicy;

/// A command-line edit that cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// `--mount` that does not parse.
    #[error(
        "--mount {arg}: {reason}; use --mount SRC[:DST][:ro], e.g. --mount ~/src/app:/work/app"
    )]
    BadMount {
        /// The argument.
        arg: String,
        /// What is wrong.
        reason: String,
    },
    /// `--mount-isolation` / `--mount-source-branch` without `=`.
    #[error("{option} {arg}: expected DST=VALUE, e.g. {option} /work/app={example}")]
    BadAssignment {
        /// The option.
        option: &'static str,
        /// The argument.
        arg: String,
        /// A value that would fit.
        example: &'static str,
    },
    /// A DST that no mount has.
    #[error("{option} {arg}: no mount has dst {dst}; the mounts are: {known}")]
    UnknownMount {
        /// The option.
        option: &'static str,
        /// The argument.
        arg: String,
        /// The dst given.
        dst: String,
        /// The dsts there are.
        known: String,
    },
    /// An isolation name that does not parse.
    #[error("--mount-isolation {arg}: unknown isolation '{value}'; use shared, worktree or clone")]
    UnknownIsolation {
        /// The argument.
        arg: String,
        /// The value.
        value: String,
    },
    /// A policy that does not parse.
    #[error(
        "--mount-source-branch {arg}: unknown source branch policy '{value}'; use host-head, current-branch, default, ask or named:REF"
    )]
    UnknownPolicy {
        /// The argument.
        arg: String,
        /// The value.
        value: String,
    },
    /// `named` without a ref.
    #[error(
        "--mount-source-branch {arg}: the named policy needs a branch: use {dst}=named:BRANCH, e.g. {dst}=named:origin/main"
    )]
    NamedWithoutRef {
        /// The argument.
        arg: String,
        /// The dst.
        dst: String,
    },
    /// A policy for a mount that stays shared.
    #[error(
        "--mount-source-branch {arg}: mount {dst} is shared, and a shared mount always shows what the host has checked out; make it isolated in the same command with --mount-isolation {dst}=worktree (or clone)"
    )]
    PolicyOnSharedMount {
        /// The argument.
        arg: String,
        /// The dst.
        dst: String,
    },
    /// `shared` for a mount whose policy only an isolated mount can have.
    #[error(
        "--mount-isolation {arg}: mount {dst} starts from source branch policy {policy}, which only an isolated mount can have; add --mount-source-branch {dst}=host-head to the same command, or keep it isolated"
    )]
    SharedWithPolicy {
        /// The argument.
        arg: String,
        /// The dst.
        dst: String,
        /// The policy it has.
        policy: String,
    },
    /// An agent, sandbox or strategy name that does not parse.
    #[error("--{option} {value}: unknown; use {expected}")]
    UnknownName {
        /// The option.
        option: &'static str,
        /// The value.
        value: String,
        /// The allowed values.
        expected: &'static str,
    },
}

impl EditError {
    /// Stable machine-readable kind.
    pub fn kind(&self) -> crate::error::ErrorKind {
        match self {
            EditError::UnknownMount { .. } => crate::error::ErrorKind::UnknownMount,
            EditError::PolicyOnSharedMount { .. } | EditError::SharedWithPolicy { .. } => {
                crate::error::ErrorKind::PolicyOnSharedMount
            }
            _ => crate::error::ErrorKind::InvalidParams,
        }
    }
}

/// One `--mount SRC[:DST][:ro]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountArg {
    /// The host path, made absolute against the current directory.
    pub src: PathBuf,
    /// The container path (default: `src`).
    pub dst: PathBuf,
    /// `:ro` was given.
    pub readonly: bool,
}

impl MountArg {
    /// Parses `SRC[:DST][:ro|:rw]`. A relative SRC is taken from `cwd`; a
    /// leading `~/` is the user's home (`home`).
    pub fn parse(arg: &str, cwd: &Path, home: Option<&Path>) -> Result<MountArg, EditError> {
        let bad = |reason: &str| EditError::BadMount {
            arg: arg.to_owned(),
            reason: reason.to_owned(),
        };
        let mut parts: Vec<&str> = arg.split(':').collect();
        let mut readonly = false;
        if parts.len() > 1
            && let Some(last) = parts.last()
            && matches!(*last, "ro" | "rw")
        {
            readonly = *last == "ro";
            parts.pop();
        }
        let (src, dst) = match parts.as_slice() {
            [src] => (*src, None),
            [src, dst] => (*src, Some(*dst)),
            _ => return Err(bad("too many ':'")),
        };
        if src.is_empty() {
            return Err(bad("SRC is empty"));
        }
        let src = expand(src, cwd, home);
        let dst = match dst {
            None => src.clone(),
            Some("") => return Err(bad("DST is empty")),
            Some(d) => PathBuf::from(d),
        };
        if !dst.is_absolute() {
            return Err(bad("DST must be an absolute container path"));
        }
        Ok(MountArg {
            src: normalize(&src),
            dst: normalize(&dst),
            readonly,
        })
    }
}

fn expand(path: &str, cwd: &Path, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(h)) => h.join(rest),
        _ if path == "~" && home.is_some() => home.map(Path::to_path_buf).unwrap_or_default(),
        _ => {
            let p = PathBuf::from(path);
            if p.is_absolute() { p } else { cwd.join(p) }
        }
    }
}

/// What one `create` or `edit` command asks for (raw strings, as typed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EditRequest {
    /// `--workdir DST`.
    pub workdir: Option<String>,
    /// `--mount SRC[:DST][:ro]` (repeatable): adds a mount, or replaces the
    /// `src` and `readonly` of the mount at that DST.
    pub mounts: Vec<String>,
    /// `--remove-mount DST` (repeatable; `edit` only).
    pub remove_mounts: Vec<String>,
    /// `--mount-isolation DST=shared|worktree|clone` (repeatable).
    pub isolation: Vec<String>,
    /// `--mount-source-branch DST=host-head|current-branch|default|ask|named:REF` (repeatable).
    pub source_branch: Vec<String>,
    /// `--agent NAME`.
    pub agent: Option<String>,
    /// `--sandbox none|docker|docker-isolated`.
    pub sandbox: Option<String>,
    /// `--image IMAGE`.
    pub image: Option<String>,
    /// `--strategy head|merge-to-head|branch`.
    pub strategy: Option<String>,
}

fn known_dsts(ws: &Workspace) -> String {
    if ws.mounts.is_empty() {
        "(none yet; add one with --mount SRC:DST)".to_owned()
    } else {
        ws.mounts
            .iter()
            .map(Mount::label)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn split_assignment<'a>(
    option: &'static str,
    arg: &'a str,
    example: &'static str,
) -> Result<(&'a str, &'a str), EditError> {
    match arg.split_once('=') {
        Some((dst, value)) if !dst.is_empty() && !value.is_empty() => Ok((dst, value)),
        _ => Err(EditError::BadAssignment {
            option,
            arg: arg.to_owned(),
            example,
        }),
    }
}

fn find_mount(
    ws: &Workspace,
    option: &'static str,
    arg: &str,
    dst: &str,
) -> Result<usize, EditError> {
    let wanted = normalize(Path::new(dst));
    ws.mounts
        .iter()
        .position(|m| normalize(&m.dst) == wanted)
        .ok_or_else(|| EditError::UnknownMount {
            option,
            arg: arg.to_owned(),
            dst: dst.to_owned(),
            known: known_dsts(ws),
        })
}

/// Parses the CLI policy grammar for one mount.
fn parse_policy(arg: &str, dst: &str, value: &str) -> Result<SourcePolicy, EditError> {
    if let Some((name, reference)) = value.split_once(':')
        && name.replace('-', "_") == "named"
    {
        if reference.trim().is_empty() {
            return Err(EditError::NamedWithoutRef {
                arg: arg.to_owned(),
                dst: dst.to_owned(),
            });
        }
        return Ok(SourcePolicy::Named {
            reference: reference.to_owned(),
        });
    }
    match value.replace('-', "_").as_str() {
        "host_head" => Ok(SourcePolicy::HostHead),
        "current_branch" => Ok(SourcePolicy::CurrentBranch),
        "default" => Ok(SourcePolicy::Default),
        "ask" => Ok(SourcePolicy::Ask),
        "named" => Err(EditError::NamedWithoutRef {
            arg: arg.to_owned(),
            dst: dst.to_owned(),
        }),
        _ => Err(EditError::UnknownPolicy {
            arg: arg.to_owned(),
            value: value.to_owned(),
        }),
    }
}

/// Applies `req` to `ws` in memory, in this order: removed mounts, added or
/// replaced mounts, isolation, source branch policies, workdir, run defaults.
/// Nothing is written; call [`Workspace::save`], which validates first.
///
/// A policy other than `host-head` is accepted for a mount only when the mount
/// is isolated once this command is applied (the same command may make it so).
pub fn apply(
    ws: &mut Workspace,
    req: &EditRequest,
    cwd: &Path,
    home: Option<&Path>,
) -> Result<(), EditError> {
    for dst in &req.remove_mounts {
        let i = find_mount(ws, "--remove-mount", dst, dst)?;
        ws.mounts.remove(i);
    }
    for arg in &req.mounts {
        let parsed = MountArg::parse(arg, cwd, home)?;
        match ws
            .mounts
            .iter_mut()
            .find(|m| normalize(&m.dst) == parsed.dst)
        {
            Some(existing) => {
                existing.src = parsed.src;
                existing.readonly = parsed.readonly;
            }
            None => {
                let mut m = Mount::new(parsed.src, parsed.dst);
                m.readonly = parsed.readonly;
                ws.mounts.push(m);
            }
        }
    }
    let mut set_policy: HashSet<usize> = HashSet::new();
    let mut policies = Vec::new();
    for arg in &req.source_branch {
        let (dst, value) = split_assignment("--mount-source-branch", arg, "default")?;
        let i = find_mount(ws, "--mount-source-branch", arg, dst)?;
        policies.push((i, arg, dst, parse_policy(arg, dst, value)?));
        set_policy.insert(i);
    }
    for arg in &req.isolation {
        let (dst, value) = split_assignment("--mount-isolation", arg, "worktree")?;
        let i = find_mount(ws, "--mount-isolation", arg, dst)?;
        let isolation = value
            .parse::<Isolation>()
            .map_err(|_| EditError::UnknownIsolation {
                arg: arg.to_owned(),
                value: value.to_owned(),
            })?;
        let m = &mut ws.mounts[i];
        if isolation == Isolation::Shared
            && m.policy != SourcePolicy::HostHead
            && !set_policy.contains(&i)
        {
            return Err(EditError::SharedWithPolicy {
                arg: arg.to_owned(),
                dst: dst.to_owned(),
                policy: m.policy.to_string(),
            });
        }
        m.isolation = isolation;
    }
    for (i, arg, dst, policy) in policies {
        let m = &mut ws.mounts[i];
        if policy != SourcePolicy::HostHead && !m.isolation.is_isolated() {
            return Err(EditError::PolicyOnSharedMount {
                arg: arg.to_owned(),
                dst: dst.to_owned(),
            });
        }
        m.policy = policy;
    }
    if let Some(w) = &req.workdir {
        ws.workdir = Some(PathBuf::from(w));
    }
    if let Some(a) = &req.agent {
        let name = parse_agent(a).ok_or_else(|| EditError::UnknownName {
            option: "agent",
            value: a.clone(),
            expected: "command, claude-code, codex, opencode, pi, cursor or copilot",
        })?;
        ws.defaults.agent = Some(name.to_owned());
    }
    if let Some(s) = &req.sandbox {
        ws.defaults.sandbox =
            Some(SandboxKind::parse(s).ok_or_else(|| EditError::UnknownName {
                option: "sandbox",
                value: s.clone(),
                expected: "none, docker or docker-isolated",
            })?);
    }
    if let Some(image) = &req.image {
        ws.defaults.image = Some(image.clone());
    }
    if let Some(s) = &req.strategy {
        ws.defaults.strategy =
            Some(
                StrategyKind::parse(s).ok_or_else(|| EditError::UnknownName {
                    option: "strategy",
                    value: s.clone(),
                    expected: "head, merge-to-head or branch",
                })?,
            );
    }
    Ok(())
}
