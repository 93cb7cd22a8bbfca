//! The user's Docker engines (issue 23, item 4): runs and attempts spread
//! over the engines of `config.toml` by their limits, slots shared between
//! processes, an engine that goes away mid-run, the load `slipway engines`
//! shows, and the config's rules. The engines are the two the test set-up
//! starts (the local socket and loopback TCP) and, for the one that dies, a
//! dockerd of the test's own.
//!
//! Agents wait at a fifo in their worktree (the container sees the worktree
//! at its host path), so the test decides when each goes on.

use crate::common;

use std::io::Write;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use common::*;
use serde_json::Value;

const LOCAL: &str = "unix:///var/run/docker.sock";

/// Writes the user's engine list and gives the test its own slot folder.
fn engines_config(env: &TestEnv, engines: &[(&str, &str, u32)]) {
    let mut text = String::new();
    for (name, url, limit) in engines {
        text.push_str(&format!(
            "[[engines]]\nname = \"{name}\"\nurl = \"{url}\"\nlimit = {limit}\n\n"
        ));
    }
    write_config(env, &text);
}

fn write_config(env: &TestEnv, text: &str) {
    let dir = env.home().join(".config/slipway");
    std::fs::create_dir_all(&dir).expect("config dir");
    std::fs::write(dir.join("config.toml"), text).expect("config.toml");
    env.set_env("XDG_STATE_HOME", env.path().join("state"));
}

/// An agent that waits at `$SLIPWAY_WORKTREE/.gate` until the test opens
/// it, then commits a file naming its run.
const GATED_AGENT: &str = "set -e\n\
    g=\"$SLIPWAY_WORKTREE/.gate\"\n\
    mkfifo \"$g\"\n\
    read -r _ < \"$g\"\n\
    rm -f \"$g\"\n\
    printf '%s\\n' \"$SLIPWAY_RUN_ID\" > attempt.txt\n\
    git add attempt.txt\n\
    git commit -qm \"attempt $SLIPWAY_RUN_ID\"\n";

fn docker_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["--json", "run"];
    args.extend(Sandbox::Docker.args());
    args.extend_from_slice(&["--prompt", "work"]);
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "sh", "-c", GATED_AGENT]);
    args
}

fn spawn(env: &TestEnv, repo: &Path, args: &[&str]) -> Child {
    env.slipway_cmd(repo)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("slipway starts")
}

fn finish(child: Child) -> Value {
    let out = child.wait_with_output().expect("slipway ends");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON result ({e}):\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Every run of the repository, as `slipway runs --json` lists them.
fn runs(env: &TestEnv, repo: &Path) -> Vec<Value> {
    env.slipway_json(repo, &["runs"])["runs"]
        .as_array()
        .expect("runs")
        .clone()
}

fn run_entry(env: &TestEnv, repo: &Path, run_id: &str) -> Value {
    runs(env, repo)
        .into_iter()
        .find(|r| r["runId"] == run_id)
        .unwrap_or_else(|| panic!("no run {run_id}"))
}

/// The gate of a run's agent, once the run has a worktree.
fn gate_of(env: &TestEnv, repo: &Path, run_id: &str) -> Option<PathBuf> {
    let entry = runs(env, repo).into_iter().find(|r| r["runId"] == run_id)?;
    Some(Path::new(entry["worktreePath"].as_str()?).join(".gate"))
}

fn gate_is_waiting(gate: &Path) -> bool {
    std::fs::symlink_metadata(gate).is_ok_and(|m| m.file_type().is_fifo())
}

/// Waits until the run's agent waits at its gate: its container is running.
fn wait_at_gate(env: &TestEnv, repo: &Path, run_id: &str) -> PathBuf {
    let mut gate = None;
    let waiting = lsp::wait_until(EVENT_DEADLINE, || {
        gate = gate_of(env, repo, run_id).filter(|g| gate_is_waiting(g));
        gate.is_some()
    });
    assert!(waiting, "run {run_id}'s agent never reached its gate");
    gate.expect("found above")
}

/// Lets the agent at `gate` go on.
fn open_gate(gate: &Path) {
    // Opening a fifo to write waits for its reader, which is there already.
    let mut fifo = std::fs::OpenOptions::new()
        .write(true)
        .open(gate)
        .unwrap_or_else(|e| panic!("{}: {e}", gate.display()));
    fifo.write_all(b"go\n").expect("the agent reads its gate");
}

/// The containers of a run on the engine at `host`.
fn containers(host: &str, run_id: &str) -> Vec<String> {
    docker(
        Some(host),
        &[
            "ps",
            "-q",
            "--no-trunc",
            "--filter",
            &format!("label=slipway.run={run_id}"),
        ],
    )
    .split_whitespace()
    .map(str::to_owned)
    .collect()
}

fn remote() -> String {
    crate::docker_isolated::remote()
}

/// The test image on both engines the set-up starts, and a repository:
/// the world of a test (and the loopback engine's url).
fn docker_world() -> (TestEnv, PathBuf, String) {
    require_docker_image();
    let far = remote();
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    (env, repo, far)
}

fn attempt_ids(outcome: &Value) -> Vec<String> {
    outcome["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| s(a, "runId").to_owned())
        .collect()
}

fn engines_json(env: &TestEnv, repo: &Path) -> Vec<Value> {
    env.slipway_json(repo, &["engines"])["engines"]
        .as_array()
        .expect("engines")
        .clone()
}

/// The group a `run --attempts` process wrote, once it is there.
fn group_ids(env: &TestEnv, repo: &Path, count: usize) -> Vec<String> {
    let mut ids = Vec::new();
    let written = lsp::wait_until(EVENT_DEADLINE, || {
        let listed: Vec<String> = runs(env, repo)
            .iter()
            .map(|r| s(r, "runId").to_owned())
            .collect();
        ids = listed;
        ids.len() == count
    });
    assert!(
        written,
        "the {count} attempts never all had a record: {ids:?}"
    );
    ids
}

#[test]
fn four_attempts_spread_over_the_local_socket_and_loopback_tcp_two_on_each() {
    let (env, repo, far) = docker_world();
    engines_config(&env, &[("local", LOCAL, 2), ("far", &far, 2)]);
    let child = spawn(
        &env,
        &repo,
        &docker_args(&["--attempts", "4", "--branch", "spread"]),
    );
    let ids = group_ids(&env, &repo, 4);
    // All four agents wait at once: each holds a slot, so the limits decide.
    let gates: Vec<PathBuf> = ids.iter().map(|id| wait_at_gate(&env, &repo, id)).collect();
    let mut on = std::collections::BTreeMap::<String, usize>::new();
    for id in &ids {
        let engine = s(&run_entry(&env, &repo, id), "engine").to_owned();
        // The record names the engine the container really is on.
        let host = if engine == "local" {
            LOCAL
        } else {
            far.as_str()
        };
        assert_eq!(containers(host, id).len(), 1, "{id} on {engine}");
        *on.entry(engine).or_default() += 1;
    }
    assert_eq!(
        on,
        [("far".to_owned(), 2), ("local".to_owned(), 2)].into(),
        "two attempts on each engine"
    );
    let load: Vec<(String, u64)> = engines_json(&env, &repo)
        .iter()
        .map(|e| (s(e, "name").to_owned(), e["load"].as_u64().expect("load")))
        .collect();
    assert_eq!(load, vec![("local".into(), 2), ("far".into(), 2)]);
    for gate in &gates {
        open_gate(gate);
    }
    let outcome = finish(child);
    for result in outcome["results"].as_array().expect("results") {
        assert_eq!(s(result, "status"), "completed", "{result:#}");
        assert_eq!(commit_shas(result).len(), 1, "{result:#}");
    }
    assert_eq!(attempt_ids(&outcome), ids_in_group_order(&outcome, &ids));
}

/// The group's run ids, checked to be the ones the records listed.
fn ids_in_group_order(outcome: &Value, listed: &[String]) -> Vec<String> {
    let ids = attempt_ids(outcome);
    let mut sorted = ids.clone();
    sorted.sort();
    let mut want = listed.to_vec();
    want.sort();
    assert_eq!(sorted, want);
    ids
}

/// The Podman socket `scripts/podman-setup.sh` serves, checked to answer
/// and hold the test image.
fn podman() -> String {
    let socket = std::env::var("SLIPWAY_PODMAN_SOCKET")
        .unwrap_or_else(|_| "/run/slipway-podman.sock".into());
    let url = format!("unix://{socket}");
    require_image_at(
        &url,
        "Podman API",
        "run `bash scripts/podman-setup.sh` (as root)",
    );
    url
}

#[test]
fn podman_is_a_third_engine_beside_the_two_docker_ones() {
    require_docker_image();
    let far = remote();
    let pod = podman();
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    engines_config(
        &env,
        &[("local", LOCAL, 1), ("far", &far, 1), ("podman", &pod, 1)],
    );
    let child = spawn(
        &env,
        &repo,
        &docker_args(&["--attempts", "3", "--branch", "three"]),
    );
    let ids = group_ids(&env, &repo, 3);
    let gates: Vec<PathBuf> = ids.iter().map(|id| wait_at_gate(&env, &repo, id)).collect();
    let mut engines: Vec<String> = Vec::new();
    for id in &ids {
        let engine = s(&run_entry(&env, &repo, id), "engine").to_owned();
        let host = match engine.as_str() {
            "local" => LOCAL,
            "far" => far.as_str(),
            _ => pod.as_str(),
        };
        if containers(host, id).len() != 1 {
            // What each engine holds of the run, and its record, to tell
            // which went wrong.
            let held: Vec<String> = [LOCAL, far.as_str(), pod.as_str()]
                .iter()
                .map(|h| {
                    let filter = format!("label=slipway.run={id}");
                    let format = "{{.Names}} {{.Status}}";
                    let listed = docker(
                        Some(h),
                        &["ps", "-a", "--filter", &filter, "--format", format],
                    );
                    format!("{h}: [{listed}]")
                })
                .collect();
            panic!(
                "{id} on {engine} has no running container there; engines hold {held:?}; its entry {:#}",
                run_entry(&env, &repo, id)
            );
        }
        engines.push(engine);
    }
    engines.sort();
    assert_eq!(engines, vec!["far", "local", "podman"]);
    for gate in &gates {
        open_gate(gate);
    }
    let outcome = finish(child);
    for result in outcome["results"].as_array().expect("results") {
        assert_eq!(s(result, "status"), "completed", "{result:#}");
        assert_eq!(commit_shas(result).len(), 1, "{result:#}");
    }
}

#[test]
fn with_a_limit_of_one_a_second_run_process_waits_for_the_slot_and_the_two_never_overlap() {
    require_docker_image();
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    engines_config(&env, &[("local", LOCAL, 1)]);
    let since = docker(None, &["info", "--format", "{{json .SystemTime}}"]);
    let since = since.trim_matches('"').to_owned();
    let (a, b) = ("run-1767225600-a1a1a1", "run-1767225600-b2b2b2");
    let first = spawn(
        &env,
        &repo,
        &docker_args(&["--branch", "one", "--run-id", a]),
    );
    let gate_a = wait_at_gate(&env, &repo, a);
    let second = spawn(
        &env,
        &repo,
        &docker_args(&["--branch", "two", "--run-id", b]),
    );
    // The second says it waits, and has no container while the first runs.
    let events = repo.join(format!(".slipway/runs/{b}.events"));
    let told = lsp::wait_until(EVENT_DEADLINE, || {
        std::fs::read_to_string(&events).is_ok_and(|t| t.contains("waiting for a free slot"))
    });
    assert!(told, "the second run never said it waits for a slot");
    assert!(containers(LOCAL, b).is_empty());
    assert!(run_entry(&env, &repo, b).get("engine").is_none());
    open_gate(&gate_a);
    let gate_b = wait_at_gate(&env, &repo, b);
    open_gate(&gate_b);
    for child in [first, second] {
        let result = finish(child);
        assert_eq!(s(&result, "status"), "completed", "{result:#}");
    }
    assert_eq!(s(&run_entry(&env, &repo, b), "engine"), "local");

    // The engine's own record: every start of one run's container came after
    // the other's died, never two at once.
    let until = docker(None, &["info", "--format", "{{json .SystemTime}}"]);
    let lines = docker(
        None,
        &[
            "events",
            "--since",
            &since,
            "--until",
            until.trim_matches('"'),
            "--filter",
            "type=container",
            "--filter",
            "event=start",
            "--filter",
            "event=die",
            "--format",
            "{{json .}}",
        ],
    );
    let mut running = 0i32;
    let mut order = Vec::new();
    for line in lines.lines() {
        let event: Value = serde_json::from_str(line).expect("event json");
        let run = event["Actor"]["Attributes"]["slipway.run"]
            .as_str()
            .unwrap_or_default();
        if run != a && run != b {
            continue;
        }
        running += if event["Action"] == "start" { 1 } else { -1 };
        assert!(
            running <= 1,
            "two containers at once on the engine: {lines}"
        );
        order.push(format!("{} {run}", event["Action"].as_str().unwrap_or("?")));
    }
    assert_eq!(
        order,
        vec![
            format!("start {a}"),
            format!("die {a}"),
            format!("start {b}"),
            format!("die {b}")
        ]
    );
}

#[test]
fn slipway_engines_json_shows_the_load_while_a_run_is_in_progress() {
    let (env, repo, far) = docker_world();
    engines_config(&env, &[("local", LOCAL, 1), ("far", &far, 3)]);
    let id = "run-1767225600-c3c3c3";
    let child = spawn(
        &env,
        &repo,
        &docker_args(&["--branch", "busy", "--run-id", id]),
    );
    let gate = wait_at_gate(&env, &repo, id);
    let engines = engines_json(&env, &repo);
    assert_eq!(engines.len(), 2);
    let (local, far_one) = (&engines[0], &engines[1]);
    assert_eq!(
        (s(local, "name"), s(local, "url"), &local["limit"]),
        ("local", LOCAL, &Value::from(1))
    );
    assert_eq!(local["load"], 1, "{local:#}");
    assert_eq!(local["runs"], serde_json::json!([id]));
    assert_eq!(local["reachable"], true);
    assert_eq!(
        (&far_one["load"], &far_one["reachable"]),
        (&0.into(), &true.into())
    );
    // The sidecar answers the same.
    let mut lsp = lsp::Lsp::start(&env, Some(&repo), true);
    let answered = lsp.ok("slipway.engines", serde_json::json!({}));
    assert_eq!(answered["engines"][0]["runs"], serde_json::json!([id]));
    let text = env.slipway(&repo, &["engines"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("local  unix:///var/run/docker.sock  1/1 runs"),
        "{text}"
    );
    open_gate(&gate);
    let result = finish(child);
    assert_eq!(s(&result, "status"), "completed", "{result:#}");
    assert_eq!(engines_json(&env, &repo)[0]["load"], 0);
}

#[test]
fn a_docker_run_on_an_isolated_engine_goes_in_as_a_bundle_and_its_commit_comes_back() {
    let (env, repo, far) = docker_world();
    write_config(
        &env,
        &format!("[[engines]]\nname = \"far\"\nurl = \"{far}\"\nlimit = 1\nisolated = true\n"),
    );
    let script = format!(
        "set -e\n\
         if grep -q '{repo}' /proc/self/mountinfo; then echo 'HOST PATH MOUNTED'; fi\n\
         echo far > far.txt; git add far.txt; git commit -qm 'agent: far'\n",
        repo = repo.display()
    );
    let out = env.slipway(
        &repo,
        &[
            &["--json", "run", "--branch", "iso"][..],
            &Sandbox::Docker.args(),
            &["--", "sh", "-c", &script],
        ]
        .concat(),
    );
    let result: Value = serde_json::from_slice(&out.stdout).expect("result json");
    assert_eq!(s(&result, "status"), "completed", "{result:#}");
    assert_eq!(commit_shas(&result).len(), 1);
    assert_eq!(
        env.git(&repo, &["log", "-1", "--format=%s", "iso"]),
        "agent: far"
    );
    let log = std::fs::read_to_string(s(&result, "logFile")).expect("log");
    assert!(!log.contains("HOST PATH MOUNTED"), "{log}");
    assert!(log.contains("on engine far"), "{log}");
    let entry = run_entry(&env, &repo, s(&result, "runId"));
    assert_eq!(
        (s(&entry, "engine"), s(&entry, "sandbox")),
        ("far", "docker-isolated")
    );
}

#[test]
fn engine_config_errors_are_typed_and_say_how_to_fix_them() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let cases = [
        (
            "[[engines]]\nname = \"a\"\nurl = \"tcp://127.0.0.1:1\"\nlimit = 1\n\
             [[engines]]\nname = \"a\"\nurl = \"tcp://127.0.0.1:2\"\nlimit = 1\n",
            "give each engine its own name",
        ),
        (
            "[[engines]]\nname = \"a\"\nurl = \"tcp://127.0.0.1:1\"\nlimit = 0\n",
            "write limit = 1 or higher",
        ),
        (
            "[[engines]]\nname = \"a\"\nurl = \"ftp://box\"\nlimit = 1\n",
            "use unix://, tcp:// or ssh://",
        ),
        (
            // A host ssh would read as an option.
            "[[engines]]\nname = \"a\"\nurl = \"ssh://me@-oProxyCommand=x\"\nlimit = 1\n",
            "is not a host name or address",
        ),
    ];
    for (config, fix) in cases {
        write_config(&env, config);
        let (_, error) = env.slipway_fail(&repo, &["engines"]);
        assert_eq!(s(&error, "kind"), "engineConfig", "{error:#}");
        assert!(s(&error, "message").contains(fix), "{error:#}");
        assert!(s(&error, "message").contains("config.toml"), "{error:#}");
        // A run meets the same error before it makes anything.
        let (_, error) = env.slipway_fail(&repo, &docker_args(&["--branch", "never"])[1..]);
        assert_eq!(s(&error, "kind"), "engineConfig", "{error:#}");
        assert!(env.local_branches(&repo) == vec!["main".to_owned()]);
    }
    engines_config(&env, &[("local", LOCAL, 1)]);
    let (_, error) = env.slipway_fail(
        &repo,
        &docker_args(&["--branch", "never", "--engine", "nope"])[1..],
    );
    assert_eq!(s(&error, "kind"), "unknownEngine", "{error:#}");
    assert_eq!(error["data"]["choices"], serde_json::json!(["local"]));
}

/// A dockerd of the test's own on a loopback port, with the test image; its
/// processes are ended by id when it is dropped.
struct OwnEngine {
    url: String,
    root: PathBuf,
    exec_root: PathBuf,
    dockerd: Child,
}

impl OwnEngine {
    fn start() -> OwnEngine {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let url = format!("tcp://127.0.0.1:{port}");
        let root = PathBuf::from(format!("/var/lib/slipway-engines-test-{port}"));
        // Unix sockets live under the exec root: its path must stay short.
        let exec_root = PathBuf::from(format!("/run/slipway-et-{port}"));
        std::fs::create_dir_all(&root).expect("data root");
        let log = std::fs::File::create(root.with_extension("log")).expect("log");
        let dockerd = Command::new("dockerd")
            .args(["-H", &url, "--data-root"])
            .arg(root.join("data"))
            .arg("--exec-root")
            .arg(&exec_root)
            .arg("--pidfile")
            .arg(root.join("dockerd.pid"))
            .args([
                "--storage-driver=vfs",
                "--bridge=none",
                "--iptables=false",
                "--ip6tables=false",
            ])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("dockerd starts: install docker.io (scripts/docker-setup.sh), and run as root");
        let engine = OwnEngine {
            url,
            root,
            exec_root,
            dockerd,
        };
        let up = lsp::wait_until(EVENT_DEADLINE, || {
            Command::new("docker")
                .env("DOCKER_HOST", &engine.url)
                .args(["info", "--format", "{{.ID}}"])
                .output()
                .is_ok_and(|o| o.status.success())
        });
        assert!(
            up,
            "our own dockerd never answered; see {}",
            engine.root.with_extension("log").display()
        );
        let mut save = Command::new("docker")
            .args(["save", TEST_IMAGE])
            .stdout(Stdio::piped())
            .spawn()
            .expect("docker save");
        let loaded = Command::new("docker")
            .env("DOCKER_HOST", &engine.url)
            .arg("load")
            .stdin(save.stdout.take().expect("piped"))
            .output()
            .expect("docker load");
        assert!(save.wait().expect("docker save ends").success());
        assert!(
            loaded.status.success(),
            "{}",
            String::from_utf8_lossy(&loaded.stderr)
        );
        engine
    }

    /// Kills the daemon (SIGKILL: no shutdown, no goodbye to its clients).
    fn kill(&mut self) {
        self.dockerd.kill().expect("dockerd is ours to kill");
        self.dockerd.wait().expect("dockerd reaped");
    }
}

impl Drop for OwnEngine {
    fn drop(&mut self) {
        if self.dockerd.try_wait().ok().flatten().is_none() {
            self.kill();
        }
        // Its containerd, shims and containers outlive it: end each by pid,
        // found by our roots on its command line or by its container's cgroup.
        let roots = [
            self.root.display().to_string(),
            self.exec_root.display().to_string(),
        ];
        for (pid, _) in roots.iter().flat_map(|r| processes_with(r)) {
            // SAFETY: kill has no memory preconditions; the pid is one of ours.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        // dockerd mounts its data root on itself and network namespaces
        // under its exec root; a killed one leaves them mounted.
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
        for point in mounts.lines().rev().filter_map(|l| l.split(' ').nth(1)) {
            if roots.iter().any(|r| point.starts_with(r.as_str())) {
                let c_point = std::ffi::CString::new(point).expect("no NUL in /proc/mounts");
                // SAFETY: a valid NUL-terminated path.
                unsafe { libc::umount2(c_point.as_ptr(), libc::MNT_DETACH) };
            }
        }
        if let Err(e) = std::fs::remove_file(self.root.with_extension("log")) {
            eprintln!("could not remove dockerd's log: {e}");
        }
        if let Err(e) = std::fs::remove_dir_all(&self.exec_root) {
            eprintln!("could not remove {}: {e}", self.exec_root.display());
        }
        if let Err(e) = std::fs::remove_dir_all(&self.root) {
            eprintln!("could not remove {}: {e}", self.root.display());
        }
    }
}

/// Ends the processes of a container whose engine is gone, by pid (their
/// cgroup names the container).
fn end_container_processes(container: &str) {
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cgroup = std::fs::read_to_string(entry.path().join("cgroup")).unwrap_or_default();
        if cgroup.contains(container) {
            // SAFETY: kill has no memory preconditions; the pid is the container's.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

#[test]
fn an_engine_that_goes_away_mid_run_fails_its_attempt_naming_the_engine_and_the_others_finish() {
    require_docker_image();
    let mut doomed = OwnEngine::start();
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    engines_config(&env, &[("doomed", &doomed.url, 1), ("local", LOCAL, 2)]);
    let child = spawn(
        &env,
        &repo,
        &docker_args(&["--attempts", "3", "--branch", "gone"]),
    );
    let ids = group_ids(&env, &repo, 3);
    let gates: Vec<PathBuf> = ids.iter().map(|id| wait_at_gate(&env, &repo, id)).collect();
    let engine_of = |id: &String| s(&run_entry(&env, &repo, id), "engine").to_owned();
    let lost = ids
        .iter()
        .position(|id| engine_of(id) == "doomed")
        .expect("one attempt is on the doomed engine");
    // Its agent is running in a container there, waiting at its gate.
    let container = containers(&doomed.url, &ids[lost]);
    assert_eq!(container.len(), 1);
    doomed.kill();
    for (n, gate) in gates.iter().enumerate() {
        if n != lost {
            open_gate(gate);
        }
    }
    let outcome = finish(child);
    end_container_processes(&container[0]);
    let results = outcome["results"].as_array().expect("results");
    for (n, result) in results.iter().enumerate() {
        let id = &attempt_ids(&outcome)[n];
        if *id == ids[lost] {
            assert_eq!(s(result, "status"), "failed", "{result:#}");
            assert_eq!(result["error"]["kind"], "engineLost", "{result:#}");
            let message = s(&result["error"], "message");
            assert!(
                message.contains("'doomed'") && message.contains(&doomed.url),
                "{message}"
            );
        } else {
            assert_eq!(s(result, "status"), "completed", "{result:#}");
            let commits = commit_shas(result);
            assert_eq!(commits.len(), 1, "{result:#}");
            let branch = s(result, "branch");
            assert_eq!(env.rev(&repo, branch), commits[0], "imported onto {branch}");
        }
    }
}

/// The test sshd of `scripts/ssh-engine-setup.sh` (a stand-in for another
/// machine whose engine is the local one): its url, after pointing slipway's
/// `ssh` at the wrapper that uses the set-up's own keys and known hosts.
fn ssh_engine(env: &TestEnv) -> String {
    let base = Path::new("/var/lib/slipway-ssh");
    let url = std::fs::read_to_string(base.join("url")).ok();
    let wrapper = base.join("ssh");
    let (Some(url), true) = (url, wrapper.exists()) else {
        panic!("no test sshd: run `bash scripts/ssh-engine-setup.sh` (as root)");
    };
    env.set_env("SLIPWAY_SSH", &wrapper);
    url.trim().to_owned()
}

/// A repository whose only engine, `box`, is the test sshd's; the forwards'
/// folders go under the returned TMPDIR, so the test sees every one.
fn ssh_world() -> (TestEnv, PathBuf, String, PathBuf) {
    require_docker_image();
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let url = ssh_engine(&env);
    let tmp = env.path().join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    env.set_env("TMPDIR", &tmp);
    engines_config(&env, &[("box", &url, 1)]);
    (env, repo, url, tmp)
}

/// Processes whose command line holds `needle` (the forwards of this test's slipway).
fn processes_with(needle: &str) -> Vec<(i32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let line = String::from_utf8_lossy(&raw).replace('\0', " ");
        if line.contains(needle) {
            found.push((pid, line));
        }
    }
    found
}

/// An `ssh://` engine: `slipway engines` reaches it through a forward of its
/// socket made with the user's own `ssh`, a docker run there completes and its
/// record names the engine, and once slipway is done no forward is left.
#[test]
fn an_ssh_engine_is_reached_through_a_forward_and_its_run_completes() {
    let (env, repo, url, tmp) = ssh_world();

    let listed = engines_json(&env, &repo);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["url"], url.as_str(), "{listed:?}");
    assert_eq!(listed[0]["reachable"], true, "{listed:?}");
    assert!(!s(&listed[0], "version").is_empty(), "{listed:?}");

    let script = "echo over > ssh.txt && git add ssh.txt && git commit -qm 'agent: over ssh'";
    let out = env.slipway(
        &repo,
        &[
            &["--json", "run", "--branch", "over-ssh"][..],
            &Sandbox::Docker.args(),
            &["--", "sh", "-c", script],
        ]
        .concat(),
    );
    let result: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no result ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(s(&result, "status"), "completed", "{result:#}");
    assert_eq!(
        env.git(&repo, &["log", "-1", "--format=%s", "over-ssh"]),
        "agent: over ssh"
    );
    let log = std::fs::read_to_string(s(&result, "logFile")).expect("log");
    assert!(log.contains("on engine box (ssh://"), "{log}");
    assert_eq!(
        s(&run_entry(&env, &repo, s(&result, "runId")), "engine"),
        "box"
    );

    let needle = tmp.join("slipway-ssh-").display().to_string();
    assert_eq!(
        processes_with(&needle),
        Vec::new(),
        "a forward outlived slipway"
    );
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .expect("tmp")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(left, Vec::<PathBuf>::new(), "a forward's folder was left");
}

/// A host whose key the user never accepted is not trusted on the quiet
/// (`ssh` runs with BatchMode): the engine does not answer, and the error says
/// to connect once by hand.
#[test]
fn an_ssh_engine_with_an_unknown_host_key_is_unreachable_and_says_why() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let url = ssh_engine(&env);
    let config = env.path().join("ssh_config");
    let known = env.path().join("known_hosts");
    std::fs::write(&known, "").expect("known_hosts");
    std::fs::write(
        &config,
        format!(
            "Host *\n  IdentityFile /var/lib/slipway-ssh/id\n  IdentitiesOnly yes\n  UserKnownHostsFile {}\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n",
            known.display()
        ),
    )
    .expect("ssh_config");
    let wrapper = env.script(
        "ssh",
        &format!("exec ssh -F '{}' \"$@\"\n", config.display()),
    );
    env.set_env("SLIPWAY_SSH", &wrapper);
    engines_config(&env, &[("box", &url, 1)]);
    let listed = engines_json(&env, &repo);
    assert_eq!(listed[0]["reachable"], false, "{listed:?}");
    let error = s(&listed[0], "error");
    assert!(
        error.contains("Host key verification failed") && error.contains("connect once"),
        "{error}"
    );
    assert_eq!(
        std::fs::read_to_string(&known).expect("known_hosts"),
        "",
        "a host key was written"
    );
}

/// A slipway killed with -9 while its run uses an `ssh://` engine leaves no
/// forward behind: the `ssh` it started goes with it, and the next slipway
/// removes the folder it left.
#[test]
fn a_killed_slipway_takes_its_ssh_forward_with_it() {
    let (env, repo, _, tmp) = ssh_world();
    let mut child = spawn(&env, &repo, &docker_args(&["--branch", "killed"]));
    let ids = group_ids(&env, &repo, 1);
    // At its gate the agent's container runs: the forward is up.
    wait_at_gate(&env, &repo, &ids[0]);
    let needle = tmp.join("slipway-ssh-").display().to_string();
    assert!(
        !processes_with(&needle).is_empty(),
        "no forward while the run goes"
    );
    child.kill().expect("SIGKILL slipway");
    child.wait().expect("reaped");
    let gone = lsp::wait_until(EVENT_DEADLINE, || processes_with(&needle).is_empty());
    for container in containers(LOCAL, &ids[0]) {
        docker(None, &["rm", "-f", &container]);
    }
    assert!(gone, "forwards left: {:?}", processes_with(&needle));
    // Its folder stayed; the next slipway to use an ssh engine removes it.
    let folders = || std::fs::read_dir(&tmp).expect("tmp").flatten().count();
    assert_eq!(folders(), 1, "the killed slipway's folder");
    assert_eq!(engines_json(&env, &repo)[0]["reachable"], true);
    assert_eq!(folders(), 0, "a dead slipway's folder was left");
}
