//! MCP over Streamable HTTP at `/mcp` on the `once serve` port, spoken raw over loopback TCP:
//! who may use it (bearer, Host, Origin), what the transport refuses (batches, missing or
//! unknown sessions, huge bodies), the session's life (`initialize` to `DELETE`), progress on
//! the event stream, the one-client rule shared with `once mcp --attach`, and cancellation of a
//! call whose client went away.
//!
//! Every read has a deadline ([`PATIENCE`]) and every `once serve` is killed by its guard.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::time::Instant;

use serde_json::{Value, json};

use crate::session::{children_of_session, wait_until};
use crate::support::{HttpReply, Mcp, PATIENCE, Serve, TempDir, Test};

const MANIFEST: &str = "[targets.core]\nkind = \"cargo-package\"\n\n\
                        [targets.quick]\nkind = \"command\"\n\n\
                        [targets.quick.capabilities.build]\ncommand = \"true\"\n\n\
                        [targets.slow]\nkind = \"command\"\n\n\
                        [targets.slow.capabilities.build]\ncommand = \"sleep 30\"\n";

type Reply = HttpReply;

/// The messages of an answer's body: the one JSON value, or each `data:` of an event stream.
pub(crate) fn messages(reply: &Reply) -> Vec<Value> {
    if reply
        .header("content-type")
        .is_some_and(|t| t.starts_with("text/event-stream"))
    {
        events(&reply.body)
    } else {
        vec![reply.json()]
    }
}

/// The JSON data of each event in an event stream.
fn events(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            (!data.is_empty() && data.iter().any(|d| !d.is_empty())).then(|| data.join("\n"))
        })
        .map(|data| serde_json::from_str(&data).unwrap_or_else(|e| panic!("{e}: {data}")))
        .collect()
}

/// A raw client of one session's `/mcp`.
struct Client {
    port: u16,
    token: String,
    session: Option<String>,
}

impl Client {
    fn new(serve: &Serve) -> Client {
        Client {
            port: serve.port,
            token: serve.entry()["token"].as_str().expect("a token").into(),
            session: None,
        }
    }

    fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }

    /// The headers every well-behaved POST sends.
    fn post_headers(&self) -> Vec<(String, String)> {
        let mut headers = vec![
            ("Authorization".into(), self.bearer()),
            ("Content-Type".into(), "application/json".into()),
            (
                "Accept".into(),
                "application/json, text/event-stream".into(),
            ),
        ];
        if let Some(session) = &self.session {
            headers.push(("Mcp-Session-Id".into(), session.clone()));
        }
        headers
    }

    /// The headers of a `GET` for the session's standalone stream.
    fn stream_headers(&self) -> Vec<(String, String)> {
        let mut headers = self.post_headers();
        headers.retain(|(name, _)| name != "Content-Type" && name != "Accept");
        headers.push(("Accept".into(), "text/event-stream".into()));
        headers
    }

    fn post(&self, body: &Value) -> Reply {
        send(
            self.port,
            "POST",
            &self.post_headers(),
            body.to_string().as_bytes(),
        )
    }

    fn initialize(&mut self) -> Value {
        let reply = self.post(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "http-test", "version": "0"}}}));
        assert_eq!(reply.status, 200, "{reply:?}");
        let session = reply.header("mcp-session-id").expect("a session id");
        assert!(
            !session.is_empty() && session.bytes().all(|b| (0x21..=0x7e).contains(&b)),
            "visible ASCII: {session:?}"
        );
        self.session = Some(session.into());
        let initialized =
            self.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert_eq!(initialized.status, 202, "{initialized:?}");
        assert!(initialized.body.is_empty(), "{initialized:?}");
        messages(&reply).pop().expect("the initialize result")
    }

    /// A request, answered with exactly its response (JSON, or an event stream ending with it).
    fn request(&self, id: u64, method: &str, params: Value) -> Value {
        let reply =
            self.post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        assert_eq!(reply.status, 200, "{reply:?}");
        let last = messages(&reply).pop().expect("a response");
        assert_eq!(last["id"], id, "{reply:?}");
        last
    }
}

/// Sends one request on a fresh connection (`Connection: close`) and reads the whole response.
pub(crate) fn send(port: u16, method: &str, headers: &[(String, String)], body: &[u8]) -> Reply {
    let mut stream = open(port, method, headers, body);
    read_reply(&mut stream)
}

/// Opens a connection and writes one request on it, without reading anything.
fn open(port: u16, method: &str, headers: &[(String, String)], body: &[u8]) -> TcpStream {
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).expect("connects");
    stream
        .set_read_timeout(Some(PATIENCE))
        .expect("sets a timeout");
    let mut head = format!(
        "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).expect("writes the head");
    // A refused request may be answered and closed before its body is sent.
    let _ = stream.write_all(body);
    stream
}

fn read_reply(stream: &mut TcpStream) -> Reply {
    let mut bytes = Vec::new();
    let started = Instant::now();
    let mut chunk = [0u8; 8192];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            // A signal to this test process (another test's child ending) is no answer.
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            // A reset after a complete response (the server closed with our body unread).
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(error) => panic!(
                "reading the response failed after {:?}: {error}",
                started.elapsed()
            ),
        }
    }
    HttpReply::parse(&String::from_utf8(bytes).expect("UTF-8"))
}

pub(crate) fn start() -> (Test, TempDir, Serve) {
    let test = Test::new().manifest(MANIFEST);
    let state = TempDir::new();
    let serve = Serve::start(test.root(), state.path(), &["--allow-run"]);
    (test, state, serve)
}

const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

#[test]
fn without_the_bearer_it_is_unauthorized_and_from_another_origin_forbidden() {
    let (_test, _state, serve) = start();
    let client = Client::new(&serve);
    let mut headers = client.post_headers();
    headers.retain(|(name, _)| name != "Authorization");
    let none = send(serve.port, "POST", &headers, PING.as_bytes());
    assert_eq!(none.status, 401, "{none:?}");
    assert!(
        none.header("www-authenticate")
            .is_some_and(|v| v.starts_with("Bearer")),
        "{none:?}"
    );
    headers.push((
        "Authorization".into(),
        "Bearer 00112233445566778899aabbccddeeff".into(),
    ));
    let wrong = send(serve.port, "POST", &headers, PING.as_bytes());
    assert_eq!(wrong.status, 401, "{wrong:?}");
    // The page's cookie is no way in either.
    let mut cookie = client.post_headers();
    cookie.retain(|(name, _)| name != "Authorization");
    cookie.push((
        "Cookie".into(),
        format!("once-{}={}", serve.port, client.token),
    ));
    assert_eq!(
        send(serve.port, "POST", &cookie, PING.as_bytes()).status,
        401
    );

    let mut foreign = client.post_headers();
    foreign.push(("Origin".into(), "http://evil.example".into()));
    let forbidden = send(serve.port, "POST", &foreign, PING.as_bytes());
    assert_eq!(forbidden.status, 403, "{forbidden:?}");
}

#[test]
fn batches_missing_and_unknown_sessions_and_bad_headers_are_refused() {
    let (_test, _state, serve) = start();
    let mut client = Client::new(&serve);
    let batch = client.post(&json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]));
    assert_eq!(batch.status, 400, "{batch:?}");
    // Before any session: a request that is not initialize has no session to go to.
    assert_eq!(
        client
            .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
            .status,
        400
    );

    client.initialize();
    let mut without = client.post_headers();
    without.retain(|(name, _)| name != "Mcp-Session-Id");
    let missing = send(serve.port, "POST", &without, PING.as_bytes());
    assert_eq!(missing.status, 400, "{missing:?}");

    let mut unknown = without.clone();
    unknown.push(("Mcp-Session-Id".into(), "not-a-session".into()));
    assert_eq!(
        send(serve.port, "POST", &unknown, PING.as_bytes()).status,
        404
    );

    let mut version = client.post_headers();
    version.push(("MCP-Protocol-Version".into(), "1999-01-01".into()));
    assert_eq!(
        send(serve.port, "POST", &version, PING.as_bytes()).status,
        400
    );
    let mut version = client.post_headers();
    version.push(("MCP-Protocol-Version".into(), "2025-11-25".into()));
    assert_eq!(
        send(serve.port, "POST", &version, PING.as_bytes()).status,
        200
    );

    let mut accept = client.post_headers();
    accept.retain(|(name, _)| name != "Accept");
    accept.push(("Accept".into(), "application/json".into()));
    assert_eq!(
        send(serve.port, "POST", &accept, PING.as_bytes()).status,
        406
    );

    let mut batch_in_session = client.post(&json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]));
    assert_eq!(batch_in_session.status, 400, "{batch_in_session:?}");
    batch_in_session.body.clear();

    let huge = vec![b' '; 9 * 1024 * 1024];
    let mut stream = open(serve.port, "POST", &client.post_headers(), &huge);
    assert_eq!(read_reply(&mut stream).status, 413);

    // The session survives all of it.
    assert_eq!(client.request(2, "ping", json!({}))["result"], json!({}));
}

#[test]
fn delete_ends_the_session() {
    let (_test, _state, serve) = start();
    let mut client = Client::new(&serve);
    client.initialize();
    assert_eq!(client.request(1, "ping", json!({}))["result"], json!({}));
    let deleted = send(serve.port, "DELETE", &client.post_headers(), b"");
    assert!(
        deleted.status == 200 || deleted.status == 204,
        "{deleted:?}"
    );
    let after = client.post(&json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
    assert_eq!(after.status, 404, "{after:?}");
    assert_eq!(
        send(serve.port, "DELETE", &client.post_headers(), b"").status,
        404
    );
}

#[test]
fn a_call_with_a_progress_token_streams_progress_then_its_result() {
    let (_test, _state, serve) = start();
    let mut client = Client::new(&serve);
    let init = client.initialize();
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    let tools = client.request(1, "tools/list", json!({}));
    assert!(
        tools["result"]["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|tool| tool["name"] == "once_run")),
        "{tools}"
    );
    let reply = client.post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "once_run", "arguments": {"target": "quick:build"},
                   "_meta": {"progressToken": "p-1"}}}));
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(
        reply
            .header("content-type")
            .is_some_and(|t| t.starts_with("text/event-stream")),
        "{reply:?}"
    );
    let received = messages(&reply);
    let (last, before) = received.split_last().expect("messages");
    assert_eq!(last["id"], 2, "{received:?}");
    assert_ne!(last["result"]["isError"], true, "{last}");
    assert!(last["result"]["structuredContent"].is_object(), "{last}");
    assert!(!before.is_empty(), "progress came first: {received:?}");
    for message in before {
        assert_eq!(message["method"], "notifications/progress", "{message}");
        assert_eq!(message["params"]["progressToken"], "p-1", "{message}");
    }
}

#[test]
fn one_client_at_a_time_across_http_and_the_socket_door() {
    let (_test, state, serve) = start();
    // The socket holds the slot: HTTP initialize is busy.
    let mut attached = Mcp::attach(state.path(), None);
    attached.initialize();
    let mut client = Client::new(&serve);
    let busy = client.post(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "http-test", "version": "0"}}}));
    assert_eq!(busy.status, 409, "{busy:?}");
    assert!(busy.header("mcp-session-id").is_none(), "{busy:?}");
    let error = busy.json();
    assert_eq!(error["error"]["code"], -32000, "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("busy: this session already serves a client")),
        "{error}"
    );
    attached.close_stdin();
    assert_eq!(attached.wait(PATIENCE).0, Some(0));

    // HTTP holds it, as a live SDK client does, with its standalone stream open: the bridge is
    // refused, and gets in once the HTTP session is deleted.
    client.initialize();
    let mut stream = open(serve.port, "GET", &client.stream_headers(), b"");
    assert!(read_head(&mut stream).starts_with("HTTP/1.1 200 "));
    let mut second = Mcp::attach(state.path(), None);
    let refused = second.recv();
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    assert_eq!(second.wait(PATIENCE).0, Some(1));
    assert_eq!(client.request(1, "ping", json!({}))["result"], json!({}));
    let deleted = send(serve.port, "DELETE", &client.post_headers(), b"");
    assert!(deleted.status < 300, "{deleted:?}");
    let mut third = Mcp::attach(state.path(), None);
    third.initialize();
    assert_eq!(
        third.request(1, "ping", json!({})),
        json!({"jsonrpc": "2.0", "id": 1, "result": {}})
    );
}

#[test]
fn a_client_that_left_without_delete_is_replaced_at_once() {
    let (_test, state, serve) = start();
    // A command-line client: initialize and one call, each on a connection it closes, then exit
    // without DELETE (the MCP Inspector's CLI does this on every invocation).
    let mut gone = Client::new(&serve);
    gone.initialize();
    assert_eq!(gone.request(1, "ping", json!({}))["result"], json!({}));
    // Its connections are closed, nothing is in flight, no stream is open: the next client of
    // either door gets in at once, instead of waiting for the idle rule.
    let mut next = Client::new(&serve);
    next.initialize();
    let mut stream = open(serve.port, "GET", &next.stream_headers(), b"");
    assert!(read_head(&mut stream).starts_with("HTTP/1.1 200 "));
    assert_eq!(
        gone.post(&json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
            .status,
        404,
        "the replaced session is over"
    );
    // `next` holds its stream: it is a live client, and the socket door is refused.
    let mut attached = Mcp::attach(state.path(), None);
    let refused = attached.recv();
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    drop(stream);
    wait_until("the stream to close and the bridge to get in", || {
        let mut bridge = Mcp::attach(state.path(), None);
        let reply = bridge.request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-11-25",
            "capabilities": {}, "clientInfo": {"name": "late", "version": "0"}}),
        );
        reply["result"].is_object()
    });
}

#[test]
fn a_post_whose_client_leaves_mid_call_cancels_the_call() {
    let (_test, _state, serve) = start();
    let mut client = Client::new(&serve);
    client.initialize();
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "once_run", "arguments": {"target": "slow:build"}}});
    let stream = open(
        serve.port,
        "POST",
        &client.post_headers(),
        call.to_string().as_bytes(),
    );
    wait_until("the run's process", || {
        !children_of_session(serve.pid()).is_empty()
    });
    drop(stream);
    wait_until("the run to stop", || {
        children_of_session(serve.pid()).is_empty()
    });
    // The session goes on.
    assert_eq!(client.request(8, "ping", json!({}))["result"], json!({}));
}

#[test]
fn a_client_that_never_reads_its_stream_does_not_stop_a_second_request() {
    let (_test, _state, serve) = start();
    let mut client = Client::new(&serve);
    client.initialize();
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "once_run", "arguments": {"target": "slow:build"},
                   "_meta": {"progressToken": 1}}});
    // Never read: its progress piles up in its own queue, not in the loop's.
    let _unread = open(
        serve.port,
        "POST",
        &client.post_headers(),
        call.to_string().as_bytes(),
    );
    wait_until("the run's process", || {
        !children_of_session(serve.pid()).is_empty()
    });
    let started = Instant::now();
    let tools = client.request(8, "tools/list", json!({}));
    assert!(tools["result"]["tools"].is_array(), "{tools}");
    assert!(started.elapsed() < PATIENCE);
}

/// Reads a response's head only (for a stream that stays open).
fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = loop {
            match stream.read(&mut byte) {
                // A signal to this test process (another test's child ending) is no answer.
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                read => break read.expect("the head comes in time"),
            }
        };
        assert_eq!(
            n,
            1,
            "closed in the head: {:?}",
            String::from_utf8_lossy(&head)
        );
        head.push(byte[0]);
    }
    String::from_utf8(head).expect("UTF-8")
}

#[test]
fn the_standalone_stream_opens_once_per_session() {
    let (_test, _state, serve) = start();
    let mut client = Client::new(&serve);
    client.initialize();
    let mut headers = client.post_headers();
    headers.retain(|(name, _)| name != "Content-Type" && name != "Accept");
    let mut json_only = headers.clone();
    json_only.push(("Accept".into(), "application/json".into()));
    assert_eq!(send(serve.port, "GET", &json_only, b"").status, 406);
    headers.push(("Accept".into(), "text/event-stream".into()));
    let mut first = open(serve.port, "GET", &headers, b"");
    let head = read_head(&mut first);
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert!(head.contains("text/event-stream"), "{head}");
    assert_eq!(send(serve.port, "GET", &headers, b"").status, 409);
    // Requests still go through while the stream is open.
    assert_eq!(client.request(1, "ping", json!({}))["result"], json!({}));
    drop(first);
    // Once it is gone (noticed within a tick), another may open.
    wait_until("the stream to close", || {
        let mut again = open(serve.port, "GET", &headers, b"");
        read_head(&mut again).starts_with("HTTP/1.1 200 ")
    });
}

#[test]
fn a_cancelled_request_ends_its_post_without_a_response_and_stops_the_call() {
    let (_test, _state, serve) = start();
    let mut client = Client::new(&serve);
    client.initialize();
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "once_run", "arguments": {"target": "slow:build"}}});
    let mut waiting = open(
        serve.port,
        "POST",
        &client.post_headers(),
        call.to_string().as_bytes(),
    );
    wait_until("the run's process", || {
        !children_of_session(serve.pid()).is_empty()
    });
    let cancelled = client.post(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7}}),
    );
    assert_eq!(cancelled.status, 202, "{cancelled:?}");
    let ended = read_reply(&mut waiting);
    assert_eq!(ended.status, 200, "{ended:?}");
    assert!(messages(&ended).is_empty(), "no response: {ended:?}");
    wait_until("the run to stop", || {
        children_of_session(serve.pid()).is_empty()
    });
}

#[test]
fn an_initialize_naming_its_own_live_session_replaces_it() {
    let (_test, _state, serve) = start();
    let mut client = Client::new(&serve);
    client.initialize();
    let first = client.session.clone().expect("a session");
    // Same client, same session id: not busy, a new session.
    client.initialize();
    assert_ne!(client.session.as_deref(), Some(first.as_str()));
    let mut old = client.post_headers();
    old.retain(|(name, _)| name != "Mcp-Session-Id");
    old.push(("Mcp-Session-Id".into(), first));
    assert_eq!(send(serve.port, "POST", &old, PING.as_bytes()).status, 404);
    assert_eq!(client.request(1, "ping", json!({}))["result"], json!({}));
}
