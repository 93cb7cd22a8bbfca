//! The command line and the sidecar make the same decisions: each request of
//! the table goes through `slipway run --dry-run` and through `slipway.run`
//! with `dryRun` on the real sidecar, and both must give the same plan (every
//! decision, defaults filled in) or the same error kind. Nothing runs.

use crate::common;
use crate::common::lsp;

use std::path::{Path, PathBuf};

use common::*;
use lsp::*;
use serde_json::{Value, json};

/// One request, as each edge spells it.
struct Case {
    name: &'static str,
    /// `slipway run --dry-run` arguments (`-- true` is added when no program or agent is given).
    cli: Vec<String>,
    /// `slipway.run` fields (`root`, `dryRun` and the `true` agent are added).
    lsp: Value,
    /// Run in this repository of the fixture (`None`: a workspace run, no root).
    repo: Option<&'static str>,
    /// The error kind both must answer, or `None` for a plan.
    error: Option<&'static str>,
    /// Give both edges the `command` agent `true` (else neither names an agent).
    agent: bool,
}

fn case(name: &'static str, cli: &[&str], lsp: Value, error: Option<&'static str>) -> Case {
    Case {
        name,
        cli: cli.iter().map(|s| (*s).to_owned()).collect(),
        lsp,
        repo: Some("app"),
        error,
        agent: true,
    }
}

/// Neither edge names an agent: the defaults' applies.
fn no_agent(mut c: Case) -> Case {
    c.agent = false;
    c
}

fn in_repo(mut c: Case, repo: &'static str) -> Case {
    c.repo = Some(repo);
    c
}

fn workspace(mut c: Case) -> Case {
    c.repo = None;
    c
}

struct Fixture {
    env: TestEnv,
    repos: Vec<(&'static str, PathBuf)>,
}

impl Fixture {
    fn repo(&self, name: &str) -> &Path {
        &self
            .repos
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("no fixture repo {name}"))
            .1
    }
}

fn fixture() -> Fixture {
    let env = TestEnv::new();
    let upstream = env.new_repo("upstream");
    env.git(&upstream, &["branch", "release"]);
    let app = env.path().join("app");
    env.git(
        env.path(),
        &["clone", "-q", upstream.to_str().expect("utf8"), "app"],
    );
    let app = app.canonicalize().expect("canonical");
    env.git(&app, &["branch", "existing"]);
    std::fs::write(
        app.join("task.md"),
        "Say hello to {{WHO}} on {{SOURCE_BRANCH}}.\n",
    )
    .expect("template");
    std::fs::write(app.join(".git/info/exclude"), "task.md\n").expect("exclude");
    let created = env.slipway_json(&app, &["worktree", "create", "--branch", "in-tree"]);
    assert!(created["path"].is_string(), "{created}");

    // Repository defaults.
    let defaults = env.new_repo("defaults").canonicalize().expect("canonical");
    std::fs::write(
        defaults.join("slipway.toml"),
        "version = 2\nagent = \"codex\"\nsandbox = \"docker\"\nimage = \"repo-image:1\"\ncopy_to_worktree = [\".env\"]\n\n[hooks.host]\non_worktree_ready = [\"echo repo-ready\"]\n",
    )
    .expect("slipway.toml");
    env.trust(&defaults);
    let head_defaults = env
        .new_repo("head-defaults")
        .canonicalize()
        .expect("canonical");
    std::fs::write(
        head_defaults.join("slipway.toml"),
        "version = 2\nstrategy = \"head\"\n",
    )
    .expect("slipway.toml");
    env.trust(&head_defaults);
    let branch_defaults = env
        .new_repo("branch-defaults")
        .canonicalize()
        .expect("canonical");
    std::fs::write(
        branch_defaults.join("slipway.toml"),
        "version = 2\nstrategy = \"branch\"\n",
    )
    .expect("slipway.toml");
    env.trust(&branch_defaults);

    // Workspaces, one per default, each on a repository that has defaults of its own.
    let ws_repo = env.new_repo("ws-repo").canonicalize().expect("canonical");
    std::fs::write(
        ws_repo.join("slipway.toml"),
        "version = 2\nagent = \"opencode\"\n\n[hooks.sandbox]\non_sandbox_ready = [\"echo from-repo\"]\n",
    )
    .expect("slipway.toml");
    env.trust(&ws_repo);
    let dir = env.path().join("home/.config/slipway/workspaces");
    std::fs::create_dir_all(&dir).expect("workspaces dir");
    let mount = |policy: &str| {
        format!(
            "\n[[mounts]]\nsrc = \"{}\"\ndst = \"/work/app\"\nisolation = \"worktree\"\nsource_branch_policy = \"{policy}\"\n",
            ws_repo.display()
        )
    };
    for (name, defaults, policy) in [
        (
            "ws-docker",
            "sandbox = \"docker\"\nimage = \"ws-image:2\"\n",
            "host_head",
        ),
        ("ws-agent", "agent = \"codex\"\n", "host_head"),
        (
            "ws-hooks",
            "[hooks.host]\non_worktree_ready = [\"echo ws-ready\"]\n",
            "host_head",
        ),
        ("ws-strategy", "strategy = \"head\"\n", "host_head"),
        (
            "ws-isolated",
            "sandbox = \"docker-isolated\"\nimage = \"ws-image:2\"\n",
            "host_head",
        ),
        ("ws-ask", "", "ask"),
        ("ws-plain", "", "host_head"),
    ] {
        // Top-level keys first, then the hook tables, then the mounts.
        std::fs::write(
            dir.join(format!("{name}.toml")),
            format!("version = 2\n{defaults}{}", mount(policy)),
        )
        .expect("workspace file");
    }
    Fixture {
        repos: vec![
            ("app", app),
            ("defaults", defaults),
            ("head-defaults", head_defaults),
            ("branch-defaults", branch_defaults),
            ("ws-repo", ws_repo),
        ],
        env,
    }
}

fn table() -> Vec<Case> {
    // Over the 100 000 bytes an argument prompt may have, under what one argv entry may hold.
    let big = "x".repeat(120_000);
    let big: &'static str = Box::leak(big.into_boxed_str());
    vec![
        // Every strategy × source combination the command line knows.
        case(
            "no strategy: merge-to-head from host HEAD",
            &[],
            json!({}),
            None,
        ),
        case(
            "head",
            &["--strategy", "head"],
            json!({ "strategy": "head" }),
            None,
        ),
        case(
            "merge-to-head",
            &["--strategy", "merge-to-head"],
            json!({ "strategy": "merge-to-head" }),
            None,
        ),
        case(
            "a branch alone",
            &["--branch", "new-one"],
            json!({ "branch": "new-one" }),
            None,
        ),
        case(
            "branch strategy with a base",
            &[
                "--strategy",
                "branch",
                "--branch",
                "new-two",
                "--base",
                "origin/release",
            ],
            json!({ "strategy": "branch", "branch": "new-two", "base": "origin/release" }),
            None,
        ),
        case(
            "an existing branch",
            &["--branch", "existing"],
            json!({ "branch": "existing" }),
            None,
        ),
        case(
            "source default",
            &["--source", "default"],
            json!({ "source": { "policy": "default" } }),
            None,
        ),
        case(
            "source host-head",
            &["--source", "host-head"],
            json!({ "source": { "policy": "host_head" } }),
            None,
        ),
        case(
            "source current-branch",
            &["--source", "current-branch"],
            json!({ "source": { "policy": "current_branch" } }),
            None,
        ),
        case(
            "source named with --ref",
            &["--source", "named", "--ref", "origin/release"],
            json!({ "source": { "policy": "named", "ref": "origin/release" } }),
            None,
        ),
        case(
            "source named:REF",
            &["--branch", "from-existing", "--source", "named:existing"],
            json!({ "branch": "from-existing", "source": { "policy": "named", "ref": "existing" } }),
            None,
        ),
        case(
            "source ask with nobody to answer",
            &["--source", "ask"],
            json!({ "source": { "policy": "ask" } }),
            Some("sourceBranchRequired"),
        ),
        case(
            "source named, no such ref",
            &["--source", "named", "--ref", "nope"],
            json!({ "source": { "policy": "named", "ref": "nope" } }),
            Some("unknownRef"),
        ),
        case(
            "head with a source",
            &["--strategy", "head", "--source", "default"],
            json!({ "strategy": "head", "source": { "policy": "default" } }),
            Some("invalidParams"),
        ),
        case(
            "head with copy",
            &["--strategy", "head", "--copy", "x"],
            json!({ "strategy": "head", "copy": ["x"] }),
            Some("invalidParams"),
        ),
        case(
            "branch strategy without a branch",
            &["--strategy", "branch"],
            json!({ "strategy": "branch" }),
            Some("invalidParams"),
        ),
        case(
            "head with a branch",
            &["--strategy", "head", "--branch", "x"],
            json!({ "strategy": "head", "branch": "x" }),
            Some("invalidParams"),
        ),
        case(
            "a base without a branch",
            &["--base", "main"],
            json!({ "base": "main" }),
            Some("invalidParams"),
        ),
        case(
            "a hostile branch name",
            &["--branch", "../x"],
            json!({ "branch": "../x" }),
            Some("invalidBranchName"),
        ),
        case(
            "an unknown worktree",
            &["--worktree", "nope"],
            json!({ "worktree": "nope" }),
            Some("worktreeNotFound"),
        ),
        case(
            "an existing worktree",
            &["--worktree", "in-tree"],
            json!({ "worktree": "in-tree" }),
            None,
        ),
        case(
            "a copy pattern outside the repository",
            &["--copy", "../secrets"],
            json!({ "copy": ["../secrets"] }),
            Some("invalidParams"),
        ),
        // Sandboxes.
        case(
            "docker without an image",
            &["--sandbox", "docker"],
            json!({ "sandbox": { "type": "docker", "image": "" } }),
            Some("invalidParams"),
        ),
        case(
            "docker with an image",
            &["--sandbox", "docker", "--image", "img:1"],
            json!({ "sandbox": { "type": "docker", "image": "img:1" } }),
            None,
        ),
        case(
            "docker-isolated with an image",
            &["--sandbox", "docker-isolated", "--image", "img:1"],
            json!({ "sandbox": { "type": "docker-isolated", "image": "img:1" } }),
            None,
        ),
        // Prompts, arguments and the agent.
        case(
            "args with an inline prompt",
            &["--prompt", "hi", "--arg", "A=1"],
            json!({ "prompt": "hi", "args": { "A": "1" } }),
            Some("invalidParams"),
        ),
        case(
            "a template without its argument",
            &["--prompt-file", "task.md"],
            json!({ "promptFile": "task.md" }),
            Some("missingPromptArgs"),
        ),
        case(
            "a template with its argument",
            &["--prompt-file", "task.md", "--arg", "WHO=you"],
            json!({ "promptFile": "task.md", "args": { "WHO": "you" } }),
            None,
        ),
        case(
            "a built-in argument",
            &[
                "--prompt-file",
                "task.md",
                "--arg",
                "WHO=you",
                "--arg",
                "SOURCE_BRANCH=x",
            ],
            json!({ "promptFile": "task.md", "args": { "WHO": "you", "SOURCE_BRANCH": "x" } }),
            Some("invalidParams"),
        ),
        case(
            "a missing prompt file",
            &["--prompt-file", "missing.md"],
            json!({ "promptFile": "missing.md" }),
            Some("invalidParams"),
        ),
        case(
            "zero iterations",
            &["--max-iterations", "0"],
            json!({ "maxIterations": 0 }),
            Some("invalidParams"),
        ),
        case(
            "an empty completion signal",
            &["--completion-signal", " "],
            json!({ "completionSignals": [" "] }),
            Some("invalidParams"),
        ),
        case(
            "the command agent without a program",
            &["--agent", "command"],
            json!({ "agent": { "type": "command", "command": [] } }),
            Some("invalidParams"),
        ),
        case(
            "codex with a model and timeouts",
            &[
                "--agent",
                "codex",
                "--model",
                "gpt-x",
                "--idle-timeout",
                "7",
                "--max-iterations",
                "3",
            ],
            json!({ "agent": { "type": "codex", "model": "gpt-x" }, "idleTimeoutSecs": 7, "maxIterations": 3 }),
            None,
        ),
        case(
            "a prompt too large for an agent that takes it as an argument",
            &["--agent", "cursor", "--prompt", big],
            json!({ "agent": { "type": "cursor" }, "prompt": big }),
            Some("promptTooLarge"),
        ),
        // Repository defaults (slipway.toml).
        in_repo(
            no_agent(case(
                "repository defaults: agent, sandbox, image, hooks, copy",
                &[],
                json!({}),
                None,
            )),
            "defaults",
        ),
        in_repo(
            case(
                "repository defaults under explicit choices",
                &["--sandbox", "none", "--agent", "command", "--", "true"],
                json!({ "sandbox": { "type": "none" } }),
                None,
            ),
            "defaults",
        ),
        in_repo(
            case("repository default strategy head", &[], json!({}), None),
            "head-defaults",
        ),
        in_repo(
            case(
                "repository default strategy branch needs a branch",
                &[],
                json!({}),
                Some("invalidParams"),
            ),
            "branch-defaults",
        ),
        // Workspace runs, each default set, over the repository's defaults.
        workspace(case(
            "workspace sandbox and image",
            &["--workspace", "ws-docker"],
            json!({ "workspace": "ws-docker" }),
            None,
        )),
        workspace(no_agent(case(
            "workspace agent",
            &["--workspace", "ws-agent"],
            json!({ "workspace": "ws-agent" }),
            None,
        ))),
        workspace(no_agent(case(
            "workspace with the repository's default agent",
            &["--workspace", "ws-plain"],
            json!({ "workspace": "ws-plain" }),
            None,
        ))),
        workspace(case(
            "workspace hooks",
            &["--workspace", "ws-hooks"],
            json!({ "workspace": "ws-hooks" }),
            None,
        )),
        workspace(case(
            "workspace strategy",
            &["--workspace", "ws-strategy"],
            json!({ "workspace": "ws-strategy" }),
            None,
        )),
        workspace(case(
            "workspace with the repository's defaults only",
            &["--workspace", "ws-plain"],
            json!({ "workspace": "ws-plain" }),
            None,
        )),
        workspace(case(
            "workspace sandbox overridden",
            &["--workspace", "ws-docker", "--sandbox", "none"],
            json!({ "workspace": "ws-docker", "sandbox": { "type": "none" } }),
            None,
        )),
        workspace(case(
            "workspace in docker-isolated",
            &["--workspace", "ws-isolated"],
            json!({ "workspace": "ws-isolated" }),
            Some("invalidParams"),
        )),
        workspace(case(
            "workspace ask mount",
            &["--workspace", "ws-ask"],
            json!({ "workspace": "ws-ask" }),
            Some("sourceBranchRequired"),
        )),
        workspace(case(
            "no such workspace",
            &["--workspace", "nope"],
            json!({ "workspace": "nope" }),
            Some("workspaceNotFound"),
        )),
    ]
}

/// The number of requests the README says this test sends ("`tests/edges_agree.rs` sends N requests").
fn readme_case_count() -> usize {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    // The sentence may be wrapped: read it with every run of whitespace as one space.
    let words = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    let (_, rest) = words
        .split_once("`tests/edges_agree.rs` sends ")
        .expect("the README names this test's request count");
    rest.split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count after \"sends\" in the README: {rest:.40}"))
}

/// The plan without what differs by design between two plannings (the run id).
fn comparable(mut plan: Value) -> Value {
    if let Some(request) = plan.get_mut("request").and_then(Value::as_object_mut) {
        request.remove("runId");
    }
    plan
}

#[test]
fn the_cli_and_the_sidecar_give_the_same_plan_or_the_same_error() {
    let f = fixture();
    let cases = table();
    assert_eq!(
        cases.len(),
        readme_case_count(),
        "the README says how many requests this test sends: change one with the other"
    );
    let mut lsp = Lsp::start(&f.env, Some(f.repo("app")), false);
    let mut failures = Vec::new();
    let mut plans = std::collections::HashMap::new();
    for c in &cases {
        let dir = match c.repo {
            Some(name) => f.repo(name).to_path_buf(),
            None => f.env.path().to_path_buf(),
        };
        let mut cli = vec![
            "--json".to_owned(),
            "run".to_owned(),
            "--dry-run".to_owned(),
        ];
        cli.extend(c.cli.iter().cloned());
        let has_agent = c.cli.iter().any(|a| a == "--" || a == "--agent");
        if c.agent && !has_agent {
            cli.extend(["--agent", "command", "--", "true"].map(str::to_owned));
        }
        let args: Vec<&str> = cli.iter().map(String::as_str).collect();
        let out = f.env.slipway(&dir, &args);
        let from_cli: Result<Value, String> = if out.status.success() {
            Ok(comparable(
                serde_json::from_slice(&out.stdout).expect("the plan is JSON"),
            ))
        } else {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let line = stderr
                .lines()
                .rev()
                .find(|l| l.starts_with("{\"error\""))
                .unwrap_or_else(|| panic!("{}: no JSON error:\n{stderr}", c.name));
            let err: Value = serde_json::from_str(line).expect("error JSON");
            Err(err["error"]["kind"].as_str().unwrap_or_default().to_owned())
        };

        let mut arg = c.lsp.clone();
        let obj = arg.as_object_mut().expect("an object");
        obj.insert("dryRun".into(), json!(true));
        if let Some(name) = c.repo {
            obj.insert("root".into(), json!(f.repo(name)));
        }
        if c.agent {
            obj.entry("agent")
                .or_insert_with(|| json!({ "type": "command", "command": ["true"] }));
        }
        let from_lsp: Result<Value, String> = match lsp.execute("slipway.run", arg) {
            Ok(answer) => Ok(comparable(answer["plan"].clone())),
            Err(e) => Err(kind(&e).to_owned()),
        };

        let expected: Result<(), &str> = match c.error {
            None => Ok(()),
            Some(k) => Err(k),
        };
        match (&from_cli, &from_lsp, expected) {
            (Ok(a), Ok(b), Ok(())) if a == b => {
                plans.insert(c.name, a.clone());
            }
            (Err(a), Err(b), Err(k)) if a == k && b == k => {}
            _ => failures.push(format!(
                "{}:\n  expected {expected:?}\n  cli: {from_cli:?}\n  lsp: {from_lsp:?}",
                c.name
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} requests disagree or are wrong:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );

    // Agreeing is not enough: the defaults are the ones the files give.
    let request = |name: &str| plans[name]["request"].clone();
    let r = request("repository defaults: agent, sandbox, image, hooks, copy");
    assert_eq!(r["agent"]["type"], "codex", "{r}");
    assert_eq!(
        r["sandbox"],
        json!({ "type": "docker", "image": "repo-image:1", "network": null }),
        "{r}"
    );
    assert_eq!(
        r["hooks"]["hostOnWorktreeReady"],
        json!(["echo repo-ready"]),
        "{r}"
    );
    assert_eq!(r["copy"], json!([".env"]), "{r}");
    let r = request("repository defaults under explicit choices");
    assert_eq!(
        (r["agent"]["type"].clone(), r["sandbox"]["type"].clone()),
        (json!("command"), json!("none")),
        "{r}"
    );
    assert_eq!(
        request("repository default strategy head")["strategy"],
        json!({ "type": "head" })
    );
    assert_eq!(
        request("no strategy: merge-to-head from host HEAD")["strategy"],
        json!({ "type": "merge-to-head" })
    );
    let r = request("workspace sandbox and image");
    assert_eq!(
        r["sandbox"],
        json!({ "type": "docker", "image": "ws-image:2", "network": null }),
        "{r}"
    );
    assert_eq!(r["workspace"]["name"], "ws-docker", "{r}");
    assert_eq!(
        request("workspace sandbox overridden")["sandbox"],
        json!({ "type": "none" })
    );
    assert_eq!(request("workspace agent")["agent"]["type"], "codex");
    // The workspace sets no agent: its repository's slipway.toml does.
    assert_eq!(
        request("workspace with the repository's default agent")["agent"]["type"],
        "opencode"
    );
    let r = request("workspace hooks");
    assert_eq!(
        r["hooks"]["hostOnWorktreeReady"],
        json!(["echo ws-ready"]),
        "{r}"
    );
    assert_eq!(
        r["hooks"]["sandboxOnSandboxReady"],
        json!(["echo from-repo"]),
        "{r}"
    );
    assert_eq!(
        request("workspace strategy")["strategy"],
        json!({ "type": "head" })
    );
    let plan = &plans["workspace sandbox and image"];
    assert_eq!(
        plan["repository"],
        json!(f.repo("ws-repo")),
        "the workspace's repository decides: {plan}"
    );
    let r = request("codex with a model and timeouts");
    assert_eq!(
        (r["maxIterations"].clone(), r["timeouts"]["idle"].clone()),
        (json!(3), json!(7)),
        "{r}"
    );
}
