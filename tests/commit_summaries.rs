//! The branch listing reads commit subjects and times straight from pack files
//! (`git::pack_commits`), with libgit2 for everything else. These tests hold
//! the fast path to what libgit2 and git say about the same objects, and check
//! that loose and deltified commits still come out right.

use crate::common;

use std::collections::HashSet;
use std::path::Path;

use common::*;
use git2::{Oid, Repository, Signature, Time};
use proptest::prelude::*;
use slipway_core::git::pack_commits::{PackCommits, subject};

/// Every commit of `dir` with git's committer time, one per line.
fn git_commits(env: &TestEnv, dir: &Path) -> Vec<(Oid, i64)> {
    env.git(dir, &["log", "--all", "--format=%H %ct"])
        .lines()
        .map(|line| {
            let (sha, time) = line.split_once(' ').expect("sha and time");
            (
                Oid::from_str(sha).expect("sha"),
                time.parse().expect("time"),
            )
        })
        .collect()
}

/// Commits whose pack entry is a delta, per `git verify-pack`.
fn deltified_commits(env: &TestEnv, dir: &Path) -> HashSet<Oid> {
    let pack_dir = dir.join(".git/objects/pack");
    let mut out = HashSet::new();
    for entry in std::fs::read_dir(&pack_dir).expect("pack dir") {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("idx") {
            continue;
        }
        let listing = env.git(dir, &["verify-pack", "-v", path.to_str().expect("utf-8")]);
        for line in listing.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // sha type size size-in-pack offset [depth base-sha]
            if fields.len() == 7 && fields[1] == "commit" {
                out.insert(Oid::from_str(fields[0]).expect("sha"));
            }
        }
    }
    out
}

/// The fixture after a thorough repack: every object in one pack, many of the
/// near-identical commits stored as deltas.
fn packed_fixture(env: &TestEnv) -> std::path::PathBuf {
    let repo = fixture(env);
    env.git(
        &repo,
        &[
            "repack",
            "-a",
            "-d",
            "-f",
            "--window=250",
            "--depth=50",
            "-q",
        ],
    );
    repo
}

/// A repository with odd commit messages and a run of near-identical large
/// commits (so a tight repack stores some of them as deltas).
fn fixture(env: &TestEnv) -> std::path::PathBuf {
    let repo = env.new_repo("repo");
    for message in [
        "wrapped\nsubject line\n\nbody",
        "\n\nleading blank lines",
        "inner  double\tspace kept",
        "ends at a whitespace-only line\n  \t\nsecond paragraph",
        "carriage\r\nreturn",
    ] {
        env.commit_file(&repo, "odd.txt", message, message);
    }
    let body = "the same long paragraph of release notes, repeated. ".repeat(60);
    for i in 0..30 {
        env.commit_file(
            &repo,
            "big.txt",
            &format!("{i}\n"),
            &format!("release {i}\n\n{body}"),
        );
        env.git(&repo, &["branch", &format!("release-{i}")]);
    }
    repo
}

#[test]
fn packed_commits_are_read_directly_and_agree_with_libgit2_and_git() {
    let env = TestEnv::new();
    let repo = packed_fixture(&env);
    let deltas = deltified_commits(&env, &repo);
    let git2_repo = Repository::open(&repo).expect("open");
    let packs = PackCommits::open(&repo.join(".git/objects"));
    let mut reader = packs.reader();
    let mut direct = 0;
    for (oid, time) in git_commits(&env, &repo) {
        let commit = git2_repo.find_commit(oid).expect("commit");
        let expected = (
            String::from_utf8_lossy(commit.summary_bytes().expect("summary")).into_owned(),
            time,
        );
        match reader.summary(&oid) {
            Some(found) => {
                assert_eq!(found, expected, "commit {oid}");
                direct += 1;
            }
            None => assert!(
                deltas.contains(&oid),
                "{oid} is stored plainly in a pack but was not read directly"
            ),
        }
    }
    // The fixture holds both kinds (which commits git stores whole depends on
    // its delta search; the odd-message ones are too different to be deltas).
    assert!(direct >= 5, "only {direct} commits were read directly");
    assert!(!deltas.is_empty(), "the repack made no deltified commit");
}

#[test]
fn loose_commits_are_left_to_libgit2() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let loose = env.commit_file(&repo, "a.txt", "a\n", "loose commit");
    let packs = PackCommits::open(&repo.join(".git/objects"));
    assert_eq!(
        packs.reader().summary(&Oid::from_str(&loose).expect("sha")),
        None
    );
    // And the listing still shows it.
    let listed = env.slipway_json(&repo, &["branches"]);
    assert_eq!(listed["branches"][0]["subject"], "loose commit");
}

#[test]
fn listing_matches_git_for_each_ref_with_packed_deltified_and_loose_commits() {
    let env = TestEnv::new();
    let repo = packed_fixture(&env);
    assert!(
        !deltified_commits(&env, &repo).is_empty(),
        "the fixture should hold deltified commits"
    );
    env.git(&repo, &["checkout", "-q", "-b", "after-pack"]);
    env.commit_file(
        &repo,
        "late.txt",
        "late\n",
        "a loose commit after the repack",
    );
    let listing = env.git(
        &repo,
        &[
            "for-each-ref",
            "--format=%(refname:short) %(objectname) %(committerdate:unix)",
            "refs/heads",
        ],
    );
    let listed = env.slipway_json(&repo, &["branches"]);
    let ours: Vec<String> = listed["branches"]
        .as_array()
        .expect("branches")
        .iter()
        .map(|b| format!("{} {} {}", s(b, "name"), s(b, "commit"), b["time"]))
        .collect();
    let git: Vec<&str> = listing.lines().collect();
    assert_eq!(ours, git);
    let subjects: Vec<&str> = listed["branches"]
        .as_array()
        .expect("branches")
        .iter()
        .map(|b| s(b, "subject"))
        .collect();
    assert!(subjects.contains(&"a loose commit after the repack"));
    assert!(subjects.contains(&"release 29"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// `subject` squashes a message exactly as libgit2's summary does.
    #[test]
    fn subject_agrees_with_libgit2(message in proptest::collection::vec(
        prop_oneof![
            Just(b'a'), Just(b'b'), Just(b' '), Just(b'\t'), Just(b'\n'),
            Just(b'\r'), Just(0x0b), Just(0x0c), Just(0xc3), Just(0xa9),
        ],
        0..40,
    )) {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = Repository::init(dir.path()).expect("init");
        let tree = repo.treebuilder(None).expect("builder").write().expect("tree");
        let tree = repo.find_tree(tree).expect("tree");
        let sig = Signature::new("t", "t@x", &Time::new(1, 0)).expect("signature");
        let buffer = repo.commit_create_buffer(&sig, &sig, "", &tree, &[]).expect("buffer");
        // The buffer ends with the blank line before the (empty) message.
        let mut raw = buffer.to_vec();
        raw.extend_from_slice(&message);
        let oid = repo.odb().expect("odb").write(git2::ObjectType::Commit, &raw).expect("write");
        let commit = repo.find_commit(oid).expect("commit");
        let expected = String::from_utf8_lossy(commit.summary_bytes().unwrap_or(b"")).into_owned();
        prop_assert_eq!(subject(&message), expected);
    }
}

#[test]
fn a_corrupt_pack_never_crashes_the_listing() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    for i in 0..5 {
        env.commit_file(&repo, "f.txt", &format!("{i}\n"), &format!("commit {i}"));
        env.git(&repo, &["branch", &format!("b{i}")]);
    }
    env.git(&repo, &["repack", "-a", "-d", "-q"]);
    let pack = std::fs::read_dir(repo.join(".git/objects/pack"))
        .expect("pack dir")
        .map(|e| e.expect("entry").path())
        .find(|p| p.extension().and_then(|e| e.to_str()) == Some("pack"))
        .expect("a pack");
    let mut bytes = std::fs::read(&pack).expect("read pack");
    // Scramble everything after the 12-byte header but keep the trailer.
    let end = bytes.len() - 20;
    for byte in &mut bytes[12..end] {
        *byte = byte.wrapping_mul(31).wrapping_add(7);
    }
    let mut perms = std::fs::metadata(&pack).expect("meta").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&pack, perms).expect("writable");
    std::fs::write(&pack, bytes).expect("write pack");
    let out = env.slipway(&repo, &["--json", "branches"]);
    // A listing or a typed error, never a crash.
    assert!(
        out.status.code().is_some(),
        "slipway was killed by a signal: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
