//! The CLI edge: translate arguments into library calls, and results and
//! errors into text for people or JSON for machines.

mod args;
mod ask;
mod demo;
mod error;
mod logs;
mod render;
mod workspace;

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use serde::Serialize;
use slipway_core::agent::AgentSpec;
use slipway_core::agent::prompt::PromptSource;
use slipway_core::git::policy::{self, SourcePolicy};
use slipway_core::git::{HostRepo, branches};
use slipway_core::run::{self, Hooks, RunEvent, RunRequest, RunStrategy, SandboxSpec, Timeouts};
use slipway_core::worktree::{self, CreateRequest, WorktreeTarget};

use args::{AgentArg, Cli, Command, RunArgs, SandboxArg, SourceArgs, StrategyArg, WorktreeCommand};
pub use error::CliError;

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let json = cli.json;
    match dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            report_error(&err, json);
            ExitCode::FAILURE
        }
    }
}

fn report_error(err: &CliError, json: bool) {
    if json {
        let doc = serde_json::json!({ "error": err });
        eprintln!("{doc}");
    } else {
        eprintln!("error: {}", err.message);
    }
}

/// Prints a JSON document on stdout, streamed rather than built in memory.
fn print_json<T: Serialize>(value: &T) {
    use std::io::Write;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    // Indented for a person at a terminal, compact for programs.
    let written = if std::io::stdout().is_terminal() {
        serde_json::to_writer_pretty(&mut out, value)
    } else {
        serde_json::to_writer(&mut out, value)
    }
    .map_err(std::io::Error::from)
    .and_then(|()| writeln!(out))
    .and_then(|()| out.flush());
    match written {
        // A reader that stopped early (`| head`) is not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => eprintln!("error: cannot write the result: {e}"),
        Ok(()) => {}
    }
}

fn open(repo: &Option<PathBuf>) -> Result<HostRepo, CliError> {
    let path = match repo {
        Some(p) => p.clone(),
        None => std::env::current_dir()?,
    };
    let host = HostRepo::open(&path)?;
    // What a crashed slipway left half done is finished or undone first.
    for note in slipway_core::recovery::recover(&host) {
        eprintln!("slipway: {note}");
    }
    Ok(host)
}

fn source_policy(args: &SourceArgs, default: SourcePolicy) -> Result<SourcePolicy, CliError> {
    match (&args.source, &args.reference) {
        (None, None) => Ok(default),
        (None, Some(r)) => Ok(SourcePolicy::Named {
            reference: r.clone(),
        }),
        (Some(s), r) if r.is_none() => Ok(s.parse::<SourcePolicy>()?),
        (Some(s), r) => Ok(SourcePolicy::from_parts(s, r.as_deref())?),
    }
}

fn dispatch(cli: Cli) -> Result<ExitCode, CliError> {
    match cli.command {
        Command::Branches => {
            let host = open(&cli.repo)?;
            let list = branches::list_branches(host.git())?;
            if cli.json {
                #[derive(Serialize)]
                struct Branches<'a> {
                    branches: &'a [branches::BranchInfo],
                }
                print_json(&Branches { branches: &list });
            } else {
                print!("{}", render::branches(&list));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Resolve(args) => {
            let host = open(&cli.repo)?;
            let policy =
                ask::resolve_ask(source_policy(&args, SourcePolicy::HostHead)?, host.root())?;
            let resolved = policy::resolve(host.git(), &policy)?;
            if cli.json {
                print_json(&resolved);
            } else {
                println!("{} -> {}", resolved.label, resolved.commit);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Worktree(WorktreeCommand::Create(args)) => {
            let host = open(&cli.repo)?;
            let target = match (args.branch, args.merge_to_head) {
                (Some(name), false) => WorktreeTarget::Branch {
                    name,
                    base: args.base,
                },
                _ => WorktreeTarget::MergeToHead,
            };
            let request = CreateRequest {
                target,
                source: ask::resolve_ask(
                    source_policy(&args.source, SourcePolicy::HostHead)?,
                    host.root(),
                )?,
                copy: args.copy,
            };
            let message = match &request.target {
                WorktreeTarget::Branch { name, .. } => format!("creating a worktree for '{name}'"),
                WorktreeTarget::MergeToHead => "creating a merge-to-head worktree".to_owned(),
            };
            let message = if request.copy.is_empty() {
                message
            } else {
                format!("{message} and copying {}", request.copy.join(", "))
            };
            let created = with_spinner(cli.json, message, || worktree::create(&host, &request))?;
            if cli.json {
                print_json(&created);
            } else {
                print!("{}", render::created(&created));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Worktree(WorktreeCommand::List) => {
            let host = open(&cli.repo)?;
            let list = worktree::list(&host)?;
            if cli.json {
                print_json(&serde_json::json!({ "worktrees": list }));
            } else {
                print!("{}", render::worktrees(&list));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Worktree(WorktreeCommand::Close(args)) => {
            let host = open(&cli.repo)?;
            let outcome = with_spinner(
                cli.json,
                format!("closing worktree '{}'", args.worktree),
                || worktree::close(&host, &args.worktree, args.force),
            )?;
            if cli.json {
                print_json(&outcome);
            } else {
                print!("{}", render::closed(&outcome));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Run(args) => {
            let plan = match &args.workspace {
                Some(name) => {
                    let mut plan = workspace::plan_for_run(name)?;
                    ask::resolve_workspace(&mut plan)?;
                    Some(plan)
                }
                None => None,
            };
            let mut args = args;
            if let Some(name) = args.workspace.clone() {
                apply_workspace_defaults(&mut args, &name)?;
            }
            // A workspace run keeps its records in the repository of the mount
            // covering the workdir (else the first isolated mount's).
            let repo_path = match (&cli.repo, &plan) {
                (None, Some(plan)) => plan
                    .mounts
                    .iter()
                    .filter(|m| plan.workdir.starts_with(&m.dst) && HostRepo::open(&m.src).is_ok())
                    .max_by_key(|m| m.dst.components().count())
                    .or_else(|| {
                        plan.mounts.iter().find(|m| {
                            m.isolation != slipway_core::run::workspace::Isolation::Shared
                        })
                    })
                    .map(|m| m.src.clone()),
                _ => cli.repo.clone(),
            };
            let host = open(&repo_path)?;
            let request = match &args.request_file {
                Some(file) => {
                    let bytes = std::fs::read(file)?;
                    serde_json::from_slice(&bytes).map_err(|e| {
                        CliError::new("invalidParams", format!("{}: {e}", file.display()))
                    })?
                }
                None => run_request(*args)?,
            };
            let source = ask::resolve_ask(request.source.clone(), host.root())?;
            let request = RunRequest {
                workspace: plan.or(request.workspace),
                source,
                ..request
            };
            run_cli(&host, request, cli.json)
        }
        Command::Lsp(args) => {
            crate::lsp::serve_stdio(args.log_file.as_deref())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo(args) => demo::run_demo(args.dir, cli.json),
        Command::Logs(args) => {
            let host = open(&cli.repo)?;
            logs::print_log(&host, args.run.as_deref(), args.follow)
        }
        Command::Image(args::ImageCommand::Build(args)) => image_build(args, cli.json),
        Command::Sandbox(command) => {
            let host = open(&cli.repo)?;
            sandbox_command(&host, command, cli.json)
        }
        Command::Workspace(command) => workspace::dispatch(command, cli.json),
        Command::Runs => {
            let host = open(&cli.repo)?;
            let dir = host.slipway_dir();
            let mut records = slipway_core::run::record::RunRecord::load_all(&dir);
            for r in &mut records {
                r.settle_if_dead(&dir);
            }
            if cli.json {
                print_json(&serde_json::json!({ "runs": records }));
            } else {
                print!("{}", render::runs(&records));
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn run_request(args: RunArgs) -> Result<RunRequest, CliError> {
    let strategy = match (args.strategy, &args.branch) {
        (Some(StrategyArg::Head), None) => RunStrategy::Head,
        (Some(StrategyArg::MergeToHead), None) | (None, None) => RunStrategy::MergeToHead,
        (Some(StrategyArg::Branch) | None, Some(name)) => RunStrategy::Branch {
            name: name.clone(),
            base: args.base.clone(),
        },
        (Some(StrategyArg::Branch), None) => {
            return Err(CliError::new(
                "invalidParams",
                "the branch strategy needs a branch: add --branch NAME",
            ));
        }
        (Some(other), Some(_)) => {
            return Err(CliError::new(
                "invalidParams",
                format!(
                    "--branch only goes with --strategy branch, not {}",
                    if other == StrategyArg::Head {
                        "head"
                    } else {
                        "merge-to-head"
                    }
                ),
            ));
        }
    };
    if args.base.is_some() && !matches!(strategy, RunStrategy::Branch { .. }) {
        return Err(CliError::new(
            "invalidParams",
            "--base only goes with --branch",
        ));
    }
    if strategy == RunStrategy::Head
        && args.worktree.is_none()
        && (args.source.source.is_some() || !args.copy.is_empty())
    {
        return Err(CliError::new(
            "invalidParams",
            "the head strategy runs in the host checkout: --source and --copy do not apply",
        ));
    }
    let sandbox = match (args.sandbox.unwrap_or(SandboxArg::None), args.image.clone()) {
        (SandboxArg::None, None) => SandboxSpec::None,
        (SandboxArg::None, Some(_)) => {
            return Err(CliError::new(
                "invalidParams",
                "--image only applies to docker sandboxes; add --sandbox docker",
            ));
        }
        (SandboxArg::Docker, Some(image)) => SandboxSpec::Docker {
            image,
            network: args.network.clone(),
        },
        (SandboxArg::Docker, None) => {
            return Err(CliError::new(
                "invalidParams",
                "the docker sandbox needs an image: add --image IMAGE (build one with `docker build`; nothing is pulled)",
            ));
        }
        (SandboxArg::DockerIsolated, Some(image)) => SandboxSpec::DockerIsolated {
            image,
            network: args.network.clone(),
        },
        (SandboxArg::DockerIsolated, None) => {
            return Err(CliError::new(
                "invalidParams",
                "the docker-isolated sandbox needs an image: add --image IMAGE (nothing is pulled)",
            ));
        }
    };
    let agent = match args.agent.unwrap_or(AgentArg::Command) {
        AgentArg::Command => {
            if args.model.is_some() || args.effort.is_some() || args.resume.is_some() {
                return Err(CliError::new(
                    "invalidParams",
                    "--model, --effort and --resume do not apply to the command agent",
                ));
            }
            AgentSpec::Command {
                command: args.program.clone(),
            }
        }
        other => {
            let name = other
                .to_possible_value()
                .map(|v| v.get_name().to_owned())
                .unwrap_or_default();
            let options = slipway_core::agent::AgentOptions {
                model: args.model.clone(),
                effort: args.effort.clone(),
                resume: args
                    .resume
                    .clone()
                    .map(|session_id| slipway_core::agent::ResumeSpec {
                        session_id,
                        fork: args.fork,
                    }),
                extra_args: args.program.clone(),
                ..Default::default()
            };
            let spec = AgentSpec::named(&name, options)
                .map_err(|e| CliError::new(e.kind(), e.to_string()))?;
            spec.build()
                .map_err(|e| CliError::new(e.kind(), e.to_string()))?;
            spec
        }
    };
    let prompt = match (args.prompt, args.prompt_file) {
        (Some(text), None) => PromptSource::Inline(text),
        (None, Some(file)) => PromptSource::File(file),
        (None, None) => PromptSource::Inline(String::new()),
        (Some(_), Some(_)) => {
            return Err(CliError::new(
                "invalidParams",
                "give --prompt or --prompt-file, not both",
            ));
        }
    };
    let mut prompt_args = BTreeMap::new();
    for pair in &args.args {
        let Some((k, v)) = pair.split_once('=') else {
            return Err(CliError::new(
                "invalidParams",
                format!("--arg {pair}: expected KEY=VALUE"),
            ));
        };
        prompt_args.insert(k.to_owned(), v.to_owned());
    }
    Ok(RunRequest {
        run_id: args.run_id,
        strategy,
        worktree: args.worktree,
        source: source_policy(&args.source, SourcePolicy::HostHead)?,
        copy: args.copy,
        agent,
        sandbox,
        sandbox_id: args.in_sandbox.clone(),
        workspace: None,
        prompt,
        prompt_args,
        max_iterations: args.max_iterations,
        completion_signals: args.completion_signals,
        timeouts: Timeouts {
            idle: Duration::from_secs(args.idle_timeout),
            hook: Duration::from_secs(args.hook_timeout),
            completion_grace: Duration::from_secs(args.completion_grace),
            merge: Duration::from_secs(args.merge_timeout),
            ..Timeouts::default()
        },
        hooks: Hooks {
            host_on_worktree_ready: args.on_worktree_ready,
            sandbox_on_sandbox_ready: args.on_sandbox_ready,
        },
    })
}

/// A spinner on stderr when a person is watching it (not `--json`, stderr a
/// terminal); `None` otherwise.
fn spinner(json: bool, message: String) -> Option<indicatif::ProgressBar> {
    (!json && std::io::stderr().is_terminal()).then(|| {
        let pb = indicatif::ProgressBar::new_spinner();
        pb.set_message(message);
        pb.enable_steady_tick(Duration::from_millis(120));
        pb
    })
}

/// Runs `work` under a spinner saying `message` (see [`spinner`]).
fn with_spinner<T>(json: bool, message: String, work: impl FnOnce() -> T) -> T {
    let spinner = spinner(json, message);
    let out = work();
    if let Some(pb) = spinner {
        pb.finish_and_clear();
    }
    out
}

/// Runs with a spinner on a terminal, agent output on stderr for people, and
/// cancellation on Ctrl-C or SIGTERM.
pub fn run_cli(host: &HostRepo, request: RunRequest, json: bool) -> Result<ExitCode, CliError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let control = run::RunControl::new();
    let spinner = spinner(json, String::new());
    let sink_spinner = spinner.clone();
    let events: run::EventSink = Arc::new(move |event: &RunEvent| {
        if json {
            return;
        }
        match (event, &sink_spinner) {
            (RunEvent::Phase { phase, message }, Some(pb)) => {
                pb.set_message(format!("{phase}: {message}"))
            }
            (RunEvent::Iteration { iteration, of }, Some(pb)) => {
                pb.set_message(format!("iteration {iteration}/{of}"))
            }
            (RunEvent::Output { line }, Some(pb)) => pb.println(format!("  │ {line}")),
            (RunEvent::Output { line }, None) => eprintln!("  │ {line}"),
            (RunEvent::Phase { phase, message }, None) => eprintln!("slipway: {phase}: {message}"),
            (RunEvent::Iteration { .. }, None) => {}
        }
    });
    let outcome = runtime.block_on(async {
        let watcher = control.clone();
        tokio::spawn(async move {
            let mut term =
                match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                    Ok(s) => s,
                    Err(_) => return,
                };
            // The first request stops the agent; a second one also stops
            // waiting for an isolated sandbox's work to come back.
            loop {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {},
                    _ = term.recv() => {},
                }
                watcher.stop();
            }
        });
        run::run(host, request, control.clone(), events).await
    });
    if let Some(pb) = spinner {
        pb.finish_and_clear();
    }
    match outcome {
        Ok(result) => {
            if json {
                print_json(&result);
            } else {
                print!("{}", render::run_result(&result));
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(failure) => {
            if json {
                print_json(&failure.result);
            } else {
                print!("{}", render::run_result(&failure.result));
            }
            let err = CliError::new(failure.error.kind(), failure.error.to_string());
            let data = serde_json::json!({
                "runId": failure.result.run_id,
                "status": failure.result.status,
                "preservedWorktreePath": failure.result.preserved_worktree_path,
                "keptBranch": failure.result.kept_branch,
            });
            report_error(&err.with_data(data), json);
            Ok(ExitCode::FAILURE)
        }
    }
}

fn image_build(args: args::ImageBuildArgs, json: bool) -> Result<ExitCode, CliError> {
    let mut build_args = Vec::new();
    for pair in &args.build_args {
        let Some((k, v)) = pair.split_once('=') else {
            return Err(CliError::new(
                "invalidParams",
                format!("--build-arg {pair}: expected KEY=VALUE"),
            ));
        };
        build_args.push((k.to_owned(), v.to_owned()));
    }
    let spec = slipway_core::sandbox::image::ImageBuild {
        context: match args.context {
            Some(c) => c,
            None => std::env::current_dir()?,
        },
        dockerfile: args.file,
        tag: args.tag.clone(),
        build_args,
        network: args.network,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let id = runtime
        .block_on(slipway_core::sandbox::image::build_image(&spec, |line| {
            if !json {
                eprintln!("  │ {line}");
            }
        }))
        .map_err(|e| CliError::new("imageBuildFailed", e.to_string()))?;
    if json {
        print_json(&serde_json::json!({ "tag": args.tag, "id": id }));
    } else {
        println!("Built {} ({id})", args.tag);
    }
    Ok(ExitCode::SUCCESS)
}

fn sandbox_command(
    host: &HostRepo,
    command: args::SandboxCommand,
    json: bool,
) -> Result<ExitCode, CliError> {
    use slipway_core::run::sandboxes;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let err = |e: sandboxes::SandboxesError| CliError::new(e.kind(), e.to_string());
    match command {
        args::SandboxCommand::Create(a) => {
            let spec = match (a.sandbox, a.image) {
                (SandboxArg::Docker, image) => SandboxSpec::Docker {
                    image,
                    network: a.network,
                },
                (SandboxArg::DockerIsolated, image) => SandboxSpec::DockerIsolated {
                    image,
                    network: a.network,
                },
                (SandboxArg::None, _) => {
                    return Err(CliError::new(
                        "invalidParams",
                        "only docker and docker-isolated sandboxes are long-lived",
                    ));
                }
            };
            let record = runtime
                .block_on(sandboxes::create(host, &a.worktree, &spec))
                .map_err(err)?;
            if json {
                print_json(&record);
            } else {
                println!(
                    "Created sandbox {} (container {}) for {} on {}",
                    record.id,
                    &record.container_id[..record.container_id.len().min(12)],
                    record.worktree_path.display(),
                    record.branch
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        args::SandboxCommand::List => {
            let list = sandboxes::SandboxRecord::list(host);
            if json {
                print_json(&serde_json::json!({ "sandboxes": list }));
            } else if list.is_empty() {
                println!("No sandboxes.");
            } else {
                for r in list {
                    println!("{}  {}  {}", r.id, r.branch, r.worktree_path.display());
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        args::SandboxCommand::Exec(a) => {
            if a.command.is_empty() {
                return Err(CliError::new(
                    "invalidParams",
                    "give the command after `--`",
                ));
            }
            let (code, output) = runtime
                .block_on(sandboxes::exec(host, &a.id, a.command))
                .map_err(err)?;
            if json {
                print_json(&serde_json::json!({ "exitCode": code, "output": output }));
            } else {
                print!("{output}");
            }
            Ok(if code == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        args::SandboxCommand::Close(a) => {
            let record = runtime
                .block_on(sandboxes::close(host, &a.id))
                .map_err(err)?;
            if json {
                print_json(
                    &serde_json::json!({ "closed": record.id, "worktreePath": record.worktree_path }),
                );
            } else {
                println!(
                    "Closed sandbox {}; the worktree {} stays (close it with `slipway worktree close`)",
                    record.id,
                    record.worktree_path.display()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Fills what the command line left unset from the workspace's run defaults
/// (the command line wins).
fn apply_workspace_defaults(args: &mut RunArgs, name: &str) -> Result<(), CliError> {
    use slipway_core::workspace::{SandboxKind, Workspace};
    let ws = Workspace::load_named(name).map_err(|e| CliError::new(e.kind(), e.to_string()))?;
    let defaults = &ws.defaults;
    if args.sandbox.is_none() {
        args.sandbox = defaults.sandbox.map(|kind| match kind {
            SandboxKind::None => SandboxArg::None,
            SandboxKind::Docker => SandboxArg::Docker,
            SandboxKind::DockerIsolated => SandboxArg::DockerIsolated,
        });
    }
    if args.image.is_none() && args.sandbox.is_some_and(|s| s != SandboxArg::None) {
        args.image = defaults.image.clone();
    }
    if args.agent.is_none()
        && let Some(agent) = &defaults.agent
    {
        args.agent = Some(AgentArg::from_str(agent, true).map_err(|_| {
            CliError::new(
                "invalidParams",
                format!("workspace {name}: unknown agent '{agent}'"),
            )
        })?);
    }
    if args.on_worktree_ready.is_empty() {
        args.on_worktree_ready = defaults.hooks.host_on_worktree_ready.clone();
    }
    if args.on_sandbox_ready.is_empty() {
        args.on_sandbox_ready = defaults.hooks.sandbox_on_sandbox_ready.clone();
    }
    Ok(())
}
