//! Source branch policies (DESIGN.md §1, §2 "Source branch policy"), checked
//! end to end through `slipway --json resolve` and `slipway --json worktree
//! create` against real repositories, with real git as the reference answer.

use crate::common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

/// Every branch a user could name, as git lists them: local branches sorted,
/// then remote-tracking branches sorted, without `<remote>/HEAD`.
fn git_branch_choices(env: &TestEnv, dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for (ns, skip_head) in [("refs/heads/", false), ("refs/remotes/", true)] {
        let listing = env.git(dir, &["for-each-ref", "--format=%(refname)", ns]);
        for line in listing.lines() {
            let short = line.strip_prefix(ns).expect("namespace prefix");
            if skip_head && short.ends_with("/HEAD") {
                continue;
            }
            out.push(short.to_owned());
        }
    }
    out
}

/// The names of an error's `choices`, each a whole branch entry.
fn choices(err: &Value) -> Vec<String> {
    err["data"]["choices"]
        .as_array()
        .unwrap_or_else(|| panic!("error has no data.choices: {err}"))
        .iter()
        .map(|c| {
            assert!(
                c["commit"].as_str().is_some_and(|s| s.len() == 40),
                "a choice is a branch entry with its commit: {c}"
            );
            c["name"].as_str().expect("a choice has a name").to_owned()
        })
        .collect()
}

/// `slipway --json resolve ARGS` in `dir`.
fn resolve(env: &TestEnv, dir: &Path, args: &[&str]) -> Value {
    let mut full = vec!["resolve"];
    full.extend_from_slice(args);
    env.slipway_json(dir, &full)
}

/// `slipway --json resolve ARGS` in `dir`, which must fail; returns the error object.
fn resolve_err(env: &TestEnv, dir: &Path, args: &[&str]) -> Value {
    let mut full = vec!["resolve"];
    full.extend_from_slice(args);
    let (stdout, err) = env.slipway_fail(dir, &full);
    assert_eq!(
        stdout,
        Value::Null,
        "a failed resolve must print nothing on stdout"
    );
    err
}

/// The symbolic target of HEAD (`refs/heads/x`), or None when detached.
fn head_symref(env: &TestEnv, dir: &Path) -> Option<String> {
    let out = env.git_output(dir, &["symbolic-ref", "-q", "HEAD"]);
    if out.status.success() {
        Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        None
    }
}

/// An "origin" repository with `main` and `feature/x`, and a clone of it in
/// which local `feature/x` has one more commit than `origin/feature/x`, so the
/// two are different starting points. The clone is left on `main`.
struct Cloned {
    origin: PathBuf,
    clone: PathBuf,
    /// Tip of local `feature/x` in the clone.
    local_fx: String,
    /// Tip of `origin/feature/x` in the clone.
    remote_fx: String,
}

fn cloned_fixture(env: &TestEnv) -> Cloned {
    let origin = env.new_repo("origin");
    env.commit_file(&origin, "main.txt", "main 2\n", "second on main");
    env.git(&origin, &["checkout", "-q", "-b", "feature/x"]);
    env.commit_file(&origin, "fx.txt", "remote fx\n", "feature x upstream");
    env.git(&origin, &["checkout", "-q", "main"]);

    let clone = env.path().join("clone");
    env.git(
        env.path(),
        &["clone", "-q", origin.to_str().expect("utf-8 path"), "clone"],
    );
    env.git(&clone, &["checkout", "-q", "feature/x"]);
    let local_fx = env.commit_file(&clone, "fx.txt", "local fx\n", "feature x local work");
    env.git(&clone, &["checkout", "-q", "main"]);
    let remote_fx = env.rev(&clone, "refs/remotes/origin/feature/x");
    assert_ne!(local_fx, remote_fx, "fixture: local and remote must differ");
    assert_eq!(local_fx, env.rev(&clone, "refs/heads/feature/x"));
    Cloned {
        origin,
        clone,
        local_fx,
        remote_fx,
    }
}

// ---------------------------------------------------------------- host_head

#[test]
fn host_head_on_a_branch_is_the_exact_head_commit_and_its_branch() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    env.git(&repo, &["checkout", "-q", "-b", "topic"]);
    let tip = env.commit_file(&repo, "t.txt", "t\n", "topic work");

    for spelling in ["host_head", "host-head"] {
        let r = resolve(&env, &repo, &["--source", spelling]);
        assert_eq!(s(&r, "commit"), env.rev(&repo, "HEAD"), "{spelling}");
        assert_eq!(s(&r, "commit"), tip);
        assert_eq!(s(&r, "ref"), "refs/heads/topic", "{spelling}");
        assert_eq!(
            Some(s(&r, "ref").to_owned()),
            head_symref(&env, &repo),
            "ref must be what git says HEAD points at"
        );
        assert!(
            s(&r, "label").contains("topic"),
            "label should name the branch: {r}"
        );
    }

    // The same answer from a subdirectory and through --repo from elsewhere.
    std::fs::create_dir_all(repo.join("sub/dir")).expect("mkdir");
    let here = resolve(&env, &repo, &["--source", "host-head"]);
    let from_sub = resolve(&env, &repo.join("sub/dir"), &["--source", "host-head"]);
    assert_eq!(from_sub, here);
    let via_flag = resolve(
        &env,
        env.path(),
        &[
            "--repo",
            repo.join("sub").to_str().expect("utf-8"),
            "--source",
            "host-head",
        ],
    );
    assert_eq!(via_flag, here);
}

#[test]
fn host_head_on_a_detached_head_is_the_exact_commit_with_no_ref() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let first = env.rev(&repo, "HEAD");
    env.commit_file(&repo, "a.txt", "a\n", "second");
    env.git(&repo, &["checkout", "-q", "--detach", &first]);
    assert_eq!(head_symref(&env, &repo), None, "fixture: detached");

    for spelling in ["host_head", "host-head"] {
        let r = resolve(&env, &repo, &["--source", spelling]);
        assert_eq!(s(&r, "commit"), env.rev(&repo, "HEAD"), "{spelling}");
        assert_eq!(s(&r, "commit"), first);
        assert!(r["ref"].is_null(), "detached HEAD has no ref: {r}");
        assert!(
            s(&r, "label").contains(&first[..7]),
            "label should show the commit: {r}"
        );
    }
}

// ------------------------------------------------------------ current_branch

#[test]
fn current_branch_is_the_tip_of_the_checked_out_branch() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    env.git(&repo, &["checkout", "-q", "-b", "feature/cur"]);
    env.commit_file(&repo, "c.txt", "c\n", "current work");

    for spelling in ["current_branch", "current-branch"] {
        let r = resolve(&env, &repo, &["--source", spelling]);
        assert_eq!(
            s(&r, "commit"),
            env.rev(&repo, "refs/heads/feature/cur"),
            "{spelling}"
        );
        assert_eq!(s(&r, "ref"), "refs/heads/feature/cur", "{spelling}");
        assert_ne!(s(&r, "commit"), env.rev(&repo, "main"));
    }
}

#[test]
fn current_branch_on_a_detached_head_fails_with_the_branches_to_choose_from() {
    let env = TestEnv::new();
    let c = cloned_fixture(&env);
    env.git(&c.clone, &["branch", "-q", "topic"]);
    env.git(&c.clone, &["checkout", "-q", "--detach", "HEAD"]);
    assert_eq!(head_symref(&env, &c.clone), None, "fixture: detached");

    for spelling in ["current_branch", "current-branch"] {
        let err = resolve_err(&env, &c.clone, &["--source", spelling]);
        assert_eq!(err["kind"], "detachedHead", "{spelling}: {err}");
        let got = choices(&err);
        assert_eq!(got, git_branch_choices(&env, &c.clone));
        for expected in [
            "main",
            "feature/x",
            "topic",
            "origin/main",
            "origin/feature/x",
        ] {
            assert!(
                got.iter().any(|b| b == expected),
                "{expected} missing: {got:?}"
            );
        }
        assert!(
            s(&err, "message").contains("detached"),
            "message should say why: {err}"
        );
    }
}

// ------------------------------------------------------------------ default

#[test]
fn default_with_a_clone_is_origin_head_even_when_local_main_moved() {
    let env = TestEnv::new();
    let c = cloned_fixture(&env);
    // Local main moves ahead of origin/main: default must still be origin's.
    let local_main = env.commit_file(&c.clone, "l.txt", "l\n", "local main work");
    assert_eq!(
        env.git(&c.clone, &["symbolic-ref", "refs/remotes/origin/HEAD"]),
        "refs/remotes/origin/main",
        "fixture: git clone sets origin/HEAD"
    );
    let origin_main = env.rev(&c.clone, "refs/remotes/origin/main");
    assert_ne!(origin_main, local_main);
    assert_eq!(origin_main, env.rev(&c.origin, "main"));

    let r = resolve(&env, &c.clone, &["--source", "default"]);
    assert_eq!(s(&r, "commit"), origin_main);
    assert_eq!(s(&r, "commit"), env.rev(&c.clone, "origin/HEAD"));
    assert_eq!(s(&r, "ref"), "refs/remotes/origin/main");
    assert!(s(&r, "label").contains("origin/main"), "{r}");
}

#[test]
fn default_follows_origin_head_to_a_branch_not_called_main() {
    let env = TestEnv::new();
    let origin = env.new_repo("origin");
    env.git(&origin, &["branch", "-q", "-m", "main", "trunk"]);
    let trunk = env.commit_file(&origin, "t.txt", "t\n", "trunk work");
    env.git(
        env.path(),
        &["clone", "-q", origin.to_str().expect("utf-8"), "clone"],
    );
    let clone = env.path().join("clone");
    // A local main that is not origin's default branch.
    env.git(&clone, &["branch", "-q", "main", "HEAD~1"]);
    assert_eq!(
        env.git(&clone, &["symbolic-ref", "refs/remotes/origin/HEAD"]),
        "refs/remotes/origin/trunk"
    );

    let r = resolve(&env, &clone, &["--source", "default"]);
    assert_eq!(s(&r, "ref"), "refs/remotes/origin/trunk");
    assert_eq!(s(&r, "commit"), trunk);
    assert_eq!(s(&r, "commit"), env.rev(&clone, "origin/HEAD"));
}

#[test]
fn default_without_any_origin_is_main() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let main = env.rev(&repo, "main");
    // HEAD on another branch with its own commit: default is not HEAD.
    env.git(&repo, &["checkout", "-q", "-b", "dev"]);
    env.commit_file(&repo, "d.txt", "d\n", "dev work");
    assert_eq!(env.git(&repo, &["remote"]), "", "fixture: no remotes");

    let r = resolve(&env, &repo, &["--source", "default"]);
    assert_eq!(s(&r, "commit"), main);
    assert_eq!(s(&r, "ref"), "refs/heads/main");
}

#[test]
fn default_without_origin_head_falls_back_to_local_main() {
    let env = TestEnv::new();
    let c = cloned_fixture(&env);
    env.git(&c.clone, &["remote", "set-head", "origin", "-d"]);
    assert!(
        !env.git_output(
            &c.clone,
            &["rev-parse", "--verify", "-q", "refs/remotes/origin/HEAD"]
        )
        .status
        .success(),
        "fixture: origin/HEAD deleted"
    );
    // Local main differs from origin/main so the two answers can be told apart.
    let local_main = env.commit_file(&c.clone, "l.txt", "l\n", "local main work");
    assert_ne!(local_main, env.rev(&c.clone, "refs/remotes/origin/main"));

    let r = resolve(&env, &c.clone, &["--source", "default"]);
    assert_eq!(s(&r, "commit"), local_main);
    assert_eq!(s(&r, "ref"), "refs/heads/main");
}

#[test]
fn default_ignores_an_origin_head_whose_target_is_missing() {
    let env = TestEnv::new();
    let c = cloned_fixture(&env);
    env.git(
        &c.clone,
        &[
            "symbolic-ref",
            "refs/remotes/origin/HEAD",
            "refs/remotes/origin/gone",
        ],
    );
    let local_main = env.commit_file(&c.clone, "l.txt", "l\n", "local main work");

    let r = resolve(&env, &c.clone, &["--source", "default"]);
    assert_eq!(s(&r, "commit"), local_main);
    assert_eq!(s(&r, "ref"), "refs/heads/main");
}

#[test]
fn default_uses_init_default_branch_from_the_repo_config() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    env.git(&repo, &["branch", "-q", "-m", "main", "trunk"]);
    let trunk = env.commit_file(&repo, "t.txt", "t\n", "trunk work");
    env.git(&repo, &["config", "init.defaultBranch", "trunk"]);
    // HEAD elsewhere, so the answer cannot be HEAD by accident.
    env.git(&repo, &["checkout", "-q", "-b", "dev"]);
    env.commit_file(&repo, "d.txt", "d\n", "dev work");
    assert!(
        !env.git_output(&repo, &["rev-parse", "--verify", "-q", "refs/heads/main"])
            .status
            .success(),
        "fixture: no main"
    );

    let r = resolve(&env, &repo, &["--source", "default"]);
    assert_eq!(s(&r, "commit"), trunk);
    assert_eq!(s(&r, "ref"), "refs/heads/trunk");

    // init.defaultBranch wins over an existing main.
    env.git(&repo, &["branch", "-q", "main", "trunk~1"]);
    let r = resolve(&env, &repo, &["--source", "default"]);
    assert_eq!(s(&r, "ref"), "refs/heads/trunk");
    assert_eq!(s(&r, "commit"), trunk);

    // A configured default branch that does not exist is skipped for main.
    env.git(&repo, &["config", "init.defaultBranch", "nowhere"]);
    let r = resolve(&env, &repo, &["--source", "default"]);
    assert_eq!(s(&r, "ref"), "refs/heads/main");
    assert_eq!(s(&r, "commit"), env.rev(&repo, "trunk~1"));
}

#[test]
fn default_with_nothing_usable_fails_listing_the_branches() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    env.git(&repo, &["branch", "-q", "-m", "main", "dev"]);
    assert_eq!(env.local_branches(&repo), vec!["dev".to_owned()]);
    assert_eq!(env.git(&repo, &["remote"]), "");

    let err = resolve_err(&env, &repo, &["--source", "default"]);
    assert_eq!(err["kind"], "noDefaultBranch", "{err}");
    let got = choices(&err);
    assert!(got.iter().any(|b| b == "dev"), "{got:?}");
    assert_eq!(got, git_branch_choices(&env, &repo));
    assert!(
        s(&err, "message").contains("dev"),
        "the message should name the choices: {err}"
    );
}

// -------------------------------------------------------------------- named

#[test]
fn named_local_and_remote_tracking_refs_are_different_starting_points() {
    let env = TestEnv::new();
    let c = cloned_fixture(&env);
    let dir = &c.clone;

    let local_ways: [&[&str]; 3] = [
        &["--source", "named", "--ref", "feature/x"],
        &["--ref", "feature/x"],
        &["--source", "named:feature/x"],
    ];
    for args in local_ways {
        let r = resolve(&env, dir, args);
        assert_eq!(s(&r, "commit"), c.local_fx, "{args:?}");
        assert_eq!(s(&r, "commit"), env.rev(dir, "refs/heads/feature/x"));
        assert_eq!(s(&r, "ref"), "refs/heads/feature/x", "{args:?}");
    }

    let remote_ways: [&[&str]; 3] = [
        &["--source", "named", "--ref", "origin/feature/x"],
        &["--ref", "origin/feature/x"],
        &["--source", "named:origin/feature/x"],
    ];
    for args in remote_ways {
        let r = resolve(&env, dir, args);
        assert_eq!(s(&r, "commit"), c.remote_fx, "{args:?}");
        assert_eq!(
            s(&r, "commit"),
            env.rev(dir, "refs/remotes/origin/feature/x")
        );
        assert_eq!(s(&r, "ref"), "refs/remotes/origin/feature/x", "{args:?}");
        assert!(s(&r, "label").contains("origin/feature/x"), "{r}");
    }
}

#[test]
fn named_with_an_unknown_ref_fails_with_the_branches_to_choose_from() {
    let env = TestEnv::new();
    let c = cloned_fixture(&env);
    for args in [
        &["--source", "named", "--ref", "feature/nope"][..],
        &["--source", "named:origin/nope"][..],
        &["--ref", "nope"][..],
    ] {
        let err = resolve_err(&env, &c.clone, args);
        assert_eq!(err["kind"], "unknownRef", "{args:?}: {err}");
        let got = choices(&err);
        assert_eq!(got, git_branch_choices(&env, &c.clone));
        assert!(got.iter().any(|b| b == "feature/x"), "{got:?}");
        assert!(got.iter().any(|b| b == "origin/feature/x"), "{got:?}");
    }
}

#[test]
fn named_without_a_ref_is_invalid_params() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    for args in [
        &["--source", "named"][..],
        &["--source", "named:"][..],
        &["--source", "named", "--ref", ""][..],
    ] {
        let err = resolve_err(&env, &repo, args);
        assert_eq!(err["kind"], "invalidParams", "{args:?}: {err}");
        assert!(
            s(&err, "message").contains("--ref"),
            "the message should say how to fix it: {err}"
        );
    }
}

#[test]
fn a_ref_with_a_policy_other_than_named_or_an_unknown_policy_is_invalid_params() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    for args in [
        &["--source", "default", "--ref", "main"][..],
        &["--source", "host-head", "--ref", "main"][..],
        &["--source", "sideways"][..],
    ] {
        let err = resolve_err(&env, &repo, args);
        assert_eq!(err["kind"], "invalidParams", "{args:?}: {err}");
    }
}

#[test]
fn snake_case_and_kebab_case_spellings_give_the_same_answers() {
    let env = TestEnv::new();
    let c = cloned_fixture(&env);
    env.git(&c.clone, &["checkout", "-q", "feature/x"]);
    let pairs = [
        ("host_head", "host-head"),
        ("current_branch", "current-branch"),
    ];
    for (snake, kebab) in pairs {
        let a = resolve(&env, &c.clone, &["--source", snake]);
        let b = resolve(&env, &c.clone, &["--source", kebab]);
        assert_eq!(a, b, "{snake} vs {kebab}");
        assert_eq!(s(&a, "commit"), c.local_fx);
    }
}

// ---------------------------------------------------------------------- ask

#[test]
fn ask_fails_with_source_branch_required_and_every_branch_as_a_choice() {
    let env = TestEnv::new();
    let c = cloned_fixture(&env);
    env.git(&c.clone, &["branch", "-q", "local-only"]);

    let err = resolve_err(&env, &c.clone, &["--source", "ask"]);
    assert_eq!(err["kind"], "sourceBranchRequired", "{err}");
    let got = choices(&err);
    assert_eq!(got, git_branch_choices(&env, &c.clone));
    for expected in [
        "main",
        "feature/x",
        "local-only",
        "origin/main",
        "origin/feature/x",
    ] {
        assert!(got.iter().any(|b| b == expected), "{expected}: {got:?}");
    }
    assert!(
        !got.iter().any(|b| b.ends_with("HEAD")),
        "origin/HEAD is not a choice: {got:?}"
    );
}

// ------------------------------------------------------------ read-only-ness

/// What the host checkout looks like to git: anything resolving changes here is a bug.
#[derive(Debug, PartialEq)]
struct HostSnapshot {
    head: String,
    head_ref: Option<String>,
    porcelain: String,
    reflog: String,
    refs: String,
    config: String,
}

fn snapshot(env: &TestEnv, dir: &Path) -> HostSnapshot {
    HostSnapshot {
        head: env.rev(dir, "HEAD"),
        head_ref: head_symref(env, dir),
        porcelain: env.porcelain(dir),
        reflog: env.git(dir, &["reflog", "show", "--format=%H %gs", "HEAD"]),
        refs: env.git(
            dir,
            &[
                "for-each-ref",
                "--format=%(refname) %(objectname) %(symref)",
            ],
        ),
        config: std::fs::read_to_string(dir.join(".git/config")).expect("repo config"),
    }
}

#[test]
fn resolving_any_policy_reads_refs_only() {
    let env = TestEnv::new();
    let c = cloned_fixture(&env);
    let dir = &c.clone;
    // A dirty host: unstaged, staged and untracked changes.
    std::fs::write(dir.join("README.md"), "changed\n").expect("write");
    std::fs::write(dir.join("staged.txt"), "staged\n").expect("write");
    env.git(dir, &["add", "staged.txt"]);
    std::fs::write(dir.join("untracked.txt"), "new\n").expect("write");

    let calls: [(&[&str], bool); 10] = [
        (&["--source", "host_head"], true),
        (&["--source", "host-head"], true),
        (&["--source", "current_branch"], true),
        (&["--source", "current-branch"], true),
        (&["--source", "default"], true),
        (&["--source", "named", "--ref", "feature/x"], true),
        (&["--source", "named:origin/feature/x"], true),
        (&["--source", "named", "--ref", "missing"], false),
        (&["--source", "named"], false),
        (&["--source", "ask"], false),
    ];

    for detached in [false, true] {
        if detached {
            env.git(dir, &["checkout", "-q", "--detach", "HEAD"]);
        }
        let before = snapshot(&env, dir);
        assert!(!before.porcelain.is_empty(), "fixture: dirty host");
        assert_eq!(before.head_ref.is_none(), detached);
        for (args, succeeds) in calls {
            let mut full = vec!["--json", "resolve"];
            full.extend_from_slice(args);
            let out = env.slipway(dir, &full);
            let should_succeed = succeeds && !(detached && args[1].starts_with("current"));
            assert_eq!(
                out.status.success(),
                should_succeed,
                "slipway {args:?} (detached: {detached}):\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(
                snapshot(&env, dir),
                before,
                "slipway resolve {args:?} changed the host (detached: {detached})"
            );
        }
    }
}

// ----------------------------------------------------------------- worktrees

#[test]
fn worktree_from_a_remote_tracking_ref_starts_at_the_remote_commit() {
    let env = TestEnv::new();
    let c = cloned_fixture(&env);
    let host = &c.clone;
    std::fs::write(host.join("untracked.txt"), "host work\n").expect("write");
    let before = snapshot(&env, host);
    let main_before = env.rev(host, "refs/heads/main");

    let from_remote = env.slipway_json(
        host,
        &[
            "worktree",
            "create",
            "--branch",
            "agent/from-remote",
            "--source",
            "named",
            "--ref",
            "origin/feature/x",
        ],
    );
    let from_local = env.slipway_json(
        host,
        &[
            "worktree",
            "create",
            "--branch",
            "agent/from-local",
            "--source",
            "named",
            "--ref",
            "feature/x",
        ],
    );

    let worktrees_root = std::fs::canonicalize(host.join(".slipway/worktrees")).expect("exists");
    for (created, branch, expected) in [
        (&from_remote, "agent/from-remote", &c.remote_fx),
        (&from_local, "agent/from-local", &c.local_fx),
    ] {
        let path = PathBuf::from(s(created, "path"));
        assert!(
            std::fs::canonicalize(&path)
                .expect("worktree exists")
                .starts_with(&worktrees_root),
            "{} is not under .slipway/worktrees",
            path.display()
        );
        assert_eq!(s(created, "branch"), branch);
        assert_eq!(s(created, "baseCommit"), expected.as_str(), "{created}");
        assert_eq!(&env.rev(&path, "HEAD"), expected, "{branch}");
        assert_eq!(
            env.git(&path, &["rev-parse", "--abbrev-ref", "HEAD"]),
            branch
        );
        assert_eq!(&env.rev(host, &format!("refs/heads/{branch}")), expected);
    }
    assert!(
        s(&from_remote, "sourceLabel").contains("origin/feature/x"),
        "{from_remote}"
    );
    assert!(
        !s(&from_local, "sourceLabel").contains("origin/"),
        "{from_local}"
    );
    // Like `git worktree add -b NEW PATH START`: a branch started from a
    // remote-tracking ref tracks it, one started from a local branch does not.
    assert_eq!(
        env.git(
            host,
            &["rev-parse", "--abbrev-ref", "agent/from-remote@{upstream}"]
        ),
        "origin/feature/x"
    );
    assert!(
        !env.git_output(
            host,
            &["rev-parse", "--abbrev-ref", "agent/from-local@{upstream}"]
        )
        .status
        .success(),
        "a branch started from a local branch has no upstream"
    );

    // The host checkout is untouched: same HEAD, same branch, same files,
    // and the starting refs did not move.
    let after = snapshot(&env, host);
    assert_eq!(after.head, before.head);
    assert_eq!(after.head_ref.as_deref(), Some("refs/heads/main"));
    assert_eq!(after.porcelain, before.porcelain);
    assert_eq!(after.reflog, before.reflog);
    assert_eq!(env.rev(host, "refs/heads/main"), main_before);
    assert_eq!(env.rev(host, "refs/heads/feature/x"), c.local_fx);
    assert_eq!(env.rev(host, "refs/remotes/origin/feature/x"), c.remote_fx);
}

/// Runs `slipway ARGS` on a pseudo-terminal (util-linux `script`), typing `input`.
fn slipway_on_a_terminal(
    env: &TestEnv,
    dir: &Path,
    args: &str,
    input: &str,
) -> std::process::Output {
    use std::io::Write;
    let command = format!("{} {args}", env!("CARGO_BIN_EXE_slipway"));
    let mut cmd = std::process::Command::new("script");
    cmd.args(["-qec", &command, "/dev/null"])
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (k, v) in env.envs() {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("script (util-linux) runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("type the answer");
    child.wait_with_output().expect("wait")
}

#[test]
fn ask_prompts_on_a_terminal_and_fails_without_one() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    env.commit_file(&repo, "x.txt", "x\n", "second");
    env.git(&repo, &["branch", "picked", "HEAD~1"]);
    let out = slipway_on_a_terminal(&env, &repo, "resolve --source ask", "2\n");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("1) main") && text.contains("2) picked"),
        "the choices are shown: {text}"
    );
    assert!(
        text.contains(&env.rev(&repo, "picked")),
        "the answer picks the branch: {text}"
    );

    let out = slipway_on_a_terminal(
        &env,
        &repo,
        "worktree create --branch from-ask --source ask",
        "picked\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(env.rev(&repo, "from-ask"), env.rev(&repo, "picked"));

    let (_, err) = env.slipway_fail(&repo, &["resolve", "--source", "ask"]);
    assert_eq!(
        err["kind"], "sourceBranchRequired",
        "no terminal: the typed error with the choices"
    );
}
