//! `once mcp` as a real process: the handshake, the same values as the CLI, a graph that follows
//! manifest edits, and a prompt, clean exit on end of input and 128+N on signal N.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Mcp, Test};

const MANIFEST: &str = r#"
[targets.core]
kind = "cargo-package"

[targets.web]
kind = "npm-package"
deps = ["core"]
"#;

/// The bound the issue sets for a stop: exit within a second.
const STOP_LIMIT: Duration = Duration::from_secs(1);

#[test]
fn initialize_names_the_server_and_the_workspace() {
    let test = Test::new().manifest(MANIFEST);
    let mut server = Mcp::spawn(test.root(), &[]);
    let reply = server.initialize();
    let result = &reply["result"];
    assert_eq!(result["protocolVersion"], "2025-11-25");
    assert_eq!(result["serverInfo"]["name"], "once-mcp");
    assert_eq!(result["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        result["_meta"]["dev.once/workspace"],
        test.root().display().to_string()
    );
    assert!(result["capabilities"]["tools"].is_object());
    let instructions = result["instructions"].as_str().expect("instructions");
    assert!(
        instructions.contains("once_query_workspace"),
        "{instructions}"
    );
    assert!(instructions.contains("--allow-run"), "{instructions}");
}

#[test]
fn a_tool_returns_exactly_what_the_cli_prints() {
    let test = Test::new().manifest(MANIFEST);
    let mut server = Mcp::spawn(test.root(), &[]);
    server.initialize();
    let reply = server.call(1, "once_query_target", json!({"name": "web"}));
    let structured = reply["result"]["structuredContent"]["result"].clone();
    let text: Value = serde_json::from_str(
        reply["result"]["content"][0]["text"]
            .as_str()
            .expect("a text block"),
    )
    .expect("the text is JSON");
    assert_eq!(structured, text);
    let cli = test.args(["query", "target", "web"]).run();
    assert_eq!(cli.json(), structured);
}

#[test]
fn the_graph_follows_manifest_edits() {
    let test = Test::new().manifest(MANIFEST);
    let mut server = Mcp::spawn(test.root(), &[]);
    server.initialize();
    let before = server.call(1, "once_query_target", json!({"name": "docs"}));
    assert_eq!(before["result"]["isError"], true, "{before}");

    let edited = format!("{MANIFEST}\n[targets.docs]\nkind = \"command\"\n");
    std::fs::write(test.root().join("once.toml"), edited).expect("edits the manifest");
    let after = server.call(2, "once_query_target", json!({"name": "docs"}));
    assert_eq!(
        after["result"]["structuredContent"]["result"]["name"], "docs",
        "{after}"
    );
}

#[test]
fn a_broken_manifest_is_served_as_diagnostics() {
    let test = Test::new().manifest("[targets.web]\nkind = \"npm-pakage\"\n");
    let mut server = Mcp::spawn(test.root(), &[]);
    server.initialize();
    let overview = server.call(1, "once_query_workspace", json!({}));
    let diagnostics = &overview["result"]["structuredContent"]["result"]["diagnostics"];
    assert_eq!(diagnostics[0]["line"], 2, "{overview}");
    assert!(
        diagnostics[0]["help"]
            .as_str()
            .unwrap_or("")
            .contains("npm-package"),
        "{overview}"
    );

    let refused = server.call(2, "once_query_targets", json!({}));
    assert_eq!(refused["result"]["isError"], true);
    let text = refused["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    assert!(text.contains("once_query_workspace"), "{text}");
}

#[test]
fn end_of_input_stops_the_server_with_status_0() {
    let test = Test::new().manifest(MANIFEST);
    let mut server = Mcp::spawn(test.root(), &[]);
    server.initialize();
    server.close_stdin();
    let (code, rest) = server.wait(STOP_LIMIT);
    assert_eq!(code, Some(0));
    assert!(rest.is_empty(), "{rest:?}");
}

#[test]
fn sigterm_and_sigint_stop_the_server_with_128_plus_the_signal() {
    for (signal, status) in [(libc::SIGTERM, 143), (libc::SIGINT, 130)] {
        let test = Test::new().manifest(MANIFEST);
        let mut server = Mcp::spawn(test.root(), &[]);
        // The handshake proves the handlers are installed: they come before anything else.
        server.initialize();
        // SAFETY: kill(2) on a child this test spawned and has not yet reaped.
        assert_eq!(unsafe { libc::kill(server.pid(), signal) }, 0);
        let (code, _) = server.wait(STOP_LIMIT);
        assert_eq!(code, Some(status), "signal {signal}");
    }
}

/// The signal wakes the serve loop too: a line read after it lets the loop end on its own,
/// racing the signal thread to the exit. Whichever gets there first, the status names the signal.
/// The server is stopped while the signal and the line reach it, so that both threads wake
/// together when it goes on and the race is a fair throw, not the signal thread's head start;
/// several rounds, since each is one throw.
#[test]
fn a_signal_that_the_loop_notices_first_still_exits_with_128_plus_the_signal() {
    for (signal, status) in [(libc::SIGTERM, 143), (libc::SIGINT, 130)] {
        for round in 0..8 {
            let test = Test::new().manifest(MANIFEST);
            let mut server = Mcp::spawn(test.root(), &[]);
            server.initialize();
            // SAFETY: kill(2) on a child this test spawned and has not yet reaped.
            assert_eq!(unsafe { libc::kill(server.pid(), libc::SIGSTOP) }, 0);
            // SAFETY: as above; a stopped process keeps the blocked signal pending.
            assert_eq!(unsafe { libc::kill(server.pid(), signal) }, 0);
            // Wakes the loop, which then sees the shutdown the signal asked for.
            server.send_unless_gone(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
            // SAFETY: as above.
            assert_eq!(unsafe { libc::kill(server.pid(), libc::SIGCONT) }, 0);
            let (code, _) = server.wait(STOP_LIMIT);
            assert_eq!(code, Some(status), "signal {signal}, round {round}");
        }
    }
}

#[test]
fn garbage_does_not_stop_the_loop() {
    let test = Test::new().manifest(MANIFEST);
    let mut server = Mcp::spawn(test.root(), &[]);
    server.initialize();
    server.send("{not json");
    let error = server.recv();
    assert_eq!(error["error"]["code"], -32700);
    assert_eq!(error["id"], Value::Null);
    let pong = server.request(7, "ping", json!({}));
    assert_eq!(pong, json!({"jsonrpc": "2.0", "id": 7, "result": {}}));
}

#[test]
fn once_run_refuses_a_wait_beyond_its_schema_before_running_anything() {
    let test = Test::new().manifest(MANIFEST);
    let mut server = Mcp::spawn(test.root(), &["--allow-run"]);
    server.initialize();
    let reply = server.call(
        1,
        "once_run",
        json!({"target": "core", "wait_seconds": 1_000_000_000_000u64}),
    );
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .expect("a text block");
    assert!(
        text.contains("`wait_seconds`") && text.contains("maximum 3600"),
        "{text}"
    );
    assert!(
        !test.root().join(".once/runs").exists(),
        "a refused call started a run"
    );
}

/// Neither door writes into `.git` or `.once`, nor hashes a file outside the workspace for a
/// memory entry: both go through the same checks as the CLI.
#[test]
fn the_agent_cannot_reach_git_once_or_outside_through_links() {
    let outside = crate::support::TempDir::new();
    std::fs::write(outside.path().join("secret"), "s\n").expect("writes");
    let test = Test::new().manifest(MANIFEST);
    let root = test.root().to_path_buf();
    std::fs::create_dir_all(root.join(".git")).expect("a git folder");
    std::os::unix::fs::symlink(".git", root.join("gitdir")).expect("links");
    std::os::unix::fs::symlink(outside.path(), root.join("out")).expect("links");
    let mut server = Mcp::spawn(&root, &["--allow-edit"]);
    server.initialize();
    for (id, into) in [(1, ".git"), (2, "gitdir"), (3, ".once"), (4, "out")] {
        let reply = server.call(
            id,
            "once_materialize_example",
            json!({"example": "node-package", "into": into}),
        );
        assert_eq!(reply["result"]["isError"], true, "{into}: {reply}");
    }
    assert_eq!(
        std::fs::read_dir(root.join(".git")).expect("reads").count(),
        0
    );
    assert!(!root.join(".once/package.json").exists());
    // BLAKE3 of "s\n", the secret's content.
    let secret_hash = "4b782a407c7b9c61b45298b9180a5675d6f3822deb17f7f95724a3b62c1008ce";
    for (id, path) in [(5, "out/secret"), (6, "gitdir/HEAD")] {
        let reply = server.call(
            id,
            "once_remember",
            json!({"title": "a note", "body": "x", "paths": [path]}),
        );
        assert_eq!(reply["result"]["isError"], true, "{path}: {reply}");
        assert!(!reply.to_string().contains(secret_hash), "{reply}");
    }
    let cli = crate::examples::once(
        &root,
        &[
            "memory",
            "add",
            "--title",
            "a note",
            "--body",
            "x",
            "--path",
            "out/secret",
        ],
        &[],
    );
    assert_eq!(cli.status.code(), Some(1), "{cli:?}");
}

/// A server started over MCP runs past the workspace's deadline and stops, with every process it
/// started, when `once_cancel` names its run.
#[test]
fn once_cancel_stops_a_persistent_server_and_all_it_started() {
    let mark = crate::run::unique_mark();
    let test = Test::new().manifest(&format!(
        r#"
[workspace]
default-deadline = "200ms"

[targets.dev]
kind = "command"
[targets.dev.capabilities.serve]
command = "echo listening > up.txt; (sleep 60) & sleep 60"
env = {{ ONCE_TEST_MARK = "{mark}" }}
persistent = true
"#
    ));
    let mut server = Mcp::spawn(test.root(), &["--allow-run"]);
    server.initialize();
    let started = server.call(
        1,
        "once_run",
        json!({"target": "dev:serve", "wait_seconds": 0}),
    );
    let result = &started["result"]["structuredContent"]["result"];
    assert_eq!(result["status"], "running", "{started}");
    let run_id = result["run_id"].as_str().expect("a run id").to_string();
    crate::run::wait_until("the server's processes", || {
        crate::run::count_marked(&mark) >= 2
    });
    let up = std::fs::metadata(test.root().join("up.txt"))
        .unwrap()
        .modified()
        .unwrap();
    crate::run::wait_until("a second past the start", || {
        up.elapsed().is_ok_and(|age| age.as_millis() > 1000)
    });
    assert!(
        crate::run::count_marked(&mark) >= 2,
        "the server was stopped at a deadline"
    );
    let cancelled = server.call(2, "once_cancel", json!({"run_id": run_id}));
    assert_ne!(cancelled["result"]["isError"], true, "{cancelled}");
    crate::run::wait_until("every process of the server to end", || {
        crate::run::count_marked(&mark) == 0
    });
    let runs = server.call(3, "once_query_runs", json!({"run_id": run_id}));
    let status = &runs["result"]["structuredContent"]["result"]["status"];
    assert_eq!(status, "cancelled", "{runs}");
}
