//! The real `slipway lsp` sidecar, spoken to over framed JSON-RPC on its
//! pipes: `initialize`, every command's happy path against real repositories,
//! `slipway/status` pushes, diagnostics for preserved dirty worktrees, and
//! shutdown.

use crate::common;
use crate::common::lsp;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use lsp::*;
use serde_json::{Value, json};

const WAIT: Duration = EVENT_DEADLINE;

/// The commands of DESIGN §3, plus `slipway.workspaces` (workspace pickers).
const DESIGN_COMMANDS: [&str; 22] = [
    "slipway.branches",
    "slipway.resolveSource",
    "slipway.createWorktree",
    "slipway.list",
    "slipway.run",
    "slipway.handoff",
    "slipway.cancel",
    "slipway.reply",
    "slipway.close",
    "slipway.status",
    "slipway.workspaces",
    "slipway.diff",
    "slipway.land",
    "slipway.discard",
    "slipway.runs",
    "slipway.log",
    "slipway.seen",
    "slipway.trust",
    "slipway.attemptGroups",
    "slipway.attempts",
    "slipway.landAttempt",
    "slipway.engines",
];

fn canon(p: &Path) -> PathBuf {
    p.canonicalize()
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn path_of(v: &Value, key: &str) -> PathBuf {
    PathBuf::from(s(v, key))
}

/// A clone of an `upstream` repository (so it has `origin/*` and `origin/HEAD`)
/// with a local branch `feature/x` one commit ahead of `main` and a
/// remote-tracking `origin/feature/y`.
fn repo_with_branches(env: &TestEnv) -> PathBuf {
    let upstream = env.new_repo("upstream");
    env.git(&upstream, &["checkout", "-q", "-b", "feature/y"]);
    env.commit_file(&upstream, "y.txt", "y\n", "feature y");
    env.git(&upstream, &["checkout", "-q", "main"]);
    env.git(
        env.path(),
        &["clone", "-q", upstream.to_str().expect("utf8"), "repo"],
    );
    let repo = canon(&env.path().join("repo"));
    env.git(&repo, &["checkout", "-q", "-b", "feature/x"]);
    env.commit_file(&repo, "x.txt", "x\n", "feature x");
    env.git(&repo, &["checkout", "-q", "main"]);
    repo
}

/// Branches as git lists them: name → (kind, commit), without `<remote>/HEAD`.
fn git_branches(env: &TestEnv, repo: &Path) -> BTreeMap<String, (String, String)> {
    let out = env.git(
        repo,
        &[
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            "refs/heads",
            "refs/remotes",
        ],
    );
    let mut map = BTreeMap::new();
    for line in out.lines() {
        let (name, sha) = line.split_once(' ').expect("two fields");
        if let Some(local) = name.strip_prefix("refs/heads/") {
            map.insert(local.to_owned(), ("local".to_owned(), sha.to_owned()));
        } else if let Some(remote) = name.strip_prefix("refs/remotes/") {
            if remote.ends_with("/HEAD") {
                continue;
            }
            map.insert(remote.to_owned(), ("remote".to_owned(), sha.to_owned()));
        }
    }
    map
}

fn has_worktree(params: &Value, id: &str) -> bool {
    status_worktrees(params).iter().any(|w| w["id"] == id)
}

fn worktree_dirs(repo: &Path) -> Vec<PathBuf> {
    match std::fs::read_dir(repo.join(".slipway/worktrees")) {
        Ok(rd) => rd.flatten().map(|e| e.path()).collect(),
        Err(_) => Vec::new(),
    }
}

#[test]
fn initialize_advertises_every_command_and_shutdown_then_exit_ends_the_process() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let mut lsp = Lsp::start(&env, Some(&repo), true);
    let commands: Vec<String> = lsp.init["capabilities"]["executeCommandProvider"]["commands"]
        .as_array()
        .unwrap_or_else(|| panic!("no executeCommandProvider.commands in {}", lsp.init))
        .iter()
        .map(|c| c.as_str().expect("command name").to_owned())
        .collect();
    assert_eq!(
        commands.len(),
        DESIGN_COMMANDS.len(),
        "exactly these commands, no duplicates: {commands:?}"
    );
    let got: BTreeSet<&str> = commands.iter().map(String::as_str).collect();
    let want: BTreeSet<&str> = DESIGN_COMMANDS.into_iter().collect();
    assert_eq!(got, want);
    assert_eq!(lsp.init["serverInfo"]["name"], "slipway");

    // It answers a command before shutting down.
    let status = lsp.ok("slipway.status", json!({ "path": repo }));
    assert_eq!(status["inWorktree"], false);

    let exit = lsp.shutdown_and_exit(EVENT_DEADLINE);
    let exit = exit.unwrap_or_else(|| {
        panic!(
            "the sidecar was still running {EVENT_DEADLINE:?} after shutdown + exit\n{}",
            lsp.stderr()
        )
    });
    assert_eq!(exit.code(), Some(0), "exit after shutdown is a clean exit");
}

/// The worktree commands against a real repository (runs, review and land
/// have their own modules: lsp_runs, review_and_land).
#[test]
fn branches_resolve_create_list_status_and_close_work_against_a_real_repository() {
    let env = TestEnv::new();
    let repo = repo_with_branches(&env);
    let main_sha = env.rev(&repo, "main");
    let mut lsp = Lsp::start(&env, Some(&repo), true);

    // slipway.branches lists exactly what git lists.
    let answer = lsp.ok("slipway.branches", json!({ "root": repo }));
    let listed = answer["branches"]
        .as_array()
        .unwrap_or_else(|| panic!("no branches in {answer}"));
    let got: BTreeMap<String, (String, String)> = listed
        .iter()
        .map(|b| {
            (
                s(b, "name").to_owned(),
                (s(b, "kind").to_owned(), s(b, "commit").to_owned()),
            )
        })
        .collect();
    assert_eq!(got.len(), listed.len(), "no branch listed twice: {answer}");
    assert_eq!(got, git_branches(&env, &repo));
    for b in listed {
        assert_eq!(b["isHead"], b["name"] == "main", "isHead of {b}");
        for key in ["subject", "time", "isDefault", "upstream", "remote"] {
            assert!(b.get(key).is_some(), "{key} missing in {b}");
        }
    }
    let main = listed.iter().find(|b| b["name"] == "main").expect("main");
    assert_eq!(main["upstream"], "origin/main");
    assert_eq!(main["subject"], "initial commit");
    let remote_y = listed
        .iter()
        .find(|b| b["name"] == "origin/feature/y")
        .expect("origin/feature/y");
    assert_eq!(remote_y["remote"], "origin");
    assert_eq!(remote_y["subject"], "feature y");

    // slipway.resolveSource only reads refs.
    let named = lsp.ok(
        "slipway.resolveSource",
        json!({ "root": repo, "source": { "policy": "named", "ref": "origin/feature/y" } }),
    );
    assert_eq!(s(&named, "commit"), env.rev(&repo, "origin/feature/y"));
    let default = lsp.ok(
        "slipway.resolveSource",
        json!({ "root": repo, "source": { "policy": "default" } }),
    );
    assert_eq!(s(&default, "commit"), env.rev(&repo, "origin/HEAD"));
    assert!(
        listed
            .iter()
            .any(|b| b["isDefault"] == true && b["commit"] == default["commit"]),
        "the branch the default policy resolves to is marked isDefault: {answer}"
    );

    // slipway.createWorktree: a real worktree at the right commit.
    let since = lsp.history().len();
    let one = lsp.ok(
        "slipway.createWorktree",
        json!({ "root": repo, "strategy": "branch", "branch": "lsp/one" }),
    );
    let one_path = path_of(&one, "path");
    let one_id = s(&one, "id").to_owned();
    assert!(one_path.is_dir(), "{} exists", one_path.display());
    assert!(
        canon(&one_path).starts_with(repo.join(".slipway/worktrees")),
        "{}",
        one_path.display()
    );
    assert_eq!(s(&one, "branch"), "lsp/one");
    assert_eq!(s(&one, "baseCommit"), main_sha);
    assert_eq!(env.rev(&one_path, "HEAD"), main_sha);
    assert_eq!(
        env.git(&one_path, &["symbolic-ref", "--short", "HEAD"]),
        "lsp/one"
    );
    assert_eq!(env.rev(&repo, "lsp/one"), main_sha);
    assert!(one.get("sourceLabel").is_some(), "{one}");
    assert!(
        one.get("interactiveCommand").is_none_or(Value::is_null),
        "no agent, no interactive command: {one}"
    );
    lsp.expect_notification_since(
        since,
        "slipway/status",
        |p| has_worktree(p, &one_id),
        WAIT,
        "a status push containing the new worktree",
    );

    // With an agent the answer says how to start it interactively.
    let two = lsp.ok(
        "slipway.createWorktree",
        json!({
            "root": repo, "strategy": "branch", "branch": "lsp/two",
            "agent": { "type": "command", "command": ["sh", "-c", "echo hi"] },
        }),
    );
    let two_path = path_of(&two, "path");
    let two_id = s(&two, "id").to_owned();
    let interactive = &two["interactiveCommand"];
    let argv = interactive["argv"]
        .as_array()
        .unwrap_or_else(|| panic!("interactiveCommand.argv in {two}"));
    assert!(!argv.is_empty(), "{two}");
    assert!(argv.iter().all(Value::is_string), "{two}");
    assert_eq!(path_of(interactive, "cwd"), two_path);
    assert_ne!(canon(&two_path), canon(&one_path));

    // The same command line for an existing worktree, without re-creating it.
    let status = lsp.ok(
        "slipway.status",
        json!({ "path": two_path, "agent": { "type": "claude-code", "model": "opus" } }),
    );
    assert_eq!(status["inWorktree"], true, "{status}");
    assert_eq!(
        status["interactiveCommand"]["argv"],
        json!(["claude", "--model", "opus"]),
        "{status}"
    );
    assert_eq!(
        canon(&path_of(&status["interactiveCommand"], "cwd")),
        canon(&two_path)
    );

    // slipway.list.
    let list = lsp.ok("slipway.list", json!({ "root": repo }));
    let worktrees = list["worktrees"]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"));
    assert_eq!(worktrees.len(), 2, "{list}");
    for (id, branch, path) in [
        (&one_id, "lsp/one", &one_path),
        (&two_id, "lsp/two", &two_path),
    ] {
        let w = worktrees
            .iter()
            .find(|w| w["id"] == **id)
            .unwrap_or_else(|| panic!("{id} not listed: {list}"));
        assert_eq!(w["branch"], branch);
        assert_eq!(path_of(w, "path"), *path);
        assert_eq!(w["strategy"], "branch");
        assert_eq!(w["dirty"], false);
        assert_eq!(w["changedFiles"], 0);
        assert_eq!(w["ahead"], 0);
        assert_eq!(w["state"], "active");
        assert!(w.get("runId").is_some(), "{w}");
    }

    // slipway.status inside a worktree and in the host root.
    lsp.expect_notification(
        "slipway/status",
        |p| has_worktree(p, &two_id),
        WAIT,
        "a status push containing the second worktree",
    );
    let inside = lsp.ok(
        "slipway.status",
        json!({ "path": one_path.join("README.md") }),
    );
    assert_eq!(inside["inWorktree"], true, "{inside}");
    assert_eq!(inside["branch"], "lsp/one");
    assert_eq!(inside["id"], one_id.as_str());
    assert_eq!(inside["dirty"], false);
    assert!(inside["runId"].is_null(), "{inside}");
    let host = lsp.ok("slipway.status", json!({ "path": repo }));
    assert_eq!(host["inWorktree"], false, "{host}");
    assert!(host["id"].is_null() && host["branch"].is_null(), "{host}");

    // slipway.close: clean → removed.
    let since = lsp.history().len();
    let closed = lsp.ok("slipway.close", json!({ "root": repo, "worktree": two_id }));
    assert_eq!(closed["removed"], true, "{closed}");
    assert!(!two_path.exists(), "{} removed", two_path.display());
    lsp.expect_notification_since(
        since,
        "slipway/status",
        |p| !has_worktree(p, &two_id) && has_worktree(p, &one_id),
        WAIT,
        "a status push without the closed worktree",
    );

    // slipway.close: dirty → preserved, with the commands to inspect and discard.
    std::fs::write(one_path.join("README.md"), "changed\n").expect("write");
    std::fs::write(one_path.join("new.txt"), "new\n").expect("write");
    let since = lsp.history().len();
    let kept = lsp.ok(
        "slipway.close",
        json!({ "root": repo, "worktree": "lsp/one" }),
    );
    assert_eq!(kept["removed"], false, "{kept}");
    assert_eq!(canon(&path_of(&kept, "preservedPath")), canon(&one_path));
    assert!(!s(&kept, "reason").is_empty(), "{kept}");
    let commands = kept["commands"]
        .as_array()
        .unwrap_or_else(|| panic!("commands in {kept}"));
    let text = serde_json::to_string(commands).expect("json");
    assert!(
        text.contains(one_path.to_str().expect("utf8")),
        "the commands name the worktree: {kept}"
    );
    assert!(
        text.contains("cd ") && !text.contains("git worktree remove"),
        "an inspect command and no git command around slipway: {kept}"
    );
    assert_eq!(
        kept["actions"],
        json!([
            { "kind": "review", "worktree": "lsp/one" },
            { "kind": "close", "worktree": "lsp/one", "force": true },
        ]),
        "{kept}"
    );
    assert_eq!(
        std::fs::read_to_string(one_path.join("new.txt")).expect("kept"),
        "new\n"
    );
    let again = lsp.ok(
        "slipway.close",
        json!({ "root": repo, "worktree": "lsp/one" }),
    );
    assert_eq!(again["removed"], false, "{again}");
    assert_eq!(again["preservedPath"], kept["preservedPath"]);
    assert_eq!(again["reason"], kept["reason"]);
    assert_eq!(again["commands"], kept["commands"]);
    lsp.expect_notification_since(
        since,
        "slipway/status",
        |p| {
            status_worktrees(p).iter().any(|w| {
                w["id"] == one_id.as_str() && w["state"] == "preserved" && w["dirty"] == true
            })
        },
        WAIT,
        "a status push showing the preserved worktree",
    );

    // `ask` → sourceBranchRequired with the choices; retry with one of them.
    let error = lsp.err(
        "slipway.createWorktree",
        json!({ "root": repo, "strategy": "merge-to-head", "source": { "policy": "ask" } }),
    );
    assert_eq!(kind(&error), "sourceBranchRequired", "{error}");
    // Each choice is a whole branch entry, as `slipway.branches` lists it: a
    // picker needs no second request.
    let entries = error["data"]["choices"]
        .as_array()
        .unwrap_or_else(|| panic!("choices in {error}"));
    for entry in entries {
        assert!(
            entry["commit"].as_str().is_some_and(|c| c.len() == 40)
                && entry["subject"].is_string()
                && (entry["kind"] == "local" || entry["kind"] == "remote"),
            "a full branch entry: {entry}"
        );
    }
    let choices: Vec<&str> = entries
        .iter()
        .map(|c| c["name"].as_str().expect("choice has a name"))
        .collect();
    for want in ["main", "feature/x", "origin/feature/y"] {
        assert!(choices.contains(&want), "{want} in {choices:?}");
    }
    assert_eq!(
        worktree_dirs(&repo).len(),
        1,
        "ask created nothing: {:?}",
        worktree_dirs(&repo)
    );
    let chosen = "origin/feature/y";
    let picked = lsp.ok(
        "slipway.createWorktree",
        json!({
            "root": repo, "strategy": "merge-to-head",
            "source": { "policy": "named", "ref": chosen },
        }),
    );
    let picked_path = path_of(&picked, "path");
    assert_eq!(s(&picked, "baseCommit"), env.rev(&repo, chosen));
    assert_eq!(env.rev(&picked_path, "HEAD"), env.rev(&repo, chosen));
    assert!(picked_path.join("y.txt").is_file());
    // The host never moved.
    assert_eq!(env.git(&repo, &["symbolic-ref", "--short", "HEAD"]), "main");
    assert_eq!(env.rev(&repo, "HEAD"), main_sha);

    let exit = lsp.shutdown_and_exit(EVENT_DEADLINE);
    assert_eq!(exit.and_then(|e| e.code()), Some(0), "{}", lsp.stderr());
}

#[test]
fn commands_on_a_repository_that_is_not_a_workspace_folder_still_push_status() {
    let env = TestEnv::new();
    let repo = canon(&env.new_repo("repo"));
    // No workspace folder at all: the editor passes `root` with each command.
    let mut lsp = Lsp::start(&env, None, true);
    let created = lsp.ok(
        "slipway.createWorktree",
        json!({ "root": repo, "strategy": "branch", "branch": "elsewhere" }),
    );
    let id = s(&created, "id").to_owned();
    lsp.expect_notification(
        "slipway/status",
        |p| has_worktree(p, &id),
        WAIT,
        "a status push for a repository known only from a command's root",
    );
}

/// `textDocument/publishDiagnostics` params for `file`, if any arrived at or after `since`.
fn diagnostics_for(lsp: &mut Lsp, since: usize, file: &Path) -> Vec<Value> {
    let file = file.to_path_buf();
    lsp.all_with("textDocument/publishDiagnostics", |p| {
        p["uri"].as_str().map(uri_path).as_deref() == Some(file.as_path())
    })
    .into_iter()
    .filter(|r| r.seq >= since)
    .map(|r| r.msg["params"].clone())
    .collect()
}

/// Waits until the latest diagnostics published for each file satisfy `check`.
fn wait_latest_diagnostics(
    lsp: &mut Lsp,
    since: usize,
    files: &[PathBuf],
    check: impl Fn(&Value) -> bool,
    what: &str,
) {
    let settled = lsp.wait_until(WAIT, |lsp| {
        files.iter().all(|f| {
            diagnostics_for(lsp, since, f)
                .last()
                .is_some_and(|p| check(&p["diagnostics"]))
        })
    });
    if !settled {
        let got: Vec<Value> = lsp
            .all_with("textDocument/publishDiagnostics", |_| true)
            .into_iter()
            .map(|r| r.msg["params"].clone())
            .collect();
        panic!(
            "{what}: diagnostics for {files:?} not as expected; published: {got:#?}\n{}",
            lsp.stderr()
        );
    }
}

fn is_dirty_warning(diags: &Value) -> bool {
    let Some(list) = diags.as_array() else {
        return false;
    };
    list.len() == 1
        && list.iter().all(|d| {
            d["source"] == "slipway"
                && d["code"] == "dirty-preserved-worktree"
                && d["severity"] == 2
                && d["message"]
                    .as_str()
                    .is_some_and(|m| !m.is_empty() && !m.contains("git worktree"))
                && d["data"]["actions"][0]["kind"] == "review"
        })
}

fn is_empty(diags: &Value) -> bool {
    diags.as_array().is_some_and(Vec::is_empty)
}

/// Files that currently carry non-empty slipway diagnostics, from the latest publish per URI.
fn files_with_diagnostics(lsp: &mut Lsp) -> BTreeSet<PathBuf> {
    let mut latest: BTreeMap<PathBuf, Value> = BTreeMap::new();
    for r in lsp.all_with("textDocument/publishDiagnostics", |_| true) {
        let params = &r.msg["params"];
        latest.insert(uri_path(s(params, "uri")), params["diagnostics"].clone());
    }
    latest
        .into_iter()
        .filter(|(_, d)| !is_empty(d))
        .map(|(p, _)| p)
        .collect()
}

fn make_dirty(wt: &Path) -> Vec<PathBuf> {
    std::fs::write(wt.join("README.md"), "edited by hand\n").expect("write");
    std::fs::write(wt.join("scratch.txt"), "untracked\n").expect("write");
    vec![wt.join("README.md"), wt.join("scratch.txt")]
}

#[test]
fn a_preserved_dirty_worktree_gets_one_warning_per_changed_file_until_forced_closed() {
    let env = TestEnv::new();
    let repo = canon(&env.new_repo("repo"));
    let mut lsp = Lsp::start(&env, Some(&repo), true);
    let created = lsp.ok(
        "slipway.createWorktree",
        json!({ "root": repo, "strategy": "branch", "branch": "diag" }),
    );
    let wt = canon(&path_of(&created, "path"));
    let files = make_dirty(&wt);
    let since = lsp.history().len();
    let kept = lsp.ok("slipway.close", json!({ "root": repo, "worktree": "diag" }));
    assert_eq!(kept["removed"], false, "{kept}");

    wait_latest_diagnostics(
        &mut lsp,
        since,
        &files,
        is_dirty_warning,
        "one Warning per changed file",
    );
    // Once the loop has run again: exactly those two files carry diagnostics.
    lsp.barrier(&repo);
    let expected: BTreeSet<PathBuf> = files.iter().cloned().collect();
    assert_eq!(files_with_diagnostics(&mut lsp), expected);
    for f in &files {
        let last = diagnostics_for(&mut lsp, since, f)
            .pop()
            .expect("published");
        let message = last["diagnostics"][0]["message"].as_str().expect("message");
        assert!(
            message.contains(wt.to_str().expect("utf8")),
            "the message says where the worktree is: {message}"
        );
    }

    let since = lsp.history().len();
    let removed = lsp.ok(
        "slipway.close",
        json!({ "root": repo, "worktree": "diag", "force": true }),
    );
    assert_eq!(removed["removed"], true, "{removed}");
    assert!(!wt.exists());
    wait_latest_diagnostics(
        &mut lsp,
        since,
        &files,
        is_empty,
        "diagnostics cleared after a forced close",
    );
    assert!(files_with_diagnostics(&mut lsp).is_empty());
}

/// A worktree on `branch`, made dirty and closed (so preserved), once its
/// warnings have been published; returns it and its dirty files.
fn preserved_dirty_worktree(lsp: &mut Lsp, repo: &Path, branch: &str) -> (PathBuf, Vec<PathBuf>) {
    let created = lsp.ok(
        "slipway.createWorktree",
        json!({ "root": repo, "strategy": "branch", "branch": branch }),
    );
    let wt = canon(&path_of(&created, "path"));
    let files = make_dirty(&wt);
    let kept = lsp.ok("slipway.close", json!({ "root": repo, "worktree": branch }));
    assert_eq!(kept["removed"], false, "{kept}");
    wait_latest_diagnostics(lsp, 0, &files, is_dirty_warning, "warnings first");
    (wt, files)
}

#[test]
fn cleaning_a_preserved_worktree_by_hand_clears_its_diagnostics() {
    let env = TestEnv::new();
    let repo = canon(&env.new_repo("repo"));
    let mut lsp = Lsp::start(&env, Some(&repo), true);
    let (wt, files) = preserved_dirty_worktree(&mut lsp, &repo, "by-hand");

    let since = lsp.history().len();
    env.git(&wt, &["checkout", "--", "README.md"]);
    std::fs::remove_file(wt.join("scratch.txt")).expect("rm");
    assert_eq!(env.porcelain(&wt), "");
    wait_latest_diagnostics(
        &mut lsp,
        since,
        &files,
        is_empty,
        "diagnostics cleared once the worktree is clean",
    );
    assert!(files_with_diagnostics(&mut lsp).is_empty());
    // The worktree itself is still there: cleaning is not closing.
    assert!(wt.is_dir());
}

#[test]
fn a_dirty_preserved_worktree_from_before_start_up_is_diagnosed_at_start_up() {
    let env = TestEnv::new();
    let repo = canon(&env.new_repo("repo"));
    let created = env.slipway_json(&repo, &["worktree", "create", "--branch", "earlier"]);
    let wt = canon(&path_of(&created, "path"));
    let files = make_dirty(&wt);
    let closed = env.slipway_json_code(&repo, &["worktree", "close", "earlier"], 3);
    assert_eq!(closed["outcome"], "preserved", "{closed}");

    let mut lsp = Lsp::start(&env, Some(&repo), true);
    wait_latest_diagnostics(
        &mut lsp,
        0,
        &files,
        is_dirty_warning,
        "diagnostics published at start-up",
    );
    lsp.barrier(&repo);
    let expected: BTreeSet<PathBuf> = files.iter().cloned().collect();
    assert_eq!(files_with_diagnostics(&mut lsp), expected);
}

#[test]
fn committing_in_a_preserved_worktree_clears_its_diagnostics() {
    // A commit changes the worktree's index and HEAD under the common git dir,
    // not its files: the sidecar must notice it there too. Its periodic
    // re-read of statuses it was not told about is an hour here, so only the
    // watcher can have seen the commit.
    let env = TestEnv::new();
    let repo = canon(&env.new_repo("repo"));
    let mut lsp = watched_only(&env, &repo);
    let (wt, files) = preserved_dirty_worktree(&mut lsp, &repo, "committed");

    let since = lsp.history().len();
    env.git(&wt, &["add", "-A"]);
    env.git(&wt, &["commit", "-qm", "keep the work"]);
    wait_latest_diagnostics(
        &mut lsp,
        since,
        &files,
        is_empty,
        "diagnostics cleared once the work is committed",
    );
}

/// A sidecar whose statuses are read again only when its file watcher says
/// they changed (the periodic re-read, for events lost, is an hour away).
fn watched_only(env: &TestEnv, repo: &Path) -> Lsp {
    env.set_env("SLIPWAY_TEST_STATUS_MAX_AGE_SECS", "3600");
    Lsp::start(env, Some(repo), true)
}

/// Asks `slipway.status` for `path` until `dirty` is `want` (or the deadline passes).
fn wait_dirty(lsp: &mut Lsp, path: &Path, want: bool) -> Value {
    let mut status = Value::Null;
    lsp.wait_until(EVENT_DEADLINE, |lsp| {
        status = lsp.ok("slipway.status", json!({ "path": path }));
        status["dirty"] == want
    });
    status
}

#[test]
fn edits_are_followed_in_a_worktree_closed_and_made_again_at_the_same_path() {
    let env = TestEnv::new();
    let repo = canon(&env.new_repo("repo"));
    let mut lsp = watched_only(&env, &repo);
    let create = json!({ "root": repo, "strategy": "branch", "branch": "again" });
    let wt = canon(&path_of(
        &lsp.ok("slipway.createWorktree", create.clone()),
        "path",
    ));
    let status = wait_dirty(&mut lsp, &wt, false);
    assert_eq!(status["inWorktree"], true, "{status}");
    std::fs::write(wt.join("first.txt"), "x\n").expect("write");
    let status = wait_dirty(&mut lsp, &wt, true);
    assert_eq!(status["dirty"], true, "an edit is seen: {status}");

    lsp.ok(
        "slipway.close",
        json!({ "root": repo, "worktree": "again", "force": true }),
    );
    let again = canon(&path_of(&lsp.ok("slipway.createWorktree", create), "path"));
    assert_eq!(again, wt, "the same branch gets the same folder");
    let status = wait_dirty(&mut lsp, &wt, false);
    assert_eq!(
        status["dirty"], false,
        "the new worktree is clean: {status}"
    );
    std::fs::write(wt.join("second.txt"), "x\n").expect("write");
    let status = wait_dirty(&mut lsp, &wt, true);
    assert_eq!(
        status["dirty"], true,
        "an edit in the new worktree is seen by the watcher: {status}"
    );
}

#[test]
fn a_branch_moved_from_outside_shows_in_the_next_status_push() {
    let env = TestEnv::new();
    let repo = canon(&env.new_repo("repo"));
    let mut lsp = watched_only(&env, &repo);
    let created = lsp.ok(
        "slipway.createWorktree",
        json!({ "root": repo, "strategy": "branch", "branch": "moved" }),
    );
    let id = s(&created, "id").to_owned();
    let ahead_is = |n: u64| {
        let id = id.clone();
        move |p: &Value| {
            status_worktrees(p)
                .iter()
                .any(|w| w["id"] == id.as_str() && w["ahead"] == n)
        }
    };
    lsp.expect_notification_since(0, "slipway/status", ahead_is(0), WAIT, "ahead 0 first");

    // A commit with the same tree, put on the branch from the host: the
    // worktree's files and index do not change, only refs/heads/moved.
    let since = lsp.history().len();
    let tree = env.git(&repo, &["rev-parse", "moved^{tree}"]);
    let commit = env.git(
        &repo,
        &[
            "commit-tree",
            &tree,
            "-p",
            "moved",
            "-m",
            "moved from outside",
        ],
    );
    env.git(&repo, &["update-ref", "refs/heads/moved", &commit]);
    // Only the watcher on refs/heads can have seen it (see `watched_only`).
    lsp.expect_notification_since(
        since,
        "slipway/status",
        ahead_is(1),
        EVENT_DEADLINE,
        "ahead 1",
    );
}

/// `initialize` names everything the server accepts, and every name it gives
/// is accepted: shims that offer these lists offer nothing that fails.
#[test]
fn initialize_advertises_the_names_the_server_accepts() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo").canonicalize().expect("canonical");
    let mut lsp = Lsp::start(&env, Some(&repo), false);
    let names = lsp.init["capabilities"]["experimental"]["slipway"].clone();
    assert_eq!(names["protocol"], 1, "{names}");
    let list = |key: &str| -> Vec<String> {
        names[key]
            .as_array()
            .unwrap_or_else(|| panic!("{key} in {names}"))
            .iter()
            .map(|v| v.as_str().expect("a name").to_owned())
            .collect()
    };
    assert_eq!(list("sandboxes"), ["none", "docker", "docker-isolated"]);
    assert_eq!(list("strategies"), ["head", "merge-to-head", "branch"]);
    assert_eq!(
        list("policies"),
        ["host_head", "current_branch", "default", "named", "ask"]
    );
    assert_eq!(list("landModes"), ["merge", "squash", "rebase"]);
    let agents = list("agents");
    assert!(
        agents.len() >= 7 && agents.contains(&"claude-code".to_owned()),
        "{names}"
    );
    for agent in &agents {
        let spec = if agent == "command" {
            json!({ "type": "command", "command": ["true"] })
        } else {
            json!({ "type": agent })
        };
        let plan = lsp.ok(
            "slipway.run",
            json!({ "root": repo, "agent": spec, "prompt": "p", "dryRun": true }),
        );
        assert_eq!(
            plan["plan"]["request"]["agent"]["type"],
            json!(agent),
            "{plan}"
        );
    }
    for strategy in list("strategies") {
        let branch = (strategy == "branch").then_some("named-one");
        lsp.ok(
            "slipway.run",
            json!({ "root": repo, "strategy": strategy, "branch": branch,
                    "agent": { "type": "command", "command": ["true"] }, "dryRun": true }),
        );
    }
    for sandbox in list("sandboxes") {
        let spec = if sandbox == "none" {
            json!({ "type": "none" })
        } else {
            json!({ "type": sandbox, "image": "some-image:1" })
        };
        let plan = lsp.ok(
            "slipway.run",
            json!({ "root": repo, "sandbox": spec,
                    "agent": { "type": "command", "command": ["true"] }, "dryRun": true }),
        );
        assert_eq!(
            plan["plan"]["request"]["sandbox"]["type"],
            json!(sandbox),
            "{plan}"
        );
    }
}
