//! Transcript tests: JSON lines in, JSON lines out, through `serve` only.
//!
//! The input is a channel-backed reader and the output a channel-backed
//! writer, so every test controls timing by waiting for specific lines or for
//! signals from its own tools — never by sleeping.

use std::io::{self, BufRead, Read, Write};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use once_mcp::{
    Annotations, Answer, CancelToken, Gate, Gates, InputEnd, LogLevel, ServeOptions, ServerConfig,
    Tool, ToolResult, serve_with,
};
use serde_json::{Value, json};

const PATIENCE: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------- harness

struct ChannelReader {
    rx: Receiver<Vec<u8>>,
    buf: Vec<u8>,
    pos: usize,
}

impl Read for ChannelReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for ChannelReader {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.pos == self.buf.len() {
            match self.rx.recv() {
                Ok(chunk) => {
                    self.buf = chunk;
                    self.pos = 0;
                }
                Err(_) => return Ok(&[]),
            }
        }
        Ok(&self.buf[self.pos..])
    }

    fn consume(&mut self, amount: usize) {
        self.pos += amount;
    }
}

/// Each `write` call is forwarded whole, so the test can check that every
/// message was written as exactly one complete line.
struct ChannelWriter(Sender<Vec<u8>>);

impl Write for ChannelWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let _ = self.0.send(bytes.to_vec());
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

struct Client {
    input: Option<Sender<Vec<u8>>>,
    output: Receiver<Vec<u8>>,
    server: Option<JoinHandle<io::Result<()>>>,
}

impl Client {
    fn start(config: ServerConfig) -> Self {
        Self::start_with(config, ServeOptions::default())
    }

    fn start_with(config: ServerConfig, options: ServeOptions) -> Self {
        let (input, rx) = mpsc::channel();
        let (tx, output) = mpsc::channel();
        let reader = ChannelReader {
            rx,
            buf: Vec::new(),
            pos: 0,
        };
        let server = std::thread::spawn(move || {
            serve_with(Arc::new(config), reader, ChannelWriter(tx), options)
        });
        Self {
            input: Some(input),
            output,
            server: Some(server),
        }
    }

    fn send_raw(&self, bytes: &[u8]) {
        self.input.as_ref().unwrap().send(bytes.to_vec()).unwrap();
    }

    fn send(&self, message: Value) {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        self.send_raw(&line);
    }

    fn recv(&self) -> Value {
        let bytes = self
            .output
            .recv_timeout(PATIENCE)
            .expect("the server should have replied");
        parse_line(&bytes)
    }

    fn call(&self, message: Value) -> Value {
        self.send(message);
        self.recv()
    }

    /// Proves nothing was written for what was sent before: the very next
    /// line must be the reply to this ping.
    fn assert_quiet(&self, ping_id: i64) {
        assert_eq!(
            self.call(json!({"jsonrpc": "2.0", "id": ping_id, "method": "ping"})),
            json!({"jsonrpc": "2.0", "id": ping_id, "result": {}})
        );
    }

    fn initialize(&self, version: &str) -> Value {
        self.call(json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {},
                       "clientInfo": {"name": "test", "version": "0"}}
        }))
    }

    /// Closes the input and returns every line written after that.
    fn finish(mut self) -> Vec<Value> {
        drop(self.input.take());
        let result = self.server.take().unwrap().join().unwrap();
        result.expect("serve should end cleanly at end of input");
        self.output.try_iter().map(|b| parse_line(&b)).collect()
    }
}

fn parse_line(bytes: &[u8]) -> Value {
    assert_eq!(
        bytes.last(),
        Some(&b'\n'),
        "a write must end with a newline"
    );
    assert_eq!(
        bytes.iter().filter(|&&b| b == b'\n').count(),
        1,
        "a write must be exactly one line"
    );
    serde_json::from_slice(bytes).unwrap()
}

fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn call(id: i64, name: &str, arguments: Value) -> Value {
    request(
        id,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
}

fn error(id: Value, code: i64) -> impl Fn(&Value) {
    move |reply: &Value| {
        assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
        assert_eq!(reply["id"], id, "{reply}");
        assert_eq!(reply["error"]["code"], code, "{reply}");
        assert!(reply["error"]["message"].is_string(), "{reply}");
        assert!(reply.get("result").is_none(), "{reply}");
    }
}

fn tool_error_text(reply: &Value) -> String {
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert!(reply["result"].get("structuredContent").is_none());
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

// ---------------------------------------------------------------- tools

fn closed_object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required,
           "additionalProperties": false})
}

fn tool(
    name: &'static str,
    gate: Gate,
    input: Value,
    handler: impl Fn(&once_mcp::CallContext, serde_json::Map<String, Value>) -> ToolResult
    + Send
    + Sync
    + 'static,
) -> Tool {
    Tool {
        name,
        title: "A test tool",
        description: format!("The {name} test tool."),
        input_schema: input,
        output_schema: json!({"type": "object", "properties": {"text": {"type": "string"}},
                              "required": ["text"], "additionalProperties": false}),
        annotations: Annotations::READ_ONLY,
        gate,
        handler: once_mcp::Handler::query(handler),
    }
}

fn echo() -> Tool {
    tool(
        "echo",
        Gate::Always,
        closed_object(json!({"text": {"type": "string"}}), &["text"]),
        |_, args| match args.get("text").and_then(Value::as_str) {
            Some(text) => ToolResult::Value(json!({"text": text})),
            None => ToolResult::Error(
                "Missing argument \"text\" (a string). Call echo again with it.".into(),
            ),
        },
    )
}

/// A tool that acts, answering with the word it is given (and a value for `done`).
fn act(gate: Gate) -> Tool {
    let words = json!({"type": "string", "enum": ["done", "refused", "busy", "problem", "none"]});
    Tool {
        name: "act",
        title: "An acting test tool",
        description: "Answers with the word it is given.".into(),
        input_schema: closed_object(json!({"word": words}), &["word"]),
        output_schema: json!({"type": "object", "properties": {"text": {"type": "string"}},
                              "required": ["text"], "additionalProperties": false}),
        annotations: Annotations {
            read_only: false,
            destructive: false,
            idempotent: false,
            open_world: false,
        },
        gate,
        handler: once_mcp::Handler::act(|_, args| {
            match args.get("word").and_then(Value::as_str).unwrap_or_default() {
                "done" => Answer::done("did it.").with_result(json!({"text": "did"})),
                "refused" => Answer::refused("the gate is closed"),
                "busy" => Answer::busy("held by another call"),
                "problem" => Answer::problem("it failed:\n  line two\n"),
                _ => Answer::none("nothing to do"),
            }
        }),
    }
}

fn basic_tools() -> Vec<Tool> {
    vec![
        echo(),
        tool(
            "fail",
            Gate::Always,
            closed_object(json!({}), &[]),
            |_, _| {
                ToolResult::Error(
                    "The graph has no target named x; call targets to list them.".into(),
                )
            },
        ),
        tool(
            "explode",
            Gate::Always,
            closed_object(json!({}), &[]),
            |_, _| panic!("boom"),
        ),
        tool(
            "edit_file",
            Gate::Edit,
            closed_object(json!({}), &[]),
            |_, _| ToolResult::Value(json!({"text": "edited"})),
        ),
        tool(
            "run_target",
            Gate::Run,
            closed_object(json!({}), &[]),
            |_, _| ToolResult::Value(json!({"text": "ran"})),
        ),
        tool(
            "log",
            Gate::Always,
            closed_object(json!({}), &[]),
            |ctx, _| {
                ctx.log(LogLevel::Debug, "a debug line");
                ctx.log(LogLevel::Error, "an error line");
                ToolResult::Value(json!({"text": "logged"}))
            },
        ),
        tool(
            "progress",
            Gate::Always,
            closed_object(json!({}), &[]),
            |ctx, _| {
                ctx.progress(1.0, Some(3.0), Some("one"));
                ctx.progress(1.0, Some(3.0), Some("not increasing: dropped"));
                ctx.progress(2.0, None, None);
                ctx.progress(3.0, Some(3.0), Some("three"));
                ToolResult::Value(json!({"text": "done"}))
            },
        ),
    ]
}

fn config(tools: Vec<Tool>) -> ServerConfig {
    let mut config = ServerConfig::new("1.2.3");
    config.instructions = "Query the build graph of this workspace.".into();
    config.workspace_root = Some("/work/ws".into());
    config.tools = tools;
    config
}

/// A tool that tells the test it started, then blocks until either the test
/// releases it or the call is cancelled; it reports which one happened.
fn blocking_tool() -> (Tool, Receiver<&'static str>, Sender<()>) {
    let (started_tx, started_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let started_tx = Mutex::new(started_tx);
    let release_rx = Mutex::new(release_rx);
    let tool = tool(
        "block",
        Gate::Always,
        closed_object(json!({}), &[]),
        move |ctx, _| {
            let _ = started_tx.lock().unwrap().send("started");
            let cancel: CancelToken = ctx.cancelled().clone();
            // Wait for a release or a cancellation, whichever comes first.
            loop {
                if cancel.wait_timeout(Duration::from_millis(5)) {
                    let _ = started_tx.lock().unwrap().send("saw cancel");
                    return ToolResult::Value(json!({"text": "cancelled"}));
                }
                if release_rx.lock().unwrap().try_recv().is_ok() {
                    return ToolResult::Value(json!({"text": "released"}));
                }
            }
        },
    );
    (tool, started_rx, release_tx)
}

// ---------------------------------------------------------------- schema rules

fn assert_schema_is_portable(schema: &Value, path: &str) {
    match schema {
        Value::Bool(_) => panic!("{path}: boolean sub-schema"),
        Value::Object(map) => {
            if let Some(kind) = map.get("type") {
                assert!(kind.is_string(), "{path}: type must be one string");
            }
            for (key, value) in map {
                let here = format!("{path}/{key}");
                match key.as_str() {
                    "properties" | "$defs" | "definitions" | "patternProperties" => {
                        for (name, child) in value.as_object().unwrap() {
                            assert_schema_is_portable(child, &format!("{here}/{name}"));
                        }
                    }
                    "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                        for child in value.as_array().unwrap() {
                            assert_schema_is_portable(child, &here);
                        }
                    }
                    "items" | "not" | "if" | "then" | "else" => {
                        assert_schema_is_portable(value, &here)
                    }
                    "additionalProperties" if !value.is_boolean() => {
                        assert_schema_is_portable(value, &here)
                    }
                    _ => {}
                }
            }
        }
        other => panic!("{path}: not a schema: {other}"),
    }
}

// ---------------------------------------------------------------- tests

#[test]
fn initialize_and_list_per_version() {
    for version in ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"] {
        let client = Client::start(config(vec![echo(), act(Gate::Always)]));
        assert_eq!(
            client.initialize(version),
            json!({"jsonrpc": "2.0", "id": 0, "result": {
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": false}, "logging": {}},
                "serverInfo": {"name": "once-mcp", "version": "1.2.3"},
                "instructions": "Query the build graph of this workspace.",
                "_meta": {"dev.once/workspace": "/work/ws"},
            }})
        );
        client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        let list = client.call(request(1, "tools/list", json!({})));
        insta::assert_json_snapshot!(format!("tools_list_{version}"), list);
        for tool in list["result"]["tools"].as_array().unwrap() {
            assert_eq!(tool["inputSchema"]["type"], "object");
            assert_eq!(tool["inputSchema"]["additionalProperties"], false);
            assert_schema_is_portable(&tool["inputSchema"], "inputSchema");
            if let Some(output) = tool.get("outputSchema") {
                assert_eq!(output["type"], "object");
                assert_schema_is_portable(output, "outputSchema");
            }
        }
        let reply = client.call(call(2, "echo", json!({"text": "hi"})));
        let mut expected = json!({"content": [{"type": "text", "text": "{\"text\":\"hi\"}"}]});
        if version >= "2025-06-18" {
            expected["structuredContent"] = json!({"result": {"text": "hi"}});
        }
        assert_eq!(
            reply,
            json!({"jsonrpc": "2.0", "id": 2, "result": expected})
        );
        assert_eq!(client.finish(), Vec::<Value>::new());
    }
}

#[test]
fn acting_tools_answer_with_an_outcome_word_message_and_value() {
    let client = Client::start(config(vec![act(Gate::Always), act_gated()]));
    client.initialize("2025-11-25");
    let list = client.call(request(1, "tools/list", json!({})));
    let schema = &list["result"]["tools"][0]["outputSchema"];
    assert_eq!(schema["required"], json!(["outcome", "message"]));
    assert_eq!(
        schema["properties"]["outcome"]["enum"],
        json!(["done", "refused", "busy", "problem", "none"])
    );
    assert_eq!(schema["properties"]["result"]["required"], json!(["text"]));
    assert_eq!(schema["additionalProperties"], false);

    let reply = client.call(call(2, "act", json!({"word": "done"})));
    assert_eq!(
        reply["result"],
        json!({
            "content": [{"type": "text", "text": "done: did it\n{\"text\":\"did\"}"}],
            "structuredContent": {"outcome": "done", "message": "did it", "result": {"text": "did"}},
            "isError": false,
        })
    );
    for (id, word, message, is_error) in [
        (3, "refused", "the gate is closed", true),
        (4, "busy", "held by another call", true),
        (5, "problem", "it failed:; line two", true),
        (6, "none", "nothing to do", false),
    ] {
        let reply = client.call(call(id, "act", json!({"word": word})));
        assert_eq!(
            reply["result"],
            json!({
                "content": [{"type": "text", "text": format!("{word}: {message}")}],
                "structuredContent": {"outcome": word, "message": message},
                "isError": is_error,
            }),
            "{word}"
        );
    }
    // Refused before the handler runs: bad arguments, and a closed gate.
    let bad = client.call(call(7, "act", json!({"word": "maybe"})));
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    assert_eq!(bad["result"]["structuredContent"]["outcome"], "refused");
    let message = bad["result"]["structuredContent"]["message"]
        .as_str()
        .unwrap();
    assert!(
        message.starts_with("act: the argument `word` is \"maybe\""),
        "{message}"
    );
    assert!(!message.ends_with('.'), "{message}");
    let gated = client.call(call(8, "act_run", json!({"word": "done"})));
    assert_eq!(gated["result"]["structuredContent"]["outcome"], "refused");
    assert!(
        gated["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("refused: the tool `act_run` is disabled because it runs commands"),
        "{gated}"
    );
    client.finish();

    // Without structured output, the text alone carries the word.
    let client = Client::start(config(vec![act(Gate::Always)]));
    client.initialize("2025-03-26");
    let list = client.call(request(1, "tools/list", json!({})));
    assert!(list["result"]["tools"][0].get("outputSchema").is_none());
    let reply = client.call(call(2, "act", json!({"word": "busy"})));
    assert_eq!(
        reply["result"],
        json!({"content": [{"type": "text", "text": "busy: held by another call"}], "isError": true})
    );
    client.finish();
}

fn act_gated() -> Tool {
    Tool {
        name: "act_run",
        ..act(Gate::Run)
    }
}

#[test]
fn unknown_version_gets_the_latest_and_bad_initialize_is_refused() {
    let client = Client::start(config(vec![]));
    client.send(request(1, "initialize", json!({"capabilities": {}})));
    error(json!(1), -32602)(&client.recv());
    client.send(request(
        2,
        "initialize",
        json!({"protocolVersion": 20250618}),
    ));
    error(json!(2), -32602)(&client.recv());
    client.send(json!({"jsonrpc": "2.0", "id": 3, "method": "initialize"}));
    error(json!(3), -32602)(&client.recv());
    let reply = client.initialize("1999-01-01");
    assert_eq!(reply["result"]["protocolVersion"], "2025-11-25");
    client.send(request(
        4,
        "initialize",
        json!({"protocolVersion": "2025-06-18"}),
    ));
    error(json!(4), -32600)(&client.recv());
    // Empty catalogs.
    assert_eq!(
        client.call(request(5, "tools/list", json!({})))["result"],
        json!({"tools": []})
    );
    assert_eq!(
        client.call(request(6, "resources/list", json!({})))["result"],
        json!({"resources": []})
    );
    assert_eq!(
        client.call(request(7, "resources/templates/list", json!({})))["result"],
        json!({"resourceTemplates": []})
    );
    assert_eq!(
        client.call(request(8, "prompts/list", json!({})))["result"],
        json!({"prompts": []})
    );
    client.finish();
}

#[test]
fn ping_discover_and_workspace_less_initialize() {
    let mut config = config(vec![]);
    config.workspace_root = None;
    config.instructions.clear();
    let client = Client::start(config);
    client.assert_quiet(1);
    // A probe without the 2026-07-28 `_meta` is refused at once (a client falls back to
    // `initialize` on any error that is not a 2026-07-28 one); tests/modern.rs answers it.
    let discover = client.call(request(2, "server/discover", json!({})));
    error(json!(2), -32602)(&discover);
    assert!(
        discover["error"]["message"]
            .as_str()
            .unwrap()
            .contains("io.modelcontextprotocol/protocolVersion")
    );
    let reply = client.initialize("2025-06-18");
    assert_eq!(
        reply["result"],
        json!({"protocolVersion": "2025-06-18",
               "capabilities": {"tools": {"listChanged": false}, "logging": {}},
               "serverInfo": {"name": "once-mcp", "version": "1.2.3"}})
    );
    client.assert_quiet(3);
    assert_eq!(
        client
            .call(json!({"jsonrpc": "2.0", "id": "s", "method": "ping", "params": {"_meta": {}}})),
        json!({"jsonrpc": "2.0", "id": "s", "result": {}})
    );
    client.finish();
}

#[test]
fn params_that_are_not_an_object_are_invalid_params_of_the_method() {
    let client = Client::start(config(basic_tools()));
    client.initialize("2025-11-25");
    for (id, params) in [json!(5), json!("x"), json!(true), json!([1])]
        .into_iter()
        .enumerate()
    {
        let reply = client
            .call(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}));
        error(json!(id), -32602)(&reply);
        let message = reply["error"]["message"].as_str().unwrap();
        assert!(message.contains("object"), "{reply}");
    }
    let reply =
        client.call(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": 1}));
    error(json!(9), -32602)(&reply);
    // An unknown method is unknown whatever its params.
    let reply =
        client.call(json!({"jsonrpc": "2.0", "id": 10, "method": "tools/frob", "params": 1}));
    error(json!(10), -32601)(&reply);
    client.finish();
}

#[test]
fn a_lone_surrogate_is_answered_under_the_request_id() {
    let client = Client::start(config(basic_tools()));
    client.initialize("2025-11-25");
    // serde_json refuses a lone surrogate escape, yet the line is JSON text (RFC 8259 allows the
    // escape), so the request is read far enough to be answered under its own id.
    for (line, id) in [
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"\ud800"}}}"#,
            json!(7),
        ),
        (
            r#"{"jsonrpc":"2.0","method":"tools/call","id":"s","params":{"name":"\udc00x"}}"#,
            json!("s"),
        ),
        (
            r#"{"jsonrpc":"2.0","id":8,"method":"ping","params":{"_meta":{"note":"\ud83d\u0041"}}}"#,
            json!(8),
        ),
    ] {
        client.send_raw(format!("{line}\n").as_bytes());
        let reply = client.recv();
        error(id, -32600)(&reply);
        let message = reply["error"]["message"].as_str().unwrap();
        assert!(message.contains("surrogate"), "{reply}");
        assert!(message.contains("UTF-8"), "{reply}");
    }
    // A pair is one character, served as such; a notification with a lone one gets no reply.
    client.send_raw(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\",\"params\":{\"a\":\"\\ud800\"}}\n",
    );
    let reply = client.call(json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}));
    assert_eq!(reply, json!({"jsonrpc": "2.0", "id": 9, "result": {}}));
    client.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"ping\",\"params\":{\"_meta\":{\"a\":\"\\ud83d\\ude00\"}}}\n");
    assert_eq!(
        client.recv(),
        json!({"jsonrpc": "2.0", "id": 10, "result": {}})
    );
    // A line that is not JSON at all still gets a parse error without an id.
    client.send_raw(b"{\"id\": 11, \"method\": \"\\ud800\n");
    error(Value::Null, -32700)(&client.recv());
    client.finish();
}

#[test]
fn error_model() {
    let client = Client::start(config(basic_tools()));
    client.initialize("2025-11-25");
    // Parse errors: id is null.
    client.send_raw(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \n");
    error(Value::Null, -32700)(&client.recv());
    client.send_raw(b"not json at all\n");
    error(Value::Null, -32700)(&client.recv());
    // Invalid requests: the id is echoed only when it is a valid id.
    for (message, id) in [
        (json!({"id": 5, "method": "ping"}), json!(5)),
        (
            json!({"jsonrpc": "1.0", "id": "x", "method": "ping"}),
            json!("x"),
        ),
        (json!({"jsonrpc": "2.0", "id": 6, "method": 7}), json!(6)),
        (
            json!({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}),
            Value::Null,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}),
            Value::Null,
        ),
        (
            json!({"jsonrpc": "2.0", "id": null, "method": "ping"}),
            Value::Null,
        ),
        (json!({"jsonrpc": "2.0", "id": 9}), json!(9)),
        (json!({}), Value::Null),
        (json!(42), Value::Null),
        (json!("ping"), Value::Null),
    ] {
        error(id, -32600)(&client.call(message));
    }
    // Unknown method, named in the message.
    let reply = client.call(request(10, "tools/frobnicate", json!({})));
    error(json!(10), -32601)(&reply);
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tools/frobnicate")
    );
    // Notifications never get a reply; responses are ignored.
    client.send(json!({"jsonrpc": "2.0", "method": "notifications/whatever"}));
    client.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": 3}));
    client.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 999}}));
    client.send(json!({"jsonrpc": "2.0", "method": "tools/list", "params": {"cursor": 5}}));
    client.send(json!({"jsonrpc": "2.0", "id": 77, "result": {}}));
    client.send(json!({"jsonrpc": "2.0", "id": 78, "error": {"code": 1, "message": "x"}}));
    client.assert_quiet(11);
    // Malformed tools/call params: -32602 with the right id.
    for (id, params) in [
        (20, None),
        (21, Some(json!([]))),
        (22, Some(json!({}))),
        (23, Some(json!({"name": 5}))),
        (24, Some(json!({"name": "echo", "arguments": "text"}))),
        (25, Some(json!({"name": "echo", "arguments": ["hi"]}))),
    ] {
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call"});
        if let Some(params) = params {
            message["params"] = params;
        }
        error(json!(id), -32602)(&client.call(message));
    }
    // Other methods' invalid params.
    error(json!(26), -32602)(&client.call(request(
        26,
        "logging/setLevel",
        json!({"level": "loud"}),
    )));
    error(json!(27), -32602)(&client.call(request(27, "logging/setLevel", json!([]))));
    // Tool-level failures are results with isError.
    let text = tool_error_text(&client.call(call(30, "ecko", json!({"text": "x"}))));
    assert!(
        text.contains("\"ecko\"") && text.contains("\"echo\""),
        "{text}"
    );
    let text = tool_error_text(&client.call(call(31, "zzzzzzzzzzzzz", json!({}))));
    assert!(text.contains("tools/list"), "{text}");
    let text = tool_error_text(&client.call(call(32, "echo", json!({}))));
    assert!(text.contains("\"text\""), "{text}");
    let text = tool_error_text(&client.call(call(33, "fail", json!({}))));
    assert_eq!(
        text,
        "The graph has no target named x; call targets to list them."
    );
    // Closed gates: not listed, and refused naming the flag.
    let listed: Vec<Value> = client.call(request(34, "tools/list", json!({})))["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert_eq!(
        listed,
        [
            json!("echo"),
            json!("fail"),
            json!("explode"),
            json!("log"),
            json!("progress")
        ]
    );
    let text = tool_error_text(&client.call(call(35, "run_target", json!({}))));
    assert!(text.contains("once mcp --allow-run"), "{text}");
    let text = tool_error_text(&client.call(call(36, "edit_file", json!({}))));
    assert!(text.contains("once mcp --allow-edit"), "{text}");
    // A panicking handler: -32603 under its id, and the loop goes on.
    let reply = client.call(call(37, "explode", json!({})));
    error(json!(37), -32603)(&reply);
    assert!(reply["error"]["message"].as_str().unwrap().contains("boom"));
    client.assert_quiet(38);
    assert_eq!(client.finish(), Vec::<Value>::new());
}

#[test]
fn open_gates_list_and_run_gated_tools() {
    let mut config = config(basic_tools());
    config.gates = Gates {
        allow_edit: true,
        allow_run: true,
    };
    let client = Client::start(config);
    client.initialize("2025-11-25");
    let list = client.call(request(1, "tools/list", json!({})));
    assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 7);
    let reply = client.call(call(2, "run_target", json!({})));
    assert_eq!(
        reply["result"]["structuredContent"],
        json!({"result": {"text": "ran"}})
    );
    client.finish();
}

#[test]
fn batches_only_under_2025_03_26() {
    for version in ["2025-11-25", "2025-06-18", "2024-11-05"] {
        let client = Client::start(config(vec![echo()]));
        // Before initialize, too.
        client.send(json!([request(1, "ping", json!({}))]));
        error(Value::Null, -32600)(&client.recv());
        client.initialize(version);
        client.send(json!([request(2, "ping", json!({}))]));
        error(Value::Null, -32600)(&client.recv());
        client.assert_quiet(3);
        client.finish();
    }
    let client = Client::start(config(vec![echo()]));
    client.initialize("2025-03-26");
    client.send(json!([
        call(1, "echo", json!({"text": "a"})),
        request(2, "ping", json!({})),
        {"jsonrpc": "2.0", "method": "notifications/whatever"},
        request(3, "nope", json!({})),
        7,
    ]));
    let reply = client.recv();
    let mut replies = reply.as_array().unwrap().clone();
    replies.sort_by_key(|r| r["id"].as_i64().unwrap_or(-1));
    assert_eq!(replies.len(), 4);
    error(Value::Null, -32600)(&replies[0]);
    assert_eq!(
        replies[1]["result"]["content"][0]["text"],
        "{\"text\":\"a\"}"
    );
    assert!(replies[1]["result"].get("structuredContent").is_none());
    assert_eq!(replies[2], json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
    error(json!(3), -32601)(&replies[3]);
    // All notifications: no reply at all.
    client.send(json!([
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
    ]));
    client.assert_quiet(4);
    // Empty batch: one Invalid Request.
    client.send(json!([]));
    error(Value::Null, -32600)(&client.recv());
    client.assert_quiet(5);
    client.finish();
}

#[test]
fn logging_set_level_filters_tool_logs() {
    let client = Client::start(config(basic_tools()));
    client.initialize("2025-11-25");
    // Before setLevel we send no log messages.
    assert_eq!(client.call(call(1, "log", json!({})))["id"], 1);
    assert_eq!(
        client.call(request(2, "logging/setLevel", json!({"level": "warning"}))),
        json!({"jsonrpc": "2.0", "id": 2, "result": {}})
    );
    client.send(call(3, "log", json!({})));
    assert_eq!(
        client.recv(),
        json!({"jsonrpc": "2.0", "method": "notifications/message",
               "params": {"level": "error", "logger": "once", "data": "an error line"}})
    );
    assert_eq!(client.recv()["id"], 3);
    client.call(request(4, "logging/setLevel", json!({"level": "debug"})));
    client.send(call(5, "log", json!({})));
    assert_eq!(client.recv()["params"]["level"], "debug");
    assert_eq!(client.recv()["params"]["level"], "error");
    assert_eq!(client.recv()["id"], 5);
    client.finish();
}

#[test]
fn progress_is_ordered_and_precedes_the_reply() {
    for (version, with_message) in [
        ("2025-11-25", true),
        ("2025-03-26", true),
        ("2024-11-05", false),
    ] {
        let client = Client::start(config(basic_tools()));
        client.initialize(version);
        client.send(request(
            1,
            "tools/call",
            json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": "tok"}}),
        ));
        let mut expected = vec![
            json!({"progressToken": "tok", "progress": 1.0, "total": 3.0, "message": "one"}),
            json!({"progressToken": "tok", "progress": 2.0}),
            json!({"progressToken": "tok", "progress": 3.0, "total": 3.0, "message": "three"}),
        ];
        if !with_message {
            for params in &mut expected {
                params.as_object_mut().unwrap().remove("message");
            }
        }
        for params in expected {
            assert_eq!(
                client.recv(),
                json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})
            );
        }
        assert_eq!(client.recv()["id"], 1);
        // Without a token: no progress at all. An integer token works too.
        assert_eq!(client.call(call(2, "progress", json!({})))["id"], 2);
        client.send(request(
            3,
            "tools/call",
            json!({"name": "progress", "_meta": {"progressToken": 9}}),
        ));
        assert_eq!(client.recv()["params"]["progressToken"], 9);
        // Read everything before closing: end of input cancels running calls,
        // and a cancelled call sends no more progress.
        assert_eq!(client.recv()["params"]["progress"], 2.0);
        assert_eq!(client.recv()["params"]["progress"], 3.0);
        assert_eq!(client.recv()["id"], 3);
        assert_eq!(client.finish(), Vec::<Value>::new());
    }
}

#[test]
fn cancellation_suppresses_the_reply() {
    let (block, events, _release) = blocking_tool();
    let client = Client::start(config(vec![block, echo()]));
    client.initialize("2025-11-25");
    client.send(request(1, "tools/call", json!({"name": "block"})));
    assert_eq!(events.recv_timeout(PATIENCE).unwrap(), "started");
    // The loop keeps serving while the call runs.
    client.assert_quiet(2);
    assert_eq!(client.call(call(3, "echo", json!({"text": "x"})))["id"], 3);
    client.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": 1, "reason": "user pressed stop"}}),
    );
    assert_eq!(events.recv_timeout(PATIENCE).unwrap(), "saw cancel");
    client.assert_quiet(4);
    // serve waits for the worker before returning, so a leaked reply would
    // show up here.
    assert_eq!(client.finish(), Vec::<Value>::new());
}

#[test]
fn the_end_of_input_is_announced_while_a_stubborn_call_still_runs() {
    // A call that, told to stop, takes its time: it returns only when the test lets it.
    let (events_tx, events) = mpsc::channel();
    let (let_go, held) = mpsc::channel::<()>();
    let (events_tx, held) = (Mutex::new(events_tx), Mutex::new(held));
    let stubborn = tool(
        "stubborn",
        Gate::Always,
        closed_object(json!({}), &[]),
        move |ctx, _| {
            let _ = events_tx.lock().unwrap().send("started");
            let cancel: CancelToken = ctx.cancelled().clone();
            while !cancel.wait_timeout(Duration::from_millis(5)) {}
            let _ = held.lock().unwrap().recv_timeout(PATIENCE);
            let _ = events_tx.lock().unwrap().send("returned");
            ToolResult::Value(json!({"text": "stopped"}))
        },
    );
    let (ended_tx, ended) = mpsc::channel();
    let ended_tx = Mutex::new(ended_tx);
    let options = ServeOptions {
        shutdown_grace: PATIENCE,
        on_input_end: Some(InputEnd(Arc::new(move || {
            let _ = ended_tx.lock().unwrap().send(());
        }))),
        ..ServeOptions::default()
    };
    let mut client = Client::start_with(config(vec![stubborn]), options);
    client.initialize("2025-11-25");
    client.send(request(1, "tools/call", json!({"name": "stubborn"})));
    assert_eq!(events.recv_timeout(PATIENCE).unwrap(), "started");
    drop(client.input.take());
    // The door hears that the input ended while the call has not returned yet.
    ended
        .recv_timeout(PATIENCE)
        .expect("the end of input is announced before the calls return");
    assert!(events.try_recv().is_err(), "the call has not returned yet");
    let_go.send(()).unwrap();
    assert_eq!(events.recv_timeout(PATIENCE).unwrap(), "returned");
    client.finish();
}

#[test]
fn released_call_replies_and_busy_and_duplicate_ids() {
    let (block, events, release) = blocking_tool();
    let options = ServeOptions {
        max_in_flight: 1,
        ..ServeOptions::default()
    };
    let client = Client::start_with(config(vec![block, echo()]), options);
    client.initialize("2025-11-25");
    client.send(request(1, "tools/call", json!({"name": "block"})));
    assert_eq!(events.recv_timeout(PATIENCE).unwrap(), "started");
    let busy = client.call(call(2, "echo", json!({"text": "x"})));
    error(json!(2), -32603)(&busy);
    let duplicate = client.call(call(1, "echo", json!({"text": "x"})));
    error(json!(1), -32600)(&duplicate);
    release.send(()).unwrap();
    assert_eq!(
        client.recv()["result"]["structuredContent"],
        json!({"result": {"text": "released"}})
    );
    assert_eq!(client.call(call(3, "echo", json!({"text": "y"})))["id"], 3);
    client.finish();
}

#[test]
fn end_of_input_cancels_running_calls() {
    let (block, events, _release) = blocking_tool();
    let client = Client::start(config(vec![block]));
    client.initialize("2025-11-25");
    client.send(request(1, "tools/call", json!({"name": "block"})));
    assert_eq!(events.recv_timeout(PATIENCE).unwrap(), "started");
    let rest = client.finish();
    assert_eq!(events.recv_timeout(PATIENCE).unwrap(), "saw cancel");
    // The call was not cancelled by the client, so its reply may still be
    // written if it finished within the grace period.
    assert!(rest.len() <= 1);
}

#[test]
fn unicode_and_framing() {
    let client = Client::start(config(vec![echo()]));
    client.initialize("2025-11-25");
    // Surrogate pairs arrive as the real character and go back intact.
    client.send_raw(
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"\ud83d\ude00 caf\u00e9"}}}"#,
    );
    client.send_raw(b"\n");
    let reply = client.recv();
    assert_eq!(
        reply["result"]["structuredContent"]["result"]["text"],
        "😀 café"
    );
    assert_eq!(
        reply["result"]["content"][0]["text"],
        "{\"text\":\"😀 café\"}"
    );
    // A lone surrogate is refused under the request's id; invalid UTF-8 is a parse error.
    client.send_raw(br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"\ud83d"}}}"#);
    client.send_raw(b"\n");
    error(json!(2), -32600)(&client.recv());
    client.send_raw(
        b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\",\"params\":{\"x\":\"\xc3\x28\"}}\n",
    );
    error(Value::Null, -32700)(&client.recv());
    // Blank lines (whitespace only, CRLF) are skipped; CRLF requests work.
    client.send_raw(b"\n   \n\t\r\n\r\n");
    client.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}\r\n");
    assert_eq!(
        client.recv(),
        json!({"jsonrpc": "2.0", "id": 4, "result": {}})
    );
    // A message split across reads is still one message.
    client.send_raw(b"{\"jsonrpc\":\"2.0\",");
    client.send_raw(
        b"\"id\":5,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\"}\n",
    );
    assert_eq!(client.recv()["id"], 5);
    assert_eq!(client.recv()["id"], 6);
    // Output never contains raw newlines even for text with newlines.
    assert_eq!(
        client.call(call(7, "echo", json!({"text": "a\nb\u{2028}"})))["result"]["structuredContent"]
            ["result"]["text"],
        "a\nb\u{2028}"
    );
    client.finish();
}

#[test]
fn large_lines() {
    let options = ServeOptions {
        max_line_bytes: 8 * 1024 * 1024,
        ..ServeOptions::default()
    };
    let client = Client::start_with(config(vec![echo()]), options);
    client.initialize("2025-11-25");
    let big = "x".repeat(4 * 1024 * 1024);
    let reply = client.call(call(1, "echo", json!({"text": big})));
    assert_eq!(
        reply["result"]["structuredContent"]["result"]["text"]
            .as_str()
            .unwrap()
            .len(),
        big.len()
    );
    let mut garbage = vec![b'#'; 1024 * 1024];
    garbage.push(b'\n');
    client.send_raw(&garbage);
    error(Value::Null, -32700)(&client.recv());
    // Over the cap: an error, then we resynchronise at the next newline.
    let mut huge = vec![b'{'; 9 * 1024 * 1024];
    huge.extend_from_slice(b"\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n");
    client.send_raw(&huge);
    let too_long = client.recv();
    error(Value::Null, -32600)(&too_long);
    assert!(
        too_long["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limit")
    );
    assert_eq!(
        client.recv(),
        json!({"jsonrpc": "2.0", "id": 2, "result": {}})
    );
    client.finish();
}

#[test]
fn tools_list_paging() {
    let names = ["t1", "t2", "t3", "t4", "t5"];
    let tools = names
        .iter()
        .map(|&name| {
            tool(name, Gate::Always, closed_object(json!({}), &[]), |_, _| {
                ToolResult::Value(json!({"text": ""}))
            })
        })
        .collect();
    let mut config = config(tools);
    config.page_size = 2;
    let client = Client::start(config);
    client.initialize("2025-11-25");
    let mut seen = Vec::new();
    let mut cursor: Option<Value> = None;
    for id in 1.. {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = client.call(request(id, "tools/list", params));
        let tools = page["result"]["tools"].as_array().unwrap();
        assert!(tools.len() <= 2);
        seen.extend(tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        cursor = page["result"].get("nextCursor").cloned();
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(seen, names);
    for (id, bad) in [
        (20, json!("nope")),
        (21, json!("5")),
        (22, json!("100")),
        (23, json!(2)),
        (24, json!("0")),
    ] {
        error(json!(id), -32602)(&client.call(request(id, "tools/list", json!({"cursor": bad}))));
    }
    client.assert_quiet(30);
    client.finish();
}

/// Every answer stays under 40 KB, and a `tools/list` page under its own budget (96 KiB, well
/// above the real catalog, so hosts that read one page see every tool) whatever the descriptions
/// weigh; no refusal grows with what the client sent.
#[test]
fn answers_stay_small_whatever_the_client_sends() {
    const LIMIT: usize = 40 * 1024;
    const CATALOG_LIMIT: usize = once_mcp::TOOLS_PAGE_BYTES + 4 * 1024;
    const NAMES: [&str; 10] = ["h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8", "h9"];
    let heavy: Vec<Tool> = (0..NAMES.len())
        .map(|i| {
            let mut t = tool(
                NAMES[i],
                Gate::Always,
                closed_object(json!({"text": {"type": "string"}}), &[]),
                |_, args| {
                    let text = args.get("text").and_then(Value::as_str).unwrap_or("");
                    ToolResult::Error(format!("cannot use {text}"))
                },
            );
            t.description = "d".repeat(10_000);
            t
        })
        .collect();
    let (input, rx) = mpsc::channel();
    let (tx, output) = mpsc::channel::<Vec<u8>>();
    let reader = ChannelReader {
        rx,
        buf: Vec::new(),
        pos: 0,
    };
    let server = std::thread::spawn(move || {
        serve_with(
            Arc::new(config(heavy)),
            reader,
            ChannelWriter(tx),
            ServeOptions::default(),
        )
    });
    let exchange = |message: Value| -> Value {
        let limit = if message["method"] == "tools/list" {
            CATALOG_LIMIT
        } else {
            LIMIT
        };
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        input.send(line).unwrap();
        let bytes = output.recv_timeout(PATIENCE).expect("a reply");
        assert!(bytes.len() < limit, "{} bytes", bytes.len());
        parse_line(&bytes)
    };
    exchange(request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "test", "version": "0"}}),
    ));
    let mut listed = Vec::new();
    let mut cursor = Value::Null;
    for id in 1.. {
        let params = if cursor.is_null() {
            json!({})
        } else {
            json!({"cursor": cursor})
        };
        let page = exchange(request(id, "tools/list", params));
        let tools = page["result"]["tools"].as_array().unwrap();
        listed.extend(tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        cursor = page["result"]["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(listed, NAMES);

    let huge = "x".repeat(100_000);
    let text = tool_error_text(&exchange(call(10, &huge, json!({}))));
    assert!(text.starts_with("Unknown tool \"xxx"), "{text}");
    let keys: serde_json::Map<String, Value> =
        (0..5_000).map(|i| (format!("k{i:04}"), json!(1))).collect();
    let text = tool_error_text(&exchange(call(11, "h0", Value::Object(keys))));
    assert!(text.contains("and 4995 more"), "{text}");
    // A tool's own message quoting a huge argument is cut, and says so.
    let text = tool_error_text(&exchange(call(12, "h0", json!({"text": huge}))));
    assert!(
        text.ends_with("more bytes cut)"),
        "{}",
        &text[text.len() - 60..]
    );
    error(json!(13), -32602)(&exchange(request(
        13,
        "tools/list",
        json!({"cursor": huge}),
    )));
    error(json!(14), -32601)(&exchange(request(14, &huge, json!({}))));
    drop(input);
    server.join().unwrap().unwrap();
}

#[test]
fn before_request_runs_before_each_request() {
    let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut config = config(vec![echo()]);
    let seen = Arc::clone(&count);
    config.before_request = Some(Arc::new(move || {
        seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }));
    let client = Client::start(config);
    client.initialize("2025-11-25");
    client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    client.call(request(1, "tools/list", json!({})));
    client.call(call(2, "echo", json!({"text": "x"})));
    client.assert_quiet(3);
    client.finish();
    // initialize, tools/list, tools/call; not the notification nor the ping.
    assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 3);
}

#[test]
fn shutdown_token_stops_the_loop() {
    let options = ServeOptions::default();
    let shutdown = options.shutdown.clone();
    let client = Client::start_with(config(vec![]), options);
    client.assert_quiet(1);
    shutdown.cancel();
    // The next line wakes the blocked read; the loop stops right after it
    // (the server may already have dropped its input, so nothing more is sent).
    client.send(request(2, "ping", json!({})));
    let rest = client.finish();
    assert!(rest.len() <= 1, "{rest:?}");
}

#[test]
fn an_invalid_catalog_is_refused_before_serving() {
    let mut bad = echo();
    bad.input_schema =
        json!({"type": "object", "properties": {"x": true}, "additionalProperties": false});
    let result = once_mcp::serve(Arc::new(config(vec![bad])), &b""[..], Vec::new());
    assert_eq!(result.unwrap_err().kind(), io::ErrorKind::InvalidInput);
    let mut open = echo();
    open.input_schema = json!({"type": "object"});
    assert!(once_mcp::serve(Arc::new(config(vec![open])), &b""[..], Vec::new()).is_err());
}

#[test]
fn in_memory_transcript() {
    // The plainest use: a byte slice in, a Vec out, via the public `serve`.
    let input = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05"}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "\n",
        "\n",
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
        "\n",
        "garbage\n",
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
    );
    let output = Arc::new(Mutex::new(Vec::new()));
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    once_mcp::serve(
        Arc::new(config(vec![])),
        input.as_bytes(),
        Shared(Arc::clone(&output)),
    )
    .unwrap();
    let text = String::from_utf8(output.lock().unwrap().clone()).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0]["result"]["protocolVersion"], "2024-11-05");
    assert_eq!(lines[1], json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
    error(Value::Null, -32700)(&lines[2]);
    assert_eq!(
        lines[3],
        json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": []}})
    );
}

#[test]
fn undeclared_arguments_are_refused_before_the_handler_runs() {
    let client = Client::start(config(basic_tools()));
    client.initialize("2025-11-25");
    let reply = client.call(call(1, "echo", json!({"text": "hi", "txet": "typo"})));
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let text = tool_error_text(&reply);
    assert!(text.contains("`txet`") && text.contains("`text`"), "{text}");
    // The same call without the stray argument reaches the handler.
    let reply = client.call(call(2, "echo", json!({"text": "hi"})));
    assert_eq!(
        reply["result"]["structuredContent"]["result"]["text"], "hi",
        "{reply}"
    );
    client.assert_quiet(3);
}

// ---------------------------------------------------------------- limits

#[test]
fn minus_zero_and_other_integral_numbers_are_valid_ids() {
    let client = Client::start(config(vec![]));
    // `-0` and `1.0` are JSON numbers whose value is an integer: valid ids, echoed as integers.
    for (raw, id) in [
        (r#"{"jsonrpc":"2.0","id":-0,"method":"ping"}"#, json!(0)),
        (r#"{"jsonrpc":"2.0","id":-0.0,"method":"ping"}"#, json!(0)),
        (r#"{"jsonrpc":"2.0","id":7.0,"method":"ping"}"#, json!(7)),
        (r#"{"jsonrpc":"2.0","id":-3e0,"method":"ping"}"#, json!(-3)),
    ] {
        client.send_raw(format!("{raw}\n").as_bytes());
        assert_eq!(
            client.recv(),
            json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            "{raw}"
        );
    }
    // A fraction stays refused, as before.
    client.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":0.5,\"method\":\"ping\"}\n");
    error(Value::Null, -32600)(&client.recv());
    client.finish();
}

#[test]
fn requests_before_initialize_are_refused_except_ping() {
    let client = Client::start(config(basic_tools()));
    client.assert_quiet(1);
    for (id, method, params) in [
        (2, "tools/list", json!({})),
        (
            3,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}}),
        ),
        (4, "logging/setLevel", json!({"level": "debug"})),
        (5, "resources/list", json!({})),
        (6, "prompts/list", json!({})),
    ] {
        let reply = client.call(request(id, method, params));
        // Not -32002, which the 2026-07-28 revision forbids: the request lacks the `_meta` that
        // would make it valid without `initialize`.
        error(json!(id), -32602)(&reply);
        let message = reply["error"]["message"].as_str().unwrap();
        assert!(message.contains("initialize"), "{message}");
    }
    // An unknown method is still -32601, so a client probing for a newer method falls back at once.
    error(json!(7), -32601)(&client.call(request(7, "server/other", json!({}))));
    client.initialize("2025-11-25");
    let listed = client.call(request(8, "tools/list", json!({})));
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    client.finish();
}

/// A tool whose schema uses every keyword the server enforces; it counts the calls that reach it.
fn bounded_tool(reached: Arc<std::sync::atomic::AtomicUsize>) -> Tool {
    tool(
        "bounded",
        Gate::Always,
        closed_object(
            json!({
                "wait_seconds": {"type": "integer", "minimum": 0, "maximum": 3600},
                "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
                "name": {"type": "string", "minLength": 1, "maxLength": 8},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}, "maxItems": 2, "minItems": 1},
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "flag": {"type": "boolean"},
                "params": {"type": "object", "properties": {"depth": {"type": "integer", "maximum": 3}},
                           "additionalProperties": false},
                "either": {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 2}]},
            }),
            &[],
        ),
        move |_, _| {
            reached.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            ToolResult::Value(json!({"text": "ok"}))
        },
    )
}

#[test]
fn arguments_are_checked_against_every_bound_of_the_input_schema() {
    let reached = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let client = Client::start(config(vec![bounded_tool(Arc::clone(&reached))]));
    client.initialize("2025-11-25");
    let long = "x".repeat(100_000);
    let cases = [
        (
            json!({"wait_seconds": 1_000_000_000_000u64}),
            vec!["`wait_seconds`", "maximum 3600"],
        ),
        (
            json!({"wait_seconds": -1}),
            vec!["`wait_seconds`", "minimum 0"],
        ),
        (
            json!({"wait_seconds": 1.5}),
            vec!["`wait_seconds`", "an integer"],
        ),
        (
            json!({"wait_seconds": "10"}),
            vec!["`wait_seconds`", "an integer", "a string"],
        ),
        (json!({"ratio": 0}), vec!["`ratio`", "above 0"]),
        (json!({"ratio": 1}), vec!["`ratio`", "below 1"]),
        (json!({"name": ""}), vec!["`name`", "at least 1 character"]),
        (
            json!({"name": "ééééééééé"}),
            vec!["`name`", "at most 8 characters"],
        ),
        (
            json!({"name": long}),
            vec!["`name`", "at most 8 characters"],
        ),
        (
            json!({"tags": ["a", "b", "c"]}),
            vec!["`tags`", "at most 2 items"],
        ),
        (json!({"tags": []}), vec!["`tags`", "at least 1 item"]),
        (
            json!({"tags": ["abcde"]}),
            vec!["`tags[0]`", "at most 4 characters"],
        ),
        (
            json!({"mode": "medium"}),
            vec!["`mode`", "\"fast\", \"slow\""],
        ),
        (json!({"flag": "yes"}), vec!["`flag`", "a boolean"]),
        (
            json!({"params": {"depth": 4}}),
            vec!["`params.depth`", "maximum 3"],
        ),
        (json!({"params": {"width": 1}}), vec!["`params`", "`width`"]),
        (json!({"either": "abc"}), vec!["`either`"]),
        (json!({"either": true}), vec!["`either`"]),
    ];
    for (id, (arguments, needles)) in (1..).zip(cases) {
        let text = tool_error_text(&client.call(call(id, "bounded", arguments.clone())));
        for needle in needles {
            assert!(text.contains(needle), "{arguments}: {needle} not in {text}");
        }
        assert!(
            text.len() < 400,
            "the message echoes too much: {} bytes",
            text.len()
        );
    }
    assert_eq!(
        reached.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "a bad call reached the handler"
    );
    // Values inside every bound reach the handler; `null` still counts as absent.
    let good = json!({"wait_seconds": 3600, "ratio": 0.5, "name": "ééééééé", "tags": ["a", "bcde"],
                      "mode": "slow", "flag": false, "params": {"depth": 3}, "either": "ab"});
    let reply = client.call(call(100, "bounded", good));
    assert_eq!(
        reply["result"]["structuredContent"]["result"]["text"], "ok",
        "{reply}"
    );
    let reply = client.call(call(
        101,
        "bounded",
        json!({"wait_seconds": 0, "either": 5, "name": null}),
    ));
    assert_eq!(
        reply["result"]["structuredContent"]["result"]["text"], "ok",
        "{reply}"
    );
    assert_eq!(reached.load(std::sync::atomic::Ordering::SeqCst), 2);
    client.finish();
}

#[test]
fn values_echoed_in_errors_are_cut_short() {
    let client = Client::start(config(basic_tools()));
    client.initialize("2025-11-25");
    let huge = "q".repeat(5 * 1024 * 1024);
    let short = |reply: &Value, text: &str| {
        assert!(text.len() < 400, "{} bytes echoed", text.len());
        assert!(
            text.contains(&format!("{}…", "q".repeat(64))),
            "{reply:.200}"
        );
    };
    let reply = client.call(call(1, &huge, json!({})));
    short(&reply, &tool_error_text(&reply));
    let reply = client.call(request(2, &huge, json!({})));
    error(json!(2), -32601)(&reply);
    short(&reply, reply["error"]["message"].as_str().unwrap());
    let mut arguments = serde_json::Map::new();
    arguments.insert(huge.clone(), json!(1));
    let reply = client.call(call(3, "echo", Value::Object(arguments)));
    short(&reply, &tool_error_text(&reply));
    let reply = client.call(request(4, "tools/list", json!({"cursor": huge})));
    error(json!(4), -32602)(&reply);
    short(&reply, reply["error"]["message"].as_str().unwrap());
    client.finish();
}

/// An endless supply of `tools/list` requests that counts how many lines were taken from it.
struct Flood {
    sent: Arc<std::sync::atomic::AtomicUsize>,
    limit: usize,
    line: Vec<u8>,
    pos: usize,
}

impl Read for Flood {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Flood {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos == self.line.len() {
            let n = self.sent.load(std::sync::atomic::Ordering::SeqCst);
            if n == self.limit {
                return Ok(&[]);
            }
            self.line = if n == 0 {
                br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#.to_vec()
            } else {
                format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/list"}}"#).into_bytes()
            };
            self.line.push(b'\n');
            self.pos = 0;
            self.sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        Ok(&self.line[self.pos..])
    }

    fn consume(&mut self, amount: usize) {
        self.pos += amount;
    }
}

/// A writer that blocks every write until the test opens it, like a client that does not read.
struct Stuck {
    open: Arc<(Mutex<bool>, std::sync::Condvar)>,
    lines: Sender<Vec<u8>>,
}

impl Write for Stuck {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let (open, opened) = &*self.open;
        let mut guard = open.lock().unwrap();
        while !*guard {
            guard = opened.wait(guard).unwrap();
        }
        let _ = self.lines.send(bytes.to_vec());
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Polls `count` until it has not moved for a while (bounded), and returns it.
fn settled(count: &std::sync::atomic::AtomicUsize) -> usize {
    let deadline = std::time::Instant::now() + PATIENCE;
    let mut last = count.load(std::sync::atomic::Ordering::SeqCst);
    let mut still = 0;
    while still < 50 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        let now = count.load(std::sync::atomic::Ordering::SeqCst);
        still = if now == last { still + 1 } else { 0 };
        last = now;
    }
    last
}

#[test]
fn a_client_that_does_not_read_stops_the_server_reading() {
    const REQUESTS: usize = 20_000;
    let sent = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let open = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
    let (lines, output) = mpsc::channel();
    let flood = Flood {
        sent: Arc::clone(&sent),
        limit: REQUESTS,
        line: Vec::new(),
        pos: 0,
    };
    let writer = Stuck {
        open: Arc::clone(&open),
        lines,
    };
    let options = ServeOptions {
        outbox_bytes: 16 * 1024,
        ..ServeOptions::default()
    };
    let server = std::thread::spawn(move || {
        serve_with(Arc::new(config(basic_tools())), flood, writer, options)
    });
    // A tools/list reply here is about a kilobyte: a 16 KiB outbox holds a few dozen, and then
    // the loop must stop taking requests until the client reads.
    let taken = settled(&sent);
    assert!(
        taken < 200,
        "the server took {taken} requests from a client that reads nothing"
    );
    // Once the client reads, every request is answered, in order, and serve ends cleanly.
    *open.0.lock().unwrap() = true;
    open.1.notify_all();
    for id in 0..REQUESTS {
        let reply = parse_line(&output.recv_timeout(PATIENCE).expect("every reply comes"));
        assert_eq!(reply["id"], json!(id), "{reply:.200}");
    }
    server.join().unwrap().expect("serve ends cleanly");
}

#[test]
fn progress_never_blocks_a_tool_when_the_client_does_not_read() {
    let (finished_tx, finished) = mpsc::channel();
    let finished_tx = Mutex::new(finished_tx);
    let chatty = tool(
        "chatty",
        Gate::Always,
        closed_object(json!({}), &[]),
        move |ctx, _| {
            for step in 1..=10_000 {
                ctx.progress(
                    f64::from(step),
                    Some(10_000.0),
                    Some("a step of a long job"),
                );
            }
            let _ = finished_tx.lock().unwrap().send(());
            ToolResult::Value(json!({"text": "done"}))
        },
    );
    let open = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
    let (lines, output) = mpsc::channel();
    let (input, rx) = mpsc::channel();
    let reader = ChannelReader {
        rx,
        buf: Vec::new(),
        pos: 0,
    };
    let writer = Stuck {
        open: Arc::clone(&open),
        lines,
    };
    let options = ServeOptions {
        outbox_bytes: 16 * 1024,
        ..ServeOptions::default()
    };
    let server = std::thread::spawn(move || {
        serve_with(Arc::new(config(vec![chatty])), reader, writer, options)
    });
    let line = |value: Value| {
        let mut bytes = serde_json::to_vec(&value).unwrap();
        bytes.push(b'\n');
        bytes
    };
    input
        .send(line(request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-11-25"}),
        )))
        .unwrap();
    input
        .send(line(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": "chatty", "arguments": {}, "_meta": {"progressToken": "p"}}})))
        .unwrap();
    // The tool gets through all its progress while nothing is written: the overflow is dropped.
    finished
        .recv_timeout(PATIENCE)
        .expect("the tool finishes while the client reads nothing");
    *open.0.lock().unwrap() = true;
    open.1.notify_all();
    let mut progress = 0;
    loop {
        let reply = parse_line(&output.recv_timeout(PATIENCE).expect("the reply comes"));
        if reply["method"] == "notifications/progress" {
            progress += 1;
        } else if reply["id"] == 1 {
            assert_eq!(
                reply["result"]["structuredContent"]["result"]["text"],
                "done"
            );
            break;
        }
    }
    assert!(progress < 10_000, "every progress notification was queued");
    drop(input);
    server.join().unwrap().expect("serve ends cleanly");
}

// ---------------------------------------------------------------- a real run

/// A workspace in a temporary folder, removed on drop.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let path = std::env::temp_dir().join(format!("once-mcp-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Scratch(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Stops every process of a registry when the test ends, however it ends.
struct StopAll(once_exec::Registry);

impl Drop for StopAll {
    fn drop(&mut self) {
        self.0.stop_all(Duration::from_secs(1));
    }
}

/// The next progress notification whose message contains `text`, failing after [`PATIENCE`].
fn progress_saying(client: &Client, text: &str) -> Value {
    let end = std::time::Instant::now() + PATIENCE;
    loop {
        assert!(std::time::Instant::now() < end, "no progress says {text:?}");
        let message = client.recv();
        assert!(message.get("id").is_none(), "answered first: {message}");
        if message["params"]["message"]
            .as_str()
            .is_some_and(|m| m.contains(text))
        {
            return message;
        }
    }
}

#[test]
fn progress_of_a_run_carries_the_output_so_far() {
    let dir = Scratch::new("run-progress");
    // The command prints a line, then waits until the test has seen it in a progress message.
    std::fs::write(
        dir.0.join("once.toml"),
        "[targets.talk]\nkind = \"command\"\n[targets.talk.capabilities.build]\ncache = false\n\
         command = \"echo first line; while [ ! -e go ]; do sleep 0.02; done; echo second line; \
         while [ ! -e end ]; do sleep 0.02; done\"\n",
    )
    .unwrap();
    let workspace = once_graph::Workspace::load(&dir.0).unwrap();
    let live = Arc::new(once_mcp::LiveWorkspace::new(workspace));
    let registry = StopAll(once_exec::Registry::new());
    let mut config = config(once_mcp::run_tools(&live, &registry.0));
    config.gates = Gates {
        allow_edit: false,
        allow_run: true,
    };
    let client = Client::start(config);
    client.initialize("2025-11-25");
    client.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "once_run", "arguments": {"target": "talk:build"},
            "_meta": {"progressToken": "p"},
        }}),
    );
    let first = progress_saying(&client, "first line");
    let message = first["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("output so far of `talk:build`"),
        "{message}"
    );
    std::fs::write(dir.0.join("go"), "").unwrap();
    let second = progress_saying(&client, "second line");
    assert!(
        second["params"]["progress"].as_f64() > first["params"]["progress"].as_f64(),
        "progress grows: {first} then {second}"
    );
    assert_eq!(second["params"]["total"].as_f64(), Some(1.0));
    std::fs::write(dir.0.join("end"), "").unwrap();
    let reply = loop {
        let message = client.recv();
        if message["id"] == 1 {
            break message;
        }
    };
    assert_eq!(
        reply["result"]["structuredContent"]["outcome"], "done",
        "{reply}"
    );
    client.finish();
}
