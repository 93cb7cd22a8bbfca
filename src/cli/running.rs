//! `slipway run`: the arguments as the core's plan takes them, the `ask`
//! answered at a terminal, and the run with a spinner and Ctrl-C.

use super::*;

/// The command line's run arguments as the plan takes them: spelling only,
/// every decision is the plan's.
pub(super) fn run_input(args: RunArgs, repository: Option<PathBuf>) -> Result<RunInput, CliError> {
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
    let run_id = args
        .run_id
        .as_deref()
        .map(slipway_core::ids::RunId::parse)
        .transpose()
        .map_err(|e| CliError::from_failure(&e))?;
    Ok(RunInput {
        run_id,
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
                .first()
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
            limits: Limits {
                memory_bytes: args.memory,
                pids: args.pids_limit,
            },
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
        budgets: slipway_core::run::Budgets {
            max_tokens: args.max_tokens,
            max_cost_usd: args.max_cost,
            max_duration_secs: args.max_duration,
        },
        hooks: (!args.on_worktree_ready.is_empty() || !args.on_sandbox_ready.is_empty()).then_some(
            Hooks {
                host_on_worktree_ready: args.on_worktree_ready,
                sandbox_on_sandbox_ready: args.on_sandbox_ready,
            },
        ),
        check: args.check,
        handoff: false,
        engine: args.engine,
    })
}

/// Plans a run; an `ask` source is answered at the terminal when a person is
/// there (then planned again with the answer), else it is the error.
pub(super) fn plan_interactively(mut input: RunInput) -> Result<RunPlan, CliError> {
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

/// Runs with a spinner on a terminal, agent output on stderr for people, and
/// cancellation on Ctrl-C or SIGTERM. `detached`: a run the sidecar started,
/// whose output goes to its log: nobody watches it, so its end is news for
/// the editors; so is the end of any run whose terminal nobody reads.
pub fn run_cli(
    host: &HostRepo,
    request: RunRequest,
    json: bool,
    detached: bool,
) -> Result<ExitCode, CliError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut control = run::RunControl::new();
    control.watched =
        !detached && (std::io::stdout().is_terminal() || std::io::stderr().is_terminal());
    let spinner = spinner(json, String::new());
    let sink_spinner = spinner.clone();
    let events: run::EventSink = Arc::new(move |event: &RunEvent| {
        if json {
            return;
        }
        match (event, &sink_spinner) {
            (RunEvent::Output { line }, Some(pb)) => {
                pb.println(format!("  │ {}", slipway_core::shown::line(line)))
            }
            (RunEvent::Output { line }, None) => stderrln!("  │ {line}"),
            // The spinner's line is the current step: the latest phase, or
            // what the agent is doing now, with its tokens and cost so far.
            (RunEvent::Activity { activity }, Some(pb)) => {
                let summary = activity.summary();
                if !summary.is_empty() {
                    pb.set_message(slipway_core::shown::line(&summary));
                }
            }
            (other, Some(pb)) => {
                if let Some(text) = other.describe() {
                    pb.set_message(slipway_core::shown::line(&text));
                }
            }
            (RunEvent::Phase { .. }, None) => {
                if let Some(text) = event.describe() {
                    stderrln!("slipway: {text}");
                }
            }
            // Without a spinner the output lines above say it already.
            (
                RunEvent::Iteration { .. } | RunEvent::Step { .. } | RunEvent::Activity { .. },
                None,
            ) => {}
        }
    });
    let outcome = runtime.block_on(async {
        // Listening before the run starts: a stop request that came while the
        // watcher task had not run yet would end the process by its default
        // action, with no result written (the sidecar's cancel is a SIGTERM).
        use tokio::signal::unix::{SignalKind, signal};
        let stops = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        );
        if let (Ok(mut term), Ok(mut int)) = stops {
            let watcher = control.clone();
            tokio::spawn(async move {
                // The first request stops the agent; a second one also stops
                // waiting for an isolated sandbox's work to come back.
                loop {
                    tokio::select! {
                        _ = int.recv() => {},
                        _ = term.recv() => {},
                    }
                    watcher.stop();
                }
            });
        }
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
                stdout!("{}", render::run_result(&result));
            }
            // A script must not go on as if the agent were done when it asks.
            if result.status == run::RunStatus::NeedsInput {
                return Ok(ExitCode::from(next::NEEDS_INPUT));
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(failure) => {
            if json {
                print_json(&failure.result);
            } else {
                stdout!("{}", render::run_result(&failure.result));
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
