//! Every provider against its real CLI (installed from npm by
//! `scripts/agents-setup.sh`), with only the model replaced by the scripted
//! server of `common::model_server`:
//!
//! - a merge-to-head run commits through the agent's own shell tool and lands
//!   on the host branch; the result's session id is one the agent keeps, and
//!   its usage (cached tokens included) is what the server sent, and
//!   `slipway runs` shows its activity (one tool call, its last words, its tokens);
//! - a file written with the agent's own write tool (Claude Code `Write`, Codex
//!   `apply_patch`, OpenCode and Pi `write`, Copilot `create`) is the file its
//!   activity names, and "editing notes.txt" was a step while it ran;
//! - a token budget below the first reply stops the real OpenCode once it
//!   reported that reply, its commit kept;
//! - a second run with `--resume` continues that session after the first run's
//!   worktree is gone (the server sees the earlier conversation), and `--fork`
//!   continues a copy under a new id, or a typed error says why not;
//! - a prompt that contains the completion signal, with a model that fails,
//!   does not end `completed`;
//! - the interactive command line the sidecar hands out starts the CLI on a pty
//!   and reaches the model.
//!
//! The flagship flow (Claude Code and Codex) is in `handoff_*`: an interactive
//! session from the sidecar's `interactiveCommand`, then `slipway.handoff` in a
//! docker sandbox resumes that session unattended and commits.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use common::agents::{AgentWorld, agent_image};
use common::lsp::Lsp;
use common::model_server::{
    FINAL_TEXT, NOTES_CONTENT, NOTES_FILE, NOTES_FINAL_TEXT, Script, SentUsage, Turn,
};
use common::pty::Pty;
use common::*;

const SIGNAL: &str = "<promise>COMPLETE</promise>";
const PROMPT: &str = "Create hello.txt and commit it.";
/// Generous: a run is a few seconds; a CLI's first start on a cold cache more.
const RUN_LIMIT: Duration = Duration::from_secs(180);

/// The usage slipway put in a result.
fn result_usage(result: &Value) -> SentUsage {
    let u = &result["usage"];
    let n = |k: &str| {
        u[k].as_u64()
            .unwrap_or_else(|| panic!("usage.{k} missing in {result}"))
    };
    SentUsage {
        input: n("inputTokens"),
        output: n("outputTokens"),
        cached: n("cachedInputTokens"),
    }
}

/// Whether the agent keeps a session `id` in its own store under the fake HOME.
fn agent_keeps_session(world: &AgentWorld, id: &str) -> bool {
    let home = world.env.home();
    let files_under = |dir: PathBuf, matches: &dyn Fn(&str) -> bool| -> bool {
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(matches)
                {
                    return true;
                }
            }
        }
        false
    };
    match world.cli.agent.as_str() {
        "claude-code" => files_under(home.join(".claude/projects"), &|n| {
            n == format!("{id}.jsonl")
        }),
        "codex" => files_under(home.join(".codex/sessions"), &|n| {
            n.starts_with("rollout-") && n.ends_with(&format!("-{id}.jsonl"))
        }),
        "pi" => files_under(home.join(".pi/agent/sessions"), &|n| {
            n.ends_with(&format!("_{id}.jsonl"))
        }),
        "copilot" => home.join(".copilot/session-state").join(id).is_dir(),
        "opencode" => {
            let mut export = std::process::Command::new(&world.cli.path);
            export
                .args(["export", id])
                .current_dir(&world.repo)
                .env_clear();
            for (k, v) in world.child_env() {
                export.env(k, v);
            }
            let out = common::agents::output_within(export, Duration::from_secs(60));
            out.status.success()
                && serde_json::from_slice::<Value>(&out.stdout).is_ok_and(|v| v["info"]["id"] == id)
        }
        other => panic!("no session store known for {other}"),
    }
}

/// The body of the first opening request the server got since its log was cleared.
fn first_opening(world: &AgentWorld) -> Value {
    world
        .server
        .model_requests()
        .into_iter()
        .find(|e| e.turn == Some(Turn::Opening))
        .unwrap_or_else(|| {
            panic!(
                "the agent never asked the model:\n{}",
                world.server.describe()
            )
        })
        .body
}

/// Asserts a run completed through the model's tool call and landed on `main`.
fn assert_landed(world: &AgentWorld, result: &Value, subject: &str) {
    let log = AgentWorld::log_of(result);
    assert_eq!(
        result["status"],
        "completed",
        "{}: {result}\nlog:\n{log}\nmodel server:\n{}",
        world.cli.agent,
        world.server.describe()
    );
    assert_eq!(result["completionSignal"], SIGNAL, "{result}");
    assert_eq!(result["finalText"], FINAL_TEXT, "{result}");
    assert_eq!(commit_shas(result).len(), 1, "{result}\n{log}");
    assert_eq!(
        world
            .env
            .git(&world.repo, &["log", "-1", "--format=%s", "main"]),
        subject,
        "the agent's commit landed on the host branch"
    );
    assert_eq!(
        world.env.rev(&world.repo, "main"),
        commit_shas(result)[0],
        "main is at the run's commit"
    );
    let wt = Path::new(s(result, "worktreePath"));
    assert!(
        !wt.exists(),
        "the merge-to-head worktree is gone: {}",
        wt.display()
    );
    assert_eq!(
        result_usage(result),
        world.server.sent_usage(),
        "{}: the usage in the result is what the model sent\n{}",
        world.cli.agent,
        world.server.describe()
    );
}

/// The activity `slipway runs` shows for the run of `result`: its one tool
/// call, its last words as the step, and the tokens of its usage.
fn assert_activity(world: &AgentWorld, result: &Value) {
    let runs = world.env.slipway_json(&world.repo, &["runs"]);
    let run = runs["runs"]
        .as_array()
        .and_then(|all| all.iter().find(|r| r["runId"] == result["runId"]))
        .unwrap_or_else(|| panic!("the run in slipway runs: {runs}"));
    let activity = &run["activity"];
    let agent = &world.cli.agent;
    assert_eq!(activity["toolCalls"], 1, "{agent}: {activity}");
    assert_eq!(activity["step"], FINAL_TEXT, "{agent}: {activity}");
    assert!(activity["turns"].as_u64() >= Some(2), "{agent}: {activity}");
    let usage = result_usage(result);
    assert_eq!(activity["inputTokens"], usage.input, "{agent}: {activity}");
    assert_eq!(
        activity["outputTokens"], usage.output,
        "{agent}: {activity}"
    );
}

/// The model writes notes.txt with the agent's own file-writing tool, then
/// commits it through the shell tool: the run lands the file; the activity
/// `slipway runs` shows names it (relative to the worktree) as the one file
/// the agent edited, with both tool calls and the tokens the server sent; and
/// the run's events file kept the step "editing notes.txt" from while it ran.
fn own_write_tool_names_its_file_in_the_activity(agent: &str) {
    let mut world = AgentWorld::new(agent, Script::WriteAndCommit);
    // Codex offers its apply_patch tool only with a model whose metadata it bundles.
    world.codex_model = "gpt-5.5";
    let (result, error) = world.run(
        &[
            "--strategy",
            "merge-to-head",
            "--idle-timeout",
            "120",
            "--prompt",
            "Write notes.txt and commit it.",
        ],
        RUN_LIMIT,
    );
    let log = AgentWorld::log_of(&result);
    let served = world.server.describe();
    assert!(
        error.is_none(),
        "{agent}: {error:?}\n{result}\nlog:\n{log}\nmodel server:\n{served}"
    );
    assert_eq!(
        result["status"], "completed",
        "{agent}: {result}\nlog:\n{log}\nmodel server:\n{served}"
    );
    assert_eq!(result["finalText"], NOTES_FINAL_TEXT, "{agent}: {result}");
    let tools: Vec<String> = world
        .server
        .model_requests()
        .into_iter()
        .filter_map(|e| e.tool)
        .collect();
    let write = match agent {
        "claude-code" => "Write",
        "codex" => "apply_patch",
        "copilot" => "create",
        _ => "write",
    };
    assert_eq!(
        tools.first().map(String::as_str),
        Some(write),
        "{agent}: the model wrote with the agent's own tool, then committed: {tools:?}\n{served}"
    );
    assert_eq!(tools.len(), 2, "{agent}: the script's two calls\n{served}");
    assert_eq!(
        world
            .env
            .git(&world.repo, &["log", "-1", "--format=%s", "main"]),
        "agent: notes",
        "{agent}: the commit landed\n{log}"
    );
    assert_eq!(
        world
            .env
            .git(&world.repo, &["show", &format!("main:{NOTES_FILE}")])
            .trim_end(),
        NOTES_CONTENT.trim_end(),
        "{agent}: the write tool wrote the file that was committed"
    );

    let runs = world.env.slipway_json(&world.repo, &["runs"]);
    let run = runs["runs"]
        .as_array()
        .and_then(|all| all.iter().find(|r| r["runId"] == result["runId"]))
        .unwrap_or_else(|| panic!("the run in slipway runs: {runs}"));
    let activity = &run["activity"];
    assert_eq!(
        activity["files"],
        json!([NOTES_FILE]),
        "{agent}: {activity}"
    );
    assert_eq!(activity["filesTouched"], 1, "{agent}: {activity}");
    assert_eq!(activity["toolCalls"], 2, "{agent}: {activity}");
    assert_eq!(activity["step"], NOTES_FINAL_TEXT, "{agent}: {activity}");
    let sent = world.server.sent_usage();
    assert_eq!(
        (sent.input, sent.output),
        (303 + 202, 33 + 22),
        "{agent}: the script's three turns\n{served}"
    );
    assert_eq!(activity["inputTokens"], sent.input, "{agent}: {activity}");
    assert_eq!(activity["outputTokens"], sent.output, "{agent}: {activity}");

    let events = std::fs::read_to_string(
        world
            .repo
            .join(format!(".slipway/runs/{}.events", s(&result, "runId"))),
    )
    .expect("the run's events file");
    let steps: Vec<String> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "step")
        .filter_map(|e| e["text"].as_str().map(str::to_owned))
        .collect();
    // The script says no words with its calls, so the edit is the run's
    // first step, and a first step always reaches the events file (the rate
    // limit holds back only the ones that follow it closely).
    assert_eq!(
        steps.first().map(String::as_str),
        Some("editing notes.txt"),
        "{agent}: the editing step was seen while it ran: {steps:?}"
    );
}

/// A merge-to-head run that resumes (or forks) `session` with `prompt`.
fn resume(world: &AgentWorld, session: &str, fork: bool, prompt: &str) -> (Value, Option<Value>) {
    let mut args = vec!["--strategy", "merge-to-head", "--idle-timeout", "120"];
    args.extend(["--resume", session]);
    if fork {
        args.push("--fork");
    }
    args.extend(["--prompt", prompt]);
    world.run(&args, RUN_LIMIT)
}

/// A merge-to-head run, then `--resume` in a new worktree, then `--fork` (or
/// the typed error of an agent that cannot fork); a session that does not
/// exist is refused before the agent starts.
fn session_lands_resumes_and_forks(agent: &str) {
    let world = AgentWorld::new(agent, Script::EditAndCommit);
    let (result, error) = world.run(
        &[
            "--strategy",
            "merge-to-head",
            "--resume",
            "0badc0de-0000-4000-8000-000000000000",
            "--prompt",
            PROMPT,
        ],
        RUN_LIMIT,
    );
    let error =
        error.unwrap_or_else(|| panic!("{agent}: resuming a missing session must fail: {result}"));
    let want = match agent {
        "opencode" => "sessionNotResumable",
        // Copilot also takes names and id prefixes: it says itself that nothing matched.
        "copilot" => "agentFailed",
        _ => "sessionNotFound",
    };
    assert_eq!(error["kind"], want, "{agent}: {error}");
    assert!(
        world.server.model_requests().is_empty(),
        "{agent} never asked the model"
    );
    assert_eq!(
        world.env.local_branches(&world.repo),
        ["main"],
        "no branch left behind"
    );
    let (first, _) = world.run(
        &[
            "--strategy",
            "merge-to-head",
            "--idle-timeout",
            "120",
            "--prompt",
            PROMPT,
        ],
        RUN_LIMIT,
    );
    assert_landed(&world, &first, "agent: hello 1");
    assert_activity(&world, &first);
    let session = s(&first, "sessionId").to_owned();
    assert!(
        agent_keeps_session(&world, &session),
        "{agent} keeps no session {session} in its store"
    );
    assert_eq!(
        world.server.sent_usage(),
        SentUsage {
            input: 303,
            output: 33,
            cached: 21
        },
        "the script's two turns"
    );

    // The first worktree is gone; the session continues in a new one.
    world.server.clear_log();
    let (second, error) = resume(&world, &session, false, "Once more.");
    assert!(
        error.is_none(),
        "{agent}: resume failed: {error:?}\n{second}\n{}",
        AgentWorld::log_of(&second)
    );
    assert_landed(&world, &second, "agent: hello 2");
    assert_eq!(
        second["sessionId"],
        session.as_str(),
        "{agent} continued the same session"
    );
    let history = first_opening(&world).to_string();
    assert!(
        history.contains("agent: hello 1") && history.contains("Once more."),
        "{agent}: the resumed conversation reached the model with the first run in it:\n{history}"
    );

    world.server.clear_log();
    let (forked, error) = resume(&world, &session, true, "Fork it.");
    if agent == "copilot" {
        let error = error.expect("copilot cannot fork: a typed error");
        assert_eq!(error["kind"], "unsupported", "{error}");
        assert!(
            error["message"]
                .as_str()
                .is_some_and(|m| m.contains("resume.fork")),
            "{error}"
        );
        assert!(world.server.model_requests().is_empty(), "nothing ran");
        return;
    }
    assert!(
        error.is_none(),
        "{agent}: fork failed: {error:?}\n{forked}\n{}",
        AgentWorld::log_of(&forked)
    );
    assert_landed(&world, &forked, "agent: hello 3");
    let fork_id = s(&forked, "sessionId");
    assert_ne!(fork_id, session, "{agent}: a fork is a new session");
    assert!(
        agent_keeps_session(&world, fork_id),
        "{agent} keeps the fork {fork_id}"
    );
    let history = first_opening(&world).to_string();
    assert!(
        history.contains("agent: hello 2") && history.contains("Fork it."),
        "{agent}: the fork carries the conversation:\n{history}"
    );
}

/// The prompt names the completion signal, the model fails: not `completed`.
fn signal_in_prompt_with_a_failing_model(agent: &str) {
    let world = AgentWorld::new(agent, Script::Fail);
    let before = world.env.rev(&world.repo, "main");
    let (result, error) = world.run(
        &[
            "--strategy",
            "merge-to-head",
            "--idle-timeout",
            "120",
            "--prompt",
            &format!("Fix the bug, then reply with {SIGNAL} when you are done."),
        ],
        RUN_LIMIT,
    );
    let log = AgentWorld::log_of(&result);
    assert!(
        world
            .server
            .model_requests()
            .iter()
            .any(|e| e.turn != Some(Turn::Side)),
        "{agent} never asked the model:\n{log}"
    );
    assert_ne!(result["status"], "completed", "{agent}: {result}\n{log}");
    assert_eq!(result["completionSignal"], Value::Null, "{result}");
    let error = error.unwrap_or_else(|| panic!("{agent}: a failed run names its error: {result}"));
    assert_eq!(error["kind"], "agentFailed", "{error}");
    assert_eq!(world.env.rev(&world.repo, "main"), before, "nothing landed");
}

/// The interactive command line from the sidecar starts the CLI on a pty, and
/// a prompt typed into it reaches the model; the pty is then closed.
pub(crate) fn interactive_start(world: &AgentWorld, branch: &str) -> (Lsp, Pty, PathBuf) {
    let mut lsp = Lsp::start(&world.env, Some(&world.repo), false);
    let created = lsp.ok(
        "slipway.createWorktree",
        json!({"root": world.repo, "strategy": "branch", "branch": branch,
               "agent": world.agent_spec(json!({}))}),
    );
    let command = &created["interactiveCommand"];
    let argv: Vec<String> = command["argv"]
        .as_array()
        .unwrap_or_else(|| panic!("no interactiveCommand in {created}"))
        .iter()
        .map(|a| a.as_str().expect("argv strings").to_owned())
        .collect();
    let cwd = PathBuf::from(command["cwd"].as_str().expect("cwd"));
    world.prepare_interactive();
    let pty = Pty::spawn(&argv, &cwd, &world.child_env());
    (lsp, pty, cwd)
}

/// Spacing removed: UIs that wrap or pad lines may break a text over lines.
fn squeeze(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Types the prompt once the CLI is drawing, presses Enter once the UI shows
/// what was typed (text and Enter in one read would be taken for a paste),
/// and waits for the model to be asked.
pub(crate) fn talk(world: &AgentWorld, pty: &mut Pty, text: &str) {
    let agent = &world.cli.agent;
    let drawn = pty.wait_for(EVENT_DEADLINE, |s| s.trim().len() > 20);
    assert!(
        drawn && pty.running(),
        "{agent} did not start on the pty:\n{}",
        pty.drawn()
    );
    for flag_error in [
        "unknown option",
        "unexpected argument",
        "Unknown argument",
        "error: ",
    ] {
        assert!(
            !pty.drawn().contains(flag_error),
            "{agent} refused its command line ({flag_error}):\n{}",
            pty.drawn()
        );
    }
    // Keys typed before the UI reads them wait in the terminal for it.
    pty.type_text(text);
    let want = squeeze(text);
    assert!(
        pty.wait_for(EVENT_DEADLINE, |s| squeeze(s).contains(&want)),
        "{agent} never showed what was typed:\n{}",
        pty.screen()
    );
    pty.type_text("\r");
    // A TUI drops an Enter that comes while it is still setting up its
    // session (Copilot often, Codex under load: the text stays in its input
    // box): while the model has not been asked and the input box still holds
    // the text, Enter is pressed again (about every 2 s of checks; an Enter on
    // an empty box does nothing in any of them).
    let mut checks = 0;
    let asked = common::lsp::wait_until(EVENT_DEADLINE, || {
        let asked = world
            .server
            .model_requests()
            .iter()
            .any(|e| e.turn != Some(Turn::Side) && e.body.to_string().contains(text));
        checks += 1;
        if !asked && checks % 40 == 0 && input_holds(agent, &pty.screen(), text) {
            pty.type_text("\r");
        }
        asked
    });
    assert!(
        asked,
        "{agent}: the prompt typed on the pty never reached the model\nscreen:\n{}\nmodel server:\n{}",
        pty.screen(),
        world.server.describe()
    );
}

/// Whether the agent's input box holds `text`: a line starting with
/// Copilot's `┃` border or Codex's `›` prompt; for the others any line
/// showing it (an extra Enter after the prompt was taken does nothing).
fn input_holds(agent: &str, screen: &str, text: &str) -> bool {
    let prompt = match agent {
        "copilot" => Some('┃'),
        "codex" => Some('›'),
        _ => None,
    };
    screen
        .lines()
        .any(|l| l.contains(text) && prompt.is_none_or(|p| l.trim_start().starts_with(p)))
}

/// Whether the screen comes to show `text` (spacing ignored).
pub(crate) fn shows(pty: &Pty, text: &str) -> bool {
    let want = squeeze(text);
    pty.wait_for(EVENT_DEADLINE, |s| squeeze(s).contains(&want))
}

fn interactive_command_line_reaches_the_model(agent: &str) {
    let world = AgentWorld::new(
        agent,
        Script::Answer("Hello from the scripted model.".into()),
    );
    let (_lsp, mut pty, _cwd) = interactive_start(&world, "chat");
    talk(&world, &mut pty, "Say hello.");
    assert!(
        shows(&pty, "Hello from the scripted model."),
        "{agent} did not show the model's answer:\n{}\nmodel server:\n{}",
        pty.screen(),
        world.server.describe()
    );
    pty.kill();
}

/// A branch run of `world` with the budget `flag value`: it must be stopped by
/// that budget (`kind`), its tool call's commit kept on `branch`. Its result.
fn run_past_budget(world: &AgentWorld, branch: &str, flag: &str, value: &str, kind: &str) -> Value {
    let (result, error) = world.run(
        &[
            "--strategy",
            "branch",
            "--branch",
            branch,
            flag,
            value,
            "--prompt",
            PROMPT,
        ],
        RUN_LIMIT,
    );
    let log = AgentWorld::log_of(&result);
    assert_eq!(
        error.map(|e| e["kind"].clone()),
        Some(json!("budgetReached")),
        "{result}\n{log}"
    );
    assert_eq!(result["status"], "timedOut", "{result}");
    assert_eq!(result["budget"]["budget"], kind, "{result}");
    assert_eq!(commit_shas(&result).len(), 1, "{result}\n{log}");
    assert_eq!(
        world
            .env
            .git(&world.repo, &["log", "-1", "--format=%s", branch]),
        "agent: hello 1"
    );
    result
}

/// A token budget below what the model's first reply uses stops the real
/// agent once it reported that reply, after its tool call committed: the
/// commit is kept on the run's branch.
#[test]
fn a_token_budget_stops_the_real_agent_and_keeps_its_commit() {
    let world = AgentWorld::new("opencode", Script::EditAndCommit);
    let result = run_past_budget(&world, "agent/budget", "--max-tokens", "100", "tokens");
    assert_eq!(
        result["budget"]["used"], 112.0,
        "the first reply's usage: {result}"
    );
}

/// Codex reports tokens but no cost: at the price the user set for it in
/// `config.toml`, a cost budget stops the real agent once its turn's usage
/// costs more, and the commit its tool call made is kept.
#[test]
fn a_cost_budget_stops_codex_at_the_users_price_and_keeps_its_commit() {
    let world = AgentWorld::new("codex", Script::EditAndCommit);
    let config = world.env.home().join(".config/slipway");
    std::fs::create_dir_all(&config).expect("config dir");
    std::fs::write(
        config.join("config.toml"),
        "[prices.codex]\ninput = 10000\ncached_input = 1000\noutput = 100000\n",
    )
    .expect("config.toml");
    let result = run_past_budget(&world, "agent/cost", "--max-cost", "1", "cost");
    let usage = &result["usage"];
    assert_eq!(usage["costPriced"], true, "{result}");
    let count = |key: &str| {
        usage[key]
            .as_f64()
            .unwrap_or_else(|| panic!("no {key}: {result}"))
    };
    let (input, cached, output) = (
        count("inputTokens"),
        count("cachedInputTokens"),
        count("outputTokens"),
    );
    assert!(input > cached && cached > 0.0 && output > 0.0, "{result}");
    let priced = ((input - cached) * 10000.0 + cached * 1000.0 + output * 100000.0) / 1e6;
    let used = result["budget"]["used"].as_f64().expect("used");
    assert!(
        (used - priced).abs() < 1e-9,
        "used {used}, priced {priced}: {result}"
    );
    assert!(used >= 1.0, "{result}");
}

/// A model that never answers: the idle timeout stops the real agent, the run
/// ends `timedOut`, and the session id the agent named before it waited is in
/// the result.
#[test]
fn a_stalled_model_times_out_with_the_session_id_already_known() {
    let world = AgentWorld::new("codex", Script::Stall);
    let (result, error) = world.run(
        &[
            "--strategy",
            "merge-to-head",
            "--idle-timeout",
            "5",
            "--prompt",
            PROMPT,
        ],
        RUN_LIMIT,
    );
    assert_eq!(
        result["status"],
        "timedOut",
        "{result}\n{}",
        AgentWorld::log_of(&result)
    );
    assert_eq!(error.expect("a typed error")["kind"], "idleTimeout");
    let session = s(&result, "sessionId");
    assert!(
        agent_keeps_session(&world, session),
        "codex named {session} before it stalled"
    );
    assert!(
        world
            .server
            .model_requests()
            .iter()
            .any(|e| e.turn == Some(Turn::Opening)),
        "codex was waiting for the model"
    );
}

macro_rules! per_agent {
    ($($module:ident => $agent:literal),* $(,)?) => {$(
        mod $module {
            #[test]
            fn session_lands_resumes_and_forks() {
                super::session_lands_resumes_and_forks($agent);
            }

            #[test]
            fn own_write_tool_names_its_file_in_the_activity() {
                super::own_write_tool_names_its_file_in_the_activity($agent);
            }

            #[test]
            fn signal_in_prompt_with_a_failing_model_does_not_complete() {
                super::signal_in_prompt_with_a_failing_model($agent);
            }

            #[test]
            fn interactive_command_line_reaches_the_model() {
                super::interactive_command_line_reaches_the_model($agent);
            }
        }
    )*};
}

per_agent! {
    claude_code => "claude-code",
    codex => "codex",
    opencode => "opencode",
    pi => "pi",
    copilot => "copilot",
}

/// The newest session the agent keeps for `cwd` (what an interactive session
/// there left behind).
/// Leaves an interactive CLI with Ctrl-C twice, as a person does, so it
/// writes out its session: the second once the UI has answered the first
/// (its "again to exit" line), then waits for it to go.
pub(crate) fn quit(pty: &mut Pty) {
    let before = pty.screen();
    pty.type_text("\x03");
    let answered = pty.wait_for(EVENT_DEADLINE, |s| s != before);
    if pty.running() {
        assert!(answered, "the UI did not react to Ctrl-C:\n{before}");
        pty.type_text("\x03");
    }
    common::lsp::wait_until(EVENT_DEADLINE, || !pty.running());
}

/// Only once its transcript holds `answer`: a session the CLI has not written
/// out yet cannot be resumed.
pub(crate) fn newest_session(world: &AgentWorld, cwd: &Path, answer: &str) -> Option<String> {
    let store = match world.cli.agent.as_str() {
        "claude-code" => slipway_core::agent::SessionStore::ClaudeCode,
        "codex" => slipway_core::agent::SessionStore::Codex,
        other => panic!("no store for {other}"),
    };
    let home = world.env.home();
    let id = store.latest_for_cwd(&store.root(home), cwd)?;
    let file = store.locate(home, cwd, &id).ok()?;
    std::fs::read_to_string(file)
        .ok()?
        .contains(answer)
        .then_some(id)
}

/// The flagship flow: work with the agent interactively in a worktree, then
/// hand the worktree to a docker sandbox, where the same session continues
/// unattended, commits, and the sidecar reports it.
fn handoff_continues_the_interactive_session_in_docker(agent: &str) {
    let image = agent_image(agent);
    require_docker_image();
    let world = AgentWorld::new(agent, Script::Answer("Ready when you are.".into()));
    // A person's conversation with a real model, which takes a moment to answer.
    world.server.set_latency(Duration::from_secs(2));
    let (mut lsp, mut pty, cwd) = interactive_start(&world, "chat");
    talk(&world, &mut pty, "Remember the word pelican.");
    assert!(
        shows(&pty, "Ready when you are."),
        "{agent} did not show the model's answer:\n{}",
        pty.screen()
    );
    // The person leaves the terminal the way people do (Ctrl-C, twice); the
    // session is on disk.
    let written = common::lsp::wait_until(EVENT_DEADLINE, || {
        newest_session(&world, &cwd, "Ready when you are.").is_some()
    });
    assert!(written, "{agent} wrote no session for {}", cwd.display());
    quit(&mut pty);
    assert!(!pty.running(), "{agent} left on Ctrl-C:\n{}", pty.screen());
    let session =
        newest_session(&world, &cwd, "Ready when you are.").expect("the session seen above");

    world.server.set_latency(Duration::ZERO);
    world.server.set_script(Script::EditAndCommit);
    world.server.clear_log();
    let started = lsp.ok(
        "slipway.handoff",
        json!({
            "root": world.repo,
            "worktree": "chat",
            "agent": world.agent_spec(json!({})),
            "sandbox": {"type": "docker", "image": image, "network": "host"},
            "prompt": PROMPT,
            "idleTimeoutSecs": 120,
        }),
    );
    let run_id = s(&started, "runId").to_owned();
    let finished = lsp.expect_notification(
        "slipway/runFinished",
        |p| p["runId"] == run_id.as_str(),
        RUN_LIMIT,
        "the handoff's runFinished",
    );
    let done = &finished.msg["params"];
    let log =
        std::fs::read_to_string(done["logFile"].as_str().unwrap_or_default()).unwrap_or_default();
    assert_eq!(
        done["status"],
        "completed",
        "{agent} handoff: {done}\nlog:\n{log}\nmodel server:\n{}",
        world.server.describe()
    );
    assert_eq!(
        done["sessionId"],
        session.as_str(),
        "the handoff resumed the interactive session: {done}"
    );
    assert_eq!(done["finalText"], FINAL_TEXT, "{done}");
    assert_eq!(done["commits"].as_array().map(Vec::len), Some(1), "{done}");
    assert_eq!(
        world
            .env
            .git(&world.repo, &["log", "-1", "--format=%s", "chat"]),
        "agent: hello 1"
    );
    let history = first_opening(&world).to_string();
    let file = match agent {
        "claude-code" => slipway_core::agent::SessionStore::ClaudeCode,
        _ => slipway_core::agent::SessionStore::Codex,
    }
    .locate(world.env.home(), &cwd, &session)
    .map(|f| std::fs::read_to_string(f).unwrap_or_default())
    .unwrap_or_default();
    assert!(
        history.contains("pelican") && history.contains("Ready when you are."),
        "the unattended run continued the interactive conversation:\n{history}\ntranscript:\n{file}"
    );
    let usage = &done["usage"];
    assert_eq!(
        (
            usage["inputTokens"].as_u64(),
            usage["outputTokens"].as_u64(),
            usage["cachedInputTokens"].as_u64()
        ),
        (Some(303), Some(33), Some(21)),
        "{done}"
    );
}

/// `docker-isolated` with the real CLI in its image (not the test image's
/// stand-in): the code goes into the container as a bundle, the agent commits
/// through its own shell tool there against the scripted model on the host's
/// loopback, and the commit comes back, hash-checked, onto the run's branch;
/// the result's usage is what the model sent and its session id the CLI's.
fn isolated_run_commits_through_the_real_cli(agent: &str) {
    let image = agent_image(agent);
    let world = AgentWorld::new(agent, Script::EditAndCommit);
    let (result, error) = world.run(
        &[
            "--sandbox",
            "docker-isolated",
            "--image",
            &image,
            "--network",
            "host",
            "--branch",
            "isolated",
            "--idle-timeout",
            "120",
            "--prompt",
            PROMPT,
        ],
        RUN_LIMIT,
    );
    let log = AgentWorld::log_of(&result);
    assert!(
        error.is_none() && result["status"] == "completed",
        "{agent} in docker-isolated: {error:?}\n{result}\nlog:\n{log}\nmodel server:\n{}",
        world.server.describe()
    );
    assert_eq!(result["completionSignal"], SIGNAL, "{result}");
    assert_eq!(result["finalText"], FINAL_TEXT, "{result}");
    let commits = commit_shas(&result);
    assert_eq!(commits.len(), 1, "{result}\n{log}");
    assert_eq!(world.env.rev(&world.repo, "isolated"), commits[0]);
    assert_eq!(
        world
            .env
            .git(&world.repo, &["log", "-1", "--format=%s", "isolated"]),
        "agent: hello 1"
    );
    assert_eq!(
        world.env.git(&world.repo, &["show", "isolated:hello.txt"]),
        "hello-1"
    );
    // The kept worktree holds what came back, and is clean: the commit is its HEAD.
    let kept = Path::new(s(&result, "preservedWorktreePath"));
    assert_eq!(world.env.rev(kept, "HEAD"), commits[0]);
    assert_eq!(world.env.porcelain(kept), "", "{}", kept.display());
    assert_eq!(
        result_usage(&result),
        world.server.sent_usage(),
        "{agent}: the usage in the result is what the model sent\n{}",
        world.server.describe()
    );
    assert!(
        !s(&result, "sessionId").is_empty(),
        "{agent} named its session: {result}"
    );
    assert_eq!(
        world.env.rev(&world.repo, "main"),
        world.env.rev(&world.repo, "isolated~1"),
        "main is untouched: the branch strategy keeps the work on its branch"
    );
}

#[test]
fn isolated_claude_code() {
    isolated_run_commits_through_the_real_cli("claude-code");
}

#[test]
fn isolated_codex() {
    isolated_run_commits_through_the_real_cli("codex");
}

#[test]
fn handoff_claude_code() {
    handoff_continues_the_interactive_session_in_docker("claude-code");
}

#[test]
fn handoff_codex() {
    handoff_continues_the_interactive_session_in_docker("codex");
}
