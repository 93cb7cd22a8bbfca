//! Watching a run: the agent's activity (its step, files, turns, usage) in
//! `slipway runs` while it runs and after, and `slipway/runActivity` from the
//! sidecar, a few a second however much the agent prints.

use crate::common;
use crate::common::lsp;

use std::path::Path;
use std::process::Stdio;

use common::*;
use lsp::*;
use serde_json::{Value, json};

/// The newest run as `slipway runs --json` lists it.
fn newest_run(env: &TestEnv, repo: &Path) -> Value {
    let runs = env.slipway_json(repo, &["runs"]);
    runs["runs"][0].clone()
}

#[test]
fn a_command_agents_last_line_is_its_step_in_slipway_runs_while_it_runs_and_after() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let gate = Gate::new(&env, "looked");
    let agent = env.script(
        "steps",
        &format!(
            "{}echo 'fetching sources'\necho 'compiling 3 of 7'\n{}\
             echo done > done.txt && git add done.txt && git commit -qm done\necho 'all built'\n",
            gate.open_line(),
            gate.wait_line()
        ),
    );
    let agent = agent.to_str().expect("utf8 path");
    let child = env
        .slipway_cmd(&repo)
        .args(["--json", "run", "--branch", "agent/steps", "--", agent])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("slipway runs");
    // The agent waits at the gate: its latest line is what it is doing.
    let mut seen = Value::Null;
    let shown = wait_until(EVENT_DEADLINE, || {
        seen = newest_run(&env, &repo);
        seen["status"] == "running" && seen["activity"]["step"] == "compiling 3 of 7"
    });
    assert!(shown, "slipway runs never showed the step: {seen}");
    assert!(seen["elapsedSecs"].is_u64(), "{seen}");
    assert_eq!(seen["activity"]["turns"], 0, "no model, no turns: {seen}");
    gate.go();
    let out = child.wait_with_output().expect("slipway ends");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let run = newest_run(&env, &repo);
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["activity"]["step"], "all built", "the last step: {run}");
    let text = String::from_utf8_lossy(&env.slipway(&repo, &["runs"]).stdout).into_owned();
    assert!(text.contains("· all built"), "{text}");
}

#[test]
fn a_run_printing_100k_lines_sends_a_few_activity_notifications_a_second() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let agent = env.script(
        "flood",
        "i=1; while [ $i -le 100000 ]; do echo \"line $i\"; i=$((i+1)); done\n",
    );
    let mut lsp = Lsp::start(&env, Some(&repo), false);
    let started = std::time::Instant::now();
    let answer = lsp.ok(
        "slipway.run",
        json!({
            "root": repo, "strategy": "branch", "branch": "agent/flood",
            "agent": command_agent(&agent), "prompt": "flood",
        }),
    );
    let run_id = s(&answer, "runId").to_owned();
    lsp.expect_notification(
        "slipway/runFinished",
        |p| p["runId"] == run_id,
        EVENT_DEADLINE,
        "the end of the flood",
    );
    let secs = started.elapsed().as_secs_f64();
    let activity = lsp.all_with("slipway/runActivity", |p| p["runId"] == run_id);
    assert!(!activity.is_empty(), "no slipway/runActivity at all");
    // At most one per 250 ms, and the last one before the end.
    let bound = (secs * 4.0).ceil() as usize + 2;
    assert!(
        activity.len() <= bound,
        "{} notifications in {secs:.1} s (at most {bound})",
        activity.len()
    );
    let last = &activity[activity.len() - 1].msg["params"];
    assert_eq!(last["activity"]["step"], "line 100000", "{last}");
    assert_eq!(
        Path::new(s(last, "root")).canonicalize().ok(),
        repo.canonicalize().ok(),
        "{last}"
    );
    // The events file keeps as few.
    let events = std::fs::read_to_string(repo.join(format!(".slipway/runs/{run_id}.events")))
        .expect("events file");
    let kept = events.matches("\"event\":\"activity\"").count();
    assert!(kept <= bound, "{kept} activity events kept");
}
