//! What a run is asked to do: strategy, sandbox (with its limits), hooks,
//! timeouts and the whole request.

use super::*;

/// Where the agent's commits land.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum RunStrategy {
    /// Straight into the host working directory.
    Head,
    /// A temporary branch in a worktree, merged back into the host's current branch.
    MergeToHead,
    /// A named branch in a worktree, kept.
    Branch { name: String, base: Option<String> },
}

/// Which sandbox runs the agent.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum SandboxSpec {
    /// A host process in the worktree.
    #[default]
    None,
    /// A Docker container (Engine API) with the worktree bind-mounted at its
    /// own path and the run's private git dir beside it.
    Docker {
        /// The image; it must be on the engine already (nothing is pulled).
        image: String,
        /// Network mode; `None` is the engine's default.
        #[serde(default)]
        network: Option<String>,
        /// Memory and process limits.
        #[serde(default, skip_serializing_if = "Limits::is_default")]
        limits: Limits,
    },
    /// A Docker container that sees no host path: code goes in as a git bundle
    /// plus files, commits and files come back. Works with a remote engine.
    DockerIsolated {
        /// The image; it must be on the engine already (nothing is pulled).
        image: String,
        /// Network mode; `None` is the engine's default.
        #[serde(default)]
        network: Option<String>,
        /// Memory and process limits.
        #[serde(default, skip_serializing_if = "Limits::is_default")]
        limits: Limits,
    },
}

/// What a container may take of the machine. Unset means the default: half
/// the machine's memory (no swap beyond it) and 4096 processes; 0 means no
/// limit at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Memory in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// Processes and threads at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pids: Option<u64>,
}

/// The default process limit of a container.
pub const DEFAULT_PIDS: u64 = 4096;

impl Limits {
    fn is_default(&self) -> bool {
        *self == Limits::default()
    }

    /// The limits to apply, defaults filled in (`None`: no limit).
    pub fn resolved(&self) -> (Option<i64>, Option<i64>) {
        let memory = match self.memory_bytes {
            Some(0) => None,
            Some(bytes) => Some(bytes),
            None => machine_memory().map(|m| m / 2),
        };
        let pids = match self.pids {
            Some(0) => None,
            Some(n) => Some(n),
            None => Some(DEFAULT_PIDS),
        };
        let signed = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        (memory.map(signed), pids.map(signed))
    }

    /// Parses a memory size: a number of bytes, or with `k`, `m`, `g` or `t`
    /// (powers of 1024, as Docker reads them); `0` means no limit.
    pub fn parse_memory(text: &str) -> Result<u64, String> {
        let t = text.trim().to_ascii_lowercase();
        let t = t.strip_suffix('b').unwrap_or(&t);
        let (digits, shift) = match t.chars().last() {
            Some('k') => (&t[..t.len() - 1], 10),
            Some('m') => (&t[..t.len() - 1], 20),
            Some('g') => (&t[..t.len() - 1], 30),
            Some('t') => (&t[..t.len() - 1], 40),
            _ => (t, 0),
        };
        let n: u64 = digits.parse().map_err(|_| {
            format!(
                "'{text}' is not a memory size; give bytes or a size like 512m or 4g (0: no limit)"
            )
        })?;
        n.checked_mul(1u64 << shift)
            .ok_or_else(|| format!("'{text}' is larger than any machine's memory"))
    }
}

/// The machine's physical memory in bytes.
fn machine_memory() -> Option<u64> {
    // SAFETY: sysconf has no preconditions.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (pages > 0 && size > 0).then(|| (pages as u64).saturating_mul(size as u64))
}

impl SandboxSpec {
    /// The kind's name, as in the JSON `type`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            SandboxSpec::None => "none",
            SandboxSpec::Docker { .. } => "docker",
            SandboxSpec::DockerIsolated { .. } => "docker-isolated",
        }
    }
}

/// Commands run before the agent.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Hooks {
    /// On the host, in the worktree, before the sandbox starts.
    pub host_on_worktree_ready: Vec<String>,
    /// Inside the sandbox, before the agent.
    pub sandbox_on_sandbox_ready: Vec<String>,
}

/// Every timeout of a run.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Timeouts {
    /// No output for this long kills the agent.
    #[serde(with = "secs")]
    pub idle: Duration,
    /// Each hook and each prompt command.
    #[serde(with = "secs")]
    pub hook: Duration,
    /// Silence after the completion signal that ends the iteration successfully.
    #[serde(with = "secs")]
    pub completion_grace: Duration,
    /// Merging back into the host, up to the first change to the host.
    #[serde(with = "secs", default = "default_merge_timeout")]
    pub merge: Duration,
    /// Bringing an isolated sandbox's work to the host.
    #[serde(with = "secs", default = "default_collect_timeout")]
    pub collect: Duration,
}

fn default_collect_timeout() -> Duration {
    Timeouts::default().collect
}

fn default_merge_timeout() -> Duration {
    Timeouts::default().merge
}

/// Durations as whole seconds in files.
mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_secs())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_secs(u64::deserialize(d)?))
    }
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            idle: Duration::from_secs(600),
            hook: Duration::from_secs(300),
            completion_grace: Duration::from_secs(60),
            merge: Duration::from_secs(300),
            collect: Duration::from_secs(600),
        }
    }
}

/// What a run may use before its agent is stopped (as a timeout stops it:
/// its work kept and brought back). Unset: no limit.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Budgets {
    /// Input plus output tokens, as the agent reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// US dollars, where the agent reports its cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// Seconds since the run started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration_secs: Option<u64>,
}

// Costs are compared as given (no arithmetic), so bitwise equality is equality.
impl PartialEq for Budgets {
    fn eq(&self, other: &Self) -> bool {
        self.max_tokens == other.max_tokens
            && self.max_cost_usd.map(f64::to_bits) == other.max_cost_usd.map(f64::to_bits)
            && self.max_duration_secs == other.max_duration_secs
    }
}

impl Eq for Budgets {}

impl Budgets {
    /// These budgets, each unset one taken from `fallback`.
    pub fn or(&self, fallback: &Budgets) -> Budgets {
        Budgets {
            max_tokens: self.max_tokens.or(fallback.max_tokens),
            max_cost_usd: self.max_cost_usd.or(fallback.max_cost_usd),
            max_duration_secs: self.max_duration_secs.or(fallback.max_duration_secs),
        }
    }

    /// No budget set.
    pub fn is_empty(&self) -> bool {
        *self == Budgets::default()
    }

    /// The budget `usage` went past, if any.
    pub fn exceeded(&self, usage: Option<&Usage>) -> Option<BudgetStop> {
        let usage = usage?;
        let tokens = usage.input_tokens.saturating_add(usage.output_tokens);
        if let Some(max) = self.max_tokens
            && tokens >= max
        {
            return Some(BudgetStop {
                budget: BudgetKind::Tokens,
                limit: max as f64,
                used: tokens as f64,
            });
        }
        if let (Some(max), Some(cost)) = (self.max_cost_usd, usage.cost_usd)
            && cost >= max
        {
            return Some(BudgetStop {
                budget: BudgetKind::Cost,
                limit: max,
                used: cost,
            });
        }
        None
    }

    /// Checks the values a person gave: a cost is a positive number of dollars.
    pub fn check(&self) -> Result<(), String> {
        match self.max_cost_usd {
            Some(c) if !c.is_finite() || c <= 0.0 => Err(format!(
                "max cost {c} is not a positive number of US dollars (give one like 2.50)"
            )),
            _ => Ok(()),
        }
    }
}

/// Which budget ended a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum BudgetKind {
    /// `maxTokens`.
    Tokens,
    /// `maxCostUsd`.
    Cost,
    /// `maxDurationSecs`.
    Duration,
}

impl BudgetKind {
    /// The budget's name, as the result carries it.
    pub fn name(self) -> &'static str {
        match self {
            BudgetKind::Tokens => "tokens",
            BudgetKind::Cost => "cost",
            BudgetKind::Duration => "duration",
        }
    }
}

/// The budget that ended a run, its limit and what was used (tokens, US
/// dollars or seconds).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetStop {
    /// Which budget.
    pub budget: BudgetKind,
    /// Its limit.
    pub limit: f64,
    /// What the run had used when it was stopped.
    pub used: f64,
}

impl std::fmt::Display for BudgetStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.budget {
            BudgetKind::Tokens => write!(f, "{} tokens used of {}", self.used, self.limit),
            BudgetKind::Cost => write!(f, "${:.2} spent of ${:.2}", self.used, self.limit),
            BudgetKind::Duration => write!(f, "{} s of {} s", self.used, self.limit),
        }
    }
}

/// Parses a duration: seconds, or a number with `s`, `m`, `h` or `d`.
pub fn parse_duration(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let (digits, unit) = match t.chars().last() {
        Some('s') => (&t[..t.len() - 1], 1),
        Some('m') => (&t[..t.len() - 1], 60),
        Some('h') => (&t[..t.len() - 1], 3600),
        Some('d') => (&t[..t.len() - 1], 86_400),
        _ => (t.as_str(), 1),
    };
    digits
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|n| *n > 0)
        .and_then(|n| n.checked_mul(unit))
        .ok_or_else(|| {
            format!("'{text}' is not a duration; give seconds or one like 90s, 30m or 2h")
        })
}

/// Everything a run needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRequest {
    /// Run id; generated when `None`.
    pub run_id: Option<crate::ids::RunId>,
    /// Branch strategy (ignored when `worktree` names an existing one, whose strategy wins).
    pub strategy: RunStrategy,
    /// An existing worktree (id, path or branch) to run in; it is kept after the run.
    pub worktree: Option<String>,
    /// Where a new branch starts.
    pub source: SourcePolicy,
    /// Paths copied from the host into a new worktree.
    pub copy: Vec<String>,
    /// Which agent.
    pub agent: AgentSpec,
    /// Which sandbox.
    pub sandbox: SandboxSpec,
    /// Run on a workspace: several mounts, each shared or isolated (see [`workspace`]).
    #[serde(default)]
    pub workspace: Option<workspace::WorkspacePlan>,
    /// Run in this long-lived sandbox (see [`sandboxes`]) instead of a new one;
    /// its worktree and kind win over `worktree` and `sandbox`.
    #[serde(default)]
    pub sandbox_id: Option<crate::ids::SandboxId>,
    /// The prompt.
    pub prompt: PromptSource,
    /// Template arguments.
    pub prompt_args: BTreeMap<String, String>,
    /// Iterations at most.
    pub max_iterations: u32,
    /// Output that ends the run early.
    pub completion_signals: Vec<String>,
    /// Timeouts.
    pub timeouts: Timeouts,
    /// Hooks.
    pub hooks: Hooks,
    /// Budgets.
    #[serde(default, skip_serializing_if = "Budgets::is_empty")]
    pub budgets: Budgets,
    /// A command run in the sandbox after the agent ends (tests, a linter);
    /// its exit status and output tail go into the result as `check`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// The run whose question this one answers (`slipway reply`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<super::question::ReplyLink>,
    /// The user's Docker engine to run on, by name (see [`crate::engines`]);
    /// unset: the first of the user's engines with a free slot, or, when the
    /// user lists none, `DOCKER_HOST` or the local socket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_name_what_ran_out() {
        let budgets = Budgets {
            max_tokens: Some(100),
            max_cost_usd: Some(0.5),
            max_duration_secs: None,
        };
        let used = |tokens: u64, cost: Option<f64>| Usage {
            input_tokens: tokens,
            output_tokens: 0,
            cached_input_tokens: 0,
            cost_usd: cost,
            ..Usage::default()
        };
        assert_eq!(budgets.exceeded(Some(&used(99, None))), None);
        let stop = budgets.exceeded(Some(&used(100, None))).expect("tokens");
        assert_eq!((stop.budget, stop.used), (BudgetKind::Tokens, 100.0));
        let stop = budgets.exceeded(Some(&used(1, Some(0.75)))).expect("cost");
        assert_eq!(stop.budget, BudgetKind::Cost);
        assert_eq!(stop.to_string(), "$0.75 spent of $0.50");
        // Without a reported cost, a cost budget never ends a run.
        assert_eq!(budgets.exceeded(Some(&used(1, None))), None);
        assert!(
            Budgets {
                max_cost_usd: Some(0.0),
                ..budgets
            }
            .check()
            .is_err()
        );
    }

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(parse_duration("90"), Ok(90));
        assert_eq!(parse_duration("90s"), Ok(90));
        assert_eq!(parse_duration("30m"), Ok(1800));
        assert_eq!(parse_duration("2h"), Ok(7200));
        assert!(parse_duration("0").is_err());
        assert!(parse_duration("soon").is_err());
    }
}
