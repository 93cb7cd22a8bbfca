//! One hermetic test environment: a temp folder holding a fake HOME with its
//! own global git config, real repositories, and helpers that run the real git
//! CLI (to build fixtures and to check answers) and the real `slipway` binary.
//!
//! Every environment checks, when dropped, that the global git config file is
//! byte-identical to what it wrote: slipway must never write the user's config.
#![allow(dead_code)]

pub mod agents;
pub mod lsp;
pub mod model_server;
pub mod pty;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// A hermetic world for one test.
pub struct TestEnv {
    dir: tempfile::TempDir,
    home: PathBuf,
    gitconfig: PathBuf,
    initial_gitconfig: Vec<u8>,
    /// Variables added with [`TestEnv::set_env`], given to every child after the defaults.
    extra: std::cell::RefCell<Vec<(String, OsString)>>,
}

/// The author and committer date of every commit the tests (and the agents they run) make.
pub const FIXED_DATE: &str = "1767225600 +0000";

const GLOBAL_CONFIG: &str = "[user]\n\tname = Slipway Test\n\temail = test@slipway.invalid\n[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n[protocol \"file\"]\n\tallow = always\n";

impl TestEnv {
    /// A fresh environment.
    pub fn new() -> TestEnv {
        let dir = tempfile::Builder::new()
            .prefix("slipway-test-")
            .tempdir()
            .expect("temp dir");
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join(".config")).expect("home");
        let gitconfig = home.join(".gitconfig");
        std::fs::write(&gitconfig, GLOBAL_CONFIG).expect("gitconfig");
        TestEnv {
            dir,
            home,
            gitconfig,
            initial_gitconfig: GLOBAL_CONFIG.as_bytes().to_vec(),
            extra: std::cell::RefCell::new(Vec::new()),
        }
    }

    /// The folder repositories are made in.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The fake HOME.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Gives every child process started from now on `key=value` (replacing
    /// an earlier value of `key`).
    pub fn set_env(&self, key: &str, value: impl Into<OsString>) {
        let mut extra = self.extra.borrow_mut();
        extra.retain(|(k, _)| k != key);
        extra.push((key.to_owned(), value.into()));
    }

    /// The environment every child process gets.
    pub fn envs(&self) -> Vec<(String, OsString)> {
        let mut envs: Vec<(String, OsString)> = vec![
            ("HOME", self.home.clone().into()),
            ("XDG_CONFIG_HOME", self.home.join(".config").into()),
            ("GIT_CONFIG_GLOBAL", self.gitconfig.clone().into()),
            ("GIT_CONFIG_NOSYSTEM", "1".into()),
            ("GIT_AUTHOR_NAME", "Slipway Test".into()),
            ("GIT_AUTHOR_EMAIL", "test@slipway.invalid".into()),
            ("GIT_COMMITTER_NAME", "Slipway Test".into()),
            ("GIT_COMMITTER_EMAIL", "test@slipway.invalid".into()),
            ("GIT_TERMINAL_PROMPT", "0".into()),
            // Fixed dates: the same commits get the same ids in every run.
            ("GIT_AUTHOR_DATE", FIXED_DATE.into()),
            ("GIT_COMMITTER_DATE", FIXED_DATE.into()),
            ("LC_ALL", "C".into()),
            ("SLIPWAY_LOG", "warn".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let extra = self.extra.borrow();
        envs.retain(|(k, _)| !extra.iter().any(|(e, _)| e == k));
        envs.extend(extra.iter().cloned());
        envs
    }

    /// A child process with nothing of the caller's environment but `PATH`.
    fn command(&self, program: impl AsRef<std::ffi::OsStr>, dir: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(dir).env_clear().stdin(Stdio::null());
        if let Some(path) = std::env::var_os("PATH") {
            cmd.env("PATH", path);
        }
        for (k, v) in self.envs() {
            cmd.env(k, v);
        }
        cmd
    }

    /// `text` with this environment's temporary folder (as given and as the
    /// file system resolves it) written `[TMP]`, for snapshots.
    pub fn normalise(&self, text: &str) -> String {
        let mut out = text.to_owned();
        let given = self.path().display().to_string();
        if let Ok(real) = self.path().canonicalize() {
            out = out.replace(&real.display().to_string(), "[TMP]");
        }
        out.replace(&given, "[TMP]")
    }

    /// Runs the git CLI; panics with its output if it fails. Returns trimmed stdout.
    pub fn git(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.git_output(dir, args);
        assert!(
            out.status.success(),
            "git {args:?} failed in {}:\n{}{}",
            dir.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Runs the git CLI and returns its raw output.
    pub fn git_output(&self, dir: &Path, args: &[&str]) -> Output {
        self.command("git", dir)
            .args(args)
            .output()
            .expect("git runs")
    }

    /// The `slipway` binary under test.
    pub fn slipway_cmd(&self, dir: &Path) -> Command {
        self.command(env!("CARGO_BIN_EXE_slipway"), dir)
    }

    /// Runs `slipway ARGS` in `dir`.
    pub fn slipway(&self, dir: &Path, args: &[&str]) -> Output {
        self.slipway_cmd(dir)
            .args(args)
            .output()
            .expect("slipway runs")
    }

    /// Runs `slipway --json ARGS`, asserts success and parses stdout.
    pub fn slipway_json(&self, dir: &Path, args: &[&str]) -> Value {
        self.slipway_json_code(dir, args, 0)
    }

    /// Runs `slipway --json ARGS`, asserts it exits with `code` and parses stdout.
    pub fn slipway_json_code(&self, dir: &Path, args: &[&str], code: i32) -> Value {
        let mut full = vec!["--json"];
        full.extend_from_slice(args);
        let out = self.slipway(dir, &full);
        assert_eq!(
            out.status.code(),
            Some(code),
            "slipway {args:?} exit code:\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "slipway {args:?} printed no JSON ({e}):\n{}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    }

    /// Runs `slipway --json ARGS`, asserts failure and returns (stdout JSON or Null, stderr error JSON).
    pub fn slipway_fail(&self, dir: &Path, args: &[&str]) -> (Value, Value) {
        let mut full = vec!["--json"];
        full.extend_from_slice(args);
        let out = self.slipway(dir, &full);
        assert!(
            !out.status.success(),
            "slipway {args:?} should have failed:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
        let stdout = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let err = json_error(&out.stderr).unwrap_or_else(|| {
            panic!(
                "no JSON error on stderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (stdout, err)
    }

    /// Approves the repository's `slipway.toml` as it is now, as the user
    /// would with `slipway trust`.
    pub fn trust(&self, repo: &Path) {
        let out = self.slipway(repo, &["trust"]);
        assert!(
            out.status.success(),
            "slipway trust failed in {}:\n{}",
            repo.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A new repository `name` on branch `main` with one commit (README.md).
    pub fn new_repo(&self, name: &str) -> PathBuf {
        let dir = self.path().join(name);
        std::fs::create_dir_all(&dir).expect("repo dir");
        self.git(&dir, &["init", "-q", "-b", "main"]);
        self.commit_file(&dir, "README.md", "# test repo\n", "initial commit");
        dir
    }

    /// Writes a file, commits it, returns the new commit id.
    pub fn commit_file(&self, dir: &Path, path: &str, content: &str, message: &str) -> String {
        let full = dir.join(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent).expect("parent dir");
        }
        std::fs::write(&full, content).expect("write file");
        self.git(dir, &["add", "--", path]);
        self.git(dir, &["commit", "-q", "-m", message]);
        self.git(dir, &["rev-parse", "HEAD"])
    }

    /// `git rev-parse REV` in `dir`.
    pub fn rev(&self, dir: &Path, rev: &str) -> String {
        self.git(dir, &["rev-parse", rev])
    }

    /// Local branch names, as git lists them.
    pub fn local_branches(&self, dir: &Path) -> Vec<String> {
        let out = self.git(
            dir,
            &["for-each-ref", "--format=%(refname:short)", "refs/heads"],
        );
        out.lines().map(str::to_owned).collect()
    }

    /// Writes an executable shell script into the environment and returns its path.
    pub fn script(&self, name: &str, body: &str) -> PathBuf {
        let dir = self.path().join("scripts");
        std::fs::create_dir_all(&dir).expect("scripts dir");
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}")).expect("write script");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    /// Runs `slipway ARGS` (a `--json run …`) and returns whether it
    /// succeeded, its result document and the run's log.
    pub fn run_result(&self, dir: &Path, args: &[&str]) -> (bool, Value, String) {
        let out = self.slipway(dir, args);
        let result: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "no result document ({e}):\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        let log = result["logFile"]
            .as_str()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .unwrap_or_default();
        (out.status.success(), result, log)
    }

    /// Runs `slipway ARGS` in `dir` with the crash point `crash`
    /// (`SLIPWAY_TEST_CRASH`), in a process group of its own as a command
    /// started from a terminal would be (a `:group` crash kills that group,
    /// never the test's); whether it was killed, and its output.
    pub fn crashing(&self, dir: &Path, crash: &str, args: &[&str]) -> (bool, Output) {
        use std::os::unix::process::{CommandExt, ExitStatusExt};
        let out = self
            .slipway_cmd(dir)
            .env("SLIPWAY_TEST_CRASH", crash)
            .args(args)
            .process_group(0)
            .output()
            .expect("slipway runs");
        (out.status.signal() == Some(libc::SIGKILL), out)
    }

    /// `git status --porcelain` of `dir`, as git itself reports it.
    pub fn porcelain(&self, dir: &Path) -> String {
        self.git(dir, &["status", "--porcelain", "--untracked-files=all"])
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let now = std::fs::read(&self.gitconfig).unwrap_or_default();
        assert_eq!(
            String::from_utf8_lossy(&now),
            String::from_utf8_lossy(&self.initial_gitconfig),
            "the global git config changed during the test"
        );
    }
}

/// How long a test waits for something that must happen (a file, a record
/// state, a process ending): far longer than it takes on a loaded machine, so
/// only "it never happens" runs into it. It was 60 s until OpenCode's TUI took
/// longer than that to draw its first screen at load 12 on 2 cores.
pub const EVENT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(180);

/// The live processes (zombies left out) whose process group is `pgid`.
pub fn group_members(pgid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp ...`: the fields after the last ')'.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 2 && !matches!(fields[0], "Z" | "X") && fields[2] == pgid.to_string() {
            out.push(pid);
        }
    }
    out
}

/// A fifo an agent script waits on until the test lets it take its next
/// step: the test decides when the agent goes on, and neither side sleeps.
/// The agent runs [`Gate::open_line`] first and [`Gate::wait_line`] wherever
/// it must wait; each [`Gate::go`] lets one wait through.
pub struct Gate {
    path: PathBuf,
    writer: std::cell::RefCell<Option<std::fs::File>>,
}

impl Gate {
    /// A new gate in the test's folder.
    pub fn new(env: &TestEnv, name: &str) -> Gate {
        let path = env.path().join(format!("{name}.gate"));
        let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("no NUL");
        // SAFETY: a valid NUL-terminated path; mkfifo has no other preconditions.
        let made = unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) };
        assert_eq!(
            made,
            0,
            "mkfifo {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        );
        Gate {
            path,
            writer: std::cell::RefCell::new(None),
        }
    }

    /// The agent's first shell line: opens the gate on fd 9 (read-write, so
    /// opening never waits for the test).
    pub fn open_line(&self) -> String {
        format!("exec 9<>'{}'\n", self.path.display())
    }

    /// A shell line that waits for the test's next [`Gate::go`].
    pub fn wait_line(&self) -> &'static str {
        "read -r _ <&9\n"
    }

    /// Lets the agent's next wait through, once the agent has opened the gate.
    pub fn go(&self) {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut writer = self.writer.borrow_mut();
        if writer.is_none() {
            // Opening a fifo to write fails (ENXIO) until someone has it open to read.
            let opened = lsp::wait_until(EVENT_DEADLINE, || {
                *writer = std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&self.path)
                    .ok();
                writer.is_some()
            });
            assert!(opened, "the agent never opened {}", self.path.display());
        }
        writer
            .as_mut()
            .expect("opened above")
            .write_all(b"go\n")
            .unwrap_or_else(|e| panic!("the agent is gone from {}: {e}", self.path.display()));
    }
}

/// The local test image `scripts/docker-setup.sh` builds.
pub const TEST_IMAGE: &str = "slipway-test:latest";

/// Fails (never skips) when the Docker engine or the test image is missing,
/// saying how to get them.
pub fn require_docker_image() {
    let ok = Command::new("docker")
        .args(["image", "inspect", TEST_IMAGE])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "the Docker engine or the image {TEST_IMAGE} is missing: run `bash scripts/docker-setup.sh` (as root)"
    );
}

/// Fails (never skips) when the engine at `docker_host` does not answer or
/// lacks the test image, naming the engine (`what`) and the set-up (`how`).
pub fn require_image_at(docker_host: &str, what: &str, how: &str) {
    let ok = Command::new("docker")
        .env("DOCKER_HOST", docker_host)
        .args(["image", "inspect", TEST_IMAGE])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(ok, "no {what} with {TEST_IMAGE} at {docker_host}: {how}");
}

/// The `error` object of the last `{"error": …}` line `slipway --json` wrote
/// on stderr.
pub fn json_error(stderr: &[u8]) -> Option<Value> {
    let stderr = String::from_utf8_lossy(stderr);
    let line = stderr.lines().rev().find(|l| l.starts_with("{\"error\""))?;
    let doc: Value = serde_json::from_str(line).ok()?;
    Some(doc["error"].clone())
}

/// Runs the docker CLI against the engine at `host` (the default one when
/// `None`); panics with its output if it fails. Returns trimmed stdout.
pub fn docker(host: Option<&str>, args: &[&str]) -> String {
    let mut cmd = Command::new("docker");
    if let Some(host) = host {
        cmd.env("DOCKER_HOST", host);
    }
    let out = cmd.args(args).output().expect("the docker CLI runs");
    assert!(
        out.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A string field of a JSON value.
pub fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("field {key} missing or not a string in {v}"))
}

/// The commit ids of a run result, oldest first.
pub fn commit_shas(result: &Value) -> Vec<String> {
    result["commits"]
        .as_array()
        .unwrap_or_else(|| panic!("no commits array in {result}"))
        .iter()
        .map(|c| c["sha"].as_str().expect("sha").to_owned())
        .collect()
}

/// A tmpfs mounted at a path for the life of a test.
pub struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts one of `size` at `at`; `None` when mounting is not allowed (not root).
    pub fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(at).expect("mount point");
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Tmpfs(at.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let unmounted = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
        if !unmounted.is_ok_and(|s| s.success()) {
            eprintln!("could not unmount {}", self.0.display());
        }
    }
}

/// Where a test's run happens: a host process, or a container of the test image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sandbox {
    Host,
    Docker,
}

impl Sandbox {
    /// The `slipway run` flags for it (offline, for containers).
    pub fn args(self) -> Vec<&'static str> {
        match self {
            Sandbox::Host => vec!["--sandbox", "none"],
            Sandbox::Docker => vec![
                "--sandbox",
                "docker",
                "--image",
                TEST_IMAGE,
                "--network",
                "none",
            ],
        }
    }
}
