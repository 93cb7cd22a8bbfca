//! Branch locks under real concurrency: several `slipway` processes at once,
//! stale locks left by dead processes, and locks held by a live one
//! (DESIGN.md §2 "Worktrees", Concurrency).

use crate::common;
use common::*;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};

use serde_json::Value;

fn canon(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|e| panic!("canonicalize {}: {e}", p.display()))
}

/// Paths `git worktree list --porcelain` registers, the host's included.
fn git_worktree_paths(env: &TestEnv, repo: &Path) -> Vec<PathBuf> {
    env.git(repo, &["worktree", "list", "--porcelain"])
        .lines()
        .filter_map(|l| l.strip_prefix("worktree ").map(PathBuf::from))
        .collect()
}

fn list(env: &TestEnv, repo: &Path) -> Vec<Value> {
    let v = env.slipway_json(repo, &["worktree", "list"]);
    v["worktrees"].as_array().expect("worktrees array").clone()
}

/// Starts `slipway --json worktree create --branch BRANCH` without waiting.
fn spawn_create(env: &TestEnv, repo: &Path, branch: &str) -> Child {
    env.slipway_cmd(repo)
        .args(["--json", "worktree", "create", "--branch", branch])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn slipway")
}

/// The JSON error a failed `--json` invocation printed on stderr.
fn error_of(out: &Output) -> Value {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("{\"error\""))
        .unwrap_or_else(|| panic!("no JSON error on stderr:\n{stderr}"));
    let v: Value = serde_json::from_str(line).expect("error JSON");
    v["error"].clone()
}

fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON on stdout ({e}):\n{}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The pid of a process that has already exited.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true")
        .spawn()
        .expect("spawn true");
    let pid = child.id();
    child.wait().expect("wait true");
    pid
}

/// Another process holding a branch lock the way a run does (an advisory lock
/// on the lock file, its pid written inside) until it is dropped. Not this
/// process: a lock taken here would stay held, after it is let go, by any
/// child another test is forking at that moment, until that child execs.
struct LockHolder(Child);

impl LockHolder {
    fn take(lock: &Path) -> LockHolder {
        let script = r#"exec 9<>"$1" && flock -n 9 && printf '{"pid":%d,"branch":"held","time":1}' $$ > "$1" && echo locked && exec sleep 600"#; // allow-sleep: the holder keeps the lock until the test drops it
        let mut child = std::process::Command::new("sh")
            .args(["-c", script, "sh"])
            .arg(lock)
            .stdout(Stdio::piped())
            .spawn()
            .expect("sh runs (flock(1) from util-linux holds the lock)");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
            &mut line,
        )
        .expect("read from the holder");
        assert_eq!(line.trim(), "locked", "the holder could not take the lock");
        LockHolder(child)
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for LockHolder {
    fn drop(&mut self) {
        // The kernel drops the lock as the process exits, before `wait` returns.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Learns a branch's lock file by creating and closing a worktree for it.
fn lock_file_for(env: &TestEnv, repo: &Path, branch: &str) -> PathBuf {
    let created = env.slipway_json(repo, &["worktree", "create", "--branch", branch]);
    let id = s(&created, "id").to_owned();
    let lock = repo.join(".slipway/locks").join(format!("{id}.lock"));
    assert!(
        lock.is_file(),
        "no lock file at {} after a create",
        lock.display()
    );
    let closed = env.slipway_json(repo, &["worktree", "close", &id]);
    assert_eq!(s(&closed, "outcome"), "removed", "{closed}");
    lock
}

#[test]
fn creates_on_different_branches_at_once_all_succeed() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    let branches: Vec<String> = (1..=8).map(|i| format!("b{i}")).collect();

    let children: Vec<Child> = branches
        .iter()
        .map(|b| spawn_create(&env, &repo, b))
        .collect();
    let outputs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().expect("wait slipway"))
        .collect();

    let failures: Vec<String> = branches
        .iter()
        .zip(&outputs)
        .filter(|(_, out)| !out.status.success())
        .map(|(b, out)| format!("{b}: {}", String::from_utf8_lossy(&out.stderr).trim()))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of 8 concurrent creates on distinct branches failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let mut paths = BTreeSet::new();
    for (branch, out) in branches.iter().zip(&outputs) {
        let v = stdout_json(out);
        assert_eq!(s(&v, "branch"), branch);
        let path = canon(Path::new(s(&v, "path")));
        assert!(path.is_dir(), "{} missing", path.display());
        assert_eq!(
            env.git(&path, &["symbolic-ref", "HEAD"]),
            format!("refs/heads/{branch}")
        );
        paths.insert(path);
    }
    assert_eq!(paths.len(), 8, "directories collided: {paths:?}");

    let registered = git_worktree_paths(&env, &repo);
    assert_eq!(registered.len(), 9, "{registered:?}");
    for p in &paths {
        assert!(
            registered.contains(p),
            "{} not registered: {registered:?}",
            p.display()
        );
    }

    let l = list(&env, &repo);
    assert_eq!(l.len(), 8, "records missing: {l:?}");
    let listed: BTreeSet<String> = l.iter().map(|e| s(e, "branch").to_owned()).collect();
    let expected: BTreeSet<String> = branches.iter().cloned().collect();
    assert_eq!(listed, expected);
    assert!(l.iter().all(|e| s(e, "health") == "ok"), "{l:?}");
    assert_eq!(env.porcelain(&repo), "");
}

#[test]
fn creates_on_one_new_branch_at_once_yield_one_worktree() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    let rounds = 5;
    let mut in_use_seen = 0;
    // branchInUse answers that do not name the holder's pid.
    let mut unnamed: Vec<String> = Vec::new();

    for round in 0..rounds {
        let branch = format!("race-{round}");
        let children: Vec<Child> = (0..3).map(|_| spawn_create(&env, &repo, &branch)).collect();
        let pids: Vec<u32> = children.iter().map(Child::id).collect();
        let outputs: Vec<Output> = children
            .into_iter()
            .map(|c| c.wait_with_output().expect("wait slipway"))
            .collect();

        let mut paths = BTreeSet::new();
        for (pid, out) in pids.iter().zip(&outputs) {
            if out.status.success() {
                let v = stdout_json(out);
                assert_eq!(s(&v, "branch"), branch);
                paths.insert(canon(Path::new(s(&v, "path"))));
                continue;
            }
            let err = error_of(out);
            assert_eq!(s(&err, "kind"), "branchInUse", "unexpected error: {err}");
            in_use_seen += 1;
            let message = s(&err, "message");
            let holder_named = pids
                .iter()
                .filter(|p| *p != pid)
                .any(|p| message.contains(&format!("process {p} ")));
            if !holder_named {
                unnamed.push(format!(
                    "round {round}, pid {pid} (others {pids:?}): {message}"
                ));
            }
        }
        assert!(!paths.is_empty(), "no create succeeded in round {round}");
        assert_eq!(paths.len(), 1, "several worktrees for {branch}: {paths:?}");

        let registered = git_worktree_paths(&env, &repo);
        let path = paths.into_iter().next().unwrap();
        assert!(registered.contains(&path), "{registered:?}");
        let for_branch: Vec<Value> = list(&env, &repo)
            .into_iter()
            .filter(|e| s(e, "branch") == branch)
            .collect();
        assert_eq!(for_branch.len(), 1, "{for_branch:?}");
        assert_eq!(s(&for_branch[0], "health"), "ok");
    }
    assert_eq!(git_worktree_paths(&env, &repo).len(), 1 + rounds);
    eprintln!(
        "branchInUse observed {in_use_seen} time(s) over {rounds} rounds of 3 creates, {} without the holder's pid",
        unnamed.len()
    );
    assert!(
        unnamed.is_empty(),
        "{} of {in_use_seen} branchInUse errors do not name the holder's pid:\n{}",
        unnamed.len(),
        unnamed.join("\n")
    );
}

#[test]
fn a_lock_left_by_a_dead_process_is_taken_over() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    let lock = lock_file_for(&env, &repo, "stale");

    let pid = dead_pid();
    std::fs::write(
        &lock,
        format!("{{\"pid\":{pid},\"branch\":\"stale\",\"time\":1}}"),
    )
    .unwrap();

    let created = env.slipway_json(&repo, &["worktree", "create", "--branch", "stale"]);
    assert_eq!(created["reused"], Value::Bool(false));
    let path = PathBuf::from(s(&created, "path"));
    assert!(path.is_dir());
    assert_eq!(
        env.git(&path, &["symbolic-ref", "HEAD"]),
        "refs/heads/stale"
    );
    assert_eq!(list(&env, &repo).len(), 1);
}

#[test]
fn a_lock_held_by_a_live_process_blocks_create_and_close() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    let lock = lock_file_for(&env, &repo, "held");

    // Create is refused at once, naming the holder.
    let held = LockHolder::take(&lock);
    let holder = held.pid();
    let (_, err) = env.slipway_fail(&repo, &["worktree", "create", "--branch", "held"]);
    assert_eq!(s(&err, "kind"), "branchInUse", "{err}");
    assert!(
        s(&err, "message").contains(&format!("process {holder} ")),
        "does not name pid {holder}: {err}"
    );
    assert!(list(&env, &repo).is_empty(), "created despite the lock");
    assert_eq!(git_worktree_paths(&env, &repo).len(), 1);
    drop(held);

    let created = env.slipway_json(&repo, &["worktree", "create", "--branch", "held"]);
    let path = PathBuf::from(s(&created, "path"));
    assert!(path.is_dir());

    // Close is refused too while the branch is held.
    let held = LockHolder::take(&lock);
    let (_, err) = env.slipway_fail(&repo, &["worktree", "close", "held"]);
    assert_eq!(s(&err, "kind"), "branchInUse", "{err}");
    assert!(path.is_dir(), "closed despite the lock");
    drop(held);

    let closed = env.slipway_json(&repo, &["worktree", "close", "held"]);
    assert_eq!(s(&closed, "outcome"), "removed", "{closed}");
    assert!(!path.exists());
}
