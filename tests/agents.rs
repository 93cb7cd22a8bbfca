//! Agent providers: exact command lines, the prompt-size guard, stream parsers on
//! recorded-format lines (tests/fixtures/agents/<agent>.jsonl), and session files
//! carried to another HOME and worktree.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use slipway_core::agent::session::{
    SessionError, SessionPlace, SessionStore, claude_project_dir_name, pi_session_dir_name,
};
use slipway_core::agent::{
    Agent, AgentEvent, AgentOptions, AgentSpec, AgentSpecError, MAX_ARG_PROMPT_BYTES,
};

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

fn spec(value: Value) -> AgentSpec {
    serde_json::from_value(value).expect("valid agent spec")
}

fn agent(value: Value) -> Box<dyn Agent> {
    spec(value).build().expect("agent builds")
}

fn unattended(value: Value, prompt: &str) -> (Vec<String>, Option<String>) {
    let inv = agent(value).unattended(prompt).expect("invocation");
    assert!(inv.env.is_empty(), "providers set no environment");
    (inv.argv, inv.stdin)
}

fn interactive(value: Value) -> Vec<String> {
    let inv = agent(value).interactive();
    assert_eq!(inv.stdin, None);
    inv.argv
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/agents")
        .join(format!("{name}.jsonl"));
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn parse_all(agent: &dyn Agent, text: &str) -> Vec<AgentEvent> {
    text.lines().flat_map(|l| agent.parse_line(l)).collect()
}

fn text(t: &str) -> AgentEvent {
    AgentEvent::Text { text: t.into() }
}

fn notice(t: &str) -> AgentEvent {
    AgentEvent::Notice { text: t.into() }
}

fn result(t: &str) -> AgentEvent {
    AgentEvent::Result { text: t.into() }
}

fn session(id: &str) -> AgentEvent {
    AgentEvent::SessionId { id: id.into() }
}

fn tool(name: &str, input: Value) -> AgentEvent {
    AgentEvent::ToolCall {
        name: name.into(),
        input,
    }
}

fn usage(input: u64, output: u64, cached: u64, cost: Option<f64>) -> AgentEvent {
    AgentEvent::Usage {
        input_tokens: input,
        output_tokens: output,
        cached_input_tokens: cached,
        cost_usd: cost,
    }
}

/// Lines every parser must survive: not JSON, JSON of other shapes, unknown types.
const ODD_LINES: [&str; 9] = [
    "",
    "   ",
    "[1,2]",
    "42",
    "{\"type\":\"something.new\",\"data\":{}}",
    "{\"no_type\":true}",
    "{\"type\":\"result\",\"usage\":7,\"result\":[1]}",
    "{\"type\":\"assistant\",\"message\":{\"content\":\"not an array\"}}",
    "{\"type\":\"message_end\",\"message\":{\"role\":\"assistant\",\"content\":5,\"usage\":\"x\"}}",
];

fn assert_survives_odd_lines(spec_json: Value) {
    let a = agent(spec_json);
    for line in ODD_LINES {
        let events = a.parse_line(line);
        assert!(
            events.iter().all(|e| !matches!(e, AgentEvent::Text { .. })),
            "{}: JSON or blank line {line:?} became text: {events:?}",
            a.name()
        );
    }
    // A line outside the event stream (stderr, a question) is never the
    // assistant's text: a prompt echoed there must not count as its answer.
    assert_eq!(
        a.parse_line("warning: something odd\n"),
        vec![notice("warning: something odd")],
        "{}",
        a.name()
    );
    assert_eq!(
        a.parse_line("{not json"),
        vec![notice("{not json")],
        "{}",
        a.name()
    );
}

// ---------------------------------------------------------------------------
// Specs
// ---------------------------------------------------------------------------

#[test]
fn command_spec_parses_and_behaves_as_before() {
    let s = spec(json!({"type": "command", "command": ["sh"]}));
    assert_eq!(
        s,
        AgentSpec::Command {
            command: strs(&["sh"])
        }
    );
    assert_eq!(
        serde_json::to_value(&s).expect("serializes"),
        json!({"type": "command", "command": ["sh"]})
    );
    assert_eq!(s.name(), "command");
    assert_eq!(s.options(), None);
    assert_eq!(s.session_store(), None);
    let a = s.build().expect("builds");
    assert_eq!(a.name(), "command");
    let inv = a.unattended("fix it").expect("command agent never fails");
    assert_eq!(inv.argv, strs(&["sh"]));
    assert_eq!(inv.stdin.as_deref(), Some("fix it"));
    assert_eq!(
        inv.env,
        vec![("SLIPWAY_PROMPT".to_owned(), "fix it".to_owned())]
    );
    // The command agent takes prompts of any size (stdin and environment).
    let big = "x".repeat(MAX_ARG_PROMPT_BYTES * 2);
    assert_eq!(
        a.unattended(&big)
            .expect("big prompt")
            .stdin
            .map(|s| s.len()),
        Some(big.len())
    );
    let inter = a.interactive();
    assert_eq!(inter.argv, strs(&["sh"]));
    assert_eq!(inter.stdin, None);
    assert!(inter.env.is_empty());
    assert_eq!(
        a.parse_line("{\"type\":\"result\"}"),
        vec![text("{\"type\":\"result\"}")]
    );
    assert_eq!(a.parse_line(""), vec![text("")]);
    assert!(matches!(
        spec(json!({"type": "command", "command": []})).build(),
        Err(AgentSpecError::EmptyCommand)
    ));
}

#[test]
fn provider_specs_round_trip_in_camel_case() {
    let full = json!({
        "type": "claude-code",
        "model": "opus",
        "effort": "high",
        "permissionMode": "acceptEdits",
        "binary": "/opt/claude/bin/claude",
        "extraArgs": ["--max-turns", "40"],
        "resume": {"sessionId": "9f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f", "fork": true}
    });
    let s = spec(full.clone());
    assert_eq!(
        s,
        AgentSpec::ClaudeCode(AgentOptions {
            model: Some("opus".into()),
            effort: Some("high".into()),
            permission_mode: Some(slipway_core::agent::PermissionMode::AcceptEdits),
            binary: Some("/opt/claude/bin/claude".into()),
            extra_args: strs(&["--max-turns", "40"]),
            resume: Some(slipway_core::agent::ResumeSpec {
                session_id: "9f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f".into(),
                fork: true,
            }),
        })
    );
    assert_eq!(serde_json::to_value(&s).expect("serializes"), full);
    for name in [
        "claude-code",
        "codex",
        "opencode",
        "pi",
        "cursor",
        "copilot",
    ] {
        let s = spec(json!({"type": name}));
        assert_eq!(s.name(), name);
        assert_eq!(
            serde_json::to_value(&s).expect("ser"),
            json!({"type": name})
        );
        assert_eq!(s.build().expect("builds").name(), name);
        assert_eq!(
            AgentSpec::named(name, AgentOptions::default()).expect("named"),
            s
        );
    }
    assert!(matches!(
        AgentSpec::named("gemini", AgentOptions::default()),
        Err(AgentSpecError::UnknownAgent(_))
    ));
    // `readOnly` is a synonym of `plan`; `fork` defaults to false.
    let s =
        spec(json!({"type": "pi", "permissionMode": "readOnly", "resume": {"sessionId": "abc"}}));
    let o = s.options().expect("options");
    assert_eq!(
        o.permission_mode,
        Some(slipway_core::agent::PermissionMode::Plan)
    );
    assert_eq!(o.resume.as_ref().map(|r| r.fork), Some(false));
    // Typos are errors, not silently ignored options.
    assert!(
        serde_json::from_value::<AgentSpec>(json!({"type": "codex", "permission_mode": "plan"}))
            .is_err()
    );
    assert!(
        serde_json::from_value::<AgentSpec>(json!({"type": "codex", "permissionMode": "yolo"}))
            .is_err()
    );
    assert_eq!(
        spec(json!({"type": "claude-code"})).session_store(),
        Some(SessionStore::ClaudeCode)
    );
    assert_eq!(
        spec(json!({"type": "codex"})).session_store(),
        Some(SessionStore::Codex)
    );
    assert_eq!(
        spec(json!({"type": "pi"})).session_store(),
        Some(SessionStore::Pi)
    );
    assert_eq!(spec(json!({"type": "cursor"})).session_store(), None);
}

#[test]
fn bad_option_values_are_refused_at_build() {
    let bad = [
        json!({"type": "claude-code", "model": "--dangerous"}),
        json!({"type": "claude-code", "model": ""}),
        json!({"type": "codex", "model": "gpt 5"}),
        json!({"type": "codex", "effort": "high\"; rm"}),
        json!({"type": "pi", "effort": "-x"}),
        json!({"type": "opencode", "binary": ""}),
        json!({"type": "claude-code", "resume": {"sessionId": "../../etc/passwd"}}),
        json!({"type": "codex", "resume": {"sessionId": "--last"}}),
    ];
    for value in bad {
        let err = spec(value.clone()).build().err();
        assert!(
            matches!(err, Some(AgentSpecError::InvalidOption { .. })),
            "{value}: {err:?}"
        );
        assert_eq!(err.map(|e| e.kind().as_str()), Some("invalidParams"));
    }
    let unsupported = [
        json!({"type": "cursor", "effort": "high"}),
        json!({"type": "cursor", "resume": {"sessionId": "abc", "fork": true}}),
        json!({"type": "copilot", "resume": {"sessionId": "abc", "fork": true}}),
    ];
    for value in unsupported {
        let err = spec(value.clone()).build().err();
        assert!(
            matches!(err, Some(AgentSpecError::Unsupported { .. })),
            "{value}: {err:?}"
        );
        assert_eq!(err.map(|e| e.kind().as_str()), Some("unsupported"));
    }
}

// ---------------------------------------------------------------------------
// Command lines
// ---------------------------------------------------------------------------

#[test]
fn claude_code_command_lines() {
    let (argv, stdin) = unattended(json!({"type": "claude-code"}), "fix the tests");
    assert_eq!(
        argv,
        strs(&[
            "claude",
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "bypassPermissions"
        ])
    );
    assert_eq!(stdin.as_deref(), Some("fix the tests"));

    let full = json!({
        "type": "claude-code", "model": "opus", "effort": "high",
        "permissionMode": "acceptEdits", "binary": "/opt/bin/claude",
        "extraArgs": ["--max-turns", "40"],
        "resume": {"sessionId": "9f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f"}
    });
    let (argv, _) = unattended(full.clone(), "p");
    assert_eq!(
        argv,
        strs(&[
            "/opt/bin/claude",
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--model",
            "opus",
            "--effort",
            "high",
            "--permission-mode",
            "acceptEdits",
            "--resume",
            "9f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f",
            "--max-turns",
            "40"
        ])
    );
    let (argv, _) = unattended(
        json!({"type": "claude-code", "permissionMode": "plan", "resume": {"sessionId": "s-1", "fork": true}}),
        "p",
    );
    assert_eq!(
        argv,
        strs(&[
            "claude",
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "plan",
            "--resume",
            "s-1",
            "--fork-session"
        ])
    );
    let (argv, _) = unattended(
        json!({"type": "claude-code", "permissionMode": "default"}),
        "p",
    );
    assert_eq!(
        argv,
        strs(&[
            "claude",
            "-p",
            "--output-format",
            "stream-json",
            "--verbose"
        ])
    );

    assert_eq!(
        interactive(json!({"type": "claude-code"})),
        strs(&["claude"])
    );
    assert_eq!(
        interactive(full),
        strs(&[
            "/opt/bin/claude",
            "--model",
            "opus",
            "--effort",
            "high",
            "--permission-mode",
            "acceptEdits",
            "--resume",
            "9f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f",
            "--max-turns",
            "40"
        ])
    );
    assert_eq!(
        interactive(
            json!({"type": "claude-code", "permissionMode": "bypass", "resume": {"sessionId": "s-1", "fork": true}})
        ),
        strs(&[
            "claude",
            "--permission-mode",
            "bypassPermissions",
            "--resume",
            "s-1",
            "--fork-session"
        ])
    );
}

#[test]
fn codex_command_lines() {
    let (argv, stdin) = unattended(json!({"type": "codex"}), "fix the tests");
    assert_eq!(
        argv,
        strs(&[
            "codex",
            "exec",
            "--json",
            "--dangerously-bypass-approvals-and-sandbox",
            "-"
        ])
    );
    assert_eq!(stdin.as_deref(), Some("fix the tests"));

    let full = json!({
        "type": "codex", "model": "gpt-5-codex", "effort": "high",
        "permissionMode": "acceptEdits", "extraArgs": ["--skip-git-repo-check"],
        "resume": {"sessionId": "0199a213-81c0-7800-8aa1-bbab2a035a53"}
    });
    let (argv, _) = unattended(full.clone(), "p");
    assert_eq!(
        argv,
        strs(&[
            "codex",
            "exec",
            "--json",
            "-m",
            "gpt-5-codex",
            "-c",
            "model_reasoning_effort=\"high\"",
            "--sandbox",
            "workspace-write",
            "--skip-git-repo-check",
            "resume",
            "0199a213-81c0-7800-8aa1-bbab2a035a53",
            "-"
        ])
    );
    let (argv, _) = unattended(json!({"type": "codex", "permissionMode": "plan"}), "p");
    assert_eq!(
        argv,
        strs(&["codex", "exec", "--json", "--sandbox", "read-only", "-"])
    );
    let (argv, _) = unattended(json!({"type": "codex", "permissionMode": "default"}), "p");
    assert_eq!(argv, strs(&["codex", "exec", "--json", "-"]));

    // `codex exec fork ID -` and the interactive `codex fork ID` both fork.
    let fork = json!({"type": "codex", "resume": {"sessionId": "0199a213", "fork": true}});
    assert_eq!(
        unattended(fork.clone(), "p").0,
        strs(&[
            "codex",
            "exec",
            "--json",
            "--dangerously-bypass-approvals-and-sandbox",
            "fork",
            "0199a213",
            "-"
        ])
    );
    assert_eq!(interactive(fork), strs(&["codex", "fork", "0199a213"]));

    assert_eq!(interactive(json!({"type": "codex"})), strs(&["codex"]));
    assert_eq!(
        interactive(full),
        strs(&[
            "codex",
            "-m",
            "gpt-5-codex",
            "-c",
            "model_reasoning_effort=\"high\"",
            "--sandbox",
            "workspace-write",
            "--ask-for-approval",
            "on-request",
            "--skip-git-repo-check",
            "resume",
            "0199a213-81c0-7800-8aa1-bbab2a035a53"
        ])
    );
    assert_eq!(
        interactive(json!({"type": "codex", "permissionMode": "plan"})),
        strs(&[
            "codex",
            "--sandbox",
            "read-only",
            "--ask-for-approval",
            "on-request"
        ])
    );
    assert_eq!(
        interactive(json!({"type": "codex", "permissionMode": "bypass"})),
        strs(&["codex", "--dangerously-bypass-approvals-and-sandbox"])
    );
}

#[test]
fn opencode_command_lines() {
    let (argv, stdin) = unattended(json!({"type": "opencode"}), "fix the tests");
    assert_eq!(
        argv,
        strs(&[
            "opencode",
            "run",
            "--format",
            "json",
            "--dangerously-skip-permissions"
        ])
    );
    assert_eq!(stdin.as_deref(), Some("fix the tests"));

    let full = json!({
        "type": "opencode", "model": "anthropic/claude-sonnet-4-5", "effort": "high",
        "permissionMode": "plan", "extraArgs": ["--title", "slipway"],
        "resume": {"sessionId": "ses_494719016ffe85dkDMj0FPRbHK", "fork": true}
    });
    let (argv, _) = unattended(full.clone(), "p");
    assert_eq!(
        argv,
        strs(&[
            "opencode",
            "run",
            "--format",
            "json",
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--variant",
            "high",
            "--agent",
            "plan",
            "--session",
            "ses_494719016ffe85dkDMj0FPRbHK",
            "--fork",
            "--title",
            "slipway"
        ])
    );
    let (argv, _) = unattended(
        json!({"type": "opencode", "permissionMode": "acceptEdits", "resume": {"sessionId": "ses_1"}}),
        "p",
    );
    assert_eq!(
        argv,
        strs(&["opencode", "run", "--format", "json", "--session", "ses_1"])
    );

    assert_eq!(
        interactive(json!({"type": "opencode"})),
        strs(&["opencode"])
    );
    // The TUI has no --variant.
    assert_eq!(
        interactive(full),
        strs(&[
            "opencode",
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--agent",
            "plan",
            "--session",
            "ses_494719016ffe85dkDMj0FPRbHK",
            "--fork",
            "--title",
            "slipway"
        ])
    );
    assert_eq!(
        interactive(json!({"type": "opencode", "permissionMode": "bypass"})),
        strs(&["opencode", "--dangerously-skip-permissions"])
    );
}

#[test]
fn pi_command_lines() {
    let (argv, stdin) = unattended(json!({"type": "pi"}), "fix the tests");
    assert_eq!(argv, strs(&["pi", "-p", "--mode", "json"]));
    assert_eq!(stdin.as_deref(), Some("fix the tests"));

    let full = json!({
        "type": "pi", "model": "anthropic/claude-sonnet-4-5", "effort": "medium",
        "permissionMode": "plan", "extraArgs": ["--no-skills"],
        "resume": {"sessionId": "5f0c6f7e-1b2a-4c3d-9e8f-7a6b5c4d3e2f"}
    });
    let (argv, _) = unattended(full.clone(), "p");
    assert_eq!(
        argv,
        strs(&[
            "pi",
            "-p",
            "--mode",
            "json",
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--thinking",
            "medium",
            "--tools",
            "read,grep,find,ls",
            "--session",
            "5f0c6f7e-1b2a-4c3d-9e8f-7a6b5c4d3e2f",
            "--no-skills"
        ])
    );
    let (argv, _) = unattended(
        json!({"type": "pi", "permissionMode": "acceptEdits", "resume": {"sessionId": "5f0c6f7e", "fork": true}}),
        "p",
    );
    assert_eq!(
        argv,
        strs(&["pi", "-p", "--mode", "json", "--fork", "5f0c6f7e"])
    );

    assert_eq!(interactive(json!({"type": "pi"})), strs(&["pi"]));
    assert_eq!(
        interactive(full),
        strs(&[
            "pi",
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--thinking",
            "medium",
            "--tools",
            "read,grep,find,ls",
            "--session",
            "5f0c6f7e-1b2a-4c3d-9e8f-7a6b5c4d3e2f",
            "--no-skills"
        ])
    );
}

#[test]
fn cursor_command_lines() {
    let (argv, stdin) = unattended(json!({"type": "cursor"}), "- fix the tests");
    assert_eq!(
        argv,
        strs(&[
            "cursor-agent",
            "-p",
            "--output-format",
            "stream-json",
            "--trust",
            "--force",
            "--",
            "- fix the tests"
        ])
    );
    assert_eq!(stdin, None);

    let full = json!({
        "type": "cursor", "model": "gpt-5", "permissionMode": "plan",
        "binary": "agent", "extraArgs": ["--approve-mcps"],
        "resume": {"sessionId": "c6b62c6f-7ead-4fd6-9922-e952131177ff"}
    });
    let (argv, _) = unattended(full.clone(), "p");
    assert_eq!(
        argv,
        strs(&[
            "agent",
            "-p",
            "--output-format",
            "stream-json",
            "--trust",
            "--model",
            "gpt-5",
            "--mode",
            "plan",
            "--resume",
            "c6b62c6f-7ead-4fd6-9922-e952131177ff",
            "--approve-mcps",
            "--",
            "p"
        ])
    );
    let (argv, _) = unattended(
        json!({"type": "cursor", "permissionMode": "acceptEdits"}),
        "p",
    );
    assert_eq!(
        argv,
        strs(&[
            "cursor-agent",
            "-p",
            "--output-format",
            "stream-json",
            "--trust",
            "--",
            "p"
        ])
    );

    assert_eq!(
        interactive(json!({"type": "cursor"})),
        strs(&["cursor-agent"])
    );
    assert_eq!(
        interactive(full),
        strs(&[
            "agent",
            "--model",
            "gpt-5",
            "--mode",
            "plan",
            "--resume",
            "c6b62c6f-7ead-4fd6-9922-e952131177ff",
            "--approve-mcps"
        ])
    );
    assert_eq!(
        interactive(json!({"type": "cursor", "permissionMode": "bypass"})),
        strs(&["cursor-agent", "--force"])
    );
}

#[test]
fn copilot_command_lines() {
    let (argv, stdin) = unattended(json!({"type": "copilot"}), "fix the tests");
    assert_eq!(
        argv,
        strs(&[
            "copilot",
            "--output-format",
            "json",
            "--allow-all-tools",
            "-p",
            "fix the tests"
        ])
    );
    assert_eq!(stdin, None);

    let full = json!({
        "type": "copilot", "model": "gpt-5.2", "effort": "xhigh",
        "permissionMode": "acceptEdits", "extraArgs": ["--no-color"],
        "resume": {"sessionId": "b3d1c9a0-5e4f-4a2b-8c7d-6e5f4a3b2c1d"}
    });
    let (argv, _) = unattended(full.clone(), "p");
    assert_eq!(
        argv,
        strs(&[
            "copilot",
            "--output-format",
            "json",
            "--model",
            "gpt-5.2",
            "--reasoning-effort",
            "xhigh",
            "--allow-tool",
            "write",
            "--resume",
            "b3d1c9a0-5e4f-4a2b-8c7d-6e5f4a3b2c1d",
            "-C",
            ".",
            "--no-color",
            "-p",
            "p"
        ])
    );
    let (argv, _) = unattended(json!({"type": "copilot", "permissionMode": "plan"}), "p");
    assert_eq!(
        argv,
        strs(&[
            "copilot",
            "--output-format",
            "json",
            "--deny-tool",
            "write",
            "--deny-tool",
            "shell",
            "-p",
            "p"
        ])
    );

    assert_eq!(interactive(json!({"type": "copilot"})), strs(&["copilot"]));
    assert_eq!(
        interactive(full),
        strs(&[
            "copilot",
            "--model",
            "gpt-5.2",
            "--reasoning-effort",
            "xhigh",
            "--allow-tool",
            "write",
            "--resume",
            "b3d1c9a0-5e4f-4a2b-8c7d-6e5f4a3b2c1d",
            "-C",
            ".",
            "--no-color"
        ])
    );
}

#[test]
fn argument_prompts_are_size_guarded() {
    let limit = MAX_ARG_PROMPT_BYTES;
    assert_eq!(limit, 100_000);
    for name in ["cursor", "copilot"] {
        let a = agent(json!({"type": name}));
        let fits = "é".repeat(limit / 2);
        let inv = a.unattended(&fits).expect("prompt at the limit");
        assert_eq!(inv.argv.last(), Some(&fits), "{name}");
        let over = format!("{fits}x");
        match a.unattended(&over) {
            Err(
                e @ AgentSpecError::PromptTooLarge {
                    bytes,
                    limit: l,
                    agent,
                },
            ) => {
                assert_eq!((bytes, l, agent), (limit + 1, limit, name));
                assert_eq!(e.kind(), "promptTooLarge");
                assert!(e.to_string().contains("100000 bytes"), "{e}");
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    // Agents that read stdin take any size.
    let huge = "y".repeat(limit * 3);
    for name in ["claude-code", "codex", "opencode", "pi"] {
        let inv = agent(json!({"type": name}))
            .unattended(&huge)
            .expect("stdin prompt");
        assert_eq!(
            inv.stdin.as_ref().map(String::len),
            Some(huge.len()),
            "{name}"
        );
        assert!(inv.argv.iter().all(|a| a.len() < 1000), "{name}");
    }
}

// ---------------------------------------------------------------------------
// Parsers
// ---------------------------------------------------------------------------

#[test]
fn claude_code_stream() {
    let a = agent(json!({"type": "claude-code"}));
    let events = parse_all(a.as_ref(), &fixture("claude-code"));
    let done = "Fixed the empty-input check; all tests pass.\n<promise>COMPLETE</promise>";
    assert_eq!(
        events,
        vec![
            session("9f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f"),
            text("I'll run the tests first."),
            tool(
                "Bash",
                json!({"command": "cargo test", "description": "Run the test suite"})
            ),
            tool(
                "Edit",
                json!({
                    "file_path": "/work/repo/.slipway/worktrees/feat-x/src/parse.rs",
                    "old_string": "if s.len() > 0",
                    "new_string": "if !s.is_empty()"
                })
            ),
            text(done),
            result(done),
            usage(12 + 2400 + 33000, 420, 33000, Some(0.0421)),
        ]
    );
    assert_survives_odd_lines(json!({"type": "claude-code"}));
    // Errors are reported as errors, not results.
    let b = agent(json!({"type": "claude-code"}));
    assert_eq!(
        b.parse_line(r#"{"type":"result","subtype":"error_max_turns","is_error":true,"session_id":"s1","num_turns":40}"#),
        vec![session("s1"), AgentEvent::Error { message: "error_max_turns".into() }]
    );
    assert_eq!(
        b.parse_line(r#"{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key","session_id":"s1"}"#),
        vec![AgentEvent::Error { message: "Invalid API key".into() }]
    );
}

#[test]
fn codex_stream() {
    let a = agent(json!({"type": "codex"}));
    let events = parse_all(a.as_ref(), &fixture("codex"));
    let done = "Added a Usage section to the README.\n<promise>COMPLETE</promise>";
    assert_eq!(
        events,
        vec![
            session("0199a213-81c0-7800-8aa1-bbab2a035a53"),
            tool("command_execution", json!({"command": "bash -lc ls"})),
            tool(
                "file_change",
                json!({"changes": [{"path": "/work/repo/.slipway/worktrees/feat-x/README.md", "kind": "update"}]})
            ),
            tool("docs/search", json!({"q": "readme conventions"})),
            tool("web_search", json!({"query": "rust readme usage section"})),
            text(done),
            result(done),
            AgentEvent::SessionUsage {
                input_tokens: 24763,
                output_tokens: 122,
                cached_input_tokens: 24448
            },
        ]
    );
    assert_survives_odd_lines(json!({"type": "codex"}));
    let b = agent(json!({"type": "codex"}));
    assert_eq!(
        b.parse_line(r#"{"type":"turn.failed","error":{"message":"stream disconnected"}}"#),
        vec![AgentEvent::Error {
            message: "stream disconnected".into()
        }]
    );
    assert_eq!(
        b.parse_line(r#"{"type":"error","message":"Reconnecting... 1/5"}"#),
        vec![AgentEvent::Error {
            message: "Reconnecting... 1/5".into()
        }]
    );
    // A turn without a message has no result.
    assert_eq!(
        b.parse_line(r#"{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":1}}"#),
        vec![AgentEvent::SessionUsage {
            input_tokens: 10,
            output_tokens: 1,
            cached_input_tokens: 0
        }]
    );
}

#[test]
fn opencode_stream() {
    let a = agent(json!({"type": "opencode"}));
    let events = parse_all(a.as_ref(), &fixture("opencode"));
    let done = "The build passes.\n<promise>COMPLETE</promise>";
    assert_eq!(
        events,
        vec![
            session("ses_494719016ffe85dkDMj0FPRbHK"),
            text("Let me check that the build passes."),
            tool(
                "bash",
                json!({"command": "cargo build", "description": "Build the crate"})
            ),
            usage(1200 + 9000 + 300, 80, 9000, Some(0.0031)),
            text(done),
            result(done),
            usage(150 + 10200, 40 + 12, 10200, Some(0.0012)),
        ]
    );
    assert_survives_odd_lines(json!({"type": "opencode"}));
    let b = agent(json!({"type": "opencode"}));
    assert_eq!(
        b.parse_line(r#"{"type":"error","timestamp":1,"sessionID":"ses_9","error":{"name":"ProviderAuthError","data":{"providerID":"anthropic","message":"no API key"}}}"#),
        vec![session("ses_9"), AgentEvent::Error { message: "no API key".into() }]
    );
}

#[test]
fn pi_stream() {
    let a = agent(json!({"type": "pi"}));
    let events = parse_all(a.as_ref(), &fixture("pi"));
    let done = "Fixed the index.\n<promise>COMPLETE</promise>";
    assert_eq!(
        events,
        vec![
            session("5f0c6f7e-1b2a-4c3d-9e8f-7a6b5c4d3e2f"),
            text("Looking at src/lib.rs."),
            usage(8 + 5200, 64, 0, Some(0.020484)),
            tool("read", json!({"path": "src/lib.rs"})),
            tool(
                "edit",
                json!({"path": "src/lib.rs", "oldText": "v[v.len()]", "newText": "v[v.len() - 1]"})
            ),
            text(done),
            usage(12 + 5200, 20, 5200, Some(0.001896)),
            result(done),
        ]
    );
    assert_survives_odd_lines(json!({"type": "pi"}));
    let b = agent(json!({"type": "pi"}));
    assert_eq!(
        b.parse_line(r#"{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"429 rate limited","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"total":0}}}}"#),
        vec![usage(0, 0, 0, Some(0.0)), AgentEvent::Error { message: "429 rate limited".into() }]
    );
    assert_eq!(
        b.parse_line(r#"{"type":"agent_end","messages":[{"role":"assistant","content":[],"stopReason":"error"}]}"#),
        vec![]
    );
}

#[test]
fn cursor_stream() {
    let a = agent(json!({"type": "cursor"}));
    let events = parse_all(a.as_ref(), &fixture("cursor"));
    assert_eq!(
        events,
        vec![
            session("c6b62c6f-7ead-4fd6-9922-e952131177ff"),
            text("I'll read the README first."),
            tool("read", json!({"path": "README.md"})),
            tool(
                "write",
                json!({"path": "README.md", "fileText": "# feat-x\n\n## Usage\n", "toolCallId": "toolu_vrtx_02"})
            ),
            tool("grep", json!({"pattern": "TODO"})),
            text("Added a Usage section.\n<promise>COMPLETE</promise>"),
            result(
                "I'll read the README first.Added a Usage section.\n<promise>COMPLETE</promise>"
            ),
        ]
    );
    assert_survives_odd_lines(json!({"type": "cursor"}));
}

#[test]
fn copilot_stream() {
    let a = agent(json!({"type": "copilot"}));
    let events = parse_all(a.as_ref(), &fixture("copilot"));
    let done = "Fixed the assertion; the test passes.\n<promise>COMPLETE</promise>";
    assert_eq!(
        events,
        vec![
            session("b3d1c9a0-5e4f-4a2b-8c7d-6e5f4a3b2c1d"),
            text("Let me run the tests."),
            usage(9800, 18, 9000, None),
            tool("bash", json!({"command": "npm test"})),
            text(done),
            usage(10400, 42, 9800, None),
            result(done),
        ]
    );
    assert_survives_odd_lines(json!({"type": "copilot"}));
    let b = agent(json!({"type": "copilot"}));
    assert_eq!(
        b.parse_line(r#"{"type":"session.error","data":{"errorType":"quota","message":"quota exceeded"},"id":"x","timestamp":"t","parentId":null}"#),
        vec![AgentEvent::Error { message: "quota exceeded".into() }]
    );
}

#[test]
fn events_serialize_in_camel_case() {
    assert_eq!(
        serde_json::to_value(usage(3, 2, 1, Some(0.5))).expect("ser"),
        json!({"type": "usage", "inputTokens": 3, "outputTokens": 2, "cachedInputTokens": 1, "costUsd": 0.5})
    );
    assert_eq!(
        serde_json::to_value(tool("Bash", json!({"command": "ls"}))).expect("ser"),
        json!({"type": "toolCall", "name": "Bash", "input": {"command": "ls"}})
    );
    assert_eq!(
        serde_json::to_value(session("s")).expect("ser"),
        json!({"type": "sessionId", "id": "s"})
    );
}

// ---------------------------------------------------------------------------
// Session files
// ---------------------------------------------------------------------------

struct Homes {
    _tmp: tempfile::TempDir,
    old_home: PathBuf,
    new_home: PathBuf,
    old_cwd: PathBuf,
    new_cwd: PathBuf,
}

fn homes() -> Homes {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().to_path_buf();
    Homes {
        old_home: root.join("home-host"),
        new_home: root.join("home-sandbox"),
        old_cwd: root.join("repo/.slipway/worktrees/feat_x"),
        new_cwd: PathBuf::from("/sandbox/work/feat_x"),
        _tmp: tmp,
    }
}

fn json_str(p: &Path) -> String {
    serde_json::to_string(p.to_str().expect("utf-8")).expect("json")
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, text).expect("write");
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn claude_code_session_moves_to_another_home_and_worktree() {
    let h = homes();
    let id = "9f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f";
    let old = json_str(&h.old_cwd);
    let sibling = json_str(&h.old_cwd.with_file_name("feat_x2"));
    let dir_name = claude_project_dir_name(h.old_cwd.to_str().expect("utf-8"));
    assert!(!dir_name.contains('_') && !dir_name.contains('.') && dir_name.starts_with('-'));
    let file = h
        .old_home
        .join(".claude/projects")
        .join(&dir_name)
        .join(format!("{id}.jsonl"));
    let body = format!(
        "{{\"type\":\"user\",\"cwd\":{old},\"sessionId\":\"{id}\",\"message\":{{\"role\":\"user\",\"content\":\"fix\"}}}}\n\
         {{\"type\":\"assistant\",\"cwd\":{old},\"message\":{{\"content\":[{{\"type\":\"tool_use\",\"name\":\"Read\",\"input\":{{\"file_path\":{inner}}}}}]}}}}\n\
         {{\"type\":\"user\",\"cwd\":{old},\"note\":{sibling}}}\n",
        inner = json_str(&h.old_cwd.join("src/lib.rs")),
    );
    write(&file, &body);
    let side = file.with_extension("").join("subagents/agent-a1.jsonl");
    write(&side, &format!("{{\"cwd\":{old}}}\n"));
    // Another session of the same project stays where it is.
    write(&file.with_file_name("other.jsonl"), "{}\n");

    let store = SessionStore::ClaudeCode;
    assert_eq!(
        store.locate(&h.old_home, &h.old_cwd, id).expect("found"),
        file
    );
    // Found from another directory too (the whole store is searched).
    assert_eq!(
        store
            .locate(&h.old_home, Path::new("/elsewhere"), id)
            .expect("found"),
        file
    );

    let copied = store
        .copy(
            id,
            SessionPlace {
                home: &h.old_home,
                cwd: &h.old_cwd,
            },
            SessionPlace {
                home: &h.new_home,
                cwd: &h.new_cwd,
            },
        )
        .expect("copied");
    assert_eq!(
        copied,
        h.new_home
            .join(".claude/projects/-sandbox-work-feat-x")
            .join(format!("{id}.jsonl"))
    );
    let new = json_str(&h.new_cwd);
    let expected = body
        .replace(&old[..old.len() - 1], &new[..new.len() - 1])
        .replace(&json_str(&h.new_cwd.with_file_name("feat_x2")), &sibling);
    assert_eq!(read(&copied), expected);
    assert!(
        read(&copied).contains(&sibling),
        "a sibling path is left alone"
    );
    assert!(read(&copied).contains("\"/sandbox/work/feat_x/src/lib.rs\""));
    for line in read(&copied).lines() {
        serde_json::from_str::<Value>(line).expect("still JSON");
    }
    assert_eq!(
        read(&copied.with_extension("").join("subagents/agent-a1.jsonl")),
        "{\"cwd\":\"/sandbox/work/feat_x\"}\n"
    );
    assert_eq!(read(&file), body, "the original is untouched");
    assert!(!copied.with_file_name("other.jsonl").exists());
    // The copy is where Claude Code looks for it.
    assert_eq!(
        store.locate(&h.new_home, &h.new_cwd, id).expect("found"),
        copied
    );
    // Copying again replaces it.
    store
        .copy(
            id,
            SessionPlace {
                home: &h.old_home,
                cwd: &h.old_cwd,
            },
            SessionPlace {
                home: &h.new_home,
                cwd: &h.new_cwd,
            },
        )
        .expect("copied again");
    assert_eq!(read(&copied), expected);
}

#[test]
fn codex_session_moves_to_another_home_and_worktree() {
    let h = homes();
    let id = "0199a213-81c0-7800-8aa1-bbab2a035a53";
    let old = json_str(&h.old_cwd);
    let rel = format!("2026/11/29/rollout-2026-11-29T10-00-00-{id}.jsonl");
    let file = h.old_home.join(".codex/sessions").join(&rel);
    let body = format!(
        "{{\"timestamp\":\"2026-11-29T10:00:00.000Z\",\"type\":\"session_meta\",\"payload\":{{\"id\":\"{id}\",\"cwd\":{old},\"originator\":\"codex_cli_rs\",\"cli_version\":\"0.60.1\"}}}}\n\
         {{\"timestamp\":\"2026-11-29T10:00:01.000Z\",\"type\":\"turn_context\",\"payload\":{{\"cwd\":{old},\"approval_policy\":\"never\"}}}}\n\
         {{\"timestamp\":\"2026-11-29T10:00:02.000Z\",\"type\":\"response_item\",\"payload\":{{\"type\":\"message\",\"role\":\"user\",\"content\":[{{\"type\":\"input_text\",\"text\":\"<environment_context>\\n  <cwd>{raw}</cwd>\\n</environment_context>\"}}]}}}}\n",
        raw = h.old_cwd.display(),
    );
    write(&file, &body);
    write(
        &h.old_home
            .join(".codex/sessions/2026/11/28/rollout-2026-11-28T09-00-00-aaaa-bbbb.jsonl"),
        "{}\n",
    );

    let store = SessionStore::Codex;
    assert_eq!(
        store.locate(&h.old_home, &h.old_cwd, id).expect("found"),
        file
    );
    let copied = store
        .copy(
            id,
            SessionPlace {
                home: &h.old_home,
                cwd: &h.old_cwd,
            },
            SessionPlace {
                home: &h.new_home,
                cwd: &h.new_cwd,
            },
        )
        .expect("copied");
    assert_eq!(copied, h.new_home.join(".codex/sessions").join(&rel));
    let text = read(&copied);
    assert_eq!(text.matches("\"cwd\":\"/sandbox/work/feat_x\"").count(), 2);
    assert!(text.contains("<cwd>/sandbox/work/feat_x</cwd>"));
    assert!(!text.contains(h.old_cwd.to_str().expect("utf-8")));
    assert_eq!(text.lines().count(), 3);
    for line in text.lines() {
        serde_json::from_str::<Value>(line).expect("still JSON");
    }
    assert_eq!(
        store.locate(&h.new_home, &h.new_cwd, id).expect("found"),
        copied
    );
}

#[test]
fn pi_session_moves_to_another_home_and_worktree() {
    let h = homes();
    let id = "5f0c6f7e-1b2a-4c3d-9e8f-7a6b5c4d3e2f";
    let old = json_str(&h.old_cwd);
    let name = format!("2026-11-29T10-00-00-000Z_{id}.jsonl");
    let dir = pi_session_dir_name(h.old_cwd.to_str().expect("utf-8"));
    assert!(dir.starts_with("--") && dir.ends_with("--") && !dir[2..dir.len() - 2].contains('/'));
    let file = h.old_home.join(".pi/agent/sessions").join(&dir).join(&name);
    let body = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2026-11-29T10:00:00.000Z\",\"cwd\":{old}}}\n\
         {{\"type\":\"message\",\"id\":\"a1b2c3d4\",\"parentId\":null,\"timestamp\":\"2026-11-29T10:00:01.000Z\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"toolCall\",\"id\":\"t1\",\"name\":\"read\",\"arguments\":{{\"path\":{inner}}}}}]}}}}\n",
        inner = json_str(&h.old_cwd.join("src/lib.rs")),
    );
    write(&file, &body);

    let store = SessionStore::Pi;
    assert_eq!(
        store.locate(&h.old_home, &h.old_cwd, id).expect("found"),
        file
    );
    assert_eq!(
        store
            .locate(&h.old_home, Path::new("/elsewhere"), id)
            .expect("found"),
        file
    );
    let copied = store
        .copy(
            id,
            SessionPlace {
                home: &h.old_home,
                cwd: &h.old_cwd,
            },
            SessionPlace {
                home: &h.new_home,
                cwd: &h.new_cwd,
            },
        )
        .expect("copied");
    assert_eq!(
        copied,
        h.new_home
            .join(".pi/agent/sessions/--sandbox-work-feat_x--")
            .join(&name)
    );
    let text = read(&copied);
    assert!(text.contains("\"cwd\":\"/sandbox/work/feat_x\""));
    assert!(text.contains("\"path\":\"/sandbox/work/feat_x/src/lib.rs\""));
    assert!(!text.contains(h.old_cwd.to_str().expect("utf-8")));
    assert_eq!(
        store.locate(&h.new_home, &h.new_cwd, id).expect("found"),
        copied
    );
}

#[test]
fn session_lookup_errors() {
    let h = homes();
    for store in [
        SessionStore::ClaudeCode,
        SessionStore::Codex,
        SessionStore::Pi,
    ] {
        match store.locate(&h.old_home, &h.old_cwd, "missing-id") {
            Err(e @ SessionError::NotFound { .. }) => {
                assert_eq!(e.kind(), "sessionNotFound");
                assert!(e.to_string().contains("missing-id"), "{e}");
            }
            other => panic!("{store:?}: {other:?}"),
        }
        for bad in ["../etc/passwd", "a/b", "", "-x"] {
            assert!(
                matches!(
                    store.locate(&h.old_home, &h.old_cwd, bad),
                    Err(SessionError::InvalidId(_))
                ),
                "{store:?} {bad:?}"
            );
        }
        let err = store
            .copy(
                "abc",
                SessionPlace {
                    home: &h.old_home,
                    cwd: Path::new("relative/dir"),
                },
                SessionPlace {
                    home: &h.new_home,
                    cwd: &h.new_cwd,
                },
            )
            .err();
        assert!(
            matches!(err, Some(SessionError::InvalidPath { .. })),
            "{err:?}"
        );
    }
}

// ---------------------------------------------------------------------------
// Carrying a session into the working directory a run resumes it in
// ---------------------------------------------------------------------------

/// A session file recorded in `old_cwd`, placed where `store` keeps it.
fn plant(store: SessionStore, root: &Path, old_cwd: &Path, id: &str) -> PathBuf {
    let cwd = json_str(old_cwd);
    let (file, body) = match store {
        SessionStore::ClaudeCode => (
            root.join(claude_project_dir_name(old_cwd.to_str().expect("utf-8")))
                .join(format!("{id}.jsonl")),
            format!(
                "{{\"type\":\"mode\",\"mode\":\"normal\"}}\n{{\"type\":\"user\",\"cwd\":{cwd},\"message\":{{\"content\":\"edit {inner}\"}}}}\n",
                inner = old_cwd.join("src/a.rs").display()
            ),
        ),
        SessionStore::Pi => (
            root.join(pi_session_dir_name(old_cwd.to_str().expect("utf-8")))
                .join(format!("2026-12-01T08-52-46-834Z_{id}.jsonl")),
            format!("{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"cwd\":{cwd}}}\n"),
        ),
        SessionStore::Codex => (
            root.join(format!("2026/12/01/rollout-2026-12-01T08-53-05-{id}.jsonl")),
            format!(
                "{{\"type\":\"session_meta\",\"payload\":{{\"id\":\"{id}\",\"cwd\":{cwd}}}}}\n\
                 {{\"type\":\"event_msg\",\"payload\":{{\"type\":\"token_count\",\"info\":{{\"total_token_usage\":{{\"input_tokens\":303,\"cached_input_tokens\":21,\"output_tokens\":33}}}}}}}}\n"
            ),
        ),
    };
    write(&file, &body);
    file
}

#[test]
fn a_session_recorded_in_a_removed_worktree_is_carried_into_the_new_one() {
    let h = homes();
    let new_cwd = h.old_cwd.with_file_name("merge-2");
    for store in [SessionStore::ClaudeCode, SessionStore::Pi] {
        let root = store.root(&h.old_home);
        let id = "01a230ce-766a-7531-ad39-02a4b5acb64d";
        let old = plant(store, &root, &h.old_cwd, id);
        let before = read(&old);
        let carried = store
            .carry(id, &root, &root, &new_cwd)
            .unwrap_or_else(|e| panic!("{store:?}: {e}"));
        assert_eq!(
            carried.copied_from.as_deref(),
            Some(old.as_path()),
            "{store:?}"
        );
        assert_eq!(
            store.locate(&h.old_home, &new_cwd, id).expect("found"),
            carried.file,
            "{store:?}: the copy is where the agent looks from the new directory"
        );
        let copy = read(&carried.file);
        assert!(copy.contains(&json_str(&new_cwd)), "{store:?}: {copy}");
        assert!(!copy.contains(&json_str(&h.old_cwd)), "{store:?}: {copy}");
        assert_eq!(
            read(&old),
            before,
            "{store:?}: the original stays as it was"
        );
        let again = store.carry(id, &root, &root, &new_cwd).expect("in place");
        assert_eq!(
            again.copied_from, None,
            "{store:?}: nothing to carry the second time"
        );
        assert_eq!(again.file, carried.file);
        assert_eq!(again.usage_total, None);
    }
    // Codex keeps sessions by date, not by directory: nothing moves, and the
    // running total a resumed run starts from is read.
    let store = SessionStore::Codex;
    let root = store.root(&h.old_home);
    let id = "01a230ce-bfb9-7e32-b4c1-4ec66a52672d";
    let file = plant(store, &root, &h.old_cwd, id);
    let carried = store.carry(id, &root, &root, &new_cwd).expect("codex");
    assert_eq!(carried.copied_from, None);
    assert_eq!(carried.file, file);
    assert_eq!(
        carried.usage_total,
        Some(slipway_core::agent::session::TokenTotals {
            input_tokens: 303,
            output_tokens: 33,
            cached_input_tokens: 21
        })
    );
    let missing = store.carry("0badc0de", &root, &root, &new_cwd).err();
    assert!(
        matches!(&missing, Some(e) if e.kind() == "sessionNotFound"),
        "{missing:?}"
    );
}

#[test]
fn the_newest_session_of_a_directory_is_found() {
    let h = homes();
    let other = h.old_cwd.with_file_name("other");
    for store in [
        SessionStore::ClaudeCode,
        SessionStore::Pi,
        SessionStore::Codex,
    ] {
        let root = store.root(&h.old_home);
        assert_eq!(
            store.latest_for_cwd(&root, &h.old_cwd),
            None,
            "{store:?}: none yet"
        );
        let older = plant(
            store,
            &root,
            &h.old_cwd,
            "11111111-0000-4000-8000-000000000001",
        );
        // Older by its time stamp, not by waiting for the clock to move.
        std::fs::File::options()
            .write(true)
            .open(&older)
            .and_then(|f| {
                f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(60))
            })
            .expect("backdate the older session");
        let newer = plant(
            store,
            &root,
            &h.old_cwd,
            "22222222-0000-4000-8000-000000000002",
        );
        if store == SessionStore::Codex {
            // Codex's rollout names carry the start time; the newest sorts last.
            let later = newer.with_file_name(
                "rollout-2026-12-01T09-00-00-22222222-0000-4000-8000-000000000002.jsonl",
            );
            fs::rename(&newer, later).expect("rename");
        }
        plant(store, &root, &other, "33333333-0000-4000-8000-000000000003");
        assert_eq!(
            store.latest_for_cwd(&root, &h.old_cwd).as_deref(),
            Some("22222222-0000-4000-8000-000000000002"),
            "{store:?}"
        );
    }
}
