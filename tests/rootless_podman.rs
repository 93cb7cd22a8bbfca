//! Rootless Podman (issue 23, "rootless if it works here"): slipway run by a
//! user of its own against that user's rootless `podman system service`, as
//! someone runs Podman on their own machine (`scripts/podman-rootless-setup.sh`
//! makes the user and the service). A rootless container's uids are the
//! user's subordinate ones unless it keeps the user's ids, so without that a
//! run's files in the bind-mounted worktree belong to a stranger and git in
//! the container refuses the worktree as dubiously owned.

use crate::common;

use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::*;
use serde_json::Value;

/// The user `scripts/podman-rootless-setup.sh` makes.
fn rootless_user() -> String {
    std::env::var("SLIPWAY_ROOTLESS_USER").unwrap_or_else(|_| "slipway-rootless".into())
}

/// The user's uid, and the socket of their rootless service, checked to
/// answer and hold the test image.
fn rootless_engine(user: &str) -> (u32, String) {
    let how = "run `bash scripts/podman-rootless-setup.sh` (as root)";
    let out = Command::new("id")
        .args(["-u", user])
        .output()
        .expect("id runs");
    assert!(out.status.success(), "no user {user}: {how}");
    let uid: u32 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("a uid");
    let url = format!("unix:///run/user/{uid}/podman.sock");
    require_image_at(&url, "rootless Podman API", how);
    (uid, url)
}

/// A test environment the rootless user owns, with a copy of the slipway
/// under test in it.
struct UserEnv {
    env: TestEnv,
    user: String,
    uid: u32,
    docker_host: String,
    /// The slipway under test, where the user can run it.
    slipway: PathBuf,
}

impl UserEnv {
    fn new() -> UserEnv {
        let user = rootless_user();
        let (uid, docker_host) = rootless_engine(&user);
        let env = TestEnv::new();
        env.set_env("XDG_STATE_HOME", env.path().join("state"));
        // A copy in the environment, which becomes the user's: the build's
        // folder may be closed to other users.
        let slipway = env.path().join("bin/slipway");
        std::fs::create_dir_all(env.path().join("bin")).expect("bin dir");
        std::fs::copy(env!("CARGO_BIN_EXE_slipway"), &slipway).expect("copy slipway");
        UserEnv {
            env,
            user,
            uid,
            docker_host,
            slipway,
        }
    }

    /// Gives everything in the environment to the user, as their own files.
    fn hand_over(&self) {
        let out = Command::new("chown")
            .args(["-R", &format!("{}:", self.user)])
            .arg(self.env.path())
            .output()
            .expect("chown runs");
        assert!(out.status.success(), "chown: {out:?}");
    }

    /// Runs `program ARGS` in `dir` as the user, with the environment's
    /// variables and the user's engine as `DOCKER_HOST`.
    fn run_as_user(&self, dir: &Path, program: &Path, args: &[&str]) -> Output {
        let mut envs: Vec<(String, OsString)> = self.env.envs();
        envs.push(("DOCKER_HOST".into(), self.docker_host.clone().into()));
        envs.push((
            "PATH".into(),
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
        ));
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", &self.user, "--", "env", "-i"]);
        for (k, v) in envs {
            let mut pair = OsString::from(format!("{k}="));
            pair.push(v);
            cmd.arg(pair);
        }
        cmd.arg(program)
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .output()
            .expect("runuser runs")
    }

    fn git(&self, repo: &Path, args: &[&str]) -> String {
        let out = self.run_as_user(repo, Path::new("git"), args);
        assert!(
            out.status.success(),
            "git {args:?} as {}: {out:?}",
            self.user
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// `slipway --json run SANDBOX ARGS -- AGENT` as the user; its result.
    fn run(&self, repo: &Path, sandbox: &str, branch: &str) -> Value {
        let agent = "set -e; id -u > uid.txt; echo from the container > f.txt; \
            git add f.txt uid.txt; git commit -qm 'from the container'";
        let args = [
            "--json",
            "run",
            "--sandbox",
            sandbox,
            "--image",
            TEST_IMAGE,
            "--network",
            "none",
            "--strategy",
            "branch",
            "--branch",
            branch,
            "--prompt",
            "work",
            "--",
            "sh",
            "-c",
            agent,
        ];
        let out = self.run_as_user(repo, &self.slipway, &args);
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "no JSON result ({e}), exit {:?}:\n{}\n{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
    }

    /// Every path under `dir` not owned by the user.
    fn not_the_users(&self, dir: &Path) -> Vec<(PathBuf, u32)> {
        let mut strangers = Vec::new();
        let mut todo = vec![dir.to_path_buf()];
        while let Some(path) = todo.pop() {
            let meta = std::fs::symlink_metadata(&path).expect("stat");
            if meta.uid() != self.uid {
                strangers.push((path.clone(), meta.uid()));
            }
            if meta.is_dir() {
                for entry in std::fs::read_dir(&path).expect("read dir") {
                    todo.push(entry.expect("dir entry").path());
                }
            }
        }
        strangers
    }
}

/// A run in each docker sandbox against the user's rootless Podman: the
/// agent's commit comes back on the branch, the agent ran as the user's own
/// uid, and every file the run left in the repository is the user's.
fn rootless_run(sandbox: &str) {
    let user = UserEnv::new();
    let repo = user.env.new_repo("repo");
    user.hand_over();
    let result = user.run(&repo, sandbox, "rootless/work");
    assert_eq!(s(&result, "status"), "completed", "{result:#}");
    assert_eq!(commit_shas(&result).len(), 1, "{result:#}");
    let uid = user.git(&repo, &["show", "rootless/work:uid.txt"]);
    assert_eq!(uid, user.uid.to_string(), "the agent ran as the user's uid");
    assert_eq!(
        user.git(&repo, &["show", "rootless/work:f.txt"]),
        "from the container"
    );
    let strangers = user.not_the_users(user.env.path());
    assert!(
        strangers.is_empty(),
        "files the user does not own (path, uid): {strangers:?}"
    );
    assert_eq!(
        user.git(&repo, &["status", "--porcelain"]),
        "",
        "the user's checkout is as it was"
    );
}

#[test]
fn a_docker_run_on_rootless_podman_commits_as_the_user_in_the_shared_worktree() {
    rootless_run("docker");
}

#[test]
fn a_docker_isolated_run_on_rootless_podman_brings_its_commit_back() {
    rootless_run("docker-isolated");
}
