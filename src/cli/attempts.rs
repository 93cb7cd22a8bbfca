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
    let agents = attempts::agents_for(&specs, count);
    let group = attempts::prepare_group(&host, &plan.request, &agents)
        .map_err(|e| CliError::from_failure(&e))?;
    run_prepared(&host, &plan.request, &agents, group, json, false)
}

/// The attempts of a group the sidecar prepared, each with the request's agent.
pub(super) fn run_detached_group(
    host: &HostRepo,
    request: RunRequest,
    group: &str,
    json: bool,
) -> Result<ExitCode, CliError> {
    let id = slipway_core::ids::GroupId::parse(group).map_err(|e| CliError::from_failure(&e))?;
    let group = attempts::compare::load(host, &id).map_err(|e| CliError::from_failure(&e))?;
    let agents = vec![request.agent.clone(); group.attempts.len()];
    run_prepared(host, &request, &agents, group, json, true)
}

/// Runs a prepared group with progress on stderr and stops on signals; `detached`:
/// nobody watches it (see [`run_cli`]).
fn run_prepared(
    host: &HostRepo,
    request: &RunRequest,
    agents: &[AgentSpec],
    group: attempts::GroupRecord,
    json: bool,
    detached: bool,
) -> Result<ExitCode, CliError> {
    let mut control = run::RunControl::new();
    control.watched =
        !detached && (std::io::stdout().is_terminal() || std::io::stderr().is_terminal());
    stop_on_signals(&control);
    let events: attempts::AttemptSink = Arc::new(move |index: usize, event: &RunEvent| {
        if json {
            return;
        }
        match event {
            RunEvent::Output { line } => stderrln!("  {index} │ {line}"),
            RunEvent::Phase { .. } => {
                if let Some(text) = event.describe() {
                    stderrln!("slipway: [{index}] {text}");
                }
            }
            RunEvent::Iteration { .. } | RunEvent::Step { .. } | RunEvent::Activity { .. } => {}
        }
    });
    let outcome = attempts::run_group(host, request, agents, group, &control, events);
    if json {
        print_json(&outcome);
    } else {
        stdout!("{}", started(&outcome));
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

/// `slipway attempts [GROUP [--land N [--how H] [--force]]]`.
pub(super) fn attempts_command(
    host: &HostRepo,
    args: args::AttemptsArgs,
    json: bool,
) -> Result<ExitCode, CliError> {
    let Some(group) = &args.group else {
        let groups = attempts::compare::groups(host).map_err(|e| CliError::from_failure(&e))?;
        if json {
            print_json(&serde_json::json!({ "groups": groups }));
        } else {
            stdout!("{}", groups_text(&groups));
        }
        return Ok(ExitCode::SUCCESS);
    };
    let id = slipway_core::ids::GroupId::parse(group).map_err(|e| CliError::from_failure(&e))?;
    let Some(index) = args.land else {
        let comparison =
            attempts::compare::compare(host, &id).map_err(|e| CliError::from_failure(&e))?;
        if json {
            print_json(&comparison);
        } else {
            stdout!("{}", table(&comparison));
        }
        return Ok(ExitCode::SUCCESS);
    };
    let picked = with_spinner(json, format!("landing attempt {index}"), || {
        attempts::pick::land_attempt(host, &id, index, args.how.into(), args.force)
    })
    .map_err(|e| CliError::from_failure(&e))?;
    if json {
        print_json(&picked);
    } else {
        stdout!("{}", picked_text(&picked));
    }
    Ok(if picked.kept.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(next::PRESERVED)
    })
}

/// The groups of a repository, for people.
fn groups_text(groups: &[attempts::compare::GroupSummary]) -> String {
    if groups.is_empty() {
        return "No groups of attempts (slipway run --attempts N starts one).\n".to_owned();
    }
    let now = slipway_core::util::now_secs();
    let mut out = String::new();
    for g in groups {
        let running = if g.running > 0 {
            format!(", {} running", g.running)
        } else {
            String::new()
        };
        out.push_str(&format!(
            "{}  {} attempts{running}  {} ago  {}{}\n",
            g.group_id,
            g.attempts,
            render::duration(now.saturating_sub(g.created)),
            match g.strategy {
                attempts::GroupStrategy::Branch => "branch".to_owned(),
                attempts::GroupStrategy::MergeToHead =>
                    format!("merge-to-head into {}", g.into.as_deref().unwrap_or("?")),
            },
            g.prompt
                .as_deref()
                .map(|p| format!("\n    {p}"))
                .unwrap_or_default(),
        ));
    }
    out.push_str("compare: slipway attempts GROUP\n");
    out
}

/// The comparison as a table for people.
fn table(c: &attempts::compare::Comparison) -> String {
    let mut out = format!(
        "attempts {} from {}{}\n",
        c.group.group_id,
        &c.group.source_commit[..10],
        c.group
            .check
            .as_deref()
            .map(|check| format!(", check: {check}"))
            .unwrap_or_default()
    );
    out.push_str(
        "  #  agent        status     check        files  +lines  -lines  time  tokens  branch\n",
    );
    for r in &c.rows {
        let check = r
            .check
            .as_ref()
            .map(render::check_word)
            .unwrap_or_else(|| "-".into());
        let tokens = r
            .usage
            .map(|u| {
                let cost = u.cost_usd.map(|c| format!(" ${c:.2}")).unwrap_or_default();
                format!("{}{cost}", u.input_tokens + u.output_tokens)
            })
            .unwrap_or_else(|| "-".into());
        let time = r
            .seconds
            .map(|s| format!("{s}s"))
            .unwrap_or_else(|| "-".into());
        let branch = if r.branch_present {
            r.branch.clone()
        } else {
            format!("{} (gone)", r.branch)
        };
        out.push_str(&format!(
            "  {:<2} {:<12} {:<10} {:<12} {:>5}  {:>6}  {:>6}  {:>4}  {:>6}  {branch}\n",
            r.index,
            r.agent,
            r.status.as_deref().unwrap_or("unknown"),
            check,
            r.files_changed,
            r.lines_added,
            r.lines_removed,
            time,
            tokens,
        ));
    }
    out
}

/// What `--land N` did, for people.
fn picked_text(p: &attempts::pick::Picked) -> String {
    let mut out = format!(
        "landed attempt {} in {} ({})\n",
        p.index,
        p.landed.into,
        &p.landed.commit[..10]
    );
    if !p.discarded.is_empty() {
        let list: Vec<String> = p.discarded.iter().map(usize::to_string).collect();
        out.push_str(&format!("discarded attempts {}\n", list.join(", ")));
    }
    for kept in &p.kept {
        out.push_str(&format!(
            "kept attempt {} ({}): {}\n  to lose it: slipway discard {} --force\n",
            kept.index, kept.branch, kept.reason, kept.branch
        ));
    }
    out
}
