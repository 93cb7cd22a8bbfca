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
use slipway_core::error::ErrorKind;
use slipway_core::git::policy::{self, SourcePolicy};
use slipway_core::git::{HostRepo, branches};
use slipway_core::plan::worktree::{CreateInput, plan_create};
use slipway_core::plan::{
    self, AgentInput, PlanError, RunInput, RunPlan, SandboxInput, TimeoutInput, WorkspaceInput,
};
use slipway_core::run::{self, Hooks, RunEvent, RunRequest, SandboxSpec};
use slipway_core::workspace::{SandboxKind, StrategyKind};
use slipway_core::worktree::{self, WorktreeTarget};

use args::{Cli, Command, RunArgs, SandboxArg, SourceArgs, StrategyArg, WorktreeCommand};
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
    Ok(HostRepo::open(&path)?)
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
            let resolved = policy::resolve(host.git(), &policy)
                .map_err(|e| CliError::from(PlanError::source(&host, e)))?;
            if cli.json {
                print_json(&resolved);
            } else {
                println!("{} -> {}", resolved.label, resolved.commit);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Worktree(WorktreeCommand::Create(args)) => {
            let host = open(&cli.repo)?;
            let source = ask::resolve_ask(
                source_policy(&args.source, SourcePolicy::HostHead)?,
                host.root(),
            )?;
            let request = plan_create(
                &host,
                CreateInput {
                    strategy: args.merge_to_head.then_some(StrategyKind::MergeToHead),
                    branch: args.branch,
                    base: args.base,
                    source: Some(source),
                    copy: args.copy,
                },
            )?;
            let message = match &request.target {
                WorktreeTarget::Branch { name, .. } => format!("creating a worktree for '{name}'"),
                WorktreeTarget::MergeToHead => "creating a merge-to-head worktree".to_owned(),
            };
            let message = if request.copy.is_empty() {
                message
            } else {
                format!("{message} and copying {}", request.copy.join(", "))
            };
            let created = with_spinner(cli.json, message, || worktree::create(&host, &request))
                .map_err(|e| match e {
                    worktree::CreateError::Source(inner) => {
                        CliError::from(PlanError::source(&host, inner))
                    }
                    other => CliError::from(other),
                })?;
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
            if let Some(file) = &args.request_file {
                // A request the sidecar planned already (a detached run).
                let host = open(&cli.repo)?;
                let bytes = std::fs::read(file)?;
                let request: RunRequest = serde_json::from_slice(&bytes).map_err(|e| {
                    CliError::new(ErrorKind::InvalidParams, format!("{}: {e}", file.display()))
                })?;
                return run_cli(&host, request, cli.json);
            }
            let dry_run = args.dry_run;
            let plan = plan_interactively(run_input(*args, cli.repo.clone())?)?;
            if dry_run {
                print_json(&plan);
                return Ok(ExitCode::SUCCESS);
            }
            let host = open(&Some(plan.repository.clone()))?;
            run_cli(&host, plan.request, cli.json)
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

/// The command line's run arguments as the plan takes them: spelling only,
/// every decision is the plan's.
fn run_input(args: RunArgs, repository: Option<PathBuf>) -> Result<RunInput, CliError> {
    let mut prompt_args = BTreeMap::new();
    for pair in &args.args {
        let Some((k, v)) = pair.split_once('=') else {
            return Err(CliError::new(
                ErrorKind::InvalidParams,
                format!("--arg {pair}: expected KEY=VALUE"),
            ));
        };
        prompt_args.insert(k.to_owned(), v.to_owned());
    }
    let source = match (&args.source.source, &args.source.reference) {
        (None, None) => None,
        _ => Some(source_policy(&args.source, SourcePolicy::HostHead)?),
    };
    Ok(RunInput {
        run_id: args.run_id,
        repository,
        strategy: args.strategy.map(|s| match s {
            StrategyArg::Head => StrategyKind::Head,
            StrategyArg::MergeToHead => StrategyKind::MergeToHead,
            StrategyArg::Branch => StrategyKind::Branch,
        }),
        branch: args.branch,
        base: args.base,
        worktree: args.worktree,
        sandbox_id: args.in_sandbox,
        source,
        copy: args.copy,
        agent: AgentInput::Named {
            name: args
                .agent
                .and_then(|a| a.to_possible_value())
                .map(|v| v.get_name().to_owned()),
            options: slipway_core::agent::AgentOptions {
                model: args.model,
                effort: args.effort,
                resume: args
                    .resume
                    .map(|session_id| slipway_core::agent::ResumeSpec {
                        session_id,
                        fork: args.fork,
                    }),
                ..Default::default()
            },
            program: args.program,
        },
        sandbox: SandboxInput {
            kind: args.sandbox.map(|s| match s {
                SandboxArg::None => SandboxKind::None,
                SandboxArg::Docker => SandboxKind::Docker,
                SandboxArg::DockerIsolated => SandboxKind::DockerIsolated,
            }),
            image: args.image,
            network: args.network,
        },
        workspace: args.workspace.map(WorkspaceInput::Name),
        sources: BTreeMap::new(),
        prompt: args.prompt,
        prompt_file: args.prompt_file,
        args: prompt_args,
        max_iterations: args.max_iterations,
        completion_signals: args.completion_signals,
        timeouts: TimeoutInput {
            idle_secs: args.idle_timeout,
            hook_secs: args.hook_timeout,
            completion_grace_secs: args.completion_grace,
            merge_secs: args.merge_timeout,
        },
        hooks: (!args.on_worktree_ready.is_empty() || !args.on_sandbox_ready.is_empty()).then_some(
            Hooks {
                host_on_worktree_ready: args.on_worktree_ready,
                sandbox_on_sandbox_ready: args.on_sandbox_ready,
            },
        ),
        handoff: false,
    })
}

/// Plans a run; an `ask` source is answered at the terminal when a person is
/// there (then planned again with the answer), else it is the error.
fn plan_interactively(mut input: RunInput) -> Result<RunPlan, CliError> {
    let cwd = std::env::current_dir()?;
    loop {
        match plan::plan_run(input.clone(), &cwd) {
            Ok(plan) => return Ok(plan),
            Err(PlanError::Source {
                error: policy::SourceError::SourceBranchRequired { choices },
                ..
            }) if ask::interactive() => {
                input.source = Some(ask::choose("the new worktree", &choices)?);
            }
            Err(PlanError::SourcesRequired { mounts }) if ask::interactive() => {
                for (dst, entries) in mounts {
                    let choices: Vec<String> = entries.into_iter().map(|b| b.name).collect();
                    let answer = ask::choose(&format!("the mount {}", dst.display()), &choices)?;
                    input.sources.insert(dst.display().to_string(), answer);
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
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
                ErrorKind::InvalidParams,
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
        .map_err(|e| CliError::new(ErrorKind::ImageBuildFailed, e.to_string()))?;
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
                        ErrorKind::InvalidParams,
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
                    ErrorKind::InvalidParams,
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
