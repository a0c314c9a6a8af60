//! The window of `once serve`, attacked over real loopback HTTP: the one-time login, the page key,
//! Host, Origin and CSRF checks, oversized and slow requests, the person's decisions on change
//! sets, live events, and `once_window_show`.
//!
//! Requests are written by hand on a `TcpStream`, so a test controls every byte a hostile page or
//! script could send. Every wait is bounded by `PATIENCE`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{
    HttpReply, Mcp, PATIENCE, Serve, TempDir, Test, copy_tree, once_binary, output_within,
};

const MANIFEST: &str = "[targets.core]\nkind = \"command\"\n\n[targets.core.capabilities.build]\ncommand = \"true\"\n\n[targets.web]\nkind = \"command\"\ndeps = [\"core\"]\n\n[targets.web.capabilities.build]\ncommand = \"true\"\n";

type Answer = HttpReply;

/// Sends `raw` on a new connection and reads the answer until the session closes it.
fn exchange(port: u16, raw: &[u8]) -> Answer {
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).expect("connects");
    stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
    stream.write_all(raw).expect("writes");
    let mut bytes = Vec::new();
    stream
        .read_to_end(&mut bytes)
        .expect("the session answers and closes in time");
    HttpReply::parse(&String::from_utf8_lossy(&bytes))
}

/// A request from our own page: right Host, the page key, and for a POST the CSRF token and JSON.
/// Other tests that reach the window as its owner log in with it too.
pub struct Page {
    port: u16,
    key: String,
    csrf: String,
}

impl Page {
    /// Logs in as the page does with the link `once serve` printed: the link's `GET` serves the
    /// page and sets no cookie; the page posts the link's token and keeps the key it gets back.
    pub fn login(serve: &Serve) -> Page {
        let url = serve.login_url();
        Page::login_with(serve.port, &url)
    }

    fn login_with(port: u16, url: &str) -> Page {
        let target = &url[url.find("/?").expect("a path")..];
        let token = url.rsplit_once("login=").expect("a token").1;
        let answer = get(port, target, &[]);
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert!(answer.body.contains("<html"), "{}", answer.body);
        assert_eq!(answer.header("set-cookie"), None, "a login sets no cookie");
        let origin = format!("http://127.0.0.1:{port}");
        let redeemed = post(
            port,
            "/api/login",
            &[("Content-Type", "application/json"), ("Origin", &origin)],
            &json!({ "login": token }).to_string(),
        );
        assert_eq!(redeemed.status, 200, "{}", redeemed.body);
        assert_eq!(
            redeemed.header("set-cookie"),
            None,
            "a login sets no cookie"
        );
        let key = redeemed.json()["key"]
            .as_str()
            .expect("the page key")
            .to_owned();
        let mut page = Page {
            port,
            key,
            csrf: String::new(),
        };
        page.csrf = page.get("/api/session").json()["csrf"]
            .as_str()
            .expect("a csrf token")
            .to_owned();
        page
    }

    pub fn get(&self, path: &str) -> Answer {
        get(self.port, path, &[("X-Once-Key", &self.key)])
    }

    pub fn post(&self, path: &str, body: &Value) -> Answer {
        post(
            self.port,
            path,
            &[
                ("X-Once-Key", &self.key),
                ("X-Once-CSRF", &self.csrf),
                ("Content-Type", "application/json"),
                ("Origin", &format!("http://127.0.0.1:{}", self.port)),
            ],
            &body.to_string(),
        )
    }
}

fn get(port: u16, path: &str, headers: &[(&str, &str)]) -> Answer {
    exchange(port, request("GET", path, port, headers, "").as_bytes())
}

fn post(port: u16, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    exchange(port, request("POST", path, port, headers, body).as_bytes())
}

fn request(method: &str, path: &str, port: u16, headers: &[(&str, &str)], body: &str) -> String {
    let mut text = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        text.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    text
}

fn session() -> (Test, TempDir, Serve) {
    let test = Test::new().manifest(MANIFEST);
    let state = TempDir::new();
    let serve = Serve::start(test.root(), state.path(), &["--allow-edit", "--allow-run"]);
    (test, state, serve)
}

#[test]
fn the_window_opens_only_with_a_login_link_that_works_once() {
    let (_test, state, serve) = session();
    let port = serve.port;
    let url = serve.login_url();
    let token = url.rsplit_once("login=").expect("a token").1.to_owned();
    // The page's own files carry no data and are served to anyone; the API is not.
    let page = get(port, "/", &[]);
    assert_eq!(page.status, 200);
    assert!(page.body.contains("<html"), "{}", page.body);
    let policy = page.header("content-security-policy").expect("a CSP");
    assert!(policy.contains("script-src 'self'"), "{policy}");
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    for path in ["/api/session", "/api/graph"] {
        assert_eq!(get(port, path, &[]).status, 403, "{path} without the key");
    }
    let dead = get(port, "/?login=00112233445566778899aabbccddeeff", &[]);
    assert_eq!(dead.status, 403, "a link that was never made");
    let redeem = |login: &str| {
        post(
            port,
            "/api/login",
            &[("Content-Type", "application/json")],
            &json!({ "login": login }).to_string(),
        )
    };
    assert_eq!(redeem("00112233445566778899aabbccddeeff").status, 403);
    let first = redeem(&token);
    assert_eq!(first.status, 200, "{}", first.body);
    let key = first.json()["key"].as_str().expect("a key").to_owned();
    let second = redeem(&token);
    assert_eq!(second.status, 403, "a login link works once");
    assert!(
        second.body.contains("once sessions --url"),
        "{}",
        second.body
    );
    let used = get(port, &url[url.find("/?").expect("a path")..], &[]);
    assert_eq!(used.status, 403, "a used link is refused on sight");
    assert_eq!(
        get(port, "/api/session", &[("X-Once-Key", &key)]).status,
        200
    );

    // `once sessions --url` asks the session for a new link, which works.
    let mut command = std::process::Command::new(once_binary());
    command
        .args(["sessions", "--url"])
        .env("XDG_STATE_HOME", state.path());
    let asked = output_within(command);
    assert!(asked.status.success(), "{asked:?}");
    let fresh = String::from_utf8(asked.stdout).expect("utf-8");
    let fresh = fresh.trim();
    assert!(
        fresh.starts_with(&format!("http://127.0.0.1:{port}/?login=")),
        "{fresh}"
    );
    let again = Page::login_with(port, fresh);
    assert_eq!(again.key, key, "the page key is the session's");
}

#[test]
fn foreign_hosts_origins_and_posts_without_the_csrf_token_are_refused() {
    let (_test, _state, serve) = session();
    let page = Page::login(&serve);
    let port = serve.port;
    let key = page.key.as_str();
    let rebinding = get(
        port,
        "/api/graph",
        &[("Host", "evil.example"), ("X-Once-Key", key)],
    );
    assert_eq!(rebinding.status, 403, "DNS rebinding: {}", rebinding.body);
    let other_port = get(
        port,
        "/api/graph",
        &[("Host", "127.0.0.1:1"), ("X-Once-Key", key)],
    );
    assert_eq!(other_port.status, 403);
    let foreign = get(
        port,
        "/api/graph",
        &[("Origin", "http://evil.example"), ("X-Once-Key", key)],
    );
    assert_eq!(foreign.status, 403);
    let body = json!({}).to_string();
    let no_csrf = post(
        port,
        "/api/tool/once_query_workspace",
        &[("X-Once-Key", key), ("Content-Type", "application/json")],
        &body,
    );
    assert_eq!(no_csrf.status, 403, "{}", no_csrf.body);
    let wrong_csrf = post(
        port,
        "/api/tool/once_query_workspace",
        &[
            ("X-Once-Key", key),
            ("Content-Type", "application/json"),
            ("X-Once-CSRF", "00112233445566778899aabbccddeeff"),
        ],
        &body,
    );
    assert_eq!(wrong_csrf.status, 403);
    let form = post(
        port,
        "/api/tool/once_query_workspace",
        &[
            ("X-Once-Key", key),
            ("X-Once-CSRF", &page.csrf),
            ("Content-Type", "text/plain"),
        ],
        &body,
    );
    assert_eq!(form.status, 415, "a form post is not JSON");
    // A tool that acts is never reachable from the page, even with the gate open.
    let run = page.post("/api/tool/once_run", &json!({"target": "web"}));
    assert_eq!(run.status, 403, "{}", run.body);
    let fine = page.post("/api/tool/once_query_workspace", &json!({}));
    assert_eq!(fine.status, 200, "{}", fine.body);
    assert_eq!(
        fine.json()["result"]["counts"]["targets"],
        2,
        "{}",
        fine.body
    );
}

#[test]
fn the_graph_has_every_target_and_edge() {
    let (_test, _state, serve) = session();
    let page = Page::login(&serve);
    let graph = page.get("/api/graph").json();
    let names: Vec<&str> = graph["targets"]
        .as_array()
        .expect("targets")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["core", "web"]);
    assert_eq!(
        graph["edges"],
        json!([{"from": "web", "to": "core", "kinds": ["declared"], "orders": true}])
    );
}

#[test]
fn oversized_malformed_and_chunked_requests_get_a_status_and_a_close() {
    let (test, state, serve) = session();
    let port = serve.port;
    let huge_head = format!(
        "GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Pad: {}\r\n\r\n",
        "a".repeat(20_000)
    );
    assert_eq!(exchange(port, huge_head.as_bytes()).status, 431);
    let huge_body = format!(
        "POST /api/tool/x HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 999999999\r\n\r\n"
    );
    assert_eq!(exchange(port, huge_body.as_bytes()).status, 413);
    let chunked = format!(
        "POST /api/tool/x HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    );
    assert_eq!(exchange(port, chunked.as_bytes()).status, 411);
    let garbage = "GET /\u{0}\u{1} HTTP/1.1\r\n\r\n";
    assert_eq!(exchange(port, garbage.as_bytes()).status, 400);
    // The MCP door still serves its owner.
    let mut client = Mcp::attach(state.path(), Some(test.root()));
    client.initialize();
}

#[test]
fn a_request_that_trickles_is_cut_at_its_deadline_and_the_owner_still_gets_in() {
    let (test, state, serve) = session();
    let mut slow = TcpStream::connect((Ipv4Addr::LOCALHOST, serve.port)).expect("connects");
    slow.set_read_timeout(Some(PATIENCE * 2)).expect("timeout");
    slow.write_all(b"GET / HTTP/1.1\r\nHost: ").expect("writes");
    let started = Instant::now();
    // Meanwhile the owner attaches and is served.
    let mut client = Mcp::attach(state.path(), Some(test.root()));
    client.initialize();
    // One byte at a time, never finishing the head: the session answers 408 and closes.
    let mut answer = Vec::new();
    loop {
        if slow.write_all(b"x").is_err() {
            break;
        }
        let mut buffer = [0u8; 256];
        slow.set_read_timeout(Some(Duration::from_millis(500)))
            .expect("timeout");
        match slow.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buffer[..n]),
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(error) if error.kind() == std::io::ErrorKind::TimedOut => {}
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
        assert!(
            started.elapsed() < PATIENCE * 2,
            "the trickling request was never cut"
        );
    }
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 408 "), "{text:?}");
}

/// Proposes a change set over MCP; returns its id.
fn propose(client: &mut Mcp, id: u64, path: &str, content: &str, base: Option<&str>) -> String {
    let mut change = json!({"action": if base.is_some() { "replace" } else { "create" }, "path": path, "content": content});
    if let Some(base) = base {
        change["base_blake3"] = json!(base);
    }
    let reply = client.call(
        id,
        "once_change_set_propose",
        json!({"title": format!("change {path}"), "rationale": "a test", "changes": [change]}),
    );
    reply["result"]["structuredContent"]["result"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("a change set id in {reply}"))
        .to_owned()
}

fn blake3_hex(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

#[test]
fn the_person_applies_and_rejects_change_sets_with_the_rules_of_once_changes() {
    let (test, state, serve) = session();
    std::fs::write(test.root().join("notes.txt"), "old\n").expect("writes");
    let mut client = Mcp::attach(state.path(), Some(test.root()));
    client.initialize();
    let applied = propose(&mut client, 2, "new.txt", "made\n", None);
    let rejected = propose(&mut client, 3, "other.txt", "never\n", None);
    let moved = propose(
        &mut client,
        4,
        "notes.txt",
        "new\n",
        Some(&blake3_hex(b"old\n")),
    );
    let page = Page::login(&serve);

    let list = page.get("/api/changes").json();
    assert_eq!(
        list["change_sets"].as_array().map(Vec::len),
        Some(3),
        "{list}"
    );
    let shown = page.get(&format!("/api/changes/{applied}")).json();
    assert!(
        shown["diff"].as_str().is_some_and(|d| d.contains("+made")),
        "{shown}"
    );

    let done = page.post(&format!("/api/changes/{applied}/apply"), &json!({}));
    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!(done.json()["outcome"], "done");
    assert_eq!(
        std::fs::read_to_string(test.root().join("new.txt")).expect("applied"),
        "made\n"
    );
    let again = page.post(&format!("/api/changes/{applied}/apply"), &json!({}));
    assert_eq!(again.status, 409, "applied twice: {}", again.body);

    let no = page.post(
        &format!("/api/changes/{rejected}/reject"),
        &json!({"reason": "not needed"}),
    );
    assert_eq!(no.status, 200, "{}", no.body);
    assert!(!test.root().join("other.txt").exists());
    let record = page.get(&format!("/api/changes/{rejected}")).json();
    assert_eq!(record["set"]["status"], "rejected", "{record}");
    assert!(record.to_string().contains("not needed"), "{record}");

    std::fs::write(test.root().join("notes.txt"), "someone else\n").expect("writes");
    let refused = page.post(&format!("/api/changes/{moved}/apply"), &json!({}));
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert_eq!(refused.json()["outcome"], "refused");
    assert!(
        refused.json()["message"]
            .as_str()
            .is_some_and(|m| m.contains("notes.txt")),
        "{}",
        refused.body
    );
    assert_eq!(
        std::fs::read_to_string(test.root().join("notes.txt")).expect("still there"),
        "someone else\n",
        "a refused set writes nothing"
    );
    assert_eq!(page.get("/api/changes/no-such-set").status, 404);
    // Ids that try to name a path are unknown ids, whatever their spelling.
    for id in ["..", "%2e%2e", "..%2f..%2fetc", "%00"] {
        assert_eq!(page.get(&format!("/api/changes/{id}")).status, 404, "{id}");
        assert_eq!(
            page.post(&format!("/api/changes/{id}/apply"), &json!({}))
                .status,
            404,
            "{id}"
        );
    }
}

/// An open event stream: reads `event:`/`data:` pairs with a deadline.
pub struct Events {
    reader: BufReader<TcpStream>,
}

impl Events {
    pub fn open(page: &Page) -> Events {
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, page.port)).expect("connects");
        stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
        let raw = request(
            "GET",
            "/api/events",
            page.port,
            &[("X-Once-Key", &page.key)],
            "",
        );
        stream.write_all(raw.as_bytes()).expect("writes");
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        reader.read_line(&mut line).expect("a status line");
        assert!(line.starts_with("HTTP/1.1 200"), "{line}");
        loop {
            line.clear();
            reader.read_line(&mut line).expect("a header");
            if line == "\r\n" {
                break;
            }
        }
        Events { reader }
    }

    /// The next event, skipping comments.
    fn next(&mut self) -> (String, Value) {
        let (mut name, mut data) = (String::new(), String::new());
        loop {
            let mut line = String::new();
            let read = self.reader.read_line(&mut line).expect("an event in time");
            assert!(read > 0, "the stream ended");
            let line = line.trim_end();
            if line.is_empty() && !data.is_empty() {
                return (name, serde_json::from_str(&data).expect("JSON data"));
            }
            if let Some(rest) = line.strip_prefix("event: ") {
                name = rest.to_owned();
            } else if let Some(rest) = line.strip_prefix("data: ") {
                data.push_str(rest);
            }
        }
    }

    /// Waits for the event `name` whose data has `key` = `value`.
    fn wait_for(&mut self, name: &str, key: &str, value: &str) -> Duration {
        let started = Instant::now();
        loop {
            assert!(
                started.elapsed() < PATIENCE,
                "no {name} {key}={value} in time"
            );
            let (event, data) = self.next();
            if event == name && data[key] == value {
                return started.elapsed();
            }
        }
    }
}

fn memory_add(root: &Path, title: &str) {
    let mut command = std::process::Command::new(once_binary());
    command.arg("-C").arg(root).args([
        "memory",
        "add",
        "--title",
        title,
        "--body",
        "from the terminal",
    ]);
    let added = output_within(command);
    assert!(added.status.success(), "{added:?}");
}

#[test]
fn an_open_page_hears_what_changed_and_where_the_agent_points() {
    let (test, state, serve) = session();
    let mut client = Mcp::attach(state.path(), Some(test.root()));
    client.initialize();
    // No page yet: the agent learns the person saw nothing.
    let unseen = client.call(
        2,
        "once_window_show",
        json!({"kind": "target", "id": "web"}),
    );
    assert_eq!(
        unseen["result"]["structuredContent"]["outcome"], "none",
        "{unseen}"
    );

    let page = Page::login(&serve);
    // Once the stream is open the watcher has its baseline: a change made at once is heard.
    let mut events = Events::open(&page);
    memory_add(test.root(), "A note from the terminal");
    let took = events.wait_for("changed", "what", "memory");
    eprintln!("memory entry -> page event: {took:?}");

    let shown = client.call(
        3,
        "once_window_show",
        json!({"kind": "target", "id": "web"}),
    );
    assert_eq!(
        shown["result"]["structuredContent"]["outcome"], "done",
        "{shown}"
    );
    let (name, data) = events.next();
    assert_eq!(
        (name.as_str(), &data),
        ("focus", &json!({"kind": "target", "id": "web"}))
    );

    let unknown = client.call(
        4,
        "once_window_show",
        json!({"kind": "run", "id": "../../etc"}),
    );
    assert_eq!(
        unknown["result"]["structuredContent"]["outcome"], "refused",
        "{unknown}"
    );

    let ran = client.call(5, "once_run", json!({"target": "web"}));
    assert!(ran["result"].is_object(), "{ran}");
    let took = events.wait_for("changed", "what", "runs");
    eprintln!("run over MCP -> page event: {took:?}");

    let grown = format!(
        "{MANIFEST}\n[targets.docs]\nkind = \"command\"\n\n[targets.docs.capabilities.build]\ncommand = \"true\"\n"
    );
    std::fs::write(test.root().join("once.toml"), grown).expect("writes");
    events.wait_for("changed", "what", "graph");
    let graph = page.get("/api/graph").json();
    assert_eq!(
        graph["targets"].as_array().map(Vec::len),
        Some(3),
        "{graph}"
    );
}

#[test]
fn the_evaluators_transcript_reaches_the_page_as_it_grows() {
    let test = Test::new().manifest(
        "[targets.py]\nkind = \"command\"\n[targets.py.evaluator]\nlanguage = \"python\"\n",
    );
    let state = TempDir::new();
    let serve = Serve::start(test.root(), state.path(), &["--allow-run"]);
    let page = Page::login(&serve);
    assert_eq!(
        page.get("/api/evaluators").json(),
        json!({"evaluators": []})
    );
    let mut events = Events::open(&page);

    let mut client = Mcp::attach(state.path(), Some(test.root()));
    client.initialize();
    let reply = client.call(
        2,
        "once_eval",
        json!({"target": "py", "code": "print('hi')\n6 * 7"}),
    );
    assert_eq!(
        reply["result"]["structuredContent"]["outcome"], "done",
        "{reply}"
    );
    events.wait_for("changed", "what", "evaluators");
    let shown = page.get("/api/evaluators").json();
    let py = &shown["evaluators"][0];
    assert_eq!(py["target"], "py", "{shown}");
    assert_eq!(py["running"], true, "{shown}");
    let entry = &py["entries"][0];
    assert_eq!(entry["code"], "print('hi')\n6 * 7", "{shown}");
    assert_eq!(entry["value"], "42", "{shown}");
    assert_eq!(entry["output"], "hi\n", "{shown}");
}

#[test]
fn the_graph_of_a_real_workspace_is_what_once_query_graph_says() {
    // A trimmed copy of vite's pnpm workspace (MIT, see its LICENSE and SOURCE), with no
    // once.toml: what the page draws is what discovery infers, target for target, edge for edge.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../once-graph/testdata/discover/javascript-vite");
    let ws = TempDir::new();
    copy_tree(&fixture, ws.path());
    let state = TempDir::new();
    let serve = Serve::start(ws.path(), state.path(), &[]);
    let page = Page::login(&serve);
    let drawn = page.get("/api/graph").json();

    let mut command = std::process::Command::new(once_binary());
    command.arg("-C").arg(ws.path()).args(["query", "graph"]);
    let queried = output_within(command);
    assert!(queried.status.success(), "{queried:?}");
    let queried: Value = serde_json::from_slice(&queried.stdout).expect("JSON");

    let names = |graph: &Value| -> Vec<String> {
        graph["targets"]
            .as_array()
            .expect("targets")
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    };
    assert!(names(&drawn).len() > 20, "{drawn}");
    assert_eq!(names(&drawn), names(&queried));
    assert_eq!(drawn["edges"], queried["edges"]);
}

#[test]
fn open_hands_a_working_login_link_to_the_opener() {
    // A stand-in `xdg-open` that records what it was given, first on PATH.
    let bin = TempDir::new();
    let opened = bin.path().join("opened");
    let opener = bin.path().join("xdg-open");
    std::fs::write(
        &opener,
        format!("#!/bin/sh\nprintf '%s' \"$1\" > {}\n", opened.display()),
    )
    .expect("writes the opener");
    std::fs::set_permissions(&opener, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let path = std::env::join_paths(std::iter::once(bin.path().to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("a PATH");
    let test = Test::new().manifest(MANIFEST);
    let state = TempDir::new();
    let serve = Serve::start_with(
        test.root(),
        state.path(),
        &["--open"],
        &[("PATH", Path::new(&path))],
    );
    let printed = serve.login_url();
    let started = Instant::now();
    let url = loop {
        if let Ok(url) = std::fs::read_to_string(&opened)
            && !url.is_empty()
        {
            break url;
        }
        assert!(started.elapsed() < PATIENCE, "the opener was never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    // The opener gets the link the person sees, and it logs a browser in.
    assert_eq!(url, printed);
    let page = Page::login_with(serve.port, &url);
    assert_eq!(page.get("/api/session").status, 200);
}

/// What a browser keeps from a login and sends on its own to every port of 127.0.0.1 is its
/// cookies (`SameSite` treats all those ports as one site). Replayed by whatever listens on
/// another port, they must open nothing: not the session (and its CSRF token), not the events,
/// not a tool, and not the Apply of a pending change set.
#[test]
fn the_cookies_a_login_leaves_open_nothing() {
    let (test, state, serve) = session();
    let port = serve.port;
    let mut client = Mcp::attach(state.path(), Some(test.root()));
    client.initialize();
    let pending = propose(&mut client, 2, "planted.txt", "nobody decided this\n", None);

    // Log in as a browser does: follow the link, keep every cookie any answer sets.
    let url = serve.login_url();
    let mut cookies: Vec<String> = Vec::new();
    let mut target = url[url.find("/?").expect("a path")..].to_owned();
    for _ in 0..4 {
        let cookie = cookies.join("; ");
        let answer = get(port, &target, &[("Cookie", &cookie)]);
        cookies.extend(
            answer
                .headers
                .iter()
                .filter(|(name, _)| name.eq_ignore_ascii_case("set-cookie"))
                .filter_map(|(_, value)| value.split(';').next())
                .map(str::to_owned),
        );
        match answer.header("location") {
            Some(next) if answer.status / 100 == 3 => next.clone_into(&mut target),
            _ => break,
        }
    }
    // And should the page key ever travel in a cookie, it must open nothing either.
    let token = serve.entry()["token"].as_str().expect("a token").to_owned();
    let link = post(
        port,
        "/session/login",
        &[("Authorization", &format!("Bearer {token}"))],
        "",
    );
    assert_eq!(link.status, 200, "{link:?}");
    let page = Page::login_with(port, link.json()["url"].as_str().expect("a url"));
    cookies.push(format!("once-{port}={}", page.key));
    cookies.push(format!("x-once-key={}", page.key));
    let cookie = cookies.join("; ");
    let replayed = [("Cookie", cookie.as_str())];

    let session = get(port, "/api/session", &replayed);
    assert!(
        matches!(session.status, 401 | 403),
        "/api/session with the cookies alone: {session:?}"
    );
    // Had it answered, the replay would have the CSRF token too: try the whole attack.
    let csrf = serde_json::from_str::<Value>(&session.body)
        .ok()
        .and_then(|v| v["csrf"].as_str().map(str::to_owned))
        .unwrap_or_default();
    let with_csrf = [
        ("Cookie", cookie.as_str()),
        ("X-Once-CSRF", csrf.as_str()),
        ("Content-Type", "application/json"),
    ];
    for path in [
        "/api/graph",
        "/api/changes",
        "/api/events",
        "/api/evaluators",
    ] {
        let answer = get(port, path, &replayed);
        assert!(matches!(answer.status, 401 | 403), "{path}: {answer:?}");
    }
    for path in [
        format!("/api/changes/{pending}/apply"),
        "/api/tool/once_query_targets".to_owned(),
    ] {
        let answer = post(port, &path, &with_csrf, "{}");
        assert!(matches!(answer.status, 401 | 403), "{path}: {answer:?}");
    }
    assert!(
        !test.root().join("planted.txt").exists(),
        "a change set nobody decided on was applied"
    );
}
