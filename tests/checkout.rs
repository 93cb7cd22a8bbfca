//! A new worktree holds exactly what `git worktree add` checks out, byte for
//! byte and mode for mode, and git finds it clean from its index: plain
//! trees (written on several threads), trees whose `.gitattributes` or
//! config ask for end-of-line conversion or `ident` (filtered by libgit2,
//! only the files a filter may touch), and trees only libgit2's checkout
//! handles (names outside plain ASCII).

use crate::common;
use common::*;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// What a checkout holds: for each path below the root (`.git` aside), its
/// kind, executable bit and bytes (a symlink's target).
fn snapshot(dir: &Path) -> BTreeMap<String, (char, bool, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let path = entry.path();
            if path == dir.join(".git") {
                continue;
            }
            let rel = path
                .strip_prefix(dir)
                .expect("inside")
                .display()
                .to_string();
            let meta = path.symlink_metadata().expect("lstat");
            let kind = meta.file_type();
            if kind.is_symlink() {
                let target = std::fs::read_link(&path).expect("readlink");
                out.insert(rel, ('l', false, target.display().to_string().into_bytes()));
            } else if kind.is_dir() {
                out.insert(rel, ('d', false, Vec::new()));
                todo.push(path);
            } else {
                let exec = meta.permissions().mode() & 0o111 != 0;
                out.insert(rel, ('f', exec, std::fs::read(&path).expect("read")));
            }
        }
    }
    out
}

/// Creates a slipway worktree and a `git worktree add` one of the same
/// commit; asserts they hold the same and that git sees the slipway one
/// clean, its index matching HEAD. Returns the slipway worktree.
fn same_as_git(env: &TestEnv, repo: &Path, branch: &str) -> PathBuf {
    let created = env.slipway_json(repo, &["worktree", "create", "--branch", branch]);
    let ours = PathBuf::from(s(&created, "path"));
    let theirs = env.path().join(format!("git-{}", branch.replace('/', "-")));
    env.git(
        repo,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            theirs.to_str().expect("utf-8"),
            branch,
        ],
    );
    assert_eq!(
        snapshot(&ours),
        snapshot(&theirs),
        "slipway's checkout differs from git's"
    );
    assert_eq!(env.porcelain(&ours), "", "git finds the new worktree dirty");
    assert_eq!(
        env.git(&ours, &["diff-index", "--cached", "--name-only", "HEAD"]),
        "",
        "the index does not match HEAD"
    );
    // The index carries stat data: git needs to hash nothing to call the
    // files clean (a zeroed stat would list every file here).
    assert_eq!(
        env.git(&ours, &["diff-files", "--name-only"]),
        "",
        "the index's stat data do not match the files"
    );
    ours
}

/// A tree with nested folders, an executable, a symlink, an empty file, a
/// submodule, and `a-b` beside `a/b` (index order is not tree order).
fn plain_tree(env: &TestEnv, repo: &Path) {
    for i in 0..600 {
        let path = repo.join(format!("src/d{}/f{i}.txt", i % 7));
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, format!("file {i}\n")).expect("write");
    }
    std::fs::create_dir_all(repo.join("a/b")).expect("mkdir");
    std::fs::write(repo.join("a/b/c"), "deep\n").expect("write");
    std::fs::write(repo.join("a-b"), "dash\n").expect("write");
    std::fs::write(repo.join("empty"), "").expect("write");
    std::fs::write(repo.join("run.sh"), "#!/bin/sh\necho hi\n").expect("write");
    std::fs::set_permissions(repo.join("run.sh"), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    std::os::unix::fs::symlink("src/d0/f0.txt", repo.join("link")).expect("symlink");
    env.git(repo, &["add", "-A"]);
    let head = env.rev(repo, "HEAD");
    env.git(
        repo,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{head},vendor/sub"),
        ],
    );
    env.git(repo, &["commit", "-qm", "plain tree"]);
}

#[test]
fn a_plain_tree_is_checked_out_as_git_checks_it_out() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    plain_tree(&env, &repo);
    let ours = same_as_git(&env, &repo, "plain");
    assert!(
        ours.join("vendor/sub").is_dir(),
        "the submodule's folder is missing"
    );
    let closed = env.slipway_json(&repo, &["worktree", "close", "plain"]);
    assert_eq!(closed["outcome"], "removed", "{closed}");
}

#[test]
fn files_that_gitattributes_converts_are_filtered_as_git_filters_them() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    std::fs::write(
        repo.join(".gitattributes"),
        "* text=auto\n*.bat eol=crlf\n*.png binary\n",
    )
    .expect("attributes");
    std::fs::create_dir_all(repo.join("tools/deep")).expect("mkdir");
    std::fs::write(repo.join("tools/.gitattributes"), "*.c ident\n").expect("attributes");
    std::fs::write(repo.join("tools/deep/x.c"), "/* $Id$ */\nint x;\n").expect("write");
    std::fs::write(repo.join("x.c"), "/* $Id$ */ outside tools\n").expect("write");
    std::fs::write(repo.join("tools/run.bat"), "echo one\necho two\n").expect("write");
    std::fs::write(repo.join("notes.txt"), "plain\nlines\n").expect("write");
    std::fs::write(repo.join("pic.png"), b"\x89PNG\r\n\x1a\n\0\0\nraw\n").expect("write");
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-qm", "attributes"]);
    let ours = same_as_git(&env, &repo, "attrs");
    let bat = std::fs::read(ours.join("tools/run.bat")).expect("bat");
    assert_eq!(bat, b"echo one\r\necho two\r\n", "eol=crlf was not applied");
    let c = std::fs::read_to_string(ours.join("tools/deep/x.c")).expect("c");
    assert!(c.starts_with("/* $Id: "), "ident was not applied: {c}");
}

#[test]
fn core_autocrlf_converts_every_text_file_as_git_does() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    for i in 0..40 {
        std::fs::write(repo.join(format!("t{i}.txt")), "a\nb\n").expect("write");
    }
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-qm", "text"]);
    env.git(&repo, &["config", "core.autocrlf", "true"]);
    let ours = same_as_git(&env, &repo, "crlf");
    assert_eq!(
        std::fs::read(ours.join("t7.txt")).expect("read"),
        b"a\r\nb\r\n"
    );
}

#[test]
fn a_tree_with_names_outside_plain_ascii_is_left_to_libgit2_and_still_matches_git() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    std::fs::write(repo.join("caf\u{e9}.txt"), "accent\n").expect("write");
    std::fs::write(repo.join("plain.txt"), "plain\n").expect("write");
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-qm", "names"]);
    same_as_git(&env, &repo, "names");
}
