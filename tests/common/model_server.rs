//! A scripted model server for the real-agent tests: the agent CLIs are the
//! real ones, only the model behind them is this. It speaks the three APIs the
//! CLIs use — Anthropic Messages (`/v1/messages`), OpenAI Responses
//! (`/v1/responses`) and OpenAI Chat Completions (`/v1/chat/completions`) — with
//! server-sent-event streaming, tool calls and usage (cached tokens included),
//! on a free 127.0.0.1 port, one server per test. Every request is logged with
//! what the server answered, so a test can check what the agent sent and that
//! the usage slipway reports is the usage the server gave.
//!
//! Each model request is one of three turns: the **opening** of a conversation
//! turn (its newest item is a user message), the call **after a tool** result,
//! or a **side** call that offers no tools (titles, quota probes). What the
//! server answers to the first two is the [`Script`]; a side call always gets
//! "ok". The script can change between runs ([`ModelServer::set_script`]).
//!
//! Plain std: a listener thread and one thread per connection, HTTP/1.1 with
//! keep-alive, bodies by `Content-Length` or chunked.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

/// What the model does with the opening and after-tool turns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Script {
    /// Opening: a short text and one call of the agent's shell tool that
    /// appends to `hello.txt` and commits it ([`commit_command`]); after the
    /// tool: [`FINAL_TEXT`], which carries the completion signal.
    EditAndCommit,
    /// Every model request fails at once with HTTP 400 (`invalid_request_error`,
    /// which no client retries).
    Fail,
    /// Model requests get no answer at all (the connection stays open, silent,
    /// until the server stops).
    Stall,
    /// Every model request is answered with this text, without tools.
    Answer(String),
    /// As [`Script::EditAndCommit`], but the last words after the tool are
    /// these (a question to the user, say) instead of [`FINAL_TEXT`].
    CommitThenSay(String),
    /// Opening: one call of the agent's own file-writing tool (`Write`,
    /// `write`, `create` or `apply_patch`) creating [`NOTES_FILE`] in its
    /// directory; after it, one call of the shell tool committing it
    /// ([`NOTES_COMMIT`]); after that, [`NOTES_FINAL_TEXT`]. No words come
    /// with the calls.
    WriteAndCommit,
}

/// The last words of [`Script::EditAndCommit`].
pub const FINAL_TEXT: &str = "All done: hello.txt is committed. <promise>COMPLETE</promise>";

/// The file [`Script::WriteAndCommit`] writes, relative to the agent's directory.
pub const NOTES_FILE: &str = "notes.txt";

/// What [`Script::WriteAndCommit`] writes in [`NOTES_FILE`].
pub const NOTES_CONTENT: &str = "notes the agent wrote\n";

/// The shell command that commits [`NOTES_FILE`] in [`Script::WriteAndCommit`].
pub const NOTES_COMMIT: &str =
    "git add notes.txt && git commit -q -m 'agent: notes' && echo committed-notes";

/// The last words of [`Script::WriteAndCommit`].
pub const NOTES_FINAL_TEXT: &str = "All done: notes.txt is committed. <promise>COMPLETE</promise>";

/// The shell command of the `k`-th tool call the server makes (from 1).
pub fn commit_command(k: u32) -> String {
    format!(
        "echo hello-{k} >> hello.txt && git add hello.txt && git commit -q -m 'agent: hello {k}' && echo committed-{k}"
    )
}

/// Which API a request used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Responses.
    Responses,
    /// OpenAI Chat Completions.
    Chat,
}

/// Which turn of the conversation a model request was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// The newest item is a user message.
    Opening,
    /// The newest item is a tool result.
    AfterTool,
    /// No tools offered: a title, a probe.
    Side,
}

/// Token usage a response carried, counted as slipway counts it: input
/// includes the cached tokens (and, for Anthropic, the ones written to the cache).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SentUsage {
    /// Input tokens, cached ones included.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Of `input`, read from the cache.
    pub cached: u64,
}

impl std::ops::AddAssign for SentUsage {
    fn add_assign(&mut self, o: SentUsage) {
        self.input += o.input;
        self.output += o.output;
        self.cached += o.cached;
    }
}

/// Usage per turn, and the part of the input Anthropic reports as written to the cache.
fn turn_usage(turn: Turn) -> (SentUsage, u64) {
    match turn {
        Turn::Opening => (
            SentUsage {
                input: 101,
                output: 11,
                cached: 7,
            },
            5,
        ),
        Turn::AfterTool => (
            SentUsage {
                input: 202,
                output: 22,
                cached: 14,
            },
            0,
        ),
        Turn::Side => (
            SentUsage {
                input: 1,
                output: 1,
                cached: 0,
            },
            0,
        ),
    }
}

/// One request and what the server did with it.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// HTTP method.
    pub method: String,
    /// Request path (with its query).
    pub path: String,
    /// Headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` when empty or not JSON).
    pub body: Value,
    /// The API, for model requests.
    pub api: Option<Api>,
    /// The turn, for model requests.
    pub turn: Option<Turn>,
    /// The usage the answer carried (none for failures and stalls).
    pub usage: Option<SentUsage>,
    /// The tool call the answer made, when it made one: the tool's name.
    pub tool: Option<String>,
}

impl Exchange {
    /// The header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

struct Shared {
    script: Mutex<Script>,
    latency: Mutex<Duration>,
    log: Mutex<Vec<Exchange>>,
    tool_calls: AtomicU32,
    stop: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A test thread that panicked while logging leaves the data usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A running scripted model server. Stops when dropped.
pub struct ModelServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl ModelServer {
    /// Starts a server on a free 127.0.0.1 port.
    pub fn start(script: Script) -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let addr = listener.local_addr().expect("bound address");
        let shared = Arc::new(Shared {
            script: Mutex::new(script),
            latency: Mutex::new(Duration::ZERO),
            log: Mutex::new(Vec::new()),
            tool_calls: AtomicU32::new(0),
            stop: AtomicBool::new(false),
        });
        let accepting = Arc::clone(&shared);
        let accept = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if accepting.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let conn = Arc::clone(&accepting);
                std::thread::spawn(move || serve(conn, stream));
            }
        });
        ModelServer {
            addr,
            shared,
            accept: Some(accept),
        }
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Changes what the model does from the next request on.
    pub fn set_script(&self, script: Script) {
        *lock(&self.shared.script) = script;
    }

    /// Makes the model take `latency` before it answers a conversation turn,
    /// as a real one does (a CLI may write its transcript out of order when the
    /// answer comes back at once on a loaded machine).
    pub fn set_latency(&self, latency: Duration) {
        *lock(&self.shared.latency) = latency;
    }

    /// Every request so far, in order.
    pub fn exchanges(&self) -> Vec<Exchange> {
        lock(&self.shared.log).clone()
    }

    /// The model requests so far (side calls included).
    pub fn model_requests(&self) -> Vec<Exchange> {
        self.exchanges()
            .into_iter()
            .filter(|e| e.turn.is_some())
            .collect()
    }

    /// Forgets the requests so far (the script and tool-call count stay).
    pub fn clear_log(&self) {
        lock(&self.shared.log).clear();
    }

    /// The usage of every conversation turn answered so far (side calls left out).
    pub fn sent_usage(&self) -> SentUsage {
        let mut sum = SentUsage::default();
        for e in self.exchanges() {
            if e.turn != Some(Turn::Side)
                && let Some(u) = e.usage
            {
                sum += u;
            }
        }
        sum
    }

    /// How many tool calls the server has made.
    pub fn tool_calls(&self) -> u32 {
        self.shared.tool_calls.load(Ordering::SeqCst)
    }

    /// A summary of the log for failure messages.
    pub fn describe(&self) -> String {
        self.exchanges()
            .iter()
            .map(|e| {
                format!(
                    "{} {} api={:?} turn={:?} tool={:?} usage={:?}",
                    e.method, e.path, e.api, e.turn, e.tool, e.usage
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag.
        let _wake = TcpStream::connect(self.addr);
        if let Some(t) = self.accept.take()
            && t.join().is_err()
        {
            eprintln!("model server: the accept thread panicked");
        }
    }
}

/// A parsed request.
struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let mut req = Request {
        method,
        path,
        headers,
        body: Vec::new(),
    };
    if let Some(n) = req
        .header("content-length")
        .and_then(|v| v.parse::<usize>().ok())
    {
        let mut body = vec![0; n];
        reader.read_exact(&mut body).ok()?;
        req.body = body;
    } else if req
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).ok()?;
            if size == 0 {
                break;
            }
            chunk.truncate(size);
            req.body.extend_from_slice(&chunk);
        }
    }
    Some(req)
}

fn serve(shared: Arc<Shared>, stream: TcpStream) {
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    let mut out = write_half;
    while let Some(req) = read_request(&mut reader) {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let keep = !req
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        if handle(&shared, &req, &mut out).is_err() || !keep {
            break;
        }
    }
    // The peer may be gone already; nothing is left to say to it.
    let _closed = out.shutdown(Shutdown::Both);
}

/// A response under way.
struct Reply<'a> {
    out: &'a mut TcpStream,
}

impl Reply<'_> {
    fn json(&mut self, status: u16, body: &Value) -> std::io::Result<()> {
        let data = body.to_string();
        let reason = match status {
            200 => "OK",
            400 => "Bad Request",
            404 => "Not Found",
            415 => "Unsupported Media Type",
            _ => "Status",
        };
        write!(
            self.out,
            "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nrequest-id: req_scripted\r\nx-request-id: req_scripted\r\n\r\n{data}",
            data.len()
        )?;
        self.out.flush()
    }

    fn start_sse(&mut self) -> std::io::Result<()> {
        write!(
            self.out,
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\nrequest-id: req_scripted\r\nx-request-id: req_scripted\r\n\r\n"
        )?;
        self.out.flush()
    }

    fn chunk(&mut self, data: &str) -> std::io::Result<()> {
        write!(self.out, "{:x}\r\n{data}\r\n", data.len())?;
        self.out.flush()
    }

    /// One server-sent event; `name` is the `event:` line, when the API has one.
    fn event(&mut self, name: Option<&str>, data: &Value) -> std::io::Result<()> {
        match name {
            Some(name) => self.chunk(&format!("event: {name}\ndata: {data}\n\n")),
            None => self.chunk(&format!("data: {data}\n\n")),
        }
    }

    fn end_sse(&mut self) -> std::io::Result<()> {
        self.out.write_all(b"0\r\n\r\n")?;
        self.out.flush()
    }
}

fn handle(shared: &Shared, req: &Request, out: &mut TcpStream) -> std::io::Result<()> {
    let path = req
        .path
        .split('?')
        .next()
        .unwrap_or("")
        .trim_end_matches('/');
    let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let mut exchange = Exchange {
        method: req.method.clone(),
        path: req.path.clone(),
        headers: req.headers.clone(),
        body: body.clone(),
        api: None,
        turn: None,
        usage: None,
        tool: None,
    };
    let mut reply = Reply { out };
    let api = match (req.method.as_str(), path) {
        ("POST", p) if p.ends_with("/messages/count_tokens") => {
            log(shared, exchange);
            return reply.json(200, &json!({"input_tokens": 42}));
        }
        ("POST", p) if p.ends_with("/messages") => Api::Anthropic,
        ("POST", p) if p.ends_with("/responses") => Api::Responses,
        ("POST", p) if p.ends_with("/chat/completions") => Api::Chat,
        ("GET", p) if p.ends_with("/models") => {
            log(shared, exchange);
            let models: Vec<Value> = ["fake-model", "claude-sonnet-4-5", "gpt-5"]
                .iter()
                .map(|m| json!({"id": m, "object": "model", "type": "model", "created": 1_700_000_000, "owned_by": "scripted", "display_name": m}))
                .collect();
            return reply.json(
                200,
                &json!({"object": "list", "data": models, "has_more": false}),
            );
        }
        _ => {
            log(shared, exchange);
            return reply.json(
                404,
                &json!({"error": {"type": "not_found", "message": format!("no {path} here")}}),
            );
        }
    };
    exchange.api = Some(api);
    if req
        .header("content-encoding")
        .is_some_and(|e| !e.eq_ignore_ascii_case("identity"))
    {
        log(shared, exchange);
        return reply.json(415, &json!({"error": {"type": "invalid_request_error", "message": "the scripted model reads uncompressed bodies only"}}));
    }
    let turn = match api {
        Api::Anthropic => anthropic_turn(&body),
        Api::Responses => responses_turn(&body),
        Api::Chat => chat_turn(&body),
    };
    exchange.turn = Some(turn);
    let script = if turn == Turn::Side {
        Script::Answer("ok".into())
    } else {
        let latency = *lock(&shared.latency);
        std::thread::sleep(latency); // allow-sleep: the scripted model's own answer time, not a wait for an event
        lock(&shared.script).clone()
    };
    match script {
        Script::Fail => {
            log(shared, exchange);
            let message = "scripted failure: the model refuses this request";
            let error = match api {
                Api::Anthropic => {
                    json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}})
                }
                _ => {
                    json!({"error": {"type": "invalid_request_error", "code": "scripted_failure", "message": message, "param": null}})
                }
            };
            reply.json(400, &error)
        }
        Script::Stall => {
            log(shared, exchange);
            while !shared.stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(100)); // allow-sleep: a stalled model polls for the test's stop
            }
            Err(std::io::Error::other("stopped while stalling"))
        }
        Script::Answer(text) => {
            let (usage, written) = turn_usage(turn);
            exchange.usage = Some(usage);
            log(shared, exchange);
            answer(&mut reply, api, &body, &Answer::text(&text), usage, written)
        }
        Script::EditAndCommit | Script::CommitThenSay(_) => {
            let last = match &script {
                Script::CommitThenSay(text) => text.clone(),
                _ => FINAL_TEXT.to_owned(),
            };
            let (usage, written) = turn_usage(turn);
            let planned = match turn {
                Turn::Opening => match shell_tool(api, &body) {
                    Some(tool) => {
                        let k = shared.tool_calls.fetch_add(1, Ordering::SeqCst) + 1;
                        exchange.tool = Some(tool.name.clone());
                        Answer {
                            text: Some("I will commit hello.txt.".into()),
                            call: Some(shell_call(&tool, &commit_command(k))),
                        }
                    }
                    None => Answer::text("There is no shell tool to commit with."),
                },
                Turn::AfterTool | Turn::Side => Answer::text(&last),
            };
            exchange.usage = Some(usage);
            log(shared, exchange);
            answer(&mut reply, api, &body, &planned, usage, written)
        }
        Script::WriteAndCommit => {
            let (usage, written) = turn_usage(turn);
            // No words before a call: the call is the run's step on its own.
            let mut calling = |call: Call| {
                shared.tool_calls.fetch_add(1, Ordering::SeqCst);
                exchange.tool = Some(call.name.clone());
                Answer {
                    text: None,
                    call: Some(call),
                }
            };
            let planned = match (turn, tool_results_since_prompt(api, &body)) {
                (Turn::Opening, _) => match write_tool(api, &body) {
                    Some(tool) => {
                        // Where the CLI says it works (most write tools want an
                        // absolute path); else relative to it.
                        let file = worktree_named(&body)
                            .map_or_else(|| NOTES_FILE.to_owned(), |d| format!("{d}/{NOTES_FILE}"));
                        calling(write_call(&tool, &file, NOTES_CONTENT))
                    }
                    None => Answer::text("There is no tool to write a file with."),
                },
                (Turn::AfterTool, 1) => match shell_tool(api, &body) {
                    Some(tool) => calling(shell_call(&tool, NOTES_COMMIT)),
                    None => Answer::text("There is no shell tool to commit with."),
                },
                _ => Answer::text(NOTES_FINAL_TEXT),
            };
            exchange.usage = Some(usage);
            log(shared, exchange);
            answer(&mut reply, api, &body, &planned, usage, written)
        }
    }
}

fn log(shared: &Shared, exchange: Exchange) {
    lock(&shared.log).push(exchange);
}

// ---------------------------------------------------------------------------
// Turns
// ---------------------------------------------------------------------------

fn has_tools(body: &Value) -> bool {
    body["tools"].as_array().is_some_and(|t| !t.is_empty())
}

fn anthropic_turn(body: &Value) -> Turn {
    if !has_tools(body) {
        return Turn::Side;
    }
    let last = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or(Value::Null);
    let tool_result = last["role"] == "user"
        && last["content"]
            .as_array()
            .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"));
    if tool_result {
        Turn::AfterTool
    } else {
        Turn::Opening
    }
}

/// Tools of a Responses request: the top level, namespaces flattened, and
/// those an `additional_tools` input item declares.
fn responses_tools(body: &Value) -> Vec<Value> {
    fn walk(tools: &Value, out: &mut Vec<Value>) {
        for t in tools.as_array().into_iter().flatten() {
            if t["type"] == "namespace" {
                walk(&t["tools"], out);
            } else {
                out.push(t.clone());
            }
        }
    }
    let mut out = Vec::new();
    walk(&body["tools"], &mut out);
    for item in body["input"].as_array().into_iter().flatten() {
        if item["type"] == "additional_tools" {
            walk(&item["tools"], &mut out);
        }
    }
    out
}

fn responses_turn(body: &Value) -> Turn {
    if responses_tools(body).is_empty() {
        return Turn::Side;
    }
    for item in body["input"].as_array().into_iter().flatten().rev() {
        let kind = item["type"].as_str().unwrap_or("");
        if kind.ends_with("_call_output") {
            return Turn::AfterTool;
        }
        if item["role"] == "user" {
            return Turn::Opening;
        }
    }
    Turn::Opening
}

fn chat_turn(body: &Value) -> Turn {
    if !has_tools(body) {
        return Turn::Side;
    }
    for m in body["messages"].as_array().into_iter().flatten().rev() {
        match m["role"].as_str() {
            Some("tool") => return Turn::AfterTool,
            Some("user") => return Turn::Opening,
            _ => {}
        }
    }
    Turn::Opening
}

// ---------------------------------------------------------------------------
// The agent's tools
// ---------------------------------------------------------------------------

/// How a tool takes its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ToolForm {
    /// JSON arguments, as its schema says.
    Function,
    /// Codex's `local_shell` tool, whose call carries its own action.
    LocalShell,
    /// A Responses `custom` tool: free text (Codex's `apply_patch`).
    Freeform,
}

/// A tool the request offered.
#[derive(Debug, Clone)]
struct Tool {
    name: String,
    /// JSON schema of its arguments (`Null` for the other forms).
    schema: Value,
    form: ToolForm,
}

/// A tool call the model makes.
#[derive(Debug, Clone)]
struct Call {
    name: String,
    input: CallInput,
}

/// What a call hands its tool.
#[derive(Debug, Clone)]
enum CallInput {
    /// JSON arguments.
    Json(Value),
    /// The command of a `local_shell` call.
    LocalShell(String),
    /// The text of a freeform call.
    Freeform(String),
}

impl Call {
    /// The input as JSON, for the APIs that have only JSON arguments.
    fn json(&self) -> Value {
        match &self.input {
            CallInput::Json(v) => v.clone(),
            CallInput::LocalShell(c) => json!({"command": c}),
            CallInput::Freeform(t) => json!({"input": t}),
        }
    }
}

/// Names of shell tools, most specific first.
const SHELL_NAMES: [&str; 7] = [
    "Bash",
    "bash",
    "shell",
    "exec_command",
    "shell_command",
    "run_shell_command",
    "run_in_terminal",
];

/// Names of the tools that write a whole file, most specific first: Claude
/// Code, OpenCode and Pi `Write`/`write`, Copilot `create`, Codex `apply_patch`
/// (freeform with a model it knows; a function taking `input` in older ones).
const WRITE_NAMES: [&str; 5] = [
    "Write",
    "write",
    "create",
    "apply_patch",
    "str_replace_editor",
];

fn pick_shell(tools: Vec<Tool>) -> Option<Tool> {
    let local = tools
        .iter()
        .find(|t| t.form == ToolForm::LocalShell)
        .cloned();
    let tools: Vec<Tool> = tools
        .into_iter()
        .filter(|t| t.form == ToolForm::Function)
        .collect();
    SHELL_NAMES
        .iter()
        .find_map(|n| tools.iter().find(|t| t.name == *n).cloned())
        .or_else(|| {
            tools
                .iter()
                .find(|t| {
                    let n = t.name.to_ascii_lowercase();
                    n.contains("bash") || n.contains("shell")
                })
                .cloned()
        })
        .or(local)
}

/// The tools a request offers.
fn offered_tools(api: Api, body: &Value) -> Vec<Tool> {
    let function = |name: &Value, schema: &Value| {
        Some(Tool {
            name: name.as_str()?.to_owned(),
            schema: schema.clone(),
            form: ToolForm::Function,
        })
    };
    match api {
        Api::Anthropic => body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| function(&t["name"], &t["input_schema"]))
            .collect(),
        Api::Responses => responses_tools(body)
            .iter()
            .filter_map(|t| match t["type"].as_str() {
                Some("local_shell") => Some(Tool {
                    name: "local_shell".into(),
                    schema: Value::Null,
                    form: ToolForm::LocalShell,
                }),
                Some("function") => function(&t["name"], &t["parameters"]),
                Some("custom") => Some(Tool {
                    name: t["name"].as_str()?.to_owned(),
                    schema: Value::Null,
                    form: ToolForm::Freeform,
                }),
                _ => None,
            })
            .collect(),
        Api::Chat => body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| function(&t["function"]["name"], &t["function"]["parameters"]))
            .collect(),
    }
}

fn shell_tool(api: Api, body: &Value) -> Option<Tool> {
    pick_shell(offered_tools(api, body))
}

/// The agent's tool for writing a file, if it offers one.
fn write_tool(api: Api, body: &Value) -> Option<Tool> {
    let tools = offered_tools(api, body);
    WRITE_NAMES
        .iter()
        .find_map(|n| tools.iter().find(|t| t.name == *n).cloned())
}

/// The call of the shell tool running `command`, its arguments from its
/// schema: the command goes in `command`/`cmd`/`script` (an argv when the
/// schema wants an array), every other required field gets a harmless value.
fn shell_call(tool: &Tool, command: &str) -> Call {
    if tool.form == ToolForm::LocalShell {
        return Call {
            name: tool.name.clone(),
            input: CallInput::LocalShell(command.to_owned()),
        };
    }
    let props = tool.schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let required = required(&tool.schema);
    let mut args = serde_json::Map::new();
    for (name, prop) in &props {
        let kind = prop["type"].as_str();
        let value = if matches!(name.as_str(), "command" | "cmd" | "script") {
            if kind == Some("array") {
                json!(["bash", "-lc", command])
            } else {
                json!(command)
            }
        } else if name == "description" {
            json!("Commit the work")
        } else if required.contains(&name.as_str()) {
            filler(kind)
        } else {
            continue;
        };
        args.insert(name.clone(), value);
    }
    if !["command", "cmd", "script"]
        .iter()
        .any(|k| args.contains_key(*k))
    {
        args.insert("command".into(), json!(command));
    }
    Call {
        name: tool.name.clone(),
        input: CallInput::Json(Value::Object(args)),
    }
}

/// The call of the write tool that creates `file` (absolute, or relative to
/// the agent's directory) holding `content`: a patch adding it for
/// `apply_patch`, else the path and content fields its schema names.
fn write_call(tool: &Tool, file: &str, content: &str) -> Call {
    let patch = || {
        let lines: String = content.lines().map(|l| format!("+{l}\n")).collect();
        format!("*** Begin Patch\n*** Add File: {file}\n{lines}*** End Patch\n")
    };
    if tool.form == ToolForm::Freeform {
        return Call {
            name: tool.name.clone(),
            input: CallInput::Freeform(patch()),
        };
    }
    let props = tool.schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let required = required(&tool.schema);
    let mut args = serde_json::Map::new();
    for (name, prop) in &props {
        let value = match name.as_str() {
            "file_path" | "filePath" | "path" | "target_file" => json!(file),
            "content" | "contents" | "file_text" | "text" => json!(content),
            "input" | "patch" if tool.name == "apply_patch" => json!(patch()),
            // str_replace_editor's subcommand.
            "command" => json!("create"),
            _ if required.contains(&name.as_str()) => filler(prop["type"].as_str()),
            _ => continue,
        };
        args.insert(name.clone(), value);
    }
    Call {
        name: tool.name.clone(),
        input: CallInput::Json(Value::Object(args)),
    }
}

/// The required fields of a JSON schema.
fn required(schema: &Value) -> Vec<&str> {
    schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// A harmless value of a JSON schema type.
fn filler(kind: Option<&str>) -> Value {
    match kind {
        Some("integer" | "number") => json!(60000),
        Some("boolean") => json!(false),
        Some("array") => json!([]),
        _ => json!("."),
    }
}

/// The agent's working directory as the request tells the model: the first
/// slipway worktree path in it (each CLI puts its directory in its system
/// prompt or environment context, in its own words).
fn worktree_named(body: &Value) -> Option<String> {
    const MARK: &str = "/.slipway/worktrees/";
    let text = body.to_string();
    let at = text.find(MARK)?;
    let ends = |c: char| c.is_ascii_whitespace() || "\"'<>`\\,;()[]{}".contains(c);
    let start = text[..at].rfind(ends).map_or(0, |i| i + 1);
    let rest = &text[at + MARK.len()..];
    let name_len = rest
        .find(|c: char| ends(c) || c == '/')
        .unwrap_or(rest.len());
    (name_len > 0).then(|| text[start..at + MARK.len() + name_len].to_owned())
}

/// How many tool results came back since the user's newest message: which
/// step of a several-call script the conversation is at.
fn tool_results_since_prompt(api: Api, body: &Value) -> usize {
    let items = match api {
        Api::Responses => &body["input"],
        Api::Anthropic | Api::Chat => &body["messages"],
    };
    let mut n = 0;
    for item in items.as_array().into_iter().flatten().rev() {
        let results = match api {
            Api::Anthropic if item["role"] == "user" => item["content"].as_array().map_or(0, |c| {
                c.iter().filter(|b| b["type"] == "tool_result").count()
            }),
            Api::Responses => usize::from(
                item["type"]
                    .as_str()
                    .is_some_and(|t| t.ends_with("_call_output")),
            ),
            Api::Chat => usize::from(item["role"] == "tool"),
            _ => 0,
        };
        if results == 0 && item["role"] == "user" {
            break;
        }
        n += results;
    }
    n
}

// ---------------------------------------------------------------------------
// Answers
// ---------------------------------------------------------------------------

/// What the model says: text, then maybe one tool call.
struct Answer {
    text: Option<String>,
    call: Option<Call>,
}

impl Answer {
    fn text(text: &str) -> Answer {
        Answer {
            text: Some(text.to_owned()),
            call: None,
        }
    }
}

fn id(prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}_{:08x}{:016x}",
        N.fetch_add(1, Ordering::SeqCst),
        std::process::id()
    )
}

/// Splits `s` in two at a character boundary, so streams carry real deltas.
fn halves(s: &str) -> [&str; 2] {
    let mut mid = s.len() / 2;
    while !s.is_char_boundary(mid) {
        mid += 1;
    }
    [&s[..mid], &s[mid..]]
}

fn answer(
    reply: &mut Reply<'_>,
    api: Api,
    body: &Value,
    answer: &Answer,
    usage: SentUsage,
    written: u64,
) -> std::io::Result<()> {
    let model = body["model"].as_str().unwrap_or("fake-model").to_owned();
    let stream = body["stream"].as_bool().unwrap_or(false);
    match api {
        Api::Anthropic => anthropic(reply, &model, stream, answer, usage, written),
        Api::Responses => responses(reply, &model, stream, answer, usage),
        Api::Chat => chat(reply, &model, stream, answer, usage),
    }
}

fn anthropic(
    reply: &mut Reply<'_>,
    model: &str,
    stream: bool,
    answer: &Answer,
    usage: SentUsage,
    written: u64,
) -> std::io::Result<()> {
    let mut blocks = Vec::new();
    if let Some(text) = &answer.text {
        blocks.push(json!({"type": "text", "text": text}));
    }
    if let Some(call) = &answer.call {
        blocks.push(
            json!({"type": "tool_use", "id": id("toolu"), "name": call.name, "input": call.json()}),
        );
    }
    let stop = if answer.call.is_some() {
        "tool_use"
    } else {
        "end_turn"
    };
    // Anthropic's input_tokens leave out what was read from and written to the cache.
    let start_usage = json!({
        "input_tokens": usage.input - usage.cached - written,
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": usage.cached,
        "output_tokens": 1,
    });
    let message_id = id("msg");
    if !stream {
        let mut full = start_usage.clone();
        full["output_tokens"] = json!(usage.output);
        return reply.json(
            200,
            &json!({"id": message_id, "type": "message", "role": "assistant", "model": model,
                    "content": blocks, "stop_reason": stop, "stop_sequence": null, "usage": full}),
        );
    }
    reply.start_sse()?;
    let ev = |reply: &mut Reply<'_>, v: Value| {
        let name = v["type"].as_str().unwrap_or("").to_owned();
        reply.event(Some(&name), &v)
    };
    ev(
        reply,
        json!({"type": "message_start", "message": {"id": message_id, "type": "message", "role": "assistant",
               "model": model, "content": [], "stop_reason": null, "stop_sequence": null, "usage": start_usage}}),
    )?;
    for (index, block) in blocks.iter().enumerate() {
        if block["type"] == "text" {
            ev(
                reply,
                json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
            )?;
            for part in halves(block["text"].as_str().unwrap_or("")) {
                ev(
                    reply,
                    json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": part}}),
                )?;
            }
        } else {
            ev(
                reply,
                json!({"type": "content_block_start", "index": index, "content_block":
                       {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}}),
            )?;
            let input = block["input"].to_string();
            for part in halves(&input) {
                ev(
                    reply,
                    json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": part}}),
                )?;
            }
        }
        ev(reply, json!({"type": "content_block_stop", "index": index}))?;
    }
    ev(
        reply,
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": usage.output}}),
    )?;
    ev(reply, json!({"type": "message_stop"}))?;
    reply.end_sse()
}

fn responses(
    reply: &mut Reply<'_>,
    model: &str,
    stream: bool,
    answer: &Answer,
    usage: SentUsage,
) -> std::io::Result<()> {
    let mut items = Vec::new();
    if let Some(text) = &answer.text {
        items.push(
            json!({"type": "message", "id": id("msg"), "role": "assistant", "status": "completed",
                          "content": [{"type": "output_text", "text": text, "annotations": []}]}),
        );
    }
    if let Some(call) = &answer.call {
        let call_id = id("call");
        items.push(match &call.input {
            CallInput::LocalShell(command) => {
                json!({"type": "local_shell_call", "id": id("lsh"), "call_id": call_id, "status": "completed",
                       "action": {"type": "exec", "command": ["bash", "-lc", command], "env": {}, "timeout_ms": 60000}})
            }
            CallInput::Freeform(input) => {
                json!({"type": "custom_tool_call", "id": id("ctc"), "call_id": call_id, "name": call.name,
                       "input": input, "status": "completed"})
            }
            CallInput::Json(args) => {
                json!({"type": "function_call", "id": id("fc"), "call_id": call_id, "name": call.name,
                       "arguments": args.to_string(), "status": "completed"})
            }
        });
    }
    let usage = json!({
        "input_tokens": usage.input,
        "input_tokens_details": {"cached_tokens": usage.cached},
        "output_tokens": usage.output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.input + usage.output,
    });
    let response_id = id("resp");
    let base = json!({"id": response_id, "object": "response", "created_at": 1_700_000_000, "model": model,
                      "status": "in_progress", "output": [], "usage": null});
    let mut done = base.clone();
    done["status"] = json!("completed");
    done["output"] = json!(items);
    done["usage"] = usage;
    if !stream {
        return reply.json(200, &done);
    }
    reply.start_sse()?;
    let mut seq = 0u32;
    let mut ev = |reply: &mut Reply<'_>, mut v: Value| {
        v["sequence_number"] = json!(seq);
        seq += 1;
        let name = v["type"].as_str().unwrap_or("").to_owned();
        reply.event(Some(&name), &v)
    };
    ev(reply, json!({"type": "response.created", "response": base}))?;
    ev(
        reply,
        json!({"type": "response.in_progress", "response": base}),
    )?;
    for (index, item) in items.iter().enumerate() {
        let mut opening = item.clone();
        opening["status"] = json!("in_progress");
        match item["type"].as_str() {
            Some("message") => {
                opening["content"] = json!([]);
                ev(
                    reply,
                    json!({"type": "response.output_item.added", "output_index": index, "item": opening}),
                )?;
                let text = item["content"][0]["text"].as_str().unwrap_or("");
                let part = json!({"type": "output_text", "text": "", "annotations": []});
                ev(
                    reply,
                    json!({"type": "response.content_part.added", "item_id": item["id"], "output_index": index, "content_index": 0, "part": part}),
                )?;
                for delta in halves(text) {
                    ev(
                        reply,
                        json!({"type": "response.output_text.delta", "item_id": item["id"], "output_index": index, "content_index": 0, "delta": delta}),
                    )?;
                }
                ev(
                    reply,
                    json!({"type": "response.output_text.done", "item_id": item["id"], "output_index": index, "content_index": 0, "text": text}),
                )?;
                ev(
                    reply,
                    json!({"type": "response.content_part.done", "item_id": item["id"], "output_index": index, "content_index": 0, "part": item["content"][0]}),
                )?;
            }
            Some(kind @ ("function_call" | "custom_tool_call")) => {
                // Both stream their payload the same way: a function's JSON
                // `arguments`, a custom (freeform) tool's raw `input`.
                let (field, event) = if kind == "function_call" {
                    ("arguments", "function_call_arguments")
                } else {
                    ("input", "custom_tool_call_input")
                };
                opening[field] = json!("");
                ev(
                    reply,
                    json!({"type": "response.output_item.added", "output_index": index, "item": opening}),
                )?;
                let payload = item[field].as_str().unwrap_or("");
                for delta in halves(payload) {
                    ev(
                        reply,
                        json!({"type": format!("response.{event}.delta"), "item_id": item["id"], "output_index": index, "delta": delta}),
                    )?;
                }
                let mut done = json!({"type": format!("response.{event}.done"), "item_id": item["id"], "output_index": index});
                done[field] = json!(payload);
                ev(reply, done)?;
            }
            _ => {
                ev(
                    reply,
                    json!({"type": "response.output_item.added", "output_index": index, "item": item}),
                )?;
            }
        }
        ev(
            reply,
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        )?;
    }
    ev(
        reply,
        json!({"type": "response.completed", "response": done}),
    )?;
    reply.end_sse()
}

fn chat(
    reply: &mut Reply<'_>,
    model: &str,
    stream: bool,
    answer: &Answer,
    usage: SentUsage,
) -> std::io::Result<()> {
    let call = answer.call.as_ref().map(|call| {
        json!({"id": id("call"), "type": "function",
               "function": {"name": call.name, "arguments": call.json().to_string()}})
    });
    let usage = json!({
        "prompt_tokens": usage.input,
        "completion_tokens": usage.output,
        "total_tokens": usage.input + usage.output,
        "prompt_tokens_details": {"cached_tokens": usage.cached},
        "completion_tokens_details": {"reasoning_tokens": 0},
    });
    let finish = if call.is_some() { "tool_calls" } else { "stop" };
    let chat_id = id("chatcmpl");
    if !stream {
        let mut message = json!({"role": "assistant", "content": answer.text});
        if let Some(call) = &call {
            message["tool_calls"] = json!([call]);
        }
        return reply.json(
            200,
            &json!({"id": chat_id, "object": "chat.completion", "created": 1_700_000_000, "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}),
        );
    }
    reply.start_sse()?;
    let chunk = |reply: &mut Reply<'_>, delta: Value, finish: Value| {
        reply.event(
            None,
            &json!({"id": chat_id, "object": "chat.completion.chunk", "created": 1_700_000_000, "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    chunk(
        reply,
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )?;
    if let Some(text) = &answer.text {
        for part in halves(text) {
            chunk(reply, json!({"content": part}), Value::Null)?;
        }
    }
    if let Some(call) = &call {
        chunk(
            reply,
            json!({"tool_calls": [{"index": 0, "id": call["id"], "type": "function",
                                   "function": {"name": call["function"]["name"], "arguments": ""}}]}),
            Value::Null,
        )?;
        for part in halves(call["function"]["arguments"].as_str().unwrap_or("")) {
            chunk(
                reply,
                json!({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}),
                Value::Null,
            )?;
        }
    }
    chunk(reply, json!({}), json!(finish))?;
    // The usage chunk `stream_options.include_usage` asks for; clients that did not ask ignore it.
    reply.event(
        None,
        &json!({"id": chat_id, "object": "chat.completion.chunk", "created": 1_700_000_000, "model": model,
                "choices": [], "usage": usage}),
    )?;
    reply.chunk("data: [DONE]\n\n")?;
    reply.end_sse()
}
