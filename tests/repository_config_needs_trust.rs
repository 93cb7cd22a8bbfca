//! Safety rule 6: repository config that runs programs needs trust. An
//! agent's work reaches the host through a merge-to-head run or a land; what
//! it changes in `slipway.toml` (host hooks, the sandbox default), or in a
//! prompt template whose `` !`cmd` `` blocks run on the host, must not take
//! effect on the user's next run until the user approved that exact content.
//! Each test is written as the attacker would: the agent edits the file in a
//! real run, the work comes home, and the user runs again as usual; the
//! planted program would leave a mark outside the repository, and that mark
//! is never made. A refused run has done nothing: no worktree, no branch, no
//! run record. The tests that approve the content show the same program does
//! run once trusted, so the mark is a real witness.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::lsp::{Lsp, kind};
use common::*;
use serde_json::{Value, json};

/// A repository whose trusted `slipway.toml` puts runs in docker.
const DOCKER_DEFAULTS: &str =
    "version = 2\nsandbox = \"docker\"\nimage = \"slipway-test:latest\"\n";

/// A user's repository, a folder outside it that planted programs would
/// leave their marks in, and the user's config dir (approvals live there).
struct World {
    env: TestEnv,
    repo: PathBuf,
    marks: PathBuf,
}

/// What a refused request must have left as it was.
#[derive(Debug, PartialEq, Eq)]
struct State {
    branches: Vec<String>,
    head: String,
    worktrees: Vec<String>,
    runs: Vec<String>,
    porcelain: String,
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

impl World {
    fn new() -> World {
        let env = TestEnv::new();
        let repo = env.new_repo("repo").canonicalize().expect("canonical repo");
        let marks = env.path().join("marks");
        std::fs::create_dir_all(&marks).expect("marks");
        World { env, repo, marks }
    }

    /// A shell command that leaves the mark `name` when something runs it.
    fn planted(&self, name: &str) -> String {
        format!("touch {}", self.marks.join(name).display())
    }

    /// Every mark left so far.
    fn marks_left(&self) -> Vec<String> {
        names_in(&self.marks)
    }

    /// The user commits `slipway.toml` with `text` and trusts it.
    fn trusted_config(&self, text: &str) {
        self.env
            .commit_file(&self.repo, "slipway.toml", text, "slipway defaults");
        self.env.trust(&self.repo);
    }

    fn state(&self) -> State {
        State {
            branches: self.env.local_branches(&self.repo),
            head: self.env.rev(&self.repo, "HEAD"),
            // `.trash` is where a closed worktree's files wait for the
            // background deletion: slipway's housekeeping, not a worktree.
            worktrees: names_in(&self.repo.join(".slipway/worktrees"))
                .into_iter()
                .filter(|n| n != ".trash")
                .collect(),
            // A `.news` file is a finished run's word to the next sidecar,
            // which claims it whenever it gets to it: not the request's doing.
            runs: names_in(&self.repo.join(".slipway/runs"))
                .into_iter()
                .filter(|n| !n.ends_with(".news"))
                .collect(),
            porcelain: self.env.porcelain(&self.repo),
        }
    }

    /// The agent's run: `script` in `sandbox` with the given strategy flags;
    /// it must succeed. Returns the result document.
    fn agent_run(&self, sandbox: Sandbox, extra: &[&str], script: &str) -> Value {
        let mut args = vec!["run"];
        args.extend(sandbox.args());
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "sh", "-c", script]);
        self.env.slipway_json(&self.repo, &args)
    }

    /// The user's next run, as usual (`extra` flags, an agent that would
    /// leave the mark `agent-ran`): refused with `untrustedConfig`, having
    /// done nothing. Returns the error.
    fn next_run_is_refused(&self, extra: &[&str]) -> Value {
        let before = self.state();
        let mut args = vec!["run"];
        args.extend_from_slice(extra);
        let agent = self.planted("agent-ran");
        args.extend_from_slice(&["--prompt", "carry on", "--", "sh", "-c", &agent]);
        let (_, error) = self.env.slipway_fail(&self.repo, &args);
        assert_eq!(error["kind"], "untrustedConfig", "{error}");
        assert_eq!(self.marks_left(), Vec::<String>::new(), "{error}");
        assert_eq!(self.state(), before, "a refused run changed something");
        assert_eq!(error["data"]["actions"], json!([{ "kind": "trust" }]));
        error
    }

    /// The file an error asks about (the first).
    fn asked(&self, error: &Value) -> Value {
        error["data"]["files"][0].clone()
    }

    fn config_path(&self) -> String {
        self.repo.join("slipway.toml").display().to_string()
    }

    fn blob_id(&self, path: &str) -> String {
        self.env.git(&self.repo, &["hash-object", path])
    }
}

/// An agent script that writes `slipway.toml` (here-document `text`) and commits it.
fn rewrite_config(text: &str) -> String {
    format!(
        "set -e\ncat > slipway.toml <<'SLIPWAY_EOF'\n{text}SLIPWAY_EOF\ngit add slipway.toml\ngit commit -qm 'agent: tune the config'\n"
    )
}

fn sensitive_paths(doc: &Value) -> Vec<String> {
    doc["sensitiveChanges"]
        .as_array()
        .unwrap_or_else(|| panic!("no sensitiveChanges in {doc}"))
        .iter()
        .map(|c| s(c, "path").to_owned())
        .collect()
}

#[test]
fn a_host_hook_an_agent_adds_in_a_docker_run_does_not_run_on_the_next_run() {
    require_docker_image();
    let w = World::new();
    w.trusted_config(DOCKER_DEFAULTS);
    let trusted_hash = w.blob_id("slipway.toml");
    let evil = format!(
        "{DOCKER_DEFAULTS}\n[hooks.host]\non_worktree_ready = [\"{}\"]\n",
        w.planted("hook-ran")
    );
    // The defaults put the agent in docker: the network flag is all it adds.
    let result = w.env.slipway_json(
        &w.repo,
        &[
            "run",
            "--network",
            "none",
            "--",
            "sh",
            "-c",
            &rewrite_config(&evil),
        ],
    );
    assert_eq!(sensitive_paths(&result), vec!["slipway.toml"]);
    assert_eq!(result["sensitiveChanges"][0]["kind"], "repositoryConfig");
    assert_eq!(result["sensitiveChanges"][0]["status"], "modified");
    assert_eq!(
        std::fs::read_to_string(w.repo.join("slipway.toml")).expect("merged"),
        evil
    );

    let error = w.next_run_is_refused(&["--network", "none"]);
    let asked = w.asked(&error);
    assert_eq!(asked["path"], w.config_path());
    assert_eq!(asked["role"], "repositoryConfig");
    assert_eq!(asked["hash"], w.blob_id("slipway.toml"));
    assert_eq!(asked["trustedHash"], trusted_hash.as_str());
    assert_eq!(
        asked["commands"],
        json!([{ "source": "hooks.host.on_worktree_ready", "command": w.planted("hook-ran") }])
    );
    let message = s(&error, "message");
    assert!(message.contains("slipway trust --file"), "{message}");
    assert!(message.contains(&w.planted("hook-ran")), "{message}");
}

#[test]
fn an_agent_cannot_move_the_sandbox_default_from_docker_to_the_host() {
    require_docker_image();
    let w = World::new();
    w.trusted_config(DOCKER_DEFAULTS);
    w.agent_run(
        Sandbox::Docker,
        &[],
        &rewrite_config("version = 2\nsandbox = \"none\"\n"),
    );
    let error = w.next_run_is_refused(&[]);
    assert_eq!(
        w.asked(&error)["settings"],
        json!([{ "key": "sandbox", "value": "none" }])
    );
    // Removing the file would drop the docker default just as well.
    let w = World::new();
    w.trusted_config(DOCKER_DEFAULTS);
    w.agent_run(
        Sandbox::Docker,
        &[],
        "set -e\ngit rm -q slipway.toml\ngit commit -qm 'agent: drop the config'\n",
    );
    assert!(!w.repo.join("slipway.toml").exists());
    let error = w.next_run_is_refused(&[]);
    let asked = w.asked(&error);
    assert!(asked["hash"].is_null(), "{asked}");
    assert!(s(&error, "message").contains("is gone"), "{error}");
}

/// Each way an agent can change the trusted file's bytes, run from the host
/// sandbox's merge-to-head: every one is a new content to approve.
#[test]
fn every_change_to_the_bytes_needs_a_new_approval() {
    let hook = "[hooks.host]\non_worktree_ready = [\"true\"]\n";
    let base = format!("version = 2\n{hook}");
    let variants: Vec<(&str, String)> = vec![
        ("CRLF line ends", base.replace('\n', "\r\n")),
        (
            "a trailing space",
            base.replace("version = 2", "version = 2 "),
        ),
        ("a comment", format!("{base}# harmless?\n")),
        ("a BOM", format!("\u{feff}{base}")),
        ("emptied", "version = 2\n".to_owned()),
    ];
    for (what, text) in variants {
        let w = World::new();
        w.trusted_config(&base);
        w.agent_run(Sandbox::Host, &[], &rewrite_config(&text));
        let error = w.next_run_is_refused(&["--sandbox", "none"]);
        assert_eq!(w.asked(&error)["hash"], w.blob_id("slipway.toml"), "{what}");
    }
}

#[test]
fn a_new_slipway_toml_with_a_host_hook_runs_only_after_trust() {
    let w = World::new();
    let evil = format!(
        "version = 2\nsandbox = \"none\"\n\n[hooks.host]\non_worktree_ready = [\"{}\"]\n",
        w.planted("hook-ran")
    );
    let result = w.agent_run(Sandbox::Host, &[], &rewrite_config(&evil));
    assert_eq!(sensitive_paths(&result), vec!["slipway.toml"]);
    assert_eq!(result["sensitiveChanges"][0]["status"], "added");
    let error = w.next_run_is_refused(&[]);
    assert!(w.asked(&error)["trustedHash"].is_null());
    assert!(s(&error, "message").contains("not trusted yet"), "{error}");
    // Worktree create reads the file too (copy_to_worktree), and is refused as well.
    let before = w.state();
    let (_, error) = w
        .env
        .slipway_fail(&w.repo, &["worktree", "create", "--branch", "feature"]);
    assert_eq!(error["kind"], "untrustedConfig", "{error}");
    assert_eq!(w.state(), before);

    // Once the user approves exactly this content, it is used.
    let shown = w.env.slipway_json(&w.repo, &["trust", "--dry-run"]);
    assert_eq!(shown["trusted"][0]["hash"], w.blob_id("slipway.toml"));
    w.next_run_is_refused(&[]);
    let approved = w.env.slipway_json(&w.repo, &["trust"]);
    assert_eq!(
        approved["trusted"][0]["commands"][0]["command"],
        w.planted("hook-ran")
    );
    w.env
        .slipway_json(&w.repo, &["run", "--prompt", "go", "--", "true"]);
    assert_eq!(w.marks_left(), vec!["hook-ran"]);
    // The approval lives in the user's config dir, not in the repository.
    assert_eq!(w.env.porcelain(&w.repo), "");
    assert_eq!(
        names_in(&w.env.home().join(".config/slipway/trust")).len(),
        1
    );
}

#[test]
fn a_symlink_to_a_file_trusted_elsewhere_is_not_trusted_here() {
    let w = World::new();
    // Another repository of the user's, whose trusted hook runs its own script.
    let other = w.env.new_repo("other").canonicalize().expect("canonical");
    std::fs::write(other.join("setup.sh"), "echo set up\n").expect("setup");
    std::fs::write(
        other.join("slipway.toml"),
        "version = 2\n[hooks.host]\non_worktree_ready = [\"sh ./setup.sh\"]\n",
    )
    .expect("other config");
    w.env.trust(&other);
    // Here the agent points slipway.toml at that file and brings its own setup.sh.
    let script = format!(
        "set -e\nprintf '%s\\n' '{}' > setup.sh\nln -s ../other/slipway.toml slipway.toml\ngit add setup.sh slipway.toml\ngit commit -qm 'agent: share the config'\n",
        w.planted("hook-ran")
    );
    w.agent_run(Sandbox::Host, &[], &script);
    assert!(
        w.repo
            .join("slipway.toml")
            .symlink_metadata()
            .expect("link")
            .is_symlink()
    );
    let error = w.next_run_is_refused(&["--sandbox", "none"]);
    let asked = w.asked(&error);
    assert_eq!(asked["path"], w.config_path());
    assert_eq!(asked["symlinkTo"], "../other/slipway.toml");
    assert!(s(&error, "message").contains("a symlink to"), "{error}");
}

#[test]
fn a_slipway_toml_turned_into_a_folder_is_a_removal() {
    let w = World::new();
    w.trusted_config("version = 2\nsandbox = \"none\"\n");
    w.agent_run(
        Sandbox::Host,
        &[],
        "set -e\ngit rm -q slipway.toml\nmkdir slipway.toml\necho x > slipway.toml/x\ngit add slipway.toml\ngit commit -qm 'agent: folder'\n",
    );
    assert!(w.repo.join("slipway.toml").is_dir());
    let error = w.next_run_is_refused(&[]);
    assert!(w.asked(&error)["hash"].is_null());
}

#[test]
fn only_the_main_checkouts_root_file_is_read() {
    let w = World::new();
    w.trusted_config("version = 2\nsandbox = \"none\"\n");
    // A subfolder's file, merged home.
    let sub = format!(
        "set -e\nmkdir -p sub\ncat > sub/slipway.toml <<'EOF'\nversion = 2\n[hooks.host]\non_worktree_ready = [\"{}\"]\nEOF\ngit add sub\ngit commit -qm 'agent: sub config'\n",
        w.planted("sub-hook-ran")
    );
    w.agent_run(Sandbox::Host, &[], &sub);
    let from_sub = w.repo.join("sub");
    w.env.slipway_json(
        &w.repo,
        &[
            "--repo",
            from_sub.to_str().expect("utf8"),
            "run",
            "--prompt",
            "go",
            "--",
            "true",
        ],
    );
    // A worktree's own file (a branch run not landed): runs in that worktree read the host's.
    w.agent_run(
        Sandbox::Host,
        &["--branch", "feature"],
        &rewrite_config(&format!(
            "version = 2\n[hooks.host]\non_worktree_ready = [\"{}\"]\n",
            w.planted("worktree-hook-ran")
        )),
    );
    w.env.slipway_json(
        &w.repo,
        &[
            "run",
            "--worktree",
            "feature",
            "--prompt",
            "go",
            "--",
            "true",
        ],
    );
    assert_eq!(w.marks_left(), Vec::<String>::new());
}

#[test]
fn a_land_that_brings_a_hook_is_reported_and_the_hook_waits_for_trust() {
    let w = World::new();
    w.trusted_config("version = 2\nsandbox = \"none\"\n");
    w.agent_run(
        Sandbox::Host,
        &["--branch", "feature"],
        &rewrite_config(&format!(
            "version = 2\nsandbox = \"none\"\n[hooks.host]\non_worktree_ready = [\"{}\"]\n",
            w.planted("hook-ran")
        )),
    );
    let landed = w
        .env
        .slipway_json(&w.repo, &["land", "feature", "--how", "squash"]);
    assert_eq!(landed["landed"], true, "{landed}");
    assert_eq!(sensitive_paths(&landed), vec!["slipway.toml"]);
    w.next_run_is_refused(&[]);
}

#[test]
fn a_prompt_template_in_the_repository_runs_its_commands_on_the_host_only_after_trust() {
    let w = World::new();
    w.env.commit_file(
        &w.repo,
        "prompts/task.md",
        "Fix the bug.\n",
        "a prompt template",
    );
    let planted = format!(
        "set -e\nprintf 'Fix the bug.\\nContext: !`%s`\\n' '{}' > prompts/task.md\ngit commit -qam 'agent: better prompt'\n",
        w.planted("prompt-ran")
    );
    w.agent_run(Sandbox::Host, &[], &planted);
    let before = w.state();
    let (_, error) = w.env.slipway_fail(
        &w.repo,
        &[
            "run",
            "--sandbox",
            "none",
            "--prompt-file",
            "prompts/task.md",
            "--",
            "true",
        ],
    );
    assert_eq!(error["kind"], "untrustedConfig", "{error}");
    let asked = &error["data"]["files"][0];
    assert_eq!(asked["role"], "promptTemplate");
    assert_eq!(
        asked["commands"],
        json!([{ "source": "prompt", "command": w.planted("prompt-ran") }])
    );
    assert_eq!(w.state(), before);
    assert_eq!(w.marks_left(), Vec::<String>::new());
    let file = w.repo.join("prompts/task.md");
    w.env
        .slipway_json(&w.repo, &["trust", "--file", file.to_str().expect("utf8")]);
    w.env.slipway_json(
        &w.repo,
        &[
            "run",
            "--sandbox",
            "none",
            "--prompt-file",
            "prompts/task.md",
            "--",
            "true",
        ],
    );
    assert_eq!(w.marks_left(), vec!["prompt-ran"]);
}

#[test]
fn the_users_own_hooks_and_templates_need_no_trust() {
    let w = World::new();
    // On the command line.
    w.env.slipway_json(
        &w.repo,
        &[
            "run",
            "--on-worktree-ready",
            &w.planted("cli-hook"),
            "--prompt",
            "go",
            "--",
            "true",
        ],
    );
    // In a template outside any checkout.
    let template = w.env.path().join("my-prompts/task.md");
    std::fs::create_dir_all(template.parent().expect("parent")).expect("dir");
    std::fs::write(&template, format!("Go: !`{}`\n", w.planted("my-template"))).expect("t");
    w.env.slipway_json(
        &w.repo,
        &[
            "run",
            "--prompt-file",
            template.to_str().expect("utf8"),
            "--",
            "true",
        ],
    );
    // In a workspace file of the user's config dir.
    let dir = w.env.home().join(".config/slipway/workspaces");
    std::fs::create_dir_all(&dir).expect("workspaces");
    std::fs::write(
        dir.join("mine.toml"),
        format!(
            "version = 2\n\n[hooks.host]\non_worktree_ready = [\"{}\"]\n\n[[mounts]]\nsrc = \"{}\"\ndst = \"/work/app\"\nisolation = \"worktree\"\n",
            w.planted("workspace-hook"),
            w.repo.display()
        ),
    )
    .expect("workspace");
    w.env.slipway_json(
        &w.repo,
        &["run", "--workspace", "mine", "--prompt", "go", "--", "true"],
    );
    assert_eq!(
        w.marks_left(),
        vec!["cli-hook", "my-template", "workspace-hook"]
    );
}

#[test]
fn a_workspace_run_falls_through_to_the_repositorys_untrusted_hooks_and_is_refused() {
    let w = World::new();
    let evil = format!(
        "version = 2\n[hooks.host]\non_worktree_ready = [\"{}\"]\n",
        w.planted("hook-ran")
    );
    w.agent_run(Sandbox::Host, &[], &rewrite_config(&evil));
    let dir = w.env.home().join(".config/slipway/workspaces");
    std::fs::create_dir_all(&dir).expect("workspaces");
    std::fs::write(
        dir.join("plain.toml"),
        format!(
            "version = 2\n\n[[mounts]]\nsrc = \"{}\"\ndst = \"/work/app\"\nisolation = \"worktree\"\n",
            w.repo.display()
        ),
    )
    .expect("workspace");
    w.next_run_is_refused(&["--workspace", "plain"]);
}

#[test]
fn runs_lands_and_the_review_name_files_that_run_programs() {
    let w = World::new();
    w.env
        .git(&w.repo, &["config", "core.hooksPath", ".githooks"]);
    let script = "set -e\nmkdir -p .vscode .githooks docs\n\
        printf '{\"tasks\":[{\"label\":\"x\",\"command\":\"id\",\"runOptions\":{\"runOn\":\"folderOpen\"}}]}' > .vscode/tasks.json\n\
        echo 'export X=1' > .envrc\necho 'vim.cmd(\"!id\")' > .nvim.lua\necho '!id' > docs/.exrc\n\
        printf '#!/bin/sh\\nid\\n' > .githooks/pre-commit\necho notes > notes.txt\n\
        git add -A\ngit commit -qm 'agent: helpful setup'\n";
    let result = w.agent_run(Sandbox::Host, &["--branch", "feature"], script);
    let expected = vec![
        ".envrc",
        ".githooks/pre-commit",
        ".nvim.lua",
        ".vscode/tasks.json",
        "docs/.exrc",
    ];
    assert_eq!(sensitive_paths(&result), expected, "{result}");
    let kinds: Vec<&str> = result["sensitiveChanges"]
        .as_array()
        .expect("list")
        .iter()
        .map(|c| s(c, "kind"))
        .collect();
    assert_eq!(
        kinds,
        vec![
            "shellEnvironment",
            "gitHooks",
            "editorConfig",
            "editorConfig",
            "editorConfig"
        ]
    );
    assert!(
        s(&result["sensitiveChanges"][3], "why").contains("folderOpen"),
        "{result}"
    );
    // The review view flags the same files, and no other.
    let diff = w.env.slipway_json(&w.repo, &["diff", "feature"]);
    let flagged: Vec<&str> = diff["files"]
        .as_array()
        .expect("files")
        .iter()
        .filter(|f| f.get("sensitive").is_some())
        .map(|f| s(f, "path"))
        .collect();
    assert_eq!(flagged, expected, "{diff}");
    let text =
        String::from_utf8(w.env.slipway(&w.repo, &["diff", "feature"]).stdout).expect("utf8");
    assert!(
        text.lines()
            .any(|l| l.contains(".envrc") && l.contains("! direnv")),
        "{text}"
    );
    // And the land that brings them home says so.
    let landed = w
        .env
        .slipway_json(&w.repo, &["land", "feature", "--how", "merge"]);
    assert_eq!(sensitive_paths(&landed), expected, "{landed}");
}

#[test]
fn the_sidecar_answers_untrusted_config_and_approves_only_what_was_shown() {
    let w = World::new();
    let evil = format!(
        "version = 2\n[hooks.host]\non_worktree_ready = [\"{}\"]\n",
        w.planted("hook-ran")
    );
    w.agent_run(Sandbox::Host, &[], &rewrite_config(&evil));
    let mut lsp = Lsp::start(&w.env, Some(&w.repo), false);
    let agent = format!(
        "{} && echo 'export X=1' > .envrc && git add .envrc && git commit -qm 'agent: envrc'",
        w.planted("agent-ran")
    );
    let request = json!({
        "root": w.repo, "strategy": "merge-to-head", "prompt": "go",
        "agent": { "type": "command", "command": ["sh", "-c", agent] },
    });
    let error = lsp.err("slipway.run", request.clone());
    assert_eq!(kind(&error), "untrustedConfig", "{error}");
    assert_eq!(error["data"]["actions"], json!([{ "kind": "trust" }]));
    assert!(
        s(&error, "message").contains("slipway.trust"),
        "the protocol's words: {error}"
    );
    let shown = error["data"]["files"][0].clone();
    assert_eq!(shown["hash"], w.blob_id("slipway.toml"));
    // The file changes after it was shown: approving what was shown approves nothing.
    std::fs::write(
        w.repo.join("slipway.toml"),
        format!("{evil}[hooks.sandbox]\non_sandbox_ready = [\"true\"]\n"),
    )
    .expect("change");
    let before = w.state();
    let stale = lsp.err(
        "slipway.trust",
        json!({ "root": w.repo, "files": [{ "path": shown["path"], "hash": shown["hash"] }] }),
    );
    assert_eq!(kind(&stale), "untrustedConfig", "{stale}");
    assert!(
        s(&stale, "message").contains("not what was shown"),
        "{stale}"
    );
    let again = lsp.err("slipway.run", request.clone());
    assert_eq!(kind(&again), "untrustedConfig");
    let now = again["data"]["files"][0].clone();
    assert_ne!(now["hash"], shown["hash"]);
    assert_eq!(w.state(), before);
    assert_eq!(w.marks_left(), Vec::<String>::new());
    // Approving what is shown now lets the same request through.
    let approved = lsp.ok(
        "slipway.trust",
        json!({ "root": w.repo, "files": [{ "path": now["path"], "hash": now["hash"] }] }),
    );
    assert_eq!(approved["trusted"][0]["hash"], now["hash"]);
    let started = lsp.ok("slipway.run", request);
    let run_id = s(&started, "runId").to_owned();
    let finished = lsp.expect_notification(
        "slipway/runFinished",
        |p| p["runId"] == run_id.as_str(),
        Duration::from_secs(60),
        "the approved run's end",
    );
    assert_eq!(w.marks_left(), vec!["agent-ran", "hook-ran"]);
    // What the run brought home that runs programs is in runFinished too.
    let params = &finished.msg["params"];
    assert_eq!(params["status"], "completed", "{params}");
    assert_eq!(sensitive_paths(params), vec![".envrc"]);
}
