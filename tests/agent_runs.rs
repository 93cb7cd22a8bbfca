//! A full run with a provider agent: a fake `claude` on PATH that speaks Claude
//! Code's stream-json, edits and commits, and records the command line it got.
//! The run captures the session id and usage; a second run resumes the session.

use crate::common;

use std::path::Path;

use common::*;

/// Installs a fake `claude` in `bin` that answers like Claude Code's stream-json.
fn fake_claude(env: &TestEnv) -> std::path::PathBuf {
    let bin = env.path().join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    let argv_log = env.path().join("claude-argv.log");
    let script = format!(
        r#"#!/bin/sh
printf '%s\n' "$*" >> '{argv}'
prompt=$(cat)
sid=11111111-2222-3333-4444-555555555555
case "$*" in *--resume*) sid=$(printf '%s' "$*" | sed 's/.*--resume \([^ ]*\).*/\1/');; esac
# Claude Code keeps the session under the project folder of its working directory.
dir="$HOME/.claude/projects/$(printf '%s' "$PWD" | sed 's/[^a-zA-Z0-9]/-/g')"
mkdir -p "$dir" && echo '{{"type":"user","cwd":"'"$PWD"'"}}' >> "$dir/$sid.jsonl"
echo '{{"type":"system","subtype":"init","session_id":"'$sid'","model":"fake"}}'
echo "$prompt" >> claude-notes.txt
git add claude-notes.txt && git commit -qm "claude: $prompt"
echo '{{"type":"assistant","message":{{"content":[{{"type":"text","text":"done"}}]}},"session_id":"'$sid'"}}'
echo '{{"type":"result","subtype":"success","is_error":false,"result":"All done. <promise>COMPLETE</promise>","session_id":"'$sid'","usage":{{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}},"total_cost_usd":0.01}}'
"#,
        argv = argv_log.display()
    );
    let path = bin.join("claude");
    std::fs::write(&path, script).expect("write fake claude");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    bin
}

fn run_with_path(env: &TestEnv, repo: &Path, bin: &Path, args: &[&str]) -> serde_json::Value {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = env
        .slipway_cmd(repo)
        .env("PATH", path)
        .arg("--json")
        .args(args)
        .output()
        .expect("slipway runs");
    assert!(
        out.status.success(),
        "run failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

#[test]
fn a_claude_code_run_captures_its_session_and_a_second_run_resumes_it() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let bin = fake_claude(&env);
    let first = run_with_path(
        &env,
        &repo,
        &bin,
        &[
            "run",
            "--agent",
            "claude-code",
            "--model",
            "sonnet",
            "--branch",
            "agent/claude",
            "--prompt",
            "fix the bug",
        ],
    );
    assert_eq!(first["sessionId"], "11111111-2222-3333-4444-555555555555");
    // `slipway runs --json` names it too: what a script resumes from.
    let runs = env.slipway_json(&repo, &["runs"]);
    assert_eq!(
        runs["runs"][0]["sessionId"], "11111111-2222-3333-4444-555555555555",
        "{runs}"
    );
    assert_eq!(first["usage"]["inputTokens"], 10);
    assert_eq!(first["usage"]["outputTokens"], 5);
    assert_eq!(first["completionSignal"], "<promise>COMPLETE</promise>");
    assert_eq!(commit_shas(&first).len(), 1);
    assert_eq!(
        env.git(&repo, &["log", "-1", "--format=%s", "agent/claude"]),
        "claude: fix the bug"
    );

    let argv = std::fs::read_to_string(env.path().join("claude-argv.log")).expect("argv log");
    let first_line = argv.lines().next().expect("one call");
    for flag in [
        "-p",
        "--output-format stream-json",
        "--verbose",
        "--model sonnet",
        "--permission-mode bypassPermissions",
    ] {
        assert!(
            first_line.contains(flag),
            "{flag} missing from: {first_line}"
        );
    }
    assert!(
        !first_line.contains("fix the bug"),
        "the prompt goes on stdin, not argv: {first_line}"
    );

    let second = run_with_path(
        &env,
        &repo,
        &bin,
        &[
            "run",
            "--agent",
            "claude-code",
            "--branch",
            "agent/claude",
            "--prompt",
            "and the docs",
            "--resume",
            "11111111-2222-3333-4444-555555555555",
        ],
    );
    assert_eq!(second["sessionId"], "11111111-2222-3333-4444-555555555555");
    let argv = std::fs::read_to_string(env.path().join("claude-argv.log")).expect("argv log");
    assert!(
        argv.lines()
            .nth(1)
            .expect("second call")
            .contains("--resume 11111111-2222-3333-4444-555555555555")
    );
    assert_eq!(
        env.git(&repo, &["log", "-1", "--format=%s", "agent/claude"]),
        "claude: and the docs"
    );
}

#[test]
fn bad_agent_options_fail_before_anything_runs() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let (_, err) = env.slipway_fail(
        &repo,
        &[
            "run",
            "--agent",
            "claude-code",
            "--model=--evil",
            "--branch",
            "x",
            "--prompt",
            "p",
        ],
    );
    assert_eq!(err["kind"], "invalidParams", "{err}");
    let (_, err) = env.slipway_fail(
        &repo,
        &[
            "run", "--agent", "command", "--model", "x", "--branch", "x", "--", "true",
        ],
    );
    assert_eq!(err["kind"], "invalidParams");
    assert_eq!(env.local_branches(&repo), vec!["main".to_owned()]);
}

/// A session file as Claude Code keeps it for `cwd` under `home`.
fn plant_claude_session(home: &Path, cwd: &Path, id: &str) {
    let encoded: String = cwd
        .display()
        .to_string()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let dir = home.join(".claude/projects").join(encoded);
    std::fs::create_dir_all(&dir).expect("session dir");
    std::fs::write(
        dir.join(format!("{id}.jsonl")),
        format!(
            "{{\"type\":\"user\",\"cwd\":\"{}\",\"marker\":\"interactive-chat-42\"}}\n",
            cwd.display()
        ),
    )
    .expect("session file");
}

#[test]
fn resuming_in_docker_hands_the_session_file_into_the_container() {
    require_docker_image();
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let created = env.slipway_json(&repo, &["worktree", "create", "--branch", "chat"]);
    let wt = Path::new(s(&created, "path")).to_path_buf();
    let id = "12345678-aaaa-4bbb-8ccc-1234567890ab";
    plant_claude_session(&env.path().join("home"), &wt, id);
    for sandbox in ["docker", "docker-isolated"] {
        let result = env.slipway_json(
            &repo,
            &[
                "run",
                "--worktree",
                "chat",
                "--sandbox",
                sandbox,
                "--image",
                "slipway-test:latest",
                "--network",
                "none",
                "--agent",
                "claude-code",
                "--resume",
                id,
                "--prompt",
                "carry on",
            ],
        );
        assert_eq!(result["sessionId"], id, "{sandbox}: {result}");
        let log = std::fs::read_to_string(s(&result, "logFile")).expect("log");
        assert!(
            log.contains("resumed") && log.contains("interactive-chat-42"),
            "{sandbox}: the fake claude found the handed-in session:\n{log}"
        );
        if sandbox == "docker-isolated" {
            // The paths inside were rewritten for the container's copy of the worktree.
            assert!(!log.contains(&format!("cwd:{}", wt.display())), "{log}");
        }
        assert_eq!(commit_shas(&result).len(), 1, "{sandbox}");
        assert_eq!(result["usage"]["inputTokens"], 7);
    }
    assert_eq!(
        env.git(&repo, &["log", "-1", "--format=%s", "chat"]),
        "claude: carry on"
    );
}

#[test]
fn a_missing_agent_cli_names_the_command_that_installs_it() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    // git and sh, and no agent CLI.
    let out = env
        .slipway_cmd(&repo)
        .env("PATH", "/usr/bin:/bin")
        .args(["--json", "run", "--agent", "claude-code", "--prompt", "hi"])
        .output()
        .expect("slipway runs");
    assert!(!out.status.success());
    let e = json_error(&out.stderr).expect("a JSON error");
    assert_eq!(e["kind"], "agentNotInstalled", "{e}");
    let message = s(&e, "message");
    assert!(
        message.contains("`claude`")
            && message.contains("npm install -g @anthropic-ai/claude-code"),
        "{message}"
    );
    // Nothing of the run is left: the worktree went with it.
    assert_eq!(env.local_branches(&repo), ["main"]);
}
