//! The wire shapes of the sidecar protocol (docs/protocol.md): command names,
//! argument objects, notifications, and how core errors become JSON-RPC errors.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tower_lsp_server::jsonrpc;
use tower_lsp_server::ls_types::notification::Notification;

use slipway_core::agent::AgentSpec;
use slipway_core::git::policy::SourcePolicy;
use slipway_core::run::{CommitRef, ErrorInfo, Hooks, RunStatus, SandboxSpec, Usage};

/// The protocol version `initialize` reports as `capabilities.experimental.slipwayProtocol`.
pub const PROTOCOL_VERSION: u32 = 1;

/// Every command `workspace/executeCommand` accepts.
pub const COMMANDS: [&str; 10] = [
    "slipway.branches",
    "slipway.resolveSource",
    "slipway.createWorktree",
    "slipway.list",
    "slipway.run",
    "slipway.handoff",
    "slipway.cancel",
    "slipway.close",
    "slipway.status",
    "slipway.workspaces",
];

/// `{root}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RootArgs {
    /// Any path inside the repository or one of its worktrees.
    pub root: PathBuf,
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
    /// `branch` or `merge-to-head` (`head` has no worktree).
    pub strategy: String,
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
    /// Repository.
    pub root: PathBuf,
    /// An existing worktree (id, path or branch).
    pub worktree: Option<String>,
    /// `head`, `merge-to-head` or `branch`.
    pub strategy: Option<String>,
    /// The branch for `branch`.
    pub branch: Option<String>,
    /// Start point of a new branch.
    pub base: Option<String>,
    /// Source policy (default `host_head`).
    pub source: Option<SourcePolicy>,
    /// Host paths copied into a new worktree.
    #[serde(default)]
    pub copy: Vec<String>,
    /// The agent.
    pub agent: AgentSpec,
    /// The sandbox (default `none`).
    pub sandbox: Option<SandboxSpec>,
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
    /// Hooks.
    pub hooks: Option<Hooks>,
    /// Run on a workspace: its name (a file `slipway workspace create` wrote), or
    /// an inline plan `{name, workdir, mounts: [{src, dst, readonly, isolation, source}]}`.
    /// `ask` mounts answer `sourceBranchRequired` with `data.mounts` listing each, in order.
    pub workspace: Option<WorkspaceArg>,
    /// Per-mount answers to `ask`, by `dst`: `{"/work/a": {"policy": "named", "ref": "main"}}`.
    #[serde(default)]
    pub sources: BTreeMap<String, SourcePolicy>,
}

/// A workspace named, or given inline.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum WorkspaceArg {
    /// The name of a workspace file.
    Name(String),
    /// A plan given in full.
    Plan(slipway_core::run::workspace::WorkspacePlan),
}

/// `slipway.cancel`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelArgs {
    /// The run.
    pub run_id: String,
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
    /// Remove even with uncommitted changes.
    #[serde(default)]
    pub force: bool,
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
    /// Run id.
    pub run_id: String,
    /// Repository root.
    pub root: PathBuf,
    /// How it ended.
    pub status: RunStatus,
    /// Commits created, oldest first.
    pub commits: Vec<CommitRef>,
    /// The branch the agent worked on.
    pub branch: String,
    /// Where it ran.
    pub worktree_path: PathBuf,
    /// Set when the worktree was kept.
    pub preserved_worktree_path: Option<PathBuf>,
    /// Set when a temporary branch was kept on purpose.
    pub kept_branch: Option<String>,
    /// The run's log.
    pub log_file: PathBuf,
    /// Why it did not complete.
    pub error: Option<ErrorInfo>,
    /// Iterations started.
    pub iterations: u32,
    /// The completion signal that matched.
    pub completion_signal: Option<String>,
    /// The agent's session id.
    pub session_id: Option<String>,
    /// Token usage the agent reported.
    pub usage: Option<Usage>,
    /// The agent's final answer.
    pub final_text: Option<String>,
}

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
pub fn error(kind: &str, message: impl Into<String>, extra: Value) -> jsonrpc::Error {
    let code = if kind == "invalidParams" {
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

/// Parses the single object argument of a command.
pub fn parse_args<T: for<'de> Deserialize<'de>>(
    command: &str,
    arguments: &[Value],
) -> Result<T, jsonrpc::Error> {
    let Some(first) = arguments.first() else {
        return Err(error(
            "invalidParams",
            format!("{command} takes one object argument; none was given"),
            Value::Null,
        ));
    };
    if arguments.len() > 1 {
        return Err(error(
            "invalidParams",
            format!(
                "{command} takes one object argument; {} were given",
                arguments.len()
            ),
            Value::Null,
        ));
    }
    serde_json::from_value(first.clone()).map_err(|e| {
        error(
            "invalidParams",
            format!("{command}: bad arguments: {e}"),
            Value::Null,
        )
    })
}
