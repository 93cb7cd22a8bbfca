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
            let err = json_error(&out.stderr).unwrap_or_else(|| {
                panic!(
                    "{}: no JSON error:\n{}",
                    c.name,
                    String::from_utf8_lossy(&out.stderr)
                )
            });
            Err(err["kind"].as_str().unwrap_or_default().to_owned())
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

// ---------------------------------------------------------------------------
// Close, discard, land, review and what to do next: the same request through
// `slipway … --json` and through the sidecar gives the same decision, the same
// list of what would be lost and the same actions. Requests that change
// something go to two copies of one fixture (fixed dates: the same commits
// get the same ids), one per edge.

/// A repository holding a worktree in each state a review decision turns on.
fn review_fixture(env: &TestEnv, name: &str) -> PathBuf {
    let upstream = env.new_repo(&format!("{name}-upstream"));
    env.git(
        env.path(),
        &["clone", "-q", upstream.to_str().expect("utf8"), name],
    );
    let repo = env.path().join(name).canonicalize().expect("canonical");
    let worktree = |branch: &str| -> PathBuf {
        let created = env.slipway_json(&repo, &["worktree", "create", "--branch", branch]);
        PathBuf::from(s(&created, "path"))
    };
    let two_commits = |wt: &Path, tag: &str| {
        env.commit_file(wt, &format!("{tag}-a.txt"), "a\n", &format!("{tag}: first"));
        env.commit_file(
            wt,
            &format!("{tag}-b.txt"),
            "b\n",
            &format!("{tag}: second"),
        );
    };
    // Work found nowhere else.
    let wt = worktree("unique");
    two_commits(&wt, "unique");
    // The same changes picked onto main (a rebase landed them elsewhere).
    let wt = worktree("picked");
    two_commits(&wt, "picked");
    env.commit_file(
        &repo,
        "main.txt",
        "main moved on\n",
        "main: before the picks",
    );
    env.git(&repo, &["cherry-pick", "picked~1", "picked"]);
    // A branch the user rebased onto main after main moved on.
    let wt = worktree("rebased");
    env.commit_file(&wt, "rebased.txt", "r\n", "rebased: its own change");
    env.commit_file(&repo, "later.txt", "later\n", "main: later");
    env.git(&wt, &["rebase", "-q", "main"]);
    // The whole branch squashed onto main by hand.
    let wt = worktree("squashed");
    two_commits(&wt, "squashed");
    env.git(&repo, &["merge", "-q", "--squash", "squashed"]);
    env.git(&repo, &["commit", "-q", "-m", "squashed by hand"]);
    // Also on another branch, and pushed.
    let wt = worktree("backed-up");
    two_commits(&wt, "backed");
    env.git(&repo, &["branch", "backup", "backed-up"]);
    let wt = worktree("pushed");
    two_commits(&wt, "pushed");
    env.git(&wt, &["push", "-q", "origin", "pushed"]);
    env.git(&repo, &["fetch", "-q", "origin"]);
    // Uncommitted files and nothing else.
    let wt = worktree("dirty");
    std::fs::write(wt.join("draft.txt"), "not committed\n").expect("draft");
    std::fs::write(wt.join("README.md"), "changed\n").expect("edit");
    // A branch whose change conflicts with main's.
    let wt = worktree("conflicting");
    env.commit_file(&wt, "README.md", "theirs\n", "conflicting: README");
    env.commit_file(&repo, "README.md", "ours\n", "main: README");
    // A kept merge-to-head branch (no worktree), as a refused merge back leaves it.
    let wt = worktree("kept-source");
    env.commit_file(&wt, "kept.txt", "kept\n", "kept: the agent's work");
    env.git(&repo, &["branch", "slipway/merge-0badcafe", "kept-source"]);
    env.slipway_json(&repo, &["discard", "kept-source", "--force"]);
    repo
}

/// An answer with the repository's paths written `[REPO]`.
fn portable(value: &Value, repo: &Path) -> Value {
    let text = value
        .to_string()
        .replace(repo.to_str().expect("utf8"), "[REPO]");
    serde_json::from_str(&text).expect("JSON")
}

/// The answer, or the error as `{kind, actions}`, of `slipway --json ARGS`.
fn cli_answer(env: &TestEnv, repo: &Path, args: &[&str]) -> Result<Value, Value> {
    let mut full = vec!["--json"];
    full.extend_from_slice(args);
    let out = env.slipway(repo, &full);
    let stdout: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    if stdout.is_object() {
        return Ok(portable(&stdout, repo));
    }
    let e = json_error(&out.stderr).unwrap_or_else(|| {
        panic!(
            "{args:?}: neither an answer nor an error:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    Err(json!({ "kind": e["kind"], "actions": e["data"]["actions"] }))
}

/// The same through the sidecar.
fn lsp_answer(lsp: &mut Lsp, repo: &Path, command: &str, arg: Value) -> Result<Value, Value> {
    match lsp.execute(command, arg) {
        Ok(v) => Ok(portable(&v, repo)),
        Err(e) => Err(json!({ "kind": kind(&e), "actions": e["data"]["actions"] })),
    }
}

/// `(kind, worktree, force)` of each action, in order.
fn actions_of(answer: &Value) -> Vec<(String, String, bool)> {
    answer["actions"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|a| {
                    (
                        a["kind"].as_str().unwrap_or("").to_owned(),
                        a["worktree"].as_str().unwrap_or("").to_owned(),
                        a["force"] == true,
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn subjects(answer: &Value) -> Vec<String> {
    answer["atRisk"]["commits"]
        .as_array()
        .expect("atRisk.commits")
        .iter()
        .map(|c| c["subject"].as_str().expect("subject").to_owned())
        .collect()
}

#[test]
fn close_discard_land_and_review_decide_the_same_on_both_edges() {
    let env = TestEnv::new();
    let repo = review_fixture(&env, "one");
    let twin = review_fixture(&env, "two");
    let mut lsp = Lsp::start(&env, Some(&repo), false);
    let mut disagree = Vec::new();
    let mut both = |name: &str, cli: Result<Value, Value>, lsp: Result<Value, Value>| {
        if cli != lsp {
            disagree.push(format!("{name}:\n  cli: {cli:?}\n  lsp: {lsp:?}"));
        }
        cli
    };

    // What would be lost, for every worktree and the kept branch.
    let mut previews = std::collections::HashMap::new();
    for w in [
        "unique",
        "picked",
        "rebased",
        "squashed",
        "backed-up",
        "pushed",
        "dirty",
        "conflicting",
        "slipway/merge-0badcafe",
    ] {
        let cli = cli_answer(&env, &repo, &["discard", w, "--dry-run"]);
        let lsp_a = lsp_answer(
            &mut lsp,
            &repo,
            "slipway.discard",
            json!({ "root": repo, "worktree": w, "dryRun": true }),
        );
        let answer = both(&format!("discard --dry-run {w}"), cli, lsp_a);
        previews.insert(w, answer.expect("a preview"));
        if w != "slipway/merge-0badcafe" {
            let cli = cli_answer(&env, &repo, &["worktree", "close", w, "--dry-run"]);
            let lsp_a = lsp_answer(
                &mut lsp,
                &repo,
                "slipway.close",
                json!({ "root": repo, "worktree": w, "dryRun": true }),
            );
            let close = both(&format!("close --dry-run {w}"), cli, lsp_a).expect("a preview");
            assert_eq!(
                close["atRisk"]["commits"],
                json!([]),
                "a close never loses commits: {close}"
            );
        }
        // Review: the same files against the same base.
        let cli = cli_answer(&env, &repo, &["diff", w]);
        let lsp_a = lsp_answer(
            &mut lsp,
            &repo,
            "slipway.diff",
            json!({ "root": repo, "worktree": w }),
        );
        both(&format!("diff {w}"), cli, lsp_a).expect("a diff");
    }
    let p = |w: &str| previews[w].clone();
    assert_eq!(
        subjects(&p("unique")),
        ["unique: first", "unique: second"],
        "{}",
        p("unique")
    );
    for safe in ["picked", "squashed", "backed-up", "pushed"] {
        assert_eq!(
            p(safe)["atRisk"],
            json!({ "uncommitted": [], "commits": [] }),
            "{safe}: {}",
            p(safe)
        );
        assert_eq!(
            actions_of(&p(safe)),
            [("discard".to_owned(), safe.to_owned(), false)]
        );
    }
    assert_eq!(
        p("dirty")["atRisk"]["uncommitted"],
        json!(["README.md", "draft.txt"])
    );
    assert_eq!(
        actions_of(&p("unique")),
        [
            ("review".to_owned(), "unique".to_owned(), false),
            ("land".to_owned(), "unique".to_owned(), false),
            ("discard".to_owned(), "unique".to_owned(), true),
        ]
    );
    assert_eq!(
        subjects(&p("slipway/merge-0badcafe")),
        ["kept: the agent's work"]
    );
    assert_eq!(p("slipway/merge-0badcafe").get("path"), None);

    // Review compares with where the branch meets main now: after the rebase
    // onto main, main's own commits are not the worktree's.
    let diff = lsp.ok(
        "slipway.diff",
        json!({ "root": repo, "worktree": "rebased" }),
    );
    let files: Vec<&str> = diff["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["path"].as_str().expect("path"))
        .collect();
    assert_eq!(files, ["rebased.txt"], "{diff}");
    assert_ne!(diff["base"], diff["recordedBase"], "{diff}");
    assert_eq!(diff["target"], "main", "{diff}");
    let listed = lsp.ok("slipway.list", json!({ "root": repo }));
    let counts = |branch: &str| {
        let w = listed["worktrees"]
            .as_array()
            .expect("worktrees")
            .iter()
            .find(|w| w["branch"] == branch)
            .cloned()
            .unwrap_or_else(|| panic!("{branch} not listed: {listed}"));
        (
            w["ahead"].as_u64().expect("ahead"),
            w["behind"].as_u64().expect("behind"),
        )
    };
    assert_eq!(
        counts("rebased"),
        (1, 2),
        "main took two commits after the rebase"
    );
    assert_eq!(
        counts("unique"),
        (2, 6),
        "main has 6 commits of its own now"
    );

    // Decisions that change things: one copy per edge.
    let cases: Vec<(&str, Vec<&str>, &str, Value)> = vec![
        (
            "discard unique",
            vec!["discard", "unique"],
            "slipway.discard",
            json!({ "worktree": "unique" }),
        ),
        (
            "discard dirty",
            vec!["discard", "dirty"],
            "slipway.discard",
            json!({ "worktree": "dirty" }),
        ),
        (
            "close dirty",
            vec!["worktree", "close", "dirty"],
            "slipway.close",
            json!({ "worktree": "dirty" }),
        ),
        (
            "discard picked",
            vec!["discard", "picked"],
            "slipway.discard",
            json!({ "worktree": "picked" }),
        ),
        (
            "discard squashed",
            vec!["discard", "squashed"],
            "slipway.discard",
            json!({ "worktree": "squashed" }),
        ),
        (
            "land dirty",
            vec!["land", "dirty", "--how", "merge"],
            "slipway.land",
            json!({ "worktree": "dirty", "how": "merge" }),
        ),
        (
            "land conflicting",
            vec!["land", "conflicting", "--how", "rebase"],
            "slipway.land",
            json!({ "worktree": "conflicting", "how": "rebase" }),
        ),
        (
            "land the kept branch",
            vec!["land", "slipway/merge-0badcafe", "--how", "squash"],
            "slipway.land",
            json!({ "worktree": "slipway/merge-0badcafe", "how": "squash" }),
        ),
        (
            "discard the kept branch",
            vec!["discard", "slipway/merge-0badcafe"],
            "slipway.discard",
            json!({ "worktree": "slipway/merge-0badcafe" }),
        ),
        (
            "close the kept branch",
            vec!["worktree", "close", "slipway/merge-0badcafe"],
            "slipway.close",
            json!({ "worktree": "slipway/merge-0badcafe" }),
        ),
    ];
    let mut twin_lsp = Lsp::start(&env, Some(&twin), false);
    let mut decided = std::collections::HashMap::new();
    for (name, cli_args, command, mut arg) in cases {
        let cli = cli_answer(&env, &repo, &cli_args);
        arg["root"] = json!(twin);
        let lsp_a = lsp_answer(&mut twin_lsp, &twin, command, arg);
        // The sidecar answers with `removed`; the command line with `outcome`.
        // A commit a land makes now has an id that depends on the second it
        // was made in (the two edges land in different seconds on a busy
        // machine): the edges must agree on what it holds, its tree.
        let tree_of = |r: &mut Result<Value, Value>, root: &Path| {
            if let Ok(Value::Object(o)) = r
                && let Some(commit) = o.get("commit").and_then(Value::as_str)
            {
                let tree = env.git(root, &["rev-parse", &format!("{commit}^{{tree}}")]);
                o.insert("commit".into(), json!(format!("tree {}", tree.trim())));
            }
        };
        let (mut cli, mut lsp_a) = (cli, lsp_a);
        tree_of(&mut cli, &repo);
        tree_of(&mut lsp_a, &twin);
        let strip = |r: Result<Value, Value>| {
            r.map(|mut v| {
                if let Some(o) = v.as_object_mut() {
                    // The sidecar spells an absent field `null`.
                    o.retain(|_, v| !v.is_null());
                    o.remove("outcome");
                    o.remove("removed");
                    o.remove("keptCommit");
                    o.remove("branchKept");
                }
                v
            })
        };
        let answer = both(name, strip(cli), strip(lsp_a));
        decided.insert(name, answer);
    }
    let d = |name: &str| decided[name].clone();
    assert!(
        d("discard unique").expect("an answer")["reason"]
            .as_str()
            .expect("reason")
            .contains("2 commits")
    );
    assert_eq!(
        d("discard picked").expect("an answer")["branchDeleted"],
        true
    );
    assert_eq!(
        d("discard squashed").expect("an answer")["branchDeleted"],
        true
    );
    assert_eq!(
        d("land dirty").expect_err("refused")["kind"],
        "worktreeDirty"
    );
    let conflict = d("land conflicting").expect_err("refused");
    assert_eq!(conflict["kind"], "mergeConflict", "{conflict}");
    assert_eq!(
        actions_of(&conflict),
        [
            ("review".to_owned(), "conflicting".to_owned(), false),
            ("discard".to_owned(), "conflicting".to_owned(), true),
        ]
    );
    assert_eq!(d("land the kept branch").expect("landed")["kind"], "squash");
    // Landed by squash: discarding it now loses nothing, on either edge.
    assert_eq!(
        d("discard the kept branch").expect("discarded")["branchDeleted"],
        true
    );
    assert_eq!(
        d("close the kept branch").expect_err("no worktree")["kind"],
        "worktreeNotFound"
    );
    for r in [&repo, &twin] {
        assert!(
            !env.local_branches(r)
                .contains(&"slipway/merge-0badcafe".to_owned())
        );
    }
    // No advice anywhere names a git command that goes around slipway.
    let everything = format!("{previews:?}{decided:?}");
    assert!(
        !everything.contains("git merge") && !everything.contains("git worktree remove"),
        "{everything}"
    );
    assert!(
        disagree.is_empty(),
        "{} disagreements:\n{}",
        disagree.len(),
        disagree.join("\n")
    );
}

// ---------------------------------------------------------------------------
// One source of defaults: the user's config.toml under each repository's
// slipway.toml, the same for both edges; what is still missing is named by
// the plan's error and hints, which is all an editor asks for.

#[test]
fn the_users_config_and_the_repositorys_defaults_decide_the_same_on_both_edges() {
    let env = TestEnv::new();
    let upstream = env.new_repo("upstream");
    env.git(
        env.path(),
        &["clone", "-q", upstream.to_str().expect("utf8"), "plain"],
    );
    let plain = env.path().join("plain").canonicalize().expect("canonical");
    env.git(
        env.path(),
        &["clone", "-q", upstream.to_str().expect("utf8"), "own"],
    );
    let own = env.path().join("own").canonicalize().expect("canonical");
    std::fs::write(
        own.join("slipway.toml"),
        "version = 2\nstrategy = \"merge-to-head\"\nsource = \"host_head\"\n",
    )
    .expect("slipway.toml");
    env.trust(&own);
    let config = env.path().join("home/.config/slipway");
    std::fs::create_dir_all(&config).expect("config dir");
    std::fs::write(
        config.join("config.toml"),
        "version = 2\nstrategy = \"branch\"\nsource = \"default\"\nagent = \"codex\"\n",
    )
    .expect("config.toml");
    let mut lsp = Lsp::start(&env, Some(&plain), false);
    let plan = |lsp: &mut Lsp, repo: &Path, cli: &[&str], arg: Value| {
        let mut full = vec!["run", "--dry-run"];
        full.extend_from_slice(cli);
        let from_cli = cli_answer(&env, repo, &full).map(|p| comparable(p)["request"].clone());
        let mut arg = arg;
        arg["root"] = json!(repo);
        arg["dryRun"] = json!(true);
        let from_lsp = match lsp.execute("slipway.run", arg) {
            Ok(answer) => Ok(comparable(portable(&answer["plan"], repo))["request"].clone()),
            Err(e) => Err(json!({ "kind": kind(&e), "actions": e["data"]["actions"] })),
        };
        assert_eq!(from_cli, from_lsp, "{cli:?}");
        from_cli
    };
    // The user's strategy is `branch`: a branch is what is missing.
    let missing = plan(&mut lsp, &plain, &[], json!({})).expect_err("a branch is missing");
    assert_eq!(missing["kind"], "invalidParams", "{missing}");
    let e = lsp.err("slipway.run", json!({ "root": plain, "dryRun": true }));
    assert_eq!(
        e["data"]["hints"],
        json!([{ "do": "give", "field": "branch" }]),
        "{e}"
    );
    // Given it, the user's source and agent apply.
    let r = plan(
        &mut lsp,
        &plain,
        &["--branch", "mine"],
        json!({ "branch": "mine" }),
    )
    .expect("a plan");
    assert_eq!(r["source"], json!({ "policy": "default" }), "{r}");
    assert_eq!(r["agent"]["type"], "codex", "{r}");
    assert_eq!(r["strategy"]["type"], "branch", "{r}");
    // The repository's own file wins where it speaks.
    let r = plan(&mut lsp, &own, &[], json!({})).expect("a plan");
    assert_eq!(r["strategy"], json!({ "type": "merge-to-head" }), "{r}");
    assert_eq!(r["source"], json!({ "policy": "host_head" }), "{r}");
    assert_eq!(r["agent"]["type"], "codex", "the user's agent: {r}");
    // A create follows the same defaults.
    let created = env.slipway_json(&plain, &["worktree", "create", "--branch", "made"]);
    assert_eq!(created["sourcePolicy"], "default", "{created}");
    let created = lsp.ok(
        "slipway.createWorktree",
        json!({ "root": plain, "branch": "made-too" }),
    );
    assert_eq!(created["sourceLabel"], "origin/main (default)", "{created}");
    // A run on an existing worktree needs no branch: the defaults are for new ones.
    let r = plan(
        &mut lsp,
        &plain,
        &["--worktree", "made"],
        json!({ "worktree": "made" }),
    )
    .expect("a plan");
    assert_eq!(r["worktree"], "made", "{r}");
}
