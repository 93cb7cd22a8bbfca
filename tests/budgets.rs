//! Budgets: a run that reaches its token or duration budget has its agent
//! stopped as a timeout stops it, keeps the commits it made, and says which
//! budget ended it; from the command line, from `slipway.toml` and from the
//! protocol.

use crate::common;
use crate::common::lsp;

use std::path::Path;

use common::*;
use lsp::*;
use serde_json::{Value, json};

/// Shell lines that commit `name.txt`.
fn commit(name: &str) -> String {
    format!(
        "echo '{name}' > '{name}.txt' && git add '{name}.txt' && git commit -q -m 'agent: {name}' || exit 1\n"
    )
}

/// Shell lines that wait on a fifo nobody writes: an agent that would run forever.
fn hang(env: &TestEnv) -> String {
    let fifo = env.path().join("never.fifo");
    let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("no NUL");
    // SAFETY: a valid NUL-terminated path; mkfifo has no other preconditions.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0, "mkfifo");
    format!("exec 9<>'{}'\nread -r _ <&9\n", fifo.display())
}

/// An agent that commits `first.txt`, then runs forever.
fn commit_then_hang(env: &TestEnv) -> String {
    commit("first") + &hang(env)
}

fn assert_stopped_by(result: &Value, budget: &str) {
    assert_eq!(result["status"], "timedOut", "{result}");
    assert_eq!(result["error"]["kind"], "budgetReached", "{result}");
    assert_eq!(result["budget"]["budget"], budget, "{result}");
    let message = s(&result["error"], "message");
    assert!(message.contains(&format!("{budget} budget")), "{message}");
    assert!(message.contains("work is kept"), "{message}");
}

fn branch_subjects(env: &TestEnv, repo: &Path, branch: &str) -> String {
    env.git(repo, &["log", "--format=%s", &format!("main..{branch}")])
}

/// `slipway --json run --branch agent/slow EXTRA -- AGENT` with an agent
/// that commits, then runs forever: whether it succeeded, its result and log.
fn run_forever(env: &TestEnv, repo: &Path, extra: &[&str]) -> (bool, Value, String) {
    let agent = env.script("forever", &commit_then_hang(env));
    let mut args = vec!["--json", "run", "--branch", "agent/slow"];
    args.extend_from_slice(extra);
    args.extend(["--", agent.to_str().expect("utf8 path")]);
    env.run_result(repo, &args)
}

#[test]
fn a_run_past_its_duration_budget_is_stopped_and_keeps_its_commits() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let (ok, result, log) = run_forever(&env, &repo, &["--max-duration", "1s"]);
    assert!(!ok, "a budget ends the run as a timeout does: {result}");
    assert_stopped_by(&result, "duration");
    assert_eq!(result["budget"]["limit"], 1.0, "{result}");
    assert_eq!(commit_shas(&result).len(), 1, "{result}");
    assert_eq!(branch_subjects(&env, &repo, "agent/slow"), "agent: first");
    assert!(log.contains("budget reached"), "{log}");
}

#[test]
fn a_bad_duration_budget_is_a_clear_error() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let out = env.slipway(&repo, &["run", "--max-duration", "soon", "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "a wrong command line");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("like 90s, 30m or 2h"), "{stderr}");
    let (_, error) = env.slipway_fail(&repo, &["run", "--max-cost=-1", "--", "true"]);
    assert_eq!(error["kind"], "invalidParams", "{error}");
    assert!(s(&error, "message").contains("US dollars"), "{error}");
}

/// A mistake in the user's price table is found before the run makes
/// anything: the error names the file and what to write, and no branch or
/// worktree is left.
#[test]
fn a_bad_price_table_fails_the_run_before_anything_is_made() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let config = env.home().join(".config/slipway");
    std::fs::create_dir_all(&config).expect("config dir");
    std::fs::write(config.join("config.toml"), "[prices.codex]\ninput = 1.25\n").expect("config");
    let (_, error) = env.slipway_fail(&repo, &["run", "--branch", "priced", "--", "true"]);
    assert_eq!(error["kind"], "priceConfig", "{error}");
    let message = s(&error, "message");
    assert!(
        message.contains("config.toml") && message.contains("'output' is missing"),
        "{error}"
    );
    let branches = env.git(&repo, &["branch", "--list", "priced"]);
    assert_eq!(branches, "", "a branch was made");
    let listed = env.slipway_json(&repo, &["worktree", "list"]);
    assert_eq!(
        listed["worktrees"].as_array().map(Vec::len),
        Some(0),
        "{listed}"
    );
}

#[test]
fn slipway_toml_sets_the_duration_budget_of_every_run() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    env.commit_file(&repo, "slipway.toml", "max_duration = \"1s\"\n", "config");
    env.trust(&repo);
    let (ok, result, _) = run_forever(&env, &repo, &[]);
    assert!(!ok, "{result}");
    assert_stopped_by(&result, "duration");
    assert_eq!(branch_subjects(&env, &repo, "agent/slow"), "agent: first");
}

#[test]
fn a_run_past_its_token_budget_is_stopped_and_keeps_its_commits() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    // OpenCode's own stream (recorded from the real CLI): a tool call, then
    // the reply's usage, 112 tokens; then the agent would go on forever.
    let recorded = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agents/real/opencode.jsonl"),
    )
    .expect("recording");
    let stream = env.path().join("stream.jsonl");
    std::fs::write(
        &stream,
        recorded.lines().take(4).collect::<Vec<_>>().join("\n") + "\n",
    )
    .expect("stream");
    let agent = env.script(
        "fake-opencode",
        &format!(
            "{}cat '{}'\n{}",
            commit("tokens"),
            stream.display(),
            hang(&env)
        ),
    );
    let mut lsp = Lsp::start(&env, Some(&repo), false);
    let answer = lsp.ok(
        "slipway.run",
        json!({
            "root": repo, "strategy": "branch", "branch": "agent/tokens",
            "agent": {"type": "opencode", "binary": agent}, "prompt": "work",
            "maxTokens": 100,
        }),
    );
    let run_id = s(&answer, "runId").to_owned();
    let finished = lsp.expect_notification(
        "slipway/runFinished",
        |p| p["runId"] == run_id,
        EVENT_DEADLINE,
        "the run stopped by its budget",
    );
    let result = &finished.msg["params"];
    assert_stopped_by(result, "tokens");
    assert_eq!(result["budget"]["limit"], 100.0, "{result}");
    assert_eq!(result["budget"]["used"], 112.0, "{result}");
    assert_eq!(result["usage"]["inputTokens"], 101, "{result}");
    assert_eq!(commit_shas(result).len(), 1, "{result}");
    assert_eq!(
        branch_subjects(&env, &repo, "agent/tokens"),
        "agent: tokens"
    );
}
