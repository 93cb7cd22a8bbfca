//! Several attempts at one prompt (issue 23): a group of runs from one
//! source commit, each on its own branch and worktree, their host git
//! writes queued per repository; checks after the agent; comparing the
//! attempts and landing one.

use crate::common;

use std::path::Path;

use common::*;
use serde_json::Value;

/// An agent that commits a file naming its run.
fn committing_agent(env: &TestEnv) -> String {
    env.script(
        "commit-attempt",
        "printf '%s\\n' \"$SLIPWAY_RUN_ID\" > attempt.txt\n\
         git add attempt.txt\n\
         git commit -q -m \"attempt $SLIPWAY_RUN_ID\"\n",
    )
    .to_str()
    .expect("utf8 path")
    .to_owned()
}

/// Registered worktree paths, the host's included.
fn worktree_paths(env: &TestEnv, repo: &Path) -> Vec<String> {
    env.git(repo, &["worktree", "list", "--porcelain"])
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .map(str::to_owned)
        .collect()
}

fn attempts_of(outcome: &Value) -> Vec<Value> {
    outcome["attempts"].as_array().expect("attempts").clone()
}

#[test]
fn sixteen_attempts_at_once_each_get_a_branch_with_only_their_commit_and_discarding_fifteen_leaves_nothing_behind()
 {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let source = env.rev(&repo, "HEAD");
    let agent = committing_agent(&env);
    let outcome = env.slipway_json(
        &repo,
        &[
            "run",
            "--attempts",
            "16",
            "--branch",
            "try",
            "--prompt",
            "commit",
            "--",
            &agent,
        ],
    );
    assert_eq!(s(&outcome, "sourceCommit"), source);
    let attempts = attempts_of(&outcome);
    let results = outcome["results"].as_array().expect("results");
    assert_eq!(attempts.len(), 16);
    for (n, (attempt, result)) in attempts.iter().zip(results).enumerate() {
        let branch = format!("try/{}", n + 1);
        assert_eq!(s(attempt, "branch"), branch);
        assert_eq!(
            s(result, "status"),
            "completed",
            "attempt {}: {result:#}",
            n + 1
        );
        assert!(
            !result.to_string().contains(".lock"),
            "no lock error or warning: {result:#}"
        );
        // Only its own commit, on the one source commit.
        let log = env.git(
            &repo,
            &["log", "--format=%s", &format!("{source}..{branch}")],
        );
        assert_eq!(log, format!("attempt {}", s(attempt, "runId")), "{branch}");
        assert_eq!(env.rev(&repo, &format!("{branch}~1")), source, "{branch}");
    }
    assert_eq!(worktree_paths(&env, &repo).len(), 17);

    for n in 1..=15 {
        env.slipway_json(&repo, &["discard", &format!("try/{n}"), "--force"]);
    }
    let mut branches = env.local_branches(&repo);
    branches.sort();
    assert_eq!(branches, vec!["main".to_owned(), "try/16".to_owned()]);
    let worktrees = worktree_paths(&env, &repo);
    assert_eq!(worktrees.len(), 2, "{worktrees:?}");
    let kept = slipway_core::worktree::naming::dir_name("try/16");
    assert!(
        worktrees.iter().any(|p| p.ends_with(&kept)),
        "{worktrees:?}"
    );
    let folders: Vec<String> = std::fs::read_dir(repo.join(".slipway/worktrees"))
        .expect("worktrees folder")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.'))
        .collect();
    assert_eq!(
        folders,
        vec![kept],
        "only the kept attempt's worktree folder is left"
    );
}

#[test]
fn a_check_after_the_agent_reports_its_exit_status_and_output_tail_passing_or_failing() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let agent = committing_agent(&env);
    // Passing: the check sees the agent's commit in the checkout.
    let (ok, result, _) = env.run_result(
        &repo,
        &[
            "--json",
            "run",
            "--branch",
            "checked",
            "--check",
            "git log -1 --format=%s; test -f attempt.txt",
            "--prompt",
            "commit",
            "--",
            &agent,
        ],
    );
    assert!(ok, "{result:#}");
    let check = &result["check"];
    assert_eq!(check["passed"], true, "{result:#}");
    assert_eq!(check["exitCode"], 0);
    let run_id = s(&result, "runId");
    assert_eq!(
        check["tail"],
        serde_json::json!([format!("attempt {run_id}")])
    );

    // Failing: 30 lines of output, exit 3; the run still completes with its
    // commit, and the result keeps the last 20 lines.
    let (ok, result, log) = env.run_result(
        &repo,
        &[
            "--json",
            "run",
            "--branch",
            "failing",
            "--check",
            "for i in $(seq 1 30); do echo line $i; done; echo oops >&2; exit 3",
            "--prompt",
            "commit",
            "--",
            &agent,
        ],
    );
    assert!(ok, "a failing check does not fail the run: {result:#}");
    assert_eq!(s(&result, "status"), "completed");
    assert_eq!(result["commits"].as_array().map(Vec::len), Some(1));
    let check = &result["check"];
    assert_eq!(check["passed"], false);
    assert_eq!(check["exitCode"], 3);
    let tail: Vec<&str> = check["tail"]
        .as_array()
        .expect("tail")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(tail.len(), 20, "{tail:?}");
    assert_eq!(tail.first(), Some(&"line 12"));
    assert_eq!(tail.last(), Some(&"oops"));
    assert!(log.contains("[slipway] check failed"), "{log}");

    // For people, a failed check shows its tail.
    let out = env.slipway(
        &repo,
        &[
            "run",
            "--branch",
            "failing-text",
            "--check",
            "echo broken; exit 1",
            "--prompt",
            "commit",
            "--",
            &agent,
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("check failed (exit 1): echo broken; exit 1"),
        "{text}"
    );
    assert!(text.contains("│ broken"), "{text}");
}

#[test]
fn every_attempt_runs_the_check_and_its_result_is_in_the_group() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    // Each attempt's check sees its own branch.
    let agent = committing_agent(&env);
    let outcome = env.slipway_json(
        &repo,
        &[
            "run",
            "--attempts",
            "3",
            "--branch",
            "chk",
            "--check",
            "echo checked $SLIPWAY_SOURCE_BRANCH",
            "--prompt",
            "commit",
            "--",
            &agent,
        ],
    );
    assert_eq!(outcome["check"], "echo checked $SLIPWAY_SOURCE_BRANCH");
    for (n, result) in outcome["results"]
        .as_array()
        .expect("results")
        .iter()
        .enumerate()
    {
        assert_eq!(result["check"]["passed"], true, "{result:#}");
        assert_eq!(
            result["check"]["tail"],
            serde_json::json!([format!("checked chk/{}", n + 1)])
        );
    }
}

#[test]
fn attempts_in_docker_each_run_the_check_in_their_own_container() {
    require_docker_image();
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let outcome = env.slipway_json(
        &repo,
        &[
            "run",
            "--attempts",
            "2",
            "--branch",
            "box",
            "--sandbox",
            "docker",
            "--image",
            TEST_IMAGE,
            "--check",
            "test -f /.dockerenv && cat /etc/hostname",
            "--prompt",
            "commit",
            "--",
            "sh",
            "-c",
            "echo hi > f && git add f && git commit -q -m in-box",
        ],
    );
    let mut hosts = Vec::new();
    for result in outcome["results"].as_array().expect("results") {
        assert_eq!(s(result, "status"), "completed", "{result:#}");
        assert_eq!(result["check"]["passed"], true, "{result:#}");
        hosts.push(
            result["check"]["tail"][0]
                .as_str()
                .expect("hostname")
                .to_owned(),
        );
    }
    assert_ne!(
        hosts[0], hosts[1],
        "each attempt has a container of its own"
    );
    for n in 1..=2 {
        let log = env.git(&repo, &["log", "-1", "--format=%s", &format!("box/{n}")]);
        assert_eq!(log, "in-box");
    }
}

/// Starts a group of `n` attempts on `try/…` whose agent writes `attempt.txt`
/// (attempt 2 also fails the check); returns the group's answer.
fn three_attempts(env: &TestEnv, repo: &Path, extra: &[&str]) -> Value {
    let agent = committing_agent(env);
    let mut args = vec![
        "run",
        "--attempts",
        "3",
        "--check",
        "test \"$SLIPWAY_SOURCE_BRANCH\" != try/2 && echo fine || { echo broken; exit 4; }",
        "--prompt",
        "commit",
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", &agent]);
    // Attempt 2's failing check makes no attempt fail: every one completes.
    env.slipway_json(repo, &args)
}

#[test]
fn the_comparison_lists_each_attempt_with_agent_status_check_changes_and_time() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let outcome = three_attempts(&env, &repo, &["--branch", "try"]);
    let group = s(&outcome, "groupId").to_owned();
    let compared = env.slipway_json(&repo, &["attempts", &group]);
    assert_eq!(s(&compared, "groupId"), group);
    let rows = compared["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 3);
    for (n, row) in rows.iter().enumerate() {
        assert_eq!(row["index"], n + 1);
        assert_eq!(s(row, "agent"), "command");
        assert_eq!(s(row, "status"), "completed");
        assert_eq!(row["commits"], 1);
        assert_eq!(row["filesChanged"], 1);
        assert_eq!(row["linesAdded"], 1);
        assert_eq!(row["linesRemoved"], 0);
        assert!(row["seconds"].is_u64(), "{row:#}");
        assert_eq!(row["branchPresent"], true);
        assert_eq!(row["check"]["passed"], n != 1, "{row:#}");
    }
    assert_eq!(rows[1]["check"]["tail"], serde_json::json!(["broken"]));

    let out = env.slipway(&repo, &["attempts", &group]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("failed (exit 4)"), "{text}");
    assert!(text.contains("try/3"), "{text}");

    let (_, err) = env.slipway_fail(&repo, &["attempts", "att-1-abc"]);
    assert_eq!(s(&err, "kind"), "unknownGroup");
    let (_, err) = env.slipway_fail(&repo, &["attempts", "../x"]);
    assert_eq!(s(&err, "kind"), "invalidParams");
}

#[test]
fn landing_an_attempt_refuses_to_discard_the_others_work_unless_forced() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let outcome = three_attempts(&env, &repo, &["--branch", "try"]);
    let group = s(&outcome, "groupId").to_owned();
    let winner = env.rev(&repo, "try/3");

    // Without force: attempt 3 lands, the others hold commits found nowhere
    // else, so they stay and the answer says why.
    let picked = env.slipway_json_code(&repo, &["attempts", &group, "--land", "3"], 3);
    assert_eq!(picked["index"], 3);
    assert_eq!(
        env.rev(&repo, "main"),
        winner,
        "fast-forwarded to the winner"
    );
    assert_eq!(picked["discarded"], serde_json::json!([]));
    let kept = picked["kept"].as_array().expect("kept");
    assert_eq!(kept.len(), 2);
    for k in kept {
        assert!(s(k, "reason").contains("found on no other branch"), "{k:#}");
    }
    assert_eq!(
        std::fs::read_to_string(repo.join("attempt.txt")).expect("landed file"),
        format!("{}\n", s(&outcome["attempts"][2], "runId"))
    );

    // With force they go: no branch or worktree of theirs is left.
    let again = env.slipway_json(&repo, &["attempts", &group, "--land", "3", "--force"]);
    assert_eq!(again["discarded"], serde_json::json!([1, 2]));
    let mut branches = env.local_branches(&repo);
    branches.sort();
    assert_eq!(branches, vec!["main".to_owned(), "try/3".to_owned()]);
    assert_eq!(worktree_paths(&env, &repo).len(), 2);
    let rows = env.slipway_json(&repo, &["attempts", &group])["rows"].clone();
    assert_eq!(rows[0]["branchPresent"], false);
    assert_eq!(rows[2]["branchPresent"], true);
}

#[test]
fn merge_to_head_attempts_land_nothing_until_the_winner_is_picked() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let before = env.rev(&repo, "main");
    let outcome = three_attempts(&env, &repo, &[]);
    let group = s(&outcome, "groupId").to_owned();
    assert_eq!(s(&outcome, "strategy"), "merge-to-head");
    assert_eq!(s(&outcome, "into"), "main");
    assert_eq!(env.rev(&repo, "main"), before, "nothing lands by itself");
    for (n, attempt) in attempts_of(&outcome).iter().enumerate() {
        assert_eq!(s(attempt, "branch"), format!("slipway/{group}/{}", n + 1));
    }
    let picked = env.slipway_json(&repo, &["attempts", &group, "--land", "1", "--force"]);
    assert_eq!(picked["discarded"], serde_json::json!([1, 2, 3]));
    assert_eq!(
        env.git(&repo, &["log", "-1", "--format=%s", "main"]),
        format!("attempt {}", s(&outcome["attempts"][0], "runId"))
    );
    assert_eq!(env.local_branches(&repo), vec!["main".to_owned()]);
    assert_eq!(worktree_paths(&env, &repo).len(), 1);
}

#[test]
fn the_sidecar_runs_attempts_as_a_group_compares_them_and_lands_one() {
    use common::lsp::{Lsp, command_agent};
    let env = TestEnv::new();
    let repo = env.new_repo("repo").canonicalize().expect("canonical repo");
    let agent = committing_agent(&env);
    let mut lsp = Lsp::start(&env, Some(&repo), false);
    let started = lsp.ok(
        "slipway.run",
        serde_json::json!({
            "root": repo, "strategy": "branch", "branch": "side",
            "agent": command_agent(Path::new(&agent)), "prompt": "commit",
            "attempts": 2, "check": "test -f attempt.txt",
        }),
    );
    let group = s(&started, "groupId").to_owned();
    let run_ids: Vec<String> = started["runIds"]
        .as_array()
        .expect("runIds")
        .iter()
        .map(|v| v.as_str().expect("id").to_owned())
        .collect();
    assert_eq!(run_ids.len(), 2);
    for id in &run_ids {
        let finished = lsp
            .wait_for_notification("slipway/runFinished", |p| p["runId"] == *id, EVENT_DEADLINE)
            .unwrap_or_else(|| panic!("no runFinished for {id}:\n{}", lsp.stderr()));
        assert_eq!(finished.msg["params"]["status"], "completed");
    }
    let compared = lsp.ok(
        "slipway.attempts",
        serde_json::json!({ "root": repo, "groupId": group }),
    );
    let rows = compared["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2);
    for row in rows {
        assert_eq!(s(row, "status"), "completed", "{row:#}");
        assert_eq!(row["check"]["passed"], true);
        assert_eq!(row["filesChanged"], 1);
    }
    let picked = lsp.ok(
        "slipway.landAttempt",
        serde_json::json!({ "root": repo, "groupId": group, "index": 2, "force": true }),
    );
    assert_eq!(picked["discarded"], serde_json::json!([1]));
    assert_eq!(env.rev(&repo, "main"), env.rev(&repo, "side/2"));
    let unknown = lsp.err(
        "slipway.attempts",
        serde_json::json!({ "root": repo, "groupId": "att-1-abc" }),
    );
    assert_eq!(unknown["data"]["kind"], "unknownGroup", "{unknown}");
}

#[test]
fn several_agents_each_get_their_attempts_and_impossible_groups_are_refused() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let agent = committing_agent(&env);
    // Two --agent, two attempts each: four attempts, each agent's together.
    let outcome = env.slipway_json(
        &repo,
        &[
            "run",
            "--agent",
            "command",
            "--agent",
            "command",
            "--attempts",
            "2",
            "--branch",
            "duo",
            "--prompt",
            "commit",
            "--",
            &agent,
        ],
    );
    let attempts = attempts_of(&outcome);
    assert_eq!(attempts.len(), 4);
    for (n, attempt) in attempts.iter().enumerate() {
        assert_eq!(s(attempt, "agent"), "command");
        assert_eq!(s(attempt, "branch"), format!("duo/{}", n + 1));
    }

    let refused = |args: &[&str]| {
        let mut full = vec!["run", "--attempts", "2", "--prompt", "commit"];
        full.extend_from_slice(args);
        full.extend_from_slice(&["--", &agent]);
        let (_, err) = env.slipway_fail(&repo, &full);
        err
    };
    let err = refused(&["--strategy", "head"]);
    assert_eq!(s(&err, "kind"), "invalidParams");
    assert!(s(&err, "message").contains("--branch NAME"), "{err}");
    // `duo` would sit beside `duo/1`: git cannot hold both.
    env.git(&repo, &["branch", "solo"]);
    let err = refused(&["--branch", "solo"]);
    assert_eq!(s(&err, "kind"), "invalidParams");
    assert!(s(&err, "message").contains("'solo' exists"), "{err}");
    let err = refused(&["--branch", "duo"]);
    assert_eq!(s(&err, "kind"), "invalidParams");
    assert!(
        s(&err, "message").contains("'duo/1' exists already"),
        "{err}"
    );
    let out = env.slipway(
        &repo,
        &["run", "--attempts", "65", "--branch", "many", "--", &agent],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("1..=64"));
    // Nothing was made for a refused group.
    assert!(
        !env.local_branches(&repo)
            .iter()
            .any(|b| b.starts_with("solo/"))
    );
}
