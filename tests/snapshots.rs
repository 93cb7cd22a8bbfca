//! What people and programs read, pinned with `insta` snapshots in the
//! hermetic environment (fixed dates, so commit ids repeat; paths written
//! `[TMP]`; run ids written `[RUN]`): the command line's error messages, the
//! sidecar's error answers for the same mistakes, a checked plan, a created
//! worktree, and the names `initialize` advertises. A snapshot that changes is
//! a change users see: review it (`cargo insta review`) in the same commit.

use crate::common;
use crate::common::lsp;

use std::path::Path;

use common::*;
use lsp::*;
use serde_json::{Value, json};

fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path("snapshots");
    s.set_prepend_module_to_snapshot(false);
    s.add_filter(r"run-\d+-[0-9a-f]+", "[RUN]");
    s.add_filter(r"process \d+ since \d+", "process [PID] since [TIME]");
    // When a record was written is the clock's; commit times are fixed.
    s.add_filter(r#""created": \d+"#, r#""created": "[TIME]""#);
    s
}

/// The mistakes both edges refuse, as each spells them.
fn mistakes() -> Vec<(&'static str, Vec<&'static str>, Value)> {
    vec![
        (
            "branch strategy without a branch",
            vec!["--strategy", "branch"],
            json!({ "strategy": "branch" }),
        ),
        (
            "a base without a branch",
            vec!["--base", "main"],
            json!({ "base": "main" }),
        ),
        (
            "head with a source",
            vec!["--strategy", "head", "--source", "default"],
            json!({ "strategy": "head", "source": { "policy": "default" } }),
        ),
        (
            "zero iterations",
            vec!["--max-iterations", "0"],
            json!({ "maxIterations": 0 }),
        ),
        (
            "a missing template argument",
            vec!["--prompt-file", "task.md"],
            json!({ "promptFile": "task.md" }),
        ),
        (
            "a built-in argument",
            vec![
                "--prompt-file",
                "task.md",
                "--arg",
                "WHO=x",
                "--arg",
                "TARGET_BRANCH=y",
            ],
            json!({ "promptFile": "task.md", "args": { "WHO": "x", "TARGET_BRANCH": "y" } }),
        ),
        (
            "an unknown worktree",
            vec!["--worktree", "nope"],
            json!({ "worktree": "nope" }),
        ),
        (
            "an unknown ref",
            vec!["--source", "named", "--ref", "nope"],
            json!({ "source": { "policy": "named", "ref": "nope" } }),
        ),
    ]
}

fn fixture(env: &TestEnv) -> std::path::PathBuf {
    let repo = env.new_repo("repo").canonicalize().expect("canonical");
    env.git(&repo, &["branch", "feature"]);
    std::fs::write(repo.join("task.md"), "Greet {{WHO}}.\n").expect("template");
    std::fs::write(repo.join(".git/info/exclude"), "task.md\n").expect("exclude");
    repo
}

/// A repository whose `slipway.toml` (a host hook and the host sandbox) nobody trusted.
fn untrusted_repo(env: &TestEnv) -> std::path::PathBuf {
    let repo = env.new_repo("hooked").canonicalize().expect("canonical");
    std::fs::write(
        repo.join("slipway.toml"),
        "version = 2\nsandbox = \"none\"\n\n[hooks.host]\non_worktree_ready = [\"make deps\"]\n",
    )
    .expect("slipway.toml");
    repo
}

fn stderr_text(env: &TestEnv, dir: &Path, args: &[&str]) -> String {
    let out = env.slipway(dir, args);
    assert!(!out.status.success(), "{args:?} should fail");
    env.normalise(String::from_utf8_lossy(&out.stderr).trim())
}

#[test]
fn cli_error_messages() {
    let env = TestEnv::new();
    let repo = fixture(&env);
    let mut text = String::new();
    for (name, args, _) in mistakes() {
        let mut full = vec!["run"];
        full.extend(args);
        full.extend(["--", "true"]);
        text.push_str(&format!(
            "# {name}\n{}\n\n",
            stderr_text(&env, &repo, &full)
        ));
    }
    let outside = env.path().join("plain");
    std::fs::create_dir_all(&outside).expect("dir");
    text.push_str(&format!(
        "# outside a repository\n{}\n\n",
        stderr_text(&env, &outside, &["branches"])
    ));
    text.push_str(&format!(
        "# an image without docker\n{}\n\n",
        stderr_text(&env, &repo, &["run", "--image", "img", "--", "true"])
    ));
    text.push_str(&format!(
        "# the command agent without a program\n{}\n\n",
        stderr_text(&env, &repo, &["run"])
    ));
    text.push_str(&format!(
        "# an untrusted slipway.toml\n{}\n",
        stderr_text(&env, &untrusted_repo(&env), &["run", "--", "true"])
    ));
    settings().bind(|| insta::assert_snapshot!("cli_error_messages", text));
}

#[test]
fn protocol_error_answers() {
    let env = TestEnv::new();
    let repo = fixture(&env);
    let mut lsp = Lsp::start(&env, Some(&repo), false);
    let mut answers = serde_json::Map::new();
    for (name, _, fields) in mistakes() {
        let mut arg = fields;
        let obj = arg.as_object_mut().expect("object");
        obj.insert("root".into(), json!(repo));
        obj.insert(
            "agent".into(),
            json!({ "type": "command", "command": ["true"] }),
        );
        obj.insert("dryRun".into(), json!(true));
        let error = lsp.err("slipway.run", arg);
        answers.insert(name.to_owned(), error);
    }
    answers.insert(
        "the command agent without a program".into(),
        lsp.err(
            "slipway.run",
            json!({ "root": repo, "agent": { "type": "command", "command": [] }, "dryRun": true }),
        ),
    );
    answers.insert(
        "an untrusted slipway.toml".into(),
        lsp.err(
            "slipway.run",
            json!({ "root": untrusted_repo(&env), "agent": { "type": "command", "command": ["true"] }, "dryRun": true }),
        ),
    );
    let text = env.normalise(&serde_json::to_string_pretty(&answers).expect("json"));
    settings().bind(|| insta::assert_snapshot!("protocol_error_answers", text));
}

#[test]
fn a_checked_plan_and_a_created_worktree() {
    let env = TestEnv::new();
    let repo = fixture(&env);
    std::fs::write(
        repo.join("slipway.toml"),
        "version = 2\nagent = \"codex\"\n\n[hooks.host]\non_worktree_ready = [\"make deps\"]\n",
    )
    .expect("slipway.toml");
    env.trust(&repo);
    let plan = env.slipway_json(
        &repo,
        &[
            "run",
            "--dry-run",
            "--branch",
            "feature",
            "--prompt-file",
            "task.md",
            "--arg",
            "WHO=you",
            "--model",
            "m1",
        ],
    );
    let created = env.slipway_json(
        &repo,
        &[
            "worktree", "create", "--branch", "fresh", "--source", "named", "--ref", "feature",
        ],
    );
    let text = env.normalise(
        &serde_json::to_string_pretty(&json!({ "plan": plan, "created": created })).expect("json"),
    );
    settings().bind(|| insta::assert_snapshot!("plan_and_created_worktree", text));
}

#[test]
fn initialize_answer() {
    let env = TestEnv::new();
    let repo = fixture(&env);
    let lsp = Lsp::start(&env, Some(&repo), false);
    let mut init = lsp.init.clone();
    // The release number changes with every release; the protocol does not.
    init["serverInfo"]["version"] = json!("[VERSION]");
    let text = serde_json::to_string_pretty(&init).expect("json");
    settings().bind(|| insta::assert_snapshot!("initialize_answer", text));
}
