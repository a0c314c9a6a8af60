//! `once run` and the run tools of `once mcp`, with real processes.
//!
//! Commands carry a unique `ONCE_TEST_MARK` in their declared environment; children inherit it,
//! so scanning `/proc/*/environ` counts an action's whole family, grandchildren included. Waits
//! are bounded polls of a condition (a file, a process count, a message), never fixed sleeps.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Mcp, PATIENCE, TempDir, once_binary};

pub(crate) fn unique_mark() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!(
        "run-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Processes whose environment holds `ONCE_TEST_MARK=mark`; zombies read empty and don't count.
pub(crate) fn count_marked(mark: &str) -> usize {
    let needle = format!("ONCE_TEST_MARK={mark}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
                environ
                    .split(|&b| b == 0)
                    .any(|entry| entry == needle.as_bytes())
            })
        })
        .count()
}

/// Polls `condition` until it holds, failing the test after [`PATIENCE`].
pub(crate) fn wait_until(what: &str, condition: impl Fn() -> bool) {
    let end = Instant::now() + PATIENCE;
    while !condition() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub(crate) fn workspace(manifest: &str) -> TempDir {
    let dir = TempDir::new();
    std::fs::write(dir.path().join("once.toml"), manifest).unwrap();
    dir
}

pub(crate) fn once(root: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(once_binary());
    command
        .arg("--workspace")
        .arg(root)
        .arg("run")
        .args(args)
        .env_remove("ONCE_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

pub(crate) fn run(root: &Path, args: &[&str]) -> Output {
    once(root, args).output().expect("runs once")
}

pub(crate) fn report(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not a report ({e}); stderr: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn statuses(report: &Value) -> Vec<(String, String)> {
    report["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let cached = if a["cached"] == json!(true) {
                " (cached)"
            } else {
                ""
            };
            (
                a["action"].as_str().unwrap().to_owned(),
                format!("{}{cached}", a["status"].as_str().unwrap()),
            )
        })
        .collect()
}

#[test]
fn dependencies_first_then_a_cache_hit_runs_nothing() {
    let ws = workspace(
        r#"
[targets.lib]
kind = "command"
path = "lib"
[targets.lib.capabilities.build]
command = "echo lib >> ../runs; cat src.txt > out.txt"
inputs = ["src.txt"]
outputs = ["out.txt"]

[targets.app]
kind = "command"
path = "app"
deps = ["lib"]
[targets.app.capabilities.build]
command = "echo app >> ../runs"
"#,
    );
    std::fs::create_dir_all(ws.path().join("lib")).unwrap();
    std::fs::create_dir_all(ws.path().join("app")).unwrap();
    std::fs::write(ws.path().join("lib/src.txt"), "v1").unwrap();
    let first = run(ws.path(), &["app", "--json"]);
    assert_eq!(first.status.code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(ws.path().join("runs")).unwrap(),
        "lib\napp\n"
    );
    let first = report(&first);
    assert_eq!(first["status"], "succeeded");
    assert_eq!(first["counts"]["ran"], 2);
    // Each action says when it started, after its run did: the dependent after its dependency
    // ended, so a timeline can be drawn from the report alone.
    let lib = &first["actions"][0];
    let app = &first["actions"][1];
    let (lib_start, app_start) = (
        lib["started_ms"].as_u64().expect("lib started"),
        app["started_ms"].as_u64().expect("app started"),
    );
    assert!(
        app_start >= lib_start + lib["duration_ms"].as_u64().expect("a duration"),
        "{first}"
    );

    let second = run(ws.path(), &["app", "--json"]);
    assert_eq!(second.status.code(), Some(0));
    assert_eq!(
        statuses(&report(&second)),
        [
            ("lib:build".to_owned(), "succeeded (cached)".to_owned()),
            ("app:build".to_owned(), "succeeded (cached)".to_owned()),
        ]
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("runs")).unwrap(),
        "lib\napp\n",
        "a cache hit ran a command"
    );
    // Plain lines on stderr when it is not a terminal; nothing of the children's output.
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(stderr.contains("cached lib:build"), "{stderr}");
    assert!(
        stderr.contains("succeeded: 2 actions (0 ran, 2 cached"),
        "{stderr}"
    );
}

#[test]
fn bad_requests_exit_2_and_say_what_was_expected() {
    let ws = workspace(
        r#"
[targets.t]
kind = "command"
[targets.t.capabilities.build]
command = "touch ran-{n}"
[targets.t.capabilities.build.params.n]
type = "integer"
"#,
    );
    for (args, message) in [
        (
            &["t", "--param", "n=x"][..],
            "error: parameter `n` of `t:build`: expected an integer, found `x`",
        ),
        (
            &["t"],
            "error: parameter `n` of `t:build` is required: expected an integer",
        ),
        (
            &["t", "--param", "n=1", "--param", "m=2"],
            "error: unknown parameter `m` for `t:build`; expected one of: `n` (an integer)",
        ),
        (&["nope"], "error: no target named `nope`"),
        (
            &["t:test"],
            "error: target `t` has no capability `test`; it has: `build`",
        ),
        (
            &["t", "--param", "n"],
            "error: invalid parameter `n`: expected `NAME=VALUE`",
        ),
        (
            &["t", "--deadline", "soon", "--param", "n=1"],
            "error: invalid `--deadline soon`",
        ),
    ] {
        let output = run(ws.path(), args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.starts_with(message), "{args:?}: {stderr}");
    }
    assert!(!ws.path().join("ran-x").exists());
    assert_eq!(
        run(ws.path(), &["t", "--param", "n=1"]).status.code(),
        Some(0)
    );
    assert!(ws.path().join("ran-1").exists());
}

#[test]
fn two_actions_overlap_up_to_jobs() {
    // Each action leaves its marker, then waits (bounded) for the other's: both succeed only
    // if they run at the same time.
    let ws = workspace(
        r#"
[targets.left]
kind = "command"
[targets.left.capabilities.build]
command = "touch left; i=0; while [ ! -e right ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done; test -e right"

[targets.right]
kind = "command"
[targets.right.capabilities.build]
command = "touch right; i=0; while [ ! -e left ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done; test -e left"
"#,
    );
    let output = run(ws.path(), &["left", "right", "--jobs", "2", "--json"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(report(&output)["counts"]["ran"], 2);
}

#[test]
fn the_first_failure_stops_the_rest() {
    let ws = workspace(
        r#"
[targets.a]
kind = "command"
[targets.a.capabilities.build]
command = "echo the reason; exit 7"

[targets.b]
kind = "command"
deps = ["a"]
[targets.b.capabilities.build]
command = "touch b-ran"

[targets.c]
kind = "command"
[targets.c.capabilities.build]
command = "touch c-ran"
"#,
    );
    let output = run(ws.path(), &["b", "c", "--jobs", "1", "--json"]);
    assert_eq!(output.status.code(), Some(1));
    let report = report(&output);
    assert_eq!(report["status"], "failed");
    assert_eq!(
        statuses(&report),
        [
            ("a:build".to_owned(), "failed".to_owned()),
            ("c:build".to_owned(), "skipped".to_owned()),
            ("b:build".to_owned(), "skipped".to_owned()),
        ]
    );
    assert_eq!(report["actions"][0]["exit_code"], 7);
    assert_eq!(report["actions"][0]["tail"], json!(["the reason"]));
    assert!(!ws.path().join("b-ran").exists() && !ws.path().join("c-ran").exists());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("FAILED a:build") && stderr.contains("  the reason"),
        "{stderr}"
    );
}

#[test]
fn a_deadline_kills_a_group_that_ignores_term_grandchildren_included() {
    let mark = unique_mark();
    let ws = workspace(&format!(
        r#"
[targets.stubborn]
kind = "command"
[targets.stubborn.capabilities.build]
command = "trap '' TERM; (trap '' TERM; sleep 60) & sleep 60"
env = {{ ONCE_TEST_MARK = "{mark}" }}
"#
    ));
    let output = run(ws.path(), &["stubborn", "--deadline", "300ms", "--json"]);
    assert_eq!(output.status.code(), Some(1));
    let report = report(&output);
    assert_eq!(report["status"], "timed_out");
    assert_eq!(report["actions"][0]["status"], "timed_out");
    assert!(report["actions"][0]["duration_ms"].as_u64().unwrap() >= 300);
    assert_eq!(count_marked(&mark), 0, "a process outlived its deadline");
}

#[test]
fn sigterm_stops_every_group_then_exits_143() {
    let mark = unique_mark();
    let ws = workspace(&format!(
        r#"
[targets.long]
kind = "command"
[targets.long.capabilities.build]
command = "(sleep 60) & sleep 60"
env = {{ ONCE_TEST_MARK = "{mark}" }}
"#
    ));
    let child = once(ws.path(), &["long", "--json"]).spawn().unwrap();
    wait_until("the action's processes", || count_marked(&mark) >= 2);
    // SAFETY: kill(2) on the pid of a child we own and have not reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(143));
    let report = report(&output);
    assert_eq!(report["status"], "interrupted", "{report}");
    assert_eq!(report["actions"][0]["status"], "interrupted", "{report}");
    assert_eq!(count_marked(&mark), 0, "a process outlived `once run`");
}

#[test]
fn two_concurrent_runs_both_succeed_and_leave_a_consistent_cache() {
    let mut manifest = String::new();
    for i in 0..8 {
        manifest.push_str(&format!(
            "[targets.t{i}]\nkind = \"command\"\npath = \"t{i}\"\n{}\n\
             [targets.t{i}.capabilities.build]\n\
             command = \"head -c 200000 /dev/urandom > out.bin; cp out.bin copy.bin\"\n\
             outputs = [\"out.bin\", \"copy.bin\"]\ninputs = [\"in.txt\"]\n\n",
            if i > 0 {
                format!("deps = [\"t{}\"]", i - 1)
            } else {
                String::new()
            }
        ));
    }
    let ws = workspace(&manifest);
    for i in 0..8 {
        std::fs::create_dir_all(ws.path().join(format!("t{i}"))).unwrap();
        std::fs::write(ws.path().join(format!("t{i}/in.txt")), format!("{i}")).unwrap();
    }
    let first = once(ws.path(), &["t7", "--json"]).spawn().unwrap();
    let second = once(ws.path(), &["t7", "--json"]).spawn().unwrap();
    let outputs = [
        first.wait_with_output().unwrap(),
        second.wait_with_output().unwrap(),
    ];
    for output in &outputs {
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let (first_report, second_report) = (report(&outputs[0]), report(&outputs[1]));
    // Each action ran once: the second process waited on its key's lock, then replayed.
    let ran: u64 = [&first_report, &second_report]
        .iter()
        .map(|r| r["counts"]["ran"].as_u64().unwrap())
        .sum();
    assert_eq!(ran, 8);
    // Every entry is whole and every object matches its name.
    let third = run(ws.path(), &["t7", "--json"]);
    assert_eq!(report(&third)["counts"]["cached"], 8);
    let cas = ws.path().join(".once/cache/cas");
    for entry in std::fs::read_dir(&cas).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        assert!(!name.starts_with('.'), "a temporary file was left: {name}");
        let mut buffer = vec![0u8; 65536];
        let digest = once_run::hash_file(&path, &mut buffer)
            .unwrap()
            .to_hex()
            .to_string();
        assert_eq!(digest, name);
    }
    for i in 0..8 {
        let same = std::fs::read(ws.path().join(format!("t{i}/out.bin"))).unwrap()
            == std::fs::read(ws.path().join(format!("t{i}/copy.bin"))).unwrap();
        assert!(same, "t{i}: the outputs of two different runs were mixed");
    }
}

#[test]
fn an_input_edited_in_the_same_second_at_the_same_size_is_still_seen() {
    let ws = workspace(
        r#"
[targets.lib]
kind = "command"
path = "lib"
[targets.lib.capabilities.build]
command = "cat src.txt > out.txt"
inputs = ["src.txt"]
outputs = ["out.txt"]
"#,
    );
    std::fs::create_dir_all(ws.path().join("lib")).unwrap();
    let src = ws.path().join("lib/src.txt");
    std::fs::write(&src, "v1").unwrap();
    assert_eq!(
        report(&run(ws.path(), &["lib", "--json"]))["counts"]["ran"],
        1
    );
    // The edit keeps the size and puts the modification time back: to a `stat` with coarse
    // timestamps it is the same file. It happened within the racy window of the hashing, so
    // the file must be read again.
    let mtime = std::fs::metadata(&src).unwrap().modified().unwrap();
    std::fs::write(&src, "v2").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&src)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let second = report(&run(ws.path(), &["lib", "--json"]));
    assert_eq!(second["counts"]["ran"], 1, "the edit went unseen: {second}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("lib/out.txt")).unwrap(),
        "v2"
    );
    // And once known, the same content is a hit.
    assert_eq!(
        report(&run(ws.path(), &["lib", "--json"]))["counts"]["cached"],
        1
    );
}

#[test]
fn a_large_run_lists_twenty_actions_and_pages_through_all_of_them() {
    let mut manifest = String::new();
    for i in 0..30 {
        manifest.push_str(&format!(
            "[targets.t{i:02}]\nkind = \"command\"\n\
             [targets.t{i:02}.capabilities.build]\ncommand = \"{}\"\n\n",
            if i == 17 {
                "echo the reason; exit 3"
            } else {
                "true"
            }
        ));
    }
    let ws = workspace(&manifest);
    let output = run(ws.path(), &["--all", "build", "--keep-going", "--json"]);
    assert_eq!(output.status.code(), Some(1));
    let summary = report(&output);
    assert_eq!(summary["counts"]["total"], 30);
    assert_eq!(summary["counts"]["failed"], 1);
    let actions = summary["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 20);
    assert_eq!(summary["omitted"], 10);
    // What needs attention comes first, with the tail of its log.
    assert_eq!(actions[0]["action"], "t17:build");
    assert_eq!(actions[0]["tail"], json!(["the reason"]));
    let run_id = summary["run_id"].as_str().unwrap().to_owned();
    assert!(summary["hint"].as_str().unwrap().contains(&run_id));

    let mut mcp = Mcp::spawn(ws.path(), &[]);
    mcp.initialize();
    let mut seen = Vec::new();
    let mut offset = json!(0);
    for id in 1.. {
        let answer = mcp.call(
            id,
            "once_query_runs",
            json!({"run_id": run_id, "offset": offset, "limit": 12}),
        );
        let page = &answer["result"]["structuredContent"]["result"];
        assert_eq!(page["total_actions"], 30, "{answer}");
        for action in page["actions"].as_array().unwrap() {
            seen.push(action["action"].as_str().unwrap().to_owned());
        }
        match page.get("next_offset") {
            Some(next) => offset = next.clone(),
            None => break,
        }
    }
    let all: Vec<String> = (0..30).map(|i| format!("t{i:02}:build")).collect();
    assert_eq!(seen, all);
    mcp.close_stdin();
    let (code, _) = mcp.wait(PATIENCE);
    assert_eq!(code, Some(0));
}

const MCP_LONG: &str = r#"
[targets.long]
kind = "command"
[targets.long.capabilities.build]
command = "echo started; (sleep 60) & sleep 60"
env = { ONCE_TEST_MARK = "@MARK@" }

[targets.loud]
kind = "command"
[targets.loud.capabilities.build]
command = "yes 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' | head -c 8000000; echo; echo done"
"#;

#[test]
fn mcp_cancellation_kills_the_group_and_sends_no_reply() {
    let mark = unique_mark();
    let ws = workspace(&MCP_LONG.replace("@MARK@", &mark));
    let mut mcp = Mcp::spawn(ws.path(), &["--allow-run"]);
    mcp.initialize();
    mcp.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "once_run", "arguments": {"target": "long:build"},
            "_meta": {"progressToken": "tok"}}})
        .to_string(),
    );
    let started = mcp.recv();
    assert_eq!(started["method"], "notifications/progress");
    assert_eq!(started["params"]["message"], "long:build started");
    wait_until("the action's processes", || count_marked(&mark) >= 2);
    mcp.send(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"test"}}"#,
    );
    wait_until("the group to be gone", || count_marked(&mark) == 0);
    // The next message is the ping's answer: the cancelled call got no reply.
    let pong = mcp.request(2, "ping", json!({}));
    assert_eq!(pong["id"], 2, "{pong}");
    mcp.close_stdin();
    let (code, rest) = mcp.wait(PATIENCE);
    assert_eq!(code, Some(0));
    assert!(
        rest.iter().all(|line| !line.contains(r#""id":1"#)),
        "{rest:?}"
    );
}

#[test]
fn end_of_input_in_mcp_leaves_no_process_behind() {
    let mark = unique_mark();
    let ws = workspace(&MCP_LONG.replace("@MARK@", &mark));
    let mut mcp = Mcp::spawn(ws.path(), &["--allow-run"]);
    mcp.initialize();
    let answer = mcp.call(1, "once_run", json!({"target": "long", "wait_seconds": 0}));
    let value = &answer["result"]["structuredContent"]["result"];
    assert_eq!(value["status"], "running", "{answer}");
    let run_id = value["run_id"].as_str().unwrap().to_owned();
    wait_until("the action's processes", || count_marked(&mark) >= 2);
    let runs = mcp.call(2, "once_query_runs", json!({"run_id": run_id}));
    assert_eq!(
        runs["result"]["structuredContent"]["result"]["status"],
        "running"
    );
    mcp.close_stdin();
    let (code, _) = mcp.wait(PATIENCE);
    assert_eq!(code, Some(0));
    assert_eq!(count_marked(&mark), 0, "a process outlived `once mcp`");
}

#[test]
fn megabytes_of_output_do_not_block_and_never_reach_the_mcp_stream() {
    let ws = workspace(&MCP_LONG.replace("@MARK@", "unused"));
    let mut mcp = Mcp::spawn(ws.path(), &["--allow-run"]);
    mcp.initialize();
    let answer = mcp.call(1, "once_run", json!({"target": "loud"}));
    let value = &answer["result"]["structuredContent"]["result"];
    assert_eq!(value["status"], "succeeded", "{answer}");
    assert!(
        answer.to_string().len() < 4_000,
        "the answer is not bounded"
    );
    let run_id = value["run_id"].as_str().unwrap();
    // The log has it all, and it is read a page at a time.
    let page = mcp.call(
        2,
        "once_query_runs",
        json!({"run_id": run_id, "action": "loud:build", "offset": 0, "limit": 2}),
    );
    let page = &page["result"]["structuredContent"]["result"];
    assert_eq!(page["lines"].as_array().unwrap().len(), 2);
    assert!(page["total_lines"].as_u64().unwrap() > 100_000);
    let last = page["total_lines"].as_u64().unwrap() - 1;
    let tail = mcp.call(
        3,
        "once_query_runs",
        json!({"run_id": run_id, "action": "loud:build", "offset": last}),
    );
    assert_eq!(
        tail["result"]["structuredContent"]["result"]["lines"],
        json!(["done"])
    );
    mcp.close_stdin();
    let (code, rest) = mcp.wait(PATIENCE);
    assert_eq!(code, Some(0));
    assert!(rest.is_empty(), "stray output: {} lines", rest.len());
}

/// `once query runs …`, its exit code, stdout as JSON and stderr.
fn query_runs(root: &Path, args: &[&str]) -> (Option<i32>, Value, String) {
    let output = Command::new(once_binary())
        .arg("--workspace")
        .arg(root)
        .args(["query", "runs"])
        .args(args)
        .env_remove("ONCE_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("runs once");
    let value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.code(), value, stderr)
}

#[test]
fn query_runs_prints_what_once_query_runs_returns() {
    let ws = workspace(
        r#"
[targets.a]
kind = "command"
[targets.a.capabilities.build]
command = "echo one; echo two; echo three"

[targets.b]
kind = "command"
deps = ["a"]
[targets.b.capabilities.build]
command = "echo the reason; exit 3"
"#,
    );
    let output = run(ws.path(), &["b", "--json"]);
    assert_eq!(output.status.code(), Some(1));
    let run_id = report(&output)["run_id"].as_str().unwrap().to_owned();

    let mut mcp = Mcp::spawn(ws.path(), &[]);
    mcp.initialize();
    let mut id = 0;
    let mut same = |cli: &[&str], arguments: Value| {
        let (code, value, stderr) = query_runs(ws.path(), cli);
        assert_eq!(code, Some(0), "{cli:?}: {stderr}");
        id += 1;
        let answer = mcp.call(id, "once_query_runs", arguments);
        assert_eq!(
            value, answer["result"]["structuredContent"]["result"],
            "{cli:?}"
        );
        value
    };

    let list = same(&[], json!({}));
    assert_eq!(list["runs"].as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list["runs"][0]["run_id"], run_id.as_str());
    assert_eq!(list["runs"][0]["status"], "failed");
    assert_eq!(list["runs"][0]["failed_actions"], json!(["b:build"]));

    let first = same(
        &[&run_id, "--limit", "1"],
        json!({"run_id": run_id, "limit": 1}),
    );
    assert_eq!(first["total_actions"], 2, "{first}");
    assert_eq!(first["actions"][0]["action"], "a:build");
    assert_eq!(first["next_offset"], 1);
    let second = same(
        &[&run_id, "--offset", "1"],
        json!({"run_id": run_id, "offset": 1}),
    );
    assert_eq!(second["actions"][0]["action"], "b:build");
    assert_eq!(second["actions"][0]["tail"], json!(["the reason"]));
    assert!(second.get("next_offset").is_none(), "{second}");

    let log = same(
        &[
            &run_id, "--action", "a:build", "--offset", "1", "--limit", "1",
        ],
        json!({"run_id": run_id, "action": "a:build", "offset": 1, "limit": 1}),
    );
    assert_eq!(log["lines"], json!(["two"]), "{log}");
    assert_eq!(log["total_lines"], 3);
    assert_eq!(log["next_offset"], 2);

    // No such run: the tool's error names the tool to call, the command line's the command to
    // run; both say the same otherwise. Exit 1.
    let (code, value, stderr) = query_runs(ws.path(), &["nope"]);
    assert_eq!((code, value), (Some(1), Value::Null));
    let answer = mcp.call(10, "once_query_runs", json!({"run_id": "nope"}));
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("once_query_runs without arguments"), "{text}");
    assert_eq!(
        stderr.trim_end(),
        format!(
            "error: {}",
            text.replace("once_query_runs without arguments", "`once query runs`")
        )
    );
    // `--action` needs a run.
    let (code, _, _) = query_runs(ws.path(), &["--action", "a:build"]);
    assert_eq!(code, Some(2));

    mcp.close_stdin();
    let (code, _) = mcp.wait(PATIENCE);
    assert_eq!(code, Some(0));
}

#[test]
fn warnings_on_a_pipe_carry_no_colour_codes() {
    let root = workspace(
        "[targets.t]\nkind = \"command\"\n[targets.t.capabilities.build]\n\
         command = \"echo built > out.txt\"\noutputs = [\"out.txt\"]\n",
    );
    assert_eq!(run(root.path(), &["t:build"]).status.code(), Some(0));
    // An entry that passes its checksum but cannot be read (another version wrote it) is a
    // warning (and a miss), which is what stderr must carry plainly. (A torn one is a miss too,
    // silently: after a crash there may be many.)
    // A pack (`oncepk1\n`, then records of the body's length, the key, the body, and the
    // BLAKE3 of those three) whose record keeps its key but holds another body.
    let packs = root.path().join(".once/cache/packs");
    let body = b"not a cache entry";
    for pack in std::fs::read_dir(&packs).expect("the cache has packs") {
        let path = pack.expect("a pack").path();
        let bytes = std::fs::read(&path).expect("reads it");
        let key = &bytes[12..44];
        let mut record = (body.len() as u32).to_le_bytes().to_vec();
        record.extend_from_slice(key);
        record.extend_from_slice(body);
        let check = blake3::hash(&record);
        record.extend_from_slice(check.as_bytes());
        let mut foreign = b"oncepk1\n".to_vec();
        foreign.extend_from_slice(&record);
        std::fs::write(&path, &foreign).expect("damages it");
    }
    let output = run(root.path(), &["t:build"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("unreadable cache entry"), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "colour codes on a pipe: {stderr:?}"
    );
}

/// A `cargo` that only says how it was called, first on `PATH`.
fn fake_cargo(test: crate::support::Test) -> crate::support::Test {
    let bin = test.root().join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let cargo = bin.join("cargo");
    std::fs::write(&cargo, "#!/bin/sh\necho \"cargo $*\"\n").expect("writes");
    let mut permissions = std::fs::metadata(&cargo).expect("stat").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&cargo, permissions).expect("chmod");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    test.env("PATH", &path)
}

#[test]
fn cargo_package_features_reach_every_cargo_command_that_takes_them() {
    let run = fake_cargo(crate::support::Test::new().manifest(
        "[targets.core]\nkind = \"cargo-package\"\nfeatures = [\"fast\", \"json\"]\n\
         [targets.plain]\nkind = \"cargo-package\"\n",
    ))
    .args([
        "run",
        "core:build",
        "core:test",
        "core:check",
        "core:lint",
        "core:fmt",
        "plain:build",
        "--output-logs",
        "full",
    ])
    .run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    let stderr = run.stderr();
    for line in [
        "core:build  | cargo build -p core --features=fast,json",
        "core:test   | cargo test -p core --features=fast,json",
        "core:check  | cargo check -p core --features=fast,json",
        "core:lint   | cargo clippy -p core --features=fast,json -- -D warnings",
        "core:fmt    | cargo fmt -p core",
        "plain:build | cargo build -p plain",
    ] {
        assert!(
            stderr.lines().any(|l| l.trim_end() == line),
            "{line:?} missing: {stderr}"
        );
    }
}
