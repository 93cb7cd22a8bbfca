//! Runs through the real `slipway lsp` sidecar: `slipway.run` answers at
//! once and the run reports progress and `slipway/runFinished`; cancel stops
//! the agent's whole tree; handoff keeps the user's uncommitted files; the
//! sidecar answers while a run streams output; and a run outlives the sidecar
//! (a new sidecar re-attaches, or reports a run that ended while none was up,
//! exactly once).

use crate::common;
use crate::common::lsp;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use lsp::*;
use serde_json::{Value, json};

const FINISH: Duration = EVENT_DEADLINE;

fn canon(p: &Path) -> PathBuf {
    p.canonicalize()
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Shell lines that commit a new file `name` in the agent's working directory.
fn commit_line(name: &str) -> String {
    format!(
        "echo '{name}' > '{name}.txt' && git add '{name}.txt' && git commit -q -m 'agent: {name}' || exit 1\n"
    )
}

/// `git rev-list --reverse FROM..TO`.
fn rev_list(env: &TestEnv, repo: &Path, from: &str, to: &str) -> Vec<String> {
    let out = env.git(repo, &["rev-list", "--reverse", &format!("{from}..{to}")]);
    out.lines().map(str::to_owned).collect()
}

fn run_id_of(answer: &Value) -> String {
    s(answer, "runId").to_owned()
}

fn finished_for(id: &str) -> impl Fn(&Value) -> bool + '_ {
    move |p: &Value| p["runId"] == id
}

fn record(repo: &Path, run_id: &str) -> Option<Value> {
    let bytes = std::fs::read(repo.join(format!(".slipway/runs/{run_id}.json"))).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn wait_for_file(path: &Path, timeout: Duration) {
    assert!(
        wait_until(timeout, || path.exists()),
        "{} did not appear within {timeout:?}",
        path.display()
    );
}

/// A `slipway/status` push that shows run `id` running.
fn shows_running(id: &str) -> impl Fn(&Value) -> bool + '_ {
    move |p: &Value| {
        status_runs(p)
            .iter()
            .any(|r| r["runId"] == id && r["state"] == "running")
    }
}

fn progress_kind(r: &Received) -> Option<&str> {
    (r.msg["method"] == "$/progress").then(|| r.msg["params"]["value"]["kind"].as_str())?
}

#[test]
fn a_run_answers_at_once_then_reports_progress_and_finishes_with_its_commits() {
    let env = TestEnv::new();
    let repo = canon(&env.new_repo("repo"));
    let before = env.rev(&repo, "main");
    // The agent waits between its commits until the test has the answer to
    // slipway.run: an answer that waited for the run would never come.
    let gate = Gate::new(&env, "answered");
    let agent = env.script(
        "two-commits",
        &format!(
            "{}echo 'agent starting'\n{}{}{}echo 'agent done'\n",
            gate.open_line(),
            commit_line("one"),
            gate.wait_line(),
            commit_line("two")
        ),
    );
    let mut lsp = Lsp::start(&env, Some(&repo), true);
    let reply = lsp.request_received(
        "workspace/executeCommand",
        json!({
            "command": "slipway.run",
            "arguments": [{
                "root": repo, "strategy": "merge-to-head",
                "agent": command_agent(&agent), "prompt": "make two commits",
            }],
        }),
    );
    let answer = into_result(reply.msg.clone())
        .unwrap_or_else(|e| panic!("slipway.run failed: {e}\n{}", lsp.stderr()));
    let run_id = run_id_of(&answer);
    assert!(
        lsp.all_with("slipway/runFinished", |_| true).is_empty(),
        "no runFinished before the reply"
    );
    gate.go();

    let finished = lsp.expect_notification(
        "slipway/runFinished",
        finished_for(&run_id),
        FINISH,
        "the end of the run",
    );
    assert!(finished.seq > reply.seq);
    let params = &finished.msg["params"];
    assert_eq!(params["status"], "completed", "{params}");
    let commits = rev_list(&env, &repo, &before, "main");
    assert_eq!(commits.len(), 2, "both commits merged into main");
    assert_eq!(
        commit_shas(params),
        commits,
        "the two commits, oldest first"
    );
    assert_eq!(
        env.git(&repo, &["log", "-1", "--format=%s", "main"]),
        "agent: two"
    );
    assert!(!s(params, "branch").is_empty(), "{params}");
    for key in ["preservedWorktreePath", "error"] {
        assert!(params.get(key).is_some(), "{key} in {params}");
    }
    assert!(params["error"].is_null(), "{params}");
    let worktree_path = PathBuf::from(s(params, "worktreePath"));
    assert!(
        worktree_path.starts_with(repo.join(".slipway/worktrees")),
        "{params}"
    );

    // Progress: create, begin, reports (phases, iteration), end, then
    // runFinished; nothing more about the run once the loop has run again.
    lsp.barrier(&repo);
    let history = lsp.history().to_vec();
    let creates: Vec<&Received> = history
        .iter()
        .filter(|r| r.msg["method"] == "window/workDoneProgress/create")
        .collect();
    assert_eq!(creates.len(), 1, "one progress for one run: {creates:?}");
    assert!(creates[0].msg.get("id").is_some(), "create is a request");
    let token = creates[0].msg["params"]["token"].clone();
    let progress: Vec<&Received> = history
        .iter()
        .filter(|r| r.msg["method"] == "$/progress" && r.msg["params"]["token"] == token)
        .collect();
    let kinds: Vec<&str> = progress.iter().filter_map(|r| progress_kind(r)).collect();
    assert!(kinds.len() >= 3, "begin, reports, end: {kinds:?}");
    assert_eq!(kinds.first(), Some(&"begin"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"end"), "{kinds:?}");
    assert!(
        kinds[1..kinds.len() - 1].iter().all(|k| *k == "report"),
        "{kinds:?}"
    );
    assert!(creates[0].seq < progress[0].seq, "create before begin");
    let end = progress.last().expect("end");
    assert!(end.seq < finished.seq, "progress ends before runFinished");
    assert_eq!(end.msg["params"]["value"]["message"], "completed");
    let messages: Vec<String> = progress
        .iter()
        .filter(|r| progress_kind(r) == Some("report"))
        .filter_map(|r| r.msg["params"]["value"]["message"].as_str())
        .map(str::to_owned)
        .collect();
    assert!(
        messages.iter().any(|m| m == "iteration 1 of 1"),
        "{messages:?}"
    );
    for phase in ["worktree ready: ", "merging "] {
        assert!(
            messages.iter().any(|m| m.starts_with(phase)),
            "phase {phase} reported: {messages:?}"
        );
    }
    // The current step changes while the agent works: its latest line.
    assert!(
        messages.iter().any(|m| m == "agent starting"),
        "the agent's output as the step: {messages:?}"
    );
    // People's words only: no event keys, no Rust debug text.
    assert!(
        !messages.iter().any(|m| m.contains("agentStarted")
            || m.contains(" { ")
            || m.contains("worktreeReady")),
        "{messages:?}"
    );
    let iteration_at = progress
        .iter()
        .position(|r| r.msg["params"]["value"]["message"] == "iteration 1 of 1")
        .expect("iteration");
    let merging_at = progress
        .iter()
        .position(|r| {
            r.msg["params"]["value"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("merging"))
        })
        .expect("merging");
    assert!(iteration_at < merging_at, "phases in order: {messages:?}");
    assert_eq!(
        lsp.all_with("slipway/runFinished", finished_for(&run_id))
            .len(),
        1,
        "runFinished exactly once"
    );
    assert!(
        !repo.join(format!(".slipway/runs/{run_id}.news")).exists(),
        "the sidecar heard it: nothing is left for the next one"
    );
}

#[test]
fn cancel_stops_a_stalling_run_and_kills_the_agent() {
    let env = TestEnv::new();
    let repo = canon(&env.new_repo("repo"));
    let head = env.rev(&repo, "HEAD");
    let pid_file = env.path().join("agent.pid");
    let child_pid_file = env.path().join("child.pid");
    let agent = env.script(
        "stall",
        &format!(
            "echo $$ > '{}.tmp' && mv '{0}.tmp' '{0}'\necho 'agent started, now stalling'\nsleep 300 &\necho $! > '{}.tmp' && mv '{1}.tmp' '{1}'\nwait\n", // allow-sleep: the agent's child stalls until the test cancels the run
            pid_file.display(),
            child_pid_file.display()
        ),
    );
    let mut lsp = Lsp::start(&env, Some(&repo), true);
    let answer = lsp.ok(
        "slipway.run",
        json!({
            "root": repo, "strategy": "merge-to-head",
            "agent": command_agent(&agent), "prompt": "stall",
        }),
    );
    let run_id = run_id_of(&answer);
    wait_for_file(&child_pid_file, EVENT_DEADLINE);
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .expect("pid")
        .trim()
        .parse()
        .expect("pid number");
    let child: u32 = std::fs::read_to_string(&child_pid_file)
        .expect("pid")
        .trim()
        .parse()
        .expect("pid number");
    assert!(pid_alive(pid) && pid_alive(child), "the agent is running");

    let cancelled = lsp.request_received(
        "workspace/executeCommand",
        json!({ "command": "slipway.cancel", "arguments": [{ "runId": run_id }] }),
    );
    let reply = into_result(cancelled.msg.clone()).unwrap_or_else(|e| panic!("cancel: {e}"));
    assert_eq!(reply["runId"], run_id.as_str());
    assert!(reply["status"].is_string(), "{reply}");

    let finished = lsp.expect_notification(
        "slipway/runFinished",
        finished_for(&run_id),
        EVENT_DEADLINE,
        "the cancelled run",
    );
    // Cancel answers at once: before the run it stops has ended.
    assert!(finished.seq > cancelled.seq);
    assert_eq!(
        finished.msg["params"]["status"], "cancelled",
        "{}",
        finished.msg
    );
    assert!(
        wait_until(EVENT_DEADLINE, || !pid_alive(pid)),
        "the agent ({pid}) is dead after cancel"
    );
    assert!(
        wait_until(EVENT_DEADLINE, || !pid_alive(child)),
        "the agent's child ({child}) is dead after cancel: the whole tree is killed"
    );
    assert!(
        finished.msg["params"]["commits"]
            .as_array()
            .is_some_and(Vec::is_empty)
    );
    assert_eq!(env.rev(&repo, "HEAD"), head, "nothing merged");
}

#[test]
fn cancelling_the_progress_in_the_editor_cancels_the_run() {
    let env = TestEnv::new();
    let repo = canon(&env.new_repo("repo"));
    let pid_file = env.path().join("agent.pid");
    let agent = env.script(
        "stall",
        &format!(
            "echo $$ > '{}.tmp' && mv '{0}.tmp' '{0}'\necho 'stalling'\nexec sleep 300\n", // allow-sleep: the agent stalls until the editor cancels the run
            pid_file.display()
        ),
    );
    let mut lsp = Lsp::start(&env, Some(&repo), true);
    let answer = lsp.ok(
        "slipway.run",
        json!({
            "root": repo, "strategy": "merge-to-head",
            "agent": command_agent(&agent), "prompt": "stall",
        }),
    );
    let run_id = run_id_of(&answer);
    let begin = lsp.expect_notification(
        "$/progress",
        |p| p["value"]["kind"] == "begin",
        EVENT_DEADLINE,
        "the run's progress",
    );
    assert_eq!(
        begin.msg["params"]["value"]["cancellable"], true,
        "the progress offers cancel"
    );
    wait_for_file(&pid_file, EVENT_DEADLINE);
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .expect("pid")
        .trim()
        .parse()
        .expect("pid number");
    lsp.notify(
        "window/workDoneProgress/cancel",
        json!({ "token": begin.msg["params"]["token"] }),
    );
    let finished = lsp.expect_notification(
        "slipway/runFinished",
        finished_for(&run_id),
        EVENT_DEADLINE,
        "the run cancelled from the progress UI",
    );
    assert_eq!(
        finished.msg["params"]["status"], "cancelled",
        "{}",
        finished.msg
    );
    assert!(
        wait_until(EVENT_DEADLINE, || !pid_alive(pid)),
        "the agent ({pid}) is dead"
    );
}

#[test]
fn handoff_runs_on_an_existing_worktree_and_keeps_the_users_uncommitted_file() {
    let env = TestEnv::new();
    let repo = canon(&env.new_repo("repo"));
    let mut lsp = Lsp::start(&env, Some(&repo), true);
    let created = lsp.ok(
        "slipway.createWorktree",
        json!({ "root": repo, "strategy": "branch", "branch": "handoff/x" }),
    );
    let wt = canon(Path::new(s(&created, "path")));
    let base = s(&created, "baseCommit").to_owned();
    let notes = "notes the user left, not committed\n";
    std::fs::write(wt.join("notes.md"), notes).expect("notes");
    let agent = env.script(
        "read-notes",
        "cat notes.md > seen.txt && git add seen.txt && git commit -q -m 'agent read the notes' || exit 1\n",
    );
    let answer = lsp.ok(
        "slipway.handoff",
        json!({
            "root": repo, "worktree": "handoff/x",
            "agent": command_agent(&agent), "prompt": "carry on",
        }),
    );
    let run_id = run_id_of(&answer);
    let finished = lsp.expect_notification(
        "slipway/runFinished",
        finished_for(&run_id),
        FINISH,
        "the handoff run",
    );
    let params = &finished.msg["params"];
    assert_eq!(params["status"], "completed", "{params}");
    assert_eq!(params["branch"], "handoff/x");
    assert_eq!(canon(Path::new(s(params, "worktreePath"))), wt);
    let commits = rev_list(&env, &repo, &base, "handoff/x");
    assert_eq!(commits.len(), 1);
    assert_eq!(commit_shas(params), commits);
    assert_eq!(
        env.git(&repo, &["show", "handoff/x:seen.txt"]),
        notes.trim_end(),
        "the agent saw the user's uncommitted file"
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("notes.md")).expect("notes kept"),
        notes,
        "the user's file is not lost"
    );
    assert_eq!(env.porcelain(&wt), "?? notes.md", "still uncommitted");
    // The host's branch did not move.
    assert_eq!(rev_list(&env, &repo, &base, "main"), Vec::<String>::new());
}

#[test]
fn the_sidecar_answers_while_a_run_streams_output() {
    let env = TestEnv::new();
    let repo = canon(&env.new_repo("repo"));
    // Four rounds: the agent prints a burst of 500 lines when the test says
    // go, and the test asks while it streams. The agent ends only after the
    // last answer, so an answer held back until the run's end never comes.
    let gate = Gate::new(&env, "rounds");
    let agent = env.script(
        "chatty",
        &format!(
            "{}for round in 1 2 3 4; do\n{}i=0; while [ $i -lt 500 ]; do echo \"round $round line $i\"; i=$((i+1)); done\ndone\n{}{}",
            gate.open_line(),
            gate.wait_line(),
            gate.wait_line(),
            commit_line("chatty")
        ),
    );
    let mut lsp = Lsp::start(&env, Some(&repo), true);
    let answer = lsp.ok(
        "slipway.run",
        json!({
            "root": repo, "strategy": "merge-to-head",
            "agent": command_agent(&agent), "prompt": "talk",
        }),
    );
    let run_id = run_id_of(&answer);
    let mut answered = Vec::new();
    for _ in 0..4 {
        gate.go();
        for (command, arg) in [
            ("slipway.status", json!({ "path": repo })),
            ("slipway.branches", json!({ "root": repo })),
        ] {
            let reply = lsp.request_received(
                "workspace/executeCommand",
                json!({ "command": command, "arguments": [arg] }),
            );
            let result = into_result(reply.msg.clone())
                .unwrap_or_else(|e| panic!("{command} failed during a run: {e}"));
            assert!(result.is_object(), "{result}");
            answered.push((command, reply.seq));
        }
    }
    gate.go();
    let finished = lsp.expect_notification(
        "slipway/runFinished",
        finished_for(&run_id),
        FINISH,
        "the chatty run",
    );
    assert_eq!(finished.msg["params"]["status"], "completed");
    for (command, seq) in answered {
        assert!(
            seq < finished.seq,
            "{command} was answered only after the run finished"
        );
    }
}

#[test]
fn a_new_sidecar_re_attaches_to_a_run_started_by_one_that_was_killed() {
    let env = TestEnv::new();
    let repo = canon(&env.new_repo("repo"));
    let before = env.rev(&repo, "main");
    let marker = env.path().join("first-commit-done");
    // The second commit waits until the new sidecar has picked the run up.
    let gate = Gate::new(&env, "reattached");
    let agent = env.script(
        "slow-two-commits",
        &format!(
            "{}{}touch '{}'\n{}{}",
            gate.open_line(),
            commit_line("one"),
            marker.display(),
            gate.wait_line(),
            commit_line("two")
        ),
    );
    let mut first = Lsp::start(&env, Some(&repo), true);
    let answer = first.ok(
        "slipway.run",
        json!({
            "root": repo, "strategy": "merge-to-head",
            "agent": command_agent(&agent), "prompt": "walk away",
        }),
    );
    let run_id = run_id_of(&answer);
    wait_for_file(&marker, EVENT_DEADLINE);
    first.kill();
    let rec = record(&repo, &run_id).expect("run record");
    assert_eq!(
        rec["state"], "running",
        "the run outlives its sidecar: {rec}"
    );

    let mut second = Lsp::start(&env, Some(&repo), true);
    second.expect_notification(
        "slipway/status",
        shows_running(&run_id),
        EVENT_DEADLINE,
        "the new sidecar shows the run as running",
    );
    let list = second.ok("slipway.list", json!({ "root": repo }));
    assert!(
        list["worktrees"].as_array().is_some_and(|ws| ws
            .iter()
            .any(|w| w["runId"] == run_id.as_str() && w["state"] == "running")),
        "slipway.list shows the running worktree: {list}"
    );
    // Progress resumes in the new editor.
    second.expect_notification(
        "window/workDoneProgress/create",
        |_| true,
        EVENT_DEADLINE,
        "progress for the re-attached run",
    );
    gate.go();
    let finished = second.expect_notification(
        "slipway/runFinished",
        finished_for(&run_id),
        FINISH,
        "the re-attached run's end",
    );
    let params = &finished.msg["params"];
    assert_eq!(params["status"], "completed", "{params}");
    let commits = rev_list(&env, &repo, &before, "main");
    assert_eq!(commits.len(), 2);
    assert_eq!(commit_shas(params), commits);
}

#[test]
fn a_workspace_run_asks_for_every_ask_mount_in_order_then_runs() {
    let env = TestEnv::new();
    let up = env.new_repo("up");
    env.git(&up, &["checkout", "-q", "-b", "release"]);
    env.commit_file(&up, "r.txt", "release\n", "release work");
    env.git(&up, &["checkout", "-q", "main"]);
    env.git(
        env.path(),
        &["clone", "-q", up.to_str().expect("utf8"), "a"],
    );
    let a = env.path().join("a");
    let b = env.new_repo("b");
    let mut lsp = Lsp::start(&env, Some(&a), false);
    let plan = |a_source: Value, b_source: Value| {
        json!({
            "name": "pair",
            "workdir": "/w/a",
            "mounts": [
                {"src": a, "dst": "/w/a", "isolation": "worktree", "source": a_source},
                {"src": b, "dst": "/w/b", "isolation": "clone", "source": b_source}
            ]
        })
    };
    let agent = json!({"type": "command", "command": ["sh", "-c", commit_line("ws")]});
    let error = lsp.err(
        "slipway.run",
        json!({"root": a, "agent": agent, "prompt": "p", "workspace": plan(json!({"policy": "ask"}), json!({"policy": "ask"}))}),
    );
    assert_eq!(kind(&error), "sourceBranchRequired", "{error}");
    let mounts = error["data"]["mounts"].as_array().expect("data.mounts");
    assert_eq!(mounts.len(), 2);
    assert_eq!(mounts[0]["dst"], "/w/a");
    assert_eq!(mounts[1]["dst"], "/w/b");
    assert!(
        mounts[0]["choices"].to_string().contains("origin/release"),
        "{error}"
    );

    // The shim's answer: one choice per mount, then the run goes.
    let answer = lsp.ok(
        "slipway.run",
        json!({
            "root": a, "agent": agent, "prompt": "p",
            "workspace": plan(json!({"policy": "named", "ref": "origin/release"}), json!({"policy": "named", "ref": "main"}))
        }),
    );
    let id = run_id_of(&answer);
    let finished = lsp
        .wait_for_notification("slipway/runFinished", finished_for(&id), FINISH)
        .expect("runFinished");
    assert_eq!(
        finished.msg["params"]["status"], "completed",
        "{}",
        finished.msg
    );
    let commits = finished.msg["params"]["commits"]
        .as_array()
        .expect("commits");
    assert_eq!(commits.len(), 1);
    let record = record(&canon(&a), &id).expect("run record");
    let branch = record["result"]["mounts"][0]["branch"]
        .as_str()
        .expect("branch")
        .to_owned();
    assert_eq!(
        env.rev(&a, &format!("{branch}~1")),
        env.rev(&a, "origin/release")
    );
}

#[test]
fn a_named_workspace_is_listed_and_runs_with_one_answer_per_ask_mount() {
    let env = TestEnv::new();
    let up = env.new_repo("up");
    env.git(&up, &["checkout", "-q", "-b", "release"]);
    env.commit_file(&up, "r.txt", "release\n", "release work");
    env.git(&up, &["checkout", "-q", "main"]);
    env.git(
        env.path(),
        &["clone", "-q", up.to_str().expect("utf8"), "a"],
    );
    let a = env.path().join("a");
    let b = env.new_repo("b");
    let a_s = a.to_str().expect("utf8");
    let b_s = b.to_str().expect("utf8");
    env.slipway_json(
        env.path(),
        &[
            "workspace",
            "create",
            "duo",
            "--workdir",
            "/w/a",
            "--mount",
            &format!("{a_s}:/w/a"),
            "--mount",
            &format!("{b_s}:/w/b"),
            "--mount-isolation",
            "/w/a=worktree",
            "--mount-isolation",
            "/w/b=clone",
            "--mount-source-branch",
            "/w/a=ask",
            "--mount-source-branch",
            "/w/b=ask",
        ],
    );
    let mut lsp = Lsp::start(&env, Some(&a), false);
    let listed = lsp.ok("slipway.workspaces", json!({}));
    let duo = listed["workspaces"]
        .as_array()
        .expect("workspaces")
        .iter()
        .find(|w| w["name"] == "duo")
        .unwrap_or_else(|| panic!("{listed}"))
        .clone();
    assert_eq!(duo["mounts"].as_array().expect("mounts").len(), 2);

    let agent = json!({"type": "command", "command": ["sh", "-c", commit_line("named-ws")]});
    let error = lsp.err(
        "slipway.run",
        json!({"root": a, "agent": agent, "prompt": "p", "workspace": "duo"}),
    );
    assert_eq!(kind(&error), "sourceBranchRequired");
    let dsts: Vec<&str> = error["data"]["mounts"]
        .as_array()
        .expect("mounts")
        .iter()
        .map(|m| m["dst"].as_str().expect("dst"))
        .collect();
    assert_eq!(dsts, vec!["/w/a", "/w/b"]);
    let answer = lsp.ok(
        "slipway.run",
        json!({
            "root": a, "agent": agent, "prompt": "p", "workspace": "duo",
            "sources": {
                "/w/a": {"policy": "named", "ref": "origin/release"},
                "/w/b": {"policy": "named", "ref": "main"}
            }
        }),
    );
    let id = run_id_of(&answer);
    let finished = lsp
        .wait_for_notification("slipway/runFinished", finished_for(&id), FINISH)
        .expect("runFinished");
    assert_eq!(
        finished.msg["params"]["status"], "completed",
        "{}",
        finished.msg
    );
    let record = record(&canon(&a), &id).expect("record");
    let branch = record["result"]["mounts"][0]["branch"]
        .as_str()
        .expect("branch")
        .to_owned();
    assert_eq!(
        env.rev(&a, &format!("{branch}~1")),
        env.rev(&a, "origin/release")
    );
}

/// Two editors on one repository (two real sidecars): the one whose client
/// started a run gets its progress `end` and `slipway/runFinished`; the other
/// gets `slipway/runFinished` too. Neither hears it twice, and a sidecar
/// started after the run ended does not report it again.
#[test]
fn every_editor_on_the_repository_hears_how_a_run_ends() {
    let env = TestEnv::new();
    let repo = canon(&env.new_repo("repo"));
    let before = env.rev(&repo, "main");
    // The agent commits once both editors show the run as running.
    let gate = Gate::new(&env, "both-watch");
    let agent = env.script(
        "slow-commit",
        &format!(
            "{}{}{}",
            gate.open_line(),
            gate.wait_line(),
            commit_line("both-hear")
        ),
    );
    let mut starter = Lsp::start(&env, Some(&repo), true);
    let mut watcher = Lsp::start(&env, Some(&repo), true);
    let answer = starter.ok(
        "slipway.run",
        json!({
            "root": repo, "strategy": "merge-to-head",
            "agent": command_agent(&agent), "prompt": "for both editors",
        }),
    );
    let run_id = run_id_of(&answer);
    for (who, lsp) in [("starter", &mut starter), ("watcher", &mut watcher)] {
        lsp.expect_notification(
            "slipway/status",
            shows_running(&run_id),
            EVENT_DEADLINE,
            &format!("the {who} shows the run running"),
        );
    }
    gate.go();
    let mine = starter.expect_notification(
        "slipway/runFinished",
        finished_for(&run_id),
        FINISH,
        "runFinished in the editor that started the run",
    );
    let theirs = watcher.expect_notification(
        "slipway/runFinished",
        finished_for(&run_id),
        FINISH,
        "runFinished in the other editor",
    );
    let commits = rev_list(&env, &repo, &before, "main");
    assert_eq!(commits.len(), 1, "the run merged its commit");
    for (who, finished) in [("starter", &mine), ("watcher", &theirs)] {
        let params = &finished.msg["params"];
        assert_eq!(params["status"], "completed", "{who}: {params}");
        assert_eq!(commit_shas(params), commits, "{who}: {params}");
    }
    let token = json!(format!("slipway-{run_id}"));
    let ended = starter
        .history()
        .iter()
        .any(|r| progress_kind(r) == Some("end") && r.msg["params"]["token"] == token);
    assert!(ended, "the starter's progress ended");
    // Once each loop has run again, each has said it once.
    starter.barrier(&repo);
    watcher.barrier(&repo);
    for (who, lsp) in [("starter", &mut starter), ("watcher", &mut watcher)] {
        assert_eq!(
            lsp.all_with("slipway/runFinished", finished_for(&run_id))
                .len(),
            1,
            "{who} heard it once"
        );
    }
    assert!(
        !repo.join(format!(".slipway/runs/{run_id}.news")).exists(),
        "editors heard it: nothing is left for the next one"
    );
    // A sidecar started right after the run ended (within the same second,
    // as the barriers above make likely) must not take it for its own.
    let mut later = Lsp::start(&env, Some(&repo), true);
    later.barrier(&repo);
    assert!(
        later.all_with("slipway/runFinished", |_| true).is_empty(),
        "a sidecar started after the run ended, while others heard it, does not report it"
    );
}
