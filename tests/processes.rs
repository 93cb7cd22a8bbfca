//! The agent's whole process tree dies on idle timeout, cancel and completion
//! grace (checked by pid), and nothing keeps running after a run.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::*;

fn alive(pid: i32) -> bool {
    // A zombie still answers kill(0); read its state instead.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

fn read_pids(file: &Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .split_whitespace()
        .map(|p| p.parse().expect("pid"))
        .collect()
}

fn wait_dead(pids: &[i32]) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|p| alive(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survivors: Vec<i32> = pids.iter().copied().filter(|p| alive(*p)).collect();
    assert!(
        survivors.is_empty(),
        "processes of the agent's tree still alive: {survivors:?}"
    );
}

/// An agent that starts a grandchild and a background child, records every pid, then `tail`.
fn tree_agent(env: &TestEnv, pids: &Path, tail: &str) -> PathBuf {
    env.script(
        "tree",
        &format!(
            "echo $$ >> '{p}'\n\
             sh -c 'echo $$ >> \"{p}\"; sleep 300' &\n\
             (sleep 300 & echo $! >> '{p}'; wait) &\n\
             echo started\n{tail}\n",
            p = pids.display()
        ),
    )
}

#[test]
fn idle_timeout_kills_the_whole_tree() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let pids = env.path().join("pids");
    let agent = tree_agent(&env, &pids, "sleep 300");
    let started = Instant::now();
    let (result, err) = env.slipway_fail(
        &repo,
        &[
            "run",
            "--branch",
            "idle",
            "--idle-timeout",
            "1",
            "--",
            agent.to_str().expect("utf8"),
        ],
    );
    assert_eq!(err["kind"], "idleTimeout");
    assert!(
        s(&err, "message").contains("idle"),
        "the error names the timeout: {err}"
    );
    assert_eq!(result["status"], "timedOut");
    assert!(started.elapsed() < Duration::from_secs(30));
    let pids = read_pids(&pids);
    assert_eq!(pids.len(), 3, "the agent recorded its tree");
    wait_dead(&pids);
}

#[test]
fn completion_grace_ends_the_iteration_successfully_and_kills_the_tree() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let pids = env.path().join("pids");
    let agent = tree_agent(&env, &pids, "echo '<promise>COMPLETE</promise>'\nsleep 300");
    let result = env.slipway_json(
        &repo,
        &[
            "run",
            "--branch",
            "grace",
            "--completion-grace",
            "1",
            "--idle-timeout",
            "120",
            "--",
            agent.to_str().expect("utf8"),
        ],
    );
    assert_eq!(result["status"], "completed");
    assert_eq!(result["completionSignal"], "<promise>COMPLETE</promise>");
    wait_dead(&read_pids(&pids));
}

#[test]
fn background_children_do_not_outlive_a_finished_iteration() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let pids = env.path().join("pids");
    let agent = tree_agent(&env, &pids, "exit 0");
    let result = env.slipway_json(
        &repo,
        &[
            "run",
            "--branch",
            "strays",
            "--",
            agent.to_str().expect("utf8"),
        ],
    );
    assert_eq!(result["status"], "completed");
    wait_dead(&read_pids(&pids));
}

#[test]
fn cancel_by_signal_kills_the_tree_and_reports_cancelled() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let pids = env.path().join("pids");
    let agent = tree_agent(&env, &pids, "echo 'wip' > wip.txt\nsleep 300");
    let child = env
        .slipway_cmd(&repo)
        .args([
            "--json",
            "run",
            "--strategy",
            "merge-to-head",
            "--",
            agent.to_str().expect("utf8"),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn slipway");
    let deadline = Instant::now() + Duration::from_secs(20);
    while read_pids(&pids).len() < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    // SAFETY: signalling the child we spawned.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let out = child.wait_with_output().expect("wait");
    assert!(!out.status.success());
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("result json");
    assert_eq!(result["status"], "cancelled");
    assert_eq!(result["error"]["kind"], "cancelled");
    let preserved = Path::new(s(&result, "preservedWorktreePath"));
    assert!(
        preserved.join("wip.txt").exists(),
        "the cancelled run's work is kept"
    );
    wait_dead(&read_pids(&pids));
}
