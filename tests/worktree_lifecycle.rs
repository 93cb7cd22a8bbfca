//! Worktree create / re-use / copy-in / list / close, end to end: the real
//! `slipway` binary against real repositories, answers checked with the real
//! git CLI (DESIGN.md §2 "Worktrees").

use crate::common;
use common::*;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

// ---------------------------------------------------------------- helpers

fn canon(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|e| panic!("canonicalize {}: {e}", p.display()))
}

/// `<repo>/.slipway/worktrees`, canonical.
fn worktrees_dir(repo: &Path) -> PathBuf {
    canon(repo).join(".slipway").join("worktrees")
}

/// `slipway --json worktree create ARGS` in `repo`.
fn create(env: &TestEnv, repo: &Path, args: &[&str]) -> Value {
    let mut full = vec!["worktree", "create"];
    full.extend_from_slice(args);
    env.slipway_json(repo, &full)
}

/// `slipway --json worktree list` entries.
fn list(env: &TestEnv, repo: &Path) -> Vec<Value> {
    let v = env.slipway_json(repo, &["worktree", "list"]);
    v["worktrees"]
        .as_array()
        .unwrap_or_else(|| panic!("no worktrees array in {v}"))
        .clone()
}

/// `slipway --json worktree close SELECTOR [--force]`; a preserved worktree
/// must exit 3 (nothing was removed), a removed one 0.
fn close(env: &TestEnv, repo: &Path, selector: &str, force: bool) -> Value {
    let mut args = vec!["--json", "worktree", "close", selector];
    if force {
        args.push("--force");
    }
    let out = env.slipway(repo, &args);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "close printed no JSON ({e}):\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let expected = if v["outcome"] == "preserved" { 3 } else { 0 };
    assert_eq!(out.status.code(), Some(expected), "{v}");
    v
}

/// `git worktree list --porcelain` as (path, branch short name or None when detached).
fn git_worktrees(env: &TestEnv, repo: &Path) -> Vec<(PathBuf, Option<String>)> {
    let out = env.git(repo, &["worktree", "list", "--porcelain"]);
    let mut result = Vec::new();
    for block in out.split("\n\n") {
        let mut path = None;
        let mut branch = None;
        for line in block.lines() {
            if let Some(p) = line.strip_prefix("worktree ") {
                path = Some(PathBuf::from(p));
            } else if let Some(b) = line.strip_prefix("branch ") {
                branch = Some(b.trim_start_matches("refs/heads/").to_owned());
            }
        }
        if let Some(p) = path {
            result.push((p, branch));
        }
    }
    result
}

/// Whether `git worktree list` in the host lists `path`.
fn git_lists(env: &TestEnv, repo: &Path, path: &Path) -> bool {
    git_worktrees(env, repo).iter().any(|(p, _)| p == path)
}

fn path_of(v: &Value) -> PathBuf {
    PathBuf::from(s(v, "path"))
}

fn notes(v: &Value) -> Vec<String> {
    v["notes"]
        .as_array()
        .unwrap_or_else(|| panic!("no notes array in {v}"))
        .iter()
        .map(|n| n.as_str().expect("note is a string").to_owned())
        .collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|n| n.as_str().expect("string").to_owned())
        .collect()
}

/// Entries of a directory (empty when it does not exist).
fn entries(dir: &Path) -> Vec<String> {
    match std::fs::read_dir(dir) {
        Ok(d) => d
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    }
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
}

fn write(p: &Path, content: &str) {
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).expect("parent dir");
    }
    std::fs::write(p, content).unwrap_or_else(|e| panic!("write {}: {e}", p.display()));
}

/// Host HEAD as (symbolic ref, commit).
fn host_head(env: &TestEnv, repo: &Path) -> (String, String) {
    (
        env.git(repo, &["symbolic-ref", "HEAD"]),
        env.rev(repo, "HEAD"),
    )
}

/// Paths `git status --porcelain` lists (simple names only: no quoting, no renames).
fn porcelain_paths(env: &TestEnv, dir: &Path) -> Vec<String> {
    // Not `env.porcelain`: its trimming would eat the status column of the first line.
    let out = env.git_output(dir, &["status", "--porcelain", "--untracked-files=all"]);
    assert!(out.status.success());
    let mut v: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l[3..].to_owned())
        .collect();
    v.sort();
    v
}

/// Sets `origin/<branch>` as the upstream of `branch`, pointing at `commit` (local refs only).
fn set_upstream(env: &TestEnv, repo: &Path, branch: &str, commit: &str) {
    // A real remote (never fetched from): its fetch refspec maps the upstream.
    if env.git(repo, &["remote"]).lines().all(|r| r != "origin") {
        env.git(
            repo,
            &[
                "remote",
                "add",
                "origin",
                "https://example.invalid/repo.git",
            ],
        );
    }
    env.git(
        repo,
        &["config", &format!("branch.{branch}.remote"), "origin"],
    );
    env.git(
        repo,
        &[
            "config",
            &format!("branch.{branch}.merge"),
            &format!("refs/heads/{branch}"),
        ],
    );
    env.git(
        repo,
        &[
            "update-ref",
            &format!("refs/remotes/origin/{branch}"),
            commit,
        ],
    );
}

// ---------------------------------------------------------------- create

#[test]
fn create_new_branch_makes_a_registered_worktree_under_slipway_and_leaves_host_alone() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    let head_before = host_head(&env, &repo);

    let created = create(&env, &repo, &["--branch", "feature/one"]);
    let path = path_of(&created);

    assert_eq!(s(&created, "branch"), "feature/one");
    assert_eq!(s(&created, "strategy"), "branch");
    assert_eq!(created["reused"], Value::Bool(false));
    assert_eq!(s(&created, "baseCommit"), head_before.1);
    assert!(path.is_dir(), "{} is not a directory", path.display());
    assert_eq!(
        canon(&path).parent().unwrap(),
        worktrees_dir(&repo),
        "worktree not directly under .slipway/worktrees"
    );
    assert_eq!(
        s(&created, "id"),
        path.file_name().unwrap().to_str().unwrap()
    );

    // git itself sees it, on that branch, at the host's commit.
    let listed = git_worktrees(&env, &repo);
    assert!(
        listed
            .iter()
            .any(|(p, b)| *p == canon(&path) && b.as_deref() == Some("feature/one")),
        "git worktree list does not show {} on feature/one: {listed:?}",
        path.display()
    );
    assert_eq!(env.rev(&path, "HEAD"), head_before.1);
    assert_eq!(
        env.git(&path, &["symbolic-ref", "HEAD"]),
        "refs/heads/feature/one"
    );
    assert_eq!(read(&path.join("README.md")), "# test repo\n");

    // .slipway never shows in the host's status.
    assert_eq!(read(&repo.join(".slipway/.gitignore")).trim(), "*");
    assert_eq!(env.porcelain(&repo), "", "host status is not clean");
    assert_eq!(env.porcelain(&path), "", "new worktree is not clean");

    // Host HEAD and branch did not move.
    assert_eq!(host_head(&env, &repo), head_before);
    assert!(
        env.local_branches(&repo)
            .contains(&"feature/one".to_owned())
    );

    // It has a record.
    let l = list(&env, &repo);
    assert_eq!(l.len(), 1, "{l:?}");
    assert_eq!(s(&l[0], "id"), s(&created, "id"));
    assert_eq!(s(&l[0], "health"), "ok");
}

#[test]
fn lookalike_branch_names_get_distinct_directories() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");

    let a = create(&env, &repo, &["--branch", "feat/x"]);
    let b = create(&env, &repo, &["--branch", "feat-x"]);
    let (pa, pb) = (canon(&path_of(&a)), canon(&path_of(&b)));

    assert_ne!(pa, pb, "feat/x and feat-x share a directory");
    assert_eq!(b["reused"], Value::Bool(false));
    assert_eq!(pa.parent().unwrap(), worktrees_dir(&repo));
    assert_eq!(pb.parent().unwrap(), worktrees_dir(&repo));

    let listed = git_worktrees(&env, &repo);
    assert!(
        listed.contains(&(pa.clone(), Some("feat/x".to_owned()))),
        "{listed:?}"
    );
    assert!(
        listed.contains(&(pb.clone(), Some("feat-x".to_owned()))),
        "{listed:?}"
    );
    assert_eq!(env.git(&pa, &["symbolic-ref", "HEAD"]), "refs/heads/feat/x");
    assert_eq!(env.git(&pb, &["symbolic-ref", "HEAD"]), "refs/heads/feat-x");
    assert_eq!(list(&env, &repo).len(), 2);
}

#[test]
fn invalid_branch_names_are_refused_and_nothing_is_created() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");

    for bad in ["a..b", "-x", "x.lock", "a b", "../../etc"] {
        let arg = format!("--branch={bad}");
        let (_, err) = env.slipway_fail(&repo, &["worktree", "create", &arg]);
        assert_eq!(s(&err, "kind"), "invalidBranchName", "{bad:?}: {err}");
        assert!(s(&err, "message").contains(bad), "{bad:?}: {err}");
    }

    assert_eq!(env.local_branches(&repo), vec!["main".to_owned()]);
    assert_eq!(
        git_worktrees(&env, &repo).len(),
        1,
        "a worktree was registered"
    );
    assert_eq!(
        entries(&repo.join(".slipway/worktrees")),
        Vec::<String>::new(),
        "a worktree directory was made"
    );
    assert_eq!(
        entries(&repo.join(".slipway/state")),
        Vec::<String>::new(),
        "a record was written"
    );
    assert!(!env.path().join("etc").exists());
    assert!(list(&env, &repo).is_empty());
    assert_eq!(env.porcelain(&repo), "");
}

#[test]
fn base_is_used_only_when_the_branch_is_new() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    let first = env.rev(&repo, "HEAD");
    let second = env.commit_file(&repo, "two.txt", "2\n", "second");

    // New branch: starts at --base.
    let created = create(&env, &repo, &["--branch", "fresh", "--base", &first]);
    let path = path_of(&created);
    assert_eq!(env.rev(&repo, "refs/heads/fresh"), first);
    assert_eq!(env.rev(&path, "HEAD"), first);
    assert_eq!(s(&created, "baseCommit"), first);
    assert!(!path.join("two.txt").exists());

    // Existing branch: checked out as it is, --base ignored, with a note.
    env.git(&repo, &["branch", "existing", &second]);
    let created = create(&env, &repo, &["--branch", "existing", "--base", &first]);
    let path = path_of(&created);
    assert_eq!(created["reused"], Value::Bool(false));
    assert_eq!(
        env.rev(&repo, "refs/heads/existing"),
        second,
        "branch moved"
    );
    assert_eq!(env.rev(&path, "HEAD"), second);
    assert!(path.join("two.txt").exists());
    let n = notes(&created);
    assert!(
        n.iter().any(|n| n.contains("already exists")),
        "no note about the existing branch: {n:?}"
    );
    // Host untouched.
    assert_eq!(env.rev(&repo, "HEAD"), second);
    assert_eq!(env.git(&repo, &["symbolic-ref", "HEAD"]), "refs/heads/main");
}

#[test]
fn merge_to_head_creates_a_temporary_slipway_branch() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    let head = env.rev(&repo, "HEAD");

    let created = create(&env, &repo, &["--merge-to-head"]);
    let branch = s(&created, "branch").to_owned();
    let path = path_of(&created);

    assert!(branch.starts_with("slipway/merge-"), "{branch}");
    assert_eq!(s(&created, "strategy"), "merge-to-head");
    assert_eq!(s(&created, "targetBranch"), "main");
    assert!(env.local_branches(&repo).contains(&branch));
    assert_eq!(env.rev(&repo, &format!("refs/heads/{branch}")), head);
    assert_eq!(
        env.git(&path, &["symbolic-ref", "HEAD"]),
        format!("refs/heads/{branch}")
    );
    assert_eq!(canon(&path).parent().unwrap(), worktrees_dir(&repo));
    assert!(git_lists(&env, &repo, &canon(&path)));

    // A second one gets its own branch.
    let other = create(&env, &repo, &["--merge-to-head"]);
    assert_ne!(s(&other, "branch"), branch);
    assert_ne!(path_of(&other), path);
    assert_eq!(env.rev(&repo, "HEAD"), head);
}

#[test]
fn branch_checked_out_in_host_is_refused_naming_the_host() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");

    let (_, err) = env.slipway_fail(&repo, &["worktree", "create", "--branch", "main"]);
    assert_eq!(s(&err, "kind"), "branchCheckedOut", "{err}");
    let host = canon(&repo).display().to_string();
    assert!(
        s(&err, "message").contains(&host),
        "error does not say where: {err}"
    );
    assert_eq!(git_worktrees(&env, &repo).len(), 1);
    assert!(list(&env, &repo).is_empty());
}

#[test]
fn branch_checked_out_in_a_foreign_worktree_is_refused_naming_it() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    env.git(
        &repo,
        &["worktree", "add", "-q", "../other", "-b", "foreign"],
    );
    let other = canon(&env.path().join("other"));

    let (_, err) = env.slipway_fail(&repo, &["worktree", "create", "--branch", "foreign"]);
    assert_eq!(s(&err, "kind"), "branchCheckedOut", "{err}");
    assert!(
        s(&err, "message").contains(&other.display().to_string()),
        "error does not name {}: {err}",
        other.display()
    );
    // Nothing of slipway's was made, and the foreign worktree is intact.
    assert_eq!(git_worktrees(&env, &repo).len(), 2);
    assert!(list(&env, &repo).is_empty());
    assert_eq!(
        entries(&repo.join(".slipway/worktrees")),
        Vec::<String>::new()
    );
    assert_eq!(
        env.git(&other, &["symbolic-ref", "HEAD"]),
        "refs/heads/foreign"
    );
}

// ---------------------------------------------------------------- re-use

#[test]
fn creating_again_for_the_same_branch_reuses_the_worktree() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");

    let first = create(&env, &repo, &["--branch", "again"]);
    write(&path_of(&first).join("marker.txt"), "keep me\n");
    let second = create(&env, &repo, &["--branch", "again"]);

    assert_eq!(first["reused"], Value::Bool(false));
    assert_eq!(second["reused"], Value::Bool(true));
    assert_eq!(path_of(&second), path_of(&first));
    assert_eq!(s(&second, "id"), s(&first, "id"));
    assert_eq!(read(&path_of(&second).join("marker.txt")), "keep me\n");
    assert_eq!(git_worktrees(&env, &repo).len(), 2);
    assert_eq!(list(&env, &repo).len(), 1);
}

#[test]
fn reuse_fast_forwards_a_clean_worktree_behind_its_upstream() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    let c1 = env.rev(&repo, "HEAD");
    let created = create(&env, &repo, &["--branch", "ff"]);
    let path = path_of(&created);

    // The host moves on; origin/ff (local ref only) points at the newer commit.
    let c2 = env.commit_file(&repo, "new.txt", "from upstream\n", "upstream work");
    set_upstream(&env, &repo, "ff", &c2);

    let again = create(&env, &repo, &["--branch", "ff"]);
    assert_eq!(again["reused"], Value::Bool(true));
    assert_eq!(path_of(&again), path);
    let n = notes(&again);
    assert!(
        n.iter().any(|n| n.contains("fast-forwarded")),
        "no fast-forward note: {n:?}"
    );
    assert_eq!(env.rev(&path, "HEAD"), c2, "worktree HEAD not at upstream");
    assert_eq!(env.rev(&repo, "refs/heads/ff"), c2);
    assert_eq!(
        env.git(&path, &["symbolic-ref", "HEAD"]),
        "refs/heads/ff",
        "HEAD left the branch"
    );
    assert_eq!(read(&path.join("new.txt")), "from upstream\n");
    assert_eq!(
        env.porcelain(&path),
        "",
        "worktree files not at the new commit"
    );
    assert_ne!(c1, c2);
}

#[test]
fn reuse_does_not_fast_forward_a_dirty_worktree() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    let c1 = env.rev(&repo, "HEAD");
    let path = path_of(&create(&env, &repo, &["--branch", "dirty"]));
    write(&path.join("README.md"), "my edit\n");

    let c2 = env.commit_file(&repo, "new.txt", "from upstream\n", "upstream work");
    set_upstream(&env, &repo, "dirty", &c2);

    let again = create(&env, &repo, &["--branch", "dirty"]);
    assert_eq!(again["reused"], Value::Bool(true));
    assert_eq!(path_of(&again), path);
    let n = notes(&again);
    assert!(
        n.iter().any(|n| n.contains("uncommitted")),
        "no note saying why it was not fast-forwarded: {n:?}"
    );
    assert_eq!(env.rev(&path, "HEAD"), c1);
    assert_eq!(env.rev(&repo, "refs/heads/dirty"), c1);
    assert_eq!(read(&path.join("README.md")), "my edit\n");
    assert!(!path.join("new.txt").exists());
}

#[test]
fn reuse_does_not_move_a_diverged_branch_and_never_loses_local_commits() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    let path = path_of(&create(&env, &repo, &["--branch", "div"]));
    let local = env.commit_file(&path, "local.txt", "mine\n", "local work");

    let c2 = env.commit_file(&repo, "new.txt", "from upstream\n", "upstream work");
    set_upstream(&env, &repo, "div", &c2);

    let again = create(&env, &repo, &["--branch", "div"]);
    assert_eq!(again["reused"], Value::Bool(true));
    let n = notes(&again);
    assert!(
        n.iter().any(|n| n.contains("diverged")),
        "no note about divergence: {n:?}"
    );
    assert_eq!(env.rev(&path, "HEAD"), local, "local commit lost");
    assert_eq!(env.rev(&repo, "refs/heads/div"), local);
    assert_eq!(read(&path.join("local.txt")), "mine\n");
    assert!(!path.join("new.txt").exists());
    assert_eq!(env.porcelain(&path), "");
}

#[test]
fn reuse_of_a_branch_ahead_of_its_upstream_keeps_its_commits() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    let c1 = env.rev(&repo, "HEAD");
    let path = path_of(&create(&env, &repo, &["--branch", "ahead"]));
    let local = env.commit_file(&path, "local.txt", "mine\n", "local work");
    set_upstream(&env, &repo, "ahead", &c1);

    let again = create(&env, &repo, &["--branch", "ahead"]);
    assert_eq!(again["reused"], Value::Bool(true));
    assert_eq!(env.rev(&path, "HEAD"), local, "reset to upstream");
    assert_eq!(env.rev(&repo, "refs/heads/ahead"), local);
    assert_eq!(read(&path.join("local.txt")), "mine\n");
}

#[test]
fn reuse_leaves_a_detached_worktree_as_is() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    let c1 = env.rev(&repo, "HEAD");
    let path = path_of(&create(&env, &repo, &["--branch", "det"]));
    env.git(&path, &["switch", "-q", "--detach"]);

    let c2 = env.commit_file(&repo, "new.txt", "from upstream\n", "upstream work");
    set_upstream(&env, &repo, "det", &c2);

    let again = create(&env, &repo, &["--branch", "det"]);
    assert_eq!(again["reused"], Value::Bool(true));
    assert_eq!(path_of(&again), path);
    let n = notes(&again);
    assert!(
        n.iter().any(|n| n.contains("detached")),
        "no note about the detached HEAD: {n:?}"
    );
    assert_eq!(env.rev(&path, "HEAD"), c1);
    assert_eq!(env.rev(&repo, "refs/heads/det"), c1, "branch moved");
    let sym = env.git_output(&path, &["symbolic-ref", "-q", "HEAD"]);
    assert!(!sym.status.success(), "HEAD is no longer detached");
    assert!(!path.join("new.txt").exists());
}

// ---------------------------------------------------------------- copy-in

#[test]
fn copy_brings_an_ignored_directory_with_symlinks_and_no_hard_links() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    env.commit_file(&repo, ".gitignore", "node_modules/\n", "ignore deps");
    let nm = repo.join("node_modules");
    write(&nm.join("pkg/index.js"), "module.exports = 1;\n");
    write(&nm.join("pkg/lib/deep.js"), "deep\n");
    std::fs::create_dir_all(nm.join(".bin")).unwrap();
    std::os::unix::fs::symlink("../pkg/index.js", nm.join(".bin/tool")).unwrap();

    let created = create(&env, &repo, &["--branch", "cp", "--copy", "node_modules"]);
    let wt = path_of(&created);
    let wnm = wt.join("node_modules");

    assert_eq!(strings(&created["copy"]["copied"]), vec!["node_modules"]);
    assert_eq!(created["copy"]["files"], Value::from(3));
    assert_eq!(read(&wnm.join("pkg/index.js")), "module.exports = 1;\n");
    assert_eq!(read(&wnm.join("pkg/lib/deep.js")), "deep\n");

    // The symlink is still a symlink, with the same target.
    let meta = std::fs::symlink_metadata(wnm.join(".bin/tool")).unwrap();
    assert!(meta.file_type().is_symlink(), "symlink copied as a file");
    assert_eq!(
        std::fs::read_link(wnm.join(".bin/tool")).unwrap(),
        PathBuf::from("../pkg/index.js")
    );
    assert_eq!(read(&wnm.join(".bin/tool")), "module.exports = 1;\n");

    // Never hard links.
    for rel in ["pkg/index.js", "pkg/lib/deep.js"] {
        let h = std::fs::metadata(nm.join(rel)).unwrap();
        let w = std::fs::metadata(wnm.join(rel)).unwrap();
        assert_ne!(
            (h.dev(), h.ino()),
            (w.dev(), w.ino()),
            "{rel} is a hard link"
        );
        assert_eq!(w.nlink(), 1, "{rel} has other links");
        assert_eq!(h.nlink(), 1, "host {rel} gained links");
    }
    write(&wnm.join("pkg/index.js"), "agent wrote this\n");
    assert_eq!(
        read(&nm.join("pkg/index.js")),
        "module.exports = 1;\n",
        "editing the copy changed the host file"
    );

    // Copied files are ignored in the worktree too; the host is untouched.
    assert_eq!(env.porcelain(&wt), "");
    assert_eq!(env.porcelain(&repo), "");
}

#[test]
fn copy_merges_directories_creates_parents_and_warns_on_missing_paths() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    write(&repo.join(".gitignore"), "config/local.env\ndeep/\n");
    env.commit_file(&repo, "config/a.txt", "tracked\n", "config");
    env.git(&repo, &["add", ".gitignore"]);
    env.git(&repo, &["commit", "-q", "-m", "ignore"]);
    write(&repo.join("config/local.env"), "SECRET=1\n");
    write(&repo.join("deep/nested/file.txt"), "nested\n");

    let created = create(
        &env,
        &repo,
        &[
            "--branch",
            "merge-dirs",
            "--copy",
            "config",
            "--copy",
            "deep/nested/file.txt",
            "--copy",
            "does-not-exist",
        ],
    );
    let wt = path_of(&created);

    assert_eq!(read(&wt.join("config/local.env")), "SECRET=1\n");
    assert_eq!(read(&wt.join("config/a.txt")), "tracked\n");
    assert!(
        !wt.join("config/config").exists(),
        "config was nested into config/config"
    );
    let mut in_config = entries(&wt.join("config"));
    in_config.sort();
    assert_eq!(in_config, vec!["a.txt", "local.env"]);
    assert_eq!(read(&wt.join("deep/nested/file.txt")), "nested\n");

    // A missing path is a warning, not an error.
    let warnings = strings(&created["copy"]["warnings"]);
    assert!(
        warnings.iter().any(|w| w.contains("does-not-exist")),
        "no warning for the missing path: {warnings:?}"
    );
    assert!(
        notes(&created).iter().any(|n| n.contains("does-not-exist")),
        "the warning is not among the notes: {created}"
    );
    assert!(!wt.join("does-not-exist").exists());
    assert_eq!(env.porcelain(&wt), "");
}

#[test]
fn copy_accepts_globs() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    env.commit_file(&repo, ".gitignore", "*.env\nnotes.txt\n", "ignore");
    write(&repo.join("dev.env"), "DEV=1\n");
    write(&repo.join("prod.env"), "PROD=1\n");
    write(&repo.join("notes.txt"), "private\n");

    let created = create(&env, &repo, &["--branch", "globs", "--copy", "*.env"]);
    let wt = path_of(&created);

    assert_eq!(read(&wt.join("dev.env")), "DEV=1\n");
    assert_eq!(read(&wt.join("prod.env")), "PROD=1\n");
    assert!(
        !wt.join("notes.txt").exists(),
        "a non-matching file was copied"
    );
    let copied = strings(&created["copy"]["copied"]);
    assert!(copied.contains(&"dev.env".to_owned()), "{copied:?}");
    assert!(copied.contains(&"prod.env".to_owned()), "{copied:?}");
    assert_eq!(env.porcelain(&wt), "");
}

#[test]
fn worktreeinclude_copies_ignored_files_that_match_only() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    write(&repo.join(".gitignore"), ".env\nbuild/\n");
    write(&repo.join(".worktreeinclude"), ".env\nnotes.md\n");
    env.git(&repo, &["add", ".gitignore", ".worktreeinclude"]);
    env.git(&repo, &["commit", "-q", "-m", "ignore and include"]);
    write(&repo.join(".env"), "TOKEN=abc\n");
    write(&repo.join("build/out.bin"), "binary\n");
    // Matches .worktreeinclude but is not ignored: not copied.
    write(&repo.join("notes.md"), "untracked, not ignored\n");

    let created = create(&env, &repo, &["--branch", "incl"]);
    let wt = path_of(&created);

    assert_eq!(read(&wt.join(".env")), "TOKEN=abc\n", ".env not copied");
    assert!(
        !wt.join("build").exists(),
        "an ignored file that does not match was copied"
    );
    assert!(
        !wt.join("notes.md").exists(),
        "a file that is not ignored was copied"
    );
    assert_eq!(strings(&created["copy"]["copied"]), vec![".env"]);
    assert_eq!(env.porcelain(&wt), "");
}

// ---------------------------------------------------------------- close

#[test]
fn close_clean_branch_worktree_removes_it_and_keeps_the_branch() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    let created = create(&env, &repo, &["--branch", "keep-me"]);
    let path = path_of(&created);
    let local = env.commit_file(&path, "work.txt", "work\n", "work");

    let closed = close(&env, &repo, s(&created, "id"), false);
    assert_eq!(s(&closed, "outcome"), "removed", "{closed}");
    assert_eq!(closed["branchDeleted"], Value::Bool(false));
    assert!(!path.exists(), "directory still there");
    assert!(!git_lists(
        &env,
        &repo,
        &canon(&repo)
            .join(".slipway/worktrees")
            .join(s(&created, "id"))
    ));
    assert_eq!(git_worktrees(&env, &repo).len(), 1);
    assert!(env.local_branches(&repo).contains(&"keep-me".to_owned()));
    assert_eq!(env.rev(&repo, "refs/heads/keep-me"), local);
    assert!(list(&env, &repo).is_empty());
    assert_eq!(env.porcelain(&repo), "");
}

#[test]
fn close_clean_merge_to_head_worktree_without_commits_deletes_its_branch() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    let created = create(&env, &repo, &["--merge-to-head"]);
    let branch = s(&created, "branch").to_owned();
    let path = path_of(&created);

    let closed = close(&env, &repo, &branch, false);
    assert_eq!(s(&closed, "outcome"), "removed", "{closed}");
    assert_eq!(closed["branchDeleted"], Value::Bool(true), "{closed}");
    assert!(closed["branchKept"].is_null(), "{closed}");
    assert!(!path.exists());
    assert_eq!(git_worktrees(&env, &repo).len(), 1);
    assert_eq!(env.local_branches(&repo), vec!["main".to_owned()]);
}

#[test]
fn close_merge_to_head_with_unique_commits_keeps_the_branch_and_says_how_to_merge() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    let created = create(&env, &repo, &["--merge-to-head"]);
    let branch = s(&created, "branch").to_owned();
    let path = path_of(&created);
    let commit = env.commit_file(&path, "agent.txt", "agent work\n", "agent work");

    let closed = close(&env, &repo, s(&created, "id"), false);
    assert_eq!(s(&closed, "outcome"), "removed", "{closed}");
    assert!(!path.exists());
    assert_eq!(git_worktrees(&env, &repo).len(), 1);
    assert_eq!(closed["branchDeleted"], Value::Bool(false), "{closed}");
    assert!(
        env.local_branches(&repo).contains(&branch),
        "branch with unique commits deleted"
    );
    assert_eq!(env.rev(&repo, &format!("refs/heads/{branch}")), commit);
    let kept = s(&closed, "branchKept");
    assert!(!kept.contains("git "), "advice around slipway: {kept}");
    // What to do is slipway's own commands on the kept branch.
    let actions: Vec<(String, String)> = closed["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .map(|a| (s(a, "kind").to_owned(), s(a, "worktree").to_owned()))
        .collect();
    for kind in ["review", "land", "discard"] {
        assert!(
            actions.contains(&(kind.to_owned(), branch.clone())),
            "{kind} {branch}: {closed}"
        );
    }
    // The kept branch is a worktree-less entry the review commands accept.
    let diff = env.slipway_json(&repo, &["diff", &branch]);
    assert_eq!(diff["files"][0]["path"], "agent.txt", "{diff}");
    let listed = env.slipway_json(&repo, &["worktree", "list"]);
    assert_eq!(
        listed["keptBranches"][0]["branch"],
        branch.as_str(),
        "{listed}"
    );
    assert_eq!(listed["keptBranches"][0]["ahead"], 1, "{listed}");
}

/// Closing a dirty worktree preserves it, says why and how, and is repeatable;
/// `--force` removes it.
fn assert_close_preserves(env: &TestEnv, repo: &Path, created: &Value, file: &str) {
    let path = path_of(created);
    let id = s(created, "id");
    let content_before = std::fs::read(path.join(file)).ok();

    let closed = close(env, repo, id, false);
    assert_eq!(s(&closed, "outcome"), "preserved", "{closed}");
    assert_eq!(PathBuf::from(s(&closed, "preservedPath")), path);
    assert!(
        s(&closed, "reason").contains(file),
        "reason does not name {file}: {closed}"
    );
    assert!(
        strings(&closed["changedPaths"]).contains(&file.to_owned()),
        "{closed}"
    );
    let commands = strings(&closed["commands"]);
    assert!(
        commands.contains(&format!("cd {}", path.display())),
        "{commands:?}"
    );
    assert!(
        !commands.iter().any(|c| c.contains("git worktree remove")),
        "advice around slipway's records: {commands:?}"
    );
    let forced_close = closed["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .any(|a| a["kind"] == "close" && a["force"] == true);
    assert!(forced_close, "what to do names close with force: {closed}");
    assert!(path.is_dir(), "dirty worktree removed");
    assert!(git_lists(env, repo, &canon(&path)));
    assert_eq!(
        std::fs::read(path.join(file)).ok(),
        content_before,
        "{file} changed"
    );
    let l = list(env, repo);
    assert_eq!(l.len(), 1);
    assert_eq!(s(&l[0], "state"), "preserved");

    // Again: the same answer.
    let again = close(env, repo, id, false);
    assert_eq!(again, closed, "closing again gave another answer");

    // --force removes it.
    let forced = close(env, repo, id, true);
    assert_eq!(s(&forced, "outcome"), "removed", "{forced}");
    assert!(!path.exists(), "--force left the directory");
    assert!(!git_lists(
        env,
        repo,
        &canon(repo).join(".slipway/worktrees").join(id)
    ));
    assert_eq!(git_worktrees(env, repo).len(), 1);
    assert!(list(env, repo).is_empty());
}

#[test]
fn close_preserves_untracked_changes_even_when_status_hides_untracked_files() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    env.git(&repo, &["config", "status.showUntrackedFiles", "no"]);
    let created = create(&env, &repo, &["--branch", "untracked"]);
    write(&path_of(&created).join("scratch.txt"), "unsaved idea\n");
    assert_close_preserves(&env, &repo, &created, "scratch.txt");
}

#[test]
fn close_preserves_untracked_changes() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    let created = create(&env, &repo, &["--branch", "untracked2"]);
    write(&path_of(&created).join("scratch.txt"), "unsaved idea\n");
    assert_close_preserves(&env, &repo, &created, "scratch.txt");
}

#[test]
fn close_preserves_staged_changes() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    let created = create(&env, &repo, &["--branch", "staged"]);
    let path = path_of(&created);
    write(&path.join("README.md"), "staged edit\n");
    env.git(&path, &["add", "README.md"]);
    assert_close_preserves(&env, &repo, &created, "README.md");
}

#[test]
fn close_preserves_unstaged_changes() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    let created = create(&env, &repo, &["--branch", "unstaged"]);
    write(&path_of(&created).join("README.md"), "unstaged edit\n");
    assert_close_preserves(&env, &repo, &created, "README.md");
}

#[test]
fn close_by_id_path_and_branch_and_unknown_selector() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    let a = create(&env, &repo, &["--branch", "by-id"]);
    let b = create(&env, &repo, &["--branch", "by-path"]);
    let c = create(&env, &repo, &["--branch", "by/branch"]);

    let (_, err) = env.slipway_fail(&repo, &["worktree", "close", "no-such-worktree"]);
    assert_eq!(s(&err, "kind"), "worktreeNotFound", "{err}");
    assert_eq!(
        list(&env, &repo).len(),
        3,
        "an unknown selector closed something"
    );

    let closed = close(&env, &repo, s(&a, "id"), false);
    assert_eq!(s(&closed, "outcome"), "removed");
    assert_eq!(s(&closed, "branch"), "by-id");
    assert!(!path_of(&a).exists());

    let closed = close(&env, &repo, s(&b, "path"), false);
    assert_eq!(s(&closed, "outcome"), "removed");
    assert_eq!(s(&closed, "branch"), "by-path");
    assert!(!path_of(&b).exists());

    let closed = close(&env, &repo, "by/branch", false);
    assert_eq!(s(&closed, "outcome"), "removed");
    assert_eq!(s(&closed, "id"), s(&c, "id"));
    assert!(!path_of(&c).exists());

    assert!(list(&env, &repo).is_empty());
    assert_eq!(git_worktrees(&env, &repo).len(), 1);
    let (_, err) = env.slipway_fail(&repo, &["worktree", "close", s(&a, "id")]);
    assert_eq!(s(&err, "kind"), "worktreeNotFound", "{err}");
}

// ---------------------------------------------------------------- list

#[test]
fn list_reports_dirty_files_and_ahead_as_git_sees_them() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    env.commit_file(&repo, "src/lib.txt", "lib\n", "lib");
    let clean = create(&env, &repo, &["--branch", "clean"]);
    let busy = create(&env, &repo, &["--branch", "busy"]);
    let wt = path_of(&busy);

    env.commit_file(&wt, "one.txt", "1\n", "one");
    env.commit_file(&wt, "two.txt", "2\n", "two");
    write(&wt.join("README.md"), "unstaged\n");
    write(&wt.join("src/lib.txt"), "staged\n");
    env.git(&wt, &["add", "src/lib.txt"]);
    write(&wt.join("newdir/inner/untracked.txt"), "u\n");

    let l = list(&env, &repo);
    assert_eq!(l.len(), 2, "{l:?}");
    let by_id = |id: &str| {
        l.iter()
            .find(|e| s(e, "id") == id)
            .unwrap_or_else(|| panic!("{id} not listed: {l:?}"))
            .clone()
    };

    let c = by_id(s(&clean, "id"));
    assert_eq!(c["dirty"], Value::Bool(false));
    assert_eq!(c["changedFiles"], Value::from(0));
    assert_eq!(c["ahead"], Value::from(0));
    assert_eq!(s(&c, "health"), "ok");
    assert_eq!(env.porcelain(&path_of(&clean)), "");

    let b = by_id(s(&busy, "id"));
    let git_paths = porcelain_paths(&env, &wt);
    assert_eq!(git_paths.len(), 3, "{git_paths:?}");
    assert_eq!(b["dirty"], Value::Bool(true));
    assert_eq!(b["changedFiles"], Value::from(git_paths.len()), "{b}");
    let mut listed = strings(&b["changedPaths"]);
    listed.sort();
    assert_eq!(listed, git_paths);

    let base = s(&b, "baseCommit");
    let count: usize = env
        .git(&repo, &["rev-list", "--count", &format!("{base}..busy")])
        .parse()
        .unwrap();
    assert_eq!(count, 2);
    assert_eq!(b["ahead"], Value::from(count), "{b}");
    assert_eq!(s(&b, "health"), "ok");
}

#[test]
fn list_shows_an_orphan_record_as_missing() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    let created = create(&env, &repo, &["--branch", "orphan"]);
    let path = path_of(&created);
    std::fs::remove_dir_all(&path).unwrap();
    env.git(&repo, &["worktree", "prune"]);
    assert_eq!(git_worktrees(&env, &repo).len(), 1);

    let l = list(&env, &repo);
    assert_eq!(l.len(), 1, "orphan record not listed: {l:?}");
    assert_eq!(s(&l[0], "id"), s(&created, "id"));
    assert_eq!(s(&l[0], "health"), "missing", "{l:?}");

    // The branch can be worked on again, and the orphan is gone then.
    let again = create(&env, &repo, &["--branch", "orphan"]);
    assert!(path_of(&again).is_dir());
    let l = list(&env, &repo);
    assert_eq!(l.len(), 1, "{l:?}");
    assert_eq!(s(&l[0], "health"), "ok");
}

#[test]
fn list_rebuilds_a_deleted_record_for_a_registered_worktree() {
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    let created = create(&env, &repo, &["--branch", "lost/record"]);
    let id = s(&created, "id").to_owned();
    let record = repo.join(".slipway/state").join(format!("{id}.json"));
    assert!(record.is_file(), "no record at {}", record.display());
    std::fs::remove_file(&record).unwrap();

    let l = list(&env, &repo);
    assert_eq!(l.len(), 1, "worktree without a record not listed: {l:?}");
    assert_eq!(s(&l[0], "id"), id);
    assert_eq!(s(&l[0], "branch"), "lost/record");
    assert_eq!(PathBuf::from(s(&l[0], "path")), canon(&path_of(&created)));
    assert_eq!(s(&l[0], "health"), "ok");
    assert!(record.is_file(), "record not rebuilt on disk");

    let closed = close(&env, &repo, "lost/record", false);
    assert_eq!(s(&closed, "outcome"), "removed");
    assert!(!path_of(&created).exists());
}

#[test]
fn bad_copy_patterns_are_refused_before_anything_is_created() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let branches_before = env.local_branches(&repo);
    for (pattern, says) in [
        ("../secrets", "leaves the repository"),
        ("/etc/passwd", "leaves the repository"),
        ("node_modules/../../x", "leaves the repository"),
        ("src/[", "is not a valid glob"),
    ] {
        let (_, err) = env.slipway_fail(
            &repo,
            &[
                "worktree", "create", "--branch", "copy-x", "--copy", pattern,
            ],
        );
        assert_eq!(err["kind"], "invalidParams", "{pattern}: {err}");
        let message = s(&err, "message");
        assert!(message.contains(pattern), "{message}");
        assert!(message.contains(says), "{message}");
        assert!(message.contains("nothing was created"), "{message}");
        assert!(
            entries(&worktrees_dir(&repo)).is_empty(),
            "{pattern}: a worktree was left behind"
        );
        assert_eq!(env.local_branches(&repo), branches_before, "{pattern}");
        assert!(list(&env, &repo).is_empty(), "{pattern}: a record was left");
    }
    // The same check stops a run before it makes its worktree.
    let agent = env.script("never", "touch ran\n");
    let (_, err) = env.slipway_fail(
        &repo,
        &[
            "run",
            "--strategy",
            "branch",
            "--branch",
            "copy-y",
            "--copy",
            "../x",
            "--",
            agent.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(err["kind"], "invalidParams", "{err}");
    assert!(entries(&worktrees_dir(&repo)).is_empty());
    assert_eq!(env.local_branches(&repo), branches_before);
}

#[test]
fn worktrees_live_under_the_worktree_root_the_user_sets() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let other = env.new_repo("other");
    let every = env.path().join("fast-disk");
    let one = env.path().join("just-other");
    std::fs::create_dir_all(env.home().join(".config/slipway")).expect("config dir");
    std::fs::write(
        env.home().join(".config/slipway/config.toml"),
        format!(
            "worktree_root = \"{}\"\n[worktree_roots]\n\"{}\" = \"{}\"\n",
            every.display(),
            other.display(),
            one.display()
        ),
    )
    .expect("config");
    let created = env.slipway_json(&repo, &["worktree", "create", "--branch", "feat/x"]);
    let path = std::path::PathBuf::from(s(&created, "path"));
    let every_real = every.canonicalize().unwrap_or(every.clone());
    assert!(
        path.starts_with(&every_real) || path.starts_with(&every),
        "{} is under the worktree root",
        path.display()
    );
    assert!(
        repo.join(".slipway/state")
            .join(format!("{}.json", s(&created, "id")))
            .is_file(),
        "the record stays in the repository"
    );
    // A run works there, and close removes it from there.
    let (ok, result, log) = env.run_result(
        &repo,
        &[
            "--json",
            "run",
            "--worktree",
            "feat/x",
            "--",
            "sh",
            "-c",
            "echo x > x.txt && git add x.txt && git commit -qm x",
        ],
    );
    assert!(ok, "{result}\n{log}");
    assert_eq!(env.git(&repo, &["log", "-1", "--format=%s", "feat/x"]), "x");
    let closed = env.slipway_json(&repo, &["worktree", "close", "feat/x"]);
    assert_eq!(closed["outcome"], "removed", "{closed}");
    assert!(!path.exists());
    // A repository of its own: its own folder.
    let created = env.slipway_json(&other, &["worktree", "create", "--branch", "feat/x"]);
    let path = std::path::PathBuf::from(s(&created, "path"));
    assert!(
        path.starts_with(one.canonicalize().expect("made")),
        "{} is under that repository's root",
        path.display()
    );
    assert_eq!(env.porcelain(&other), "");
}
