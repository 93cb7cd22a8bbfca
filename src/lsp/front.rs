//! The front door between the client and tower-lsp-server.
//!
//! tower-lsp-server ends the session on a message it cannot decode, and it
//! serves requests in arrival order through a fixed number of slots, so a
//! status line's request would wait behind every branch listing queued before
//! it. The front door reads every frame first (`framing`):
//!
//! - a body that is not JSON is answered with a parse error (-32700), and valid
//!   JSON that is not a JSON-RPC 2.0 message tower-lsp-server can decode (a
//!   batch, `42`, an id of 1.5 or 2^63, no `jsonrpc`, a numeric method, or one
//!   nested deeper than `nesting::MAX_DEPTH`, which a JSON parser would give up
//!   on) with an invalid-request error (-32600), all with `data.kind`; the
//!   session goes on;
//! - a request before `initialize` was answered or after `shutdown` is
//!   refused here (`lifecycle`), whoever would have answered it;
//! - `slipway.status`, answered from the sidecar's cache, is answered here at
//!   once, ahead of queued git work;
//! - everything else goes on to tower-lsp-server unchanged.
//!
//! Answers from here and from tower-lsp-server share stdout one whole frame at a time.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Mutex, mpsc};

use super::framing::{FrameReader, Item, frame};
use super::lifecycle::Lifecycle;
use super::nesting;
use super::protocol::{StatusArgs, parse_args};
use super::server::status_command;
use super::state::State;

/// Where whole frames go to the client.
pub struct Output<W> {
    out: Mutex<W>,
}

impl<W: AsyncWrite + Unpin + Send> Output<W> {
    /// Frames go to `out`.
    pub fn new(out: W) -> Arc<Output<W>> {
        Arc::new(Output {
            out: Mutex::new(out),
        })
    }

    /// Writes one body as a frame; false once the client is gone.
    pub async fn send(&self, body: &[u8]) -> bool {
        let mut out = self.out.lock().await;
        out.write_all(&frame(body)).await.is_ok() && out.flush().await.is_ok()
    }
}

/// What to do with one frame body.
#[derive(Debug, PartialEq)]
enum Route {
    /// Hand it to tower-lsp-server.
    Forward,
    /// Answer it here with this error; it goes no further.
    Refuse {
        id: Value,
        code: i64,
        kind: &'static str,
        why: String,
    },
    /// A response from the client tower-lsp-server could not decode: log and drop.
    Drop(String),
    /// `slipway.status`: answer from the cache.
    Status { id: Value, arguments: Vec<Value> },
}

/// The fields of a message, undecoded (a 50 MB `params` is checked, not built).
/// A field given as `null` is `Some` (`"result": null` is a result).
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct ExecuteCommand<'a> {
    #[serde(borrow)]
    command: std::borrow::Cow<'a, str>,
    #[serde(default)]
    arguments: Vec<Value>,
}

/// An id tower-lsp-server can carry: null, a string, or an integer that fits i64.
fn valid_id(raw: Option<&RawValue>) -> Result<Value, String> {
    let Some(raw) = raw else {
        return Ok(Value::Null);
    };
    match serde_json::from_str::<Value>(raw.get()) {
        Ok(Value::Null) => Ok(Value::Null),
        Ok(Value::String(s)) => Ok(Value::String(s)),
        Ok(Value::Number(n)) if n.as_i64().is_some() => Ok(Value::Number(n)),
        Ok(Value::Number(n)) => Err(format!(
            "the id {n} is not an integer between -2^63 and 2^63-1"
        )),
        Ok(other) => Err(format!(
            "the id must be a string or an integer, not {}",
            json_type(&other)
        )),
        Err(e) => Err(format!("the id cannot be read: {e}")),
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn invalid(id: Value, why: impl Into<String>) -> Route {
    Route::Refuse {
        id,
        code: -32600,
        kind: "invalidRequest",
        why: why.into(),
    }
}

/// A message nested deeper than a JSON parser reads: a request is refused
/// with its own id, anything else is dropped (nobody waits for an answer).
fn too_deep(body: &[u8], depth: usize) -> Route {
    let why = format!(
        "the message nests arrays and objects {depth} levels deep, more than the {} the server reads",
        nesting::MAX_DEPTH
    );
    let refused = |id: Value| Route::Refuse {
        id,
        code: -32600,
        kind: "nestedTooDeep",
        why: why.clone(),
    };
    // Its top level, with everything below written `null`, parses.
    let flat = nesting::flatten(body, 1);
    let Ok(envelope) = serde_json::from_slice::<Envelope>(&flat) else {
        return refused(Value::Null);
    };
    match (envelope.method, envelope.id) {
        (None, _) => Route::Drop(format!("a response: {why}")),
        (Some(_), None) => Route::Drop(format!("a notification: {why}")),
        (Some(_), Some(id)) => refused(valid_id(Some(id)).unwrap_or(Value::Null)),
    }
}

fn route(body: &[u8], lifecycle: &Lifecycle) -> Route {
    let parse_error = |why: String| Route::Refuse {
        id: Value::Null,
        code: -32700,
        kind: "parseError",
        why,
    };
    if let Some(depth) = nesting::deeper_than(body, nesting::MAX_DEPTH) {
        return too_deep(body, depth);
    }
    let raw: &RawValue = match serde_json::from_slice(body) {
        Ok(raw) => raw,
        Err(e) => return parse_error(format!("the frame body is not valid JSON ({e})")),
    };
    let text = raw.get().trim_start();
    if text.starts_with('[') {
        return invalid(
            Value::Null,
            "batches are not supported: send each message in its own frame",
        );
    }
    if !text.starts_with('{') {
        return invalid(Value::Null, "a message must be a JSON object");
    }
    let envelope: Envelope = match serde_json::from_str(text) {
        Ok(e) => e,
        Err(e) => return invalid(Value::Null, format!("the message cannot be read: {e}")),
    };
    let id = match valid_id(envelope.id) {
        Ok(id) => id,
        Err(why) => return invalid(Value::Null, why),
    };
    let version = envelope
        .jsonrpc
        .and_then(|raw| serde_json::from_str::<String>(raw.get()).ok());
    if version.as_deref() != Some("2.0") {
        return invalid(
            id,
            match envelope.jsonrpc {
                None => "the message has no \"jsonrpc\": \"2.0\"".to_owned(),
                Some(raw) => format!("\"jsonrpc\" must be \"2.0\", not {}", raw.get()),
            },
        );
    }
    let Some(method) = envelope.method else {
        if envelope.result.is_none() && envelope.error.is_none() {
            return invalid(id, "the message has neither a method nor a result or error");
        }
        // A response to one of the server's requests: tower-lsp-server must be able to read it.
        return match serde_json::from_str::<tower_lsp_server::jsonrpc::Response>(text) {
            Ok(_) => Route::Forward,
            Err(e) => Route::Drop(format!("a response that cannot be read: {e}")),
        };
    };
    if envelope.result.is_some() || envelope.error.is_some() {
        return invalid(
            id,
            "a message cannot have both a method and a result or error",
        );
    }
    let Ok(method) = serde_json::from_str::<std::borrow::Cow<str>>(method.get()) else {
        return invalid(
            id,
            format!("the method must be a string, not {}", method.get()),
        );
    };
    if envelope.id.is_some()
        && let Err(refusal) = lifecycle.admit(&method, &id)
    {
        return Route::Refuse {
            id,
            code: refusal.code(),
            kind: refusal.kind(),
            why: refusal.why(&method),
        };
    }
    if method == "workspace/executeCommand"
        && envelope.id.is_some()
        && let Some(params) = envelope.params
        && let Ok(exec) = serde_json::from_str::<ExecuteCommand>(params.get())
        && exec.command == "slipway.status"
    {
        return Route::Status {
            id,
            arguments: exec.arguments,
        };
    }
    Route::Forward
}

fn error_body(id: &Value, code: i64, message: String, data: Value) -> Vec<u8> {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code, "message": message, "data": data },
    })
    .to_string()
    .into_bytes()
}

/// Reads the client's frames from `input` until it ends: refuses, answers or
/// forwards each (see the module doc). Forwarded frames go to `server` in order,
/// without ever holding up the reading of the next frame.
pub async fn read_client<R, S, W>(
    mut input: R,
    mut server: S,
    output: Arc<Output<W>>,
    state: Arc<State>,
    lifecycle: Arc<Lifecycle>,
) where
    R: AsyncRead + Unpin,
    S: AsyncWrite + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let forward = tokio::spawn(async move {
        while let Some(bytes) = rx.recv().await {
            if server.write_all(&bytes).await.is_err() {
                return;
            }
        }
        // Best effort: the server is told the client is gone either way.
        if let Err(e) = server.shutdown().await {
            tracing::debug!("closing the server's input: {e}");
        }
    });
    let mut reader = FrameReader::new();
    let mut chunk = vec![0u8; 256 * 1024];
    loop {
        while let Some(item) = reader.next_item() {
            let body = match item {
                Item::Body(body) => body,
                Item::Malformed(why) => {
                    tracing::warn!("malformed frame: {why}");
                    let body = error_body(
                        &Value::Null,
                        -32700,
                        format!("parse error: {why}; the frame was skipped"),
                        json!({ "kind": "parseError" }),
                    );
                    if !output.send(&body).await {
                        return;
                    }
                    continue;
                }
            };
            match route(&body, &lifecycle) {
                Route::Forward => {
                    if tx.send(frame(&body)).is_err() {
                        return;
                    }
                }
                Route::Refuse {
                    id,
                    code,
                    kind,
                    why,
                } => {
                    tracing::warn!("refused a message: {why}");
                    let what = match code {
                        -32700 => "parse error",
                        -32002 => "server not initialized",
                        _ => "invalid request",
                    };
                    let body = error_body(
                        &id,
                        code,
                        format!("{what}: {why}; the message was skipped"),
                        json!({ "kind": kind }),
                    );
                    if !output.send(&body).await {
                        return;
                    }
                }
                Route::Drop(why) => tracing::warn!("dropped a message: {why}"),
                Route::Status { id, arguments } => {
                    let output = output.clone();
                    let state = state.clone();
                    tokio::spawn(async move {
                        let answer = match parse_args::<StatusArgs>("slipway.status", &arguments) {
                            Ok(args) => status_command(&state, args).await,
                            Err(e) => Err(e),
                        };
                        let body = match answer {
                            Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
                            Err(e) => json!({ "jsonrpc": "2.0", "id": id, "error": e }),
                        };
                        output.send(body.to_string().as_bytes()).await;
                    });
                }
            }
        }
        match input.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => reader.feed(&chunk[..n]),
        }
    }
    drop(tx);
    if let Err(e) = forward.await {
        tracing::debug!("the forwarder ended: {e}");
    }
}

/// Copies tower-lsp-server's frames to the client, one whole frame at a time,
/// showing each to `lifecycle` first (the answer to `initialize` opens the session).
pub async fn write_server<R, W>(
    mut from_server: R,
    output: Arc<Output<W>>,
    lifecycle: Arc<Lifecycle>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send,
{
    let mut reader = FrameReader::new();
    let mut chunk = vec![0u8; 256 * 1024];
    loop {
        match from_server.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => reader.feed(&chunk[..n]),
        }
        while let Some(item) = reader.next_item() {
            match item {
                Item::Body(body) => {
                    lifecycle.server_sent(&body);
                    if !output.send(&body).await {
                        return;
                    }
                }
                Item::Malformed(why) => tracing::error!("the server wrote a bad frame: {why}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn initialized() -> Lifecycle {
        let life = Lifecycle::new();
        life.admit("initialize", &json!(0))
            .expect("first initialize");
        life.server_sent(br#"{"jsonrpc":"2.0","id":0,"result":{}}"#);
        life
    }

    fn route(body: &[u8]) -> Route {
        super::route(body, &initialized())
    }

    fn refused(body: &str) -> (Value, &'static str) {
        match route(body.as_bytes()) {
            Route::Refuse { id, kind, .. } => (id, kind),
            other => panic!("{body}: {other:?}"),
        }
    }

    #[test]
    fn every_message_tower_cannot_decode_is_refused_here() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1e30,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":-9223372036854775809,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":true,"method":"x"}"#,
            "{}",
            "[]",
            "42",
            "null",
            r#"[{"jsonrpc":"2.0","id":1,"method":"x"}]"#,
            r#"{"id":1,"method":"x"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","result":1}"#,
        ] {
            assert_eq!(refused(body).1, "invalidRequest", "{body}");
        }
        assert_eq!(refused("{not json").1, "parseError");
    }

    #[test]
    fn a_readable_id_is_echoed_when_something_else_is_wrong() {
        assert_eq!(
            refused(r#"{"jsonrpc":"1.0","id":7,"method":"x"}"#).0,
            json!(7)
        );
        assert_eq!(refused(r#"{"id":"a","method":"x"}"#).0, json!("a"));
        assert_eq!(
            refused(r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#).0,
            Value::Null
        );
    }

    #[test]
    fn good_messages_go_on_and_status_is_answered_here() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":"s","method":"shutdown"}"#,
            r#"{"jsonrpc":"2.0","id":-9223372036854775808,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"workspace/executeCommand","params":{"command":"slipway.list","arguments":[]}}"#,
        ] {
            assert_eq!(route(body.as_bytes()), Route::Forward, "{body}");
        }
        let status = r#"{"jsonrpc":"2.0","id":9,"method":"workspace/executeCommand","params":{"command":"slipway.status","arguments":[{"path":"/"}]}}"#;
        assert_eq!(
            route(status.as_bytes()),
            Route::Status {
                id: json!(9),
                arguments: vec![json!({ "path": "/" })]
            }
        );
        assert!(matches!(
            route(br#"{"jsonrpc":"2.0","id":3,"error":"nope"}"#),
            Route::Drop(_)
        ));
    }

    #[test]
    fn a_message_nested_too_deep_is_refused_with_its_id_before_any_parser_sees_it() {
        let deep = |head: &str| {
            format!(
                "{{{head}\"params\":{}{}}}",
                "[".repeat(200_000),
                "]".repeat(200_000)
            )
        };
        let request = deep(r#""jsonrpc":"2.0","id":41,"method":"workspace/executeCommand","#);
        assert_eq!(refused(&request), (json!(41), "nestedTooDeep"));
        let notification = deep(r#""jsonrpc":"2.0","method":"x","#);
        assert!(matches!(route(notification.as_bytes()), Route::Drop(_)));
        let shallow = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{}{}}}"#,
            "[".repeat(nesting::MAX_DEPTH - 1),
            "]".repeat(nesting::MAX_DEPTH - 1)
        );
        assert_eq!(route(shallow.as_bytes()), Route::Forward);
    }

    #[test]
    fn requests_before_initialize_and_after_shutdown_are_refused_status_too() {
        let status = r#"{"jsonrpc":"2.0","id":9,"method":"workspace/executeCommand","params":{"command":"slipway.status","arguments":[{"path":"/"}]}}"#;
        let life = Lifecycle::new();
        let kind = |route: Route| match route {
            Route::Refuse { code, kind, .. } => (code, kind),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            kind(super::route(status.as_bytes(), &life)),
            (-32002, "serverNotInitialized")
        );
        // Notifications are not requests: tower-lsp-server drops them itself.
        assert_eq!(
            super::route(
                br#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#,
                &life
            ),
            Route::Forward
        );
        let life = initialized();
        assert_eq!(
            super::route(br#"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#, &life),
            Route::Forward
        );
        assert_eq!(
            kind(super::route(status.as_bytes(), &life)),
            (-32600, "serverShutDown")
        );
        assert_eq!(
            super::route(br#"{"jsonrpc":"2.0","method":"exit"}"#, &life),
            Route::Forward
        );
    }
}
