//! Run defaults a workspace, or a repository's `slipway.toml`, carries.

use super::*;
/// Commands run before the agent: `hooks.host.on_worktree_ready` and
/// `hooks.sandbox.on_sandbox_ready`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookDefaults {
    /// Run on the host, in the checkout, before the sandbox starts.
    pub host_on_worktree_ready: Vec<String>,
    /// Run inside the sandbox before the agent.
    pub sandbox_on_sandbox_ready: Vec<String>,
}

impl HookDefaults {
    /// No hooks at all.
    pub fn is_empty(&self) -> bool {
        self.host_on_worktree_ready.is_empty() && self.sandbox_on_sandbox_ready.is_empty()
    }
}

/// Run defaults a workspace (or a repository's `slipway.toml`) carries; the
/// command line overrides each of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunDefaults {
    /// The agent (`claude-code`, `codex`, …, or `command`).
    pub agent: Option<String>,
    /// Where the agent runs.
    pub sandbox: Option<SandboxKind>,
    /// The container image of docker sandboxes.
    pub image: Option<String>,
    /// Where the agent's commits land.
    pub strategy: Option<StrategyKind>,
    /// Where a new worktree's branch starts (`host_head` when unset).
    pub source: Option<crate::git::policy::SourcePolicy>,
    /// Hooks.
    pub hooks: HookDefaults,
    /// Host paths (globs) copied into each new private checkout.
    pub copy_to_worktree: Vec<String>,
    /// Budgets (`max_tokens`, `max_cost`, `max_duration`).
    pub budgets: crate::run::Budgets,
}

impl RunDefaults {
    /// These defaults, with each unset field taken from `fallback` (e.g. a
    /// workspace's defaults over its repository's `slipway.toml`).
    pub fn or(&self, fallback: &RunDefaults) -> RunDefaults {
        RunDefaults {
            agent: self.agent.clone().or_else(|| fallback.agent.clone()),
            sandbox: self.sandbox.or(fallback.sandbox),
            image: self.image.clone().or_else(|| fallback.image.clone()),
            strategy: self.strategy.or(fallback.strategy),
            source: self.source.clone().or_else(|| fallback.source.clone()),
            hooks: HookDefaults {
                host_on_worktree_ready: if self.hooks.host_on_worktree_ready.is_empty() {
                    fallback.hooks.host_on_worktree_ready.clone()
                } else {
                    self.hooks.host_on_worktree_ready.clone()
                },
                sandbox_on_sandbox_ready: if self.hooks.sandbox_on_sandbox_ready.is_empty() {
                    fallback.hooks.sandbox_on_sandbox_ready.clone()
                } else {
                    self.hooks.sandbox_on_sandbox_ready.clone()
                },
            },
            copy_to_worktree: if self.copy_to_worktree.is_empty() {
                fallback.copy_to_worktree.clone()
            } else {
                self.copy_to_worktree.clone()
            },
            budgets: self.budgets.or(&fallback.budgets),
        }
    }
}
