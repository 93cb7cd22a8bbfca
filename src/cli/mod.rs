//! The CLI edge: translate arguments into library calls, and results and
//! errors into text for people or JSON for machines.

// What is printed for a person goes through `say`, which makes it inert.
#![deny(clippy::print_stdout, clippy::print_stderr)]

#[macro_use]
mod say;
mod args;
mod ask;
mod attempts;
mod demo;
mod error;
mod logs;
mod next;
mod render;
mod running;
mod sandbox;
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
use slipway_core::run::{self, Hooks, Limits, RunEvent, RunRequest, SandboxSpec};
use slipway_core::workspace::{SandboxKind, StrategyKind};
use slipway_core::worktree::{self, WorktreeTarget};

use args::{Cli, Command, RunArgs, SandboxArg, SourceArgs, StrategyArg, WorktreeCommand};
pub use error::CliError;
use running::{plan_interactively, run_cli, run_input};
use sandbox::{image_build, sandbox_command};

/// Entry point of the binary.
pub fn main() -> ExitCode {
    // Deleting a closed worktree's files goes on in a detached `slipway
    // empty-trash` (without our own path, the core deletes them in place).
    if let Ok(exe) = std::env::current_exe() {
        slipway_core::worktree::trash::set_emptier(exe, vec!["empty-trash".into()]);
    }
    let cli = Cli::parse();
    let json = cli.json;
    match dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            report_error(&err, json);
            next::error_code(err.kind)
        }
    }
}

fn report_error(err: &CliError, json: bool) {
    if json {
        let doc = serde_json::json!({ "error": err });
        stderrln!("{}", say::json_for_terminal(&doc.to_string()));
    } else {
        stderrln!("error: {}", err.message);
        stderr!("{}", next::lines(&err.actions));
    }
}

/// The exit code of a close or discard outcome: a kept worktree did nothing.
fn outcome_code(outcome: &worktree::CloseOutcome, nothing: u8) -> ExitCode {
    match outcome {
        worktree::CloseOutcome::Removed { .. } => ExitCode::SUCCESS,
        worktree::CloseOutcome::Preserved { .. } => ExitCode::from(nothing),
    }
}

/// Prints a JSON document on stdout, streamed rather than built in memory.
fn print_json<T: Serialize>(value: &T) {
    use std::io::Write;
    let stdout = std::io::stdout();
    // Indented and made inert for a person at a terminal, compact and
    // streamed for programs.
    if stdout.is_terminal() {
        match serde_json::to_string_pretty(value) {
            Ok(doc) => stdoutln!("{}", say::json_for_terminal(&doc)),
            Err(e) => stderrln!("error: cannot write the result: {e}"),
        }
        return;
    }
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let written = serde_json::to_writer(&mut out, value)
        .map_err(std::io::Error::from)
        .and_then(|()| writeln!(out))
        .and_then(|()| out.flush());
    match written {
        // A reader that stopped early (`| head`) is not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => stderrln!("error: cannot write the result: {e}"),
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
        stderrln!("slipway: {note}");
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
        Command::Branches(args) => {
            let host = open(&cli.repo)?;
            let mut list = branches::list_branches(host.git())?;
            if args.ahead_behind {
                branches::add_ahead_behind(host.git(), &mut list);
            }
            if cli.json {
                #[derive(Serialize)]
                struct Branches<'a> {
                    branches: &'a [branches::BranchInfo],
                }
                print_json(&Branches { branches: &list });
            } else {
                stdout!("{}", render::branches(&list));
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
                stdoutln!("{} -> {}", resolved.label, resolved.commit);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Worktree(WorktreeCommand::Create(args)) => {
            let host = open(&cli.repo)?;
            // Unless the command line names one, the defaults' source applies.
            let given = match (&args.source.source, &args.source.reference) {
                (None, None) => None,
                _ => Some(source_policy(&args.source, SourcePolicy::HostHead)?),
            };
            let mut request = plan_create(
                &host,
                CreateInput {
                    strategy: args.merge_to_head.then_some(StrategyKind::MergeToHead),
                    branch: args.branch,
                    base: args.base,
                    source: given,
                    copy: args.copy,
                },
            )?;
            request.source = ask::resolve_ask(request.source, host.root())?;
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
                stdout!("{}", render::created(&created));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::EmptyTrash { slipway_dir } => {
            for problem in slipway_core::worktree::trash::empty(&slipway_dir) {
                stderrln!("slipway: {problem}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Worktree(WorktreeCommand::List) => {
            let host = open(&cli.repo)?;
            let list = worktree::list(&host)?;
            let kept = slipway_core::review::kept(&host);
            if cli.json {
                print_json(&serde_json::json!({ "worktrees": list, "keptBranches": kept }));
            } else {
                stdout!("{}", render::worktrees(&list, &kept));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Worktree(WorktreeCommand::Close(args)) => {
            let host = open(&cli.repo)?;
            if args.dry_run {
                let preview = slipway_core::review::risk::preview_close(&host, &args.worktree)
                    .map_err(|e| CliError::from_failure(&e))?;
                print_preview(&preview, "close", cli.json);
                return Ok(ExitCode::SUCCESS);
            }
            let outcome = with_spinner(
                cli.json,
                format!("closing worktree '{}'", args.worktree),
                || worktree::close(&host, &args.worktree, args.force),
            )?;
            let code = outcome_code(&outcome, next::PRESERVED);
            let answer = slipway_core::actions::WithActions {
                actions: outcome.actions(),
                answer: outcome,
            };
            if cli.json {
                print_json(&answer);
            } else {
                stdout!("{}", render::closed(&answer.answer, &answer.actions));
            }
            Ok(code)
        }
        Command::Run(args) => {
            if let Some(file) = &args.request_file {
                // A request the sidecar planned already (a detached run).
                let host = open(&cli.repo)?;
                let bytes = std::fs::read(file)?;
                let request: RunRequest = serde_json::from_slice(&bytes).map_err(|e| {
                    CliError::new(ErrorKind::InvalidParams, format!("{}: {e}", file.display()))
                })?;
                if let Some(group) = &args.group {
                    return attempts::run_detached_group(&host, request, group, cli.json);
                }
                return run_cli(&host, request, cli.json, true);
            }
            let dry_run = args.dry_run;
            let agents = args.agent.clone();
            if !dry_run && (args.attempts.is_some() || agents.len() > 1) {
                let count = args.attempts.unwrap_or(1) as usize;
                let input = run_input(*args, cli.repo.clone())?;
                return attempts::run_group_cli(input, &agents, count, cli.json);
            }
            let plan = plan_interactively(run_input(*args, cli.repo.clone())?)?;
            if dry_run {
                print_json(&plan);
                return Ok(ExitCode::SUCCESS);
            }
            let host = open(&Some(plan.repository.clone()))?;
            run_cli(&host, plan.request, cli.json, false)
        }
        Command::Attempts(args) => {
            let host = open(&cli.repo)?;
            attempts::attempts_command(&host, args, cli.json)
        }
        Command::Lsp(args) => {
            crate::lsp::serve_stdio(args.log_file.as_deref())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo(args) => demo::run_demo(args.dir, cli.json),
        Command::Logs(args) => {
            let host = open(&cli.repo)?;
            logs::print_log(&host, args.run.as_deref(), args.follow, cli.json)
        }
        Command::Image(args::ImageCommand::Build(args)) => image_build(args, cli.json),
        Command::Engines => sandbox::engines(cli.json),
        Command::Sandbox(command) => {
            let host = open(&cli.repo)?;
            sandbox_command(&host, command, cli.json)
        }
        Command::Workspace(command) => workspace::dispatch(command, cli.json),
        Command::Trust(args) => {
            use slipway_core::trust::{TrustRequest, approve_here};
            let requests: Vec<TrustRequest> = if args.files.is_empty() {
                vec![TrustRequest::repository(open(&cli.repo)?.root())]
            } else {
                args.files
                    .into_iter()
                    .map(|path| TrustRequest {
                        path,
                        ..TrustRequest::default()
                    })
                    .collect()
            };
            let trusted =
                approve_here(&requests, args.dry_run).map_err(|e| CliError::from_failure(&e))?;
            if cli.json {
                print_json(&serde_json::json!({ "trusted": trusted, "dryRun": args.dry_run }));
            } else {
                stdout!("{}", render::trusted(&trusted, args.dry_run));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Reply(args) => {
            let host = open(&cli.repo)?;
            let run_id = slipway_core::ids::RunId::parse(&args.run)
                .map_err(|e| CliError::from_failure(&e))?;
            let request = run::reply::request(&host, &run_id, &args.answer)
                .map_err(|e| CliError::from_failure(&e))?;
            run_cli(&host, request, cli.json, false)
        }
        Command::Runs => {
            let host = open(&cli.repo)?;
            let runs = run::listing::runs(&host);
            if cli.json {
                print_json(&serde_json::json!({ "runs": runs }));
            } else {
                stdout!("{}", render::runs(&runs));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Land(args) => {
            use slipway_core::review::land;
            let host = open(&cli.repo)?;
            let request = land::LandRequest {
                worktree: &args.worktree,
                how: args.how.into(),
                into: args.into.as_deref(),
                message: args.message.as_deref(),
                timeout: Duration::from_secs(args.timeout),
            };
            let landed = with_spinner(cli.json, format!("landing '{}'", args.worktree), || {
                land::land(&host, &request)
            })
            .map_err(|e| CliError::from_failure(&e))?;
            if cli.json {
                print_json(&landed);
            } else {
                stdout!("{}", render::landed(&landed));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Discard(args) => {
            use slipway_core::review::discard;
            let host = open(&cli.repo)?;
            if args.dry_run {
                let preview = discard::preview(&host, &args.worktree)
                    .map_err(|e| CliError::from_failure(&e))?;
                print_preview(&preview, "discard", cli.json);
                return Ok(ExitCode::SUCCESS);
            }
            let discarded = with_spinner(
                cli.json,
                format!("discarding worktree '{}'", args.worktree),
                || discard::discard(&host, &args.worktree, args.force),
            )
            .map_err(|e| CliError::from_failure(&e))?;
            if cli.json {
                print_json(&discarded);
            } else {
                stdout!("{}", render::closed(&discarded.answer, &discarded.actions));
            }
            Ok(outcome_code(&discarded.answer, next::NOT_DISCARDED))
        }
        Command::Diff(args) => {
            use slipway_core::review::diff;
            let host = open(&cli.repo)?;
            match &args.path {
                Some(path) => {
                    let texts =
                        diff::file_texts(&host, &args.worktree, path, args.against.as_deref())
                            .map_err(|e| CliError::from_failure(&e))?;
                    if cli.json {
                        print_json(&texts);
                    } else {
                        stdout!("{}", diff::unified(&texts)?);
                    }
                }
                None => {
                    let found = diff::diff(&host, &args.worktree, args.against.as_deref())
                        .map_err(|e| CliError::from_failure(&e))?;
                    if cli.json {
                        print_json(&found);
                    } else {
                        stdout!("{}", render::diff(&found));
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// A close or discard dry run: JSON, or what would be lost for people.
fn print_preview(preview: &slipway_core::review::risk::Preview, what: &str, json: bool) {
    if json {
        print_json(preview);
    } else {
        stdout!("{}", render::preview(preview, what));
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
