//! The `docker-isolated` sandbox against a second Docker engine reached over
//! loopback TCP (`DOCKER_HOST=tcp://127.0.0.1:23750`, started by
//! `scripts/docker-remote-setup.sh`): no bind mounts, code in as a bundle and
//! files, commits back with their SHAs, uncommitted results back as files.

use crate::common;

use std::path::Path;

use common::*;

const IMAGE: &str = "slipway-test:latest";

pub(crate) fn remote() -> String {
    let port = std::env::var("SLIPWAY_REMOTE_DOCKER_PORT").unwrap_or_else(|_| "23750".into());
    let host = format!("tcp://127.0.0.1:{port}");
    require_image_at(
        &host,
        "Docker engine",
        "run `bash scripts/docker-setup.sh && bash scripts/docker-remote-setup.sh` (as root)",
    );
    host
}

fn run_isolated(
    env: &TestEnv,
    repo: &Path,
    docker_host: &str,
    extra: &[&str],
    script: &str,
) -> std::process::Output {
    let mut args = vec![
        "--json",
        "run",
        "--sandbox",
        "docker-isolated",
        "--image",
        IMAGE,
        "--network",
        "none",
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "bash", "-c", script]);
    env.slipway_cmd(repo)
        .env("DOCKER_HOST", docker_host)
        .args(&args)
        .output()
        .expect("slipway runs")
}

#[test]
fn commits_and_files_come_back_from_a_remote_engine_that_saw_no_bind_mount() {
    let host = remote();
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    env.commit_file(&repo, "src/lib.txt", "one\n", "add lib");
    let created = env.slipway_json(&repo, &["worktree", "create", "--branch", "iso/work"]);
    let wt = Path::new(s(&created, "path")).to_path_buf();
    std::fs::write(wt.join("user-notes.txt"), "the user's uncommitted notes\n").expect("write");
    std::fs::write(wt.join("src/lib.txt"), "one\nuser edit\n").expect("write");

    let script = format!(
        "set -e\n\
         echo \"in: $(pwd)\"\n\
         cat user-notes.txt\n\
         if grep -q '{repo}' /proc/self/mountinfo; then echo 'HOST PATH MOUNTED'; fi\n\
         grep -c ' / ' /proc/self/mountinfo >/dev/null\n\
         echo a > a.txt; git add a.txt src/lib.txt; git commit -qm 'agent: a'\n\
         echo b > b.txt; git add b.txt; git commit -qm 'agent: b'\n\
         echo \"tips: $(git rev-parse HEAD~1) $(git rev-parse HEAD)\"\n\
         echo 'uncommitted edit' >> b.txt\n\
         echo 'brand new' > untracked.txt\n",
        repo = repo.display()
    );
    let out = run_isolated(&env, &repo, &host, &["--worktree", "iso/work"], &script);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let log = std::fs::read_to_string(s(&result, "logFile")).expect("log");
    assert!(
        log.contains("the user's uncommitted notes"),
        "uncommitted files went in:\n{log}"
    );
    assert!(
        !log.contains("HOST PATH MOUNTED"),
        "the engine saw a bind mount:\n{log}"
    );
    assert!(
        !log.contains(&format!("in: {}", wt.display())),
        "the agent ran in the container's own copy"
    );

    // The commits came back with the SHAs the container made.
    let tips = log
        .lines()
        .find_map(|l| l.strip_prefix("tips: "))
        .expect("the agent printed its tips");
    let container_shas: Vec<&str> = tips.split_whitespace().collect();
    assert_eq!(commit_shas(&result), container_shas);
    assert_eq!(env.rev(&repo, "iso/work"), container_shas[1]);
    assert_eq!(
        env.git(&repo, &["log", "-1", "--format=%s", "iso/work"]),
        "agent: b"
    );

    // Uncommitted and untracked results are in the host worktree, which is kept.
    assert_eq!(
        std::fs::read_to_string(wt.join("b.txt")).expect("b"),
        "b\nuncommitted edit\n"
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("untracked.txt")).expect("new"),
        "brand new\n"
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("user-notes.txt")).expect("notes"),
        "the user's uncommitted notes\n"
    );
    let porcelain = env.porcelain(&wt);
    assert!(
        porcelain.contains("M b.txt") && porcelain.contains("?? untracked.txt"),
        "{porcelain}"
    );
    assert_eq!(
        s(&result, "preservedWorktreePath"),
        wt.to_str().expect("utf8")
    );
    let list = env.slipway_json(&repo, &["worktree", "list"]);
    // A worktree the user handed to the run stays active (it is the user's), and
    // shows as dirty: only a worktree the run made itself is flagged preserved.
    assert_eq!(list["worktrees"][0]["state"], "active", "{list}");
    assert_eq!(list["worktrees"][0]["dirty"], true, "{list}");
}

#[test]
fn merge_to_head_through_an_isolated_sandbox_lands_on_the_host_branch() {
    let host = remote();
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let base = env.rev(&repo, "main");
    let out = run_isolated(
        &env,
        &repo,
        &host,
        &["--strategy", "merge-to-head"],
        "set -e; echo x > x.txt; git add x.txt; git commit -qm 'agent: x'",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(result["merge"]["kind"], "fastForward");
    assert_eq!(
        env.git(&repo, &["rev-list", "--count", &format!("{base}..main")]),
        "1"
    );
    assert_eq!(
        env.git(&repo, &["log", "-1", "--format=%s", "main"]),
        "agent: x"
    );
    assert!(repo.join("x.txt").exists());
    assert_eq!(env.local_branches(&repo), vec!["main".to_owned()]);
}

#[test]
fn when_the_work_cannot_be_brought_back_the_whole_worktree_is_saved_on_the_host() {
    let host = remote();
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    env.slipway_json(&repo, &["worktree", "create", "--branch", "broken"]);
    // The agent commits, then hides its repository from the collector.
    let out = run_isolated(
        &env,
        &repo,
        &host,
        &["--worktree", "broken"],
        "set -e; echo precious > precious.txt; git add precious.txt; git commit -qm precious; git rev-parse HEAD > sha.txt; mv .git .git-moved",
    );
    assert!(!out.status.success());
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let message = s(&result["error"], "message").to_owned();
    let tar_path = message
        .split_whitespace()
        .find(|w| w.ends_with("worktree.tar"))
        .unwrap_or_else(|| panic!("the error names the saved worktree: {message}"));
    let unpack = env.path().join("rescued");
    std::fs::create_dir_all(&unpack).expect("dir");
    let status = std::process::Command::new("tar")
        .args(["-xf", tar_path, "-C"])
        .arg(&unpack)
        .status()
        .expect("tar");
    assert!(status.success());
    let root = std::fs::read_dir(&unpack)
        .expect("read")
        .next()
        .expect("one folder")
        .expect("entry")
        .path();
    let sha = std::fs::read_to_string(root.join("sha.txt")).expect("sha");
    let found = env.git(
        &root,
        &["--git-dir=.git-moved", "log", "-1", "--format=%H %s"],
    );
    assert_eq!(
        found,
        format!("{} precious", sha.trim()),
        "the commit survived in the rescue"
    );
}
