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

/// Sends `bytes` followed at once by a framed good request, and waits for
/// that request's answer, which must be a result: the answers (errors among
/// them) that arrived since `bytes` were written, the good one last.
fn bad_bytes_then_request(lsp: &mut Lsp, repo: &Path, bytes: &[u8], what: &str) -> Vec<Value> {
    let since = lsp.history().len();
    let id = lsp.fresh_id();
    let good = frame(&json!({
        "jsonrpc": "2.0", "id": id, "method": "workspace/executeCommand",
        "params": { "command": "slipway.status", "arguments": [{ "path": repo }] },
    }));
    let mut all = bytes.to_vec();
    all.extend_from_slice(&good);
    lsp.write_raw(&all)
        .unwrap_or_else(|e| panic!("after {what}: cannot write to the sidecar: {e}"));
    // Panics, with what did arrive, if the sidecar never answers it.
    let answer = lsp.wait_response(id, REQUEST_TIMEOUT);
    assert!(
        answer.msg["result"]["inWorktree"] == false,
        "after {what}, the next request was answered {}",
        answer.msg
    );
    lsp.history()[since..=answer.seq]
        .iter()
        .filter(|r| r.msg.get("method").is_none())
        .map(|r| r.msg.clone())
        .collect()
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

    // Framing: garbage bytes, then a proper frame, which is the only answer.
    let answers = bad_bytes_then_request(
        &mut lsp,
        &repo,
        b"garbage that is not a header\r\n\x00\xff\r\n\r\n",
        "garbage bytes",
    );
    assert_eq!(answers.len(), 1, "garbage bytes are skipped: {answers:?}");
    still_answers(&mut lsp, &repo, "garbage bytes");

    // Framing: a Content-Length shorter than the body, then a valid frame.
    short_content_length_then_request(&mut lsp, &repo);
    still_answers(&mut lsp, &repo, "a frame with a short Content-Length");

    let exit = lsp.shutdown_and_exit(Duration::from_secs(5));
    assert_eq!(exit.and_then(|e| e.code()), Some(0), "{}", lsp.stderr());
}

/// A Content-Length half the body's: the half is not JSON (a parse error
/// answer), the rest is skipped up to the next header, and the request
/// written right after it is answered.
fn short_content_length_then_request(lsp: &mut Lsp, repo: &Path) {
    let body = br#"{"jsonrpc":"2.0","id":"short","method":"workspace/executeCommand","params":{"command":"slipway.status","arguments":[{"path":"/"}]}}"#;
    let mut bad = format!("Content-Length: {}\r\n\r\n", body.len() / 2).into_bytes();
    bad.extend_from_slice(body);
    let answers = bad_bytes_then_request(lsp, repo, &bad, "a short Content-Length");
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert_eq!(answers[0]["id"], Value::Null, "{answers:?}");
    assert_eq!(answers[0]["error"]["code"], -32700, "{answers:?}");
    assert_eq!(kind(&answers[0]["error"]), "parseError", "{answers:?}");
}

#[test]
fn a_frame_with_a_short_content_length_does_not_end_the_session() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo").canonicalize().expect("canonical");
    let mut lsp = Lsp::start(&env, Some(&repo), true);
    still_answers(&mut lsp, &repo, "start-up");
    short_content_length_then_request(&mut lsp, &repo);
    still_answers(&mut lsp, &repo, "a frame with a short Content-Length");
}

/// Some LSP clients end header lines with a bare LF: such a frame is read
/// like any other, and so is the CR LF one written right after it.
#[test]
fn a_frame_with_lf_only_headers_is_answered_and_so_is_the_next_one() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo").canonicalize().expect("canonical");
    let mut lsp = Lsp::start(&env, Some(&repo), true);
    let id = lsp.fresh_id();
    let body = serde_json::to_vec(&json!({
        "jsonrpc": "2.0", "id": id, "method": "workspace/executeCommand",
        "params": { "command": "slipway.list", "arguments": [{ "root": repo }] },
    }))
    .expect("json");
    let mut bytes = format!("Content-Length: {}\n\n", body.len()).into_bytes();
    bytes.extend_from_slice(&body);
    bad_bytes_then_request(&mut lsp, &repo, &bytes, "an LF-only frame");
    // slipway.status is answered ahead of queued git work: the list's answer
    // may come after it.
    let listed = lsp.wait_response(id, REQUEST_TIMEOUT).msg;
    assert!(listed["result"]["worktrees"].is_array(), "{listed}");
    still_answers(&mut lsp, &repo, "an LF-only frame");
}

/// params nested far deeper than a JSON parser reads (serde_json, and so
/// tower-lsp-server, stop at 128): the request gets an error answer with its
/// own id, a notification nested so is dropped, and the session goes on.
#[test]
fn a_message_nested_hundreds_of_levels_deep_is_refused_and_the_session_goes_on() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo").canonicalize().expect("canonical");
    let mut lsp = Lsp::start(&env, Some(&repo), true);
    for levels in [127, 128, 200, 100_000] {
        let nested = format!("{}{}", "[".repeat(levels), "]".repeat(levels));
        let id = lsp.fresh_id();
        let request = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"workspace/executeCommand","params":{{"command":"slipway.list","arguments":[{{"root":"/","x":{nested}}}]}}}}"#
        );
        let notification = format!(
            r#"{{"jsonrpc":"2.0","method":"workspace/didChangeConfiguration","params":{{"settings":{nested}}}}}"#
        );
        let mut bytes = Vec::new();
        for body in [&notification, &request] {
            bytes.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
            bytes.extend_from_slice(body.as_bytes());
        }
        let what = format!("params nested {levels} levels deep");
        let answers = bad_bytes_then_request(&mut lsp, &repo, &bytes, &what);
        assert_eq!(
            answers.len(),
            2,
            "{what}: one answer each, none to the notification: {answers:?}"
        );
        let error = &answers[0];
        assert_eq!(error["id"], id, "{what}: {error}");
        assert_eq!(error["error"]["code"], -32600, "{what}: {error}");
        assert_eq!(kind(&error["error"]), "nestedTooDeep", "{what}: {error}");
        assert!(
            error["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("levels deep") && m.contains("64")),
            "{what}: the message says what was wrong: {error}"
        );
        still_answers(&mut lsp, &repo, &what);
    }
    // Nesting the server can read is served as before.
    let nested = format!("{}{}", "[".repeat(50), "]".repeat(50));
    let answer = lsp.ok(
        "slipway.list",
        json!({ "root": repo, "x": serde_json::from_str::<Value>(&nested).expect("json") }),
    );
    assert!(answer["worktrees"].is_array(), "{answer}");
    let exit = lsp.shutdown_and_exit(Duration::from_secs(5));
    assert_eq!(exit.and_then(|e| e.code()), Some(0), "{}", lsp.stderr());
}

/// LSP's lifecycle holds for every request, the ones the front door answers
/// itself (`slipway.status`) too: -32002 before `initialize` is answered,
/// -32600 after `shutdown`, each with its `data.kind`; `exit` still ends the
/// process cleanly.
#[test]
fn every_request_waits_for_initialize_and_none_is_served_after_shutdown() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo").canonicalize().expect("canonical");
    let mut lsp = Lsp::spawn(&env, &repo);
    let commands = [
        ("slipway.status", json!({ "path": repo })),
        ("slipway.list", json!({ "root": repo })),
        ("slipway.branches", json!({ "root": repo })),
    ];
    // Each refusal names what to do: `initialize` first, or nothing but `exit`.
    let check_refused = |lsp: &mut Lsp, code: i64, want: &str, names: &str| {
        for (command, arg) in &commands {
            let error = lsp.err(command, arg.clone());
            assert_eq!(error["code"], code, "{command}: {error}");
            assert_eq!(kind(&error), want, "{command}: {error}");
            assert!(
                error["message"].as_str().is_some_and(|m| m.contains(names)),
                "{command}: the message names `{names}`: {error}"
            );
        }
        let answer = lsp.request("slipway/noSuchMethod", json!({}));
        assert_eq!(answer["error"]["code"], code, "an unknown method: {answer}");
    };
    check_refused(&mut lsp, -32002, "serverNotInitialized", "`initialize`");
    let answer = lsp.request(
        "initialize",
        json!({ "processId": null, "rootUri": null, "capabilities": {} }),
    );
    assert!(answer["result"]["capabilities"].is_object(), "{answer}");
    lsp.notify("initialized", json!({}));
    let status = lsp.ok("slipway.status", json!({ "path": repo }));
    assert_eq!(status["inWorktree"], false, "{status}");
    let answer = lsp.request("shutdown", Value::Null);
    assert_eq!(answer["result"], Value::Null, "{answer}");
    assert!(answer.get("error").is_none(), "{answer}");
    check_refused(&mut lsp, -32600, "serverShutDown", "`exit`");
    let answer = lsp.request("shutdown", Value::Null);
    assert_eq!(
        kind(&answer["error"]),
        "serverShutDown",
        "a second shutdown: {answer}"
    );
    lsp.notify("exit", Value::Null);
    let exit = lsp.wait_exit(Duration::from_secs(30));
    assert_eq!(exit.and_then(|e| e.code()), Some(0), "{}", lsp.stderr());
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

#[test]
fn a_docker_handoff_without_an_image_says_where_the_image_is_set() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let mut lsp = Lsp::start(&env, Some(&repo), false);
    lsp.ok(
        "slipway.createWorktree",
        json!({ "root": repo, "strategy": "branch", "branch": "handoff/x" }),
    );
    let error = lsp.err(
        "slipway.handoff",
        json!({
            "root": repo, "worktree": "handoff/x", "sandbox": {"type": "docker"},
            "agent": {"type": "command", "command": ["true"]}, "prompt": "carry on",
        }),
    );
    assert_eq!(kind(&error), "invalidParams", "{error}");
    let message = s(&error, "message");
    assert!(!message.contains("missing field"), "{message}");
    assert!(
        message.contains("docker sandbox needs an image"),
        "{message}"
    );
    assert!(message.contains("`image` in slipway.toml"), "{message}");
    assert!(
        message.contains("`sandbox.image`"),
        "the field to give: {message}"
    );
}
