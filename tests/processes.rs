//! The agent's whole process tree dies on idle timeout, cancel and completion
//! grace (checked by pid), and nothing keeps running after a run.

use crate::common;
use crate::common::lsp::{pid_alive, wait_until};

use std::path::{Path, PathBuf};

use common::*;

fn read_pids(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .split_whitespace()
        .map(|p| p.parse().expect("pid"))
        .collect()
}

/// The three pids the agent recorded (itself, its child, its grandchild).
fn recorded_tree(file: &Path) -> Vec<u32> {
    let pids = read_pids(file);
    assert_eq!(pids.len(), 3, "the agent recorded its tree: {pids:?}");
    pids
}

fn wait_dead(pids: &[u32]) {
    let dead = wait_until(EVENT_DEADLINE, || !pids.iter().any(|p| pid_alive(*p)));
    let survivors: Vec<u32> = pids.iter().copied().filter(|p| pid_alive(*p)).collect();
    assert!(
        dead,
        "processes of the agent's tree still alive: {survivors:?}"
    );
}

/// An agent that starts a background child holding a grandchild, records the
/// three pids before it goes on (the grandchild's comes back through a fifo),
/// then `tail`.
fn tree_agent(env: &TestEnv, pids: &Path, tail: &str) -> PathBuf {
    let p = pids.display();
    let script = [
        format!("echo $$ >> '{p}'\nmkfifo '{p}.fifo'\n"),
        format!("(sleep 300 & echo $! > '{p}.fifo'; wait) &\n"), // allow-sleep: the grandchild stalls until the run ends the tree
        format!("echo $! >> '{p}'\nread grandchild < '{p}.fifo'; echo $grandchild >> '{p}'\n"),
        format!("echo started\n{tail}\n"),
    ]
    .concat();
    env.script("tree", &script)
}

#[test]
fn idle_timeout_kills_the_whole_tree() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let pids = env.path().join("pids");
    let agent = tree_agent(&env, &pids, "sleep 300"); // allow-sleep: the agent stalls until the idle timeout ends it
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
    // Had the timeout not fired, the agent would have ended on its own: completed.
    assert_eq!(result["status"], "timedOut");
    wait_dead(&recorded_tree(&pids));
}

#[test]
fn completion_grace_ends_the_iteration_successfully_and_kills_the_tree() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let pids = env.path().join("pids");
    let agent = tree_agent(&env, &pids, "echo '<promise>COMPLETE</promise>'\nsleep 300"); // allow-sleep: the agent stalls after its signal until the grace period ends it
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
    wait_dead(&recorded_tree(&pids));
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
    wait_dead(&recorded_tree(&pids));
}

#[test]
fn cancel_by_signal_kills_the_tree_and_reports_cancelled() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let pids = env.path().join("pids");
    let agent = tree_agent(&env, &pids, "echo 'wip' > wip.txt\nsleep 300"); // allow-sleep: the agent stalls until the test cancels it
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
    // Cancel once the work the run must keep is on disk.
    let worktrees = repo.join(".slipway/worktrees");
    assert!(
        wait_until(EVENT_DEADLINE, || std::fs::read_dir(&worktrees)
            .map(|d| d.flatten().any(|e| e.path().join("wip.txt").exists()))
            .unwrap_or(false)),
        "the agent never wrote its work"
    );
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
    wait_dead(&recorded_tree(&pids));
}
