//! The tasks extension (`io.modelcontextprotocol/tasks`) of the 2026-07-28 revision, spoken to
//! `serve` line by line: a call that outlasts the store's `promote_after` is answered with a
//! task; polling shows its progress; cancel stops it; a task outlives the connection that made
//! it; tasks expire after their time to live; the store is bounded; without the extension
//! nothing changes.
//!
//! The tool here waits on a gate the test opens, or on its cancellation, so every test decides
//! when a call ends; every read has a deadline.

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use once_mcp::{
    Annotations, CancelToken, Gate, Handler, ServerConfig, TaskPolicy, Tasks, Tool, ToolResult,
};
use serde_json::{Value, json};

const MODERN: &str = "2026-07-28";
const PATIENCE: Duration = Duration::from_secs(30);
const TASKS: &str = "io.modelcontextprotocol/tasks";

// ---------------------------------------------------------------- harness

/// What the `slow` tool was told and saw.
#[derive(Clone, Default)]
struct Slow {
    /// Opened by the test: the call then answers.
    gate: CancelToken,
    /// Fired by the tool when it saw its call cancelled.
    saw_cancel: CancelToken,
    /// How many calls have started.
    started: Arc<AtomicUsize>,
}

/// `slow` reports `line 1` as progress, then answers `released` once the gate opens, or
/// `stopped` once cancelled (bounded: it gives up after [`PATIENCE`]).
fn slow_tool(slow: &Slow) -> Tool {
    let slow = slow.clone();
    Tool {
        name: "slow",
        title: "Slow",
        description: "Waits for its gate.".into(),
        input_schema: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        output_schema: json!({"type": "string"}),
        annotations: Annotations::READ_ONLY,
        gate: Gate::Always,
        handler: Handler::query(move |ctx, _| {
            slow.started.fetch_add(1, Ordering::SeqCst);
            ctx.progress(1.0, Some(2.0), Some("line 1"));
            let deadline = Instant::now() + PATIENCE;
            while Instant::now() < deadline {
                if slow.gate.wait_timeout(Duration::from_millis(10)) {
                    return ToolResult::Value(json!("released"));
                }
                if ctx.is_cancelled() {
                    slow.saw_cancel.cancel();
                    return ToolResult::Value(json!("stopped"));
                }
            }
            ToolResult::Value(json!("gave up"))
        }),
    }
}

fn config(slow: &Slow, policy: TaskPolicy) -> Arc<ServerConfig> {
    let mut config = ServerConfig::new("0.0.0-test");
    config.tools = vec![slow_tool(slow)];
    config.tasks = Arc::new(Tasks::new(policy));
    Arc::new(config)
}

fn policy() -> TaskPolicy {
    TaskPolicy {
        tools: vec!["slow"],
        promote_after: Duration::from_millis(50),
        ttl: Duration::from_secs(60),
        max_tasks: 8,
        poll_interval: Duration::from_millis(100),
    }
}

/// Lines from the test to the loop; end of input when the sender is dropped.
struct Lines {
    lines: Receiver<Vec<u8>>,
    pending: io::Cursor<Vec<u8>>,
}

impl Read for Lines {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            let n = self.pending.read(out)?;
            if n > 0 {
                return Ok(n);
            }
            match self.lines.recv() {
                Ok(line) => self.pending = io::Cursor::new(line),
                Err(_) => return Ok(0),
            }
        }
    }
}

/// Every line the loop writes, sent to the test.
struct Out(Sender<Value>, Vec<u8>);

impl Write for Out {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.1.extend_from_slice(bytes);
        while let Some(end) = self.1.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.1.drain(..=end).collect();
            let _ = self
                .0
                .send(serde_json::from_slice(&line).expect("a JSON line"));
        }
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One connection to `config`.
struct Connection {
    input: Option<Sender<Vec<u8>>>,
    output: Receiver<Value>,
    serving: Option<JoinHandle<()>>,
    /// Notifications seen while waiting for a response.
    notifications: Mutex<Vec<Value>>,
}

impl Connection {
    fn open(config: &Arc<ServerConfig>) -> Connection {
        let (input, lines) = mpsc::channel();
        let (sender, output) = mpsc::channel();
        let config = Arc::clone(config);
        let serving = std::thread::spawn(move || {
            let reader = io::BufReader::new(Lines {
                lines,
                pending: io::Cursor::new(Vec::new()),
            });
            once_mcp::serve(config, reader, Out(sender, Vec::new())).expect("serves");
        });
        Connection {
            input: Some(input),
            output,
            serving: Some(serving),
            notifications: Mutex::new(Vec::new()),
        }
    }

    /// Sends `message` and returns the response with its id.
    fn ask(&self, message: Value) -> Value {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        self.input.as_ref().unwrap().send(line).unwrap();
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let reply = self.output.recv_timeout(left).expect("an answer in time");
            if reply.get("id") == message.get("id") {
                return reply;
            }
            self.notifications.lock().unwrap().push(reply);
        }
    }

    /// Ends the input and waits for the loop to return.
    fn close(mut self) {
        self.input = None;
        self.serving.take().unwrap().join().unwrap();
    }
}

fn envelope(tasks: bool) -> Value {
    let extensions = if tasks {
        json!({ TASKS: {} })
    } else {
        json!({})
    };
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": extensions},
    })
}

fn request(id: i64, method: &str, mut params: Value, tasks: bool) -> Value {
    params["_meta"] = envelope(tasks);
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn call_slow(id: i64, tasks: bool) -> Value {
    request(
        id,
        "tools/call",
        json!({"name": "slow", "arguments": {}}),
        tasks,
    )
}

fn get(id: i64, task_id: &str) -> Value {
    request(id, "tasks/get", json!({"taskId": task_id}), true)
}

/// Polls `tasks/get` on `connection` until `done` holds for its answer.
fn poll(
    connection: &Connection,
    task_id: &str,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + PATIENCE;
    for id in 1000.. {
        let reply = connection.ask(get(id, task_id));
        if done(&reply) {
            return reply;
        }
        assert!(Instant::now() < deadline, "{what}: last {reply}");
        std::thread::sleep(Duration::from_millis(10));
    }
    unreachable!()
}

fn task_id(created: &Value) -> String {
    created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_owned()
}

// ---------------------------------------------------------------- tests

#[test]
fn a_long_call_becomes_a_task_whose_polls_show_progress_then_its_result() {
    let slow = Slow::default();
    let config = config(&slow, policy());
    let connection = Connection::open(&config);
    let created = connection.ask(call_slow(1, true));
    let result = &created["result"];
    assert_eq!(result["resultType"], "task", "{created}");
    assert_eq!(result["status"], "working", "{created}");
    assert_eq!(result["ttlMs"], 60_000, "{created}");
    assert_eq!(result["pollIntervalMs"], 100, "{created}");
    assert!(
        result["createdAt"]
            .as_str()
            .is_some_and(|at| at.ends_with('Z')),
        "{created}"
    );
    assert!(result.get("result").is_none(), "{created}");
    let id = task_id(&created);

    let working = connection.ask(get(2, &id));
    assert_eq!(
        working["result"],
        json!({
            "resultType": "complete",
            "taskId": id,
            "status": "working",
            "statusMessage": "line 1",
            "createdAt": result["createdAt"],
            "lastUpdatedAt": working["result"]["lastUpdatedAt"],
            "ttlMs": 60_000,
            "pollIntervalMs": 100,
            "_meta": {
                "io.modelcontextprotocol/serverInfo": {"name": "once-mcp", "version": "0.0.0-test"},
                "dev.once/progress": {"progress": 1.0, "total": 2.0},
            },
        })
    );
    slow.gate.cancel();
    let done = poll(&connection, &id, "the task to complete", |reply| {
        reply["result"]["status"] != "working"
    });
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["result"]["structuredContent"],
        json!({"result": "released"}),
        "{done}"
    );
    // `tasks/update` is acknowledged (no task of ours asks for input).
    let updated = connection.ask(request(
        9,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {}}),
        true,
    ));
    assert_eq!(updated["result"]["resultType"], "complete", "{updated}");
    connection.close();
}

#[test]
fn a_task_outlives_its_connection_and_is_cancelled_from_another() {
    let slow = Slow::default();
    let config = config(&slow, policy());
    let first = Connection::open(&config);
    let id = task_id(&first.ask(call_slow(1, true)));
    // The end of the input stops a connection's calls; a task is no longer one of them.
    first.close();
    assert!(
        !slow.saw_cancel.is_cancelled(),
        "closing the connection stopped the task"
    );

    let second = Connection::open(&config);
    let cancelled = second.ask(request(2, "tasks/cancel", json!({"taskId": id}), true));
    assert_eq!(cancelled["result"]["resultType"], "complete", "{cancelled}");
    let ended = poll(&second, &id, "the cancelled state", |reply| {
        reply["result"]["status"] != "working"
    });
    assert_eq!(ended["result"]["status"], "cancelled", "{ended}");
    assert!(ended["result"].get("result").is_none(), "{ended}");
    assert!(slow.saw_cancel.is_cancelled(), "the call was not stopped");
    second.close();
}

#[test]
fn a_quick_call_or_a_call_without_the_extension_is_answered_as_before() {
    let slow = Slow::default();
    slow.gate.cancel();
    let config = config(
        &slow,
        TaskPolicy {
            promote_after: Duration::from_secs(20),
            ..policy()
        },
    );
    let connection = Connection::open(&config);
    let quick = connection.ask(call_slow(1, true));
    assert_eq!(quick["result"]["resultType"], "complete", "{quick}");
    assert_eq!(
        quick["result"]["structuredContent"],
        json!({"result": "released"})
    );
    connection.close();

    let slow = Slow::default();
    let config = config_with_gate_opened_on_progress(&slow);
    let connection = Connection::open(&config);
    let mut call = call_slow(2, false);
    call["params"]["_meta"]["progressToken"] = json!("p");
    let plain = connection.ask(call);
    assert_eq!(plain["result"]["resultType"], "complete", "{plain}");
    assert!(plain["result"].get("taskId").is_none(), "{plain}");
    let heard = connection.notifications.lock().unwrap().clone();
    assert_eq!(heard[0]["params"]["message"], "line 1", "{heard:?}");
    connection.close();
}

/// A config whose tool opens its own gate once it has reported progress, so a call without the
/// extension answers after its progress, as a long call does.
fn config_with_gate_opened_on_progress(slow: &Slow) -> Arc<ServerConfig> {
    let opener = slow.clone();
    let inner = slow_tool(slow);
    let Handler::Query(handler) = inner.handler.clone() else {
        unreachable!()
    };
    let tool = Tool {
        handler: Handler::query(move |ctx, args| {
            opener.gate.cancel();
            handler(ctx, args)
        }),
        ..inner
    };
    let mut config = ServerConfig::new("0.0.0-test");
    config.tools = vec![tool];
    config.tasks = Arc::new(Tasks::new(TaskPolicy {
        promote_after: Duration::ZERO,
        ..policy()
    }));
    Arc::new(config)
}

#[test]
fn tasks_methods_need_the_extension_and_a_known_id() {
    let slow = Slow::default();
    let config = config(&slow, policy());
    let connection = Connection::open(&config);
    for (id, method) in [(1, "tasks/get"), (2, "tasks/cancel"), (3, "tasks/update")] {
        let refused = connection.ask(request(id, method, json!({"taskId": "x"}), false));
        assert_eq!(refused["error"]["code"], -32021, "{refused}");
        assert_eq!(
            refused["error"]["data"],
            json!({"requiredCapabilities": {"extensions": {TASKS: {}}}}),
            "{refused}"
        );
    }
    for (id, method) in [(4, "tasks/get"), (5, "tasks/cancel"), (6, "tasks/update")] {
        let unknown = connection.ask(request(id, method, json!({"taskId": "0".repeat(32)}), true));
        assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
        let message = unknown["error"]["message"].as_str().unwrap();
        assert!(message.contains("expired"), "{message}");
    }
    let missing = connection.ask(request(7, "tasks/get", json!({}), true));
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    let discover = connection.ask(request(8, "server/discover", json!({}), false));
    assert_eq!(
        discover["result"]["capabilities"]["extensions"],
        json!({ TASKS: {} }),
        "{discover}"
    );
    connection.close();
}

#[test]
fn a_task_expires_after_its_time_to_live_and_its_call_is_stopped() {
    let slow = Slow::default();
    let config = config(
        &slow,
        TaskPolicy {
            ttl: Duration::from_millis(300),
            ..policy()
        },
    );
    let connection = Connection::open(&config);
    let created = connection.ask(call_slow(1, true));
    assert_eq!(created["result"]["ttlMs"], 300, "{created}");
    let id = task_id(&created);
    let expired = poll(&connection, &id, "the task to expire", |reply| {
        reply.get("error").is_some()
    });
    assert_eq!(expired["error"]["code"], -32602, "{expired}");
    let deadline = Instant::now() + PATIENCE;
    while !slow.saw_cancel.is_cancelled() {
        assert!(
            Instant::now() < deadline,
            "the expired task's call still works"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    connection.close();
}

#[test]
fn the_store_is_bounded_and_a_full_store_answers_calls_as_before() {
    let slow = Slow::default();
    // Every call that does not answer at once becomes a task, while there is room.
    let config = config(
        &slow,
        TaskPolicy {
            max_tasks: 2,
            promote_after: Duration::ZERO,
            ..policy()
        },
    );
    let connection = Connection::open(&config);
    let first = task_id(&connection.ask(call_slow(1, true)));
    let second = task_id(&connection.ask(call_slow(2, true)));
    assert_ne!(first, second);
    // Both places are held by working tasks: the third call waits for its answer, as it would
    // without the extension, and answers once the gate opens.
    let other = Connection::open(&config);
    let third = std::thread::scope(|scope| {
        let answer = scope.spawn(move || {
            let reply = other.ask(call_slow(3, true));
            other.close();
            reply
        });
        let deadline = Instant::now() + PATIENCE;
        while slow.started.load(Ordering::SeqCst) < 3 {
            assert!(Instant::now() < deadline, "the third call never started");
            std::thread::sleep(Duration::from_millis(10));
        }
        slow.gate.cancel();
        answer.join().unwrap()
    });
    assert_eq!(third["result"]["resultType"], "complete", "{third}");
    assert_eq!(
        third["result"]["structuredContent"],
        json!({"result": "released"})
    );
    let done = poll(&connection, &first, "the first task to end", |reply| {
        reply["result"]["status"] != "working"
    });
    assert_eq!(done["result"]["status"], "completed", "{done}");
    connection.close();
}
