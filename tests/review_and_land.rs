//! Review and land through the real sidecar and the real CLI: `slipway.diff`
//! equals what the git CLI says of the same worktree (`git diff -M
//! --name-status` and `--numstat` against the base once untracked files are
//! added with `git add -N`); `slipway.runs` and `slipway.log` return a real
//! run's data and a follow delivers what the log gains.

use crate::common;
use crate::common::lsp;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use lsp::*;
use serde_json::{Value, json};

fn canon(p: &Path) -> PathBuf {
    p.canonicalize()
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Lines 1..=n, one number each: enough text for rename detection to work.
pub(crate) fn numbers(n: usize, tag: &str) -> String {
    (1..=n).map(|i| format!("{tag} line {i}\n")).collect()
}

pub(crate) fn write(dir: &Path, path: &str, content: impl AsRef<[u8]>) {
    let full = dir.join(path);
    if let Some(parent) = full.parent() {
        std::fs::create_dir_all(parent).expect("parent");
    }
    std::fs::write(full, content).expect("write");
}

/// A repository whose `feature` worktree holds every kind of change: some
/// committed (modified, deleted, renamed with an edit, added, binary), some
/// not (modified, deleted, untracked in a new folder, staged, a rename made
/// with `mv`), one in both, and an ignored file that is no change.
fn review_fixture(env: &TestEnv, lsp: &mut Lsp) -> (PathBuf, PathBuf, String) {
    let repo = canon(&env.new_repo("repo"));
    write(&repo, ".gitignore", "*.log\n");
    write(&repo, "mod.txt", numbers(20, "mod"));
    write(&repo, "both.txt", numbers(20, "both"));
    write(&repo, "del.txt", numbers(5, "del"));
    write(&repo, "ren.txt", numbers(30, "ren"));
    write(&repo, "bin.dat", b"\x00\x01\x02binary\x00");
    write(&repo, "umod.txt", numbers(10, "umod"));
    write(&repo, "udel.txt", numbers(4, "udel"));
    write(&repo, "umv.txt", numbers(25, "umv"));
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "fixture"]);
    let base = env.rev(&repo, "HEAD");
    let created = lsp.ok(
        "slipway.createWorktree",
        json!({ "root": repo, "strategy": "branch", "branch": "feature" }),
    );
    let wt = PathBuf::from(s(&created, "path"));
    assert_eq!(s(&created, "baseCommit"), base);
    // Committed.
    write(
        &wt,
        "mod.txt",
        numbers(20, "mod").replace("mod line 3\n", "changed\n"),
    );
    write(&wt, "both.txt", numbers(22, "both"));
    std::fs::remove_file(wt.join("del.txt")).expect("rm");
    env.git(&wt, &["mv", "ren.txt", "renamed.txt"]);
    write(&wt, "renamed.txt", numbers(30, "ren") + "one more\n");
    write(&wt, "new.txt", "brand new\nfile\n");
    write(&wt, "bin.dat", b"\x00\x01\x02changed\x00\x03");
    env.git(&wt, &["add", "-A"]);
    env.git(&wt, &["commit", "-q", "-m", "agent work"]);
    // Uncommitted.
    write(
        &wt,
        "umod.txt",
        numbers(10, "umod").replace("umod line 1\n", ""),
    );
    std::fs::remove_file(wt.join("udel.txt")).expect("rm");
    write(&wt, "dir/nested.txt", "nested\n");
    write(&wt, "untracked.txt", "u\nv\nw\n");
    write(&wt, "staged.txt", "staged\n");
    env.git(&wt, &["add", "staged.txt"]);
    std::fs::rename(wt.join("umv.txt"), wt.join("umoved.txt")).expect("mv");
    write(&wt, "both.txt", numbers(23, "both"));
    write(&wt, "debug.log", "ignored\n");
    (repo, wt, base)
}

/// `git diff -z` output split on NUL.
fn fields(out: &str) -> Vec<String> {
    out.split('\0')
        .filter(|f| !f.is_empty())
        .map(str::to_owned)
        .collect()
}

/// What the git CLI says of the worktree against `base`, as slipway's
/// entries: path → (status, oldPath, additions, deletions, binary).
pub(crate) fn git_view(env: &TestEnv, wt: &Path, base: &str) -> BTreeMap<String, Value> {
    let untracked = env.git(wt, &["ls-files", "--others", "--exclude-standard"]);
    for path in untracked.lines() {
        env.git(wt, &["add", "-N", "--", path]);
    }
    let names = fields(&env.git(wt, &["diff", "-z", "--name-status", "-M", base]));
    let mut out = BTreeMap::new();
    let mut i = 0;
    while i < names.len() {
        let status = names[i].chars().next().expect("status letter");
        let (old, path, step) = if status == 'R' {
            (Some(names[i + 1].clone()), names[i + 2].clone(), 3)
        } else {
            (None, names[i + 1].clone(), 2)
        };
        let word = match status {
            'A' => "added",
            'M' => "modified",
            'D' => "deleted",
            'R' => "renamed",
            other => panic!("unexpected status {other}"),
        };
        out.insert(path, json!({ "status": word, "oldPath": old }));
        i += step;
    }
    let numstat = env.git(wt, &["diff", "-z", "--numstat", "-M", base]);
    let mut rest: Vec<&str> = numstat.split('\0').collect();
    rest.retain(|f| !f.is_empty());
    let mut j = 0;
    while j < rest.len() {
        let mut parts = rest[j].splitn(3, '\t');
        let (add, del) = (parts.next().expect("add"), parts.next().expect("del"));
        let inline = parts.next().unwrap_or("");
        let (path, step) = if inline.is_empty() {
            (rest[j + 2].to_owned(), 3)
        } else {
            (inline.to_owned(), 1)
        };
        let entry = out.get_mut(&path).expect("numstat path in name-status");
        let binary = add == "-";
        entry["binary"] = json!(binary);
        entry["additions"] = json!(if binary {
            0
        } else {
            add.parse::<u64>().expect("n")
        });
        entry["deletions"] = json!(if binary {
            0
        } else {
            del.parse::<u64>().expect("n")
        });
        j += step;
    }
    let committed = env.git(wt, &["diff", "--name-only", "--no-renames", base, "HEAD"]);
    let uncommitted = env.git(wt, &["diff", "--name-only", "--no-renames", "HEAD"]);
    for (path, entry) in out.iter_mut() {
        entry["path"] = json!(path);
    }
    fix_paths(&mut out, &committed, &uncommitted);
    out
}

/// The committed/uncommitted flags by the entry's path and old path.
fn fix_paths(out: &mut BTreeMap<String, Value>, committed: &str, uncommitted: &str) {
    for (path, entry) in out.iter_mut() {
        let old = entry["oldPath"].as_str().map(str::to_owned);
        let touches = |list: &str| list.lines().any(|l| l == path || Some(l) == old.as_deref());
        entry["committed"] = json!(touches(committed));
        entry["uncommitted"] = json!(touches(uncommitted));
    }
}

/// slipway's entries by path, oldPath made explicit (null when absent).
pub(crate) fn slipway_view(answer: &Value) -> BTreeMap<String, Value> {
    answer["files"]
        .as_array()
        .unwrap_or_else(|| panic!("no files in {answer}"))
        .iter()
        .map(|f| {
            let mut f = f.clone();
            if f.get("oldPath").is_none() {
                f["oldPath"] = Value::Null;
            }
            (s(&f, "path").to_owned(), f)
        })
        .collect()
}

#[test]
fn diff_equals_git_diff_of_the_same_worktree_committed_and_uncommitted() {
    let env = TestEnv::new();
    let mut lsp = Lsp::start(&env, None, false);
    let (repo, wt, base) = review_fixture(&env, &mut lsp);
    let answer = lsp.ok(
        "slipway.diff",
        json!({ "root": repo, "worktree": "feature" }),
    );
    assert_eq!(s(&answer, "base"), base);
    assert_eq!(s(&answer, "head"), env.rev(&wt, "HEAD"));
    let ours = slipway_view(&answer);
    let git = git_view(&env, &wt, &base);
    similar_asserts::assert_eq!(ours, git);
    // Every case is in the fixture, so the comparison covers them.
    let status = |p: &str| ours[p]["status"].as_str().expect("status").to_owned();
    assert_eq!(status("renamed.txt"), "renamed");
    assert_eq!(ours["renamed.txt"]["oldPath"], "ren.txt");
    assert_eq!(status("umoved.txt"), "renamed", "a rename made with mv");
    assert_eq!(status("del.txt"), "deleted");
    assert_eq!(status("udel.txt"), "deleted");
    assert_eq!(status("dir/nested.txt"), "added");
    assert!(ours["bin.dat"]["binary"].as_bool().expect("binary"));
    assert_eq!(
        (
            ours["mod.txt"]["committed"].clone(),
            ours["mod.txt"]["uncommitted"].clone()
        ),
        (json!(true), json!(false))
    );
    assert_eq!(
        (
            ours["umod.txt"]["committed"].clone(),
            ours["umod.txt"]["uncommitted"].clone()
        ),
        (json!(false), json!(true))
    );
    assert_eq!(
        (
            ours["both.txt"]["committed"].clone(),
            ours["both.txt"]["uncommitted"].clone()
        ),
        (json!(true), json!(true))
    );
    assert!(
        !ours.contains_key("debug.log"),
        "ignored files are no change"
    );
    // After `git add -N` (intent-to-add entries in the index) the answer is the same.
    let again = lsp.ok("slipway.diff", json!({ "root": repo, "worktree": wt }));
    similar_asserts::assert_eq!(slipway_view(&again), ours);

    // The CLI twin says the same.
    let cli = env.slipway_json(&repo, &["diff", "feature"]);
    assert_eq!(cli, answer);
    let text = env.slipway(&repo, &["diff", "feature"]);
    assert!(text.status.success());
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("R ") && text.contains("ren.txt -> renamed.txt"),
        "{text}"
    );
}

#[test]
fn diff_of_one_file_gives_both_texts() {
    let env = TestEnv::new();
    let mut lsp = Lsp::start(&env, None, false);
    let (repo, wt, _) = review_fixture(&env, &mut lsp);
    let file = |lsp: &mut Lsp, path: &str| {
        lsp.ok(
            "slipway.diff",
            json!({ "root": repo, "worktree": "feature", "path": path }),
        )
    };
    let modified = file(&mut lsp, "mod.txt");
    assert_eq!(modified["baseText"], numbers(20, "mod"));
    assert_eq!(
        modified["worktreeText"],
        std::fs::read_to_string(wt.join("mod.txt")).expect("read")
    );
    assert_eq!(modified["binary"], false);
    let added = file(&mut lsp, "dir/nested.txt");
    assert!(added.get("baseText").is_none(), "{added}");
    assert_eq!(added["worktreeText"], "nested\n");
    let deleted = file(&mut lsp, "del.txt");
    assert!(deleted.get("worktreeText").is_none(), "{deleted}");
    assert_eq!(deleted["baseText"], numbers(5, "del"));
    let renamed = file(&mut lsp, "renamed.txt");
    assert_eq!(
        renamed["baseText"],
        numbers(30, "ren"),
        "the old path's text"
    );
    let binary = file(&mut lsp, "bin.dat");
    assert_eq!(binary["binary"], true);
    assert!(binary.get("baseText").is_none() && binary.get("worktreeText").is_none());
    for bad in ["../repo/README.md", "/etc/passwd", ".git/config"] {
        let e = lsp.err(
            "slipway.diff",
            json!({ "root": repo, "worktree": "feature", "path": bad }),
        );
        assert_eq!(kind(&e), "invalidParams", "{bad}: {e}");
    }
    let e = lsp.err("slipway.diff", json!({ "root": repo, "worktree": "nope" }));
    assert_eq!(kind(&e), "worktreeNotFound", "{e}");
    // The CLI prints a unified diff of one file.
    let out = env.slipway(&repo, &["diff", "feature", "--path", "mod.txt"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("-mod line 3") && text.contains("+changed"),
        "{text}"
    );
    let (_, err) = env.slipway_fail(&repo, &["diff", "nope"]);
    assert_eq!(err["kind"], "worktreeNotFound");
}

/// A run of the `command` agent on branch `branch` that prints `lines`
/// lines a quarter second apart; returns its id.
fn start_printing_run(
    lsp: &mut Lsp,
    env: &TestEnv,
    repo: &Path,
    branch: &str,
    lines: u32,
) -> String {
    let agent = env.script(
        &format!("print-{branch}"),
        &format!("for i in $(seq 1 {lines}); do echo \"printed $i\"; sleep 0.25; done\n"), // allow-sleep: the agent prints over time so a follower sees the log grow
    );
    let answer = lsp.ok(
        "slipway.run",
        json!({
            "root": repo, "strategy": "branch", "branch": branch,
            "agent": command_agent(&agent), "prompt": "print",
        }),
    );
    s(&answer, "runId").to_owned()
}

#[test]
fn runs_and_log_return_a_real_runs_data_and_follow_delivers_appended_text() {
    let env = TestEnv::new();
    let repo = canon(&env.new_repo("repo"));
    let mut lsp = Lsp::start(&env, Some(&repo), false);
    let first = start_printing_run(&mut lsp, &env, &repo, "first", 2);
    lsp.expect_notification(
        "slipway/runFinished",
        |p| p["runId"] == first.as_str(),
        Duration::from_secs(30),
        "the first run's end",
    );
    // The next run starts in a later second: newest first is by start time
    // (in seconds), so wait for the clock to pass the first run's.
    let first_started = lsp.ok("slipway.runs", json!({ "root": repo }))["runs"][0]["startedAt"]
        .as_u64()
        .expect("startedAt");
    assert!(
        wait_until(EVENT_DEADLINE, || std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_secs()
            > first_started),
        "the clock stands still"
    );
    let run_id = start_printing_run(&mut lsp, &env, &repo, "second", 8);
    let answer = lsp.ok("slipway.log", json!({ "runId": run_id, "follow": true }));
    let mut text = s(&answer, "text").to_owned();
    let mut next = answer["next"].as_u64().expect("next");
    assert_eq!(next as usize, text.len());
    let mut pieces = 0;
    if answer["done"] != true {
        loop {
            let note = lsp.expect_notification(
                "slipway/log",
                |p| p["runId"] == run_id.as_str(),
                Duration::from_secs(30),
                "the log growing",
            );
            let params = &note.msg["params"];
            text.push_str(s(params, "text"));
            let now = params["next"].as_u64().expect("next");
            assert!(now >= next, "offsets only grow");
            next = now;
            pieces += 1;
            if params["done"] == true {
                break;
            }
        }
    }
    assert!(
        pieces >= 2,
        "the follow sent the log as it grew ({pieces} pieces)"
    );
    let log = std::fs::read_to_string(repo.join(format!(".slipway/logs/{run_id}.log")))
        .expect("log file");
    assert_eq!(text, log, "the follow delivered the whole log, in order");
    assert_eq!(next as usize, log.len());
    for i in 1..=8 {
        assert!(log.contains(&format!("printed {i}")), "{log}");
    }
    // Reading from an offset gives the rest.
    let half = log.len() / 2;
    let rest = lsp.ok("slipway.log", json!({ "runId": run_id, "from": half }));
    assert_eq!(s(&rest, "text"), &log[half..]);
    assert_eq!(rest["done"], true);
    let e = lsp.err("slipway.log", json!({ "runId": "run-1-abcdef" }));
    assert_eq!(kind(&e), "unknownRun", "{e}");
    let e = lsp.err("slipway.log", json!({ "runId": "run-nope" }));
    assert_eq!(kind(&e), "invalidParams", "{e}");

    let runs = lsp.ok("slipway.runs", json!({ "root": repo }));
    let list = runs["runs"].as_array().expect("runs");
    let ids: Vec<&str> = list.iter().map(|r| s(r, "runId")).collect();
    assert_eq!(ids, vec![run_id.as_str(), first.as_str()], "newest first");
    let run = &list[0];
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["agent"], "command");
    assert_eq!(run["sandbox"], "none");
    assert_eq!(run["branch"], "second");
    assert!(
        PathBuf::from(s(run, "worktreePath")).starts_with(repo.join(".slipway/worktrees")),
        "{run}"
    );
    assert_eq!(run["iterations"], 1);
    let started = run["startedAt"].as_u64().expect("startedAt");
    assert!(run["endedAt"].as_u64().expect("endedAt") >= started);
    let last = log
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .expect("a line");
    assert_eq!(run["lastLine"], last);

    // The CLI twins.
    let cli = env.slipway_json(&repo, &["runs"]);
    assert_eq!(cli, runs);
    let printed = env.slipway(&repo, &["log", &run_id]);
    assert!(printed.status.success());
    assert_eq!(String::from_utf8_lossy(&printed.stdout), log);
    let doc = env.slipway_json(&repo, &["log", &run_id, "--follow"]);
    assert_eq!(
        (doc["text"].as_str(), doc["done"].as_bool()),
        (Some(log.as_str()), Some(true))
    );
}

/// Everything of the host checkout a failed land must leave alone: HEAD,
/// the branch tips, the index file's bytes, every working file's bytes
/// (ignored ones included; `.slipway/` left out), and no MERGE_HEAD.
fn host_state(repo: &Path) -> (String, Vec<u8>, BTreeMap<String, Vec<u8>>, bool) {
    let head = std::fs::read_to_string(repo.join(".git/HEAD")).expect("HEAD");
    let refs = std::process::Command::new("git")
        .args(["for-each-ref", "--format=%(refname) %(objectname)"])
        .current_dir(repo)
        .output()
        .expect("git");
    // A failed listing would read as "no refs" on both sides.
    assert!(
        refs.status.success(),
        "git for-each-ref failed in {}: {}",
        repo.display(),
        String::from_utf8_lossy(&refs.stderr)
    );
    let index = std::fs::read(repo.join(".git/index")).expect("index");
    let mut files = BTreeMap::new();
    let mut stack = vec![repo.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir").flatten() {
            let path = entry.path();
            let rel = path
                .strip_prefix(repo)
                .expect("inside")
                .to_string_lossy()
                .into_owned();
            if rel == ".git" || rel == ".slipway" {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                files.insert(rel, std::fs::read(&path).expect("read"));
            }
        }
    }
    (
        head + &String::from_utf8_lossy(&refs.stdout),
        index,
        files,
        repo.join(".git/MERGE_HEAD").exists(),
    )
}

/// A repository on `main` and a `feature` worktree with two commits; with
/// `diverge`, `main` gains a commit of its own meanwhile.
fn land_fixture(
    env: &TestEnv,
    lsp: &mut Lsp,
    strategy: &str,
    diverge: bool,
) -> (PathBuf, PathBuf, String) {
    let repo = canon(&env.new_repo("repo"));
    write(&repo, ".gitignore", "*.env\n");
    write(&repo, "shared.txt", numbers(10, "shared"));
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "base"]);
    let args = if strategy == "branch" {
        json!({ "root": repo, "strategy": "branch", "branch": "feature" })
    } else {
        json!({ "root": repo, "strategy": "merge-to-head" })
    };
    let created = lsp.ok("slipway.createWorktree", args);
    let wt = PathBuf::from(s(&created, "path"));
    let branch = s(&created, "branch").to_owned();
    env.commit_file(&wt, "f1.txt", "one\n", "feature: one");
    env.commit_file(
        &wt,
        "shared.txt",
        &(numbers(10, "shared") + "feature end\n"),
        "feature: two",
    );
    if diverge {
        env.commit_file(&repo, "host.txt", "host work\n", "host: meanwhile");
    }
    (repo, wt, branch)
}

/// A clone of the fixture with `feature` landed by the git CLI as `how` says.
fn landed_by_git(env: &TestEnv, repo: &Path, how: &str) -> PathBuf {
    let clone = env.path().join(format!("clone-{how}"));
    env.git(
        env.path(),
        &[
            "clone",
            "-q",
            repo.to_str().expect("utf8"),
            clone.to_str().expect("utf8"),
        ],
    );
    match how {
        "merge" => {
            env.git(
                &clone,
                &["merge", "-q", "--no-ff", "-m", "merge", "origin/feature"],
            );
        }
        "ff" => {
            env.git(&clone, &["merge", "-q", "--ff-only", "origin/feature"]);
        }
        "squash" => {
            env.git(&clone, &["merge", "-q", "--squash", "origin/feature"]);
            env.git(&clone, &["commit", "-q", "-m", "squash"]);
        }
        "rebase" => {
            env.git(&clone, &["checkout", "-q", "-b", "f", "origin/feature"]);
            env.git(&clone, &["rebase", "-q", "main"]);
            env.git(&clone, &["checkout", "-q", "main"]);
            env.git(&clone, &["merge", "-q", "--ff-only", "f"]);
        }
        other => panic!("{other}"),
    }
    clone
}

/// The history of `main` as trees and parent counts, newest first.
fn shape(env: &TestEnv, dir: &Path) -> Vec<String> {
    env.git(dir, &["log", "--topo-order", "--format=%T %P", "main"])
        .lines()
        .map(|l| {
            let mut words = l.split(' ');
            let tree = words.next().expect("tree").to_owned();
            format!("{tree} parents={}", words.count())
        })
        .collect()
}

#[test]
fn each_land_mode_makes_the_history_git_makes_and_updates_the_host_checkout() {
    for (how, diverge, git_how, kind) in [
        ("merge", true, "merge", "merge"),
        ("merge", false, "ff", "fast-forward"),
        ("squash", true, "squash", "squash"),
        ("rebase", true, "rebase", "rebase"),
    ] {
        let env = TestEnv::new();
        let mut lsp = Lsp::start(&env, None, false);
        let (repo, _wt, _) = land_fixture(&env, &mut lsp, "branch", diverge);
        let clone = landed_by_git(&env, &repo, git_how);
        let before = env.rev(&repo, "main");
        let landed = lsp.ok(
            "slipway.land",
            json!({ "root": repo, "worktree": "feature", "how": how }),
        );
        assert_eq!(landed["landed"], true, "{landed}");
        assert_eq!(landed["into"], "main");
        assert_eq!(landed["kind"], kind, "{how}: {landed}");
        assert_eq!(s(&landed, "commit"), env.rev(&repo, "main"));
        assert_ne!(before, env.rev(&repo, "main"));
        similar_asserts::assert_eq!(shape(&env, &repo), shape(&env, &clone), "{how}");
        // The host checkout follows: its files are main's, nothing is left uncommitted.
        assert_eq!(env.porcelain(&repo), "", "{how}");
        assert_eq!(
            std::fs::read_to_string(repo.join("f1.txt")).expect("f1"),
            "one\n"
        );
        assert_eq!(env.git(&repo, &["symbolic-ref", "HEAD"]), "refs/heads/main");
        assert!(!repo.join(".git/MERGE_HEAD").exists());
        // The work is home: discarding needs no force, and deletes the branch.
        let gone = lsp.ok(
            "slipway.discard",
            json!({ "root": repo, "worktree": "feature" }),
        );
        assert_eq!(gone["removed"], true, "{how}: {gone}");
        assert!(!env.local_branches(&repo).contains(&"feature".to_owned()));
    }
}

#[test]
fn landing_into_a_branch_that_is_not_checked_out_moves_only_its_ref() {
    let env = TestEnv::new();
    let mut lsp = Lsp::start(&env, None, false);
    let (repo, _wt, _) = land_fixture(&env, &mut lsp, "branch", true);
    env.git(&repo, &["branch", "release", "main~1"]);
    write(&repo, "shared.txt", "the user's own edit\n");
    let mut before = host_state(&repo);
    let landed = lsp.ok(
        "slipway.land",
        json!({ "root": repo, "worktree": "feature", "how": "squash", "into": "release", "message": "Feature, squashed" }),
    );
    assert_eq!(landed["kind"], "squash");
    assert_eq!(s(&landed, "commit"), env.rev(&repo, "release"));
    assert_eq!(
        env.git(&repo, &["log", "-1", "--format=%s", "release"]),
        "Feature, squashed"
    );
    assert_eq!(
        env.rev(&repo, "release^{tree}"),
        env.rev(&repo, "feature^{tree}")
    );
    let after = host_state(&repo);
    // Only the ref of release moved.
    before.0 = before.0.replace(
        &format!("refs/heads/release {}", env.rev(&repo, "main~1")),
        &format!("refs/heads/release {}", env.rev(&repo, "release")),
    );
    assert_eq!(before, after);
}

#[test]
fn every_failed_land_leaves_host_head_index_and_files_byte_identical() {
    // A conflict, in every mode.
    for how in ["merge", "squash", "rebase"] {
        let env = TestEnv::new();
        let mut lsp = Lsp::start(&env, None, false);
        let (repo, _wt, _) = land_fixture(&env, &mut lsp, "branch", false);
        env.commit_file(
            &repo,
            "shared.txt",
            &(numbers(10, "shared") + "host end\n"),
            "host: same line",
        );
        let before = host_state(&repo);
        let e = lsp.err(
            "slipway.land",
            json!({ "root": repo, "worktree": "feature", "how": how }),
        );
        assert_eq!(kind(&e), "mergeConflict", "{how}: {e}");
        assert_eq!(e["data"]["paths"], json!(["shared.txt"]), "{e}");
        assert_eq!(host_state(&repo), before, "{how}");
    }
    // A modified file and an ignored file in the way (the branch adds it with `add -f`).
    let env = TestEnv::new();
    let mut lsp = Lsp::start(&env, None, false);
    let (repo, wt, _) = land_fixture(&env, &mut lsp, "branch", true);
    write(&repo, "shared.txt", "the user's own edit\n");
    let before = host_state(&repo);
    let e = lsp.err(
        "slipway.land",
        json!({ "root": repo, "worktree": "feature", "how": "merge" }),
    );
    assert_eq!(kind(&e), "hostDirty", "{e}");
    assert_eq!(host_state(&repo), before);
    env.git(&repo, &["checkout", "--", "shared.txt"]);
    write(&wt, "secret.env", "the agent's\n");
    env.git(&wt, &["add", "-f", "secret.env"]);
    env.git(&wt, &["commit", "-q", "-m", "feature: an ignored file"]);
    write(&repo, "secret.env", "the user's, ignored\n");
    let before = host_state(&repo);
    for how in ["merge", "squash", "rebase"] {
        let e = lsp.err(
            "slipway.land",
            json!({ "root": repo, "worktree": "feature", "how": how }),
        );
        assert_eq!(kind(&e), "hostDirty", "{how}: {e}");
        assert_eq!(e["data"]["paths"], json!(["secret.env"]), "{e}");
        assert_eq!(host_state(&repo), before, "{how}");
    }
    // Uncommitted work in the worktree: commit first.
    write(&wt, "draft.txt", "not committed\n");
    let e = lsp.err(
        "slipway.land",
        json!({ "root": repo, "worktree": "feature", "how": "merge" }),
    );
    assert_eq!(kind(&e), "worktreeDirty", "{e}");
    assert_eq!(host_state(&repo), before);
    // A message with rebase is refused with a hint.
    std::fs::remove_file(wt.join("draft.txt")).expect("rm");
    let e = lsp.err(
        "slipway.land",
        json!({ "root": repo, "worktree": "feature", "how": "rebase", "message": "m" }),
    );
    assert_eq!(kind(&e), "invalidParams", "{e}");
    assert_eq!(host_state(&repo), before);

    // A merge-to-head worktree whose host switched branch.
    let env = TestEnv::new();
    let mut lsp = Lsp::start(&env, None, false);
    let (repo, _wt, branch) = land_fixture(&env, &mut lsp, "merge-to-head", true);
    env.git(&repo, &["switch", "-q", "-c", "elsewhere"]);
    let before = host_state(&repo);
    let e = lsp.err(
        "slipway.land",
        json!({ "root": repo, "worktree": branch, "how": "merge" }),
    );
    assert_eq!(kind(&e), "hostSwitched", "{e}");
    assert_eq!(host_state(&repo), before);
}

#[test]
fn discard_keeps_unique_commits_and_uncommitted_files_unless_forced() {
    let env = TestEnv::new();
    let mut lsp = Lsp::start(&env, None, false);
    let (repo, wt, _) = land_fixture(&env, &mut lsp, "branch", false);
    let tip = env.rev(&repo, "feature");
    let kept = lsp.ok(
        "slipway.discard",
        json!({ "root": repo, "worktree": "feature" }),
    );
    assert_eq!(kept["removed"], false, "{kept}");
    assert!(s(&kept, "reason").contains("2 commits"), "{kept}");
    assert!(wt.is_dir() && env.local_branches(&repo).contains(&"feature".to_owned()));
    // Uncommitted files alone keep it too, even when every commit is elsewhere.
    env.git(&repo, &["branch", "backup", "feature"]);
    write(&wt, "draft.txt", "not committed\n");
    let kept = lsp.ok(
        "slipway.discard",
        json!({ "root": repo, "worktree": "feature" }),
    );
    assert_eq!(kept["removed"], false, "{kept}");
    assert_eq!(kept["changedPaths"], json!(["draft.txt"]));
    assert_eq!(
        std::fs::read_to_string(wt.join("draft.txt")).expect("kept"),
        "not committed\n"
    );
    env.git(&repo, &["branch", "-D", "backup"]);
    // The CLI twin refuses the same way, and with --force removes both.
    // Exit 4: nothing was discarded.
    let out = env.slipway_json_code(&repo, &["discard", "feature"], 4);
    assert_eq!(out["outcome"], "preserved", "{out}");
    let out = env.slipway_json(&repo, &["discard", "feature", "--force"]);
    assert_eq!(out["outcome"], "removed", "{out}");
    assert_eq!(out["branchDeleted"], true, "{out}");
    assert!(s(&out, "discardedTip").contains(&tip), "{out}");
    assert!(!wt.exists());
    assert!(!env.local_branches(&repo).contains(&"feature".to_owned()));
    let e = lsp.err(
        "slipway.discard",
        json!({ "root": repo, "worktree": "feature" }),
    );
    assert_eq!(kind(&e), "worktreeNotFound", "{e}");
}

#[test]
fn the_cli_lands_with_text_and_json_and_errors_carry_hints() {
    let env = TestEnv::new();
    let mut lsp = Lsp::start(&env, None, false);
    let (repo, _wt, _) = land_fixture(&env, &mut lsp, "branch", true);
    let out = env.slipway(
        &repo,
        &["land", "feature", "--how", "rebase", "--message", "m"],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("drop --message M"), "{err}");
    let (_, e) = env.slipway_fail(&repo, &["land", "nope", "--how", "merge"]);
    assert_eq!(e["kind"], "worktreeNotFound");
    let landed = env.slipway_json(
        &repo,
        &["land", "feature", "--how", "merge", "--message", "Land it"],
    );
    assert_eq!(landed["kind"], "merge", "{landed}");
    assert_eq!(
        env.git(&repo, &["log", "-1", "--format=%s", "main"]),
        "Land it"
    );
    let again = env.slipway(&repo, &["land", "feature", "--how", "squash"]);
    assert!(again.status.success());
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(text.contains("already there"), "{text}");
    let init = &lsp.init["capabilities"]["experimental"]["slipway"]["landModes"];
    assert_eq!(init, &json!(["merge", "squash", "rebase"]));
}
