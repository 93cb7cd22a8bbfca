//! The providers' parsers on what the real CLIs printed (tests/fixtures/agents/real/,
//! recorded against a scripted model; see its README): the session id, the final
//! answer, usage with cached tokens and cost, notices that are not errors, and a
//! user prompt echoed in the stream that must never count as the assistant's text.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use slipway_core::agent::session::{TokenTotals, codex_usage_total, recorded_cwd};
use slipway_core::agent::{Agent, AgentEvent, AgentSpec};

const SIGNAL: &str = "<promise>COMPLETE</promise>";
const PROMPT: &str = "Create hello.txt and commit it.";
const DONE: &str = "All done: hello.txt is committed. <promise>COMPLETE</promise>";

fn recording(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/agents/real")
        .join(name)
}

fn agent(spec: Value) -> Box<dyn Agent> {
    serde_json::from_value::<AgentSpec>(spec)
        .expect("valid spec")
        .build()
        .expect("builds")
}

fn parse(agent: &dyn Agent, name: &str) -> Vec<AgentEvent> {
    let path = recording(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().flat_map(|l| agent.parse_line(l)).collect()
}

fn sessions(events: &[AgentEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::SessionId { id } => Some(id.as_str()),
            _ => None,
        })
        .collect()
}

/// The assistant's words, where a run looks for the completion signal.
fn assistant_words(events: &[AgentEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Text { text } | AgentEvent::Result { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn results(events: &[AgentEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Result { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn errors(events: &[AgentEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Error { message } => Some(message.as_str()),
            _ => None,
        })
        .collect()
}

/// Sum of the `Usage` events: (input, output, cached, cost).
fn usage_sum(events: &[AgentEvent]) -> (u64, u64, u64, Option<f64>) {
    let mut sum = (0, 0, 0, None::<f64>);
    for e in events {
        if let AgentEvent::Usage {
            input_tokens,
            output_tokens,
            cached_input_tokens,
            cost_usd,
        } = e
        {
            sum.0 += input_tokens;
            sum.1 += output_tokens;
            sum.2 += cached_input_tokens;
            if let Some(c) = cost_usd {
                *sum.3.get_or_insert(0.0) += c;
            }
        }
    }
    sum
}

/// The signal arrives in the assistant's words, and the prompt never does.
fn assert_signal_only_from_the_assistant(events: &[AgentEvent]) {
    let words = assistant_words(events);
    assert!(
        words.iter().any(|w| w.contains(SIGNAL)),
        "the assistant's final words carry the signal: {events:?}"
    );
    assert!(
        words.iter().all(|w| !w.contains(PROMPT)),
        "the user's prompt was taken for the assistant's text: {words:?}"
    );
}

#[test]
fn claude_code_recording() {
    let events = parse(
        agent(json!({"type": "claude-code"})).as_ref(),
        "claude.jsonl",
    );
    assert_eq!(sessions(&events), ["408d3422-ed0a-4bd3-8996-aeae397b56b0"]);
    assert_eq!(results(&events), [DONE]);
    assert!(errors(&events).is_empty(), "{events:?}");
    // 303 uncached + 5 written to the cache + 21 read from it; cost as reported.
    assert_eq!(usage_sum(&events), (329, 33, 21, Some(0.00238175)));
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::ToolCall { name, input } if name == "Bash"
            && input["command"].as_str().is_some_and(|c| c.contains("git commit"))
    )));
    assert_signal_only_from_the_assistant(&events);
}

#[test]
fn claude_code_session_not_found_is_an_error_that_names_it() {
    let events = parse(
        agent(json!({"type": "claude-code"})).as_ref(),
        "claude-resume-notfound.txt",
    );
    assert_eq!(
        errors(&events),
        ["No conversation found with session ID: 93cb0f56-8f7d-4614-8684-7438e46dee98"]
    );
    assert!(results(&events).is_empty());
    // The line before the JSON is a notice, not the assistant speaking.
    assert!(
        matches!(&events[0], AgentEvent::Notice { text } if text.starts_with("No conversation found"))
    );
}

#[test]
fn codex_recordings() {
    let a = agent(json!({"type": "codex"}));
    let events = parse(a.as_ref(), "codex.jsonl");
    assert_eq!(sessions(&events), ["01a23066-1c86-74a3-91d4-44f03c7fa846"]);
    assert_eq!(results(&events), [DONE]);
    // "Model metadata for `fake-model` not found" is a notice, not an error.
    assert!(errors(&events).is_empty(), "{events:?}");
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::Notice { text } if text.starts_with("Model metadata for `fake-model` not found")
    )));
    assert_signal_only_from_the_assistant(&events);
    let total = |events: &[AgentEvent]| {
        events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::SessionUsage {
                    input_tokens,
                    output_tokens,
                    cached_input_tokens,
                } => Some((*input_tokens, *output_tokens, *cached_input_tokens)),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    // Codex reports the thread's running total, never a per-call usage.
    assert_eq!(total(&events), [(303, 33, 21)]);
    assert_eq!(usage_sum(&events), (0, 0, 0, None));
    let resumed = parse(
        agent(json!({"type": "codex"})).as_ref(),
        "codex-resume.jsonl",
    );
    assert_eq!(sessions(&resumed), ["01a23066-1c86-74a3-91d4-44f03c7fa846"]);
    assert_eq!(total(&resumed), [(606, 66, 42)]);

    let default_model = parse(
        agent(json!({"type": "codex"})).as_ref(),
        "codex-default-model.jsonl",
    );
    assert_eq!(results(&default_model), [DONE]);
    assert_eq!(total(&default_model), [(303, 33, 21)]);
}

#[test]
fn codex_rollout_gives_the_total_a_resumed_run_starts_from() {
    let rollout = recording("codex-rollout.jsonl");
    assert_eq!(
        codex_usage_total(&rollout),
        Some(TokenTotals {
            input_tokens: 606,
            output_tokens: 66,
            cached_input_tokens: 42
        })
    );
    assert_eq!(recorded_cwd(&rollout).as_deref(), Some("/tmp/exp/cA"));
    assert_eq!(codex_usage_total(&recording("codex.jsonl")), None);
}

#[test]
fn opencode_recording() {
    let events = parse(
        agent(json!({"type": "opencode"})).as_ref(),
        "opencode.jsonl",
    );
    assert_eq!(sessions(&events), ["ses_dcf9f987cffeNbJWtEuHQPFdh0"]);
    assert_eq!(results(&events), [DONE]);
    assert!(errors(&events).is_empty());
    // Input excludes the cache in the stream: 94 + 7 read, 188 + 14 read.
    assert_eq!(usage_sum(&events), (303, 33, 21, Some(0.0)));
    assert_signal_only_from_the_assistant(&events);
}

#[test]
fn pi_recording_echoes_the_prompt_which_is_not_the_assistant_speaking() {
    let path = recording("pi.jsonl");
    let raw = std::fs::read_to_string(&path).expect("recording");
    assert!(raw.contains(PROMPT), "the recording echoes the prompt");
    let events = parse(agent(json!({"type": "pi"})).as_ref(), "pi.jsonl");
    assert_eq!(sessions(&events), ["01a23060-c6d9-7472-b290-26e366a76c74"]);
    assert_eq!(results(&events), [DONE]);
    assert!(errors(&events).is_empty());
    let (input, output, cached, cost) = usage_sum(&events);
    assert_eq!((input, output, cached), (303, 33, 21));
    assert!(cost.is_some_and(|c| c > 0.0), "Pi reports a cost: {cost:?}");
    assert_signal_only_from_the_assistant(&events);
}

#[test]
fn copilot_recording_has_its_session_at_the_end_and_no_usage() {
    let a = agent(json!({"type": "copilot"}));
    let raw = std::fs::read_to_string(recording("copilot.jsonl")).expect("recording");
    assert!(raw.contains(PROMPT), "the recording echoes the prompt");
    let events = parse(a.as_ref(), "copilot.jsonl");
    assert_eq!(sessions(&events), ["c5fab7b7-29ff-4365-bd53-fc3592d00d24"]);
    // The answer arrives at `assistant.idle`, once.
    assert_eq!(results(&events), [DONE]);
    assert!(errors(&events).is_empty());
    assert_eq!(usage_sum(&events), (0, 0, 0, None));
    assert_signal_only_from_the_assistant(&events);
}

#[test]
fn copilot_usage_comes_from_its_session_log() {
    let a = agent(json!({"type": "copilot"}));
    let path = a
        .session_log("c5fab7b7-29ff-4365-bd53-fc3592d00d24")
        .expect("Copilot keeps a session log");
    assert_eq!(
        path,
        "${COPILOT_HOME:-$HOME/.copilot}/session-state/c5fab7b7-29ff-4365-bd53-fc3592d00d24/events.jsonl"
    );
    assert_eq!(
        a.session_log("$(rm -rf /)"),
        None,
        "ids are checked before a shell sees them"
    );
    let log = std::fs::read_to_string(recording("copilot-session-events.jsonl")).expect("log");
    let usage: Vec<AgentEvent> = log
        .lines()
        .filter_map(|l| a.parse_session_log_line(l))
        .collect();
    assert_eq!(usage_sum(&usage), (303, 33, 21, None));
    assert_eq!(usage.len(), 2, "one record per model call");
}

#[test]
fn copilot_error_recording_is_an_error_without_an_answer() {
    let events = parse(
        agent(json!({"type": "copilot"})).as_ref(),
        "copilot-error.jsonl",
    );
    assert_eq!(sessions(&events), ["706589e5-4d87-4b72-a294-ed5f2dc357f6"]);
    assert!(results(&events).is_empty(), "{events:?}");
    let errs = errors(&events);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].starts_with("Could not connect to local model provider"),
        "{errs:?}"
    );
}
