//! Safety rule 4 under kill -9: slipway is killed (the process, or its whole
//! process group) at deterministic points of a create (checkout and copy-in),
//! a merge of 1,500 changed files, a close and an import
//! (`SLIPWAY_TEST_CRASH=<step>:<n>`), and after each the next command must
//! find the repository consistent: `git fsck` clean, every commit reachable,
//! every worktree listed with a true health, the host exactly before or
//! exactly after the merge, no tracked file lost, and the next create, run
//! or close on the same branch correct.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

use crate::common::lsp;

const TRACKED: usize = 40;
const COPIED: usize = 30;

/// A repository with tracked files, an ignored folder `.worktreeinclude`
/// copies in, and a file of the user's.
fn fixture(env: &TestEnv) -> PathBuf {
    let repo = env.new_repo("repo");
    for i in 0..TRACKED {
        let path = repo.join(format!("src/file{i:02}.txt"));
        std::fs::create_dir_all(path.parent().expect("parent")).expect("src");
        std::fs::write(path, format!("tracked {i}\n")).expect("write");
    }
    std::fs::write(repo.join(".gitignore"), "node_modules/\n").expect("ignore");
    std::fs::write(repo.join(".worktreeinclude"), "node_modules/\n").expect("include");
    env.git(&repo, &["add", "."]);
    env.git(&repo, &["commit", "-qm", "fixture"]);
    for i in 0..COPIED {
        let path = repo.join(format!("node_modules/pkg{}/index{i}.js", i % 3));
        std::fs::create_dir_all(path.parent().expect("parent")).expect("node_modules");
        std::fs::write(path, format!("module {i}\n")).expect("write");
    }
    std::fs::write(repo.join("notes.txt"), "the user's own notes\n").expect("notes");
    repo
}

fn reachable(env: &TestEnv, repo: &Path) -> BTreeSet<String> {
    env.git(repo, &["rev-list", "--all"])
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The consistency every crash must leave: the next command (this `list`
/// settles what the crash left) sees a sound repository.
fn consistent(env: &TestEnv, repo: &Path, before: &BTreeSet<String>, what: &str) -> Vec<Value> {
    let list = env.slipway_json(repo, &["worktree", "list"]);
    let worktrees = list["worktrees"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("{what}: no worktree list in {list}"));
    for w in &worktrees {
        assert_eq!(w["health"], "ok", "{what}: a worktree is listed as {w}");
        let path = PathBuf::from(s(w, "path"));
        assert!(
            path.join(".git").is_file(),
            "{what}: {} is not whole",
            path.display()
        );
    }
    let fsck = env.git_output(repo, &["fsck", "--no-progress"]);
    assert!(
        fsck.status.success(),
        "{what}: git fsck:\n{}{}",
        String::from_utf8_lossy(&fsck.stdout),
        String::from_utf8_lossy(&fsck.stderr)
    );
    let now = reachable(env, repo);
    let lost: Vec<&String> = before.difference(&now).collect();
    assert!(lost.is_empty(), "{what}: commits lost: {lost:?}");
    let porcelain = env.porcelain(repo);
    assert!(
        porcelain.lines().all(|l| l == "?? notes.txt"),
        "{what}: the host checkout changed: {porcelain}"
    );
    assert!(
        env.git(repo, &["worktree", "list", "--porcelain"])
            .lines()
            .all(|l| !l.starts_with("prunable")),
        "{what}: a registration without its folder"
    );
    worktrees
}

/// Every file of a checkout except its `.git`.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).expect("read").flatten() {
            let path = entry.path();
            if path == dir.join(".git") || path == dir.join(".slipway") {
                continue;
            }
            if entry.file_type().expect("type").is_dir() {
                todo.push(path);
            } else {
                let rel = path
                    .strip_prefix(dir)
                    .expect("inside")
                    .display()
                    .to_string();
                out.insert(rel, std::fs::read(&path).expect("read"));
            }
        }
    }
    out
}

/// A new worktree must be whole: every tracked file, a clean status (so an
/// index exists), and everything `.worktreeinclude` copies.
fn whole(env: &TestEnv, repo: &Path, created: &Value, what: &str) {
    let path = PathBuf::from(s(created, "path"));
    assert_eq!(
        env.porcelain(&path),
        "",
        "{what}: the new worktree is not clean"
    );
    let mut expected = files(repo);
    expected.remove("notes.txt");
    assert_eq!(
        files(&path),
        expected,
        "{what}: the new worktree misses files"
    );
}

#[test]
fn a_create_killed_at_any_point_is_undone_and_the_next_create_is_whole() {
    let env = TestEnv::new();
    let repo = fixture(&env);
    let before = reachable(&env, &repo);
    let mut points = 0;
    for n in 1.. {
        let group = if n % 2 == 0 { ":group" } else { "" };
        let (killed, out) = env.crashing(
            &repo,
            &format!("create:{n}{group}"),
            &["--json", "worktree", "create", "--branch", "crash/create"],
        );
        let what = format!("create crash point {n}{group}");
        if !killed {
            assert!(
                out.status.success(),
                "{what}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let created: Value = serde_json::from_slice(&out.stdout).expect("json");
            whole(&env, &repo, &created, &what);
            break;
        }
        points += 1;
        let listed = consistent(&env, &repo, &before, &what);
        assert!(
            listed.iter().all(|w| w["branch"] != "crash/create"),
            "{what}: the half-made worktree was not undone: {listed:?}"
        );
        // The next create on the branch makes a whole worktree.
        let created = env.slipway_json(&repo, &["worktree", "create", "--branch", "crash/create"]);
        whole(&env, &repo, &created, &what);
        assert_eq!(created["reused"], false, "{what}: {created}");
        let closed = env.slipway_json(&repo, &["worktree", "close", "crash/create"]);
        assert_eq!(closed["outcome"], "removed", "{what}: {closed}");
        env.git(&repo, &["branch", "-D", "crash/create"]);
    }
    assert!(points >= TRACKED, "only {points} crash points in a create");
}

/// The agent of the merge tests: 1,500 changed files in one commit.
const MANY: usize = 1500;

fn host_files(repo: &Path) -> BTreeMap<String, Vec<u8>> {
    files(repo)
}

/// Kill points sampled from the merge's first write (1) to its last (1541
/// today, after the 1,500 new and 40 changed files); an attempt past the last
/// point completes. Every journal step is the merge rewrite's to cover.
#[test]
fn a_merge_killed_at_sampled_points_from_first_to_last_write_leaves_the_host_exactly_before_or_after()
 {
    let env = TestEnv::new();
    let repo = fixture(&env);
    let created = env.slipway_json(&repo, &["worktree", "create", "--merge-to-head"]);
    let id = s(&created, "id").to_owned();
    let writes = format!(
        "set -e\nfor i in $(seq 1 {MANY}); do echo \"agent $i\" > \"m$i.txt\"; done\n\
         for f in src/*.txt; do echo changed >> \"$f\"; done\ngit add -A\ngit commit -qm 'many files'\n"
    );
    let script = env.script("many", &writes);
    let host_before = host_files(&repo);
    let head_before = env.rev(&repo, "HEAD");
    let index_before = env.git(&repo, &["ls-files", "-s"]);
    let before = reachable(&env, &repo);
    // The first run makes the commit; its merge is killed at once.
    let (killed, out) = env.crashing(
        &repo,
        "hostwrite:1",
        &[
            "--json",
            "run",
            "--worktree",
            &id,
            "--",
            script.to_str().expect("utf8"),
        ],
    );
    assert!(
        killed,
        "the first merge was not killed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut points = 1;
    let mut completed = false;
    for n in [
        2, 3, 50, 700, 1499, 1500, 1530, 1541, 1542, 1543, 1600, 1_000_000,
    ] {
        consistent(&env, &repo, &before, &format!("merge crash point {n}"));
        let exactly_before = env.rev(&repo, "HEAD") == head_before
            && host_files(&repo) == host_before
            && env.git(&repo, &["ls-files", "-s"]) == index_before;
        assert!(exactly_before, "merge crash: the host is half merged");
        let (killed, out) = env.crashing(
            &repo,
            &format!("hostwrite:{n}"),
            &["--json", "run", "--worktree", &id, "--", "true"],
        );
        if !killed {
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            completed = true;
            break;
        }
        points += 1;
    }
    assert!(completed, "the merge never completed");
    // Exactly after: every file of the agent's, the index clean, the user's notes kept.
    let after = host_files(&repo);
    assert_eq!(after.len(), host_before.len() + MANY);
    assert_eq!(after["m1500.txt"], b"agent 1500\n");
    assert_eq!(after["notes.txt"], b"the user's own notes\n");
    assert_eq!(env.porcelain(&repo), "?? notes.txt");
    consistent(&env, &repo, &before, "after the merge");
    assert!(points >= 9, "only {points} merge crash points");
}

/// Waits for the detached deletion a close started to empty the trash.
fn trash_emptied(repo: &Path) -> bool {
    let trash = repo.join(".slipway/worktrees/.trash");
    crate::common::lsp::wait_until(std::time::Duration::from_secs(60), || !trash.exists())
}

#[test]
fn a_deletion_killed_half_way_is_finished_by_the_next_command() {
    let env = TestEnv::new();
    let repo = fixture(&env);
    let created = env.slipway_json(&repo, &["worktree", "create", "--branch", "crash/trash"]);
    let path = PathBuf::from(s(&created, "path"));
    // The close hands the files to a detached deletion, which dies (the
    // crash setting reaches it) before it deletes anything: the close has
    // already answered, and the folder is gone from where it was.
    let (killed, out) = env.crashing(
        &repo,
        "trash:1",
        &["--json", "worktree", "close", "crash/trash"],
    );
    assert!(!killed, "the close itself was killed");
    let closed: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(closed["outcome"], "removed", "{closed}");
    assert!(!path.exists(), "the worktree folder is still in place");
    let trash = repo.join(".slipway/worktrees/.trash");
    // The dead emptier held the trash lock until it died; what it left is
    // there once the lock is free.
    let left = crate::common::lsp::wait_until(std::time::Duration::from_secs(60), || {
        std::fs::read_dir(&trash).is_ok_and(|mut d| d.next().is_some())
            && std::fs::OpenOptions::new()
                .read(true)
                .open(repo.join(".slipway/locks/trash.lock"))
                .is_ok_and(|f| f.try_lock().is_ok())
    });
    assert!(left, "the killed deletion left nothing in the trash");
    consistent(
        &env,
        &repo,
        &reachable(&env, &repo),
        "after the killed deletion",
    );
    assert!(
        trash_emptied(&repo),
        "the next command did not finish the deletion"
    );
}

#[test]
fn a_close_killed_at_any_point_is_finished() {
    let env = TestEnv::new();
    let repo = fixture(&env);
    let before = reachable(&env, &repo);
    let mut points = 0;
    for n in 1.. {
        let created = env.slipway_json(&repo, &["worktree", "create", "--branch", "crash/close"]);
        let path = PathBuf::from(s(&created, "path"));
        let (killed, _) = env.crashing(
            &repo,
            &format!("close:{n}"),
            &["--json", "worktree", "close", "crash/close"],
        );
        let what = format!("close crash point {n}");
        let listed = consistent(&env, &repo, &before, &what);
        assert!(
            listed.iter().all(|w| w["branch"] != "crash/close"),
            "{what}: {listed:?}"
        );
        assert!(!path.exists(), "{what}: the folder is left half deleted");
        assert!(trash_emptied(&repo), "{what}: the trash was not emptied");
        assert_eq!(
            env.local_branches(&repo)
                .iter()
                .filter(|b| *b == "crash/close")
                .count(),
            1
        );
        if !killed {
            break;
        }
        points += 1;
    }
    assert!(points >= 3, "only {points} close crash points");
}

#[test]
fn an_import_killed_at_any_point_is_finished_by_the_next_command() {
    let env = TestEnv::new();
    let repo = fixture(&env);
    let agent = env.script(
        "three",
        "set -e\nfor i in 1 2 3; do echo $i > \"a$i.txt\"; git add \"a$i.txt\"; git commit -qm \"agent $i\"; done\n",
    );
    let before = reachable(&env, &repo);
    let mut points = 0;
    for n in 1.. {
        let branch = format!("crash/import-{n}");
        let (killed, out) = env.crashing(
            &repo,
            &format!("import:{n}"),
            &[
                "--json",
                "run",
                "--branch",
                &branch,
                "--",
                agent.to_str().expect("utf8"),
            ],
        );
        let what = format!("import crash point {n}");
        let listed = consistent(&env, &repo, &before, &what);
        let wt = listed
            .iter()
            .find(|w| w["branch"] == branch.as_str())
            .unwrap_or_else(|| panic!("{what}: the run's worktree is gone: {listed:?}"));
        let path = PathBuf::from(s(wt, "path"));
        // The three commits are on the branch, and the worktree is clean.
        assert_eq!(
            env.git(&repo, &["rev-list", "--count", &format!("main..{branch}")]),
            "3",
            "{what}: the run's commits did not land"
        );
        assert_eq!(
            env.porcelain(&path),
            "",
            "{what}: the worktree's index is behind"
        );
        assert!(
            !repo.join(".slipway/gitdirs").exists()
                || std::fs::read_dir(repo.join(".slipway/gitdirs"))
                    .expect("gitdirs")
                    .next()
                    .is_none(),
            "{what}: the private git dir was left"
        );
        if !killed {
            assert!(out.status.success());
            break;
        }
        points += 1;
    }
    assert!(points >= 3, "only {points} import crash points");
}

/// `slipway run --branch BRANCH -- AGENT` in the background, output discarded.
fn spawn_branch_run(env: &TestEnv, repo: &Path, branch: &str, agent: &Path) -> std::process::Child {
    env.slipway_cmd(repo)
        .args([
            "--json",
            "run",
            "--branch",
            branch,
            "--",
            agent.to_str().expect("utf8"),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run")
}

#[test]
fn a_run_killed_while_its_agent_works_stops_the_agent_and_keeps_its_commits() {
    let env = TestEnv::new();
    let repo = fixture(&env);
    // The agent commits, then keeps working (and would keep committing); it
    // is its process group's leader, so its pid names the group.
    let pidfile = env.path().join("busy.pid");
    let agent = env.script(
        "busy",
        &format!(
            "set -e\necho one > one.txt; git add one.txt; git commit -qm one\n\
             echo $$ > '{pid}.tmp' && mv '{pid}.tmp' '{pid}'\n\
             while :; do date >> ticks.txt; git add ticks.txt; git commit -qm tick; done\n",
            pid = pidfile.display()
        ),
    );
    let mut child = spawn_branch_run(&env, &repo, "crash/agent", &agent);
    assert!(
        lsp::wait_until(EVENT_DEADLINE, || pidfile.exists()),
        "the agent never started"
    );
    let group: i32 = std::fs::read_to_string(&pidfile)
        .expect("pid")
        .trim()
        .parse()
        .expect("a pid");
    // kill -9: no cleanup in slipway at all.
    child.kill().expect("kill");
    child.wait().expect("wait");
    // The agent's whole group goes with it.
    assert!(
        lsp::wait_until(EVENT_DEADLINE, || group_members(group).is_empty()),
        "the agent outlived slipway: its group {group} still holds {:?}",
        group_members(group)
    );
    let wt = repo
        .join(".slipway/worktrees")
        .read_dir()
        .expect("worktrees")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join(".git").is_file())
        .expect("the run's worktree");
    let ticks = std::fs::read_to_string(wt.join("ticks.txt")).unwrap_or_default();
    // The next command brings the commits it made in; nothing ticked meanwhile.
    let before = reachable(&env, &repo);
    consistent(&env, &repo, &before, "after the killed run");
    assert_eq!(
        std::fs::read_to_string(wt.join("ticks.txt")).unwrap_or_default(),
        ticks,
        "something of the agent kept working"
    );
    assert!(
        env.git(&repo, &["log", "--format=%s", "crash/agent"])
            .lines()
            .any(|s| s == "one"),
        "the dead run's commit did not reach its branch"
    );
    // And a second run on the worktree works.
    let again = env.slipway_json(&repo, &["run", "--worktree", "crash/agent", "--", "true"]);
    assert_eq!(again["status"], "completed", "{again}");
}

#[test]
fn a_second_run_is_refused_while_an_agent_of_a_dead_run_lives() {
    let env = TestEnv::new();
    let repo = fixture(&env);
    let pidfile = env.path().join("agent.pid");
    let agent = env.script(
        "lingers",
        &format!("echo $$ > {}\nexec sleep 600\n", pidfile.display()), // allow-sleep: the agent lingers on purpose until the test kills it
    );
    let mut child = spawn_branch_run(&env, &repo, "crash/linger", &agent);
    // The shell creates the file before it writes the pid: wait for the pid.
    let read_pid = || {
        std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
    };
    assert!(
        lsp::wait_until(EVENT_DEADLINE, || read_pid().is_some()),
        "the agent never started"
    );
    let agent_pid = read_pid().expect("the pid was read above");
    // The guard is killed too (as if the whole machine's slipway processes
    // died at once, guard and all): only the agent is left.
    assert!(
        lsp::wait_until(EVENT_DEADLINE, || !guards_of(agent_pid).is_empty()),
        "no guard watches the agent"
    );
    for pid in guards_of(agent_pid) {
        // SAFETY: signalling processes this test started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    child.kill().expect("kill");
    child.wait().expect("wait");
    let (_, err) = env.slipway_fail(&repo, &["run", "--worktree", "crash/linger", "--", "true"]);
    assert_eq!(err["kind"], "branchInUse", "{err}");
    // SAFETY: the agent this test started.
    unsafe { libc::kill(agent_pid, libc::SIGKILL) };
    // Its branch lock goes when it is gone (a zombie holds no descriptor).
    assert!(
        lsp::wait_until(EVENT_DEADLINE, || !lsp::pid_alive(agent_pid as u32)),
        "the killed agent {agent_pid} lives on"
    );
    let again = env.slipway_json(&repo, &["run", "--worktree", "crash/linger", "--", "true"]);
    assert_eq!(again["status"], "completed", "{again}");
}

/// The guard processes watching process group `pgid` (`sh -c … slipway-guard <pgid>`).
fn guards_of(pgid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let args: Vec<&[u8]> = cmdline
            .split(|&b| b == 0)
            .filter(|a| !a.is_empty())
            .collect();
        if args.len() >= 2
            && args[args.len() - 2] == b"slipway-guard"
            && args[args.len() - 1] == pgid.to_string().as_bytes()
        {
            out.push(pid);
        }
    }
    out.sort();
    out.dedup();
    out
}
