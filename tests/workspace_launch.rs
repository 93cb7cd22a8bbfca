//! Launching a run on a workspace (two repositories and a shared cache) in the
//! real Docker engine: each mount at its container path with the right commit,
//! the host checkouts byte-identical before and after (no switch, checkout,
//! pull or fetch: HEAD, index and FETCH_HEAD unchanged), and the agent's
//! commits back as branches in both host repositories.

use crate::common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::json;

const IMAGE: &str = "slipway-test:latest";

/// HEAD, index, FETCH_HEAD and every working-tree file of a host checkout.
fn fingerprint(repo: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    for name in [
        ".git/HEAD",
        ".git/index",
        ".git/FETCH_HEAD",
        ".git/ORIG_HEAD",
    ] {
        out.push((name.to_owned(), std::fs::read(repo.join(name)).ok()));
    }
    let mut stack = vec![repo.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read").flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if name == ".git" || name == ".slipway" {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push((path.display().to_string(), std::fs::read(&path).ok()));
            }
        }
    }
    out.sort();
    out
}

fn request(plan: serde_json::Value, sandbox: serde_json::Value, script: &str) -> serde_json::Value {
    json!({
        "runId": null,
        "strategy": {"type": "merge-to-head"},
        "source": {"policy": "host_head"},
        "copy": [],
        "agent": {"type": "command", "command": ["sh", "-c", script]},
        "sandbox": sandbox,
        "workspace": plan,
        "prompt": {"type": "inline", "value": "work on both repositories"},
        "promptArgs": {},
        "maxIterations": 1,
        "completionSignals": [],
        "timeouts": {"idle": 120, "hook": 60, "completionGrace": 5},
        "hooks": {}
    })
}

struct Fixture {
    env: TestEnv,
    a: PathBuf,
    b: PathBuf,
    cache: PathBuf,
    a_default: String,
    b_release: String,
}

fn fixture() -> Fixture {
    let env = TestEnv::new();
    let up_a = env.new_repo("up-a");
    env.commit_file(&up_a, "a.txt", "a on main\n", "a main");
    let up_b = env.new_repo("up-b");
    env.git(&up_b, &["checkout", "-q", "-b", "release"]);
    env.commit_file(&up_b, "b.txt", "b on release\n", "b release");
    env.git(&up_b, &["checkout", "-q", "main"]);
    env.git(
        env.path(),
        &["clone", "-q", up_a.to_str().expect("utf8"), "a"],
    );
    env.git(
        env.path(),
        &["clone", "-q", up_b.to_str().expect("utf8"), "b"],
    );
    let a = env.path().join("a");
    let b = env.path().join("b");
    // The host checkouts are busy: another branch, staged and unstaged work.
    env.git(&a, &["checkout", "-q", "-b", "dev"]);
    env.commit_file(&a, "dev.txt", "dev work\n", "dev");
    std::fs::write(a.join("unstaged.txt"), "mine\n").expect("write");
    std::fs::write(b.join("b-staged.txt"), "staged\n").expect("write");
    env.git(&b, &["add", "b-staged.txt"]);
    let cache = env.path().join("cache");
    std::fs::create_dir_all(&cache).expect("cache");
    let a_default = env.rev(&a, "origin/main");
    let b_release = env.rev(&b, "origin/release");
    Fixture {
        env,
        a,
        b,
        cache,
        a_default,
        b_release,
    }
}

fn plan(f: &Fixture) -> serde_json::Value {
    json!({
        "name": "two-repos",
        "workdir": "/work/a",
        "mounts": [
            {"src": f.a, "dst": "/work/a", "isolation": "worktree", "source": {"policy": "default"}},
            {"src": f.b, "dst": "/work/b", "isolation": "clone", "source": {"policy": "named", "ref": "origin/release"}},
            {"src": f.cache, "dst": "/cache", "isolation": "shared", "source": {"policy": "host_head"}}
        ]
    })
}

fn run_request(f: &Fixture, req: &serde_json::Value) -> std::process::Output {
    let file = f.env.path().join("request.json");
    std::fs::write(&file, serde_json::to_vec(req).expect("json")).expect("write request");
    f.env.slipway(
        &f.a,
        &[
            "--json",
            "run",
            "--request-file",
            file.to_str().expect("utf8"),
        ],
    )
}

#[test]
fn a_two_repo_workspace_in_docker_checks_out_the_right_commits_and_brings_commits_back() {
    require_docker_image();
    let f = fixture();
    let before_a = fingerprint(&f.a);
    let before_b = fingerprint(&f.b);
    let script = "set -e\n\
        echo \"a at $(git rev-parse HEAD) in $(pwd)\"\n\
        echo \"b at $(git -C /work/b rev-parse HEAD)\"\n\
        git worktree prune\n\
        echo from-agent > agent-a.txt; git add agent-a.txt; git commit -qm 'agent in a'\n\
        cd /work/b; echo from-agent > agent-b.txt; git add agent-b.txt; git commit -qm 'agent in b'\n\
        echo cached > /cache/marker\n";
    let out = run_request(
        &f,
        &request(
            plan(&f),
            json!({"type": "docker", "image": IMAGE, "network": "none"}),
            script,
        ),
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let log = std::fs::read_to_string(s(&result, "logFile")).expect("log");
    assert!(
        log.contains(&format!("a at {} in /work/a", f.a_default)),
        "worktree mount at origin/HEAD's commit:\n{log}"
    );
    assert!(
        log.contains(&format!("b at {}", f.b_release)),
        "clone mount at origin/release:\n{log}"
    );

    // The host checkouts are exactly as they were.
    assert_eq!(fingerprint(&f.a), before_a, "host a changed");
    assert_eq!(fingerprint(&f.b), before_b, "host b changed");
    assert!(!f.a.join(".git/FETCH_HEAD").exists() && !f.b.join(".git/FETCH_HEAD").exists());
    // `git worktree prune` inside did not drop the host's registration before close.
    let mounts = result["mounts"].as_array().expect("mounts");
    assert_eq!(mounts.len(), 3);

    // The agent's commits are branches in both host repositories.
    let branch_a = s(&mounts[0], "branch");
    let branch_b = s(&mounts[1], "branch");
    assert_eq!(
        f.env.git(&f.a, &["log", "-1", "--format=%s", branch_a]),
        "agent in a"
    );
    assert_eq!(
        f.env.git(&f.b, &["log", "-1", "--format=%s", branch_b]),
        "agent in b"
    );
    assert_eq!(f.env.rev(&f.a, &format!("{branch_a}~1")), f.a_default);
    assert_eq!(f.env.rev(&f.b, &format!("{branch_b}~1")), f.b_release);
    assert_eq!(mounts[1]["commits"].as_array().expect("commits").len(), 1);
    assert_eq!(
        std::fs::read_to_string(f.cache.join("marker")).expect("cache"),
        "cached\n"
    );
    // Clean checkouts are cleaned up; nothing is left in the clones folder.
    assert!(
        mounts.iter().all(|m| m["preservedPath"].is_null()),
        "{result}"
    );
    assert_eq!(
        commit_shas(&result).len(),
        1,
        "the run's commits are the workdir mount's"
    );
}

#[test]
fn ask_mounts_are_listed_in_order_and_nothing_is_created() {
    let f = fixture();
    let mut p = plan(&f);
    p["mounts"][0]["source"] = json!({"policy": "ask"});
    p["mounts"][1]["source"] = json!({"policy": "ask"});
    let before = fingerprint(&f.a);
    let out = run_request(&f, &request(p, json!({"type": "none"}), "true"));
    assert!(!out.status.success());
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(result["error"]["kind"], "sourceBranchRequired");
    let message = s(&result["error"], "message");
    let a_at = message.find("/work/a").expect("names /work/a");
    let b_at = message.find("/work/b").expect("names /work/b");
    assert!(a_at < b_at, "in mount order: {message}");
    assert!(
        message.contains("origin/release"),
        "with the choices: {message}"
    );
    assert_eq!(fingerprint(&f.a), before);
    assert_eq!(
        f.env.local_branches(&f.a),
        vec!["dev".to_owned(), "main".to_owned()]
    );
}

#[test]
fn on_the_host_sandbox_the_agent_works_in_the_workdir_mounts_checkout() {
    let f = fixture();
    let before_a = fingerprint(&f.a);
    let script = "set -e; pwd > /dev/null; echo host > host-run.txt; git add host-run.txt; git commit -qm 'host run'";
    let out = run_request(&f, &request(plan(&f), json!({"type": "none"}), script));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let branch_a = s(&result["mounts"][0], "branch");
    assert_eq!(
        f.env.git(&f.a, &["log", "-1", "--format=%s", branch_a]),
        "host run"
    );
    assert_eq!(fingerprint(&f.a), before_a);
    // The clone mount was prepared and, untouched, removed with no branch left behind.
    assert!(result["mounts"][1]["branch"].is_null(), "{result}");
    assert_eq!(f.env.local_branches(&f.b), vec!["main".to_owned()]);
    assert!(
        result["mounts"][1]["commits"]
            .as_array()
            .expect("commits")
            .is_empty()
    );
}

#[test]
fn the_cli_creates_a_workspace_file_and_runs_on_it_in_docker() {
    require_docker_image();
    let f = fixture();
    let before_a = fingerprint(&f.a);
    let before_b = fingerprint(&f.b);
    let a = f.a.to_str().expect("utf8");
    let b = f.b.to_str().expect("utf8");
    let cache = f.cache.to_str().expect("utf8");
    let created = f.env.slipway_json(
        f.env.path(),
        &[
            "workspace",
            "create",
            "pair",
            "--workdir",
            "/work/a",
            "--mount",
            &format!("{a}:/work/a"),
            "--mount",
            &format!("{b}:/work/b"),
            "--mount",
            &format!("{cache}:/cache"),
            "--mount-isolation",
            "/work/a=worktree",
            "--mount-isolation",
            "/work/b=clone",
            "--mount-source-branch",
            "/work/a=default",
            "--mount-source-branch",
            "/work/b=named:origin/release",
        ],
    );
    assert!(created.to_string().contains("pair"), "{created}");
    let listed = f.env.slipway_json(f.env.path(), &["workspace", "list"]);
    assert!(listed.to_string().contains("pair"), "{listed}");
    let script = "set -e; echo x > x.txt; git add x.txt; git commit -qm 'cli a'; \
                  cd /work/b; echo y > y.txt; git add y.txt; git commit -qm 'cli b'";
    let out = f.env.slipway(
        f.env.path(),
        &[
            "--json",
            "run",
            "--workspace",
            "pair",
            "--sandbox",
            "docker",
            "--image",
            IMAGE,
            "--network",
            "none",
            "--",
            "sh",
            "-c",
            script,
        ],
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let mounts = result["mounts"].as_array().expect("mounts");
    let branch_a = s(&mounts[0], "branch");
    let branch_b = s(&mounts[1], "branch");
    assert_eq!(
        f.env.git(&f.a, &["log", "-1", "--format=%s", branch_a]),
        "cli a"
    );
    assert_eq!(
        f.env.git(&f.b, &["log", "-1", "--format=%s", branch_b]),
        "cli b"
    );
    assert_eq!(f.env.rev(&f.a, &format!("{branch_a}~1")), f.a_default);
    assert_eq!(f.env.rev(&f.b, &format!("{branch_b}~1")), f.b_release);
    assert_eq!(fingerprint(&f.a), before_a);
    assert_eq!(fingerprint(&f.b), before_b);
    let removed = f.env.slipway(f.env.path(), &["workspace", "rm", "pair"]);
    assert!(removed.status.success());
}

#[test]
fn a_workspace_s_run_defaults_apply_and_the_command_line_wins() {
    require_docker_image();
    let f = fixture();
    let a = f.a.to_str().expect("utf8");
    f.env.slipway_json(
        f.env.path(),
        &[
            "workspace",
            "create",
            "defaults",
            "--workdir",
            "/work/a",
            "--mount",
            &format!("{a}:/work/a"),
            "--mount-isolation",
            "/work/a=worktree",
            "--sandbox",
            "docker",
            "--image",
            IMAGE,
        ],
    );
    // The test image carries a stand-in `claude`; the host does not.
    let probe =
        "if [ -x /usr/local/bin/claude ]; then echo WHERE=container; else echo WHERE=host; fi";
    let run = |extra: &[&str]| {
        let mut args = vec![
            "--json",
            "run",
            "--workspace",
            "defaults",
            "--network",
            "none",
        ];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "sh", "-c", probe]);
        let out = f.env.slipway(f.env.path(), &args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        std::fs::read_to_string(s(&result, "logFile")).expect("log")
    };
    assert!(
        run(&[]).contains("WHERE=container"),
        "the workspace's sandbox and image apply"
    );
    assert!(
        run(&["--sandbox", "none"]).contains("WHERE=host"),
        "the command line wins"
    );
}

#[test]
fn a_workspace_s_copy_to_worktree_reaches_every_isolated_checkout() {
    let f = fixture();
    let a = f.a.to_str().expect("utf8");
    let b = f.b.to_str().expect("utf8");
    f.env.slipway_json(
        f.env.path(),
        &[
            "workspace",
            "create",
            "copying",
            "--workdir",
            "/work/a",
            "--mount",
            &format!("{a}:/work/a"),
            "--mount",
            &format!("{b}:/work/b"),
            "--mount-isolation",
            "/work/a=worktree",
            "--mount-isolation",
            "/work/b=clone",
        ],
    );
    let file = f
        .env
        .path()
        .join("home/.config/slipway/workspaces/copying.toml");
    let text = std::fs::read_to_string(&file).expect("workspace file");
    std::fs::write(&file, format!("copy_to_worktree = [\"local.env\"]\n{text}")).expect("edit");
    std::fs::write(f.a.join("local.env"), "SECRET_A=1\n").expect("write");
    std::fs::write(f.b.join("local.env"), "SECRET_B=1\n").expect("write");
    // As such files are in real life, they are ignored (a: exclude; b: a committed .gitignore).
    std::fs::write(f.a.join(".git/info/exclude"), "local.env\n").expect("exclude");
    std::fs::write(f.b.join(".gitignore"), "local.env\n").expect("gitignore");
    f.env.git(&f.b, &["add", ".gitignore"]);
    f.env.git(&f.b, &["commit", "-q", "-m", "ignore local.env"]);
    let script = format!(
        "set -e; cat local.env; cat {}/.slipway/clones/*/local.env",
        f.b.display()
    );
    let out = f.env.slipway(
        f.env.path(),
        &[
            "--json",
            "run",
            "--workspace",
            "copying",
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let log = std::fs::read_to_string(s(&result, "logFile")).expect("log");
    assert!(
        log.contains("SECRET_A=1"),
        "the worktree mount got the file:\n{log}"
    );
    assert!(
        log.contains("SECRET_B=1"),
        "the clone mount got the file:\n{log}"
    );
    let clones = f.b.join(".slipway/clones");
    assert!(
        !clones.exists() || std::fs::read_dir(&clones).expect("read").next().is_none(),
        "a clean clone is removed after the run: {result}"
    );
}

/// A workspace file saying `sandbox = "docker"`, launched from the editor
/// (`slipway.run` with the workspace's name and no sandbox, no root): the
/// agent runs in a container, as it does from the command line. The agent
/// itself checks where it is, and its commit comes back.
#[test]
fn a_docker_workspace_launched_from_the_sidecar_runs_in_a_container() {
    require_docker_image();
    let f = fixture();
    let dir = f.env.path().join("home/.config/slipway/workspaces");
    std::fs::create_dir_all(&dir).expect("workspaces dir");
    std::fs::write(
        dir.join("in-docker.toml"),
        format!(
            "version = 2\nsandbox = \"docker\"\nimage = \"{IMAGE}\"\n\n[[mounts]]\nsrc = \"{}\"\ndst = \"/work/a\"\nisolation = \"worktree\"\nsource_branch_policy = \"default\"\n",
            f.a.display()
        ),
    )
    .expect("workspace file");
    let mut lsp = crate::common::lsp::Lsp::start(&f.env, Some(&f.a), false);
    // A container has /.dockerenv and the workdir at its container path; a host process has neither.
    let script = "set -e; test -f /.dockerenv; test \"$(pwd)\" = /work/a; \
                  echo in-a-container > where.txt; git add where.txt; git commit -q -m 'agent: where'";
    let answer = lsp.ok(
        "slipway.run",
        json!({
            "workspace": "in-docker",
            "agent": { "type": "command", "command": ["sh", "-c", script] },
            "prompt": "say where you run",
        }),
    );
    let run_id = s(&answer, "runId").to_owned();
    let finished = lsp.expect_notification(
        "slipway/runFinished",
        |p: &serde_json::Value| p["runId"] == run_id.as_str(),
        std::time::Duration::from_secs(120),
        "the workspace run ends",
    );
    let params = &finished.msg["params"];
    assert_eq!(params["status"], "completed", "{params}");
    // The run's records are in the workdir mount's repository (the sidecar decided).
    let a = f.a.canonicalize().expect("canonical");
    assert_eq!(params["root"], json!(a), "{params}");
    let shas = commit_shas(params);
    assert_eq!(shas.len(), 1, "{params}");
    let shown = f
        .env
        .git(&f.a, &["show", &format!("{}:where.txt", shas[0])]);
    assert_eq!(shown, "in-a-container");
}

#[test]
fn mounts_keep_origin_without_its_credentials() {
    require_docker_image();
    let f = fixture();
    for repo in [&f.a, &f.b] {
        f.env.git(
            repo,
            &[
                "remote",
                "set-url",
                "origin",
                "https://agent-user:s3cret-token@example.invalid/up.git",
            ],
        );
    }
    let script = "set -e\n\
        echo \"a origin $(git remote get-url origin)\"\n\
        echo \"b origin $(git -C /work/b remote get-url origin)\"\n";
    let out = run_request(
        &f,
        &request(
            plan(&f),
            json!({"type": "docker", "image": IMAGE, "network": "none"}),
            script,
        ),
    );
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let log = std::fs::read_to_string(s(&result, "logFile")).expect("log");
    assert!(out.status.success(), "{result}\n{log}");
    for mount in ["a", "b"] {
        assert!(
            log.contains(&format!("{mount} origin https://example.invalid/up.git")),
            "{mount} keeps origin, without user and token:\n{log}"
        );
    }
    assert!(
        !log.contains("s3cret"),
        "a credential reached the agent:\n{log}"
    );
}
