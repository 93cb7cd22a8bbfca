//! The `LanguageServer` implementation: lifecycle, workspace folders, and
//! `workspace/executeCommand` dispatch. Handlers return quickly; git work runs
//! on blocking threads and runs happen in detached processes.

use slipway_core::error::ErrorKind;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::{
    DidChangeWorkspaceFoldersParams, ExecuteCommandOptions, ExecuteCommandParams, InitializeParams,
    InitializeResult, InitializedParams, LSPAny, OneOf, ServerCapabilities, ServerInfo,
    WorkDoneProgressCancelParams, WorkspaceFoldersServerCapabilities, WorkspaceServerCapabilities,
};
use tower_lsp_server::{Client, LanguageServer};

use super::commands;
use super::detach;
use super::protocol::{
    self, CancelArgs, LogArgs, PROTOCOL_VERSION, ReplyArgs, RunArgs, RunLog, StatusArgs, error,
    parse_args,
};
use super::state::State;

/// The slipway sidecar.
pub struct SlipwayServer {
    client: Client,
    state: Arc<State>,
}

impl SlipwayServer {
    /// A server talking to `client`.
    pub fn new(client: Client, state: Arc<State>) -> SlipwayServer {
        SlipwayServer { client, state }
    }

    /// `window/workDoneProgress/cancel`: the user pressed cancel on a run's progress.
    pub async fn progress_cancel(&self, params: WorkDoneProgressCancelParams) {
        let Some(run_id) = State::run_of_token(&params.token) else {
            return;
        };
        let _ = self.cancel(CancelArgs { run_id, root: None }).await;
    }

    async fn cancel(&self, args: CancelArgs) -> Result<Value> {
        let roots = self.run_roots(&args.run_id, args.root.clone()).await;
        let run_id = args.run_id.clone();
        let answer = tokio::task::spawn_blocking(move || {
            for root in roots {
                let Ok(host) = commands::open(&root) else {
                    continue;
                };
                match commands::cancel(&host, &args) {
                    Ok(value) => return Ok(value),
                    // Found but refused: that answer, not "unknown".
                    Err(e)
                        if e.data.as_ref().and_then(|d| d.get("kind"))
                            != Some(&Value::from(ErrorKind::UnknownRun.as_str())) =>
                    {
                        return Err(e);
                    }
                    Err(_) => {}
                }
            }
            Err(error(
                ErrorKind::UnknownRun,
                format!(
                    "no run '{}' in any repository this sidecar serves",
                    args.run_id
                ),
                Value::Null,
            ))
        })
        .await
        .map_err(|e| error(ErrorKind::Internal, e.to_string(), Value::Null))?;
        tracing::info!(run_id = run_id.as_str(), "cancel requested");
        self.state.poke();
        answer
    }

    /// `slipway.reply`: the run that answers a `needsInput` run starts
    /// detached, as `slipway.run` does; answered with its id at once.
    async fn reply(&self, args: ReplyArgs) -> Result<Value> {
        let roots = self.run_roots(&args.run_id, args.root.clone()).await;
        let (run_id, common, root) = tokio::task::spawn_blocking(move || {
            let unknown = |e: &slipway_core::run::reply::ReplyError| {
                matches!(e, slipway_core::run::reply::ReplyError::UnknownRun(_))
            };
            for root in roots {
                let Ok(host) = commands::open(&root) else {
                    continue;
                };
                let request =
                    match slipway_core::run::reply::request(&host, &args.run_id, &args.answer) {
                        Ok(request) => request,
                        Err(e) if unknown(&e) => continue,
                        Err(e) => return Err(super::protocol::failure(&e)),
                    };
                let run_id = detach::spawn_run(&host, &request).map_err(|e| {
                    error(
                        ErrorKind::Io,
                        format!("cannot start the run process: {e}"),
                        Value::Null,
                    )
                })?;
                return Ok((
                    run_id,
                    host.common_dir().to_path_buf(),
                    host.root().to_path_buf(),
                ));
            }
            Err(error(
                ErrorKind::UnknownRun,
                format!(
                    "no run '{}' in any repository this sidecar serves; pass `root`",
                    args.run_id
                ),
                Value::Null,
            ))
        })
        .await
        .map_err(|e| error(ErrorKind::Internal, e.to_string(), Value::Null))??;
        self.state.register(common.clone(), root).await;
        self.state.follow(&common, &run_id).await;
        Ok(json!({ "runId": run_id }))
    }

    /// The repositories a run may be in: the one named, the one the run was
    /// seen in, then every one served.
    async fn run_roots(&self, run_id: &str, root: Option<PathBuf>) -> Vec<PathBuf> {
        let mut roots: Vec<PathBuf> = root.into_iter().collect();
        if let Some(root) = self.state.root_of_run(run_id).await {
            roots.push(root);
        }
        roots.extend(self.state.roots().await);
        roots
    }

    /// `slipway.log`: the log from `from`; with `follow`, a task then polls
    /// the file and sends what is appended as `slipway/log` until the run
    /// ends (a read of a file a few times a second costs next to nothing).
    async fn log(&self, args: LogArgs) -> Result<Value> {
        let roots = self.run_roots(&args.run_id, args.root.clone()).await;
        let run_id = args.run_id.clone();
        let (answer, root) = blocking(move || commands::log(&roots, &run_id, args.from)).await?;
        let done = answer["done"].as_bool().unwrap_or(true);
        if args.follow && !done {
            let client = self.client.clone();
            let run_id = args.run_id;
            let mut next = answer["next"].as_u64().unwrap_or(0);
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                    let (id, roots) = (run_id.clone(), vec![root.clone()]);
                    let read =
                        tokio::task::spawn_blocking(move || commands::log(&roots, &id, next)).await;
                    let Ok(Ok((chunk, _))) = read else {
                        tracing::warn!(
                            run_id = run_id.as_str(),
                            "following the log stopped: it cannot be read"
                        );
                        return;
                    };
                    let done = chunk["done"].as_bool().unwrap_or(true);
                    next = chunk["next"].as_u64().unwrap_or(next);
                    if chunk["text"].as_str().is_some_and(|t| !t.is_empty()) || done {
                        let mut params = chunk;
                        if let Value::Object(map) = &mut params {
                            map.insert("runId".into(), json!(run_id));
                        }
                        client.send_notification::<RunLog>(params).await;
                    }
                    if done {
                        return;
                    }
                }
            });
        }
        Ok(answer)
    }

    async fn start_run(&self, args: RunArgs, handoff: bool) -> Result<Value> {
        let dry_run = args.dry_run;
        let attempts = args.attempts;
        let plan = tokio::task::spawn_blocking(move || commands::plan_run(args, handoff))
            .await
            .map_err(|e| error(ErrorKind::Internal, e.to_string(), Value::Null))??;
        if dry_run {
            return Ok(json!({ "plan": plan }));
        }
        if let Some(count) = attempts {
            return self.start_group(plan, count).await;
        }
        let (run_id, common, root) = tokio::task::spawn_blocking(move || {
            let host = commands::open(&plan.repository)?;
            let run_id = detach::spawn_run(&host, &plan.request).map_err(|e| {
                error(
                    ErrorKind::Io,
                    format!("cannot start the run process: {e}"),
                    Value::Null,
                )
            })?;
            Ok::<_, tower_lsp_server::jsonrpc::Error>((
                run_id,
                host.common_dir().to_path_buf(),
                host.root().to_path_buf(),
            ))
        })
        .await
        .map_err(|e| error(ErrorKind::Internal, e.to_string(), Value::Null))??;
        self.state.register(common.clone(), root).await;
        self.state.follow(&common, &run_id).await;
        Ok(json!({ "runId": run_id }))
    }

    /// `slipway.run` with `attempts`: the group is prepared (checked, its
    /// record written) before the answer, then run by one detached process.
    async fn start_group(&self, plan: slipway_core::plan::RunPlan, count: usize) -> Result<Value> {
        let (group, common, root) = tokio::task::spawn_blocking(move || {
            let host = commands::open(&plan.repository)?;
            let agents = vec![plan.request.agent.clone(); count];
            let group = slipway_core::attempts::prepare_group(&host, &plan.request, &agents)
                .map_err(|e| super::protocol::failure(&e))?;
            detach::spawn_group(&host, &plan.request, &group.group_id).map_err(|e| {
                error(
                    ErrorKind::Io,
                    format!("cannot start the attempts' process: {e}"),
                    Value::Null,
                )
            })?;
            Ok::<_, tower_lsp_server::jsonrpc::Error>((
                group,
                host.common_dir().to_path_buf(),
                host.root().to_path_buf(),
            ))
        })
        .await
        .map_err(|e| error(ErrorKind::Internal, e.to_string(), Value::Null))??;
        self.state.register(common.clone(), root).await;
        for attempt in &group.attempts {
            self.state.follow(&common, &attempt.run_id).await;
        }
        let run_ids: Vec<&str> = group.attempts.iter().map(|a| a.run_id.as_str()).collect();
        Ok(json!({ "groupId": group.group_id, "runIds": run_ids }))
    }
}

/// `capabilities.experimental.slipway`: the protocol version and every name
/// the server accepts (agents, sandboxes, policies, strategies, land modes).
fn advertised() -> Value {
    let mut names =
        serde_json::to_value(slipway_core::plan::vocabularies()).unwrap_or_else(|_| json!({}));
    if let Value::Object(map) = &mut names {
        map.insert("protocol".into(), json!(PROTOCOL_VERSION));
    }
    names
}

/// `slipway.status`: cheap state for one path from the cache, with the
/// agent's interactive command there when `agent` is given. The front door
/// answers it ahead of queued git work.
pub async fn status_command(state: &Arc<State>, args: StatusArgs) -> Result<Value> {
    let mut answer = state.status_for(&args.path).await;
    if let Some(spec) = &args.agent {
        let agent = spec
            .build()
            .map_err(|e| error(ErrorKind::InvalidParams, e.to_string(), Value::Null))?;
        let cwd = answer["path"].as_str().map(PathBuf::from);
        if let (Some(cwd), Value::Object(map)) = (cwd, &mut answer) {
            map.insert(
                "interactiveCommand".into(),
                json!({
                    "argv": agent.interactive_in(&slipway_core::worktree::commit_dirs(&cwd)).argv,
                    "cwd": cwd
                }),
            );
        }
    }
    Ok(answer)
}

/// Git work of commands, at most one per core at a time: a flood of branch
/// listings then queues here instead of taking every core from the cache
/// answers and the refresh loop.
static GIT_WORK: std::sync::LazyLock<tokio::sync::Semaphore> = std::sync::LazyLock::new(|| {
    tokio::sync::Semaphore::new(std::thread::available_parallelism().map_or(2, |n| n.get()))
});

/// Runs git work on a thread of its own at a lower CPU priority: with every
/// core busy listing branches, the front door still gets a core the moment a
/// status request arrives (on two cores, equal priorities kept status answers
/// 30–100 ms behind the flood). A fresh thread, not tokio's blocking pool,
/// because a thread's priority cannot be raised back without privileges and
/// the pool's threads also serve stdin and stdout.
async fn blocking<T, F>(f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    let _permit = GIT_WORK
        .acquire()
        .await
        .map_err(|e| error(ErrorKind::Internal, e.to_string(), Value::Null))?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("slipway-git".into())
        .spawn(move || {
            super::memory::lower_priority();
            // The receiver is gone only when the request was dropped.
            let _ = tx.send(super::memory::tracked(f));
        })
        .map_err(|e| {
            error(
                ErrorKind::Internal,
                format!("cannot start a thread for the command: {e}"),
                Value::Null,
            )
        })?;
    rx.await.map_err(|_| {
        error(
            ErrorKind::Internal,
            "the command panicked".to_owned(),
            Value::Null,
        )
    })?
}

impl LanguageServer for SlipwayServer {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let progress = params
            .capabilities
            .window
            .as_ref()
            .and_then(|w| w.work_done_progress)
            .unwrap_or(false);
        self.state.set_progress_supported(progress);
        let confirms = params
            .initialization_options
            .as_ref()
            .and_then(|o| o.get("confirmsSeen"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        self.state.set_confirms_seen(confirms);
        for folder in params.workspace_folders.unwrap_or_default() {
            if let Some(path) = folder.uri.to_file_path() {
                self.state.add_root(path.into_owned()).await;
            }
        }
        #[allow(deprecated)]
        if let Some(path) = params.root_uri.as_ref().and_then(|u| u.to_file_path()) {
            self.state.add_root(path.into_owned()).await;
        }
        Ok(InitializeResult {
            capabilities: ServerCapabilities {
                execute_command_provider: Some(ExecuteCommandOptions {
                    commands: commands::command_names(),
                    ..ExecuteCommandOptions::default()
                }),
                workspace: Some(WorkspaceServerCapabilities {
                    workspace_folders: Some(WorkspaceFoldersServerCapabilities {
                        supported: Some(true),
                        change_notifications: Some(OneOf::Left(true)),
                    }),
                    file_operations: None,
                }),
                // The names the server accepts: shims offer these and keep no lists.
                experimental: Some(json!({
                    "slipwayProtocol": PROTOCOL_VERSION,
                    "slipway": advertised(),
                })),
                ..ServerCapabilities::default()
            },
            server_info: Some(ServerInfo {
                name: "slipway".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            offset_encoding: None,
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        tokio::spawn(self.state.clone().run_loop(self.client.clone()));
    }

    async fn shutdown(&self) -> Result<()> {
        self.state.stop();
        Ok(())
    }

    async fn did_change_workspace_folders(&self, params: DidChangeWorkspaceFoldersParams) {
        for folder in params.event.added {
            if let Some(path) = folder.uri.to_file_path() {
                self.state.add_root(path.into_owned()).await;
            }
        }
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<LSPAny>> {
        let command = params.command.clone();
        let args = params.arguments;
        tracing::debug!(command, "executeCommand");
        // Any repository a command names is watched from now on (status, diagnostics).
        if let Some(root) = args
            .first()
            .and_then(|a| a.get("root"))
            .and_then(Value::as_str)
        {
            self.state.add_root(PathBuf::from(root)).await;
        }
        let answer = match command.as_str() {
            "slipway.branches" => {
                let a = parse_args(&command, &args)?;
                blocking(move || commands::branches(a)).await
            }
            "slipway.resolveSource" => {
                let a = parse_args(&command, &args)?;
                blocking(move || commands::resolve_source(a)).await
            }
            "slipway.createWorktree" => {
                let a = parse_args(&command, &args)?;
                let answer = blocking(move || commands::create_worktree(a)).await;
                self.state.poke();
                answer
            }
            "slipway.list" => {
                let a = parse_args(&command, &args)?;
                let state = self.state.clone();
                blocking(move || commands::list(a, |host| state.cache_blocking(host))).await
            }
            "slipway.close" => {
                let a = parse_args(&command, &args)?;
                let answer = blocking(move || commands::close(a)).await;
                self.state.poke();
                answer
            }
            "slipway.run" => self.start_run(parse_args(&command, &args)?, false).await,
            "slipway.handoff" => self.start_run(parse_args(&command, &args)?, true).await,
            "slipway.cancel" => self.cancel(parse_args(&command, &args)?).await,
            "slipway.reply" => self.reply(parse_args(&command, &args)?).await,
            "slipway.workspaces" => blocking(commands::workspaces).await,
            "slipway.diff" => {
                let a = parse_args(&command, &args)?;
                blocking(move || commands::diff(a)).await
            }
            "slipway.land" => {
                let a = parse_args(&command, &args)?;
                let answer = blocking(move || commands::land(a)).await;
                self.state.poke();
                answer
            }
            "slipway.discard" => {
                let a = parse_args(&command, &args)?;
                let answer = blocking(move || commands::discard(a)).await;
                self.state.poke();
                answer
            }
            "slipway.attemptGroups" => {
                let a = parse_args(&command, &args)?;
                blocking(move || commands::attempt_groups(a)).await
            }
            "slipway.attempts" => {
                let a = parse_args(&command, &args)?;
                blocking(move || commands::attempts(a)).await
            }
            "slipway.landAttempt" => {
                let a = parse_args(&command, &args)?;
                let answer = blocking(move || commands::land_attempt(a)).await;
                self.state.poke();
                answer
            }
            "slipway.runs" => {
                let a = parse_args(&command, &args)?;
                blocking(move || commands::runs(a)).await
            }
            "slipway.engines" => slipway_core::engines::status()
                .await
                .map(|engines| json!({ "engines": engines }))
                .map_err(|e| protocol::failure(&e)),
            "slipway.log" => self.log(parse_args(&command, &args)?).await,
            "slipway.trust" => {
                let a = parse_args(&command, &args)?;
                blocking(move || commands::trust(a)).await
            }
            "slipway.status" => status_command(&self.state, parse_args(&command, &args)?).await,
            "slipway.seen" => {
                let a: protocol::SeenArgs = parse_args(&command, &args)?;
                let held = self.state.seen(&a.run_ids).await;
                Ok(json!({ "runIds": a.run_ids, "held": held }))
            }
            other => Err(error(
                ErrorKind::UnknownCommand,
                format!(
                    "unknown command '{other}'; the server answers {}",
                    protocol::COMMANDS.join(", ")
                ),
                Value::Null,
            )),
        };
        if let Err(e) = &answer {
            tracing::info!(command, error = %e.message, "command failed");
        }
        answer.map(Some)
    }
}
