//! Each editor hears how a run ends exactly once: sidecars listening when it
//! ends each tell their client; of sidecars that start after it ended, exactly
//! one does (the one that claims its news); none tells of a run a person
//! watched end in a terminal. Sidecars start at every moment around the end,
//! held there by the run's test gate (`SLIPWAY_TEST_GATE`), never by the clock;
//! "did not report" is decided by each sidecar's next `slipway/status`, which
//! no longer lists the run once it has decided about it.

use crate::common;
use crate::common::lsp;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use common::pty::Pty;
use common::*;
use lsp::*;
use serde_json::Value;

const DEADLINE: Duration = Duration::from_secs(60);

/// When the sidecars start, relative to the run's end.
#[derive(Debug, Clone, Copy)]
enum Moment {
    /// Before the run starts.
    Before,
    /// At the `n`-th `run-end` point: 1 before its news is written, 2 before
    /// its record says finished, 3 just after.
    Gate(u8),
    /// After the run's process is gone.
    After,
}

/// `slipway run` of a merge-to-head run by an agent that makes one commit.
fn run_argv(env: &TestEnv) -> Vec<String> {
    let agent = env.script(
        "one-commit",
        "echo done > done.txt && git add done.txt && git commit -q -m 'agent: done'\n",
    );
    [
        "run",
        "--strategy",
        "merge-to-head",
        "--agent",
        "command",
        "--prompt",
        "finish",
        "--",
        agent.to_str().expect("utf8"),
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

/// The run of [`run_argv`], started by the command line with its output on
/// pipes (nobody watches it), stopped at `gate` if given.
fn start_run(env: &TestEnv, repo: &Path, gate: Option<(u8, &Path)>) -> Child {
    let mut cmd = env.slipway_cmd(repo);
    cmd.args(run_argv(env))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some((n, dir)) = gate {
        cmd.env(
            "SLIPWAY_TEST_GATE",
            format!("run-end:{n}:{}", dir.display()),
        );
    }
    cmd.spawn().expect("slipway run starts")
}

/// The one run of the repository (its record's id).
fn the_run(repo: &Path) -> String {
    let dir = repo.join(".slipway/runs");
    let mut ids: Vec<String> = std::fs::read_dir(&dir)
        .expect("runs dir")
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".json")
                .filter(|n| !n.ends_with(".request"))
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids.remove(0)
}

/// A sidecar whose first look at the repository is done.
fn sidecar(env: &TestEnv, repo: &Path) -> Lsp {
    let mut lsp = Lsp::start(env, Some(repo), true);
    lsp.expect_notification(
        "slipway/status",
        |_| true,
        DEADLINE,
        "the first look at the repository",
    );
    lsp
}

/// Once the run has ended: a change every sidecar's status will show, so a
/// status showing it was read after the end.
fn mark_after_the_end(env: &TestEnv, repo: &Path) {
    env.slipway_json(repo, &["worktree", "create", "--branch", "after-the-end"]);
}

/// Waits until `lsp` has decided about `run_id`: a status read after the end
/// (it shows the marker worktree) no longer lists the run. Then counts its
/// `slipway/runFinished` for the run.
fn reports_once_decided(lsp: &mut Lsp, run_id: &str) -> usize {
    let listed = |p: &Value| status_runs(p).iter().any(|r| r["runId"] == run_id);
    let after_the_end = |p: &Value| {
        status_worktrees(p)
            .iter()
            .any(|w| w["branch"] == "after-the-end")
    };
    let decided = wait_until(DEADLINE, || {
        lsp.all_with("slipway/status", |_| true)
            .last()
            .is_some_and(|r| after_the_end(&r.msg["params"]) && !listed(&r.msg["params"]))
    });
    assert!(
        decided,
        "the sidecar never decided about {run_id}:\n{}",
        lsp.stderr()
    );
    lsp.all_with("slipway/runFinished", |p| p["runId"] == run_id)
        .len()
}

fn wait_for(path: &Path) {
    assert!(
        wait_until(DEADLINE, || path.exists()),
        "{} never appeared",
        path.display()
    );
}

/// Two sidecars start together at `moment`; returns how many reports of the
/// run each sent.
fn reports_when_started(moment: Moment) -> (usize, usize) {
    let env = TestEnv::new();
    let repo = env.new_repo("repo").canonicalize().expect("canonical");
    let gates = env.path().join("gates");
    std::fs::create_dir_all(&gates).expect("gates dir");
    let (mut run, sidecars) = match moment {
        Moment::Before => {
            let pair = (sidecar(&env, &repo), sidecar(&env, &repo));
            (start_run(&env, &repo, None), pair)
        }
        Moment::Gate(n) => {
            let run = start_run(&env, &repo, Some((n, &gates)));
            wait_for(&gates.join(format!("run-end-{n}.reached")));
            let pair = (sidecar(&env, &repo), sidecar(&env, &repo));
            std::fs::write(gates.join(format!("run-end-{n}.go")), b"").expect("open the gate");
            (run, pair)
        }
        Moment::After => {
            let mut run = start_run(&env, &repo, None);
            assert!(run.wait().expect("run exits").success());
            (run, (sidecar(&env, &repo), sidecar(&env, &repo)))
        }
    };
    assert!(run.wait().expect("run exits").success(), "the run failed");
    mark_after_the_end(&env, &repo);
    let run_id = the_run(&repo);
    let (mut a, mut b) = sidecars;
    let counts = (
        reports_once_decided(&mut a, &run_id),
        reports_once_decided(&mut b, &run_id),
    );
    assert!(
        !repo.join(format!(".slipway/runs/{run_id}.news")).exists(),
        "{moment:?}: an editor was told: the news is gone"
    );
    counts
}

#[test]
fn sidecars_listening_when_a_run_ends_each_report_it() {
    for moment in [Moment::Before, Moment::Gate(1), Moment::Gate(2)] {
        assert_eq!(reports_when_started(moment), (1, 1), "{moment:?}");
    }
}

#[test]
fn of_two_sidecars_started_after_a_run_ended_exactly_one_reports_it() {
    for moment in [Moment::Gate(3), Moment::After] {
        let (a, b) = reports_when_started(moment);
        assert_eq!(a + b, 1, "{moment:?}: {a} and {b}");
    }
}

#[test]
fn a_later_sidecar_does_not_report_a_run_again() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo").canonicalize().expect("canonical");
    let mut run = start_run(&env, &repo, None);
    assert!(run.wait().expect("run exits").success());
    mark_after_the_end(&env, &repo);
    let run_id = the_run(&repo);
    let mut first = sidecar(&env, &repo);
    assert_eq!(reports_once_decided(&mut first, &run_id), 1);
    let exit = first.shutdown_and_exit(DEADLINE);
    assert_eq!(exit.and_then(|e| e.code()), Some(0));
    let mut second = sidecar(&env, &repo);
    assert_eq!(reports_once_decided(&mut second, &run_id), 0);
}

#[test]
fn a_run_watched_in_a_terminal_is_no_news_for_the_editors() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo").canonicalize().expect("canonical");
    let mut listening = sidecar(&env, &repo);
    let mut argv = vec![env!("CARGO_BIN_EXE_slipway").to_owned()];
    argv.extend(run_argv(&env));
    let mut terminal = Pty::spawn(&argv, &repo, &env.envs());
    assert!(
        terminal.wait_for(DEADLINE, |screen| screen.contains("completed")),
        "the terminal shows the result:\n{}",
        terminal.screen()
    );
    assert!(wait_until(DEADLINE, || !terminal.running()));
    mark_after_the_end(&env, &repo);
    let run_id = the_run(&repo);
    let record: PathBuf = repo.join(format!(".slipway/runs/{run_id}.json"));
    let record: Value =
        serde_json::from_slice(&std::fs::read(record).expect("record")).expect("json");
    assert_eq!(record["watched"], true, "{record}");
    assert_eq!(
        reports_once_decided(&mut listening, &run_id),
        0,
        "the editor open meanwhile"
    );
    let mut later = sidecar(&env, &repo);
    assert_eq!(
        reports_once_decided(&mut later, &run_id),
        0,
        "an editor started later"
    );
}

/// A sidecar whose client confirms each run's end it has shown
/// (`confirmsSeen`), its first look at the repository done.
fn confirming_sidecar(env: &TestEnv, repo: &Path) -> Lsp {
    let mut lsp = Lsp::spawn(env, repo);
    let answer = lsp.request(
        "initialize",
        serde_json::json!({
            "processId": std::process::id(),
            "rootUri": null,
            "capabilities": { "window": { "workDoneProgress": true } },
            "workspaceFolders": [{ "uri": file_uri(repo), "name": "repo" }],
            "initializationOptions": { "confirmsSeen": true },
        }),
    );
    assert!(answer.get("error").is_none(), "{answer}");
    lsp.notify("initialized", serde_json::json!({}));
    lsp.expect_notification("slipway/status", |_| true, DEADLINE, "the first look");
    lsp
}

#[test]
fn a_client_gone_before_showing_a_run_leaves_it_to_the_next_editor() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo").canonicalize().expect("canonical");
    // A window that is gone while its extension host lingers: its sidecar
    // reports the run, and its client never confirms having shown it.
    let mut lingering = confirming_sidecar(&env, &repo);
    let mut run = start_run(&env, &repo, None);
    assert!(run.wait().expect("run exits").success());
    mark_after_the_end(&env, &repo);
    let run_id = the_run(&repo);
    assert_eq!(reports_once_decided(&mut lingering, &run_id), 1);
    // The new window's sidecar waits: the news is still held.
    let mut reopened = confirming_sidecar(&env, &repo);
    let first = reopened
        .all_with("slipway/status", |_| true)
        .pop()
        .expect("a first status");
    assert!(
        status_runs(&first.msg["params"])
            .iter()
            .any(|r| r["runId"] == run_id.as_str()),
        "still undecided while another sidecar holds the news: {}",
        first.msg
    );
    assert!(
        reopened
            .all_with("slipway/runFinished", |_| true)
            .is_empty()
    );
    // The lingering extension host is killed: the new window hears it.
    lingering.kill();
    let told = reopened.expect_notification(
        "slipway/runFinished",
        |p| p["runId"] == run_id.as_str(),
        DEADLINE,
        "the run the gone window never showed",
    );
    assert_eq!(told.msg["params"]["status"], "completed");
    let seen = reopened.ok("slipway.seen", serde_json::json!({ "runIds": [run_id] }));
    assert_eq!(seen["held"], 1, "{seen}");
    assert!(!repo.join(format!(".slipway/runs/{run_id}.news")).exists());
    let mut later = sidecar(&env, &repo);
    assert_eq!(
        reports_once_decided(&mut later, &run_id),
        0,
        "shown once is shown"
    );
}
