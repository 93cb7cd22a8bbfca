//! Each command: parse arguments, call the core, shape the answer. Runs on a
//! blocking thread (libgit2 handles are not `Sync`).

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Value, json};
use tower_lsp_server::jsonrpc;

use super::protocol::{
    self, AttemptsArgs, BranchesArgs, CancelArgs, CloseArgs, CreateArgs, DiffArgs, LandArgs,
    LandAttemptArgs, ResolveArgs, RootArgs, RunArgs, TrustArgs, error, failure,
};
use super::status_cache::StatusCache;
use slipway_core::error::ErrorKind;
use slipway_core::git::policy;
use slipway_core::git::{HostRepo, OpenError, branches};
use slipway_core::ids::RunId;
use slipway_core::plan::worktree::{CreateInput, plan_create};
use slipway_core::plan::{self, PlanError, RunPlan};
use slipway_core::run;
use slipway_core::worktree::{self, CloseOutcome, CreateError};

type Answer = Result<Value, jsonrpc::Error>;

fn to_value<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// Opens the repository a `root` names.
pub fn open(root: &Path) -> Result<HostRepo, jsonrpc::Error> {
    HostRepo::open(root).map_err(|e: OpenError| {
        let mut err = failure(&e);
        if let Some(Value::Object(data)) = &mut err.data {
            data.insert("root".into(), json!(root));
        }
        err
    })
}

/// A source error, its `choices` the full branch entries (as `slipway.branches` lists them).
fn source_error(host: &HostRepo, e: policy::SourceError) -> jsonrpc::Error {
    failure(&PlanError::source(host, e))
}

/// A failed create leaves nothing behind (it removes what it made), so its
/// error names no worktree.
fn create_error(host: &HostRepo, e: CreateError) -> jsonrpc::Error {
    match e {
        CreateError::Source(inner) => source_error(host, inner),
        other => error(other.kind(), other.to_string(), Value::Null),
    }
}

/// `slipway.branches`.
pub fn branches(args: BranchesArgs) -> Answer {
    let host = open(&args.root)?;
    let mut list = branches::list_branches(host.git()).map_err(git_error)?;
    if args.ahead_behind {
        branches::add_ahead_behind(host.git(), &mut list);
    }
    Ok(json!({ "branches": list }))
}

fn git_error(e: git2::Error) -> jsonrpc::Error {
    error(ErrorKind::Git, format!("git: {e}"), Value::Null)
}

/// `slipway.resolveSource`.
pub fn resolve_source(args: ResolveArgs) -> Answer {
    let host = open(&args.root)?;
    let resolved = policy::resolve(host.git(), &args.source).map_err(|e| source_error(&host, e))?;
    Ok(to_value(&resolved))
}

/// `slipway.createWorktree`.
pub fn create_worktree(args: CreateArgs) -> Answer {
    let host = open(&args.root)?;
    let interactive = match &args.agent {
        Some(spec) => Some(
            spec.build()
                .map_err(|e| error(ErrorKind::InvalidParams, e.to_string(), Value::Null))?,
        ),
        None => None,
    };
    let request = plan_create(
        &host,
        CreateInput {
            strategy: args.strategy,
            branch: args.branch,
            base: args.base,
            source: args.source,
            copy: args.copy,
        },
    )
    .map_err(|e| failure(&e))?;
    let created = worktree::create(&host, &request).map_err(|e| create_error(&host, e))?;
    let mut answer = json!({
        "id": created.record.id,
        "path": created.record.path,
        "branch": created.record.branch,
        "baseCommit": created.record.base_commit,
        "sourceLabel": created.source_label,
        "strategy": created.record.strategy,
        "reused": created.reused,
        "notes": created.notes,
        "copy": created.copy,
    });
    if let (Some(agent), Value::Object(map)) = (interactive, &mut answer) {
        let invocation = agent.interactive_in(&worktree::commit_dirs(&created.record.path));
        map.insert(
            "interactiveCommand".into(),
            json!({ "argv": invocation.argv, "cwd": created.record.path }),
        );
    }
    Ok(answer)
}

/// `slipway.list`, each worktree's changes and commits ahead read from the
/// watched cache of its repository (`cache_of` gives it): only worktrees
/// that changed on disk since they were last read are read again.
pub fn list(
    args: RootArgs,
    cache_of: impl FnOnce(&HostRepo) -> std::sync::Arc<std::sync::Mutex<StatusCache>>,
) -> Answer {
    let host = open(&args.root)?;
    let cache = cache_of(&host);
    // A poisoned cache is only stale: its next read is from disk.
    let mut cache = cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let list = worktree::list_with(&host, |record| {
        cache.status(record, || worktree::read_status(&host, record))
    })
    .map_err(git_error)?;
    Ok(json!({ "worktrees": list, "keptBranches": slipway_core::review::kept(&host) }))
}

/// `slipway.close`; with `dryRun`, what it would lose.
pub fn close(args: CloseArgs) -> Answer {
    let host = open(&args.root)?;
    if args.dry_run {
        return slipway_core::review::risk::preview_close(&host, &args.worktree)
            .map(|p| to_value(&p))
            .map_err(|e| failure(&e));
    }
    let outcome = worktree::close(&host, &args.worktree, args.force).map_err(|e| failure(&e))?;
    let actions = outcome.actions();
    Ok(close_answer(outcome, &actions))
}

/// `slipway.discard`: answered as `slipway.close` is.
pub fn discard(args: CloseArgs) -> Answer {
    use slipway_core::review::discard;
    let host = open(&args.root)?;
    if args.dry_run {
        return discard::preview(&host, &args.worktree)
            .map(|p| to_value(&p))
            .map_err(|e| failure(&e));
    }
    let discarded = discard::discard(&host, &args.worktree, args.force).map_err(|e| failure(&e))?;
    Ok(close_answer(discarded.answer, &discarded.actions))
}

/// `slipway.land`.
pub fn land(args: LandArgs) -> Answer {
    use slipway_core::review::land;
    let host = open(&args.root)?;
    let request = land::LandRequest {
        worktree: &args.worktree,
        how: args.how,
        into: args.into.as_deref(),
        message: args.message.as_deref(),
        timeout: std::time::Duration::from_secs(args.timeout_secs.unwrap_or(300)),
    };
    land::land(&host, &request)
        .map(|l| to_value(&l))
        .map_err(|e| failure(&e))
}

/// A close (or discard) outcome as the protocol answers it.
fn close_answer(outcome: CloseOutcome, actions: &[slipway_core::actions::Action]) -> Value {
    let mut answer = match outcome {
        CloseOutcome::Removed {
            id,
            path,
            branch,
            branch_deleted,
            branch_kept,
            kept_commit,
            discarded_tip,
        } => json!({
            "removed": true, "id": id, "path": path, "branch": branch,
            "branchDeleted": branch_deleted, "branchKept": branch_kept,
            "keptCommit": kept_commit, "discardedTip": discarded_tip,
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
    };
    if let Value::Object(map) = &mut answer {
        map.insert("actions".into(), json!(actions));
    }
    answer
}

/// `slipway.diff`: the whole change, or one file's two texts.
pub fn diff(args: DiffArgs) -> Answer {
    use slipway_core::review::diff;
    let host = open(&args.root)?;
    match &args.path {
        Some(path) => diff::file_texts(&host, &args.worktree, path, args.against.as_deref())
            .map(|t| to_value(&t)),
        None => diff::diff(&host, &args.worktree, args.against.as_deref()).map(|d| to_value(&d)),
    }
    .map_err(|e| failure(&e))
}

/// `slipway.trust`: the files given, else the repository's `slipway.toml`.
pub fn trust(args: TrustArgs) -> Answer {
    use slipway_core::trust::{TrustRequest, approve_here};
    let requests = match (args.files, &args.root) {
        (Some(files), _) if !files.is_empty() => files,
        (_, Some(root)) => vec![TrustRequest::repository(open(root)?.root())],
        (_, None) => {
            return Err(error(
                ErrorKind::InvalidParams,
                "slipway.trust needs `root` (to approve its `slipway.toml`) or `files`",
                Value::Null,
            ));
        }
    };
    let trusted = approve_here(&requests, args.dry_run).map_err(|e| failure(&e))?;
    Ok(json!({ "trusted": trusted, "dryRun": args.dry_run }))
}

/// `slipway.runs`.
pub fn runs(args: RootArgs) -> Answer {
    let host = open(&args.root)?;
    Ok(json!({ "runs": run::listing::runs(&host) }))
}

/// `slipway.log`: the first repository of `roots` that knows the run reads
/// its log from `from`; the answer and that repository's root.
pub fn log(
    roots: &[PathBuf],
    run_id: &RunId,
    from: u64,
) -> Result<(Value, PathBuf), jsonrpc::Error> {
    for root in roots {
        let Ok(host) = HostRepo::open(root) else {
            continue;
        };
        if !run::log_read::known(&host, run_id) {
            continue;
        }
        let chunk = run::log_read::read(&host, run_id, from).map_err(|e| failure(&e))?;
        return Ok((to_value(&chunk), host.root().to_path_buf()));
    }
    Err(failure(&run::log_read::LogError::UnknownRun {
        run_id: run_id.to_string(),
    }))
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

/// Plans a run request (`slipway.run`, `slipway.handoff`) in the core, so
/// mistakes are answered now instead of arriving later as a failed run.
pub fn plan_run(args: RunArgs, handoff: bool) -> Result<RunPlan, jsonrpc::Error> {
    // Relative paths are read from the repository the request names.
    let cwd = args.root.clone().unwrap_or_else(|| PathBuf::from("/"));
    plan::plan_run(args.into_input(handoff), &cwd).map_err(|e| failure(&e))
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
                            "isolation": m.isolation.name(),
                            "source": m.policy,
                        })
                    })
                    .collect();
                let repository = ws.plan().as_ref().and_then(plan::workspace_repository);
                out.push(json!({
                    "name": entry.name, "path": entry.path, "workdir": ws.effective_workdir(),
                    "mounts": mounts, "repository": repository,
                }));
            }
            Err(e) => {
                out.push(json!({ "name": entry.name, "path": entry.path, "error": e.to_string() }))
            }
        }
    }
    Ok(json!({ "workspaces": out }))
}

/// `slipway.attemptGroups`.
pub fn attempt_groups(args: RootArgs) -> Answer {
    let host = open(&args.root)?;
    slipway_core::attempts::compare::groups(&host)
        .map(|groups| json!({ "groups": groups }))
        .map_err(|e| failure(&e))
}

/// `slipway.attempts`.
pub fn attempts(args: AttemptsArgs) -> Answer {
    let host = open(&args.root)?;
    slipway_core::attempts::compare::compare(&host, &args.group_id)
        .map(|c| to_value(&c))
        .map_err(|e| failure(&e))
}

/// `slipway.landAttempt`.
pub fn land_attempt(args: LandAttemptArgs) -> Answer {
    let host = open(&args.root)?;
    slipway_core::attempts::pick::land_attempt(
        &host,
        &args.group_id,
        args.index,
        args.how,
        args.force,
    )
    .map(|p| to_value(&p))
    .map_err(|e| failure(&e))
}
