//! Evaluators through the binary: `once eval` on the command line, and `once_eval` in a live
//! `once serve` session, where an evaluator outlives the client that started it and dies with
//! the session.

use serde_json::{Value, json};

use crate::support::{Mcp, PATIENCE, Serve, TempDir, Test};

const MANIFEST: &str = "\
[targets.py]
kind = \"command\"
[targets.py.evaluator]
language = \"python\"

[targets.plain]
kind = \"command\"
";

fn evaluation(reply: &Value) -> Value {
    reply["result"]["structuredContent"]["result"].clone()
}

#[test]
fn once_eval_prints_the_value_and_fails_on_an_exception() {
    let test = Test::new().manifest(MANIFEST);
    let run = test.args(["eval", "py", "print('out'); 6 * 7"]).run();
    assert_eq!((run.code(), run.stdout()), (0, "out\n42\n".to_string()));

    let test = Test::new().manifest(MANIFEST);
    let run = test.args(["eval", "py", "1/0", "--json"]).run();
    assert_eq!(run.code(), 1);
    let value = run.json();
    assert_eq!(value["status"], "error");
    assert!(
        value["error"]
            .as_str()
            .unwrap_or("")
            .contains("ZeroDivisionError")
    );

    let test = Test::new().manifest(MANIFEST);
    let run = test.args(["eval", "plain", "1"]).run();
    assert_eq!(run.code(), 1);
    assert!(
        run.stderr().contains("declares no evaluator"),
        "{}",
        run.stderr()
    );
}

#[test]
fn a_session_keeps_an_evaluator_across_clients_and_stops_it_with_itself() {
    let test = Test::new().manifest(MANIFEST);
    let state = TempDir::new();
    let mut serve = Serve::start(test.root(), state.path(), &["--allow-run"]);

    let mut first = Mcp::attach(state.path(), None);
    first.initialize();
    let defined = first.call(
        1,
        "once_eval",
        json!({"target": "py", "code": "import os\nx = 41\nos.getpid()"}),
    );
    let pid: i32 = evaluation(&defined)["value"]
        .as_str()
        .and_then(|text| text.parse().ok())
        .unwrap_or_else(|| panic!("a pid: {defined}"));
    first.close_stdin();
    assert_eq!(first.wait(PATIENCE).0, Some(0));

    // A new client, a new connection thread: the evaluator and its variables are still there.
    let mut second = Mcp::attach(state.path(), None);
    second.initialize();
    let used = second.call(2, "once_eval", json!({"target": "py", "code": "x + 1"}));
    let used = evaluation(&used);
    assert_eq!(used["value"], "42", "{used}");
    assert_eq!(used["state_lost"], false);

    let reset = second.call(3, "once_eval_reset", json!({"target": "py"}));
    assert_eq!(evaluation(&reset)["was_running"], true);
    let fresh = second.call(
        4,
        "once_eval",
        json!({"target": "py", "code": "'x' in globals()"}),
    );
    assert_eq!(evaluation(&fresh)["value"], "False");
    let fresh_pid = second.call(
        5,
        "once_eval",
        json!({"target": "py", "code": "import os\nos.getpid()"}),
    );
    let fresh_pid: i32 = evaluation(&fresh_pid)["value"]
        .as_str()
        .and_then(|text| text.parse().ok())
        .expect("a pid");
    assert_ne!(fresh_pid, pid);

    assert_eq!(serve.stop_with(libc::SIGTERM), Some(0));
    assert!(
        !std::path::Path::new(&format!("/proc/{fresh_pid}/cmdline")).exists()
            || std::fs::read(format!("/proc/{fresh_pid}/cmdline")).is_ok_and(|c| c.is_empty()),
        "the evaluator outlived its session"
    );
    let _ = second.wait(PATIENCE);
}

#[test]
fn a_long_evaluation_sends_heartbeats_and_a_cancel_interrupts_it_keeping_state() {
    let test = Test::new().manifest(MANIFEST);
    let mut server = Mcp::spawn(test.root(), &["--allow-run"]);
    server.initialize();
    let started = std::time::Instant::now();
    server.send(
        &json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {
            "name": "once_eval",
            "arguments": {"target": "py", "code": "import time\nkept = 5\ntime.sleep(600)", "deadline": "10m"},
            "_meta": {"progressToken": "beat"},
        }})
        .to_string(),
    );
    // The first heartbeat proves the evaluation is running; then the client gives up on it.
    loop {
        let message = server.recv();
        if message["method"] == "notifications/progress" {
            assert_eq!(message["params"]["progressToken"], "beat");
            assert!(
                message["params"]["message"]
                    .as_str()
                    .unwrap_or("")
                    .contains("`py`")
            );
            break;
        }
        assert_ne!(
            message["id"], 10,
            "answered before any heartbeat: {message}"
        );
    }
    server.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 10}})
            .to_string(),
    );
    // The interrupted evaluator is free again at once, with its state.
    server.send(
        &json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {
            "name": "once_eval", "arguments": {"target": "py", "code": "kept"},
        }})
        .to_string(),
    );
    let reply = loop {
        let message = server.recv();
        if message["id"] == 11 {
            break message;
        }
    };
    let kept = evaluation(&reply);
    assert_eq!(kept["value"], "5", "{reply}");
    assert_eq!(kept["state_lost"], false);
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}
