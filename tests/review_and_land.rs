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
fn numbers(n: usize, tag: &str) -> String {
    (1..=n).map(|i| format!("{tag} line {i}\n")).collect()
}

fn write(dir: &Path, path: &str, content: impl AsRef<[u8]>) {
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
fn git_view(env: &TestEnv, wt: &Path, base: &str) -> BTreeMap<String, Value> {
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
fn slipway_view(answer: &Value) -> BTreeMap<String, Value> {
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
        &format!("for i in $(seq 1 {lines}); do echo \"printed $i\"; sleep 0.25; done\n"),
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
    // The next run starts in a later second: newest first is by start time.
    std::thread::sleep(Duration::from_millis(1100));
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
    let e = lsp.err("slipway.log", json!({ "runId": "run-nope" }));
    assert_eq!(kind(&e), "unknownRun", "{e}");

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
