//! Runs in the `docker` sandbox, end to end through the CLI, against the real
//! engine and the local test image (`bash scripts/docker-setup.sh`). The agent
//! is a script run inside the container. Nothing is skipped: a missing engine
//! fails with a message that says how to start one.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::*;

use crate::common::lsp;

const IMAGE: &str = "slipway-test:latest";

/// Containers labelled with this run's id, running or not.
fn containers_of(run_id: &str) -> Vec<String> {
    let out = Command::new("docker")
        .args([
            "ps",
            "-aq",
            "--filter",
            &format!("label=slipway.run={run_id}"),
        ])
        .output()
        .expect("docker ps");
    // A failed listing would read as "no containers left".
    assert!(
        out.status.success(),
        "docker ps failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

fn docker_run(env: &TestEnv, repo: &Path, extra: &[&str], script: &str) -> std::process::Output {
    let mut args = vec![
        "--json",
        "run",
        "--sandbox",
        "docker",
        "--image",
        IMAGE,
        "--network",
        "none",
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "sh", "-c", script]);
    env.slipway(repo, &args)
}

fn ok_json(out: &std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "run failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("result json")
}

const COMMIT_TWICE: &str = "set -e\n\
    echo one >> agent.txt; git add agent.txt; git commit -qm 'agent: first'\n\
    echo two >> agent.txt; git commit -qam 'agent: second'\n";

fn rev_list(env: &TestEnv, repo: &Path, range: &str) -> Vec<String> {
    env.git(repo, &["rev-list", "--reverse", range])
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_container_agent_commits_twice_under_each_strategy() {
    require_docker_image();
    let env = TestEnv::new();
    let repo = env.new_repo("repo");

    // merge-to-head: commits arrive on main, the temp branch and worktree go away.
    let base = env.rev(&repo, "HEAD");
    let result = ok_json(&docker_run(
        &env,
        &repo,
        &["--strategy", "merge-to-head"],
        COMMIT_TWICE,
    ));
    assert_eq!(
        commit_shas(&result),
        rev_list(&env, &repo, &format!("{base}..main"))
    );
    assert_eq!(commit_shas(&result).len(), 2);
    assert_eq!(env.local_branches(&repo), vec!["main".to_owned()]);
    assert!(
        containers_of(s(&result, "runId")).is_empty(),
        "the container is gone"
    );

    // branch: commits land on the named branch; the host branch stays.
    let base = env.rev(&repo, "HEAD");
    let result = ok_json(&docker_run(
        &env,
        &repo,
        &["--branch", "agent/docker"],
        COMMIT_TWICE,
    ));
    assert_eq!(
        commit_shas(&result),
        rev_list(&env, &repo, &format!("{base}..agent/docker"))
    );
    assert_eq!(env.rev(&repo, "main"), base);

    // head: commits land straight in the host checkout.
    let result = ok_json(&docker_run(
        &env,
        &repo,
        &["--strategy", "head"],
        COMMIT_TWICE,
    ));
    assert_eq!(
        commit_shas(&result),
        rev_list(&env, &repo, &format!("{base}..main"))
    );
    assert_eq!(env.porcelain(&repo), "");
}

#[test]
fn files_the_agent_creates_belong_to_the_host_user() {
    require_docker_image();
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let result = ok_json(&docker_run(
        &env,
        &repo,
        &["--branch", "owner"],
        "echo x > made-in-container.txt\n",
    ));
    use std::os::unix::fs::MetadataExt;
    let meta =
        std::fs::metadata(Path::new(s(&result, "worktreePath")).join("made-in-container.txt"))
            .expect("file");
    // SAFETY: getuid/getgid have no preconditions.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    assert_eq!((meta.uid(), meta.gid()), (uid, gid));
}

#[test]
fn idle_timeout_completion_grace_and_cancel_leave_no_container_behind() {
    require_docker_image();
    let env = TestEnv::new();
    let repo = env.new_repo("repo");

    let out = docker_run(
        &env,
        &repo,
        &["--strategy", "merge-to-head", "--idle-timeout", "1"],
        "echo draft > draft.txt; echo thinking; sleep 300", // allow-sleep: the agent stalls until the idle timeout ends it
    );
    assert!(!out.status.success());
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(result["status"], "timedOut");
    assert!(
        Path::new(s(&result, "preservedWorktreePath"))
            .join("draft.txt")
            .exists()
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(s(&result, "preservedWorktreePath")),
        "the error names the worktree: {stderr}"
    );
    assert!(containers_of(s(&result, "runId")).is_empty());

    // The agent would go on after its stall: the grace period ends it first.
    let result = ok_json(&docker_run(
        &env,
        &repo,
        &["--branch", "grace", "--completion-grace", "1"],
        "sleep 300 & echo '<promise>COMPLETE</promise>'; sleep 300; echo late > late.txt", // allow-sleep: the agent stalls after its signal until the grace period ends it
    ));
    assert_eq!(result["status"], "completed");
    assert_eq!(result["completionSignal"], "<promise>COMPLETE</promise>");
    assert!(
        !Path::new(s(&result, "worktreePath"))
            .join("late.txt")
            .exists(),
        "the agent ran past its completion grace"
    );
    assert!(containers_of(s(&result, "runId")).is_empty());

    let child = env
        .slipway_cmd(&repo)
        .args([
            "--json",
            "run",
            "--run-id",
            "run-2-dc0cce",
            "--sandbox",
            "docker",
            "--image",
            IMAGE,
            "--network",
            "none",
            "--branch",
            "cancelme",
            "--",
            "sh",
            "-c",
            "echo started; sleep 300", // allow-sleep: the agent stalls until the test cancels it
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let log = repo.join(".slipway/logs/run-2-dc0cce.log");
    assert!(
        lsp::wait_until(EVENT_DEADLINE, || std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("started")),
        "the agent never started"
    );
    // SAFETY: signalling the child we spawned.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let out = child.wait_with_output().expect("wait");
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(result["status"], "cancelled");
    assert!(
        containers_of("run-2-dc0cce").is_empty(),
        "cancel removes the container"
    );
}

#[test]
fn sandbox_hooks_run_inside_the_container_and_host_hooks_on_the_host() {
    require_docker_image();
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let host_marker = env.path().join("host-hook-ran");
    let out = docker_run(
        &env,
        &repo,
        &[
            "--branch",
            "hooks",
            "--on-worktree-ready",
            &format!("touch '{}'", host_marker.display()),
            "--on-sandbox-ready",
            "echo inside > /tmp/sandbox-hook-ran",
        ],
        "cat /tmp/sandbox-hook-ran",
    );
    let result = ok_json(&out);
    let log = std::fs::read_to_string(s(&result, "logFile")).expect("log");
    assert!(
        log.contains("inside"),
        "the agent saw the sandbox hook's file:\n{log}"
    );
    assert!(host_marker.exists(), "the host hook ran on the host");

    let out = docker_run(
        &env,
        &repo,
        &[
            "--branch",
            "hooks2",
            "--on-sandbox-ready",
            "echo 'no such tool' >&2; exit 9",
        ],
        "true",
    );
    assert!(!out.status.success());
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(result["error"]["kind"], "hookFailed");
    assert!(s(&result["error"], "message").contains("no such tool"));
    assert!(containers_of(s(&result, "runId")).is_empty());
}

/// What the container's cgroup allows, read from inside (cgroup v2 or v1).
const READ_LIMITS: &str = "set -e\n\
    m=$(cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes)\n\
    p=$(cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max)\n\
    printf '%s %s\\n' \"$m\" \"$p\" > limits.txt\n\
    git add limits.txt; git commit -qm limits\n";

fn limits_seen(env: &TestEnv, repo: &Path, extra: &[&str]) -> (String, String) {
    let mut args = vec!["--branch", extra[0]];
    args.extend_from_slice(&extra[1..]);
    ok_json(&docker_run(env, repo, &args, READ_LIMITS));
    let text = env.git(repo, &["show", &format!("{}:limits.txt", extra[0])]);
    let mut parts = text.split_whitespace().map(str::to_owned);
    (
        parts.next().expect("memory limit"),
        parts.next().expect("pids limit"),
    )
}

#[test]
fn containers_get_the_memory_and_process_limits_asked_for_and_bounded_defaults() {
    require_docker_image();
    let env = TestEnv::new();
    let repo = env.new_repo("repo");

    let (memory, pids) = limits_seen(
        &env,
        &repo,
        &["limits/asked", "--memory", "256m", "--pids-limit", "100"],
    );
    assert_eq!((memory.as_str(), pids.as_str()), ("268435456", "100"));

    // Unset: half the machine's memory and 4096 processes, never unbounded.
    let (memory, pids) = limits_seen(&env, &repo, &["limits/default"]);
    assert_eq!(pids, "4096");
    let total = std::fs::read_to_string("/proc/meminfo")
        .expect("meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("MemTotal")
        * 1024;
    let memory: u64 = memory.parse().expect("a number, not `max`");
    assert!(
        memory <= total / 2 + 4096 && memory >= total / 2 - (1 << 20),
        "default memory limit {memory} is not half of {total}"
    );

    // A size that is no size is refused before anything starts.
    let out = docker_run(
        &env,
        &repo,
        &["--branch", "limits/bad", "--memory", "lots"],
        "true",
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("512m"),
        "the error says how to write a size: {stderr}"
    );
    assert!(!env.local_branches(&repo).contains(&"limits/bad".to_owned()));
}

/// The parent of the agent's process as the agent sees it: the container's
/// init (pid 1) when the agent is the container's own process, none (0) for
/// an exec into a running container.
fn agent_parent(env: &TestEnv, repo: &Path, extra: &[&str]) -> String {
    // `sh` builtins only: the test image has no awk.
    let script = "while read -r k v; do [ \"$k\" = PPid: ] && echo \"$v\" > parent.txt; done < /proc/$$/status; exit 0\n";
    let result = ok_json(&docker_run(env, repo, extra, script));
    std::fs::read_to_string(Path::new(s(&result, "worktreePath")).join("parent.txt"))
        .expect("the agent wrote its parent")
        .trim()
        .to_owned()
}

#[test]
fn an_agent_alone_in_its_run_is_the_containers_own_process_and_with_hooks_an_exec() {
    require_docker_image();
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    assert_eq!(
        agent_parent(&env, &repo, &["--branch", "alone"]),
        "1",
        "the agent was not started as the container's process (under its init)"
    );
    // A sandbox hook runs first in the same container: the agent is an exec then.
    assert_eq!(
        agent_parent(
            &env,
            &repo,
            &["--branch", "hooked", "--on-sandbox-ready", "true"]
        ),
        "0",
        "with a sandbox hook the agent should be an exec into the running container"
    );
}
