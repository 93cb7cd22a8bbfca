//! Copy-in: `.worktreeinclude` as Claude Code and worktrunk define it (a file
//! is copied when git ignores it and the file's gitignore-syntax patterns
//! match it), the scenarios of worktrunk's `step copy-ignored` tests, and
//! what `--copy` shares with it: nested repositories and worktrees are left
//! out, modes and symlinks are kept, nothing is written through a symlink.
//!
//! Where it helps, what was copied is compared with git's own answer on the
//! same fixture: `git ls-files --others --ignored --exclude-standard` (what
//! git ignores) intersected with `git ls-files --others --ignored
//! --exclude-from=.worktreeinclude` (what the patterns match, judged by git).

use crate::common;
use common::*;

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

fn write(p: &Path, content: &str) {
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).expect("parent dir");
    }
    std::fs::write(p, content).unwrap_or_else(|e| panic!("write {}: {e}", p.display()));
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", p.display()));
}

fn mode_of(p: &Path) -> u32 {
    std::fs::symlink_metadata(p)
        .unwrap_or_else(|e| panic!("lstat {}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o7777
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|n| n.as_str().expect("string").to_owned())
        .collect()
}

/// `slipway --json worktree create --branch BRANCH EXTRA...` in `repo`.
fn create(env: &TestEnv, repo: &Path, branch: &str, extra: &[&str]) -> Value {
    let mut args = vec!["worktree", "create", "--branch", branch];
    args.extend_from_slice(extra);
    env.slipway_json(repo, &args)
}

fn path_of(v: &Value) -> PathBuf {
    PathBuf::from(s(v, "path"))
}

/// Paths git prints with `-z`, as a set.
fn git_z(env: &TestEnv, dir: &Path, args: &[&str]) -> BTreeSet<String> {
    env.git(dir, args)
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect()
}

/// What git says `.worktreeinclude` selects in `host`: ignored files the
/// patterns match, by git's own rules. Folders git lists (nested
/// repositories) and slipway's own files are not files to copy.
fn git_selects(env: &TestEnv, host: &Path) -> BTreeSet<String> {
    let ignored = git_z(
        env,
        host,
        &[
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-standard",
        ],
    );
    let matching = git_z(
        env,
        host,
        &[
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-from=.worktreeinclude",
        ],
    );
    ignored
        .intersection(&matching)
        .filter(|p| !p.ends_with('/') && !p.starts_with(".slipway/"))
        .cloned()
        .collect()
}

/// Files and symlinks in worktree `wt` that its checkout did not put there.
fn untracked_in(env: &TestEnv, wt: &Path) -> BTreeSet<String> {
    let tracked = git_z(env, wt, &["ls-files", "-z"]);
    let mut out = BTreeSet::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for entry in std::fs::read_dir(wt.join(&rel)).expect("read worktree dir") {
            let entry = entry.expect("dir entry");
            let child = rel.join(entry.file_name());
            if child == Path::new(".git") {
                continue;
            }
            if entry.file_type().expect("file type").is_dir() {
                stack.push(child);
            } else {
                let name = child.to_string_lossy().into_owned();
                if !tracked.contains(&name) {
                    out.insert(name);
                }
            }
        }
    }
    out
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// Asserts the worktree got exactly `expected` from copy-in, and that this
/// is what git itself selects.
fn assert_copied(env: &TestEnv, host: &Path, wt: &Path, expected: &[&str]) {
    let expected = set(expected);
    assert_eq!(
        git_selects(env, host),
        expected,
        "the fixture is not what the test thinks: git selects otherwise"
    );
    assert_eq!(untracked_in(env, wt), expected, "copied files differ");
    for rel in &expected {
        let (h, w) = (host.join(rel), wt.join(rel));
        if std::fs::symlink_metadata(&h).is_ok_and(|m| m.file_type().is_symlink()) {
            assert_eq!(std::fs::read_link(&h).ok(), std::fs::read_link(&w).ok());
        } else {
            assert_eq!(read(&h), read(&w), "{rel} differs");
        }
    }
}

/// A host repository with `.gitignore` and `.worktreeinclude` committed.
fn host_with(env: &TestEnv, gitignore: &str, include: &str) -> PathBuf {
    let repo = env.new_repo("host");
    env.commit_file(&repo, ".gitignore", gitignore, "ignore");
    env.commit_file(&repo, ".worktreeinclude", include, "include");
    repo
}

#[test]
fn a_file_ignored_by_a_file_level_rule_is_copied() {
    // worktrunk: test_copy_ignored_nested_file.
    let env = TestEnv::new();
    let repo = host_with(&env, "cache/data.json\n", "cache/data.json\n");
    // Nothing else in cache/: git ignores the file, not the folder.
    write(&repo.join("cache/data.json"), "{\"key\": \"value\"}\n");

    let created = create(&env, &repo, "file-rule", &[]);
    let wt = path_of(&created);

    assert_copied(&env, &repo, &wt, &["cache/data.json"]);
    assert_eq!(strings(&created["copy"]["copied"]), vec!["cache/data.json"]);
    assert_eq!(env.porcelain(&wt), "");
}

#[test]
fn files_ignored_by_nested_gitignores_are_copied() {
    // worktrunk: test_copy_ignored_nested_gitignore (its nested .gitignore is
    // not committed), and a committed one in a deeper package.
    let env = TestEnv::new();
    let repo = env.new_repo("host");
    env.commit_file(
        &repo,
        "services/api/.gitignore",
        "secrets/\n*.local.json\n",
        "api ignores",
    );
    env.commit_file(&repo, "services/api/main.rs", "fn main() {}\n", "api");
    env.commit_file(
        &repo,
        ".worktreeinclude",
        "config/local.json\n**/secrets/\n*.local.json\n",
        "include",
    );
    write(&repo.join("config/.gitignore"), "local.json\n");
    write(&repo.join("config/local.json"), "{\"local\": true}\n");
    write(&repo.join("services/api/secrets/key.pem"), "KEY\n");
    write(&repo.join("services/api/config/dev.local.json"), "{}\n");
    // Ignored by no .gitignore: never copied, though a pattern matches it.
    write(&repo.join("services/web/prod.local.json"), "{}\n");

    let created = create(&env, &repo, "nested-ignores", &[]);
    let wt = path_of(&created);

    assert_copied(
        &env,
        &repo,
        &wt,
        &[
            "config/local.json",
            "services/api/config/dev.local.json",
            "services/api/secrets/key.pem",
        ],
    );
}

#[test]
fn double_star_patterns_reach_every_depth() {
    // worktrunk: test_copy_ignored_deep_pattern.
    let env = TestEnv::new();
    let repo = host_with(
        &env,
        "**/.claude/settings.local.json\n",
        "**/.claude/settings.local.json\n",
    );
    env.commit_file(&repo, ".claude/settings.json", "{}\n", "shared settings");
    write(&repo.join(".claude/settings.local.json"), "{\"root\": 1}\n");
    write(
        &repo.join("apps/web/.claude/settings.local.json"),
        "{\"web\": 1}\n",
    );

    let created = create(&env, &repo, "deep", &[]);
    let wt = path_of(&created);

    assert_copied(
        &env,
        &repo,
        &wt,
        &[
            ".claude/settings.local.json",
            "apps/web/.claude/settings.local.json",
        ],
    );
    assert_eq!(env.porcelain(&wt), "");
}

#[test]
fn negations_decide_as_in_gitignore() {
    let env = TestEnv::new();
    // The last matching pattern decides for a file; a negation cannot take
    // back a file whose folder is selected (git's rule for an ignored
    // folder), so `keep.js` is copied with node_modules.
    let repo = host_with(
        &env,
        ".env*\nnode_modules/\ndist/\n",
        "**/.env*\n!**/.env.example\nnode_modules/\n!node_modules/keep.js\ndist/*\n!dist/.cache/\n",
    );
    write(&repo.join(".env"), "A=1\n");
    write(&repo.join(".env.example"), "A=\n");
    write(&repo.join("apps/web/.env.local"), "B=1\n");
    write(&repo.join("apps/web/.env.example"), "B=\n");
    write(&repo.join("node_modules/pkg/index.js"), "1\n");
    write(&repo.join("node_modules/keep.js"), "2\n");
    write(&repo.join("dist/app.js"), "app\n");
    write(&repo.join("dist/.cache/blob"), "cache\n");

    let created = create(&env, &repo, "negations", &[]);
    let wt = path_of(&created);

    assert_copied(
        &env,
        &repo,
        &wt,
        &[
            ".env",
            "apps/web/.env.local",
            "dist/app.js",
            "node_modules/keep.js",
            "node_modules/pkg/index.js",
        ],
    );
}

#[test]
fn ignored_files_beside_tracked_ones_in_an_ignored_folder_are_copied_and_tracked_ones_are_not() {
    let env = TestEnv::new();
    let repo = host_with(&env, "build/\n", "build/\n");
    write(&repo.join("build/keep.txt"), "committed\n");
    env.git(&repo, &["add", "-f", "build/keep.txt"]);
    env.git(&repo, &["commit", "-q", "-m", "force-add one build file"]);
    write(&repo.join("build/out.o"), "object\n");
    // The host's own edit of a tracked file stays in the host.
    write(&repo.join("build/keep.txt"), "edited on the host\n");

    let created = create(&env, &repo, "tracked-inside", &[]);
    let wt = path_of(&created);

    assert_copied(&env, &repo, &wt, &["build/out.o"]);
    assert_eq!(read(&wt.join("build/keep.txt")), "committed\n");
    assert_eq!(env.porcelain(&wt), "");
}

#[test]
fn nested_worktrees_are_not_copied() {
    // worktrunk: test_copy_ignored_skips_nested_worktrees.
    let env = TestEnv::new();
    let repo = host_with(&env, ".worktrees/\n.env\n", ".worktrees/\n.env\n");
    env.git(
        &repo,
        &["worktree", "add", "-q", "-b", "nested", ".worktrees/nested"],
    );
    write(&repo.join(".worktrees/nested/work.txt"), "in progress\n");
    write(&repo.join(".env"), "SECRET=1\n");
    let registered_before = env.git(&repo, &["worktree", "list", "--porcelain"]);

    for (branch, extra) in [
        ("by-include", vec![]),
        ("by-copy", vec!["--copy", ".worktrees"]),
        ("by-glob", vec!["--copy", ".worktrees/*"]),
    ] {
        let created = create(&env, &repo, branch, &extra);
        let wt = path_of(&created);

        assert_eq!(read(&wt.join(".env")), "SECRET=1\n", "{branch}");
        assert!(
            !wt.join(".worktrees/nested").exists(),
            "{branch}: the nested worktree was copied"
        );
        assert_eq!(
            strings(&created["copy"]["skipped"]),
            vec![".worktrees/nested"],
            "{branch}"
        );
        assert!(
            strings(&created["copy"]["warnings"])
                .iter()
                .any(|w| w.contains(".worktrees/nested")),
            "{branch}: not said: {created}"
        );
        assert_eq!(env.porcelain(&wt), "", "{branch}");
        env.slipway_json(&repo, &["worktree", "close", branch]);
    }
    // git's registrations are what they were: no copy claims an admin dir.
    assert_eq!(
        env.git(&repo, &["worktree", "list", "--porcelain"]),
        registered_before
    );
    assert_eq!(
        read(&repo.join(".worktrees/nested/work.txt")),
        "in progress\n"
    );
}

#[test]
fn nested_repositories_are_not_copied() {
    let env = TestEnv::new();
    let repo = host_with(&env, "vendor/\n", "vendor/\n");
    let lib = env.new_repo("host/vendor/lib");
    write(&lib.join("untracked.c"), "int x;\n");
    write(&repo.join("vendor/plain.txt"), "plain\n");

    for (branch, extra) in [
        ("by-include", vec![]),
        ("by-copy", vec!["--copy", "vendor"]),
        ("by-glob", vec!["--copy", "vendor/*"]),
        ("inside", vec!["--copy", "vendor/lib/README.md"]),
    ] {
        let created = create(&env, &repo, branch, &extra);
        let wt = path_of(&created);

        assert_eq!(read(&wt.join("vendor/plain.txt")), "plain\n", "{branch}");
        assert!(
            !wt.join("vendor/lib").exists(),
            "{branch}: the nested repository was copied"
        );
        assert_eq!(
            strings(&created["copy"]["skipped"]),
            vec!["vendor/lib"],
            "{branch}"
        );
        assert_eq!(env.porcelain(&wt), "", "{branch}");
    }
    let wt = path_of(&create(&env, &repo, "by-include", &[]));
    assert_copied(&env, &repo, &wt, &["vendor/plain.txt"]);
}

#[test]
fn file_and_directory_modes_and_symlinks_are_kept() {
    // worktrunk: test_copy_ignored_preserves_directory_permissions,
    // ..._file_executable_permissions, ..._directory_with_symlinks.
    let env = TestEnv::new();
    let repo = host_with(&env, "tools/\nrun-tests.sh\n", "tools/\nrun-tests.sh\n");
    let tools = repo.join("tools");
    write(&tools.join("bin/run"), "#!/bin/sh\necho run\n");
    write(&tools.join("bin/config.json"), "{}\n");
    write(&tools.join("private/token"), "t0k3n\n");
    write(&tools.join("ro/data"), "read only\n");
    write(&repo.join("run-tests.sh"), "#!/bin/sh\n");
    std::os::unix::fs::symlink("bin/run", tools.join("link")).expect("symlink");
    std::os::unix::fs::symlink("../nowhere", tools.join("dangling")).expect("symlink");
    chmod(&tools.join("bin/run"), 0o755);
    chmod(&tools.join("bin/config.json"), 0o644);
    chmod(&tools.join("private/token"), 0o600);
    chmod(&tools.join("ro/data"), 0o444);
    chmod(&repo.join("run-tests.sh"), 0o750);
    chmod(&tools.join("private"), 0o700);
    chmod(&tools.join("bin"), 0o750);
    chmod(&tools.join("ro"), 0o555);
    chmod(&tools, 0o711);

    let paths = [
        "tools",
        "tools/bin",
        "tools/bin/run",
        "tools/bin/config.json",
        "tools/private",
        "tools/private/token",
        "tools/ro",
        "tools/ro/data",
        "run-tests.sh",
    ];
    for (branch, extra) in [
        ("by-include", vec![]),
        ("by-copy", vec!["--copy", "tools", "--copy", "run-tests.sh"]),
    ] {
        let created = create(&env, &repo, branch, &extra);
        let wt = path_of(&created);
        for rel in paths {
            assert_eq!(
                format!("{:o}", mode_of(&wt.join(rel))),
                format!("{:o}", mode_of(&repo.join(rel))),
                "{branch}: mode of {rel}"
            );
        }
        for (link, target) in [("tools/link", "bin/run"), ("tools/dangling", "../nowhere")] {
            let meta = std::fs::symlink_metadata(wt.join(link)).expect("copied link");
            assert!(
                meta.file_type().is_symlink(),
                "{branch}: {link} not a symlink"
            );
            assert_eq!(
                std::fs::read_link(wt.join(link)).expect("link"),
                PathBuf::from(target)
            );
        }
        assert_eq!(read(&wt.join("tools/link")), "#!/bin/sh\necho run\n");
        // The worktree can still be closed: the read-only folder is no obstacle.
        chmod(&wt.join("tools/ro"), 0o755);
        let closed = env.slipway_json(&repo, &["worktree", "close", branch]);
        assert_eq!(s(&closed, "outcome"), "removed", "{closed}");
    }
    let wt = path_of(&create(&env, &repo, "compare", &[]));
    assert_copied(
        &env,
        &repo,
        &wt,
        &[
            "run-tests.sh",
            "tools/bin/config.json",
            "tools/bin/run",
            "tools/dangling",
            "tools/link",
            "tools/private/token",
            "tools/ro/data",
        ],
    );
}

#[test]
fn copy_in_merges_into_the_checkout_and_never_writes_through_its_symlinks() {
    let env = TestEnv::new();
    let repo = host_with(
        &env,
        "cache/\nconfig/local.env\n",
        "cache/\nconfig/local.env\n",
    );
    env.commit_file(&repo, "config/app.toml", "[app]\n", "config");
    write(&repo.join("config/local.env"), "LOCAL=1\n");
    write(&repo.join("cache/data.json"), "{}\n");
    // On branch `linked`, `cache` is a tracked symlink to a folder outside.
    let outside = env.path().join("outside");
    std::fs::create_dir_all(&outside).expect("outside");
    env.git(&repo, &["branch", "linked"]);
    let side = env.path().join("side");
    env.git(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            side.to_str().expect("utf-8"),
            "linked",
        ],
    );
    std::os::unix::fs::symlink(&outside, side.join("cache")).expect("symlink");
    env.git(&side, &["add", "-f", "cache"]);
    env.git(&side, &["commit", "-q", "-m", "cache is a link"]);
    env.git(
        &repo,
        &["worktree", "remove", side.to_str().expect("utf-8")],
    );

    let created = create(&env, &repo, "linked", &["--copy", "config"]);
    let wt = path_of(&created);

    assert_eq!(read(&wt.join("config/local.env")), "LOCAL=1\n");
    assert_eq!(read(&wt.join("config/app.toml")), "[app]\n");
    assert!(
        !wt.join("config/config").exists(),
        "config nested into config"
    );
    assert!(
        std::fs::read_dir(&outside)
            .expect("outside")
            .next()
            .is_none(),
        "copy-in wrote through the worktree's symlink"
    );
    assert!(
        std::fs::symlink_metadata(wt.join("cache"))
            .expect("cache")
            .file_type()
            .is_symlink(),
        "the tracked symlink was replaced"
    );
    assert!(
        strings(&created["copy"]["warnings"])
            .iter()
            .any(|w| w.contains("'cache'")),
        "not said: {created}"
    );
    assert_eq!(env.porcelain(&wt), "");
}

#[test]
fn a_full_disk_fails_naming_the_file_and_the_cause() {
    let env = TestEnv::new();
    let repo = host_with(&env, "big.bin\nsmall.txt\n", "big.bin\nsmall.txt\n");
    std::fs::write(repo.join("big.bin"), vec![7u8; 4 << 20]).expect("big file");
    write(&repo.join("small.txt"), "small\n");
    let _disk = Tmpfs::mount(&repo.join(".slipway/worktrees"), "1m").unwrap_or_else(|| {
        panic!(
            "this test needs a small tmpfs: run it as root (CI does), where `mount -t tmpfs` works"
        )
    });

    let (_, err) = env.slipway_fail(&repo, &["worktree", "create", "--branch", "full"]);

    assert_eq!(err["kind"], "copyFailed", "{err}");
    let message = s(&err, "message");
    assert!(message.contains("big.bin"), "{message}");
    assert!(message.contains("No space left on device"), "{message}");
    for wt in std::fs::read_dir(repo.join(".slipway/worktrees")).expect("worktrees") {
        let wt = wt.expect("entry").path();
        assert!(
            !wt.join("big.bin").exists(),
            "a partial copy was left that passes for the host's file"
        );
    }
}

#[test]
fn the_result_says_how_the_bytes_were_copied_and_never_by_a_hard_link() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    write(&repo.join(".gitignore"), "build/\n");
    env.git(&repo, &["add", ".gitignore"]);
    env.git(&repo, &["commit", "-qm", "ignore build"]);
    let big = "0123456789abcdef".repeat(64 * 1024);
    write(&repo.join("build/big.bin"), &big);
    write(&repo.join("build/small.txt"), "small\n");
    let created = env.slipway_json(
        &repo,
        &[
            "worktree", "create", "--branch", "copied", "--copy", "build",
        ],
    );
    // The test folders are on a local filesystem: the kernel copies (or
    // clones) the bytes, nothing goes through reads and writes.
    let method = s(&created["copy"], "method");
    assert!(
        method == "copyFileRange" || method == "reflink",
        "copied by {method}: {created}"
    );
    let path = PathBuf::from(s(&created, "path"));
    assert_eq!(read(&path.join("build/big.bin")), big);
    use std::os::unix::fs::MetadataExt;
    let ours = std::fs::metadata(path.join("build/big.bin")).expect("copy");
    let host = std::fs::metadata(repo.join("build/big.bin")).expect("host");
    assert_ne!(ours.ino(), host.ino(), "a hard link, not a copy");
    assert_eq!(ours.nlink(), 1);
}
