//! The `mcp` target: arbitrary bytes as the input lines of one `once_mcp::serve_with`
//! connection, followed by a `ping`.
//!
//! Properties: the loop never panics and ends at end of input; every line it writes is one JSON-RPC
//! 2.0 message (or, for a batch, an array of them); and whatever came before, the final `ping` is
//! answered exactly once, so a bad line never ends or wedges the loop. The server has the test
//! tools of `crates/once-mcp/tests` (one of them panics on purpose) and the real catalog
//! (`once_mcp::catalog`) of a small scratch workspace; the gates stay closed, so no action or
//! evaluator runs (only `once_query_affected` may ask git what changed) and only change sets are
//! ever written (they are removed after each input). Must never open a gate.

use std::cell::RefCell;
use std::io::{self, Cursor, Write};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use once_graph::Workspace;
use once_mcp::{
    Annotations, Gate, LiveWorkspace, LogLevel, ServeOptions, ServerConfig, Tool, ToolResult,
};
use serde_json::{Map, Value, json};

use crate::scratch::Scratch;

/// How long one input may keep the loop alive; far above what any input takes.
const PATIENCE: Duration = Duration::from_secs(20);

/// The id of the closing `ping`; no seed and no token holds it, so no fuzzed line claims it.
const PING_ID: &str = "once-fuzz-closing-ping";

/// Longest line the server accepts here: small, so that inputs reach the oversized-line path.
const MAX_LINE_BYTES: usize = 4096;

/// What the tool that panics on purpose says, so that a harness whose panic hook aborts (as
/// libFuzzer's does) can let this one panic through to the server's guard.
pub const ON_PURPOSE: &str = "this tool panics on purpose";

/// JSON-RPC and MCP keys, methods, versions and tool names.
pub const DICTIONARY: &[&str] = &[
    r#""jsonrpc""#,
    r#""2.0""#,
    r#""1.0""#,
    r#""id""#,
    r#""method""#,
    r#""params""#,
    r#""result""#,
    r#""error""#,
    r#""initialize""#,
    r#""notifications/initialized""#,
    r#""notifications/cancelled""#,
    r#""requestId""#,
    r#""ping""#,
    r#""tools/list""#,
    r#""tools/call""#,
    r#""logging/setLevel""#,
    r#""level""#,
    r#""debug""#,
    r#""cursor""#,
    r#""name""#,
    r#""arguments""#,
    r#""_meta""#,
    r#""progressToken""#,
    r#""protocolVersion""#,
    r#""2025-11-25""#,
    r#""2025-06-18""#,
    r#""2025-03-26""#,
    r#""2024-11-05""#,
    r#""capabilities""#,
    r#""clientInfo""#,
    r#""echo""#,
    r#""text""#,
    r#""panics""#,
    r#""log""#,
    r#""progress""#,
    r#""once_query_workspace""#,
    r#""once_query_targets""#,
    r#""once_query_target""#,
    r#""once_query_memory""#,
    r#""once_change_set_propose""#,
    r#""once_query_hashes""#,
    r#""paths""#,
    r#""base""#,
    r#""sha256:""#,
    r#""changes""#,
    r#""path""#,
    r#""content""#,
    r#""action""#,
    r#""create""#,
    ",",
    ":",
    "[",
    "]",
    "{",
    "}",
    "\\u0000",
    "\\ud800",
    "1.5",
    "-0",
];

/// Serves `data` (plus a newline if it lacks one, then the `ping`) and checks every output line.
pub fn mcp(data: &[u8]) {
    let mut input = data.to_vec();
    if !input.is_empty() && input.last() != Some(&b'\n') {
        input.push(b'\n');
    }
    input.extend_from_slice(
        format!(r#"{{"jsonrpc":"2.0","id":"{PING_ID}","method":"ping"}}"#).as_bytes(),
    );
    input.push(b'\n');

    let (config, root) = SERVER.with(|server| {
        let mut server = server.borrow_mut();
        let server = server.get_or_insert_with(Server::new);
        (
            Arc::clone(&server.config),
            server.scratch.path().to_path_buf(),
        )
    });
    let output = Output::default();
    let writer = output.clone();
    let (done_tx, done_rx) = mpsc::channel();
    let options = ServeOptions {
        max_line_bytes: MAX_LINE_BYTES,
        max_in_flight: 4,
        shutdown_grace: Duration::from_millis(200),
        ..ServeOptions::default()
    };
    let serving = std::thread::spawn(move || {
        let result = once_mcp::serve_with(config, Cursor::new(input), writer, options);
        let _ = done_tx.send(());
        result
    });
    // A panic drops the sender, which ends the wait too; only a loop that never returns times out.
    assert!(
        done_rx.recv_timeout(PATIENCE).is_ok() || serving.is_finished(),
        "serve did not end within {PATIENCE:?} of reaching end of input"
    );
    match serving.join() {
        Ok(result) => assert!(result.is_ok(), "serve failed: {result:?}"),
        Err(panic) => std::panic::resume_unwind(panic),
    }
    // Change sets that a fuzzed call proposed: every input starts from the same workspace.
    let _ = std::fs::remove_dir_all(root.join(".once"));

    let bytes = output.take();
    assert!(
        bytes.is_empty() || bytes.ends_with(b"\n"),
        "the output does not end with a newline"
    );
    let mut pongs = 0;
    for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let value: Value = serde_json::from_slice(line).unwrap_or_else(|e| {
            panic!(
                "an output line is not JSON ({e}): {}",
                String::from_utf8_lossy(line)
            )
        });
        match &value {
            Value::Object(message) => {
                check_message(message);
                if message.get("id") == Some(&json!(PING_ID)) {
                    assert_eq!(message.get("result"), Some(&json!({})), "{value}");
                    pongs += 1;
                }
            }
            Value::Array(batch) => {
                assert!(!batch.is_empty(), "an empty batch reply was written");
                for item in batch {
                    let Value::Object(message) = item else {
                        panic!("a batch reply holds a non-object: {value}");
                    };
                    check_message(message);
                }
            }
            _ => panic!("an output line is neither an object nor a batch: {value}"),
        }
    }
    assert_eq!(pongs, 1, "the closing ping was answered {pongs} times");
}

/// One JSON-RPC 2.0 message as a server may write it: a response with an id and exactly one of
/// `result` and `error`, or a notification.
fn check_message(message: &Map<String, Value>) {
    let shown = Value::Object(message.clone());
    assert_eq!(message.get("jsonrpc"), Some(&json!("2.0")), "{shown}");
    if let Some(method) = message.get("method") {
        assert!(method.is_string(), "a method that is not a string: {shown}");
        assert!(
            message.get("result").is_none() && message.get("error").is_none(),
            "a notification with a result or error: {shown}"
        );
        return;
    }
    let id = message
        .get("id")
        .unwrap_or_else(|| panic!("a response without an id: {shown}"));
    assert!(
        id.is_string() || id.is_i64() || id.is_u64() || id.is_null(),
        "a response with an id of the wrong type: {shown}"
    );
    match (message.get("result"), message.get("error")) {
        (Some(result), None) => assert!(result.is_object(), "a non-object result: {shown}"),
        (None, Some(error)) => {
            assert!(error["code"].is_i64(), "an error without a code: {shown}");
            assert!(
                error["message"].is_string(),
                "an error without a message: {shown}"
            );
        }
        _ => panic!("a response needs exactly one of result and error: {shown}"),
    }
    assert!(
        message
            .keys()
            .all(|k| ["jsonrpc", "id", "result", "error"].contains(&k.as_str())),
        "a response with unexpected members: {shown}"
    );
}

/// The writer: collects everything the server writes.
#[derive(Clone, Default)]
struct Output(Arc<Mutex<Vec<u8>>>);

impl Output {
    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Write for Output {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

thread_local! {
    static SERVER: RefCell<Option<Server>> = const { RefCell::new(None) };
}

/// The server config of one thread, with the scratch workspace its tools read.
struct Server {
    config: Arc<ServerConfig>,
    scratch: Scratch,
}

impl Server {
    fn new() -> Server {
        let scratch = Scratch::new("mcp");
        let root = scratch.path();
        std::fs::create_dir_all(root.join("app")).expect("scratch workspace");
        std::fs::write(
            root.join("once.toml"),
            "[workspace]\nname = \"fuzz\"\n\n[targets.app]\npath = \"app\"\n\n\
             [targets.app.capabilities.build]\ncommand = \"true\"\n\n\
             [targets.lib]\n\n[targets.lib.capabilities.test]\ncommand = \"true\"\n\
             deps = [\"app:build\"]\n",
        )
        .expect("scratch manifest");
        let workspace = Workspace::load(root).expect("the scratch workspace should load");
        let live = Arc::new(LiveWorkspace::new(workspace));
        let mut config = ServerConfig::new("0.0.0-fuzz");
        config.instructions = "Fuzzing.".into();
        config.workspace_root = Some(root.display().to_string());
        config.tools = test_tools();
        // The catalog `once mcp` serves, not a copy of it: with the gates closed only the
        // read-only tools and the change-set proposals are listed or callable.
        let runtime = once_exec::Registry::new();
        let evaluators =
            Arc::new(once_eval::Evaluators::new(&runtime).expect("the evaluator launcher"));
        config.tools.extend(once_mcp::catalog(
            &live,
            Arc::new(once_graph::query::workspace),
            &runtime,
            &evaluators,
            once_mcp::EvalPolicy {
                reset_allowed: false,
            },
        ));
        let refresh = Arc::clone(&live);
        config.before_request = Some(Arc::new(move || refresh.refresh()));
        config.page_size = 3;
        Server {
            config: Arc::new(config),
            scratch,
        }
    }
}

/// The tools of `crates/once-mcp/tests/transcript.rs` that do not block.
fn test_tools() -> Vec<Tool> {
    vec![
        tool(
            "echo",
            json!({"text": {"type": "string"}}),
            &["text"],
            |_, args| match args.get("text").and_then(Value::as_str) {
                Some(text) => ToolResult::Value(json!({"text": text})),
                None => ToolResult::Error("missing argument `text`".into()),
            },
        ),
        tool("panics", json!({}), &[], |_, _| {
            std::panic::panic_any(ON_PURPOSE)
        }),
        tool("log", json!({}), &[], |ctx, _| {
            ctx.log(LogLevel::Debug, "a debug line");
            ctx.log(LogLevel::Error, "an error line");
            ToolResult::Value(json!({"text": "logged"}))
        }),
        tool("progress", json!({}), &[], |ctx, _| {
            ctx.progress(1.0, Some(2.0), Some("one"));
            ctx.progress(2.0, Some(2.0), None);
            ToolResult::Value(json!({"text": "done"}))
        }),
    ]
}

fn tool(
    name: &'static str,
    properties: Value,
    required: &[&str],
    handler: impl Fn(&once_mcp::CallContext, Map<String, Value>) -> ToolResult + Send + Sync + 'static,
) -> Tool {
    Tool {
        name,
        title: "A fuzzing tool",
        description: format!("The {name} fuzzing tool."),
        input_schema: json!({"type": "object", "properties": properties, "required": required,
                             "additionalProperties": false}),
        output_schema: json!({"type": "object", "properties": {"text": {"type": "string"}},
                              "required": ["text"], "additionalProperties": false}),
        annotations: Annotations::READ_ONLY,
        gate: Gate::Always,
        handler: once_mcp::Handler::query(handler),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn the_seed_corpus_keeps_every_property() {
        crate::replay_corpus("mcp");
    }

    #[test]
    #[should_panic(expected = "exactly one of result and error")]
    fn a_response_with_both_result_and_error_fails_the_check() {
        let bad = json!({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1}});
        super::check_message(bad.as_object().expect("an object"));
    }
}
