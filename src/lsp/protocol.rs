//! The wire shapes of the sidecar protocol (docs/protocol.md): command names,
//! argument objects, notifications, and how core errors become JSON-RPC errors.

use slipway_core::error::{ErrorKind, Failure, Field, Hint};
use slipway_core::plan::{AgentInput, RunInput, SandboxInput, TimeoutInput, WorkspaceInput};
use slipway_core::workspace::StrategyKind;
use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tower_lsp_server::jsonrpc;
use tower_lsp_server::ls_types::notification::Notification;

use slipway_core::agent::AgentSpec;
use slipway_core::git::policy::SourcePolicy;
use slipway_core::run::{Hooks, RunResult};

/// The protocol version `initialize` reports as `capabilities.experimental.slipwayProtocol`.
pub const PROTOCOL_VERSION: u32 = 1;

/// Every command `workspace/executeCommand` accepts.
pub const COMMANDS: [&str; 22] = [
    "slipway.branches",
    "slipway.resolveSource",
    "slipway.createWorktree",
    "slipway.list",
    "slipway.run",
    "slipway.handoff",
    "slipway.cancel",
    "slipway.reply",
    "slipway.close",
    "slipway.status",
    "slipway.workspaces",
    "slipway.diff",
    "slipway.land",
    "slipway.discard",
    "slipway.runs",
    "slipway.log",
    "slipway.seen",
    "slipway.trust",
    "slipway.attemptGroups",
    "slipway.attempts",
    "slipway.landAttempt",
    "slipway.engines",
];

/// `{root}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RootArgs {
    /// Any path inside the repository or one of its worktrees.
    pub root: PathBuf,
}

/// `slipway.trust`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrustArgs {
    /// The repository whose `slipway.toml` is approved when `files` is absent.
    pub root: Option<PathBuf>,
    /// The files to approve, each with the content the user was shown
    /// (`{path, hash}` as `untrustedConfig`'s `data.files` gives them, or
    /// `{path, removed: true}` for one that is gone).
    pub files: Option<Vec<slipway_core::trust::TrustRequest>>,
    /// Answer what would be approved, and record nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// `slipway.branches`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchesArgs {
    /// Any path inside the repository or one of its worktrees.
    pub root: PathBuf,
    /// Count each local branch's commits ahead of and behind its upstream.
    #[serde(default)]
    pub ahead_behind: bool,
}

/// `slipway.resolveSource`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolveArgs {
    /// Repository.
    pub root: PathBuf,
    /// The policy to resolve.
    pub source: SourcePolicy,
}

/// `slipway.createWorktree`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateArgs {
    /// Repository.
    pub root: PathBuf,
    /// `branch` or `merge-to-head` (`head` has no worktree); from `branch` when unset.
    pub strategy: Option<StrategyKind>,
    /// The branch for `branch`.
    pub branch: Option<String>,
    /// Start point of a new branch.
    pub base: Option<String>,
    /// Source policy (default `host_head`).
    pub source: Option<SourcePolicy>,
    /// Host paths copied in.
    #[serde(default)]
    pub copy: Vec<String>,
    /// When given, the answer carries this agent's interactive command line.
    pub agent: Option<AgentSpec>,
}

/// `slipway.run` and `slipway.handoff`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunArgs {
    /// Repository; for workspace runs the workspace decides when unset.
    pub root: Option<PathBuf>,
    /// An existing worktree (id, path or branch).
    pub worktree: Option<String>,
    /// `head`, `merge-to-head` or `branch`.
    pub strategy: Option<StrategyKind>,
    /// The branch for `branch`.
    pub branch: Option<String>,
    /// Start point of a new branch.
    pub base: Option<String>,
    /// Source policy (default `host_head`).
    pub source: Option<SourcePolicy>,
    /// Host paths copied into a new worktree.
    #[serde(default)]
    pub copy: Vec<String>,
    /// The agent (default: the workspace's or the repository's, else `command`).
    pub agent: Option<AgentSpec>,
    /// The sandbox (default `none`); a docker sandbox without an image takes
    /// the defaults' `image`, and without one there either is `invalidParams`
    /// naming where it is set (not a parse error).
    pub sandbox: Option<SandboxArg>,
    /// Inline prompt, used literally.
    pub prompt: Option<String>,
    /// Prompt template file.
    pub prompt_file: Option<PathBuf>,
    /// Template arguments.
    #[serde(default)]
    pub args: BTreeMap<String, String>,
    /// Iterations at most (default 1).
    pub max_iterations: Option<u32>,
    /// Idle timeout (default 600).
    pub idle_timeout_secs: Option<u64>,
    /// Completion signals (default `<promise>COMPLETE</promise>`).
    #[serde(default)]
    pub completion_signals: Vec<String>,
    /// Grace after the completion signal (default 60).
    pub completion_grace_secs: Option<u64>,
    /// Per-hook timeout (default 300).
    pub hook_timeout_secs: Option<u64>,
    /// Merge timeout for `merge-to-head` (default 300).
    pub merge_timeout_secs: Option<u64>,
    /// Stop the agent at this many tokens (default: `max_tokens` of the defaults, else none).
    pub max_tokens: Option<u64>,
    /// Stop the agent at this reported cost in US dollars.
    pub max_cost_usd: Option<f64>,
    /// Stop the agent once the run has lasted this many seconds.
    pub max_duration_secs: Option<u64>,
    /// Hooks.
    pub hooks: Option<Hooks>,
    /// Run on a workspace: its name (a file `slipway workspace create` wrote), or
    /// an inline plan `{name, workdir, mounts: [{src, dst, readonly, isolation, source}]}`.
    /// `ask` mounts answer `sourceBranchRequired` with `data.mounts` listing each, in order.
    pub workspace: Option<WorkspaceInput>,
    /// Per-mount answers to `ask`, by `dst`: `{"/work/a": {"policy": "named", "ref": "main"}}`.
    #[serde(default)]
    pub sources: BTreeMap<String, SourcePolicy>,
    /// Answer the checked plan instead of starting the run.
    #[serde(default)]
    pub dry_run: bool,
    /// A command run in the sandbox after the agent; its result is the run's `check`.
    pub check: Option<String>,
    /// Run this many attempts as one group (see `slipway.attempts`).
    pub attempts: Option<usize>,
    /// The user's Docker engine to run on, by name (docs/protocol.md §3.4).
    pub engine: Option<String>,
}

impl RunArgs {
    /// The arguments as the plan takes them.
    pub fn into_input(self, handoff: bool) -> RunInput {
        RunInput {
            run_id: None,
            repository: self.root,
            strategy: self.strategy,
            branch: self.branch,
            base: self.base,
            worktree: self.worktree,
            sandbox_id: None,
            source: self.source,
            copy: self.copy,
            agent: self.agent.map(AgentInput::Spec).unwrap_or_default(),
            sandbox: self.sandbox.map(SandboxInput::from).unwrap_or_default(),
            workspace: self.workspace,
            sources: self.sources,
            prompt: self.prompt,
            prompt_file: self.prompt_file,
            args: self.args,
            max_iterations: self.max_iterations,
            completion_signals: self.completion_signals,
            timeouts: TimeoutInput {
                idle_secs: self.idle_timeout_secs,
                hook_secs: self.hook_timeout_secs,
                completion_grace_secs: self.completion_grace_secs,
                merge_secs: self.merge_timeout_secs,
            },
            budgets: slipway_core::run::Budgets {
                max_tokens: self.max_tokens,
                max_cost_usd: self.max_cost_usd,
                max_duration_secs: self.max_duration_secs,
            },
            hooks: self.hooks,
            check: self.check,
            handoff,
            engine: self.engine,
        }
    }
}

/// A run's `sandbox` argument: a `SandboxSpec` whose image may be left to
/// the defaults.
#[derive(Debug, Clone, Deserialize)]
pub struct SandboxArg {
    /// `none`, `docker` or `docker-isolated`.
    #[serde(rename = "type")]
    pub kind: slipway_core::workspace::SandboxKind,
    /// The image of docker sandboxes.
    pub image: Option<String>,
    /// The container network.
    pub network: Option<String>,
    /// Memory and process limits.
    #[serde(default)]
    pub limits: slipway_core::run::Limits,
}

impl From<SandboxArg> for SandboxInput {
    fn from(arg: SandboxArg) -> Self {
        SandboxInput {
            kind: Some(arg.kind),
            image: arg.image,
            network: arg.network,
            limits: arg.limits,
        }
    }
}

/// `slipway.cancel`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelArgs {
    /// The run.
    pub run_id: slipway_core::ids::RunId,
    /// Its repository, when the sidecar has not seen the run.
    pub root: Option<PathBuf>,
}

/// `slipway.reply`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplyArgs {
    /// The run that asked.
    pub run_id: slipway_core::ids::RunId,
    /// The answer.
    pub answer: String,
    /// Its repository, when the sidecar has not seen the run.
    pub root: Option<PathBuf>,
}

/// `slipway.close`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CloseArgs {
    /// Repository.
    pub root: PathBuf,
    /// Id, path or branch.
    pub worktree: String,
    /// Remove even when something would be lost.
    #[serde(default)]
    pub force: bool,
    /// Change nothing: answer what would be lost (`{atRisk, actions}`).
    #[serde(default)]
    pub dry_run: bool,
}

/// `slipway.diff`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffArgs {
    /// Repository.
    pub root: PathBuf,
    /// Id, path or branch.
    pub worktree: String,
    /// One file (relative to the worktree root): its two texts instead of the list.
    pub path: Option<String>,
    /// Another worktree (id, path or branch, or a kept branch): compared
    /// with its tip instead of the merge base.
    pub against: Option<String>,
}

/// `slipway.land`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LandArgs {
    /// Repository.
    pub root: PathBuf,
    /// Id, path or branch.
    pub worktree: String,
    /// `merge`, `squash` or `rebase`.
    pub how: slipway_core::review::land::LandHow,
    /// The host branch to land in (default: the host's current branch).
    pub into: Option<String>,
    /// The merge or squash commit's message.
    pub message: Option<String>,
    /// How long working out the land may take before it stops unchanged (default 300).
    pub timeout_secs: Option<u64>,
}

/// `slipway.attempts`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttemptsArgs {
    /// Repository.
    pub root: PathBuf,
    /// The group.
    pub group_id: slipway_core::ids::GroupId,
}

/// `slipway.landAttempt`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LandAttemptArgs {
    /// Repository.
    pub root: PathBuf,
    /// The group.
    pub group_id: slipway_core::ids::GroupId,
    /// The attempt to land, 1…N.
    pub index: usize,
    /// `merge` (default), `squash` or `rebase`.
    #[serde(default = "merge")]
    pub how: slipway_core::review::land::LandHow,
    /// Discard the other attempts even when their work is lost.
    #[serde(default)]
    pub force: bool,
}

fn merge() -> slipway_core::review::land::LandHow {
    slipway_core::review::land::LandHow::Merge
}

/// `slipway.log`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogArgs {
    /// The run.
    pub run_id: slipway_core::ids::RunId,
    /// Byte offset to read from (default 0).
    #[serde(default)]
    pub from: u64,
    /// Send what is appended as `slipway/log` notifications until the run ends.
    #[serde(default)]
    pub follow: bool,
    /// Its repository, when the sidecar has not seen the run.
    pub root: Option<PathBuf>,
}

/// The `slipway/log` notification: what a followed run's log gained.
pub enum RunLog {}

impl Notification for RunLog {
    type Params = Value;
    const METHOD: &'static str = "slipway/log";
}

/// `slipway.seen`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeenArgs {
    /// The runs whose end the client has shown the user (ids are parsed: a
    /// name that is not a run id is refused before it names a file).
    pub run_ids: Vec<slipway_core::ids::RunId>,
}

/// `slipway.status`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusArgs {
    /// Any path.
    pub path: PathBuf,
    /// When given and the path is in a worktree, the answer carries this
    /// agent's interactive command line for it (`interactiveCommand`).
    pub agent: Option<AgentSpec>,
}

/// `slipway/runFinished`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunFinishedParams {
    /// Repository root.
    pub root: PathBuf,
    /// The whole run result, as `slipway run --json` prints it (run id, status,
    /// commits, merge and the branch it went into, quarantined findings,
    /// warnings, error, …).
    #[serde(flatten)]
    pub result: RunResult,
}

/// `slipway/runActivity`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunActivityParams {
    /// Repository root.
    pub root: PathBuf,
    /// The run.
    pub run_id: slipway_core::ids::RunId,
    /// What its agent is doing: step, files, turns, tokens, cost.
    pub activity: slipway_core::agent::activity::Activity,
}

/// The `slipway/runActivity` notification: a running run's latest activity,
/// at most [`ACTIVITY_EVERY`] apart per run.
pub enum RunActivity {}

impl Notification for RunActivity {
    type Params = RunActivityParams;
    const METHOD: &'static str = "slipway/runActivity";
}

/// The least time between two `slipway/runActivity` of one run.
pub const ACTIVITY_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// The `slipway/runFinished` notification.
pub enum RunFinished {}

impl Notification for RunFinished {
    type Params = RunFinishedParams;
    const METHOD: &'static str = "slipway/runFinished";
}

/// The `slipway/status` notification: a summary of every repository served.
pub enum SlipwayStatus {}

impl Notification for SlipwayStatus {
    type Params = Value;
    const METHOD: &'static str = "slipway/status";
}

/// A JSON-RPC error with a stable `data.kind` and a message that says what to do.
pub fn error(kind: ErrorKind, message: impl Into<String>, extra: Value) -> jsonrpc::Error {
    let code = if kind == ErrorKind::InvalidParams {
        jsonrpc::ErrorCode::InvalidParams
    } else {
        jsonrpc::ErrorCode::ServerError(-32001)
    };
    let mut data = json!({ "kind": kind });
    if let (Value::Object(map), Value::Object(more)) = (&mut data, extra) {
        map.extend(more);
    }
    jsonrpc::Error {
        code,
        message: message.into().into(),
        data: Some(data),
    }
}

/// An input, as the protocol names it.
fn field(field: Field) -> &'static str {
    match field {
        Field::Repository => "`root`",
        Field::Strategy => "`strategy`",
        Field::Branch => "`branch`",
        Field::Base => "`base`",
        Field::Worktree => "`worktree`",
        Field::Source => "`source`",
        Field::Ref => "`source.ref`",
        Field::Copy => "`copy`",
        Field::Sandbox => "a docker `sandbox`",
        Field::Image => "`sandbox.image`",
        Field::Agent => "`agent`",
        Field::Program => "`agent.command`",
        Field::Prompt => "`prompt`",
        Field::PromptFile => "`promptFile`",
        Field::Args => "`args`",
        Field::MaxIterations => "`maxIterations` (1 or more)",
        Field::CompletionSignals => "`completionSignals`",
        Field::MergeTimeout => "`mergeTimeoutSecs`",
        Field::Workspace => "`workspace`",
        Field::Into => "`into` (another local branch)",
        Field::Message => "`message`",
    }
}

/// A hint in the protocol's words.
fn hint_text(hint: &Hint) -> String {
    match hint {
        Hint::Give { field: f } => format!("give {}", field(*f)),
        Hint::Drop { field: f } => format!("drop {}", field(*f)),
        Hint::GiveArgs { names } => format!(
            "give each in `args`: {}",
            names
                .iter()
                .map(|n| format!("\"{n}\": …"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Hint::DropArg { name } => format!("drop `args.{name}`"),
        Hint::ListWorktrees => "see `slipway.list`".into(),
        Hint::ListRuns => "pass the run's `root`, or see `slipway/status`".into(),
        Hint::ListSandboxes => "see `slipway sandbox list`".into(),
        Hint::CreateWorkspace { name } => {
            format!("no workspace file '{name}' yet: create it first (see `slipway.workspaces`)")
        }
        Hint::ChangeWorkspace { name } => format!("workspace '{name}' exists: edit or remove it"),
        Hint::UseStrategy { strategies } => format!("or use strategy {}", strategies.join(" or ")),
        Hint::Trust { .. } => {
            "show the user `data.files`; if they approve, call `slipway.trust` with those `files` (path and hash) and send the request again".into()
        }
    }
}

/// A core failure as a JSON-RPC error: the message with each hint in the
/// protocol's words, `data` with the kind, the failure's data and its hints.
pub fn failure(e: &dyn Failure) -> jsonrpc::Error {
    let report = e.report();
    let message = report.worded(hint_text);
    let mut data = report.data;
    if !report.hints.is_empty() {
        data.insert("hints".into(), json!(report.hints));
    }
    if !report.actions.is_empty() {
        data.insert("actions".into(), json!(report.actions));
    }
    error(report.kind, message, Value::Object(data))
}

/// Parses the single object argument of a command.
pub fn parse_args<T: for<'de> Deserialize<'de>>(
    command: &str,
    arguments: &[Value],
) -> Result<T, jsonrpc::Error> {
    let Some(first) = arguments.first() else {
        return Err(error(
            ErrorKind::InvalidParams,
            format!("{command} takes one object argument; none was given"),
            Value::Null,
        ));
    };
    if arguments.len() > 1 {
        return Err(error(
            ErrorKind::InvalidParams,
            format!(
                "{command} takes one object argument; {} were given",
                arguments.len()
            ),
            Value::Null,
        ));
    }
    serde_json::from_value(first.clone()).map_err(|e| {
        error(
            ErrorKind::InvalidParams,
            format!("{command}: bad arguments: {e}"),
            Value::Null,
        )
    })
}
