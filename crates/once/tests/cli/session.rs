//! `once serve` and `once mcp --attach` as real processes on real loopback sockets: discovery,
//! the registry file, the token, HTTP refusal, one client at a time, a byte-exact bridge,
//! reaping of stale entries, and a clean stop.
//!
//! Each test has its own state dir (`XDG_STATE_HOME`), so tests running in parallel never see
//! each other's sessions. A test learns a session's port from the ready line `once serve` prints
//! on stderr once its entry is published (see `support::Serve`); every wait is bounded, and every
//! `once serve` is killed by its guard even when the test fails.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::support::{
    Mcp, PATIENCE, Serve, TempDir, Test, attach_command, once_binary, output_within,
};

const MANIFEST: &str = "[targets.core]\nkind = \"cargo-package\"\n";

/// A workspace and a state dir of its own.
fn workspace() -> (Test, TempDir) {
    (Test::new().manifest(MANIFEST), TempDir::new())
}

fn workspace_of(reply: &Value) -> String {
    reply["result"]["_meta"]["dev.once/workspace"]
        .as_str()
        .unwrap_or_else(|| panic!("no workspace in {reply}"))
        .to_string()
}

/// A raw connection to the session, with a read timeout so a test can never hang on it.
fn connect(port: u16) -> TcpStream {
    let stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).expect("connects");
    stream
        .set_read_timeout(Some(PATIENCE))
        .expect("sets a timeout");
    stream
}

/// Everything the session sends until it closes the connection.
fn read_to_close(stream: &mut TcpStream) -> String {
    let mut text = String::new();
    stream
        .read_to_string(&mut text)
        .expect("the session closes the connection in time");
    text
}

fn error_line(text: &str) -> Value {
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "one error line, then close: {text:?}");
    let reply: Value = serde_json::from_str(lines[0]).expect("a JSON line");
    assert_eq!(reply["id"], Value::Null, "{reply}");
    reply
}

fn token(serve: &Serve) -> String {
    serve.entry()["token"]
        .as_str()
        .expect("a token")
        .to_string()
}

/// The session still serves a proper client after whatever the test did to it.
fn assert_serves(state: &Path, root: &Path) {
    let mut client = Mcp::attach(state, Some(root));
    let reply = client.initialize();
    assert_eq!(workspace_of(&reply), root.display().to_string());
    assert_eq!(
        client.request(1, "ping", json!({})),
        json!({"jsonrpc": "2.0", "id": 1, "result": {}})
    );
}

#[test]
fn attach_by_folder_through_a_symlink_and_by_default() {
    let (test, state) = workspace();
    let _serve = Serve::start(test.root(), state.path(), &[]);

    let mut only = Mcp::attach(state.path(), None);
    assert_eq!(
        workspace_of(&only.initialize()),
        test.root().display().to_string()
    );
    only.close_stdin();
    assert_eq!(
        only.wait(PATIENCE).0,
        Some(0),
        "the bridge exits 0 at end of input"
    );

    let link_dir = TempDir::new();
    let link = link_dir.path().join("shop");
    symlink(test.root(), &link).expect("links");
    let mut by_link = Mcp::attach(state.path(), Some(&link));
    assert_eq!(
        workspace_of(&by_link.initialize()),
        test.root().display().to_string()
    );
}

#[test]
fn several_sessions_need_a_folder_and_the_error_lists_them() {
    let (shop, state) = workspace();
    let blog = Test::new().manifest(MANIFEST);
    let first = Serve::start(shop.root(), state.path(), &[]);
    let second = Serve::start(blog.root(), state.path(), &[]);

    let output = output_within(attach_command(state.path(), None));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(output.stdout.is_empty());
    assert!(stderr.contains("2 live sessions"), "{stderr}");
    for serve in [&first, &second] {
        assert!(stderr.contains(&format!("pid {}", serve.pid())), "{stderr}");
        assert!(stderr.contains(&format!("port {}", serve.port)), "{stderr}");
    }
    assert!(
        stderr.contains(&shop.root().display().to_string()),
        "{stderr}"
    );
    assert!(
        stderr.contains(&blog.root().display().to_string()),
        "{stderr}"
    );

    let mut client = Mcp::attach(state.path(), Some(blog.root()));
    assert_eq!(
        workspace_of(&client.initialize()),
        blog.root().display().to_string()
    );
}

#[test]
fn with_no_session_the_error_says_how_to_start_one() {
    let (test, state) = workspace();
    for dir in [None, Some(test.root())] {
        let output = output_within(attach_command(state.path(), dir));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(output.stdout.is_empty(), "nothing but protocol on stdout");
        assert!(stderr.contains("once serve"), "{stderr}");
    }
}

#[test]
fn a_second_session_of_one_workspace_is_refused() {
    let (test, state) = workspace();
    let first = Serve::start(test.root(), state.path(), &[]);
    let stderr = match Serve::try_start(test.root(), state.path(), &[]) {
        Ok(_) => panic!("two sessions serve one workspace"),
        Err(stderr) => stderr,
    };
    assert!(stderr.contains("a session already serves"), "{stderr}");
    assert!(stderr.contains(&format!("pid {}", first.pid())), "{stderr}");
}

#[test]
fn the_registry_file_is_private_and_complete_and_never_listed_with_its_token() {
    let (test, state) = workspace();
    let serve = Serve::start(test.root(), state.path(), &[]);
    let entry = serve.entry();
    let folder = state.path().join("once/mcp");
    let mode = |path: &Path| std::fs::metadata(path).expect("stat").mode() & 0o777;
    assert_eq!(mode(&folder), 0o700);
    assert_eq!(mode(&serve.entry_path()), 0o600);

    assert_eq!(entry["pid"], serve.pid());
    assert_eq!(entry["port"], serve.port);
    assert_eq!(entry["workspace"], test.root().display().to_string());
    assert_eq!(entry["version"], env!("CARGO_PKG_VERSION"));
    assert!(entry["start_time"].as_u64().is_some(), "{entry}");
    assert!(
        entry["started_at"]
            .as_u64()
            .is_some_and(|t| t > 1_600_000_000),
        "{entry}"
    );
    let token = token(&serve);
    assert_eq!(token.len(), 32, "{token}");
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()), "{token}");

    let mut sessions = Command::new(once_binary());
    sessions
        .args(["sessions", "--json"])
        .env("XDG_STATE_HOME", state.path());
    let output = output_within(sessions);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(
        !stdout.contains(&token),
        "the listing shows the token: {stdout}"
    );
    let listed: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(listed[0]["pid"], serve.pid());
    assert_eq!(listed[0]["port"], serve.port);
    assert_eq!(listed.as_array().map(Vec::len), Some(1));
}

#[test]
fn a_missing_or_wrong_token_is_refused_and_closed() {
    let (test, state) = workspace();
    let serve = Serve::start(test.root(), state.path(), &[]);
    let right = token(&serve);
    let wrong: String = right
        .chars()
        .map(|c| if c == '0' { '1' } else { '0' })
        .collect();
    let initialize = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}"#;

    for (first_line, expected) in [
        (
            format!("{{\"once_token\":\"{wrong}\"}}\n{initialize}\n"),
            "wrong session token",
        ),
        (format!("{initialize}\n"), "the first line must be"),
        (
            format!("token {right}\n{initialize}\n"),
            "the first line must be",
        ),
    ] {
        let mut stream = connect(serve.port);
        stream.write_all(first_line.as_bytes()).expect("writes");
        let reply = error_line(&read_to_close(&mut stream));
        assert_eq!(reply["error"]["code"], -32001, "{reply}");
        let message = reply["error"]["message"].as_str().expect("a message");
        assert!(message.contains(expected), "{message}");
        assert!(!message.contains(&right), "the refusal leaks the token");
    }

    // Saying nothing at all is refused after the first-line timeout, not held forever.
    let mut silent = connect(serve.port);
    let reply = error_line(&read_to_close(&mut silent));
    assert!(
        reply["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no session token")),
        "{reply}"
    );
    assert_serves(state.path(), test.root());
}

#[test]
fn http_without_credentials_is_forbidden() {
    let (test, state) = workspace();
    let serve = Serve::start(test.root(), state.path(), &[]);
    for request in [
        format!(
            "GET /api/session HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n",
            serve.port
        ),
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: 2\r\n\r\n{}"
            .into(),
        "OPTIONS * HTTP/1.1\r\nHost: evil.example\r\nOrigin: http://evil.example\r\n\r\n".into(),
    ] {
        let mut stream = connect(serve.port);
        stream.write_all(request.as_bytes()).expect("writes");
        let response = read_to_close(&mut stream);
        assert!(
            response.starts_with("HTTP/1.1 403 Forbidden\r\n"),
            "{response:?}"
        );
        assert!(!response.contains("jsonrpc"), "{response:?}");
    }
    assert_serves(state.path(), test.root());
}

#[test]
fn a_second_client_gets_busy_and_the_first_keeps_working() {
    let (test, state) = workspace();
    let _serve = Serve::start(test.root(), state.path(), &[]);
    let mut first = Mcp::attach(state.path(), None);
    first.initialize();

    let mut second = Mcp::attach(state.path(), None);
    let busy = second.recv();
    assert_eq!(busy["id"], Value::Null, "{busy}");
    assert_eq!(busy["error"]["code"], -32000, "{busy}");
    let message = busy["error"]["message"].as_str().expect("a message");
    assert!(
        message.starts_with("busy: this session already serves a client"),
        "{message}"
    );
    assert!(
        message.contains(&format!("pid {}", first.pid())),
        "names the holder: {message}"
    );
    assert!(message.contains("connected"), "{message}");
    let (code, rest) = second.wait(PATIENCE);
    assert_eq!(
        code,
        Some(1),
        "a refused bridge fails, so whoever started it sees that it is not connected"
    );
    assert!(rest.is_empty(), "{rest:?}");

    assert_eq!(
        first.request(1, "ping", json!({})),
        json!({"jsonrpc": "2.0", "id": 1, "result": {}})
    );
    let tools = first.request(2, "tools/list", json!({}));
    assert!(
        tools["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "{tools}"
    );

    // Once the first client leaves, the slot is free again.
    first.close_stdin();
    assert_eq!(first.wait(PATIENCE).0, Some(0));
    assert_serves(state.path(), test.root());
}

#[test]
fn the_bridge_passes_bytes_unchanged() {
    let (test, state) = workspace();
    let _serve = Serve::start(test.root(), state.path(), &[]);
    // Odd spacing, a string id with non-ASCII text, a malformed line, an unknown method: each
    // answer must come back exactly as a direct stdio server writes it.
    let input = concat!(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bytes","version":"0"}}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "\n",
        r#"{ "jsonrpc" : "2.0" , "id" : "é ✓ \u00e9" , "method" : "ping" }"#,
        "\n",
        "{not json\n",
        r#"{"jsonrpc":"2.0","id":3,"method":"no/such/method"}"#,
        "\n",
        // A long answer (the window mode lists one more tool, so not `tools/list`).
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"once_query_schema","arguments":{}}}"#,
        "\n",
    );
    let through_bridge = transcript(attach_command(state.path(), Some(test.root())), input);
    let mut direct = Command::new(once_binary());
    direct.arg("-C").arg(test.root()).arg("mcp");
    let direct = transcript(direct, input);

    assert_eq!(
        String::from_utf8_lossy(&through_bridge),
        String::from_utf8_lossy(&direct)
    );
    let text = String::from_utf8(through_bridge).expect("UTF-8");
    let parse_error: Value = serde_json::from_str(
        text.lines()
            .find(|l| l.contains("-32700"))
            .expect("the parse error came back"),
    )
    .expect("JSON");
    assert_eq!(parse_error["id"], Value::Null);
    assert!(text.contains(r#""id":"é ✓ é""#), "{text}");
}

/// Feeds `input` to a stdio MCP process, closes its stdin, and returns all it wrote to stdout.
fn transcript(mut command: Command, input: &str) -> Vec<u8> {
    let mut server = Mcp::from_command({
        command.env_remove("ONCE_LOG");
        command
    });
    for line in input.lines() {
        server.send(line);
    }
    server.close_stdin();
    let (code, lines) = server.wait(PATIENCE);
    assert_eq!(code, Some(0));
    lines
        .iter()
        .flat_map(|line| format!("{line}\n").into_bytes())
        .collect()
}

#[test]
fn stale_entries_are_reaped_by_attach_and_by_serve() {
    let (test, state) = workspace();
    let folder = state.path().join("once/mcp");
    std::fs::create_dir_all(&folder).expect("mkdir");
    let dead_pid = {
        let mut child = Command::new("true").spawn().expect("spawns");
        let pid = child.id();
        child.wait().expect("waits");
        pid
    };
    // Our own pid is alive, but its start time is not the one recorded: a reused pid.
    let reused_pid = std::process::id();
    let write_stale = || {
        for pid in [dead_pid, reused_pid] {
            let entry = json!({
                "pid": pid, "start_time": 1, "port": 9, "workspace": test.root(),
                "version": "0.0.0", "token": "00".repeat(16), "started_at": 1,
            });
            std::fs::write(folder.join(format!("{pid}.json")), entry.to_string()).expect("writes");
        }
    };
    let stale = |pid: u32| folder.join(format!("{pid}.json")).exists();

    write_stale();
    let output = output_within(attach_command(state.path(), None));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(1),
        "nothing live to attach to: {stderr}"
    );
    assert!(stderr.contains("no live"), "{stderr}");
    assert!(!stale(dead_pid) && !stale(reused_pid), "attach reaps");

    write_stale();
    let serve = Serve::start(test.root(), state.path(), &[]);
    assert!(!stale(dead_pid) && !stale(reused_pid), "serve reaps");
    assert!(serve.entry_path().exists());
}

const SLOW: &str = "[targets.slow]\nkind = \"command\"\n\n\
                    [targets.slow.capabilities.build]\ncommand = \"sleep 30\"\n";

/// Starts `slow:build` through `client` without waiting for the answer, and waits (bounded) until
/// its process runs under the session.
fn start_slow_run(client: &mut Mcp, root: &std::path::Path, serve_pid: i32) {
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "once_run", "arguments": {"target": "slow:build"}}});
    client.send(&call.to_string());
    // Started means recorded as running (the record is written before any process starts) and
    // its process up: a child of the session alone could be something else the session runs.
    wait_until("the run's record and its process", || {
        run_recorded(root) && !children_of_session(serve_pid).is_empty()
    });
}

/// Whether a run's record exists under `root` (`.once/runs/ID/run.json`).
fn run_recorded(root: &std::path::Path) -> bool {
    std::fs::read_dir(root.join(".once/runs")).is_ok_and(|runs| {
        runs.flatten()
            .any(|run| run.path().join("run.json").is_file())
    })
}

/// Polls `condition` until it holds, failing the test after [`PATIENCE`].
pub(crate) fn wait_until(what: &str, condition: impl Fn() -> bool) {
    let end = std::time::Instant::now() + PATIENCE;
    while !condition() {
        assert!(
            std::time::Instant::now() < end,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The running processes of the session other than `once serve` itself (zombies excluded, as
/// in the SIGTERM test).
pub(crate) fn children_of_session(serve_pid: i32) -> Vec<i32> {
    let mut pids = processes_in_session(serve_pid);
    pids.retain(|pid| {
        *pid != serve_pid
            && std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                !stat
                    .rsplit_once(')')
                    .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
            })
    });
    pids
}

#[test]
fn sigterm_removes_the_entry_and_leaves_no_process_behind() {
    let test = Test::new().manifest(SLOW);
    let state = TempDir::new();
    let mut serve = Serve::start(test.root(), state.path(), &["--allow-run"]);
    let pid = serve.pid();
    let entry = serve.entry_path();
    let mut client = Mcp::attach(state.path(), None);
    client.initialize();
    start_slow_run(&mut client, test.root(), pid);
    assert!(entry.exists());

    assert_eq!(serve.stop_with(libc::SIGTERM), Some(143));
    assert!(!entry.exists(), "the entry outlived the session");
    let (code, _) = client.wait(PATIENCE);
    assert_eq!(code, Some(0), "the bridge exits 0 when the session goes");
    // A grandchild killed with its group is reparented to PID 1 and stays a zombie until PID 1
    // reaps it: dead, but still listed. Only a process that still runs is a leak.
    let left: Vec<String> = processes_in_session(pid)
        .iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).ok())
        .filter(|stat| {
            !stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .collect();
    assert!(
        left.is_empty(),
        "processes of the session outlived it: {left:?}"
    );
    // The run the session owned recorded its end before the session left.
    let runs = crate::run_record::query_runs(test.root(), &[]);
    assert_eq!(runs["runs"][0]["status"], "interrupted", "{runs}");
}

#[test]
fn a_client_that_disconnects_mid_run_has_its_run_stopped() {
    let test = Test::new().manifest(SLOW);
    let state = TempDir::new();
    let serve = Serve::start(test.root(), state.path(), &["--allow-run"]);
    let mut client = Mcp::attach(state.path(), None);
    client.initialize();
    start_slow_run(&mut client, test.root(), serve.pid());

    client.close_stdin();
    assert_eq!(client.wait(PATIENCE).0, Some(0));
    wait_until("the run to stop", || {
        children_of_session(serve.pid()).is_empty()
    });
    // The session itself goes on, ready for the next client.
    assert!(serve.entry_path().exists());
    assert_serves(state.path(), test.root());
}

#[test]
fn a_client_that_vanishes_mid_run_and_comes_back_at_once_is_served() {
    // An action that takes its time to stop: it notes the TERM and goes on until the KILL that
    // follows the grace period, so the cancelled call returns only seconds after the client left.
    let test = Test::new();
    let told = test.root().join("told");
    let armed = test.root().join("armed");
    let manifest = format!(
        "[targets.stubborn]\nkind = \"command\"\n\n[targets.stubborn.capabilities.build]\n\
         command = \"trap 'touch {}' TERM; touch {}; while :; do sleep 0.05; done\"\n",
        told.display(),
        armed.display()
    );
    let test = test.manifest(&manifest);
    let state = TempDir::new();
    let serve = Serve::start(test.root(), state.path(), &["--allow-run"]);
    let mut client = Mcp::attach(state.path(), None);
    client.initialize();
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "once_run", "arguments": {"target": "stubborn:build"}}});
    client.send(&call.to_string());
    // Its trap is set before it says so: a TERM from now on is noted.
    wait_until("the action to set its trap", || armed.exists());

    // The host kills its client without a word, and starts a new one as soon as the old run
    // was told to stop.
    // SAFETY: a signal to our own child, not yet reaped.
    assert_eq!(unsafe { libc::kill(client.pid(), libc::SIGKILL) }, 0);
    wait_until("the run to be told to stop", || told.exists());
    let mut again = Mcp::attach(state.path(), None);
    let reply = again.initialize();
    assert!(
        reply["result"]["serverInfo"].is_object(),
        "the slot was freed when the call was cancelled, not when it returned: {reply}"
    );
    again.close_stdin();
    assert_eq!(again.wait(PATIENCE).0, Some(0));
    let _ = client.wait(PATIENCE);
    wait_until("the stubborn run to be killed", || {
        children_of_session(serve.pid()).is_empty()
    });
}

/// The processes whose session id is `sid` (field 6 of `/proc/<pid>/stat`).
fn processes_in_session(sid: i32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .expect("reads /proc")
        .flatten()
        .filter_map(|item| {
            let pid: i32 = item.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(item.path().join("stat")).ok()?;
            let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
            (fields.get(3)?.parse::<i32>().ok()? == sid).then_some(pid)
        })
        .collect()
}

#[test]
fn sessions_lists_live_sessions_as_text() {
    let (test, state) = workspace();
    let serve = Serve::start(test.root(), state.path(), &[]);
    for args in [&["sessions"][..], &["serve", "--status"]] {
        let mut command = Command::new(once_binary());
        command.args(args).env("XDG_STATE_HOME", state.path());
        let output = output_within(command);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{stdout}");
        let row = stdout.lines().nth(1).expect("a row under the header");
        assert!(row.starts_with(&serve.pid().to_string()), "{stdout}");
        assert!(row.contains(&serve.port.to_string()), "{stdout}");
        assert!(
            row.ends_with(&test.root().display().to_string()),
            "{stdout}"
        );
    }
}

/// A connection that sends one byte of a first line every `every`, from its own thread, until it
/// is closed or `stop` is set; bounded to [`PATIENCE`] in all.
fn trickle(
    port: u16,
    every: std::time::Duration,
    stop: &std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> (TcpStream, std::thread::JoinHandle<()>) {
    let stream = connect(port);
    let mut writer = stream.try_clone().expect("clones the socket");
    let stop = std::sync::Arc::clone(stop);
    let thread = std::thread::spawn(move || {
        let started = std::time::Instant::now();
        while !stop.load(std::sync::atomic::Ordering::SeqCst) && started.elapsed() < PATIENCE {
            if writer.write_all(b"{").is_err() {
                return;
            }
            // Pacing the trickle is the attack itself, not a wait for something to happen.
            std::thread::sleep(every);
        }
    });
    (stream, thread)
}

#[test]
fn a_trickling_first_line_is_cut_at_one_deadline() {
    let (test, state) = workspace();
    let serve = Serve::start(test.root(), state.path(), &[]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let started = std::time::Instant::now();
    // One byte every 300 ms never lets a per-read timeout expire; the deadline counts from accept.
    let (mut stream, thread) = trickle(serve.port, std::time::Duration::from_millis(300), &stop);
    let text = read_to_close(&mut stream);
    let elapsed = started.elapsed();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    thread.join().expect("the trickle thread ends");
    let reply = error_line(&text);
    assert_eq!(reply["error"]["code"], -32001, "{reply}");
    assert!(
        elapsed < std::time::Duration::from_secs(8),
        "the connection was held {elapsed:?}"
    );
    assert_serves(state.path(), test.root());
}

#[test]
fn trickling_connections_never_keep_the_owner_out() {
    let (test, state) = workspace();
    let serve = Serve::start(test.root(), state.path(), &[]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let tricklers: Vec<_> = (0..16)
        .map(|_| trickle(serve.port, std::time::Duration::from_millis(250), &stop))
        .collect();
    let mut client = Mcp::attach(state.path(), Some(test.root()));
    let started = std::time::Instant::now();
    let reply = client.initialize();
    let elapsed = started.elapsed();
    assert_eq!(
        workspace_of(&reply),
        test.root().display().to_string(),
        "{reply}"
    );
    assert!(
        elapsed < std::time::Duration::from_secs(1),
        "initialize took {elapsed:?} behind 16 trickling connections"
    );
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for (stream, thread) in tricklers {
        drop(stream);
        thread.join().expect("a trickle thread ends");
    }
    client.close_stdin();
    assert_eq!(client.wait(PATIENCE).0, Some(0));
}
