//! The names workspace files use: isolations, sandbox kinds, strategies, agents.

use super::*;
/// How a mount reaches the container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// The host folder itself is mounted (writes land in the host checkout).
    Shared,
    /// A private git worktree of the host repository (host refs visible).
    Worktree,
    /// A private local clone (refs isolated until brought back).
    Clone,
}

impl Isolation {
    /// The name files, JSON and the command line use.
    pub fn name(self) -> &'static str {
        match self {
            Isolation::Shared => "shared",
            Isolation::Worktree => "worktree",
            Isolation::Clone => "clone",
        }
    }

    /// `worktree` and `clone` give the agent a private checkout.
    pub fn is_isolated(self) -> bool {
        !matches!(self, Isolation::Shared)
    }
}

impl fmt::Display for Isolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<Isolation> for crate::run::workspace::Isolation {
    fn from(i: Isolation) -> Self {
        match i {
            Isolation::Shared => crate::run::workspace::Isolation::Shared,
            Isolation::Worktree => crate::run::workspace::Isolation::Worktree,
            Isolation::Clone => crate::run::workspace::Isolation::Clone,
        }
    }
}

/// An isolation name that is none of `shared`, `worktree`, `clone`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown isolation '{0}'; use shared, worktree or clone")]
pub struct UnknownIsolation(pub String);

impl FromStr for Isolation {
    type Err = UnknownIsolation;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "shared" => Ok(Isolation::Shared),
            "worktree" => Ok(Isolation::Worktree),
            "clone" => Ok(Isolation::Clone),
            other => Err(UnknownIsolation(other.to_owned())),
        }
    }
}

/// Where a run's agent runs, as a workspace file names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxKind {
    /// A host process.
    None,
    /// A Docker container with bind mounts.
    Docker,
    /// A Docker container with code copied in and out.
    DockerIsolated,
}

impl SandboxKind {
    /// Every kind, in the order messages list them.
    pub const ALL: [SandboxKind; 3] = [
        SandboxKind::None,
        SandboxKind::Docker,
        SandboxKind::DockerIsolated,
    ];

    /// The name files and the command line use.
    pub fn name(self) -> &'static str {
        match self {
            SandboxKind::None => "none",
            SandboxKind::Docker => "docker",
            SandboxKind::DockerIsolated => "docker-isolated",
        }
    }

    /// Parses `none`, `docker`, `docker-isolated` (or `docker_isolated`).
    pub fn parse(s: &str) -> Option<SandboxKind> {
        let s = s.replace('_', "-");
        SandboxKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// Where the agent's commits land, as a workspace file names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StrategyKind {
    /// Straight into the host checkout.
    Head,
    /// A temporary branch merged back into the host's current branch.
    MergeToHead,
    /// A named branch, kept.
    Branch,
}

impl StrategyKind {
    /// Every strategy, in the order messages list them.
    pub const ALL: [StrategyKind; 3] = [
        StrategyKind::Head,
        StrategyKind::MergeToHead,
        StrategyKind::Branch,
    ];

    /// The name files and the command line use.
    pub fn name(self) -> &'static str {
        match self {
            StrategyKind::Head => "head",
            StrategyKind::MergeToHead => "merge-to-head",
            StrategyKind::Branch => "branch",
        }
    }

    /// Parses `head`, `merge-to-head` (or `merge_to_head`), `branch`.
    pub fn parse(s: &str) -> Option<StrategyKind> {
        let s = s.replace('_', "-");
        StrategyKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// The agent names a workspace file may use (as the command line spells them).
pub const AGENT_NAMES: [&str; 7] = [
    "command",
    "claude-code",
    "codex",
    "opencode",
    "pi",
    "cursor",
    "copilot",
];

/// Normalises an agent name (`claude_code` → `claude-code`), or `None` when unknown.
pub fn parse_agent(s: &str) -> Option<&'static str> {
    let s = s.replace('_', "-");
    AGENT_NAMES.into_iter().find(|n| *n == s)
}
