//! One plan step for every edge: the command line, the sidecar and the run
//! itself turn what the user asked for ([`RunInput`], worktree create and
//! close inputs) into a checked plan here, so both edges make the same
//! decisions: the strategy, the workspace with its run defaults and the
//! repository's `slipway.toml` defaults under it, which repository a
//! workspace runs in, the source, the prompt and its arguments, the agent,
//! the sandbox, and whether the branch is free. Nothing re-checks after it.

mod errors;
pub mod worktree;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::agent::prompt::{Prompt, PromptError, PromptSource};
use crate::agent::{Agent, AgentOptions, AgentSpec};
use crate::git::HostRepo;
use crate::git::policy::{self, SourcePolicy};
use crate::git::refname::validate_branch_name;
use crate::run::workspace::{Isolation, WorkspacePlan};
use crate::run::{Hooks, Limits, RunRequest, RunStrategy, SandboxSpec, Timeouts};
use crate::workspace::{RunDefaults, SandboxKind, StrategyKind, Workspace};
pub use errors::{PlanError, prompt_kind};

/// The agent as an edge was given it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AgentInput {
    /// A whole spec (the protocol's `agent`).
    Spec(AgentSpec),
    /// A provider name, or none for the defaults' (else `command`), with its
    /// options and the program of `command` or extra arguments of the others
    /// (the command line's `--agent`, `--model`, … and what follows `--`).
    Named {
        /// The provider.
        name: Option<String>,
        /// Model, effort, resume.
        options: AgentOptions,
        /// The program, or extra arguments.
        program: Vec<String>,
    },
}

impl Default for AgentInput {
    fn default() -> Self {
        AgentInput::Named {
            name: None,
            options: AgentOptions::default(),
            program: Vec::new(),
        }
    }
}

/// The sandbox as an edge was given it; unset parts come from the defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxInput {
    /// none, docker or docker-isolated.
    pub kind: Option<SandboxKind>,
    /// The image of docker sandboxes.
    pub image: Option<String>,
    /// The container network.
    pub network: Option<String>,
    /// Memory and process limits of docker sandboxes.
    #[serde(default)]
    pub limits: Limits,
}

impl From<SandboxSpec> for SandboxInput {
    fn from(spec: SandboxSpec) -> Self {
        match spec {
            SandboxSpec::None => SandboxInput {
                kind: Some(SandboxKind::None),
                ..SandboxInput::default()
            },
            SandboxSpec::Docker {
                image,
                network,
                limits,
            } => SandboxInput {
                kind: Some(SandboxKind::Docker),
                image: Some(image),
                network,
                limits,
            },
            SandboxSpec::DockerIsolated {
                image,
                network,
                limits,
            } => SandboxInput {
                kind: Some(SandboxKind::DockerIsolated),
                image: Some(image),
                network,
                limits,
            },
        }
    }
}

/// A workspace by name (a file `slipway workspace create` wrote) or in full.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum WorkspaceInput {
    /// The name of a workspace file.
    Name(String),
    /// A plan given in full (no run defaults).
    Plan(WorkspacePlan),
}

/// Timeouts in seconds; unset ones are the defaults of [`Timeouts`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimeoutInput {
    /// Idle timeout.
    pub idle_secs: Option<u64>,
    /// Per hook and prompt command.
    pub hook_secs: Option<u64>,
    /// Grace after the completion signal.
    pub completion_grace_secs: Option<u64>,
    /// Merge back (merge-to-head).
    pub merge_secs: Option<u64>,
}

/// A run request as any edge was given it, before any decision.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunInput {
    /// The run id; a new one when unset.
    pub run_id: Option<crate::ids::RunId>,
    /// The repository; for workspace runs the workspace decides when unset.
    pub repository: Option<PathBuf>,
    /// The strategy; from the branch, the defaults, else merge-to-head.
    pub strategy: Option<StrategyKind>,
    /// The branch of the branch strategy.
    pub branch: Option<String>,
    /// Where a new branch starts.
    pub base: Option<String>,
    /// An existing worktree to run in.
    pub worktree: Option<String>,
    /// A long-lived sandbox to run in.
    pub sandbox_id: Option<String>,
    /// Where a new branch starts: the policy (default `host_head`).
    pub source: Option<SourcePolicy>,
    /// Host paths copied into a new worktree (default: the defaults' `copy_to_worktree`).
    pub copy: Vec<String>,
    /// The agent.
    pub agent: AgentInput,
    /// The sandbox.
    pub sandbox: SandboxInput,
    /// A workspace to run on.
    pub workspace: Option<WorkspaceInput>,
    /// Answers to the workspace's `ask` mounts, by `dst`.
    pub sources: BTreeMap<String, SourcePolicy>,
    /// The inline prompt.
    pub prompt: Option<String>,
    /// The prompt template file (relative: to the edge's working directory).
    pub prompt_file: Option<PathBuf>,
    /// Template arguments.
    pub args: BTreeMap<String, String>,
    /// Iterations at most (default 1).
    pub max_iterations: Option<u32>,
    /// Output that ends the run early.
    pub completion_signals: Vec<String>,
    /// Timeouts.
    pub timeouts: TimeoutInput,
    /// Budgets; each one unset is the defaults'.
    #[serde(default)]
    pub budgets: crate::run::Budgets,
    /// Hooks; each list left empty is the defaults'.
    pub hooks: Option<Hooks>,
    /// A command run in the sandbox after the agent (see [`RunRequest::check`]).
    #[serde(default)]
    pub check: Option<String>,
    /// A handoff: the worktree must be given.
    pub handoff: bool,
    /// The user's Docker engine to run on (see [`crate::engines`]); unset:
    /// the first with a free slot.
    #[serde(default)]
    pub engine: Option<String>,
}

/// A checked run: where, and the request the run carries out as it is.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunPlan {
    /// The repository whose records the run writes (and, but for workspace
    /// runs, the one it works in).
    pub repository: PathBuf,
    /// Every decision, with defaults filled in.
    pub request: RunRequest,
    /// The defaults that applied: the workspace's over the repository's.
    pub defaults: RunDefaults,
    /// Things the user should know (arguments the template never uses).
    pub warnings: Vec<String>,
}

/// What [`check`] built: the prompt and the agent, ready to run.
pub struct Checked {
    /// The parsed prompt.
    pub prompt: Prompt,
    /// The agent.
    pub agent: Box<dyn Agent>,
    /// Things the user should know.
    pub warnings: Vec<String>,
}

/// The repository a workspace run keeps its records in: the mount covering
/// the workdir when it is a repository, else the first isolated mount's.
pub fn workspace_repository(plan: &WorkspacePlan) -> Option<PathBuf> {
    plan.mounts
        .iter()
        .filter(|m| plan.workdir.starts_with(&m.dst) && HostRepo::open(&m.src).is_ok())
        .max_by_key(|m| m.dst.components().count())
        .or_else(|| {
            plan.mounts
                .iter()
                .find(|m| m.isolation != Isolation::Shared)
        })
        .map(|m| m.src.clone())
}

/// Loads a named workspace for a run: its plan and its run defaults.
fn load_workspace(input: &WorkspaceInput) -> Result<(WorkspacePlan, RunDefaults), PlanError> {
    match input {
        WorkspaceInput::Plan(plan) => Ok((plan.clone(), RunDefaults::default())),
        WorkspaceInput::Name(name) => {
            let ws = Workspace::load_named(name)?;
            let plan = ws.launch_plan()?;
            Ok((plan, ws.defaults))
        }
    }
}

/// The run defaults of a repository: its `slipway.toml` (when the user
/// trusted its content, see [`crate::trust`]) over the user's `config.toml`
/// (each key the repository leaves unset is the user's).
pub fn repository_defaults(host: &HostRepo) -> Result<RunDefaults, PlanError> {
    let store = crate::trust::TrustStore::from_env();
    let repo = crate::trust::repository_defaults(host.root(), store.as_ref())?;
    Ok(repo.or(&Workspace::load_user_defaults()?))
}

/// Turns a run request from any edge into a checked plan; `cwd` is where
/// relative paths (the repository, the prompt file) are read from.
pub fn plan_run(input: RunInput, cwd: &Path) -> Result<RunPlan, PlanError> {
    let workspace = match &input.workspace {
        Some(w) => {
            let (mut plan, defaults) = load_workspace(w)?;
            for mount in &mut plan.mounts {
                if let Some(answer) = input.sources.get(&mount.dst.display().to_string()) {
                    mount.source = answer.clone();
                }
            }
            Some((plan, defaults))
        }
        None => None,
    };
    let repository = match (&input.repository, &workspace) {
        (Some(r), _) => cwd.join(r),
        (None, Some((plan, _))) => workspace_repository(plan).ok_or(PlanError::NoRepository)?,
        (None, None) => cwd.to_path_buf(),
    };
    let host = HostRepo::open(&repository)?;
    let repo_defaults = repository_defaults(&host)?;
    let (workspace, defaults) = match workspace {
        Some((plan, ws_defaults)) => (Some(plan), ws_defaults.or(&repo_defaults)),
        None => (None, repo_defaults),
    };
    if input.handoff && input.worktree.is_none() {
        return Err(PlanError::HandoffNeedsWorktree);
    }

    let strategy = strategy(&input, &defaults)?;
    let existing = match &input.worktree {
        Some(selector) => Some(
            crate::worktree::find_readable(&host, selector)?
                .ok_or_else(|| PlanError::WorktreeNotFound(selector.clone()))?,
        ),
        None => None,
    };
    let mut sandbox = sandbox(&input.sandbox, &defaults)?;
    let mut worktree = input.worktree.clone();
    let mut sandbox_id = None;
    if let Some(id) = &input.sandbox_id {
        let record = crate::run::sandboxes::SandboxRecord::load(&host, id)
            .ok_or_else(|| PlanError::SandboxNotFound(id.clone()))?;
        worktree = Some(record.worktree_id);
        sandbox = record.spec;
        sandbox_id = crate::ids::SandboxId::parse(&record.id).ok();
    }
    if workspace.is_some() && !matches!(sandbox, SandboxSpec::None | SandboxSpec::Docker { .. }) {
        return Err(PlanError::WorkspaceSandbox(
            SandboxKind::DockerIsolated.name(),
        ));
    }
    let new_worktree = worktree.is_none() && workspace.is_none();
    let copy = if input.copy.is_empty() && new_worktree && strategy != RunStrategy::Head {
        defaults.copy_to_worktree.clone()
    } else {
        input.copy.clone()
    };
    crate::worktree::copy::check_patterns(&copy)?;
    let mut agent = agent(&input.agent, &defaults)?;
    // A handoff continues the conversation the person had in that worktree.
    if input.handoff
        && let Some(record) = &existing
        && let Some(id) = agent.resume_latest_session(&record.path)
    {
        tracing::info!(session = %id, "handoff resumes the worktree's latest session");
    }
    let prompt = match (&input.prompt, &input.prompt_file) {
        (Some(_), Some(_)) => return Err(PlanError::TwoPrompts),
        (Some(text), None) => PromptSource::Inline(text.clone()),
        (None, Some(file)) => PromptSource::File(cwd.join(file)),
        (None, None) => PromptSource::Inline(String::new()),
    };
    let source = input
        .source
        .clone()
        .or_else(|| defaults.source.clone())
        .unwrap_or(SourcePolicy::HostHead);
    let request = RunRequest {
        run_id: Some(input.run_id.clone().unwrap_or_else(crate::run::new_run_id)),
        strategy,
        worktree,
        source,
        copy,
        agent,
        sandbox,
        workspace,
        sandbox_id,
        prompt,
        prompt_args: input.args.clone(),
        max_iterations: input.max_iterations.unwrap_or(1),
        completion_signals: input.completion_signals.clone(),
        timeouts: timeouts(&input.timeouts),
        hooks: hooks(input.hooks.as_ref(), &defaults),
        budgets: input.budgets.or(&defaults.budgets),
        check: input.check.clone(),
        reply: None,
        engine: input.engine.clone(),
    };
    let checked = check(&host, &request)?;
    probe(&host, &request, existing.as_ref())?;
    Ok(RunPlan {
        repository: host.root().to_path_buf(),
        request,
        defaults,
        warnings: checked.warnings,
    })
}

fn strategy(input: &RunInput, defaults: &RunDefaults) -> Result<RunStrategy, PlanError> {
    let chosen = match (input.strategy, &input.branch) {
        (Some(s), _) => s,
        (None, Some(_)) => StrategyKind::Branch,
        // An existing worktree has its own: the defaults are for new ones.
        (None, None) if input.worktree.is_some() => StrategyKind::MergeToHead,
        (None, None) => defaults.strategy.unwrap_or(StrategyKind::MergeToHead),
    };
    let strategy = match (chosen, &input.branch) {
        (StrategyKind::Head, None) => RunStrategy::Head,
        (StrategyKind::MergeToHead, None) => RunStrategy::MergeToHead,
        (StrategyKind::Branch, Some(name)) => {
            validate_branch_name(name)?;
            RunStrategy::Branch {
                name: name.clone(),
                base: input.base.clone(),
            }
        }
        (StrategyKind::Branch, None) => return Err(PlanError::BranchNeeded),
        (other, Some(_)) => return Err(PlanError::BranchWithStrategy(other.name())),
    };
    if input.base.is_some() && !matches!(strategy, RunStrategy::Branch { .. }) {
        return Err(PlanError::BaseWithoutBranch);
    }
    if strategy == RunStrategy::Head
        && input.worktree.is_none()
        && input.workspace.is_none()
        && (input.source.is_some() || !input.copy.is_empty())
    {
        return Err(PlanError::HeadWithSourceOrCopy);
    }
    Ok(strategy)
}

fn sandbox(input: &SandboxInput, defaults: &RunDefaults) -> Result<SandboxSpec, PlanError> {
    let kind = input.kind.or(defaults.sandbox).unwrap_or(SandboxKind::None);
    // An image the defaults give goes only with the kind they give, or one the input gives.
    let image = input.image.clone().or_else(|| {
        (kind != SandboxKind::None)
            .then(|| defaults.image.clone())
            .flatten()
    });
    let network = input.network.clone();
    let limits = input.limits;
    // An empty image names nothing.
    let image = image.filter(|i| !i.trim().is_empty());
    match (kind, image) {
        (SandboxKind::None, None) => Ok(SandboxSpec::None),
        (SandboxKind::None, Some(_)) => Err(PlanError::ImageWithoutDocker),
        (SandboxKind::Docker, Some(image)) => Ok(SandboxSpec::Docker {
            image,
            network,
            limits,
        }),
        (SandboxKind::DockerIsolated, Some(image)) => Ok(SandboxSpec::DockerIsolated {
            image,
            network,
            limits,
        }),
        (kind, None) => Err(PlanError::ImageNeeded(kind.name())),
    }
}

fn agent(input: &AgentInput, defaults: &RunDefaults) -> Result<AgentSpec, PlanError> {
    match input {
        AgentInput::Spec(spec) => Ok(spec.clone()),
        AgentInput::Named {
            name,
            options,
            program,
        } => {
            let name = name
                .clone()
                .or_else(|| defaults.agent.clone())
                .unwrap_or_else(|| "command".to_owned());
            if name == "command" {
                if options.model.is_some() || options.effort.is_some() || options.resume.is_some() {
                    return Err(PlanError::OptionsForCommand);
                }
                return Ok(AgentSpec::Command {
                    command: program.clone(),
                });
            }
            let options = AgentOptions {
                extra_args: program.clone(),
                ..options.clone()
            };
            Ok(AgentSpec::named(&name, options)?)
        }
    }
}

/// Each list of hooks the input gives, else the defaults'.
fn hooks(input: Option<&Hooks>, defaults: &RunDefaults) -> Hooks {
    let pick = |given: Option<&Vec<String>>, default: &Vec<String>| match given {
        Some(list) if !list.is_empty() => list.clone(),
        _ => default.clone(),
    };
    Hooks {
        host_on_worktree_ready: pick(
            input.map(|h| &h.host_on_worktree_ready),
            &defaults.hooks.host_on_worktree_ready,
        ),
        sandbox_on_sandbox_ready: pick(
            input.map(|h| &h.sandbox_on_sandbox_ready),
            &defaults.hooks.sandbox_on_sandbox_ready,
        ),
    }
}

fn timeouts(input: &TimeoutInput) -> Timeouts {
    let d = Timeouts::default();
    Timeouts {
        idle: input.idle_secs.map_or(d.idle, Duration::from_secs),
        hook: input.hook_secs.map_or(d.hook, Duration::from_secs),
        completion_grace: input
            .completion_grace_secs
            .map_or(d.completion_grace, Duration::from_secs),
        merge: input.merge_secs.map_or(d.merge, Duration::from_secs),
        ..d
    }
}

/// The checks of a decided request that a run makes before anything exists:
/// the prompt and its arguments, the agent, iterations and completion signals.
/// [`plan_run`] ends with them; `run` starts with them.
pub fn check(host: &HostRepo, request: &RunRequest) -> Result<Checked, PlanError> {
    let prompt = match &request.prompt {
        PromptSource::Inline(text) => Prompt::literal(text),
        // A template's commands run where the agent does: on the host with no sandbox.
        PromptSource::File(path) => crate::trust::prompt_template(
            &host.root().join(path),
            request.sandbox == SandboxSpec::None,
            crate::trust::TrustStore::from_env().as_ref(),
        )?,
    };
    if matches!(request.prompt, PromptSource::Inline(_)) && !request.prompt_args.is_empty() {
        return Err(PromptError::ArgsWithInline.into());
    }
    let warnings = prompt.check_args(&request.prompt_args)?;
    let agent = request.agent.build()?;
    // An inline prompt is used literally: whether the agent can take it is known now.
    if let PromptSource::Inline(text) = &request.prompt {
        agent.unattended(text)?;
    }
    if request.max_iterations == 0 {
        return Err(PlanError::ZeroIterations);
    }
    request.budgets.check().map_err(PlanError::BadBudget)?;
    let docker = request.sandbox_id.is_none()
        && matches!(
            request.sandbox,
            SandboxSpec::Docker { .. } | SandboxSpec::DockerIsolated { .. }
        );
    crate::engines::check(request.engine.as_deref(), docker)?;
    if request
        .completion_signals
        .iter()
        .any(|s| s.trim().is_empty())
    {
        return Err(PlanError::EmptySignal);
    }
    Ok(Checked {
        prompt,
        agent,
        warnings,
    })
}

/// Fails now, not later in the run's end, when another create or run holds the
/// branch the run would take, or when the source of a new branch cannot be resolved.
fn probe(
    host: &HostRepo,
    request: &RunRequest,
    existing: Option<&crate::worktree::WorktreeRecord>,
) -> Result<(), PlanError> {
    if let Some(plan) = &request.workspace {
        let mut asks = Vec::new();
        for m in &plan.mounts {
            if m.isolation != Isolation::Shared && m.source == SourcePolicy::Ask {
                let mount_host = HostRepo::open(&m.src)?;
                let names = policy::branch_choices(mount_host.git())?;
                asks.push((m.dst.clone(), errors::entries(&mount_host, &names)));
            }
        }
        if !asks.is_empty() {
            return Err(PlanError::SourcesRequired { mounts: asks });
        }
        let branch = format!("slipway/workspace/{}", plan.name);
        return lock_probe(host, &branch);
    }
    let locked = match (existing, &request.strategy) {
        (Some(record), _) => Some(record.branch.clone()),
        (None, RunStrategy::Branch { name, .. }) => Some(name.clone()),
        (None, RunStrategy::Head) => host.current_branch(),
        (None, RunStrategy::MergeToHead) => None,
    };
    if let Some(branch) = &locked {
        lock_probe(host, branch)?;
    }
    let new_branch = match &request.strategy {
        RunStrategy::MergeToHead => true,
        RunStrategy::Branch { name, .. } => {
            crate::git::worktrees::branch_tip(host.git(), name).is_none()
        }
        RunStrategy::Head => false,
    };
    if request.worktree.is_none() && new_branch {
        let effective = match &request.strategy {
            RunStrategy::Branch {
                base: Some(base), ..
            } => SourcePolicy::Named {
                reference: base.clone(),
            },
            _ => request.source.clone(),
        };
        policy::resolve(host.git(), &effective).map_err(|e| PlanError::source(host, e))?;
    }
    Ok(())
}

fn lock_probe(host: &HostRepo, branch: &str) -> Result<(), PlanError> {
    match crate::worktree::lock_branch(host, branch) {
        Ok(lock) => {
            drop(lock);
            Ok(())
        }
        Err(e) => Err(PlanError::Lock {
            branch: branch.to_owned(),
            error: e,
        }),
    }
}

/// The names this slipway accepts, for editors to offer (they keep no lists of their own).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Vocabularies {
    /// Agent providers.
    pub agents: Vec<&'static str>,
    /// Sandbox kinds.
    pub sandboxes: Vec<&'static str>,
    /// Source policies, as files and the protocol spell them.
    pub policies: Vec<&'static str>,
    /// Strategies.
    pub strategies: Vec<&'static str>,
    /// How a worktree's branch can be landed (`slipway.land`'s `how`).
    pub land_modes: Vec<&'static str>,
}

/// Every name of every vocabulary.
pub fn vocabularies() -> Vocabularies {
    Vocabularies {
        agents: crate::workspace::AGENT_NAMES.to_vec(),
        sandboxes: SandboxKind::ALL.iter().map(|k| k.name()).collect(),
        policies: [
            SourcePolicy::HostHead,
            SourcePolicy::CurrentBranch,
            SourcePolicy::Default,
            SourcePolicy::Named {
                reference: String::new(),
            },
            SourcePolicy::Ask,
        ]
        .iter()
        .map(SourcePolicy::name)
        .collect(),
        strategies: StrategyKind::ALL.iter().map(|k| k.name()).collect(),
        land_modes: crate::review::land::LandHow::ALL
            .iter()
            .map(|h| h.name())
            .collect(),
    }
}
