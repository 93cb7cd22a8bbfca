//! The `docker` sandbox against the real engine and the local test image
//! (`bash scripts/docker-setup.sh` makes both). Nothing here is skipped: an
//! engine that does not answer is a failure that says how to start one.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::EVENT_DEADLINE;
use crate::common::lsp::wait_until;
use bollard::Docker;
use slipway_core::sandbox::docker::{DockerConfig, DockerSandbox, Mount, host_user, reap_orphans};
use slipway_core::sandbox::{ExecSpec, Execution, OutputEvent, Sandbox};

const IMAGE: &str = "slipway-test:latest";
/// Every container of this file carries this scope, so a reap here never
/// touches a real run's containers.
const SCOPE: &str = "slipway-tests";

/// The engine, or a failure that says how to get one.
async fn engine() -> Docker {
    let docker = match slipway_core::sandbox::docker::connect().await {
        Ok(d) => d,
        Err(e) => panic!(
            "the Docker engine is not reachable: {e}\nrun `bash scripts/docker-setup.sh` (as root) to install and start it"
        ),
    };
    if let Err(e) = docker.inspect_image(IMAGE).await {
        panic!(
            "the test image {IMAGE} is missing ({e})\nrun `bash scripts/docker-setup.sh` to build it"
        );
    }
    docker
}

fn config(run_id: &str, mounts: Vec<Mount>) -> DockerConfig {
    let mut config = DockerConfig::new(IMAGE, run_id);
    config.mounts = mounts;
    config.network = Some("none".into());
    config.scope = Some(SCOPE.into());
    config
}

fn run_id(name: &str) -> String {
    format!("test-{name}-{}", std::process::id())
}

async fn start(docker: &Docker, name: &str, mounts: Vec<Mount>) -> DockerSandbox {
    let begun = Instant::now();
    let sandbox = DockerSandbox::start_with(docker.clone(), config(&run_id(name), mounts))
        .await
        .expect("the sandbox starts");
    eprintln!("[{name}] container started in {:?}", begun.elapsed());
    sandbox
}

fn spec(argv: &[&str], cwd: &Path) -> ExecSpec {
    ExecSpec {
        argv: argv.iter().map(|a| (*a).to_owned()).collect(),
        cwd: cwd.to_path_buf(),
        env: Vec::new(),
        stdin: None,
        hold: None,
    }
}

fn sh(script: &str, cwd: &Path) -> ExecSpec {
    spec(&["sh", "-c", script], cwd)
}

/// What one exec produced.
#[derive(Debug)]
struct Done {
    code: i32,
    lines: Vec<String>,
    activity: usize,
}

impl Done {
    fn text(&self) -> String {
        self.lines.join("\n")
    }
}

/// Drains an execution to its end (exit and closed output), like the run loop does.
async fn finish(mut exec: Execution) -> Done {
    tokio::time::timeout(EVENT_DEADLINE, async move {
        let mut lines = Vec::new();
        let mut activity = 0;
        while let Some(ev) = exec.output.recv().await {
            match ev {
                OutputEvent::Line(l) => lines.push(l),
                OutputEvent::Activity => activity += 1,
            }
        }
        let code = exec
            .exit
            .await
            .expect("an exit is reported")
            .expect("the exit code is known");
        exec.killer.kill().await;
        Done {
            code,
            lines,
            activity,
        }
    })
    .await
    .expect("the exec finishes within 60 s")
}

async fn run(sandbox: &DockerSandbox, spec: ExecSpec) -> Done {
    let exec = sandbox.exec(spec).await.expect("the exec starts");
    finish(exec).await
}

/// Runs a script that must succeed and returns its output lines.
async fn ok(sandbox: &DockerSandbox, script: &str, cwd: &Path) -> Vec<String> {
    let done = run(sandbox, sh(script, cwd)).await;
    assert_eq!(done.code, 0, "`{script}` failed:\n{}", done.text());
    done.lines
}

fn root() -> PathBuf {
    PathBuf::from("/")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_streams_lines_and_returns_exit_codes() {
    let docker = engine().await;
    let sandbox = start(&docker, "lines", Vec::new()).await;
    assert_eq!(sandbox.name(), "docker");

    let done = run(
        &sandbox,
        sh(
            "echo one; echo two >&2; printf 'three\\r\\n'; printf 'par'; sleep 0.2; printf 'tial'", // allow-sleep: two writes of one line, so the halves arrive apart
            &root(),
        ),
    )
    .await;
    assert_eq!(done.code, 0);
    let mut lines = done.lines.clone();
    lines.sort();
    assert_eq!(lines, ["one", "partial", "three", "two"], "{done:?}");
    // Bytes without a newline yet count as activity, as on the host.
    assert!(done.activity >= 1, "{done:?}");

    let done = run(&sandbox, sh("echo failing; exit 3", &root())).await;
    assert_eq!(
        (done.code, done.lines.as_slice()),
        (3, &["failing".to_owned()][..])
    );

    // cwd is honoured (the same absolute path as given).
    let done = run(&sandbox, spec(&["sh", "-c", "pwd"], Path::new("/tmp"))).await;
    assert_eq!(done.lines, ["/tmp"]);

    // A program the image lacks is an exit code with a message, not a hang.
    let done = run(&sandbox, spec(&["no-such-program"], &root())).await;
    assert_eq!(done.code, 127, "{done:?}");

    // A cwd the container lacks fails (an error or a code), it does not hang.
    match sandbox
        .exec(spec(&["pwd"], Path::new("/no/such/dir")))
        .await
    {
        Ok(exec) => {
            let done = finish(exec).await;
            eprintln!("[lines] missing cwd -> {}: {}", done.code, done.text());
            assert_ne!(done.code, 0, "{done:?}");
        }
        Err(e) => eprintln!("[lines] missing cwd -> error: {e}"),
    }

    // An empty command is refused before anything runs.
    assert!(sandbox.exec(spec(&[], &root())).await.is_err());

    sandbox.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdin_reaches_the_process_and_is_closed() {
    let docker = engine().await;
    let sandbox = start(&docker, "stdin", Vec::new()).await;

    let mut with_input = spec(&["cat"], &root());
    with_input.stdin = Some(b"hello\nworld\n".to_vec());
    let done = run(&sandbox, with_input).await;
    assert_eq!(
        (done.code, done.lines.clone()),
        (0, vec!["hello".to_owned(), "world".to_owned()])
    );

    // A large input arrives whole.
    let big: Vec<u8> = (0..20_000)
        .flat_map(|i| format!("{i}\n").into_bytes())
        .collect();
    let mut counted = sh("wc -l", &root());
    counted.stdin = Some(big);
    let done = run(&sandbox, counted).await;
    assert_eq!(done.lines, ["20000"], "{done:?}");

    // No input is an empty, closed stdin: `cat` ends at once.
    let done = run(&sandbox, spec(&["cat"], &root())).await;
    assert_eq!((done.code, done.lines.len()), (0, 0));

    sandbox.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn env_reaches_the_process_but_never_a_command_line() {
    let docker = engine().await;
    let mut cfg = config(&run_id("env"), Vec::new());
    cfg.env = vec![("CONTAINER_SECRET".into(), "c0ntainer-s3cret".into())];
    let sandbox = DockerSandbox::start_with(docker.clone(), cfg)
        .await
        .expect("the sandbox starts");

    // The process prints what it got, then every command line in the container
    // while it is still running (its own included).
    let mut probe = sh(
        "echo \"exec=$EXEC_SECRET container=$CONTAINER_SECRET\"; \
         for p in /proc/[0-9]*; do printf 'cmdline %s: ' \"${p#/proc/}\"; cat \"$p/cmdline\" 2>/dev/null; echo; done",
        &root(),
    );
    probe.env = vec![("EXEC_SECRET".into(), "ex3c-s3cret".into())];
    let done = run(&sandbox, probe).await;
    assert_eq!(done.code, 0, "{}", done.text());
    assert_eq!(done.lines[0], "exec=ex3c-s3cret container=c0ntainer-s3cret");
    let cmdlines: Vec<&String> = done
        .lines
        .iter()
        .filter(|l| l.starts_with("cmdline"))
        .collect();
    assert!(
        cmdlines.len() >= 3,
        "init, keep-alive and the probe: {cmdlines:?}"
    );
    for line in &cmdlines {
        assert!(
            !line.contains("s3cret"),
            "a secret is on a command line: {line}"
        );
    }
    // The container's own command line (init and keep-alive) holds no env either.
    let inspected = docker
        .inspect_container(sandbox.container_id(), None)
        .await
        .expect("inspect");
    let args = format!("{:?} {:?}", inspected.path, inspected.args);
    assert!(!args.contains("s3cret"), "{args}");

    sandbox.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_created_in_a_bind_mount_belong_to_the_host_user() {
    let docker = engine().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).expect("dir");
    let sandbox = start(&docker, "owner", vec![Mount::same_path(&shared, false)]).await;

    let lines = ok(
        &sandbox,
        "id -u; id -g; mkdir sub && echo hi > sub/file",
        &shared,
    )
    .await;
    let host = host_user();
    assert_eq!(format!("{}:{}", lines[0], lines[1]), host);
    let meta = std::fs::metadata(shared.join("sub/file")).expect("the file is on the host");
    assert_eq!(format!("{}:{}", meta.uid(), meta.gid()), host);
    let meta = std::fs::metadata(shared.join("sub")).expect("the folder is on the host");
    assert_eq!(format!("{}:{}", meta.uid(), meta.gid()), host);
    sandbox.close().await;

    // Another uid:gid (here, what a non-root host user looks like) is honoured
    // the same way; the folder is opened up so that user may write into it.
    std::fs::set_permissions(&shared, std::os::unix::fs::PermissionsExt::from_mode(0o777))
        .expect("chmod");
    let mut cfg = config(
        &run_id("owner-4321"),
        vec![Mount::same_path(&shared, false)],
    );
    cfg.user = "4321:4322".into();
    let sandbox = DockerSandbox::start_with(docker.clone(), cfg)
        .await
        .expect("the sandbox starts");
    assert_eq!(
        ok(&sandbox, "id -u; id -g", &shared).await,
        ["4321", "4322"]
    );
    ok(&sandbox, "echo hi > other", &shared).await;
    let meta = std::fs::metadata(shared.join("other")).expect("file");
    assert_eq!((meta.uid(), meta.gid()), (4321, 4322));
    sandbox.close().await;
}

/// Whether a pid recorded in `file` (inside the container) is still alive there.
async fn alive_inside(sandbox: &DockerSandbox, file: &str) -> bool {
    let done = run(
        sandbox,
        sh(&format!("kill -0 \"$(cat {file})\" 2>/dev/null"), &root()),
    )
    .await;
    done.code == 0
}

/// Waits until `line` is printed; returns the execution to keep driving it.
async fn wait_for_line(exec: &mut Execution, line: &str) {
    tokio::time::timeout(EVENT_DEADLINE, async {
        loop {
            match exec.output.recv().await {
                Some(OutputEvent::Line(l)) if l == line => return,
                Some(_) => {}
                None => panic!("output closed before {line:?}"),
            }
        }
    })
    .await
    .expect("the line arrives");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_an_exec_kills_its_whole_tree_only() {
    let docker = engine().await;
    let sandbox = start(&docker, "kill", Vec::new()).await;

    // A bystander exec that must survive the kill of another.
    let mut bystander = sandbox
        .exec(sh(
            "sleep 300 & echo $! > /tmp/bystander; echo up; wait", // allow-sleep: a bystander stalls until the test kills it
            &root(),
        ))
        .await
        .expect("exec");
    wait_for_line(&mut bystander, "up").await;

    let mut victim = sandbox
        .exec(sh(
            "sleep 300 & echo $! > /tmp/child; sh -c 'sleep 300' & echo $! > /tmp/grandparent; echo up; wait", // allow-sleep: the tree stalls until the test kills it
            &root(),
        ))
        .await
        .expect("exec");
    wait_for_line(&mut victim, "up").await;
    let killed_at = Instant::now();
    victim.killer.kill().await;
    let code = tokio::time::timeout(EVENT_DEADLINE, &mut victim.exit)
        .await
        .expect("the exit arrives after a kill")
        .expect("reported")
        .expect("a code");
    assert_eq!(code, 137, "SIGKILL is 128+9");
    tokio::time::timeout(EVENT_DEADLINE, async {
        while victim.output.recv().await.is_some() {}
    })
    .await
    .expect("the output closes after a kill");
    eprintln!("[kill] exec and its tree gone in {:?}", killed_at.elapsed());

    assert!(
        !alive_inside(&sandbox, "/tmp/child").await,
        "the background child survived"
    );
    assert!(
        !alive_inside(&sandbox, "/tmp/grandparent").await,
        "the grandchild survived"
    );
    assert!(
        alive_inside(&sandbox, "/tmp/bystander").await,
        "another exec's tree was killed"
    );

    // The container is still usable.
    assert_eq!(
        ok(&sandbox, "echo still-here", &root()).await,
        ["still-here"]
    );

    // The run loop's pattern: a process exits leaving a stray that holds its
    // output open; the exit is reported anyway, and the kill after it reaps the
    // stray, which closes the output.
    let mut exec = sandbox
        .exec(sh("sleep 300 & echo $! > /tmp/stray; echo bye", &root())) // allow-sleep: a stray stalls until the kill
        .await
        .expect("exec");
    wait_for_line(&mut exec, "bye").await;
    let code = tokio::time::timeout(EVENT_DEADLINE, &mut exec.exit)
        .await
        .expect("the exit is reported while a stray holds the output")
        .expect("reported")
        .expect("a code");
    assert_eq!(code, 0);
    exec.killer.kill().await;
    tokio::time::timeout(EVENT_DEADLINE, async {
        while exec.output.recv().await.is_some() {}
    })
    .await
    .expect("the output closes once the stray is killed");
    assert!(
        !alive_inside(&sandbox, "/tmp/stray").await,
        "the stray survived the kill"
    );

    bystander.killer.kill().await;
    sandbox.close().await;
}

/// What the engine reported about container `id` (or the containers labelled
/// `label`) since `since`: `action signal` lines, e.g. `kill 9`, `destroy `.
fn engine_events(filter: &str, since: u64) -> Vec<String> {
    let until = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
        + 1;
    let out = std::process::Command::new("docker")
        .args([
            "events",
            "--since",
            &since.to_string(),
            "--until",
            &until.to_string(),
            "--filter",
            "type=container",
            "--filter",
            filter,
            "--format",
            "{{.Action}} {{index .Actor.Attributes \"signal\"}}",
        ])
        .output()
        .expect("docker events");
    assert!(
        out.status.success(),
        "docker events failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

/// Waits (off the runtime's threads) until the engine reports `action` for
/// containers matching `filter` since `since`; the events seen.
async fn wait_for_event(filter: &str, since: u64, action: &str) -> Vec<String> {
    let (filter, action) = (filter.to_owned(), action.to_owned());
    tokio::task::spawn_blocking(move || {
        let mut events = Vec::new();
        let seen = wait_until(EVENT_DEADLINE, || {
            events = engine_events(&filter, since);
            events
                .iter()
                .any(|e| e.split(' ').next() == Some(action.as_str()))
        });
        assert!(
            seen,
            "the engine never reported {action} for {filter}: {events:?}"
        );
        events
    })
    .await
    .expect("the wait ran")
}

/// Teardown is one forced remove: a process that ignores SIGTERM does not
/// hold it, because no SIGTERM is sent (a graceful stop would send one and
/// wait its full timeout).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_removes_the_container_by_force_without_a_graceful_stop() {
    let docker = engine().await;
    let sandbox = start(&docker, "close", Vec::new()).await;
    // Something still running, that would hold a graceful stop for its full timeout.
    let running = sandbox
        .exec(sh("trap '' TERM; sleep 300", &root())) // allow-sleep: holds a graceful stop, were there one
        .await
        .expect("exec");
    let id = sandbox.container_id().to_owned();

    let since = unix_now();
    sandbox.close().await;
    let events = wait_for_event(&format!("container={id}"), since, "destroy").await;
    assert!(
        events.iter().any(|e| e == "kill 9") && !events.iter().any(|e| e == "kill 15"),
        "a forced remove (SIGKILL only), not a stop: {events:?}"
    );

    let gone = docker.inspect_container(&id, None).await;
    assert!(gone.is_err(), "the container is still there: {gone:?}");
    // The running exec ends (with an error or a kill code), it does not hang.
    let ended = tokio::time::timeout(EVENT_DEADLINE, running.exit).await;
    assert!(ended.is_ok(), "the exec's exit never arrived");
    // A closed sandbox refuses new work, and closing again is harmless.
    assert!(sandbox.exec(sh("true", &root())).await.is_err());
    sandbox.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reap_orphans_removes_dead_runs_and_keeps_live_ones() {
    let docker = engine().await;
    let scope = format!("reap-test-{}", std::process::id());
    let with_scope = |run: &str, scope: &str| {
        let mut cfg = config(run, Vec::new());
        cfg.scope = Some(scope.to_owned());
        cfg
    };
    let dead = DockerSandbox::start_with(docker.clone(), with_scope("dead-run", &scope))
        .await
        .expect("start");
    let live = DockerSandbox::start_with(docker.clone(), with_scope("live-run", &scope))
        .await
        .expect("start");
    let elsewhere = DockerSandbox::start_with(
        docker.clone(),
        with_scope("dead-run", &format!("{scope}-other")),
    )
    .await
    .expect("start");

    let removed = reap_orphans(&docker, Some(&scope), &["live-run".to_owned()])
        .await
        .expect("reap");
    assert_eq!(removed, [dead.container_id().to_owned()]);
    assert!(
        docker
            .inspect_container(dead.container_id(), None)
            .await
            .is_err()
    );
    let state = docker
        .inspect_container(live.container_id(), None)
        .await
        .expect("the live run's container is kept")
        .state
        .and_then(|s| s.running);
    assert_eq!(state, Some(true));
    assert!(
        docker
            .inspect_container(elsewhere.container_id(), None)
            .await
            .is_ok(),
        "another scope's container was reaped"
    );
    assert_eq!(ok(&live, "echo fine", &root()).await, ["fine"]);

    // Closing a sandbox whose container a reaper removed is quiet.
    dead.close().await;
    live.close().await;
    elsewhere.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_image_is_a_clear_error() {
    let docker = engine().await;
    let cfg = config(&run_id("missing"), Vec::new());
    let cfg = DockerConfig {
        image: "slipway-no-such-image:never".into(),
        ..cfg
    };
    let err = DockerSandbox::start_with(docker, cfg)
        .await
        .expect_err("there is no such image");
    let message = err.to_string();
    assert!(
        message.contains("slipway-no-such-image:never")
            && message.contains("not on the Docker engine"),
        "{message}"
    );
}

/// Containers of this file labelled with `run`, as the engine lists them.
async fn containers_of_run(docker: &Docker, run: &str) -> Vec<String> {
    let options = bollard::query_parameters::ListContainersOptions {
        all: true,
        filters: Some(std::collections::HashMap::from([(
            "label".to_owned(),
            vec![format!("slipway.run={run}")],
        )])),
        ..Default::default()
    };
    docker
        .list_containers(Some(options))
        .await
        .expect("list")
        .into_iter()
        .filter_map(|c| c.id)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_dropped_without_close_is_removed() {
    let docker = engine().await;
    let run = run_id("dropped");
    let sandbox = DockerSandbox::start_with(docker.clone(), config(&run, Vec::new()))
        .await
        .expect("start");
    assert_eq!(containers_of_run(&docker, &run).await.len(), 1);
    let since = unix_now();
    drop(sandbox);
    wait_for_event(&format!("label=slipway.run={run}"), since, "destroy").await;
    assert_eq!(containers_of_run(&docker, &run).await, Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_timeout_is_named_and_leaves_no_container() {
    let docker = engine().await;
    let run = run_id("start-timeout");
    let mut cfg = config(&run, Vec::new());
    cfg.start_timeout = Duration::from_millis(1); // allow-sleep: a limit nothing can meet, not a wait
    let since = unix_now();
    let err = DockerSandbox::start_with(docker.clone(), cfg)
        .await
        .expect_err("nothing starts in 1 ms");
    assert!(
        err.to_string().contains("container start timed out"),
        "{err}"
    );
    // The engine finishes creating after the timeout (a create takes about a
    // second with vfs; the request is not cancelled): that container must go
    // too. Its removal is the event that says nothing more is coming.
    wait_for_event(&format!("label=slipway.run={run}"), since, "destroy").await;
    assert_eq!(
        containers_of_run(&docker, &run).await,
        Vec::<String>::new(),
        "left behind after a start timeout"
    );
}
