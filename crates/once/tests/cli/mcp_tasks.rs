//! Long runs as MCP tasks (`io.modelcontextprotocol/tasks`), with real runs: over stdio a call
//! that declares the extension is answered with a task, polling shows the output the run has
//! printed so far, and `tasks/cancel` stops the whole run, leaving no process of its group; over
//! HTTP a task made on one connection is polled to its end from others.
//!
//! Every wait polls with a deadline ([`PATIENCE`]); the runs wait on a file the test writes, or
//! are cancelled, so none outlives its test.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::mcp_http::{messages, send};
use crate::support::{HttpReply, Mcp, Serve, TempDir, Test};

const MODERN: &str = "2026-07-28";
const PATIENCE: Duration = Duration::from_secs(30);
const TASKS: &str = "io.modelcontextprotocol/tasks";

/// The `_meta` of a 2026-07-28 request; `tasks` declares the extension.
fn envelope(tasks: bool) -> Value {
    let extensions = if tasks {
        json!({ TASKS: {} })
    } else {
        json!({})
    };
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "tasks-test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": extensions},
    })
}

fn request(id: u64, method: &str, mut params: Value, tasks: bool) -> Value {
    params["_meta"] = envelope(tasks);
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Sends `message` and returns the response with its id, skipping notifications.
fn ask(server: &mut Mcp, message: &Value) -> Value {
    server.send(&message.to_string());
    loop {
        let line = server.recv();
        if line.get("id") == message.get("id") {
            return line;
        }
    }
}

/// Polls `tasks/get` (ids from `next_id` on) until `done` holds for the task, and returns it.
fn poll_until(
    server: &mut Mcp,
    next_id: &mut u64,
    task_id: &str,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + PATIENCE;
    loop {
        *next_id += 1;
        let reply = ask(
            server,
            &request(*next_id, "tasks/get", json!({"taskId": task_id}), true),
        );
        let task = &reply["result"];
        if done(task) {
            return task.clone();
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not within {PATIENCE:?}; last {reply}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether a process group `pgid` still has a member.
fn group_alive(pgid: i32) -> bool {
    // SAFETY: kill(2) with signal 0 only asks whether the group exists.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

/// The process groups, as this test's namespace sees them, of the processes marked `mark`.
fn marked_groups(mark: &str) -> Vec<i32> {
    let needle = format!("ONCE_TEST_MARK={mark}");
    let mut groups: Vec<i32> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|environ| environ.split(|&b| b == 0).any(|e| e == needle.as_bytes()))
        })
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // After the command name in parentheses: state, ppid, pgrp.
            let rest = &stat[stat.rfind(')')? + 2..];
            rest.split(' ').nth(2)?.parse().ok()
        })
        .collect();
    groups.sort_unstable();
    groups.dedup();
    groups
}

#[test]
fn a_run_becomes_a_task_that_shows_its_output_and_cancel_leaves_no_process() {
    let mark = crate::run::unique_mark();
    // The background sleep is a member of the action's group that would outlive a cancel that
    // reached only the shell.
    let test = Test::new().manifest(&format!(
        r#"
[targets.long]
kind = "command"
[targets.long.capabilities.build]
command = "echo first-line; echo second-line; (sleep 120) & sleep 120"
env = {{ ONCE_TEST_MARK = "{mark}" }}
"#
    ));
    let mut server = Mcp::spawn(test.root(), &["--allow-run"]);
    let created = ask(
        &mut server,
        &request(
            1,
            "tools/call",
            json!({"name": "once_run", "arguments": {"target": "long:build"}}),
            true,
        ),
    );
    let task = &created["result"];
    assert_eq!(task["resultType"], "task", "{created}");
    assert_eq!(task["status"], "working", "{created}");
    assert!(
        task["ttlMs"].as_u64().is_some_and(|ttl| ttl > 0),
        "{created}"
    );
    assert!(task["pollIntervalMs"].as_u64().is_some(), "{created}");
    let task_id = task["taskId"].as_str().expect("a task id").to_owned();
    assert_eq!(task_id.len(), 32, "128 bits in hex: {task_id}");

    let mut id = 1;
    let polled = poll_until(
        &mut server,
        &mut id,
        &task_id,
        "the output so far",
        |task| {
            task["statusMessage"]
                .as_str()
                .is_some_and(|message| message.contains("second-line"))
        },
    );
    assert_eq!(polled["status"], "working", "{polled}");
    assert_eq!(polled["resultType"], "complete", "{polled}");
    let counts = &polled["_meta"]["dev.once/progress"];
    assert_eq!(counts["total"].as_f64(), Some(1.0), "one action: {polled}");
    assert!(counts["progress"].as_f64().is_some(), "{polled}");
    let groups = marked_groups(&mark);
    assert!(
        !groups.is_empty(),
        "the run's processes are alive while it works"
    );
    assert!(groups.iter().all(|&pgid| group_alive(pgid)), "{groups:?}");

    id += 1;
    let cancelled = ask(
        &mut server,
        &request(id, "tasks/cancel", json!({"taskId": task_id}), true),
    );
    assert_eq!(cancelled["result"]["resultType"], "complete", "{cancelled}");
    let ended = poll_until(
        &mut server,
        &mut id,
        &task_id,
        "the cancelled state",
        |task| task["status"] != "working",
    );
    assert_eq!(ended["status"], "cancelled", "{ended}");
    assert!(ended.get("result").is_none(), "{ended}");
    // `cancelled` is reported once the run has ended, so its group is already gone.
    for pgid in groups {
        assert!(
            !group_alive(pgid),
            "the run's group {pgid} outlived the cancel"
        );
    }
    assert_eq!(
        crate::run::count_marked(&mark),
        0,
        "a process of the run is left"
    );
}

#[test]
fn without_the_extension_a_run_is_answered_as_before_and_tasks_get_is_refused() {
    let test = Test::new().manifest(
        r#"
[targets.quick]
kind = "command"
[targets.quick.capabilities.build]
command = "echo done"
"#,
    );
    let mut server = Mcp::spawn(test.root(), &["--allow-run"]);
    let answered = ask(
        &mut server,
        &request(
            1,
            "tools/call",
            json!({"name": "once_run", "arguments": {"target": "quick:build"}}),
            false,
        ),
    );
    assert_eq!(answered["result"]["resultType"], "complete", "{answered}");
    assert_eq!(
        answered["result"]["structuredContent"]["outcome"], "done",
        "{answered}"
    );
    let refused = ask(
        &mut server,
        &request(2, "tasks/get", json!({"taskId": "0".repeat(32)}), false),
    );
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"][TASKS],
        json!({}),
        "{refused}"
    );
    let unknown = ask(
        &mut server,
        &request(3, "tasks/get", json!({"taskId": "0".repeat(32)}), true),
    );
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let discover = ask(
        &mut server,
        &request(4, "server/discover", json!({}), false),
    );
    assert_eq!(
        discover["result"]["capabilities"]["extensions"][TASKS],
        json!({}),
        "{discover}"
    );
}

// ---------------------------------------------------------------- over HTTP

fn headers(serve: &Serve, method: &str, name: Option<&str>) -> Vec<(String, String)> {
    let token = serve.entry()["token"].as_str().expect("a token").to_owned();
    let mut headers = vec![
        ("Authorization".into(), format!("Bearer {token}")),
        ("Content-Type".into(), "application/json".into()),
        (
            "Accept".into(),
            "application/json, text/event-stream".into(),
        ),
        ("MCP-Protocol-Version".into(), MODERN.into()),
        ("Mcp-Method".into(), method.into()),
    ];
    if let Some(name) = name {
        headers.push(("Mcp-Name".into(), name.into()));
    }
    headers
}

/// One POST on a connection of its own (the helpers send `Connection: close`).
fn post(serve: &Serve, method: &str, name: Option<&str>, body: &Value) -> HttpReply {
    send(
        serve.port,
        "POST",
        &headers(serve, method, name),
        body.to_string().as_bytes(),
    )
}

#[test]
fn over_http_a_task_is_polled_to_its_end_from_new_connections() {
    let test = Test::new().manifest(
        r#"
[targets.gate]
kind = "command"
[targets.gate.capabilities.build]
command = "echo waiting; while [ ! -e go ]; do sleep 0.05; done; echo through"
"#,
    );
    let state = TempDir::new();
    let serve = Serve::start(test.root(), state.path(), &["--allow-run"]);
    let call = request(
        1,
        "tools/call",
        json!({"name": "once_run", "arguments": {"target": "gate:build"}}),
        true,
    );
    let created = post(&serve, "tools/call", Some("once_run"), &call);
    assert_eq!(created.status, 200, "{created:?}");
    let task = messages(&created).pop().expect("a response")["result"].clone();
    assert_eq!(task["resultType"], "task", "{task}");
    let task_id = task["taskId"].as_str().expect("a task id").to_owned();

    let get = |id: u64| {
        let reply = post(
            &serve,
            "tasks/get",
            Some(&task_id),
            &request(id, "tasks/get", json!({"taskId": task_id}), true),
        );
        assert_eq!(reply.status, 200, "{reply:?}");
        messages(&reply).pop().expect("a response")["result"].clone()
    };
    let deadline = Instant::now() + PATIENCE;
    let mut id = 1;
    loop {
        id += 1;
        let task = get(id);
        assert_eq!(task["status"], "working", "{task}");
        if task["statusMessage"]
            .as_str()
            .is_some_and(|m| m.contains("waiting"))
        {
            break;
        }
        assert!(Instant::now() < deadline, "no output so far in {task}");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::write(test.root().join("go"), "").unwrap();
    let done = loop {
        id += 1;
        let task = get(id);
        if task["status"] != "working" {
            break task;
        }
        assert!(Instant::now() < deadline, "the task never ended: {task}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"]["outcome"], "done",
        "{done}"
    );
    // A poll whose `Mcp-Name` is not its task id is refused by the transport.
    let mismatched = post(
        &serve,
        "tasks/get",
        Some("another"),
        &request(id + 1, "tasks/get", json!({"taskId": task_id}), true),
    );
    assert_eq!(mismatched.json()["error"]["code"], -32020, "{mismatched:?}");
}
