//! Source branch policy: where an isolated checkout starts. Resolution only reads refs.

use std::fmt;
use std::str::FromStr;

use git2::Repository;
use serde::{Deserialize, Serialize};

/// Where an isolated checkout starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "policy", rename_all = "snake_case")]
pub enum SourcePolicy {
    /// The exact commit of host HEAD (works detached).
    #[serde(alias = "host-head")]
    HostHead,
    /// The tip of the host's current branch.
    #[serde(alias = "current-branch")]
    CurrentBranch,
    /// `origin/HEAD`, else `init.defaultBranch`, else `main`.
    Default,
    /// A local branch or a remote-tracking ref.
    Named {
        /// `feature/x` (local) or `origin/feature/x` (remote-tracking).
        #[serde(rename = "ref")]
        reference: String,
    },
    /// The caller must choose at launch.
    Ask,
}

/// A policy name the parser did not recognise.
#[derive(Debug, thiserror::Error)]
#[error(
    "unknown source branch policy '{0}'; use host-head, current-branch, default, ask or named:REF"
)]
pub struct UnknownPolicy(pub String);

impl SourcePolicy {
    /// Builds a policy from a name (`host_head` or `host-head`, …) and an optional ref.
    ///
    /// `named` needs a ref; a ref with any other policy is refused.
    pub fn from_parts(name: &str, reference: Option<&str>) -> Result<SourcePolicy, PolicyArgError> {
        let policy = match name.replace('-', "_").as_str() {
            "host_head" => SourcePolicy::HostHead,
            "current_branch" => SourcePolicy::CurrentBranch,
            "default" => SourcePolicy::Default,
            "ask" => SourcePolicy::Ask,
            "named" => match reference {
                Some(r) if !r.trim().is_empty() => {
                    return Ok(SourcePolicy::Named {
                        reference: r.to_owned(),
                    });
                }
                _ => return Err(PolicyArgError::NamedWithoutRef),
            },
            other => return Err(PolicyArgError::Unknown(UnknownPolicy(other.to_owned()))),
        };
        if reference.is_some() {
            return Err(PolicyArgError::RefWithoutNamed {
                policy: policy.name().to_owned(),
            });
        }
        Ok(policy)
    }

    /// The policy's name as files and JSON spell it.
    pub fn name(&self) -> &'static str {
        match self {
            SourcePolicy::HostHead => "host_head",
            SourcePolicy::CurrentBranch => "current_branch",
            SourcePolicy::Default => "default",
            SourcePolicy::Named { .. } => "named",
            SourcePolicy::Ask => "ask",
        }
    }
}

/// A policy and ref combination that does not make sense.
#[derive(Debug, thiserror::Error)]
pub enum PolicyArgError {
    /// Unrecognised name.
    #[error(transparent)]
    Unknown(#[from] UnknownPolicy),
    /// `named` needs the branch.
    #[error("the named policy needs a branch: pass --ref BRANCH (e.g. --ref origin/feature/x)")]
    NamedWithoutRef,
    /// A ref only goes with `named`.
    #[error(
        "a ref was given with the {policy} policy; use --source named --ref REF, or drop the ref"
    )]
    RefWithoutNamed { policy: String },
}

impl FromStr for SourcePolicy {
    type Err = PolicyArgError;

    /// Parses the CLI grammar `host-head|current-branch|default|ask|named:REF`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.split_once(':') {
            Some((name, reference)) if name.replace('-', "_") == "named" => {
                SourcePolicy::from_parts("named", Some(reference))
            }
            _ => SourcePolicy::from_parts(s, None),
        }
    }
}

impl fmt::Display for SourcePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SourcePolicy::Named { reference } => write!(f, "named:{reference}"),
            other => f.write_str(other.name()),
        }
    }
}

/// The outcome of resolving a policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedSource {
    /// The commit the checkout starts at.
    pub commit: String,
    /// The full ref it was read from (`None` for a detached host HEAD).
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    /// A short human label, e.g. `origin/main (default)`.
    pub label: String,
}

impl ResolvedSource {
    /// The commit as a libgit2 id.
    pub fn oid(&self) -> git2::Oid {
        git2::Oid::from_str(&self.commit).expect("commit ids are written from real Oids")
    }
}

/// Why a policy could not be resolved. Each carries what the user can choose instead.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// `current_branch` with a detached HEAD.
    #[error("host HEAD is detached, so there is no current branch; choose host-head (the exact commit) or name a branch: {}", choices.join(", "))]
    DetachedHead { choices: Vec<String> },
    /// HEAD points at a branch with no commits.
    #[error("the host repository has no commits yet; commit something first")]
    UnbornHead,
    /// `default` found none of its candidates.
    #[error("no default branch: tried {}; choose one of: {}", tried.join(", "), if choices.is_empty() { "(no branches exist)".to_owned() } else { choices.join(", ") })]
    NoDefaultBranch {
        tried: Vec<String>,
        choices: Vec<String>,
    },
    /// `named` with a ref that does not exist.
    #[error("no branch named '{name}'; choose one of: {}", choices.join(", "))]
    UnknownRef { name: String, choices: Vec<String> },
    /// `ask` without a choice.
    #[error("a source branch must be chosen; choose one of: {}", choices.join(", "))]
    SourceBranchRequired { choices: Vec<String> },
    /// libgit2 failed while reading refs.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
}

impl SourceError {
    /// Stable machine-readable kind.
    pub fn kind(&self) -> crate::error::ErrorKind {
        match self {
            SourceError::DetachedHead { .. } => crate::error::ErrorKind::DetachedHead,
            SourceError::UnbornHead => crate::error::ErrorKind::UnbornHead,
            SourceError::NoDefaultBranch { .. } => crate::error::ErrorKind::NoDefaultBranch,
            SourceError::UnknownRef { .. } => crate::error::ErrorKind::UnknownRef,
            SourceError::SourceBranchRequired { .. } => {
                crate::error::ErrorKind::SourceBranchRequired
            }
            SourceError::Git(_) => crate::error::ErrorKind::Git,
        }
    }

    /// The branches the user could choose instead, when the error has them.
    pub fn choices(&self) -> &[String] {
        match self {
            SourceError::DetachedHead { choices }
            | SourceError::NoDefaultBranch { choices, .. }
            | SourceError::UnknownRef { choices, .. }
            | SourceError::SourceBranchRequired { choices } => choices,
            _ => &[],
        }
    }
}

/// Every branch a user could name: local branches, then remote-tracking ones.
pub fn branch_choices(repo: &Repository) -> Result<Vec<String>, git2::Error> {
    let mut local = Vec::new();
    let mut remote = Vec::new();
    for r in repo.references()? {
        let r = r?;
        let Some(name) = r.name().ok() else { continue };
        if let Some(short) = name.strip_prefix("refs/heads/") {
            local.push(short.to_owned());
        } else if let Some(short) = name.strip_prefix("refs/remotes/")
            && !short.ends_with("/HEAD")
        {
            remote.push(short.to_owned());
        }
    }
    local.sort();
    remote.sort();
    local.extend(remote);
    Ok(local)
}

/// The full ref `default` resolves to, or the list of candidates it tried.
pub fn default_branch_ref(repo: &Repository) -> Result<String, Vec<String>> {
    let mut tried = Vec::new();
    tried.push("origin/HEAD".to_owned());
    if let Ok(head) = repo.find_reference("refs/remotes/origin/HEAD")
        && let Some(target) = head.symbolic_target().ok().flatten()
        && repo.find_reference(target).is_ok()
    {
        return Ok(target.to_owned());
    }
    if let Ok(config) = repo.config()
        && let Ok(name) = config.get_string("init.defaultBranch")
    {
        let full = format!("refs/heads/{name}");
        tried.push(format!("init.defaultBranch ({name})"));
        if repo.find_reference(&full).is_ok() {
            return Ok(full);
        }
    }
    tried.push("main".to_owned());
    if repo.find_reference("refs/heads/main").is_ok() {
        return Ok("refs/heads/main".to_owned());
    }
    Err(tried)
}

/// Finds the full ref a user-given branch name means: a local branch first,
/// then a remote-tracking ref, then a full ref name, then a tag.
pub fn lookup_branch_ref(repo: &Repository, name: &str) -> Option<String> {
    let candidates = [
        format!("refs/heads/{name}"),
        format!("refs/remotes/{name}"),
        name.to_owned(),
        format!("refs/tags/{name}"),
    ];
    candidates.into_iter().find(|full| {
        full.starts_with("refs/")
            && repo
                .find_reference(full)
                .and_then(|r| r.peel_to_commit())
                .is_ok()
    })
}

/// A commit named by its id (full, or abbreviated to at least 7 hex digits).
fn lookup_commit_id(repo: &Repository, name: &str) -> Option<git2::Oid> {
    if name.len() < 7 || name.len() > 40 || !name.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    repo.find_object_by_prefix(name, Some(git2::ObjectType::Commit))
        .ok()
        .map(|o| o.id())
}

/// Shortens a full ref for display: `refs/heads/x` → `x`, `refs/remotes/o/x` → `o/x`.
pub fn short_ref(full: &str) -> &str {
    full.strip_prefix("refs/heads/")
        .or_else(|| full.strip_prefix("refs/remotes/"))
        .unwrap_or(full)
}

fn commit_of(repo: &Repository, full: &str) -> Result<git2::Oid, git2::Error> {
    Ok(repo.find_reference(full)?.peel_to_commit()?.id())
}

/// Resolves `policy` against the repository, reading refs only.
pub fn resolve(repo: &Repository, policy: &SourcePolicy) -> Result<ResolvedSource, SourceError> {
    match policy {
        SourcePolicy::HostHead => {
            let head = repo.head().map_err(|_| SourceError::UnbornHead)?;
            let commit = head.peel_to_commit().map_err(|_| SourceError::UnbornHead)?;
            let reference = if repo.head_detached().unwrap_or(false) {
                None
            } else {
                head.name().ok().map(str::to_owned)
            };
            let label = match &reference {
                Some(r) => format!("HEAD ({})", short_ref(r)),
                None => format!("HEAD (detached at {})", short_id(commit.id())),
            };
            Ok(ResolvedSource {
                commit: commit.id().to_string(),
                reference,
                label,
            })
        }
        SourcePolicy::CurrentBranch => {
            let head = repo.find_reference("HEAD")?;
            let Some(target) = head.symbolic_target().ok().flatten().map(str::to_owned) else {
                return Err(SourceError::DetachedHead {
                    choices: branch_choices(repo)?,
                });
            };
            let commit = commit_of(repo, &target).map_err(|_| SourceError::UnbornHead)?;
            Ok(ResolvedSource {
                commit: commit.to_string(),
                label: format!("{} (current branch)", short_ref(&target)),
                reference: Some(target),
            })
        }
        SourcePolicy::Default => match default_branch_ref(repo) {
            Ok(full) => Ok(ResolvedSource {
                commit: commit_of(repo, &full)?.to_string(),
                label: format!("{} (default)", short_ref(&full)),
                reference: Some(full),
            }),
            Err(tried) => Err(SourceError::NoDefaultBranch {
                tried,
                choices: branch_choices(repo)?,
            }),
        },
        SourcePolicy::Named { reference } => match lookup_branch_ref(repo, reference) {
            Some(full) => Ok(ResolvedSource {
                commit: commit_of(repo, &full)?.to_string(),
                label: short_ref(&full).to_owned(),
                reference: Some(full),
            }),
            None => match lookup_commit_id(repo, reference) {
                Some(oid) => Ok(ResolvedSource {
                    commit: oid.to_string(),
                    reference: None,
                    label: format!("commit {}", short_id(oid)),
                }),
                None => Err(SourceError::UnknownRef {
                    name: reference.clone(),
                    choices: branch_choices(repo)?,
                }),
            },
        },
        SourcePolicy::Ask => Err(SourceError::SourceBranchRequired {
            choices: branch_choices(repo)?,
        }),
    }
}

/// The first 10 hex digits of a commit id.
pub fn short_id(oid: git2::Oid) -> String {
    let mut s = oid.to_string();
    s.truncate(10);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_spellings_and_named_refs() {
        assert_eq!(
            "host-head".parse::<SourcePolicy>().ok(),
            Some(SourcePolicy::HostHead)
        );
        assert_eq!(
            "host_head".parse::<SourcePolicy>().ok(),
            Some(SourcePolicy::HostHead)
        );
        assert_eq!(
            "current-branch".parse::<SourcePolicy>().ok(),
            Some(SourcePolicy::CurrentBranch)
        );
        assert_eq!(
            "named:origin/feature/x".parse::<SourcePolicy>().ok(),
            Some(SourcePolicy::Named {
                reference: "origin/feature/x".into()
            })
        );
        assert!(matches!(
            "named".parse::<SourcePolicy>(),
            Err(PolicyArgError::NamedWithoutRef)
        ));
        assert!(matches!(
            "sideways".parse::<SourcePolicy>(),
            Err(PolicyArgError::Unknown(_))
        ));
        assert!(matches!(
            SourcePolicy::from_parts("default", Some("main")),
            Err(PolicyArgError::RefWithoutNamed { .. })
        ));
    }

    #[test]
    fn json_uses_snake_case_and_accepts_kebab_case() {
        let named: SourcePolicy =
            serde_json::from_str(r#"{"policy":"named","ref":"origin/x"}"#).expect("valid json");
        assert_eq!(
            named,
            SourcePolicy::Named {
                reference: "origin/x".into()
            }
        );
        let kebab: SourcePolicy =
            serde_json::from_str(r#"{"policy":"current-branch"}"#).expect("valid json");
        assert_eq!(kebab, SourcePolicy::CurrentBranch);
        assert_eq!(
            serde_json::to_string(&SourcePolicy::HostHead).expect("serialises"),
            r#"{"policy":"host_head"}"#
        );
    }
}
