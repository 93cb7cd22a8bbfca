//! Runs that end asking the user (`needsInput`) and the replies that answer
//! them (`slipway reply`): the question recognised in what the agent said,
//! its work brought back as usual, its worktree kept, and the reply resuming
//! the same session there as a new run whose record names the one it answers.
//! With the `command` agent (its last line asks) and with the real Claude
//! Code and Codex CLIs against the scripted model; and the typed errors.

use crate::common;

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use common::agents::{AgentWorld, output_within};
use common::model_server::{FINAL_TEXT, Script, Turn};
use common::*;

const QUESTION: &str = "Should I also add a test for it, or do you want to keep the change small?";
const ANSWER: &str = "Yes, add a test.";
const RUN_LIMIT: Duration = Duration::from_secs(180);

/// A command agent that commits, and then asks unless its prompt is the answer.
fn asking_agent(env: &TestEnv) -> String {
    env.script(
        "asker",
        &format!(
            r#"set -e
if [ "$SLIPWAY_PROMPT" = "{ANSWER}" ]; then
  echo test >> test.txt && git add test.txt && git commit -q -m 'agent: the test'
  echo "Added the test."
else
  echo work >> work.txt && git add work.txt && git commit -q -m 'agent: the work'
  echo "Done with the work."
  echo
  echo "{QUESTION}"
fi
"#
        ),
    )
    .display()
    .to_string()
}

/// `slipway --json reply RUN ANSWER` in `dir`: its result, or its error.
fn reply(env: &TestEnv, dir: &Path, run: &str, answer: &str) -> Result<Value, Value> {
    let out = output_within(
        {
            let mut cmd = env.slipway_cmd(dir);
            cmd.args(["--json", "reply", run, answer]);
            cmd
        },
        RUN_LIMIT,
    );
    if let Some(error) = json_error(&out.stderr).filter(|_| out.stdout.is_empty()) {
        return Err(error);
    }
    Ok(serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "slipway reply printed no result ({e}):\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }))
}

/// A new repository and a run of [`asking_agent`] in it with `strategy`
/// (`--strategy` or `--branch` and its value): it must end `needsInput`.
fn asked(strategy: [&str; 2]) -> (TestEnv, std::path::PathBuf, Value) {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let agent = asking_agent(&env);
    let mut args = vec!["--json", "run"];
    args.extend(strategy);
    args.extend(["--prompt", "Do the work.", "--", &agent]);
    let (_, first, log) = env.run_result(&repo, &args);
    assert_eq!(first["status"], "needsInput", "{first}\n{log}");
    (env, repo, first)
}

/// The record of `run` under `.slipway/runs/`.
fn record(repo: &Path, run: &str) -> Value {
    let path = repo.join(".slipway/runs").join(format!("{run}.json"));
    serde_json::from_slice(&std::fs::read(&path).expect("run record")).expect("record JSON")
}

#[test]
fn a_command_agent_that_asks_ends_needs_input_and_the_reply_finishes_in_its_worktree() {
    let (env, repo, first) = asked(["--strategy", "merge-to-head"]);
    assert_eq!(first["question"]["text"], QUESTION, "{first}");
    assert_eq!(first["question"]["reason"], "asked", "{first}");
    assert!(first["error"].is_null(), "{first}");
    // The work so far came home as usual, and the worktree waits for the reply.
    assert_eq!(commit_shas(&first).len(), 1, "{first}");
    assert_eq!(env.rev(&repo, "main"), commit_shas(&first)[0]);
    let worktree = s(&first, "worktreePath").to_owned();
    assert!(Path::new(&worktree).is_dir(), "the worktree is kept");
    let run_id = s(&first, "runId").to_owned();

    let runs = env.slipway_json(&repo, &["runs"]);
    let listed = &runs["runs"][0];
    assert_eq!(listed["status"], "needsInput", "{runs}");
    assert_eq!(listed["question"]["text"], QUESTION, "{runs}");
    let text = String::from_utf8_lossy(&env.slipway(&repo, &["runs"]).stdout).into_owned();
    assert!(text.contains(&format!("asks: {QUESTION}")), "{text}");

    let second = reply(&env, &repo, &run_id, ANSWER).expect("the reply runs");
    assert_eq!(second["status"], "completed", "{second}");
    assert_eq!(second["replyTo"], run_id.as_str(), "{second}");
    assert_eq!(
        second["worktreePath"],
        worktree.as_str(),
        "the same worktree"
    );
    assert_eq!(commit_shas(&second).len(), 1, "{second}");
    assert_eq!(
        env.git(&repo, &["log", "--format=%s", "main"]),
        "agent: the test\nagent: the work\ninitial commit",
        "both runs' commits are on main"
    );
    assert!(
        !Path::new(&worktree).exists(),
        "the reply finished the merge-to-head worktree as the first run would have"
    );
    assert_eq!(
        record(&repo, s(&second, "runId"))["replyTo"],
        run_id.as_str()
    );

    // Answered once: a second reply is refused.
    let again = reply(&env, &repo, &run_id, ANSWER).expect_err("answered already");
    assert_eq!(again["kind"], "notWaitingForInput", "{again}");
}

/// A script can tell an agent that asks from one that is done: `slipway
/// run` exits 6, and the reply command it prints works as printed, once the
/// answer is put in.
#[test]
fn a_run_that_asks_exits_6_and_its_printed_next_step_answers_it() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let agent = asking_agent(&env);
    let out = env.slipway(
        &repo,
        &[
            "run",
            "--branch",
            "asked",
            "--prompt",
            "Do the work.",
            "--",
            &agent,
        ],
    );
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(6), "{shown}\n{out:?}");
    let hint = shown
        .lines()
        .find_map(|l| l.trim().strip_prefix("answer with: slipway "))
        .unwrap_or_else(|| panic!("no reply command: {shown}"));
    let mut args: Vec<String> = hint.split_whitespace().map(str::to_owned).collect();
    assert_eq!(args.first().map(String::as_str), Some("reply"), "{hint}");
    assert_eq!(args.last().map(String::as_str), Some("\"…\""), "{hint}");
    *args.last_mut().expect("an answer placeholder") = ANSWER.to_owned();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let answered = env.slipway(&repo, &args);
    assert_eq!(answered.status.code(), Some(0), "{answered:?}");
    assert_eq!(
        env.git(&repo, &["log", "--format=%s", "asked"]),
        "agent: the test\nagent: the work\ninitial commit"
    );
}

#[test]
fn replies_that_cannot_be_sent_are_typed_errors() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let unknown = reply(&env, &repo, "run-1-abc", ANSWER).expect_err("no such run");
    assert_eq!(unknown["kind"], "unknownRun", "{unknown}");
    let malformed = reply(&env, &repo, "../x", ANSWER).expect_err("not an id");
    assert_eq!(malformed["kind"], "invalidParams", "{malformed}");

    let done = env.script("done", "echo all done\n");
    let (_, completed, _) = env.run_result(
        &repo,
        &[
            "--json",
            "run",
            "--branch",
            "b",
            "--prompt",
            "x",
            "--",
            &done.display().to_string(),
        ],
    );
    assert_eq!(completed["status"], "completed", "{completed}");
    let refused = reply(&env, &repo, s(&completed, "runId"), ANSWER).expect_err("not asking");
    assert_eq!(refused["kind"], "notWaitingForInput", "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .is_some_and(|m| m.contains("completed")),
        "{refused}"
    );

    // A run of an agent that keeps sessions, whose record names none: the
    // reply cannot resume it (the record is edited as an older run left it).
    let agent = asking_agent(&env);
    let (_, asked, _) = env.run_result(
        &repo,
        &[
            "--json", "run", "--branch", "c", "--prompt", "x", "--", &agent,
        ],
    );
    assert_eq!(asked["status"], "needsInput", "{asked}");
    let run_id = s(&asked, "runId");
    let path = repo.join(".slipway/runs").join(format!("{run_id}.json"));
    let mut edited = record(&repo, run_id);
    edited["resumable"]["agent"] = serde_json::json!({"type": "claude-code"});
    std::fs::write(&path, edited.to_string()).expect("edit the record");
    let none = reply(&env, &repo, run_id, ANSWER).expect_err("no session");
    assert_eq!(none["kind"], "noSessionToResume", "{none}");
    let empty = reply(&env, &repo, run_id, "  ").expect_err("empty answer");
    assert_eq!(empty["kind"], "invalidParams", "{empty}");
}

/// The real CLI: a run whose model commits and then asks ends `needsInput`;
/// the reply continues the same session (the model sees the question and the
/// answer in one conversation), commits, and chains to the first run.
fn real_agent_asks_and_the_reply_resumes_the_session(agent: &str) {
    let world = AgentWorld::new(
        agent,
        Script::CommitThenSay(format!("I committed hello.txt.\n\n{QUESTION}")),
    );
    let (first, error) = world.run(
        &[
            "--strategy",
            "merge-to-head",
            "--idle-timeout",
            "120",
            "--prompt",
            "Create hello.txt and commit it.",
        ],
        RUN_LIMIT,
    );
    let log = AgentWorld::log_of(&first);
    assert!(error.is_none(), "{agent}: {error:?}\n{first}\n{log}");
    assert_eq!(
        first["status"],
        "needsInput",
        "{agent}: {first}\n{log}\n{}",
        world.server.describe()
    );
    assert_eq!(first["question"]["text"], QUESTION, "{agent}: {first}");
    let session = s(&first, "sessionId").to_owned();
    assert_eq!(first["question"]["sessionId"], session.as_str(), "{first}");
    assert_eq!(commit_shas(&first).len(), 1, "{agent}: {first}\n{log}");
    let run_id = s(&first, "runId").to_owned();

    world.server.clear_log();
    world.server.set_script(Script::EditAndCommit);
    let second = reply(&world.env, &world.repo, &run_id, ANSWER)
        .unwrap_or_else(|e| panic!("{agent}: the reply was refused: {e}"));
    let log = AgentWorld::log_of(&second);
    assert_eq!(
        second["status"],
        "completed",
        "{agent}: {second}\n{log}\n{}",
        world.server.describe()
    );
    assert_eq!(second["finalText"], FINAL_TEXT, "{second}");
    assert_eq!(
        second["sessionId"],
        session.as_str(),
        "{agent}: the same session"
    );
    assert_eq!(second["replyTo"], run_id.as_str(), "{second}");
    assert_eq!(
        second["worktreePath"], first["worktreePath"],
        "the same worktree"
    );
    let opening = world
        .server
        .model_requests()
        .into_iter()
        .find(|e| e.turn == Some(Turn::Opening))
        .unwrap_or_else(|| panic!("{agent} never asked the model:\n{log}"))
        .body
        .to_string();
    assert!(
        opening.contains(ANSWER)
            && opening.contains(QUESTION)
            && opening.contains("agent: hello 1"),
        "{agent}: the answer reached the model in the conversation that asked:\n{opening}"
    );
    assert_eq!(
        world.env.git(&world.repo, &["log", "--format=%s", "main"]),
        "agent: hello 2\nagent: hello 1\ninitial commit",
        "{agent}: both runs' commits are on main"
    );
    assert_eq!(
        record(&world.repo, s(&second, "runId"))["replyTo"],
        run_id.as_str()
    );
}

#[test]
fn claude_code_asks_and_the_reply_resumes_the_session() {
    real_agent_asks_and_the_reply_resumes_the_session("claude-code");
}

#[test]
fn codex_asks_and_the_reply_resumes_the_session() {
    real_agent_asks_and_the_reply_resumes_the_session("codex");
}

#[test]
fn opencode_asks_and_the_reply_resumes_the_session() {
    real_agent_asks_and_the_reply_resumes_the_session("opencode");
}

#[test]
fn pi_asks_and_the_reply_resumes_the_session() {
    real_agent_asks_and_the_reply_resumes_the_session("pi");
}

#[test]
fn copilot_asks_and_the_reply_resumes_the_session() {
    real_agent_asks_and_the_reply_resumes_the_session("copilot");
}

#[test]
fn denied_permissions_are_read_from_the_claude_code_and_codex_streams() {
    use slipway_core::agent::{AgentEvent, AgentSpec};
    let build = |v: Value| -> Box<dyn slipway_core::agent::Agent> {
        serde_json::from_value::<AgentSpec>(v)
            .expect("spec")
            .build()
            .expect("builds")
    };
    let claude = build(serde_json::json!({"type": "claude-code"}));
    let line = r#"{"type":"result","subtype":"success","is_error":false,"result":"I need permission to run that.","session_id":"s1","permission_denials":[{"tool_name":"Bash","tool_use_id":"t1","tool_input":{"command":"rm -rf build"}}]}"#;
    assert!(
        claude
            .parse_line(line)
            .contains(&AgentEvent::PermissionDenied {
                tool: "Bash".into(),
                target: Some("rm -rf build".into())
            }),
        "{:?}",
        claude.parse_line(line)
    );
    let codex = build(serde_json::json!({"type": "codex"}));
    let line = r#"{"type":"item.completed","item":{"id":"i1","type":"command_execution","command":"git push","aggregated_output":"","status":"declined"}}"#;
    assert_eq!(
        codex.parse_line(line),
        vec![AgentEvent::PermissionDenied {
            tool: "command_execution".into(),
            target: Some("git push".into())
        }]
    );
}

#[test]
fn the_sidecar_reports_the_question_and_slipway_reply_starts_the_answering_run() {
    use common::lsp::Lsp;
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let agent = asking_agent(&env);
    let mut lsp = Lsp::start(&env, Some(&repo), false);
    let command = serde_json::json!({"type": "command", "command": [agent]});
    let started = lsp.ok(
        "slipway.run",
        serde_json::json!({"root": repo, "strategy": "branch", "branch": "asks",
                           "agent": command, "prompt": "Do the work."}),
    );
    let first = s(&started, "runId").to_owned();
    let finished = lsp.expect_notification(
        "slipway/runFinished",
        |p| p["runId"] == first.as_str(),
        RUN_LIMIT,
        "the asking run's runFinished",
    );
    let params = &finished.msg["params"];
    assert_eq!(params["status"], "needsInput", "{params}");
    assert_eq!(params["question"]["text"], QUESTION, "{params}");
    let runs = lsp.ok("slipway.runs", serde_json::json!({"root": repo}));
    assert_eq!(runs["runs"][0]["question"]["text"], QUESTION, "{runs}");

    let empty = lsp.err(
        "slipway.reply",
        serde_json::json!({"runId": first, "answer": ""}),
    );
    assert_eq!(empty["data"]["kind"], "invalidParams", "{empty}");
    let answered = lsp.ok(
        "slipway.reply",
        serde_json::json!({"runId": first, "answer": ANSWER}),
    );
    let second = s(&answered, "runId").to_owned();
    assert_ne!(second, first);
    let finished = lsp.expect_notification(
        "slipway/runFinished",
        |p| p["runId"] == second.as_str(),
        RUN_LIMIT,
        "the reply's runFinished",
    );
    let params = &finished.msg["params"];
    assert_eq!(params["status"], "completed", "{params}");
    assert_eq!(params["replyTo"], first.as_str(), "{params}");
    assert_eq!(
        env.git(&repo, &["log", "--format=%s", "asks"]),
        "agent: the test\nagent: the work\ninitial commit",
        "both runs' commits are on the branch"
    );
    let again = lsp.err(
        "slipway.reply",
        serde_json::json!({"runId": first, "answer": ANSWER}),
    );
    assert_eq!(again["data"]["kind"], "notWaitingForInput", "{again}");
    let unknown = lsp.err(
        "slipway.reply",
        serde_json::json!({"runId": "run-1-abc", "answer": ANSWER}),
    );
    assert_eq!(unknown["data"]["kind"], "unknownRun", "{unknown}");
}

/// The real Claude Code in its `default` permission mode, unattended: the shell
/// tool the model calls is refused (nobody is there to allow it), the result
/// lists the denial, and the run ends `needsInput` saying which permission.
#[test]
fn claude_code_refused_a_permission_ends_needs_input() {
    use common::lsp::Lsp;
    let world = AgentWorld::new(
        "claude-code",
        Script::CommitThenSay("I could not commit hello.txt.".into()),
    );
    let mut lsp = Lsp::start(&world.env, Some(&world.repo), false);
    let started = lsp.ok(
        "slipway.run",
        serde_json::json!({
            "root": world.repo, "strategy": "branch", "branch": "asks",
            "agent": world.agent_spec(serde_json::json!({"permissionMode": "default"})),
            "prompt": "Create hello.txt and commit it.", "idleTimeoutSecs": 120,
        }),
    );
    let run_id = s(&started, "runId").to_owned();
    let finished = lsp.expect_notification(
        "slipway/runFinished",
        |p| p["runId"] == run_id.as_str(),
        RUN_LIMIT,
        "the run's runFinished",
    );
    let done = &finished.msg["params"];
    let log = AgentWorld::log_of(done);
    assert_eq!(
        done["status"],
        "needsInput",
        "{done}\n{log}\n{}",
        world.server.describe()
    );
    assert_eq!(done["question"]["reason"], "permissionDenied", "{done}");
    let text = s(&done["question"], "text");
    assert!(
        text.contains("refused permission for Bash: echo hello-1"),
        "the question names the refused tool and command: {text}"
    );
    assert_eq!(commit_shas(done).len(), 0, "nothing was committed: {done}");
}

/// The real Codex: an interactive Codex still open on its session, and an
/// unattended run that resumes that session in the same worktree. Codex
/// refuses a second writer; the run says `sessionBusy`, not a plain failure.
#[test]
fn codex_with_its_interactive_session_still_open_fails_as_session_busy() {
    use crate::real_agents::{interactive_start, newest_session, quit, shows, talk};
    let world = AgentWorld::new("codex", Script::Answer("Ready when you are.".into()));
    world.server.set_latency(Duration::from_secs(2));
    let (_lsp, mut pty, cwd) = interactive_start(&world, "chat");
    talk(&world, &mut pty, "Remember the word pelican.");
    assert!(
        shows(&pty, "Ready when you are."),
        "codex answered:\n{}",
        pty.screen()
    );
    let written = common::lsp::wait_until(EVENT_DEADLINE, || {
        newest_session(&world, &cwd, "Ready when you are.").is_some()
    });
    assert!(written, "codex wrote no session for {}", cwd.display());
    let session =
        newest_session(&world, &cwd, "Ready when you are.").expect("the session seen above");
    world.server.set_latency(Duration::ZERO);
    world.server.set_script(Script::EditAndCommit);
    let (result, error) = world.run(
        &[
            "--worktree",
            "chat",
            "--resume",
            &session,
            "--idle-timeout",
            "120",
            "--prompt",
            "Create hello.txt and commit it.",
        ],
        RUN_LIMIT,
    );
    let log = AgentWorld::log_of(&result);
    quit(&mut pty);
    let error = error.unwrap_or_else(|| panic!("a second writer must fail: {result}\n{log}"));
    assert_eq!(error["kind"], "sessionBusy", "{error}\n{log}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("active writer")),
        "the message quotes Codex: {error}"
    );
}

/// The real interactive Codex, started as the sidecar's `interactiveCommand`
/// says in a slipway worktree: its own workspace-write sandbox lets it write
/// the worktree's git dir (`--add-dir`), so the commit it makes lands.
#[test]
fn interactive_codex_commits_in_its_worktree() {
    use crate::real_agents::{interactive_start, quit, talk};
    let world = AgentWorld::new("codex", Script::EditAndCommit);
    let (_lsp, mut pty, _cwd) = interactive_start(&world, "chat");
    talk(&world, &mut pty, "Create hello.txt and commit it.");
    let answered = common::lsp::wait_until(RUN_LIMIT, || {
        world
            .server
            .model_requests()
            .iter()
            .any(|e| e.turn == Some(Turn::AfterTool))
    });
    assert!(
        answered,
        "the tool ran:\n{}\n{}",
        pty.screen(),
        world.server.describe()
    );
    let after = world
        .server
        .model_requests()
        .into_iter()
        .find(|e| e.turn == Some(Turn::AfterTool))
        .expect("seen above")
        .body
        .to_string();
    let committed = common::lsp::wait_until(EVENT_DEADLINE, || {
        world
            .env
            .git(&world.repo, &["log", "-1", "--format=%s", "chat"])
            == "agent: hello 1"
    });
    quit(&mut pty);
    assert!(
        committed,
        "the interactive Codex's commit is on its branch; what the tool gave the model:\n{after}"
    );
}

#[test]
fn interactive_codex_is_given_the_git_dirs_its_sandbox_would_keep_read_only() {
    use slipway_core::agent::AgentSpec;
    let dirs = vec![
        std::path::PathBuf::from("/r/.git/worktrees/w-0123456789"),
        std::path::PathBuf::from("/r/.git"),
    ];
    let argv = |spec: Value| {
        serde_json::from_value::<AgentSpec>(spec)
            .expect("spec")
            .build()
            .expect("builds")
            .interactive_in(&dirs)
            .argv
    };
    assert_eq!(
        argv(serde_json::json!({"type": "codex"})),
        [
            "codex",
            "--add-dir",
            "/r/.git/worktrees/w-0123456789",
            "--add-dir",
            "/r/.git"
        ]
    );
    assert_eq!(
        argv(serde_json::json!({"type": "codex", "permissionMode": "bypass"})),
        ["codex", "--dangerously-bypass-approvals-and-sandbox"]
    );
    assert_eq!(
        argv(serde_json::json!({"type": "claude-code"})),
        ["claude"],
        "slipway gives Claude Code nothing more"
    );
}

#[test]
fn a_head_run_that_asks_is_answered_in_the_host_checkout() {
    let (env, repo, first) = asked(["--strategy", "head"]);
    let second = reply(&env, &repo, s(&first, "runId"), ANSWER).expect("the reply runs");
    assert_eq!(second["status"], "completed", "{second}");
    assert_eq!(
        second["worktreePath"], first["worktreePath"],
        "the host checkout"
    );
    assert_eq!(
        env.git(&repo, &["log", "--format=%s", "main"]),
        "agent: the test\nagent: the work\ninitial commit"
    );
}

/// A reply runs where the run it answers ran: a run in a `docker` or
/// `docker-isolated` sandbox that asks is answered in a new container of the
/// same kind (the agent sees `/.dockerenv` both times), on the same branch.
#[test]
fn a_reply_to_a_docker_run_runs_in_the_same_kind_of_sandbox() {
    require_docker_image();
    // Each half commits where it ran: `docker` inside a container, else `host`.
    let script = format!(
        r#"set -e
where=host; [ -e /.dockerenv ] && where=docker
if [ "$SLIPWAY_PROMPT" = "{ANSWER}" ]; then
  echo "$where" > reply.txt && git add reply.txt && git commit -q -m 'agent: the reply'
  echo "Added the test."
else
  echo "$where" > first.txt && git add first.txt && git commit -q -m 'agent: the work'
  echo "{QUESTION}"
fi
"#
    );
    for sandbox in ["docker", "docker-isolated"] {
        let env = TestEnv::new();
        let repo = env.new_repo("repo");
        let branch = format!("asked/{sandbox}");
        let (_, first, log) = env.run_result(
            &repo,
            &[
                "--json",
                "run",
                "--branch",
                &branch,
                "--sandbox",
                sandbox,
                "--image",
                TEST_IMAGE,
                "--network",
                "none",
                "--prompt",
                "Do the work.",
                "--",
                "sh",
                "-c",
                &script,
            ],
        );
        assert_eq!(first["status"], "needsInput", "{sandbox}: {first}\n{log}");
        let run_id = s(&first, "runId").to_owned();
        let second = reply(&env, &repo, &run_id, ANSWER).expect("the reply runs");
        assert_eq!(second["status"], "completed", "{sandbox}: {second}");
        assert_eq!(
            record(&repo, s(&second, "runId"))["sandbox"],
            sandbox,
            "the reply's record"
        );
        for file in ["first.txt", "reply.txt"] {
            assert_eq!(
                env.git(&repo, &["show", &format!("{branch}:{file}")]),
                "docker",
                "{sandbox}: {file} was written outside a container"
            );
        }
    }
}
