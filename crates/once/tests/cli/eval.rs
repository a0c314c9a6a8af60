//! Evaluators through the binary: `once eval` on the command line, and `once_eval` in a live
//! `once serve` session, where an evaluator outlives the client that started it and dies with
//! the session. `once eval` itself evaluates in that session when one serves the workspace.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Mcp, PATIENCE, Serve, TempDir, Test, once_binary, output_within};

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

/// The evaluator's pid as the machine sees it: inside its PID namespace `os.getpid()` is the
/// same small number for every evaluator, while `/proc` (not remounted) names the machine's pid.
const MACHINE_PID: &str = "int(os.readlink('/proc/self'))";

#[test]
fn a_session_keeps_an_evaluator_across_clients_and_stops_it_with_itself() {
    let test = Test::new().manifest(MANIFEST);
    let state = TempDir::new();
    let mut serve = Serve::start(
        test.root(),
        state.path(),
        &["--allow-run", "--allow-eval-reset"],
    );

    let mut first = Mcp::attach(state.path(), None);
    first.initialize();
    let defined = first.call(
        1,
        "once_eval",
        json!({"target": "py", "code": format!("import os\nx = 41\n{MACHINE_PID}")}),
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
        json!({"target": "py", "code": format!("import os\n{MACHINE_PID}")}),
    );
    let fresh_pid: i32 = evaluation(&fresh_pid)["value"]
        .as_str()
        .and_then(|text| text.parse().ok())
        .expect("a pid");
    assert_ne!(fresh_pid, pid);

    assert_eq!(serve.stop_with(libc::SIGTERM), Some(143));
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
    // The code says when it has set `kept` and gone to sleep: a heartbeat only proves the code
    // reached the evaluator, and on a loaded machine an interrupt may land before the assignment.
    let asleep = test.root().join("asleep");
    let code = format!(
        "import time\nkept = 5\nopen({:?}, 'w').close()\ntime.sleep(600)",
        asleep.display().to_string()
    );
    server.send(
        &json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {
            "name": "once_eval",
            "arguments": {"target": "py", "code": code, "deadline": "10m"},
            "_meta": {"progressToken": "beat"},
        }})
        .to_string(),
    );
    // A heartbeat arrives while the code runs; once it is asleep, the client gives up on it.
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
    let deadline = std::time::Instant::now() + PATIENCE;
    while !asleep.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the code never went to sleep"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    server.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 10}})
            .to_string(),
    );
    // The interrupted evaluator is free again as soon as the interrupt has landed (until then
    // a call is answered `busy`), with its state.
    let end = Instant::now() + PATIENCE;
    let mut id = 10;
    let reply = loop {
        assert!(Instant::now() < end, "the evaluator stayed busy");
        id += 1;
        server.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "once_eval", "arguments": {"target": "py", "code": "kept"},
            }})
            .to_string(),
        );
        let message = loop {
            let message = server.recv();
            if message["id"] == id {
                break message;
            }
        };
        if message["result"]["structuredContent"]["outcome"] != "busy" {
            break message;
        }
    };
    let kept = evaluation(&reply);
    assert_eq!(kept["value"], "5", "{reply}");
    assert_eq!(kept["state_lost"], false);
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

#[test]
fn progress_carries_the_output_printed_so_far() {
    let test = Test::new().manifest(&format!(
        "{MANIFEST}\n[targets.js]\nkind = \"command\"\n[targets.js.evaluator]\nlanguage = \"node\"\n"
    ));
    let mut server = Mcp::spawn(test.root(), &["--allow-run"]);
    server.initialize();
    let python = "import time\nprint('halfway there')\nprint('x' * 5000)\nprint('the last words')\ntime.sleep(600)";
    let node = "console.log('halfway there'); console.log('x'.repeat(5000)); \
                console.log('the last words'); new Promise((resolve) => setTimeout(resolve, 600000))";
    for (id, target, code) in [(10, "py", python), (20, "js", node)] {
        server.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "once_eval",
                "arguments": {"target": target, "code": code, "deadline": "10m"},
                "_meta": {"progressToken": target},
            }})
            .to_string(),
        );
        let end = Instant::now() + PATIENCE;
        let message = loop {
            assert!(
                Instant::now() < end,
                "{target}: no progress showed the output"
            );
            let message = server.recv();
            assert_ne!(message["id"], id, "answered while asleep: {message}");
            let text = message["params"]["message"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            if text.contains("the last words") {
                break text;
            }
        };
        // Bounded: the last 2 KB of output, not all of it.
        assert!(message.len() < 2_600, "{target}: {} bytes", message.len());
        assert!(message.contains("xxxx"), "{target}: {message}");
        assert!(!message.contains("halfway there"), "{target}: {message}");
        server.send(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}})
                .to_string(),
        );
    }
    server.send(&json!({"jsonrpc": "2.0", "id": 30, "method": "ping"}).to_string());
    let end = Instant::now() + PATIENCE;
    loop {
        assert!(Instant::now() < end, "no answer to the ping");
        if server.recv()["id"] == 30 {
            break;
        }
    }
}

/// `once eval ARGS` in the workspace `root` with the registry under `state`, bounded in time.
fn eval_in(root: &Path, state: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(once_binary());
    command
        .arg("eval")
        .args(args)
        .current_dir(root)
        .env("XDG_STATE_HOME", state)
        .env_remove("ONCE_LOG");
    output_within(command)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn once_eval_uses_the_live_session_so_state_persists_between_commands() {
    let test = Test::new().manifest(MANIFEST);
    let state = TempDir::new();
    let _serve = Serve::start(
        test.root(),
        state.path(),
        &["--allow-run", "--allow-eval-reset"],
    );

    let defined = eval_in(test.root(), state.path(), &["py", "x = 41"]);
    assert_eq!(defined.status.code(), Some(0), "{}", text(&defined.stderr));
    let used = eval_in(test.root(), state.path(), &["py", "x + 1"]);
    assert_eq!(
        (used.status.code(), text(&used.stdout)),
        (Some(0), "42\n".to_string()),
        "{}",
        text(&used.stderr)
    );
    // The same value as the local path prints: the evaluation, not the tool's wrapping.
    let json = eval_in(test.root(), state.path(), &["py", "x", "--json"]);
    let value: Value = serde_json::from_slice(&json.stdout).expect("stdout is JSON");
    assert_eq!(
        (value["target"].clone(), value["value"].clone()),
        (json!("py"), json!("41"))
    );

    let reset = eval_in(test.root(), state.path(), &["--reset", "py", "--json"]);
    assert_eq!(reset.status.code(), Some(0), "{}", text(&reset.stderr));
    let reset: Value = serde_json::from_slice(&reset.stdout).expect("stdout is JSON");
    assert_eq!(reset, json!({"target": "py", "was_running": true}));
    let gone = eval_in(test.root(), state.path(), &["py", "x"]);
    assert_eq!(gone.status.code(), Some(1));
    assert!(
        text(&gone.stderr).contains("NameError"),
        "{}",
        text(&gone.stderr)
    );
}

#[test]
fn a_window_session_refuses_resets_unless_the_person_allowed_them() {
    let test = Test::new().manifest(MANIFEST);
    let state = TempDir::new();
    let _serve = Serve::start(test.root(), state.path(), &["--allow-run"]);
    let defined = eval_in(test.root(), state.path(), &["py", "x = 41"]);
    assert_eq!(defined.status.code(), Some(0), "{}", text(&defined.stderr));

    // From the command line: refused, and the evaluator and its state are untouched.
    let reset = eval_in(test.root(), state.path(), &["--reset", "py"]);
    assert_eq!(reset.status.code(), Some(1));
    assert!(
        text(&reset.stderr).contains("once serve --allow-run --allow-eval-reset"),
        "{}",
        text(&reset.stderr)
    );
    // From the agent: `refused`, saying how the person allows it.
    let mut agent = Mcp::attach(state.path(), None);
    agent.initialize();
    let refused = agent.call(1, "once_eval_reset", json!({"target": "py"}));
    let answer = &refused["result"]["structuredContent"];
    assert_eq!(
        (
            answer["outcome"].as_str(),
            refused["result"]["isError"].as_bool()
        ),
        (Some("refused"), Some(true)),
        "{refused}"
    );
    assert!(
        answer["message"]
            .as_str()
            .is_some_and(|m| m.contains("once serve --allow-run --allow-eval-reset")),
        "{refused}"
    );
    let kept = agent.call(2, "once_eval", json!({"target": "py", "code": "x + 1"}));
    assert_eq!(evaluation(&kept)["value"], "42", "{kept}");

    // `once mcp` owns its evaluators: there the agent resets them as before.
    let mut stdio = Mcp::spawn(test.root(), &["--allow-run"]);
    stdio.initialize();
    let nothing = stdio.call(1, "once_eval_reset", json!({"target": "py"}));
    assert_eq!(
        nothing["result"]["structuredContent"]["outcome"], "none",
        "{nothing}"
    );
    stdio.call(2, "once_eval", json!({"target": "py", "code": "y = 1"}));
    let done = stdio.call(3, "once_eval_reset", json!({"target": "py"}));
    assert_eq!(
        done["result"]["structuredContent"]["outcome"], "done",
        "{done}"
    );
    assert_eq!(evaluation(&done)["was_running"], true);
}

#[test]
fn a_session_without_allow_run_is_named_and_local_ignores_it() {
    let test = Test::new().manifest(MANIFEST);
    let state = TempDir::new();
    let _serve = Serve::start(test.root(), state.path(), &[]);

    let refused = eval_in(test.root(), state.path(), &["py", "1 + 1"]);
    assert_eq!(refused.status.code(), Some(1));
    let stderr = text(&refused.stderr);
    assert!(stderr.contains("once serve --allow-run"), "{stderr}");
    assert!(stderr.contains("--local"), "{stderr}");
    let refused = eval_in(test.root(), state.path(), &["--reset", "py"]);
    assert!(text(&refused.stderr).contains("--allow-run"));

    // `--local` evaluates in an evaluator of its own, which ends with the command.
    let local = eval_in(
        test.root(),
        state.path(),
        &["py", "y = 2; y * 21", "--local"],
    );
    assert_eq!(
        (local.status.code(), text(&local.stdout)),
        (Some(0), "42\n".to_string()),
        "{}",
        text(&local.stderr)
    );
    let again = eval_in(test.root(), state.path(), &["py", "y", "--local"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        text(&again.stderr).contains("NameError"),
        "{}",
        text(&again.stderr)
    );
}

#[test]
fn local_does_not_touch_a_session_that_has_evaluators() {
    let test = Test::new().manifest(MANIFEST);
    let state = TempDir::new();
    let _serve = Serve::start(test.root(), state.path(), &["--allow-run"]);
    let kept = eval_in(test.root(), state.path(), &["py", "z = 7"]);
    assert_eq!(kept.status.code(), Some(0), "{}", text(&kept.stderr));
    let local = eval_in(test.root(), state.path(), &["py", "z", "--local"]);
    assert!(
        text(&local.stderr).contains("NameError"),
        "{}",
        text(&local.stderr)
    );
    let session = eval_in(test.root(), state.path(), &["py", "z"]);
    assert_eq!(text(&session.stdout), "7\n", "{}", text(&session.stderr));
}

#[test]
fn ctrl_c_cancels_a_session_evaluation_and_the_evaluator_keeps_its_state() {
    let test = Test::new().manifest(MANIFEST);
    let state = TempDir::new();
    let _serve = Serve::start(test.root(), state.path(), &["--allow-run"]);
    let started = test.root().join("started");
    let code = format!(
        "import pathlib, time\nkept = 3\npathlib.Path({:?}).touch()\ntime.sleep(600)",
        started.display().to_string()
    );
    let mut child = Command::new(once_binary())
        .args(["eval", "py", &code, "--deadline", "10m"])
        .current_dir(test.root())
        .env("XDG_STATE_HOME", state.path())
        .env_remove("ONCE_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawns once eval");
    let pid = i32::try_from(child.id()).expect("a pid fits in i32");
    // The file appears once the code runs in the session's evaluator.
    let waiting = Instant::now();
    while !started.exists() {
        if waiting.elapsed() > PATIENCE || child.try_wait().is_ok_and(|status| status.is_some()) {
            // SAFETY: our own child, not yet reaped by a wait that returned its status.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("the evaluation did not start within {PATIENCE:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: a signal to our own child, which has not been reaped.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let (sender, done) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(child.wait_with_output());
    });
    let output = done
        .recv_timeout(PATIENCE)
        .unwrap_or_else(|_| {
            // SAFETY: the waiter has not reaped it yet.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("once eval did not stop within {PATIENCE:?} of SIGINT")
        })
        .expect("waits");
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("interrupted"),
        "{}",
        text(&output.stderr)
    );

    // The session interrupted the code: its evaluator is free again, with its state.
    let kept = eval_in(test.root(), state.path(), &["py", "kept", "--json"]);
    let kept: Value = serde_json::from_slice(&kept.stdout).expect("stdout is JSON");
    assert_eq!(
        (kept["value"].clone(), kept["state_lost"].clone()),
        (json!("3"), json!(false))
    );
}
