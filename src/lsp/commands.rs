//! Each command: parse arguments, call the core, shape the answer. Runs on a
//! blocking thread (libgit2 handles are not `Sync`).

use std::path::Path;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};
use tower_lsp_server::jsonrpc;

use super::protocol::{
    self, CancelArgs, CloseArgs, CreateArgs, ResolveArgs, RootArgs, RunArgs, error,
};
use slipway_core::agent::prompt::{Prompt, PromptSource};
use slipway_core::git::policy::{self, SourcePolicy};
use slipway_core::git::refname::validate_branch_name;
use slipway_core::git::{HostRepo, OpenError, branches};
use slipway_core::run::{self, RunRequest, RunStrategy, SandboxSpec, Timeouts};
use slipway_core::worktree::{self, CloseOutcome, CreateError, CreateRequest, WorktreeTarget};

type Answer = Result<Value, jsonrpc::Error>;

fn to_value<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// Opens the repository a `root` names.
pub fn open(root: &Path) -> Result<HostRepo, jsonrpc::Error> {
    HostRepo::open(root)
        .map_err(|e: OpenError| error(e.kind(), e.to_string(), json!({ "root": root })))
}

fn source_error(e: policy::SourceError) -> jsonrpc::Error {
    let choices = e.choices().to_vec();
    error(e.kind(), e.to_string(), json!({ "choices": choices }))
}

fn create_error(e: CreateError) -> jsonrpc::Error {
    let path = e.worktree_path().map(Path::to_path_buf);
    match e {
        CreateError::Source(inner) => source_error(inner),
        other => error(
            other.kind(),
            other.to_string(),
            json!({ "worktreePath": path }),
        ),
    }
}

/// `slipway.branches`.
pub fn branches(args: RootArgs) -> Answer {
    let host = open(&args.root)?;
    let list = branches::list_branches(host.git()).map_err(git_error)?;
    Ok(json!({ "branches": list }))
}

fn git_error(e: git2::Error) -> jsonrpc::Error {
    error("git", format!("git: {e}"), Value::Null)
}

/// `slipway.resolveSource`.
pub fn resolve_source(args: ResolveArgs) -> Answer {
    let host = open(&args.root)?;
    let resolved = policy::resolve(host.git(), &args.source).map_err(source_error)?;
    Ok(to_value(&resolved))
}

/// `slipway.createWorktree`.
pub fn create_worktree(args: CreateArgs) -> Answer {
    let host = open(&args.root)?;
    let target = match (args.strategy.as_str(), args.branch) {
        ("branch", Some(name)) => WorktreeTarget::Branch {
            name,
            base: args.base,
        },
        ("branch", None) => {
            return Err(error(
                "invalidParams",
                "the branch strategy needs a branch name",
                Value::Null,
            ));
        }
        ("merge-to-head", _) => WorktreeTarget::MergeToHead,
        ("head", _) => {
            return Err(error(
                "invalidParams",
                "the head strategy writes into the host checkout and has no worktree; use branch or merge-to-head",
                Value::Null,
            ));
        }
        (other, _) => {
            return Err(error(
                "invalidParams",
                format!("unknown strategy '{other}'; use branch or merge-to-head"),
                Value::Null,
            ));
        }
    };
    let interactive = match &args.agent {
        Some(spec) => Some(
            spec.build()
                .map_err(|e| error("invalidParams", e.to_string(), Value::Null))?,
        ),
        None => None,
    };
    let created = worktree::create(
        &host,
        &CreateRequest {
            target,
            source: args.source.unwrap_or(SourcePolicy::HostHead),
            copy: args.copy,
        },
    )
    .map_err(create_error)?;
    let mut answer = json!({
        "id": created.record.id,
        "path": created.record.path,
        "branch": created.record.branch,
        "baseCommit": created.record.base_commit,
        "sourceLabel": created.source_label,
        "strategy": created.record.strategy,
        "reused": created.reused,
        "notes": created.notes,
    });
    if let (Some(agent), Value::Object(map)) = (interactive, &mut answer) {
        let invocation = agent.interactive();
        map.insert(
            "interactiveCommand".into(),
            json!({ "argv": invocation.argv, "cwd": created.record.path }),
        );
    }
    Ok(answer)
}

/// `slipway.list`.
pub fn list(args: RootArgs) -> Answer {
    let host = open(&args.root)?;
    let list = worktree::list(&host).map_err(git_error)?;
    Ok(json!({ "worktrees": list }))
}

/// `slipway.close`.
pub fn close(args: CloseArgs) -> Answer {
    let host = open(&args.root)?;
    let outcome = worktree::close(&host, &args.worktree, args.force)
        .map_err(|e| error(e.kind(), e.to_string(), Value::Null))?;
    Ok(match outcome {
        CloseOutcome::Removed {
            id,
            path,
            branch,
            branch_deleted,
            branch_kept,
            kept_commit,
        } => json!({
            "removed": true, "id": id, "path": path, "branch": branch,
            "branchDeleted": branch_deleted, "branchKept": branch_kept,
            "keptCommit": kept_commit,
        }),
        CloseOutcome::Preserved {
            id,
            preserved_path,
            branch,
            reason,
            changed_paths,
            commands,
        } => json!({
            "removed": false, "id": id, "preservedPath": preserved_path, "branch": branch,
            "reason": reason, "changedPaths": changed_paths, "commands": commands,
        }),
    })
}

/// `slipway.cancel`.
pub fn cancel(host: &HostRepo, args: &CancelArgs) -> Answer {
    let state =
        run::cancel(host, &args.run_id).map_err(|e| error(e.kind(), e.to_string(), Value::Null))?;
    Ok(json!({
        "runId": args.run_id,
        "status": match state {
            run::record::RunState::Running => "cancelling",
            run::record::RunState::Finished => "finished",
        },
    }))
}

/// Checks a run request the way the run itself would, so mistakes are answered
/// now instead of arriving later as a failed run.
pub fn validate_run(
    host: &HostRepo,
    mut args: RunArgs,
    handoff: bool,
) -> Result<RunRequest, jsonrpc::Error> {
    let invalid = |m: String| error("invalidParams", m, Value::Null);
    let workspace = match args.workspace.take() {
        None => None,
        Some(protocol::WorkspaceArg::Plan(plan)) => Some(plan),
        Some(protocol::WorkspaceArg::Name(name)) => {
            let ws = slipway_core::workspace::Workspace::load_named(&name)
                .map_err(|e| error(e.kind(), e.to_string(), Value::Null))?;
            Some(
                ws.launch_plan()
                    .map_err(|e| error(e.kind(), e.to_string(), Value::Null))?,
            )
        }
    };
    let workspace = workspace.map(|mut plan| {
        for mount in &mut plan.mounts {
            if let Some(answer) = args.sources.get(&mount.dst.display().to_string()) {
                mount.source = answer.clone();
            }
        }
        plan
    });
    if let Some(plan) = &workspace {
        let asks = slipway_core::run::workspace::sources_required(plan)
            .map_err(|e| error(e.kind(), e.to_string(), Value::Null))?;
        if !asks.is_empty() {
            let mounts: Vec<Value> = asks
                .iter()
                .map(|(dst, choices)| json!({ "dst": dst, "choices": choices }))
                .collect();
            let first = asks.first().map(|(_, c)| c.clone()).unwrap_or_default();
            let err = slipway_core::run::RunError::SourcesRequired { mounts: asks };
            return Err(error(
                "sourceBranchRequired",
                err.to_string(),
                json!({ "mounts": mounts, "choices": first }),
            ));
        }
    }
    if handoff && args.worktree.is_none() {
        return Err(invalid(
            "slipway.handoff needs the worktree to hand off (id, path or branch)".into(),
        ));
    }
    let strategy = match (args.strategy.as_deref(), &args.branch) {
        (Some("head"), None) => RunStrategy::Head,
        (Some("merge-to-head") | None, None) => RunStrategy::MergeToHead,
        (Some("branch") | None, Some(name)) => {
            validate_branch_name(name)
                .map_err(|e| error("invalidBranchName", e.to_string(), Value::Null))?;
            RunStrategy::Branch {
                name: name.clone(),
                base: args.base.clone(),
            }
        }
        (Some("branch"), None) => {
            return Err(invalid("the branch strategy needs a branch name".into()));
        }
        (Some(known @ ("head" | "merge-to-head")), Some(_)) => {
            return Err(invalid(format!(
                "a branch name only goes with the branch strategy, not {known}; drop `branch` or use strategy branch"
            )));
        }
        (Some(other), _) => {
            return Err(invalid(format!(
                "unknown strategy '{other}'; use head, merge-to-head or branch"
            )));
        }
    };
    if let Some(selector) = &args.worktree
        && worktree::find(host, selector).is_none()
    {
        return Err(error(
            "worktreeNotFound",
            format!("no slipway worktree matches '{selector}'"),
            Value::Null,
        ));
    }
    // A branch another create or run holds fails now, not later in runFinished.
    let locked_branch = match (&args.worktree, &strategy) {
        (Some(selector), _) => worktree::find(host, selector).map(|r| r.branch),
        (None, RunStrategy::Branch { name, .. }) => Some(name.clone()),
        (None, RunStrategy::Head) => host.current_branch(),
        (None, RunStrategy::MergeToHead) => None,
    };
    if let Some(branch) = locked_branch
        && let Err(e) = worktree::lock_branch(host, &branch)
    {
        let (kind, holder) = match &e {
            worktree::lock::LockError::InUse { holder, .. } => (
                "branchInUse",
                serde_json::to_value(holder).unwrap_or(Value::Null),
            ),
            worktree::lock::LockError::Io { .. } => ("io", Value::Null),
        };
        return Err(error(
            kind,
            e.to_string(),
            json!({ "branch": branch, "holder": holder }),
        ));
    }
    let source = args.source.clone().unwrap_or(SourcePolicy::HostHead);
    let new_branch = match &strategy {
        RunStrategy::MergeToHead => true,
        RunStrategy::Branch { name, .. } => {
            slipway_core::git::worktrees::branch_tip(host.git(), name).is_none()
        }
        RunStrategy::Head => false,
    };
    if args.worktree.is_none() && new_branch {
        let effective = match &strategy {
            RunStrategy::Branch {
                base: Some(base), ..
            } => SourcePolicy::Named {
                reference: base.clone(),
            },
            _ => source.clone(),
        };
        policy::resolve(host.git(), &effective).map_err(source_error)?;
    }
    let prompt = match (args.prompt, args.prompt_file) {
        (Some(text), None) => PromptSource::Inline(text),
        (None, Some(file)) => PromptSource::File(if file.is_absolute() {
            file
        } else {
            host.root().join(file)
        }),
        (None, None) => PromptSource::Inline(String::new()),
        (Some(_), Some(_)) => return Err(invalid("give prompt or promptFile, not both".into())),
    };
    let parsed = Prompt::load(&prompt, host.root()).map_err(|e| invalid(e.to_string()))?;
    if matches!(prompt, PromptSource::Inline(_)) && !args.args.is_empty() {
        return Err(invalid(
            "args only apply to a promptFile; an inline prompt is used literally".into(),
        ));
    }
    parsed.check_args(&args.args).map_err(|e| {
        error(
            run::RunError::from(e).kind(),
            run_error_text(&args.args, &parsed),
            Value::Null,
        )
    })?;
    args.agent.build().map_err(|e| invalid(e.to_string()))?;
    // A handoff continues the conversation the person had in that worktree.
    if handoff
        && let Some(record) = args.worktree.as_ref().and_then(|w| worktree::find(host, w))
        && let Some(id) = args.agent.resume_latest_session(&record.path)
    {
        tracing::info!(session = %id, "handoff resumes the worktree's latest session");
    }
    if args.max_iterations == Some(0) {
        return Err(invalid("maxIterations must be at least 1".into()));
    }
    if args.completion_signals.iter().any(|s| s.trim().is_empty()) {
        return Err(invalid(
            "completionSignals may not hold an empty string (it would match every line)".into(),
        ));
    }
    let defaults = Timeouts::default();
    Ok(RunRequest {
        run_id: Some(run::new_run_id()),
        strategy,
        worktree: args.worktree,
        source,
        copy: args.copy,
        agent: args.agent,
        sandbox: args.sandbox.unwrap_or(SandboxSpec::None),
        sandbox_id: None,
        workspace,
        prompt,
        prompt_args: args.args,
        max_iterations: args.max_iterations.unwrap_or(1),
        completion_signals: args.completion_signals,
        timeouts: Timeouts {
            idle: args
                .idle_timeout_secs
                .map(Duration::from_secs)
                .unwrap_or(defaults.idle),
            hook: args
                .hook_timeout_secs
                .map(Duration::from_secs)
                .unwrap_or(defaults.hook),
            completion_grace: args
                .completion_grace_secs
                .map(Duration::from_secs)
                .unwrap_or(defaults.completion_grace),
            merge: args
                .merge_timeout_secs
                .map(Duration::from_secs)
                .unwrap_or(defaults.merge),
            ..defaults
        },
        hooks: args.hooks.unwrap_or_default(),
    })
}

fn run_error_text(args: &std::collections::BTreeMap<String, String>, prompt: &Prompt) -> String {
    match prompt.check_args(args) {
        Err(e) => e.to_string(),
        Ok(_) => String::new(),
    }
}

/// Every command name the server answers, for `initialize`.
pub fn command_names() -> Vec<String> {
    protocol::COMMANDS.iter().map(|c| (*c).to_owned()).collect()
}

/// `slipway.workspaces`: every named workspace, with its mounts and which of
/// them ask for a source branch at launch.
pub fn workspaces() -> Answer {
    let entries =
        slipway_core::workspace::list().map_err(|e| error(e.kind(), e.to_string(), Value::Null))?;
    let mut out = Vec::new();
    for entry in entries {
        match slipway_core::workspace::Workspace::load(&entry.path) {
            Ok(ws) => {
                let mounts: Vec<Value> = ws
                    .mounts
                    .iter()
                    .map(|m| {
                        json!({
                            "src": m.src, "dst": m.dst, "readonly": m.readonly,
                            "isolation": format!("{:?}", m.isolation).to_lowercase(),
                            "source": m.policy,
                        })
                    })
                    .collect();
                out.push(json!({ "name": entry.name, "path": entry.path, "workdir": ws.effective_workdir(), "mounts": mounts }));
            }
            Err(e) => {
                out.push(json!({ "name": entry.name, "path": entry.path, "error": e.to_string() }))
            }
        }
    }
    Ok(json!({ "workspaces": out }))
}
