//! `slipway run --attempts N` / `--agent A --agent B`: one group of attempts,
//! each attempt's progress prefixed by its number.

use super::*;
use slipway_core::agent::AgentSpec;
use slipway_core::attempts::{self, GroupOutcome};

/// Plans the run once per agent (each agent's spec as the plan builds it)
/// and runs the group: `count` attempts of each agent.
pub(super) fn run_group_cli(
    input: RunInput,
    agents: &[args::AgentArg],
    count: usize,
    json: bool,
) -> Result<ExitCode, CliError> {
    let names: Vec<Option<String>> = if agents.is_empty() {
        vec![None]
    } else {
        agents
            .iter()
            .map(|a| a.to_possible_value().map(|v| v.get_name().to_owned()))
            .collect()
    };
    let mut specs: Vec<AgentSpec> = Vec::new();
    let mut first: Option<RunPlan> = None;
    for name in names {
        let mut one = input.clone();
        if let AgentInput::Named { name: slot, .. } = &mut one.agent {
            *slot = name;
        }
        let plan = plan_interactively(one)?;
        specs.push(plan.request.agent.clone());
        first.get_or_insert(plan);
    }
    let plan = first.expect("at least one agent is planned");
    let host = open(&Some(plan.repository.clone()))?;
    let control = run::RunControl::new();
    stop_on_signals(&control);
    let events: attempts::AttemptSink = Arc::new(move |index: usize, event: &RunEvent| {
        if json {
            return;
        }
        match event {
            RunEvent::Output { line } => eprintln!("  {index} │ {line}"),
            RunEvent::Phase { .. } => {
                if let Some(text) = event.describe() {
                    eprintln!("slipway: [{index}] {text}");
                }
            }
            RunEvent::Iteration { .. } | RunEvent::Step { .. } => {}
        }
    });
    let outcome = attempts::run_attempts(
        &host,
        &plan.request,
        &attempts::agents_for(&specs, count),
        &control,
        events,
    )
    .map_err(|e| CliError::from_failure(&e))?;
    if json {
        print_json(&outcome);
    } else {
        print!("{}", started(&outcome));
    }
    let all_done = outcome
        .results
        .iter()
        .all(|r| r.status == run::RunStatus::Completed);
    Ok(if all_done {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The first stop request (Ctrl-C, SIGTERM) stops every attempt's agent; a
/// second one stops waiting for isolated sandboxes' work too.
fn stop_on_signals(control: &run::RunControl) {
    let watcher = control.clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let Ok(runtime) = runtime else { return };
    // Registered before any attempt starts, so no request meets the default action.
    let stops = runtime.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        )
    });
    let (Ok(mut term), Ok(mut int)) = stops else {
        return;
    };
    std::thread::spawn(move || {
        runtime.block_on(async move {
            loop {
                tokio::select! {
                    _ = int.recv() => {},
                    _ = term.recv() => {},
                }
                watcher.stop();
            }
        })
    });
}

/// A group that ended, for people.
fn started(outcome: &GroupOutcome) -> String {
    let mut out = format!(
        "attempts {}: {} from {}\n",
        outcome.group.group_id,
        outcome.results.len(),
        &outcome.group.source_commit[..10]
    );
    for (entry, result) in outcome.group.attempts.iter().zip(&outcome.results) {
        out.push_str(&format!(
            "  {}  {:<12} {:<10} {} ({} commits)\n",
            entry.index,
            entry.agent,
            render::status_word(result.status),
            entry.branch,
            result.commits.len()
        ));
    }
    out.push_str(&format!(
        "compare: slipway attempts {}\npick:    slipway attempts {} --land N\n",
        outcome.group.group_id, outcome.group.group_id
    ));
    out
}
