//! `slipway --json branches` (DESIGN.md §3, `slipway.branches`), compared with
//! what `git for-each-ref` says about the same repositories.

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;
use serde_json::Value;

/// Runs git with extra environment and optional stdin; panics on failure.
fn git_with(env: &TestEnv, dir: &Path, args: &[&str], extra: &[(&str, &str)], stdin: &str) {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env.envs() {
        cmd.env(k, v);
    }
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("git runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("git finishes");
    assert!(
        out.status.success(),
        "git {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Commits a file with fixed author and committer dates (they differ, so a
/// listing that shows the author date instead of the committer date is caught).
fn commit_at(env: &TestEnv, dir: &Path, file: &str, message: &str, committer_secs: i64) -> String {
    std::fs::write(dir.join(file), format!("{message}\n")).expect("write");
    env.git(dir, &["add", "--", file]);
    let author = format!("@{} +0200", committer_secs - 86_400);
    let committer = format!("@{committer_secs} -0500");
    git_with(
        env,
        dir,
        &["commit", "-q", "-m", message],
        &[
            ("GIT_AUTHOR_DATE", &author),
            ("GIT_COMMITTER_DATE", &committer),
        ],
        "",
    );
    env.rev(dir, "HEAD")
}

/// `slipway --json branches` in `dir`: the `branches` array.
fn branches(env: &TestEnv, dir: &Path) -> Vec<Value> {
    let out = env.slipway_json(dir, &["branches"]);
    out["branches"]
        .as_array()
        .unwrap_or_else(|| panic!("no branches array: {out}"))
        .clone()
}

fn find<'a>(list: &'a [Value], name: &str, kind: &str) -> &'a Value {
    list.iter()
        .find(|b| b["name"] == name && b["kind"] == kind)
        .unwrap_or_else(|| panic!("{kind} branch {name} not listed: {list:?}"))
}

/// One branch as git describes it.
#[derive(Debug, PartialEq)]
struct GitBranch {
    name: String,
    kind: &'static str,
    remote: Option<String>,
    commit: String,
    subject: String,
    time: i64,
    upstream: Option<String>,
}

/// Every local branch (sorted) then every remote-tracking branch (sorted),
/// skipping `<remote>/HEAD`, as `git for-each-ref` reports them.
fn git_branches(env: &TestEnv, dir: &Path) -> Vec<GitBranch> {
    // Which remote a remote-tracking ref belongs to comes from each remote's
    // fetch refspecs (`+refs/heads/*:refs/remotes/<dst>/*`), as in git.
    let mut owners: Vec<(String, String)> = Vec::new();
    for remote in env.git(dir, &["remote"]).lines() {
        let specs = env.git(
            dir,
            &["config", "--get-all", &format!("remote.{remote}.fetch")],
        );
        for spec in specs.lines() {
            let spec = spec.trim_start_matches('+');
            let Some((_, dst)) = spec.split_once(':') else {
                continue;
            };
            owners.push((dst.to_owned(), remote.to_owned()));
        }
    }
    let owner_of = |full: &str| -> Option<String> {
        owners
            .iter()
            .find(|(dst, _)| match dst.strip_suffix('*') {
                Some(prefix) => full.starts_with(prefix),
                None => full == dst,
            })
            .map(|(_, remote)| remote.clone())
    };
    let mut out = Vec::new();
    for (ns, kind) in [("refs/heads/", "local"), ("refs/remotes/", "remote")] {
        let listing = env.git(
            dir,
            &[
                "for-each-ref",
                "--format=%(refname)%00%(objectname)%00%(committerdate:unix)%00%(upstream:short)%00%(subject)",
                ns,
            ],
        );
        for line in listing.lines() {
            let fields: Vec<&str> = line.split('\0').collect();
            assert_eq!(fields.len(), 5, "{line:?}");
            let name = fields[0].strip_prefix(ns).expect("prefix").to_owned();
            if kind == "remote" && name.ends_with("/HEAD") {
                continue;
            }
            let remote = if kind == "remote" {
                Some(owner_of(fields[0]).expect("remote-tracking branch of a known remote"))
            } else {
                None
            };
            out.push(GitBranch {
                name,
                kind,
                remote,
                commit: fields[1].to_owned(),
                time: fields[2].parse().expect("unix time"),
                upstream: (kind == "local" && !fields[3].is_empty()).then(|| fields[3].to_owned()),
                subject: fields[4].to_owned(),
            });
        }
    }
    out
}

/// slipway's answer in the same shape.
fn slipway_branches(list: &[Value]) -> Vec<GitBranch> {
    list.iter()
        .map(|b| GitBranch {
            name: s(b, "name").to_owned(),
            kind: match s(b, "kind") {
                "local" => "local",
                "remote" => "remote",
                other => panic!("unknown kind {other}"),
            },
            remote: b["remote"].as_str().map(str::to_owned),
            commit: s(b, "commit").to_owned(),
            subject: s(b, "subject").to_owned(),
            time: b["time"]
                .as_i64()
                .unwrap_or_else(|| panic!("time is not an integer: {b}")),
            upstream: b["upstream"].as_str().map(str::to_owned),
        })
        .collect()
}

fn names_with(list: &[Value], flag: &str) -> Vec<String> {
    list.iter()
        .filter(|b| {
            b[flag]
                .as_bool()
                .unwrap_or_else(|| panic!("{flag} is not a bool: {b}"))
        })
        .map(|b| format!("{}:{}", s(b, "kind"), s(b, "name")))
        .collect()
}

/// An "origin" repository with distinct commit dates on several branches, a
/// clone of it with local work, a local-only branch, a branch tracking a local
/// branch, and a second remote `fork`.
struct Fixture {
    origin: PathBuf,
    clone: PathBuf,
}

fn fixture(env: &TestEnv) -> Fixture {
    let origin = env.new_repo("origin");
    commit_at(env, &origin, "m.txt", "main on origin", 1_600_000_000);
    env.git(&origin, &["checkout", "-q", "-b", "feature/x"]);
    commit_at(
        env,
        &origin,
        "fx.txt",
        "feature x: first line\ncontinues here\n\nbody is not the subject",
        1_600_100_000,
    );
    env.git(&origin, &["checkout", "-q", "-b", "release/1.0", "main"]);
    commit_at(env, &origin, "r.txt", "release 1.0", 1_600_200_000);
    env.git(&origin, &["checkout", "-q", "main"]);

    let clone = env.path().join("clone");
    env.git(
        env.path(),
        &["clone", "-q", origin.to_str().expect("utf-8"), "clone"],
    );
    // Local feature/x tracks origin/feature/x and is ahead of it.
    env.git(&clone, &["checkout", "-q", "feature/x"]);
    commit_at(env, &clone, "fx.txt", "local feature x work", 1_700_000_000);
    // A local-only branch without upstream.
    env.git(&clone, &["checkout", "-q", "-b", "topic", "main"]);
    commit_at(env, &clone, "t.txt", "topic work", 1_650_000_000);
    // A branch whose upstream is a local branch.
    env.git(
        &clone,
        &["branch", "-q", "--track", "follows-topic", "topic"],
    );
    env.git(&clone, &["checkout", "-q", "main"]);

    // A second remote, fetched, whose branches differ from origin's.
    let fork = env.new_repo("fork");
    commit_at(env, &fork, "f.txt", "fork main", 1_610_000_000);
    env.git(
        &clone,
        &["remote", "add", "fork", fork.to_str().expect("utf-8")],
    );
    env.git(&clone, &["fetch", "-q", "fork"]);
    Fixture { origin, clone }
}

#[test]
fn branches_match_git_for_each_ref() {
    let env = TestEnv::new();
    let f = fixture(&env);
    let list = branches(&env, &f.clone);
    let ours = slipway_branches(&list);
    let git = git_branches(&env, &f.clone);
    similar_asserts::assert_eq!(ours, git);

    // The fixture really has what the comparison is meant to cover.
    let names: Vec<&str> = ours.iter().map(|b| b.name.as_str()).collect();
    for expected in [
        "feature/x",
        "follows-topic",
        "main",
        "topic",
        "fork/main",
        "origin/feature/x",
        "origin/main",
        "origin/release/1.0",
    ] {
        assert!(names.contains(&expected), "{expected} missing: {names:?}");
    }
    let fx = find(&list, "feature/x", "local");
    assert_eq!(s(fx, "subject"), "local feature x work");
    assert_eq!(fx["time"], 1_700_000_000);
    let ofx = find(&list, "origin/feature/x", "remote");
    assert_eq!(s(ofx, "subject"), "feature x: first line continues here");
    assert_eq!(ofx["time"], 1_600_100_000);
    assert_eq!(s(ofx, "remote"), "origin");
    assert_eq!(s(find(&list, "fork/main", "remote"), "remote"), "fork");
    assert!(find(&list, "topic", "local")["remote"].is_null());
}

#[test]
fn locals_come_first_then_remotes_each_sorted_and_origin_head_is_skipped() {
    let env = TestEnv::new();
    let f = fixture(&env);
    assert_eq!(
        env.git(&f.clone, &["symbolic-ref", "refs/remotes/origin/HEAD"]),
        "refs/remotes/origin/main",
        "fixture: origin/HEAD exists"
    );
    let list = branches(&env, &f.clone);
    let kinds: Vec<&str> = list.iter().map(|b| s(b, "kind")).collect();
    let first_remote = kinds.iter().position(|k| *k == "remote").expect("remotes");
    assert!(kinds[..first_remote].iter().all(|k| *k == "local"));
    assert!(kinds[first_remote..].iter().all(|k| *k == "remote"));
    for section in [&list[..first_remote], &list[first_remote..]] {
        let names: Vec<&str> = section.iter().map(|b| s(b, "name")).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
    }
    assert!(
        !list.iter().any(|b| s(b, "name").ends_with("HEAD")),
        "origin/HEAD must not be listed: {list:?}"
    );
}

#[test]
fn local_and_remote_of_the_same_name_are_both_listed_with_their_own_commits() {
    let env = TestEnv::new();
    let f = fixture(&env);
    let list = branches(&env, &f.clone);
    for name in ["main", "feature/x"] {
        let local = find(&list, name, "local");
        let remote = find(&list, &format!("origin/{name}"), "remote");
        assert_eq!(
            s(local, "commit"),
            env.rev(&f.clone, &format!("refs/heads/{name}"))
        );
        assert_eq!(
            s(remote, "commit"),
            env.rev(&f.clone, &format!("refs/remotes/origin/{name}"))
        );
    }
    // feature/x moved locally: the two entries must show different commits.
    assert_ne!(
        s(find(&list, "feature/x", "local"), "commit"),
        s(find(&list, "origin/feature/x", "remote"), "commit")
    );
    assert_eq!(
        s(find(&list, "origin/feature/x", "remote"), "commit"),
        env.rev(&f.origin, "feature/x")
    );
}

#[test]
fn upstreams_match_git() {
    let env = TestEnv::new();
    let f = fixture(&env);
    let list = branches(&env, &f.clone);
    for (branch, expected) in [
        ("main", Some("origin/main")),
        ("feature/x", Some("origin/feature/x")),
        ("follows-topic", Some("topic")),
        ("topic", None),
    ] {
        let entry = find(&list, branch, "local");
        let got = entry["upstream"].as_str();
        assert_eq!(got, expected, "{branch}: {entry}");
        let rev = env.git_output(
            &f.clone,
            &[
                "rev-parse",
                "--abbrev-ref",
                &format!("{branch}@{{upstream}}"),
            ],
        );
        let git_says = rev
            .status
            .success()
            .then(|| String::from_utf8_lossy(&rev.stdout).trim().to_owned());
        assert_eq!(got.map(str::to_owned), git_says, "{branch}");
    }
    for b in list.iter().filter(|b| b["kind"] == "remote") {
        assert!(b["upstream"].is_null(), "a remote has no upstream: {b}");
    }
}

#[test]
fn is_head_marks_only_the_current_branch() {
    let env = TestEnv::new();
    let f = fixture(&env);
    let list = branches(&env, &f.clone);
    assert_eq!(names_with(&list, "isHead"), vec!["local:main".to_owned()]);

    env.git(&f.clone, &["checkout", "-q", "feature/x"]);
    let list = branches(&env, &f.clone);
    assert_eq!(
        names_with(&list, "isHead"),
        vec!["local:feature/x".to_owned()],
        "the remote of the same name is not HEAD"
    );
}

#[test]
fn a_detached_head_marks_no_branch() {
    let env = TestEnv::new();
    let f = fixture(&env);
    // Detached exactly at main's tip: no branch is HEAD even though one matches.
    env.git(&f.clone, &["checkout", "-q", "--detach", "main"]);
    let list = branches(&env, &f.clone);
    assert_eq!(names_with(&list, "isHead"), Vec::<String>::new());
    similar_asserts::assert_eq!(slipway_branches(&list), git_branches(&env, &f.clone));
}

#[test]
fn is_default_marks_what_the_default_policy_resolves_to() {
    let env = TestEnv::new();

    // A clone: the default is origin/HEAD's target, origin/main.
    let f = fixture(&env);
    let list = branches(&env, &f.clone);
    assert_eq!(
        names_with(&list, "isDefault"),
        vec!["remote:origin/main".to_owned()]
    );
    let resolved = env.slipway_json(&f.clone, &["resolve", "--source", "default"]);
    assert_eq!(s(&resolved, "ref"), "refs/remotes/origin/main");

    // Without origin/HEAD the default is local main.
    env.git(&f.clone, &["remote", "set-head", "origin", "-d"]);
    let list = branches(&env, &f.clone);
    assert_eq!(
        names_with(&list, "isDefault"),
        vec!["local:main".to_owned()]
    );

    // A repository without remotes, HEAD on another branch: main is the default.
    let repo = env.new_repo("plain");
    env.git(&repo, &["checkout", "-q", "-b", "dev"]);
    let list = branches(&env, &repo);
    assert_eq!(
        names_with(&list, "isDefault"),
        vec!["local:main".to_owned()]
    );
    assert_eq!(names_with(&list, "isHead"), vec!["local:dev".to_owned()]);

    // With init.defaultBranch = trunk in the repo config, trunk is the default.
    env.git(&repo, &["branch", "-q", "trunk"]);
    env.git(&repo, &["config", "init.defaultBranch", "trunk"]);
    let list = branches(&env, &repo);
    assert_eq!(
        names_with(&list, "isDefault"),
        vec!["local:trunk".to_owned()]
    );

    // Nothing usable: no branch is the default.
    let bare_dev = env.new_repo("devonly");
    env.git(&bare_dev, &["branch", "-q", "-m", "main", "dev"]);
    let list = branches(&env, &bare_dev);
    assert_eq!(list.len(), 1);
    assert_eq!(names_with(&list, "isDefault"), Vec::<String>::new());
}

#[test]
fn two_hundred_branches_are_all_listed() {
    let env = TestEnv::new();
    let repo = env.new_repo("many");
    let a = env.rev(&repo, "HEAD");
    let b = commit_at(&env, &repo, "b.txt", "second", 1_620_000_000);
    let mut script = String::new();
    for i in 0..200 {
        let target = if i % 2 == 0 { &a } else { &b };
        script.push_str(&format!("create refs/heads/bulk/{i:03} {target}\n"));
    }
    git_with(&env, &repo, &["update-ref", "--stdin"], &[], &script);
    let git = git_branches(&env, &repo);
    assert_eq!(git.len(), 201, "fixture: 200 branches plus main");

    let list = branches(&env, &repo);
    let bulk = list
        .iter()
        .filter(|b| s(b, "name").starts_with("bulk/"))
        .count();
    assert_eq!(bulk, 200);
    similar_asserts::assert_eq!(slipway_branches(&list), git);
}

/// A remote whose fetch refspec stores its branches under another folder:
/// `remote.fk.fetch = +refs/heads/*:refs/remotes/forked/*`.
fn custom_refspec_fixture(env: &TestEnv) -> PathBuf {
    let f = fixture(env);
    let other = env.new_repo("other");
    commit_at(env, &other, "o.txt", "other main", 1_630_000_000);
    env.git(
        &f.clone,
        &["remote", "add", "fk", other.to_str().expect("utf-8")],
    );
    env.git(
        &f.clone,
        &[
            "config",
            "remote.fk.fetch",
            "+refs/heads/*:refs/remotes/forked/*",
        ],
    );
    env.git(&f.clone, &["fetch", "-q", "fk"]);
    env.git(
        &f.clone,
        &["branch", "-q", "--track", "viafk", "forked/main"],
    );
    f.clone
}

#[test]
fn upstream_follows_the_remotes_fetch_refspec() {
    let env = TestEnv::new();
    let clone = custom_refspec_fixture(&env);
    assert_eq!(
        env.git(&clone, &["rev-parse", "--abbrev-ref", "viafk@{upstream}"]),
        "forked/main",
        "fixture: git's answer"
    );
    let list = branches(&env, &clone);
    let viafk = find(&list, "viafk", "local");
    assert_eq!(
        viafk["upstream"].as_str(),
        Some("forked/main"),
        "the upstream must be the ref git tracks: {viafk}"
    );
    // The upstream names a branch that is in the list.
    find(&list, "forked/main", "remote");
}

#[test]
fn remote_of_a_remote_tracking_branch_follows_the_fetch_refspec() {
    let env = TestEnv::new();
    let clone = custom_refspec_fixture(&env);
    assert_eq!(
        env.git(
            &clone,
            &[
                "for-each-ref",
                "--format=%(upstream:remotename)",
                "refs/heads/viafk"
            ]
        ),
        "fk",
        "fixture: git says forked/main belongs to remote fk"
    );
    let list = branches(&env, &clone);
    assert_eq!(
        find(&list, "forked/main", "remote")["remote"].as_str(),
        Some("fk")
    );
    similar_asserts::assert_eq!(slipway_branches(&list), git_branches(&env, &clone));
}

#[test]
fn loose_refs_win_over_packed_ones_and_symbolic_branches_still_list() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    env.git(&repo, &["branch", "moved"]);
    env.git(&repo, &["pack-refs", "--all"]);
    // Move the packed branch: git writes a loose ref that must win.
    let newer = env.commit_file(&repo, "n.txt", "n\n", "newer");
    env.git(&repo, &["update-ref", "refs/heads/moved", &newer]);
    let listed = env.slipway_json(&repo, &["branches"]);
    let moved = listed["branches"]
        .as_array()
        .expect("branches")
        .iter()
        .find(|b| b["name"] == "moved")
        .expect("moved listed")
        .clone();
    assert_eq!(moved["commit"], newer.as_str());

    // A symbolic branch ref (rare) is still listed, at its target's commit.
    env.git(
        &repo,
        &["symbolic-ref", "refs/heads/alias", "refs/heads/main"],
    );
    let listed = env.slipway_json(&repo, &["branches"]);
    let alias = listed["branches"]
        .as_array()
        .expect("branches")
        .iter()
        .find(|b| b["name"] == "alias")
        .unwrap_or_else(|| panic!("alias listed: {listed}"))
        .clone();
    assert_eq!(alias["commit"], env.rev(&repo, "main").as_str());
}

/// `git rev-list --left-right --count BRANCH...UPSTREAM`: (ahead, behind).
fn git_ahead_behind(env: &TestEnv, dir: &Path, branch: &str, upstream: &str) -> (u64, u64) {
    let out = env.git(
        dir,
        &[
            "rev-list",
            "--left-right",
            "--count",
            &format!("{branch}...{upstream}"),
        ],
    );
    let mut n = out
        .split_whitespace()
        .map(|v| v.parse::<u64>().expect("count"));
    (n.next().expect("ahead"), n.next().expect("behind"))
}

#[test]
fn ahead_and_behind_match_git_when_asked_for_and_only_then() {
    let env = TestEnv::new();
    let f = fixture(&env);
    // origin moves on: local main is now one behind origin/main once fetched.
    commit_at(&env, &f.origin, "m2.txt", "more on origin", 1_700_100_000);
    env.git(&f.clone, &["fetch", "-q", "origin"]);

    let plain = branches(&env, &f.clone);
    assert!(
        plain.iter().all(|b| b.get("ahead").is_none()),
        "the plain listing does not count"
    );

    let mut lsp = common::lsp::Lsp::start(&env, Some(&f.clone), false);
    let answer = lsp
        .execute(
            "slipway.branches",
            serde_json::json!({"root": f.clone, "aheadBehind": true}),
        )
        .expect("branches");
    let cli = env.slipway_json(&f.clone, &["branches", "--ahead-behind"]);
    for list in [
        answer["branches"].as_array().expect("list"),
        cli["branches"].as_array().expect("list"),
    ] {
        for (name, upstream) in [
            ("main", "origin/main"),
            ("feature/x", "origin/feature/x"),
            ("follows-topic", "topic"),
        ] {
            let b = find(list, name, "local");
            let (ahead, behind) = git_ahead_behind(&env, &f.clone, name, upstream);
            assert_eq!(
                (b["ahead"].as_u64(), b["behind"].as_u64()),
                (Some(ahead), Some(behind)),
                "{name}: {b}"
            );
        }
        assert_eq!(
            find(list, "main", "local")["behind"],
            1,
            "a local main one behind origin/main says so"
        );
        assert!(
            find(list, "topic", "local").get("ahead").is_none(),
            "no upstream, no count"
        );
    }
}

#[test]
fn upstreams_set_in_an_included_config_file_match_git() {
    // The listing reads the config file itself in one pass; an include is
    // left to libgit2, and the answer is git's either way.
    let env = TestEnv::new();
    let f = fixture(&env);
    let extra = env.path().join("extra.gitconfig");
    std::fs::write(
        &extra,
        "[branch \"topic\"]\n\tremote = origin\n\tmerge = refs/heads/main\n",
    )
    .expect("included file");
    env.git(
        &f.clone,
        &["config", "include.path", extra.to_str().expect("utf-8")],
    );
    let list = branches(&env, &f.clone);
    similar_asserts::assert_eq!(slipway_branches(&list), git_branches(&env, &f.clone));
    assert_eq!(s(find(&list, "topic", "local"), "upstream"), "origin/main");
}
