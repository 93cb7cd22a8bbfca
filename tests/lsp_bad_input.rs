//! Bad input to the real `slipway lsp` sidecar: after each bad message the
//! same session must still answer a good request. Message-level mistakes
//! (unknown methods and commands, wrong arguments, paths outside any
//! repository, hostile branch names) come first, framing-level garbage last.

use crate::common;
use crate::common::lsp;

use std::path::Path;
use std::time::Duration;

use common::*;
use lsp::*;
use serde_json::{Value, json};

/// A good request must be answered, and answered well.
fn still_answers(lsp: &mut Lsp, repo: &Path, after: &str) {
    assert!(
        lsp.is_running(),
        "the sidecar died after {after}\nstderr:\n{}",
        lsp.stderr()
    );
    let id = lsp.send_request(
        "workspace/executeCommand",
        json!({ "command": "slipway.branches", "arguments": [{ "root": repo }] }),
    );
    let answer = lsp.wait_response(id, Duration::from_secs(10)).msg;
    let names: Vec<&str> = answer["result"]["branches"]
        .as_array()
        .unwrap_or_else(|| panic!("after {after}, slipway.branches answered {answer}"))
        .iter()
        .filter_map(|b| b["name"].as_str())
        .collect();
    assert_eq!(names, ["main"], "after {after}");
    let status = lsp.ok("slipway.status", json!({ "path": repo }));
    assert_eq!(status["inWorktree"], false, "after {after}: {status}");
}

fn execute_raw(lsp: &mut Lsp, params: Value) -> Value {
    lsp.request("workspace/executeCommand", params)
}

fn assert_nothing_created(env: &TestEnv, repo: &Path, name: &str) {
    let dir = repo.join(".slipway/worktrees");
    let entries: Vec<_> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd.flatten().map(|e| e.path()).collect(),
        Err(_) => Vec::new(),
    };
    assert!(
        entries.is_empty(),
        "branch {name:?}: something was created under .slipway/worktrees: {entries:?}"
    );
    assert_eq!(
        env.local_branches(repo),
        ["main"],
        "branch {name:?}: no branch may be created"
    );
    let all_refs = env.git(repo, &["for-each-ref", "--format=%(refname)"]);
    assert_eq!(all_refs, "refs/heads/main", "branch {name:?}");
    // Nothing escaped the worktrees folder either.
    assert!(!repo.join(".slipway/x").exists() && !repo.join("x").exists());
}

/// Sends `bytes` followed at once by a framed good request; returns whether
/// that request was answered within a few seconds.
fn bad_bytes_then_request(lsp: &mut Lsp, repo: &Path, bytes: &[u8]) -> bool {
    let id = lsp.fresh_id();
    let good = frame(&json!({
        "jsonrpc": "2.0", "id": id, "method": "workspace/executeCommand",
        "params": { "command": "slipway.status", "arguments": [{ "path": repo }] },
    }));
    let mut all = bytes.to_vec();
    all.extend_from_slice(&good);
    if lsp.write_raw(&all).is_err() {
        return false;
    }
    lsp.collect_for(Duration::from_secs(3));
    lsp.history().iter().any(|r| {
        r.msg.get("method").is_none() && r.msg["id"] == id && r.msg.get("result").is_some()
    })
}

#[test]
fn bad_input_never_ends_the_session() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo").canonicalize().expect("canonical");
    let mut lsp = Lsp::start(&env, Some(&repo), true);
    still_answers(&mut lsp, &repo, "start-up");

    // An unknown method.
    let answer = lsp.request("slipway/noSuchMethod", json!({}));
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    still_answers(&mut lsp, &repo, "an unknown method");
    // An unknown notification is ignored.
    lsp.notify("slipway/noSuchNotification", json!({ "x": 1 }));
    still_answers(&mut lsp, &repo, "an unknown notification");

    // An unknown command.
    let error = lsp.err("slipway.frobnicate", json!({ "root": repo }));
    assert_eq!(kind(&error), "unknownCommand", "{error}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("slipway.frobnicate")),
        "{error}"
    );
    still_answers(&mut lsp, &repo, "an unknown command");

    // A run nobody started.
    let error = lsp.err("slipway.cancel", json!({ "runId": "run-0-abcdef" }));
    assert_eq!(kind(&error), "unknownRun", "{error}");
    still_answers(&mut lsp, &repo, "cancelling an unknown run");
    // Something that is no run id at all never becomes a file name.
    let error = lsp.err("slipway.cancel", json!({ "runId": "run-0-nothing" }));
    assert_eq!(kind(&error), "invalidParams", "{error}");
    still_answers(&mut lsp, &repo, "cancelling with a malformed run id");

    // Wrong argument types.
    let error = lsp.err("slipway.branches", json!({ "root": 42 }));
    assert_eq!(kind(&error), "invalidParams", "{error}");
    assert_eq!(error["code"], -32602, "{error}");
    let error = lsp.err("slipway.createWorktree", json!(42));
    assert_eq!(kind(&error), "invalidParams", "{error}");
    let error = lsp.err(
        "slipway.close",
        json!({ "root": repo, "worktree": "x", "force": "yes" }),
    );
    assert_eq!(kind(&error), "invalidParams", "{error}");
    still_answers(&mut lsp, &repo, "wrong argument types");

    // Values the types allow but that make no sense: refused before anything exists.
    let error = lsp.err(
        "slipway.createWorktree",
        json!({ "root": repo, "strategy": "branch", "branch": "copy-x", "copy": ["../secrets"] }),
    );
    assert_eq!(kind(&error), "invalidParams", "{error}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("leaves the repository")),
        "{error}"
    );
    assert_nothing_created(&env, &repo, "copy-x");
    let error = lsp.err(
        "slipway.run",
        json!({ "root": repo, "strategy": "branch", "branch": "sig-x",
                "agent": {"type": "command", "command": ["true"]},
                "completionSignals": [""] }),
    );
    assert_eq!(kind(&error), "invalidParams", "{error}");
    assert_nothing_created(&env, &repo, "sig-x");
    still_answers(&mut lsp, &repo, "nonsense values");

    // No arguments: an empty list, or no list at all.
    let answer = execute_raw(
        &mut lsp,
        json!({ "command": "slipway.branches", "arguments": [] }),
    );
    let error = into_result(answer).expect_err("no arguments is an error");
    assert_eq!(kind(&error), "invalidParams", "{error}");
    let answer = execute_raw(&mut lsp, json!({ "command": "slipway.list" }));
    let error = into_result(answer).expect_err("a missing argument list is an error");
    assert_eq!(error["code"], -32602, "{error}");
    still_answers(&mut lsp, &repo, "no arguments");

    // Paths outside any repository.
    let plain = env.path().join("not-a-repo");
    std::fs::create_dir_all(&plain).expect("dir");
    for root in [Path::new("/"), plain.as_path()] {
        let error = lsp.err("slipway.branches", json!({ "root": root }));
        assert_eq!(
            kind(&error),
            "notARepository",
            "{}: {error}",
            root.display()
        );
        let error = lsp.err("slipway.list", json!({ "root": root }));
        assert_eq!(
            kind(&error),
            "notARepository",
            "{}: {error}",
            root.display()
        );
        let status = lsp.ok("slipway.status", json!({ "path": root }));
        assert_eq!(status["inWorktree"], false, "{status}");
    }
    assert!(
        !plain.join(".slipway").exists(),
        "nothing written outside a repository"
    );
    still_answers(&mut lsp, &repo, "paths outside any repository");

    // Hostile branch names.
    let long = "a".repeat(300);
    for name in ["../x", "a..b", "-rf", long.as_str(), "x.lock"] {
        let error = lsp.err(
            "slipway.createWorktree",
            json!({ "root": repo, "strategy": "branch", "branch": name }),
        );
        let message = error["message"].as_str().unwrap_or_default();
        assert!(
            kind(&error) == "invalidBranchName"
                || message.contains("too long")
                || message.contains("not a valid branch name"),
            "branch {name:?}: an unclear error {error}"
        );
        assert_nothing_created(&env, &repo, name);
        still_answers(&mut lsp, &repo, &format!("branch name {name:?}"));
    }
    for name in ["../x", "-rf"] {
        let error = lsp.err(
            "slipway.run",
            json!({
                "root": repo, "strategy": "branch", "branch": name,
                "agent": { "type": "command", "command": ["true"] },
            }),
        );
        assert_eq!(kind(&error), "invalidBranchName", "{name}: {error}");
        assert_nothing_created(&env, &repo, name);
    }
    still_answers(&mut lsp, &repo, "hostile branch names for slipway.run");

    // Framing: garbage bytes, then a proper frame.
    let answered = bad_bytes_then_request(
        &mut lsp,
        &repo,
        b"garbage that is not a header\r\n\x00\xff\r\n\r\n",
    );
    assert!(
        answered,
        "a proper frame after garbage bytes must be answered; the sidecar {}\nstderr:\n{}",
        if lsp.is_running() {
            "is running but did not answer"
        } else {
            "exited"
        },
        lsp.stderr()
    );
    still_answers(&mut lsp, &repo, "garbage bytes");

    // Framing: a Content-Length shorter than the body, then a valid frame.
    let body = br#"{"jsonrpc":"2.0","id":"short","method":"workspace/executeCommand","params":{"command":"slipway.status","arguments":[{"path":"/"}]}}"#;
    let mut bad = format!("Content-Length: {}\r\n\r\n", body.len() / 2).into_bytes();
    bad.extend_from_slice(body);
    let _answered_right_after = bad_bytes_then_request(&mut lsp, &repo, &bad);
    still_answers(&mut lsp, &repo, "a frame with a short Content-Length");

    let exit = lsp.shutdown_and_exit(Duration::from_secs(5));
    assert_eq!(exit.and_then(|e| e.code()), Some(0), "{}", lsp.stderr());
}

#[test]
fn a_frame_with_a_short_content_length_does_not_end_the_session() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo").canonicalize().expect("canonical");
    let mut lsp = Lsp::start(&env, Some(&repo), true);
    still_answers(&mut lsp, &repo, "start-up");
    let body = br#"{"jsonrpc":"2.0","id":"short","method":"workspace/executeCommand","params":{"command":"slipway.status","arguments":[{"path":"/"}]}}"#;
    let mut bad = format!("Content-Length: {}\r\n\r\n", body.len() / 2).into_bytes();
    bad.extend_from_slice(body);
    bad_bytes_then_request(&mut lsp, &repo, &bad);
    still_answers(&mut lsp, &repo, "a frame with a short Content-Length");
}

/// Valid JSON that is not a JSON-RPC 2.0 message tower-lsp-server can read:
/// each one is answered with an error saying so, and the next request is served.
#[test]
fn every_message_that_is_not_json_rpc_is_answered_and_the_next_one_served() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo").canonicalize().expect("canonical");
    let mut lsp = Lsp::start(&env, Some(&repo), true);
    still_answers(&mut lsp, &repo, "start-up");
    let method =
        r#""method":"workspace/executeCommand","params":{"command":"slipway.list","arguments":[]}"#;
    let cases = [
        (
            "an id of 1.5",
            format!(r#"{{"jsonrpc":"2.0","id":1.5,{method}}}"#),
            Value::Null,
        ),
        (
            "an id of 1e30",
            format!(r#"{{"jsonrpc":"2.0","id":1e30,{method}}}"#),
            Value::Null,
        ),
        (
            "an id of 2^63",
            format!(r#"{{"jsonrpc":"2.0","id":9223372036854775808,{method}}}"#),
            Value::Null,
        ),
        (
            "an id of -2^63-1",
            format!(r#"{{"jsonrpc":"2.0","id":-9223372036854775809,{method}}}"#),
            Value::Null,
        ),
        ("{}", "{}".to_owned(), Value::Null),
        ("[]", "[]".to_owned(), Value::Null),
        ("42", "42".to_owned(), Value::Null),
        ("null", "null".to_owned(), Value::Null),
        (
            "a batch",
            format!(
                r#"[{{"jsonrpc":"2.0","id":70,{method}}},{{"jsonrpc":"2.0","id":71,{method}}}]"#
            ),
            Value::Null,
        ),
        ("no jsonrpc", format!(r#"{{"id":72,{method}}}"#), json!(72)),
        (
            "jsonrpc 1.0",
            format!(r#"{{"jsonrpc":"1.0","id":73,{method}}}"#),
            json!(73),
        ),
        (
            "a numeric method",
            r#"{"jsonrpc":"2.0","id":74,"method":42}"#.to_owned(),
            json!(74),
        ),
    ];
    // Each with the id the answer must carry: one that can be read is echoed.
    for (what, body, id) in &cases {
        let before = lsp.history().len();
        let mut bytes = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        bytes.extend_from_slice(body.as_bytes());
        lsp.write_raw(&bytes).expect("write");
        still_answers(&mut lsp, &repo, what);
        let errors: Vec<Value> = lsp.history()[before..]
            .iter()
            .filter(|r| r.msg["error"]["data"]["kind"] == "invalidRequest")
            .map(|r| r.msg.clone())
            .collect();
        assert_eq!(
            errors.len(),
            1,
            "{what}: one invalid-request answer: {errors:?}"
        );
        let error = &errors[0];
        assert_eq!(error["error"]["code"], -32600, "{what}: {error}");
        assert!(
            error["error"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("invalid request: ")),
            "{what}: {error}"
        );
        assert_eq!(&error["id"], id, "{what}: {error}");
    }
    let exit = lsp.shutdown_and_exit(Duration::from_secs(5));
    assert_eq!(exit.and_then(|e| e.code()), Some(0), "{}", lsp.stderr());
}

/// A very large message is read whole and answered (how fast: benches/lsp_bench.py).
#[test]
fn a_50_mb_message_is_answered() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo").canonicalize().expect("canonical");
    let mut lsp = Lsp::start(&env, Some(&repo), true);
    let id = lsp.fresh_id();
    let padding = "x".repeat(50 << 20);
    lsp.send(&json!({
        "jsonrpc": "2.0", "id": id, "method": "workspace/executeCommand",
        "params": { "command": "slipway.list", "arguments": [{ "root": repo, "padding": padding }] },
    }));
    let answer = lsp.wait_response(id, Duration::from_secs(60)).msg;
    assert!(answer["result"]["worktrees"].is_array(), "{answer}");
    still_answers(&mut lsp, &repo, "a 50 MB message");
}
