//! Import of a run's branch into the host against `git fetch` of the same
//! branch from the same private repository, interleaved, on fresh copies of
//! one fixture: 100 commits of 10 files each on top of a 1,000-file host.
//!
//!   cargo bench -p slipway-core --bench import_bench [-- ROUNDS]
//!
//! The agent's objects are loose, as its commits write them. The fixture goes
//! where `TMPDIR` points: put it on a journaled filesystem (the README's
//! `benches/import_bench.py` mounts one).
//!
//! Prints the median and the spread (lowest–highest round) of each, and the
//! ratio of the medians. Needs the git CLI (to build the fixture and as the peer).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use slipway_core::git::import::{ImportRequest, import_branch};

const COMMITS: usize = 100;
const FILES_PER_COMMIT: usize = 10;
const HOST_FILES: usize = 1000;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@slipway.invalid")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@slipway.invalid")
        .output()
        .expect("git runs (the bench needs the git CLI)");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Feeds a fast-import stream to git in `dir`.
fn fast_import(dir: &Path, stream: &str) {
    use std::io::Write;
    let mut child = Command::new("git")
        .current_dir(dir)
        .args(["fast-import", "--quiet"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("git fast-import");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(stream.as_bytes())
        .expect("feed fast-import");
    assert!(child.wait().expect("fast-import ends").success());
}

/// The host (1,000 files, one commit) and, beside it, a private repository
/// borrowing the host's objects that holds 100 commits on `agent`.
fn fixture(root: &Path) -> (PathBuf, PathBuf, String) {
    let host = root.join("host");
    std::fs::create_dir_all(&host).expect("host dir");
    git(&host, &["init", "-q", "-b", "main"]);
    let mut stream = String::from(
        "commit refs/heads/main\ncommitter bench <b@x> 1767225600 +0000\ndata 4\nbase\n",
    );
    for i in 0..HOST_FILES {
        let body = format!("host file {i}\n");
        stream.push_str(&format!(
            "M 100644 inline src/d{}/f{i}.txt\ndata {}\n{body}\n",
            i % 20,
            body.len()
        ));
    }
    fast_import(&host, &stream);
    let private = root.join("private");
    git(
        root,
        &[
            "clone",
            "-q",
            "--shared",
            "--no-checkout",
            "host",
            "private",
        ],
    );
    let mut stream = String::new();
    for c in 0..COMMITS {
        stream.push_str(&format!(
            "commit refs/heads/agent\ncommitter agent <a@x> {} +0000\ndata 5\nagent\n",
            1767225600 + c
        ));
        if c == 0 {
            stream.push_str("from refs/heads/main\n");
        }
        for f in 0..FILES_PER_COMMIT {
            let body = format!("commit {c} file {f}\n{}\n", "x".repeat(200 + c));
            stream.push_str(&format!(
                "M 100644 inline agent/c{c}/f{f}.txt\ndata {}\n{body}\n",
                body.len()
            ));
        }
    }
    fast_import(&private, &stream);
    loosen(&private);
    let tip = git(&private, &["rev-parse", "refs/heads/agent"]);
    (host, private, tip)
}

/// Turns the pack fast-import wrote into loose objects, as an agent's own
/// `git commit`s leave them in its private git dir.
fn loosen(repo: &Path) {
    let packs = repo.join(".git/objects/pack");
    let aside = repo.join("packs-aside");
    std::fs::create_dir_all(&aside).expect("a folder for the packs");
    for entry in std::fs::read_dir(&packs).expect("the pack folder") {
        let path = entry.expect("a pack folder entry").path();
        let to = aside.join(path.file_name().expect("a file name"));
        std::fs::rename(&path, &to).expect("move the pack aside");
    }
    for entry in std::fs::read_dir(&aside).expect("the packs") {
        let path = entry.expect("a pack").path();
        if path.extension().is_some_and(|e| e == "pack") {
            let pack = std::fs::File::open(&path).expect("open the pack");
            let ok = Command::new("git")
                .current_dir(repo)
                .args(["unpack-objects", "-q"])
                .stdin(pack)
                .status()
                .expect("git unpack-objects");
            assert!(ok.success());
        }
    }
    std::fs::remove_dir_all(&aside).expect("remove the packs");
}

fn copy_dir(from: &Path, to: &Path) {
    let ok = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp");
    assert!(ok.success());
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    // `cargo test --all-targets` runs this too (without `--bench`): one round
    // then, as a check that the import still works on the fixture.
    let benching = std::env::args().any(|a| a == "--bench");
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(if benching { 9 } else { 1 });
    let work = tempfile::tempdir().expect("temp dir");
    let (host, private, tip) = fixture(work.path());
    let tip_oid = git2::Oid::from_str(&tip).expect("tip id");
    let private_objects = private.join(".git/objects");
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        // Each side gets its own fresh copy of the host, made before the clock starts.
        let a = work.path().join(format!("a{r}"));
        let b = work.path().join(format!("b{r}"));
        copy_dir(&host, &a);
        copy_dir(&host, &b);
        // Opened as slipway opens the host (libgit2's own re-hash on read off:
        // the import hashes every object itself).
        let host_copy = slipway_core::git::HostRepo::open(&a).expect("open the host copy");
        let repo = host_copy.git();
        let request = ImportRequest {
            refname: "refs/heads/agent",
            tip: tip_oid,
            start: None,
            run_id: "bench",
        };
        let (first, second) = if r % 2 == 0 { (0, 1) } else { (1, 0) };
        for side in [first, second] {
            let t = Instant::now();
            if side == 0 {
                let imported = import_branch(repo, &private_objects, &request).expect("import");
                assert!(imported.moved);
                ours.push(t.elapsed());
            } else {
                git(
                    &b,
                    &[
                        "fetch",
                        "-q",
                        private.to_str().expect("utf8"),
                        "agent:agent",
                    ],
                );
                theirs.push(t.elapsed());
            }
        }
        assert_eq!(git(&a, &["rev-parse", "agent"]), tip);
        assert_eq!(git(&b, &["rev-parse", "agent"]), tip);
        git(&a, &["fsck", "--no-progress", "--connectivity-only"]);
    }
    let spread = |v: &[Duration]| {
        let lo = v.iter().min().expect("rounds");
        let hi = v.iter().max().expect("rounds");
        format!(
            "{:.1}–{:.1}",
            lo.as_secs_f64() * 1e3,
            hi.as_secs_f64() * 1e3
        )
    };
    let (so, st) = (spread(&ours), spread(&theirs));
    let (mo, mt) = (median(&mut ours), median(&mut theirs));
    println!("median of {rounds} interleaved rounds, {COMMITS} commits x {FILES_PER_COMMIT} files");
    println!("| import (libgit2, hashed again) | git fetch from the private repo | ratio |");
    println!("| --- | --- | --- |");
    println!(
        "| {:.1} ms ({so}) | {:.1} ms ({st}) | {:.2} |",
        mo.as_secs_f64() * 1e3,
        mt.as_secs_f64() * 1e3,
        mo.as_secs_f64() / mt.as_secs_f64()
    );
}
