//! Transcripts of the 2026-07-28 revision (no handshake: every request carries its version and
//! capabilities in `_meta`), beside the handshake era on the same loop.
//!
//! Each test pushes whole JSON lines through `serve` with in-memory buffers and compares the whole
//! transcript that comes back, so a field added, dropped or reordered fails the test.

use std::io::{self, Read, Write};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use once_mcp::{Annotations, Gate, LogLevel, ServerConfig, Tool, ToolResult};
use serde_json::{Value, json};

const MODERN: &str = "2026-07-28";
const PATIENCE: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------- harness

/// What the server wrote, and a signal for each write.
#[derive(Default)]
struct Output {
    bytes: Mutex<Vec<u8>>,
    written: Condvar,
}

impl Output {
    fn responses(bytes: &[u8]) -> usize {
        String::from_utf8_lossy(bytes)
            .lines()
            .filter(|line| line.contains("\"result\"") || line.contains("\"error\""))
            .count()
    }
}

struct Shared(Arc<Output>);

impl Write for Shared {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.bytes.lock().unwrap().extend_from_slice(bytes);
        self.0.written.notify_all();
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The input lines, then end of input only once every request was answered (so the end of input
/// never cancels a call the transcript is about), or after [`PATIENCE`].
struct Input {
    bytes: io::Cursor<Vec<u8>>,
    requests: usize,
    output: Arc<Output>,
}

impl Read for Input {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.bytes.read(out)?;
        if n > 0 {
            return Ok(n);
        }
        let deadline = Instant::now() + PATIENCE;
        let mut bytes = self.output.bytes.lock().unwrap();
        while Output::responses(&bytes) < self.requests && Instant::now() < deadline {
            bytes = self
                .output
                .written
                .wait_timeout(bytes, deadline - Instant::now())
                .unwrap()
                .0;
        }
        Ok(0)
    }
}

/// Serves `lines` (one message each) to the end of input and returns every line written.
fn transcript(config: ServerConfig, lines: &[Value]) -> Vec<Value> {
    let mut bytes = Vec::new();
    for line in lines {
        bytes.extend(serde_json::to_vec(line).unwrap());
        bytes.push(b'\n');
    }
    let output = Arc::new(Output::default());
    let input = Input {
        bytes: io::Cursor::new(bytes),
        requests: lines.iter().filter(|line| line.get("id").is_some()).count(),
        output: Arc::clone(&output),
    };
    once_mcp::serve(
        Arc::new(config),
        io::BufReader::new(input),
        Shared(Arc::clone(&output)),
    )
    .unwrap();
    let text = String::from_utf8(output.bytes.lock().unwrap().clone()).unwrap();
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The `_meta` a modern client sends, with `extra` keys added.
fn envelope(extra: Value) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    for (key, value) in extra.as_object().unwrap() {
        meta[key] = value.clone();
    }
    meta
}

fn modern(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = envelope(json!({}));
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn with_meta(id: i64, method: &str, meta: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"_meta": meta}})
}

fn server_meta() -> Value {
    json!({
        "io.modelcontextprotocol/serverInfo": {"name": "once-mcp", "version": "1.2.3"},
    })
}

fn text_tool(name: &'static str, handler: fn(&once_mcp::CallContext) -> ToolResult) -> Tool {
    Tool {
        name,
        title: "A test tool",
        description: format!("The {name} test tool."),
        input_schema: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        output_schema: json!({"type": "object", "properties": {"text": {"type": "string"}},
                              "required": ["text"], "additionalProperties": false}),
        annotations: Annotations::READ_ONLY,
        gate: Gate::Always,
        handler: once_mcp::Handler::query(move |ctx, _| handler(ctx)),
    }
}

fn tools() -> Vec<Tool> {
    vec![
        text_tool("echo", |_| ToolResult::Value(json!({"text": "hi"}))),
        text_tool("log", |ctx| {
            ctx.log(LogLevel::Debug, "a debug line");
            ctx.log(LogLevel::Error, "an error line");
            ToolResult::Value(json!({"text": "logged"}))
        }),
        text_tool("progress", |ctx| {
            ctx.progress(1.0, Some(2.0), Some("half"));
            ToolResult::Value(json!({"text": "done"}))
        }),
    ]
}

fn config() -> ServerConfig {
    let mut config = ServerConfig::new("1.2.3");
    config.instructions = "Query the build graph of this workspace.".into();
    config.workspace_root = Some("/work/ws".into());
    config.tools = tools();
    config
}

fn described(name: &str) -> Value {
    json!({
        "name": name,
        "title": "A test tool",
        "description": format!("The {name} test tool."),
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
        "outputSchema": {
            "type": "object",
            "properties": {"result": {"type": "object", "properties": {"text": {"type": "string"}},
                                      "required": ["text"], "additionalProperties": false}},
            "required": ["result"],
            "additionalProperties": false,
        },
        "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true,
                        "openWorldHint": false},
    })
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

// ---------------------------------------------------------------- tests

#[test]
fn discover_list_and_call_without_a_handshake() {
    let lines = transcript(
        config(),
        &[
            modern(1, "server/discover", json!({})),
            modern(2, "tools/list", json!({})),
            modern(3, "tools/call", json!({"name": "echo", "arguments": {}})),
        ],
    );
    let mut discover_meta = server_meta();
    discover_meta["dev.once/workspace"] = json!("/work/ws");
    assert_eq!(
        lines,
        vec![
            json!({"jsonrpc": "2.0", "id": 1, "result": {
                "resultType": "complete",
                "supportedVersions": [MODERN],
                "capabilities": {"tools": {"listChanged": false}, "logging": {}, "resources": {},
                                 "prompts": {},
                                 "extensions": {"io.modelcontextprotocol/tasks": {}}},
                "instructions": "Query the build graph of this workspace.",
                "ttlMs": 3_600_000,
                "cacheScope": "private",
                "_meta": discover_meta,
            }}),
            json!({"jsonrpc": "2.0", "id": 2, "result": {
                "resultType": "complete",
                "tools": [described("echo"), described("log"), described("progress")],
                "ttlMs": 3_600_000,
                "cacheScope": "private",
                "_meta": server_meta(),
            }}),
            json!({"jsonrpc": "2.0", "id": 3, "result": {
                "resultType": "complete",
                "content": [{"type": "text", "text": "{\"text\":\"hi\"}"}],
                "structuredContent": {"result": {"text": "hi"}},
                "_meta": server_meta(),
            }}),
        ]
    );
}

#[test]
fn tools_list_is_the_same_bytes_on_every_connection() {
    let list = || {
        let lines = transcript(config(), &[modern(1, "tools/list", json!({}))]);
        serde_json::to_string(&lines).unwrap()
    };
    assert_eq!(list(), list());
}

#[test]
fn malformed_and_unsupported_envelopes_are_refused_with_the_new_codes() {
    let supported = |requested: &str| {
        json!({"jsonrpc": "2.0", "id": 0, "error": {
            "code": -32022,
            "message": format!(
                "unsupported protocol version `{requested}`: this server serves `2026-07-28` \
                 per request, and 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05 after \
                 `initialize`"
            ),
            "data": {"supported": [MODERN], "requested": requested},
        }})
    };
    let mut unknown = supported("2099-01-01");
    unknown["id"] = json!(3);
    let mut handshake_only = supported("2025-11-25");
    handshake_only["id"] = json!(4);
    let lines = transcript(
        config(),
        &[
            with_meta(
                1,
                "tools/list",
                json!({"io.modelcontextprotocol/protocolVersion": MODERN}),
            ),
            with_meta(
                2,
                "tools/list",
                json!({"io.modelcontextprotocol/clientCapabilities": {}}),
            ),
            with_meta(
                3,
                "tools/list",
                envelope(json!({"io.modelcontextprotocol/protocolVersion": "2099-01-01"})),
            ),
            with_meta(
                4,
                "tools/list",
                envelope(json!({"io.modelcontextprotocol/protocolVersion": "2025-11-25"})),
            ),
            with_meta(
                5,
                "tools/list",
                envelope(json!({"io.modelcontextprotocol/clientCapabilities": []})),
            ),
            json!({"jsonrpc": "2.0", "id": 6, "method": "server/discover"}),
            modern(7, "ping", json!({})),
            modern(8, "logging/setLevel", json!({"level": "debug"})),
            modern(9, "initialize", json!({"protocolVersion": "2025-11-25"})),
            modern(10, "no/such/method", json!({})),
            modern(11, "resources/read", json!({"uri": "file:///x"})),
        ],
    );
    let needs = "Invalid params: a request without `initialize` must carry `_meta` with \
                 `io.modelcontextprotocol/protocolVersion` and \
                 `io.modelcontextprotocol/clientCapabilities`";
    assert_eq!(
        lines,
        vec![
            error(
                json!(1),
                -32602,
                &format!("{needs}; `io.modelcontextprotocol/clientCapabilities` is missing")
            ),
            error(
                json!(2),
                -32602,
                &format!("{needs}; `io.modelcontextprotocol/protocolVersion` is missing")
            ),
            unknown,
            handshake_only,
            error(
                json!(5),
                -32602,
                &format!("{needs}; `io.modelcontextprotocol/clientCapabilities` must be an object")
            ),
            error(
                json!(6),
                -32602,
                &format!("{needs}; `io.modelcontextprotocol/protocolVersion` is missing")
            ),
            error(
                json!(7),
                -32601,
                "Method not found: ping (it is not part of protocol 2026-07-28)"
            ),
            error(
                json!(8),
                -32601,
                "Method not found: logging/setLevel (it is not part of protocol 2026-07-28; \
                 send `io.modelcontextprotocol/logLevel` in a request's `_meta` instead)"
            ),
            error(
                json!(9),
                -32601,
                "Method not found: initialize (it is not part of protocol 2026-07-28; send it \
                 without `_meta` protocol fields to use an older protocol)"
            ),
            error(json!(10), -32601, "Method not found: no/such/method"),
            json!({"jsonrpc": "2.0", "id": 11, "error": {
                "code": -32602,
                "message": "Invalid params: no resource `file:///x`: this server offers tools \
                            only, and `resources/list` is empty",
                "data": {"uri": "file:///x"},
            }}),
        ]
    );
}

#[test]
fn log_messages_need_a_log_level_in_the_request_and_progress_its_token() {
    let logged = |id: i64, meta: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "log", "arguments": {}, "_meta": meta}})
    };
    // Without a level, no log message; a legacy `logging/setLevel` on the same connection sets
    // nothing for a modern request.
    let lines = transcript(
        config(),
        &[
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"protocolVersion": "2025-11-25", "capabilities": {}}}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel",
                   "params": {"level": "debug"}}),
            logged(2, envelope(json!({}))),
        ],
    );
    assert_eq!(lines.len(), 3, "{lines:#?}");
    assert_eq!(lines[2]["id"], 2);
    let lines = transcript(
        config(),
        &[logged(
            1,
            envelope(json!({"io.modelcontextprotocol/logLevel": "error"})),
        )],
    );
    assert_eq!(
        lines[0],
        json!({"jsonrpc": "2.0", "method": "notifications/message",
               "params": {"level": "error", "logger": "once", "data": "an error line"}})
    );
    assert_eq!(lines[1]["id"], 1);
    assert_eq!(lines.len(), 2);
    let lines = transcript(
        config(),
        &[json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                 "params": {"name": "progress", "arguments": {},
                            "_meta": envelope(json!({"progressToken": "p"}))}})],
    );
    assert_eq!(
        lines[0],
        json!({"jsonrpc": "2.0", "method": "notifications/progress",
               "params": {"progressToken": "p", "progress": 1.0, "total": 2.0, "message": "half"}})
    );
    assert_eq!(lines[1]["result"]["resultType"], "complete");
}

#[test]
fn a_handshake_client_gets_exactly_what_it_got_before() {
    let lines = transcript(
        config(),
        &[
            json!({"jsonrpc": "2.0", "id": 0, "method": "tools/list"}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "initialize",
                   "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": "old", "version": "1"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                   "params": {"name": "echo", "arguments": {}}}),
        ],
    );
    assert_eq!(
        lines,
        vec![
            error(
                json!(0),
                -32602,
                "Invalid params: a request without `initialize` must carry `_meta` with \
                 `io.modelcontextprotocol/protocolVersion` and \
                 `io.modelcontextprotocol/clientCapabilities`; send `initialize` (and wait for \
                 its reply) before tools/list"
            ),
            json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
            json!({"jsonrpc": "2.0", "id": 2, "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {"listChanged": false}, "logging": {}},
                "serverInfo": {"name": "once-mcp", "version": "1.2.3"},
                "instructions": "Query the build graph of this workspace.",
                "_meta": {"dev.once/workspace": "/work/ws"},
            }}),
            json!({"jsonrpc": "2.0", "id": 3, "result": {}}),
            json!({"jsonrpc": "2.0", "id": 4, "result": {
                "content": [{"type": "text", "text": "{\"text\":\"hi\"}"}],
                "structuredContent": {"result": {"text": "hi"}},
            }}),
        ]
    );
}

#[test]
fn initialize_asking_for_the_new_revision_gets_the_newest_handshake_version() {
    let lines = transcript(
        config(),
        &[json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": MODERN, "capabilities": {}}})],
    );
    assert_eq!(lines[0]["result"]["protocolVersion"], "2025-11-25");
}
