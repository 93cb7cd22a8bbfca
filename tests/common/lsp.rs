//! A small framed JSON-RPC client for the real `slipway lsp` binary.
//!
//! The sidecar runs as a child process with the hermetic environment of
//! [`TestEnv`]. A reader thread parses `Content-Length` frames from its stdout,
//! answers every server→client request (`window/workDoneProgress/create`, …)
//! with a null result at once, and queues every message. The test side keeps
//! the full history of received messages in arrival order, so tests can assert
//! on the order of replies and notifications.
//!
//! Test modules reach it as `crate::common::lsp`.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::TestEnv;

/// One wait for the next message, after which a deadline is checked again:
/// it ends as soon as a message arrives.
const RECV_SLICE: Duration = Duration::from_millis(200); // allow-sleep: a slice of a wait for the next message, ended by its arrival

/// How long a request waits for its answer unless told otherwise.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// One message received from the server, with when it arrived.
#[derive(Debug, Clone)]
pub struct Received {
    /// Arrival order (index into the history).
    pub seq: usize,
    /// Arrival time.
    pub at: Instant,
    /// The message.
    pub msg: Value,
}

/// A running `slipway lsp` and the client side of its pipes.
pub struct Lsp {
    child: Child,
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    rx: Receiver<Value>,
    history: Vec<Received>,
    consumed: Vec<bool>,
    next_id: i64,
    stderr: Arc<Mutex<String>>,
    /// The `initialize` result.
    pub init: Value,
    /// Whether the server's stdout reached end of file.
    pub closed: bool,
}

/// Frames one JSON value with LSP headers.
pub fn frame(value: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(value).expect("json");
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(&body);
    out
}

fn write_to(stdin: &Arc<Mutex<Option<ChildStdin>>>, bytes: &[u8]) -> std::io::Result<()> {
    let mut guard = stdin.lock().expect("stdin lock");
    match guard.as_mut() {
        Some(s) => {
            s.write_all(bytes)?;
            s.flush()
        }
        None => Err(std::io::Error::other("stdin closed")),
    }
}

/// Reads one frame; `None` at end of file or on a broken stream.
fn read_frame(reader: &mut impl BufRead) -> Option<Value> {
    loop {
        let mut length: Option<usize> = None;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).ok()? == 0 {
                return None;
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.trim().eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().ok();
            }
        }
        let Some(length) = length else {
            // Not a frame the server should ever send: keep reading.
            continue;
        };
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body).ok()?;
        match serde_json::from_slice(&body) {
            Ok(v) => return Some(v),
            Err(e) => panic!(
                "the server wrote a frame that is not JSON ({e}): {}",
                String::from_utf8_lossy(&body)
            ),
        }
    }
}

fn reader_thread(
    stdout: impl Read + Send + 'static,
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    tx: Sender<Value>,
) {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        while let Some(msg) = read_frame(&mut reader) {
            // A server→client request: answer at once, whatever the test is doing.
            if msg.get("method").is_some()
                && let Some(id) = msg.get("id")
            {
                let answer = json!({ "jsonrpc": "2.0", "id": id, "result": null });
                let _ = write_to(&stdin, &frame(&answer));
            }
            if tx.send(msg).is_err() {
                break;
            }
        }
    });
}

/// A `file://` URI for a path (percent-encoding what needs it).
pub fn file_uri(path: &Path) -> String {
    let mut out = String::from("file://");
    for b in path.to_str().expect("utf8 path").bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The path of a `file://` URI (percent-decoded).
pub fn uri_path(uri: &str) -> PathBuf {
    let rest = uri
        .strip_prefix("file://")
        .unwrap_or_else(|| panic!("not a file URI: {uri}"));
    let bytes = rest.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(&rest[i + 1..i + 3], 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    PathBuf::from(String::from_utf8(out).expect("utf8 uri"))
}

/// Whether a process is still alive (a zombie counts as dead).
pub fn pid_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            // `pid (comm) S ...`: the state follows the last ')'.
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next());
            !matches!(state, Some('Z') | Some('X') | None)
        }
    }
}

/// Polls `check` every 50 ms until it holds or `timeout` passes.
pub fn wait_until(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if check() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50)); // allow-sleep: the poll interval of the one wait-for-a-condition helper
    }
}

impl Lsp {
    /// Starts `slipway lsp` in `cwd` without initializing it.
    pub fn spawn(env: &TestEnv, cwd: &Path) -> Lsp {
        let mut cmd = env.slipway_cmd(cwd);
        cmd.arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("slipway lsp starts");
        let stdin = Arc::new(Mutex::new(child.stdin.take()));
        let (tx, rx) = channel();
        reader_thread(child.stdout.take().expect("stdout"), stdin.clone(), tx);
        let stderr = Arc::new(Mutex::new(String::new()));
        {
            let mut err = child.stderr.take().expect("stderr");
            let buf = stderr.clone();
            std::thread::spawn(move || {
                let mut chunk = [0u8; 4096];
                while let Ok(n) = err.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    buf.lock()
                        .expect("stderr lock")
                        .push_str(&String::from_utf8_lossy(&chunk[..n]));
                }
            });
        }
        Lsp {
            child,
            stdin,
            rx,
            history: Vec::new(),
            consumed: Vec::new(),
            next_id: 1,
            stderr,
            init: Value::Null,
            closed: false,
        }
    }

    /// Starts `slipway lsp`, sends `initialize` (with `workDoneProgress` as
    /// given and `folder` as the only workspace folder) and `initialized`.
    pub fn start(env: &TestEnv, folder: Option<&Path>, progress: bool) -> Lsp {
        let cwd = folder.unwrap_or(env.path());
        let mut lsp = Lsp::spawn(env, cwd);
        let folders = match folder {
            Some(f) => json!([{ "uri": file_uri(f), "name": "repo" }]),
            None => Value::Null,
        };
        let answer = lsp.request(
            "initialize",
            json!({
                "processId": std::process::id(),
                "rootUri": null,
                "capabilities": { "window": { "workDoneProgress": progress } },
                "workspaceFolders": folders,
            }),
        );
        assert!(
            answer.get("error").is_none(),
            "initialize failed: {answer}\n{}",
            lsp.stderr()
        );
        lsp.init = answer["result"].clone();
        lsp.notify("initialized", json!({}));
        lsp
    }

    /// What the server wrote on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().expect("stderr lock").clone()
    }

    /// Writes raw bytes to the server's stdin.
    pub fn write_raw(&self, bytes: &[u8]) -> std::io::Result<()> {
        write_to(&self.stdin, bytes)
    }

    /// Sends one framed JSON value.
    pub fn send(&self, value: &Value) {
        self.write_raw(&frame(value))
            .unwrap_or_else(|e| panic!("cannot write to the server: {e}\n{}", self.stderr()));
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    /// A fresh request id.
    pub fn fresh_id(&mut self) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Sends a request without waiting; returns its id.
    pub fn send_request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.fresh_id();
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        id
    }

    /// Moves what the reader thread queued into the history, waiting at most
    /// `timeout` for the first message. Returns whether anything arrived.
    fn pump(&mut self, timeout: Duration) -> bool {
        let first = match self.rx.recv_timeout(timeout) {
            Ok(v) => v,
            Err(RecvTimeoutError::Timeout) => return false,
            Err(RecvTimeoutError::Disconnected) => {
                self.closed = true;
                if timeout > Duration::ZERO {
                    std::thread::sleep(timeout.min(Duration::from_millis(50))); // allow-sleep: the output is closed; a caller polling for the exit checks again after this
                }
                return false;
            }
        };
        self.push(first);
        while let Ok(v) = self.rx.try_recv() {
            self.push(v);
        }
        true
    }

    fn push(&mut self, msg: Value) {
        let seq = self.history.len();
        self.history.push(Received {
            seq,
            at: Instant::now(),
            msg,
        });
        self.consumed.push(false);
    }

    /// Takes in whatever arrived, without waiting.
    pub fn drain(&mut self) {
        self.pump(Duration::ZERO);
    }

    /// Receives until `check` holds (true) or `timeout` passes (false).
    pub fn wait_until(
        &mut self,
        timeout: Duration,
        mut check: impl FnMut(&mut Lsp) -> bool,
    ) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            self.drain();
            if check(self) {
                return true;
            }
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return false;
            };
            self.pump(left.min(RECV_SLICE));
        }
    }

    /// Proves the refresh loop ran again after everything received so far: a
    /// worktree made and closed through this sidecar shows in a status push,
    /// then leaves it. What the loop had to send about earlier events (a run's
    /// end, diagnostics) it has sent by then, so "it was said once" or "it was
    /// never said" can be judged without a window of time.
    pub fn barrier(&mut self, repo: &Path) {
        let since = self.history().len();
        let created = self.ok(
            "slipway.createWorktree",
            json!({ "root": repo, "strategy": "merge-to-head" }),
        );
        let id = created["id"]
            .as_str()
            .unwrap_or_else(|| panic!("barrier worktree: {created}"))
            .to_owned();
        let shows = |p: &Value| status_worktrees(p).iter().any(|w| w["id"] == id.as_str());
        self.expect_notification_since(
            since,
            "slipway/status",
            &shows,
            crate::common::EVENT_DEADLINE,
            "the barrier worktree in a status push",
        );
        let since = self.history().len();
        let closed = self.ok("slipway.close", json!({ "root": repo, "worktree": id }));
        assert_eq!(closed["removed"], true, "barrier worktree: {closed}");
        self.expect_notification_since(
            since,
            "slipway/status",
            |p| !shows(p),
            crate::common::EVENT_DEADLINE,
            "a status push without the barrier worktree",
        );
    }

    /// Keeps receiving for `d`: a fixed window, kept only for the exactly-once
    /// test that issue 21 rewrites; everything else waits on events.
    pub fn collect_for(&mut self, d: Duration) {
        let deadline = Instant::now() + d;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            if left.is_zero() {
                break;
            }
            self.pump(left.min(RECV_SLICE));
        }
    }

    /// Every message received so far, in arrival order.
    pub fn history(&mut self) -> &[Received] {
        self.drain();
        &self.history
    }

    /// Waits for the answer to request `id` (the whole response object).
    pub fn wait_response(&mut self, id: i64, timeout: Duration) -> Received {
        let deadline = Instant::now() + timeout;
        let mut scanned = 0;
        loop {
            while scanned < self.history.len() {
                let r = &self.history[scanned];
                if r.msg.get("method").is_none() && r.msg.get("id") == Some(&json!(id)) {
                    self.consumed[scanned] = true;
                    return r.clone();
                }
                scanned += 1;
            }
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                panic!(
                    "no answer to request {id} within {timeout:?}; received: {:#?}\nserver stderr:\n{}",
                    self.history.iter().map(|r| &r.msg).collect::<Vec<_>>(),
                    self.stderr()
                );
            };
            if !self.pump(left.min(RECV_SLICE)) && self.closed {
                panic!(
                    "the server closed its stdout before answering request {id}\nserver stderr:\n{}",
                    self.stderr()
                );
            }
        }
    }

    /// Sends a request and returns the whole response object.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.wait_response(id, REQUEST_TIMEOUT).msg
    }

    /// Sends a request and returns the response with its arrival record.
    pub fn request_received(&mut self, method: &str, params: Value) -> Received {
        let id = self.send_request(method, params);
        self.wait_response(id, REQUEST_TIMEOUT)
    }

    /// `workspace/executeCommand` with one argument: `Ok(result)` or `Err(error)`.
    pub fn execute(&mut self, command: &str, arg: Value) -> Result<Value, Value> {
        let answer = self.request(
            "workspace/executeCommand",
            json!({ "command": command, "arguments": [arg] }),
        );
        into_result(answer)
    }

    /// Like [`Lsp::execute`], panicking (with the error) on failure.
    pub fn ok(&mut self, command: &str, arg: Value) -> Value {
        match self.execute(command, arg.clone()) {
            Ok(v) => v,
            Err(e) => panic!(
                "{command} {arg} failed: {e}\nserver stderr:\n{}",
                self.stderr()
            ),
        }
    }

    /// Like [`Lsp::execute`], panicking if it succeeds.
    pub fn err(&mut self, command: &str, arg: Value) -> Value {
        match self.execute(command, arg.clone()) {
            Ok(v) => panic!("{command} {arg} should have failed, answered {v}"),
            Err(e) => e,
        }
    }

    /// Waits for the next not yet consumed notification (or server request)
    /// `method` whose params satisfy `pred`; marks it consumed.
    pub fn wait_for_notification(
        &mut self,
        method: &str,
        pred: impl FnMut(&Value) -> bool,
        timeout: Duration,
    ) -> Option<Received> {
        self.wait_for_notification_since(0, method, pred, timeout)
    }

    /// Like [`Lsp::wait_for_notification`], looking only at messages that
    /// arrived at or after history index `since`.
    pub fn wait_for_notification_since(
        &mut self,
        since: usize,
        method: &str,
        mut pred: impl FnMut(&Value) -> bool,
        timeout: Duration,
    ) -> Option<Received> {
        let deadline = Instant::now() + timeout;
        let mut scanned = since;
        loop {
            while scanned < self.history.len() {
                let r = &self.history[scanned];
                if !self.consumed[scanned]
                    && r.msg.get("method").and_then(Value::as_str) == Some(method)
                    && pred(&r.msg["params"])
                {
                    self.consumed[scanned] = true;
                    return Some(r.clone());
                }
                scanned += 1;
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            if left.is_zero() {
                return None;
            }
            self.pump(left.min(RECV_SLICE));
        }
    }

    /// Like [`Lsp::wait_for_notification`], panicking with what arrived on timeout.
    pub fn expect_notification(
        &mut self,
        method: &str,
        pred: impl FnMut(&Value) -> bool,
        timeout: Duration,
        what: &str,
    ) -> Received {
        self.expect_notification_since(0, method, pred, timeout, what)
    }

    /// Like [`Lsp::expect_notification`], looking only at messages that
    /// arrived at or after history index `since`.
    pub fn expect_notification_since(
        &mut self,
        since: usize,
        method: &str,
        pred: impl FnMut(&Value) -> bool,
        timeout: Duration,
        what: &str,
    ) -> Received {
        match self.wait_for_notification_since(since, method, pred, timeout) {
            Some(r) => r,
            None => panic!(
                "no {method} ({what}) within {timeout:?}; received: {:#?}\nserver stderr:\n{}",
                self.history.iter().map(|r| &r.msg).collect::<Vec<_>>(),
                self.stderr()
            ),
        }
    }

    /// Every received message (consumed or not) with this method whose params satisfy `pred`.
    pub fn all_with(
        &mut self,
        method: &str,
        mut pred: impl FnMut(&Value) -> bool,
    ) -> Vec<Received> {
        self.drain();
        self.history
            .iter()
            .filter(|r| r.msg.get("method").and_then(Value::as_str) == Some(method))
            .filter(|r| pred(&r.msg["params"]))
            .cloned()
            .collect()
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `shutdown`, then `exit`, and waits for the process to end.
    pub fn shutdown_and_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let answer = self.request("shutdown", Value::Null);
        assert!(
            answer.get("error").is_none(),
            "shutdown failed: {answer}\n{}",
            self.stderr()
        );
        self.notify("exit", Value::Null);
        self.wait_exit(timeout)
    }

    /// Waits up to `timeout` for the process to end.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20)); // allow-sleep: the poll interval of a wait for the process's exit
        }
    }

    /// Closes the server's stdin.
    pub fn close_stdin(&self) {
        self.stdin.lock().expect("stdin lock").take();
    }

    /// SIGKILLs the server and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Whether the server process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Lsp {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A response object as `Ok(result)` or `Err(error)`.
pub fn into_result(answer: Value) -> Result<Value, Value> {
    match answer.get("error") {
        Some(e) => Err(e.clone()),
        None => Ok(answer.get("result").cloned().unwrap_or(Value::Null)),
    }
}

/// `error.data.kind` of a JSON-RPC error.
pub fn kind(error: &Value) -> &str {
    error["data"]["kind"]
        .as_str()
        .unwrap_or_else(|| panic!("no data.kind in error {error}"))
}

/// The worktrees of every repository in a `slipway/status` notification.
pub fn status_worktrees(params: &Value) -> Vec<Value> {
    params["repositories"]
        .as_array()
        .map(|repos| {
            repos
                .iter()
                .flat_map(|r| r["worktrees"].as_array().cloned().unwrap_or_default())
                .collect()
        })
        .unwrap_or_default()
}

/// The runs of every repository in a `slipway/status` notification.
pub fn status_runs(params: &Value) -> Vec<Value> {
    params["repositories"]
        .as_array()
        .map(|repos| {
            repos
                .iter()
                .flat_map(|r| r["runs"].as_array().cloned().unwrap_or_default())
                .collect()
        })
        .unwrap_or_default()
}

/// The agent argument for a script run by the `command` agent.
pub fn command_agent(script: &Path) -> Value {
    json!({ "type": "command", "command": [script.to_str().expect("utf8 path")] })
}
