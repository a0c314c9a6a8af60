//! The record of a run tells the truth while it runs and after whatever ended it: actions are
//! `running` as they run, their logs grow as they print, a cached action keeps its log, and a
//! run whose process stopped or died first is `interrupted`, never `running` forever.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::run::{count_marked, once, report, run, unique_mark, wait_until, workspace};
use crate::support::{Mcp, PATIENCE, once_binary};

/// `once query runs ARGS` in `root`, as JSON.
pub(crate) fn query_runs(root: &Path, args: &[&str]) -> Value {
    try_query_runs(root, args).unwrap_or_else(|stderr| panic!("{stderr}"))
}

/// `once query runs ARGS` in `root`, as JSON, or what it said when it refused.
fn try_query_runs(root: &Path, args: &[&str]) -> Result<Value, String> {
    let output = Command::new(once_binary())
        .arg("--workspace")
        .arg(root)
        .args(["query", "runs"])
        .args(args)
        .output()
        .expect("runs once");
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    Ok(serde_json::from_slice(&output.stdout).expect("json"))
}

/// An action that prints a line, then sleeps as the leader itself (`exec`), so the kernel's
/// parent-death signal reaches it when `once` is killed.
fn long_action(mark: &str) -> String {
    format!(
        r#"
[targets.long]
kind = "command"
[targets.long.capabilities.build]
command = "echo started; exec sleep 60"
env = {{ ONCE_TEST_MARK = "{mark}" }}
"#
    )
}

fn result(reply: &Value) -> Value {
    reply["result"]["structuredContent"]["result"].clone()
}

#[test]
fn a_run_in_flight_when_mcp_input_closes_is_recorded_interrupted() {
    let mark = unique_mark();
    let ws = workspace(&long_action(&mark));
    let mut server = Mcp::spawn(ws.path(), &["--allow-run"]);
    server.initialize();
    let started = server.call(1, "once_run", json!({"target": "long", "wait_seconds": 0}));
    let run_id = result(&started)["run_id"]
        .as_str()
        .expect("a run id")
        .to_owned();
    // The marked process exists from the moment its shell starts, before it prints; the log is
    // what says the line was written.
    wait_until("the action's first line in its log", || {
        try_query_runs(ws.path(), &[&run_id, "--action", "long:build"])
            .is_ok_and(|log| log["lines"] == json!(["started"]))
    });
    assert!(count_marked(&mark) >= 1, "the action is running");
    server.close_stdin();
    let (code, _) = server.wait(PATIENCE);
    assert_eq!(code, Some(0));
    assert_eq!(count_marked(&mark), 0, "a process outlived `once mcp`");
    let page = query_runs(ws.path(), &[&run_id]);
    assert_eq!(page["status"], "interrupted", "{page}");
    assert_eq!(page["actions"][0]["status"], "interrupted", "{page}");
    let log = query_runs(ws.path(), &[&run_id, "--action", "long:build"]);
    assert_eq!(log["lines"], json!(["started"]), "{log}");
}

#[test]
fn a_run_whose_process_was_killed_reads_as_interrupted() {
    let mark = unique_mark();
    let ws = workspace(&long_action(&mark));
    let mut child = once(ws.path(), &["long"]).spawn().expect("spawns once run");
    wait_until("the action's process", || count_marked(&mark) >= 1);
    let list = query_runs(ws.path(), &[]);
    assert_eq!(list["runs"][0]["status"], "running", "{list}");
    let run_id = list["runs"][0]["run_id"].as_str().unwrap().to_owned();
    // The record follows the run within a tenth of a second.
    wait_until("the record to show the action running", || {
        query_runs(ws.path(), &[&run_id])["actions"][0]["status"] == "running"
    });
    child.kill().expect("SIGKILL");
    child.wait().expect("reaps");
    wait_until("the action's process to die with its parent", || {
        count_marked(&mark) == 0
    });
    let list = query_runs(ws.path(), &[]);
    assert_eq!(list["runs"][0]["status"], "interrupted", "{list}");
    let page = query_runs(ws.path(), &[&run_id]);
    assert_eq!(page["actions"][0]["status"], "interrupted", "{page}");
}

#[test]
fn the_output_of_a_running_action_can_be_read_before_it_ends() {
    let ws = workspace(
        r#"
[targets.slow]
kind = "command"
[targets.slow.capabilities.build]
command = "echo first line; i=0; while [ ! -f go ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; echo second line"
"#,
    );
    let mut server = Mcp::spawn(ws.path(), &["--allow-run"]);
    server.initialize();
    let started = server.call(1, "once_run", json!({"target": "slow", "wait_seconds": 0}));
    let run_id = result(&started)["run_id"]
        .as_str()
        .expect("a run id")
        .to_owned();
    // The id it hands out can be read at once, whatever the run has done so far.
    let first = server.call(2, "once_query_runs", json!({"run_id": run_id}));
    assert_ne!(first["result"]["isError"], true, "{first}");
    let mut id = 2;
    let mut poll = |server: &mut Mcp, arguments: Value| {
        id += 1;
        result(&server.call(id, "once_query_runs", arguments))
    };
    let end = Instant::now() + PATIENCE;
    let running = loop {
        let page = poll(&mut server, json!({"run_id": run_id}));
        if page["actions"][0]["status"] == "running" {
            break page;
        }
        assert!(Instant::now() < end, "never running: {page}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(running["status"], "running", "{running}");
    let end = Instant::now() + PATIENCE;
    let log = loop {
        let log = poll(
            &mut server,
            json!({"run_id": run_id, "action": "slow:build"}),
        );
        if log["lines"] == json!(["first line"]) {
            break log;
        }
        assert!(Instant::now() < end, "the first line never showed: {log}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(log["total_lines"], 1);
    let still = poll(&mut server, json!({"run_id": run_id}));
    assert_eq!(still["actions"][0]["status"], "running", "{still}");
    std::fs::write(ws.path().join("go"), "").unwrap();
    let end = Instant::now() + PATIENCE;
    loop {
        let page = poll(&mut server, json!({"run_id": run_id}));
        if page["status"] == "succeeded" {
            assert_eq!(page["actions"][0]["status"], "succeeded");
            break;
        }
        assert!(Instant::now() < end, "never succeeded: {page}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let log = poll(
        &mut server,
        json!({"run_id": run_id, "action": "slow:build"}),
    );
    assert_eq!(log["lines"], json!(["first line", "second line"]), "{log}");
}

#[test]
fn a_cached_action_keeps_its_log() {
    let ws = workspace(
        r#"
[targets.a]
kind = "command"
[targets.a.capabilities.test]
command = "echo all 3 tests passed"
"#,
    );
    let first = report(&run(ws.path(), &["a:test", "--json"]));
    assert_eq!(first["counts"]["ran"], 1, "{first}");
    let second = report(&run(ws.path(), &["a:test", "--json"]));
    assert_eq!(second["counts"]["cached"], 1, "{second}");
    let run_id = second["run_id"].as_str().unwrap();
    assert!(second["actions"][0]["log"].is_string(), "{second}");
    let log = query_runs(ws.path(), &[run_id, "--action", "a:test"]);
    assert_eq!(log["lines"], json!(["all 3 tests passed"]), "{log}");
}
