//! `/mcp` in the 2026-07-28 revision, spoken raw over loopback TCP: no `initialize`, no session,
//! every POST carrying its version in a header and in `_meta`; what the headers must match; what
//! GET and DELETE answer; progress only on the stream of its own request; and a handshake session
//! working beside it on the same endpoint.
//!
//! Every read has a deadline (the helpers of `mcp_http.rs`) and every `once serve` is killed by
//! its guard.

use serde_json::{Value, json};

use crate::mcp_http::{messages, send, start};
use crate::support::{HttpReply, Serve};

const MODERN: &str = "2026-07-28";

fn token(serve: &Serve) -> String {
    serve.entry()["token"].as_str().expect("a token").into()
}

/// The headers a 2026-07-28 client sends with `method` (and `name` for `tools/call`).
fn headers(serve: &Serve, method: &str, name: Option<&str>) -> Vec<(String, String)> {
    let mut headers = vec![
        ("Authorization".into(), format!("Bearer {}", token(serve))),
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

fn envelope(extra: Value) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "http-modern", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    for (key, value) in extra.as_object().expect("an object") {
        meta[key] = value.clone();
    }
    meta
}

fn body(id: u64, method: &str, mut params: Value, meta: Value) -> Value {
    params["_meta"] = meta;
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn post(serve: &Serve, headers: &[(String, String)], body: &Value) -> HttpReply {
    send(serve.port, "POST", headers, body.to_string().as_bytes())
}

fn assert_error(reply: &HttpReply, status: u16, id: u64, code: i64) {
    assert_eq!(reply.status, status, "{reply:?}");
    let message = reply.json();
    assert_eq!(message["id"], id, "{reply:?}");
    assert_eq!(message["error"]["code"], code, "{reply:?}");
}

#[test]
fn discover_list_and_call_need_no_session() {
    let (_test, _state, serve) = start();
    let discover = post(
        &serve,
        &headers(&serve, "server/discover", None),
        &body(1, "server/discover", json!({}), envelope(json!({}))),
    );
    assert_eq!(discover.status, 200, "{discover:?}");
    assert_eq!(discover.header("mcp-session-id"), None, "{discover:?}");
    let result = &discover.json()["result"];
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_eq!(result["supportedVersions"], json!([MODERN]), "{result}");
    assert!(result["capabilities"]["tools"].is_object(), "{result}");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "once-mcp"
    );

    let list = || {
        post(
            &serve,
            &headers(&serve, "tools/list", None),
            &body(2, "tools/list", json!({}), envelope(json!({}))),
        )
    };
    let first = list();
    assert_eq!(first.status, 200, "{first:?}");
    let listed = first.json();
    assert_eq!(listed["result"]["ttlMs"], 3_600_000, "{listed}");
    assert_eq!(listed["result"]["cacheScope"], "private", "{listed}");
    assert!(
        listed["result"]["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|tool| tool["name"] == "once_window_show")),
        "{listed}"
    );
    assert_eq!(list().body, first.body, "the same bytes on every request");

    let called = post(
        &serve,
        &headers(&serve, "tools/call", Some("once_query_targets")),
        &body(
            3,
            "tools/call",
            json!({"name": "once_query_targets", "arguments": {}}),
            envelope(json!({})),
        ),
    );
    assert_eq!(called.status, 200, "{called:?}");
    let result = &messages(&called).pop().expect("a response")["result"];
    assert_eq!(result["resultType"], "complete", "{result}");
    assert!(
        result["structuredContent"]["result"].is_object(),
        "{result}"
    );
    assert_ne!(result["isError"], true, "{result}");
}

#[test]
fn headers_that_disagree_with_the_body_and_bad_envelopes_are_refused() {
    let (_test, _state, serve) = start();
    let list = body(1, "tools/list", json!({}), envelope(json!({})));
    // The header names the revision, the body carries no `_meta`: -32602, with the request's id
    // (this used to be -32600 with `id: null`).
    let bare = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    assert_error(
        &post(&serve, &headers(&serve, "tools/list", None), &bare),
        400,
        1,
        -32602,
    );
    let mut method = headers(&serve, "tools/call", None);
    assert_error(&post(&serve, &method, &list), 400, 1, -32020);
    method.retain(|(name, _)| name != "Mcp-Method");
    assert_error(&post(&serve, &method, &list), 400, 1, -32020);
    let mut version = headers(&serve, "tools/list", None);
    version.retain(|(name, _)| name != "MCP-Protocol-Version");
    version.push(("MCP-Protocol-Version".into(), "2099-01-01".into()));
    let unsupported = post(&serve, &version, &list);
    assert_error(&unsupported, 400, 1, -32022);
    assert_eq!(
        unsupported.json()["error"]["data"]["supported"],
        json!([MODERN])
    );
    let call = body(
        2,
        "tools/call",
        json!({"name": "once_query_targets", "arguments": {}}),
        envelope(json!({})),
    );
    assert_error(
        &post(&serve, &headers(&serve, "tools/call", None), &call),
        400,
        2,
        -32020,
    );
    assert_error(
        &post(
            &serve,
            &headers(&serve, "tools/call", Some("once_query_graph")),
            &call,
        ),
        400,
        2,
        -32020,
    );
    // ping and logging/setLevel are gone from the revision: 404 with -32601.
    assert_error(
        &post(
            &serve,
            &headers(&serve, "ping", None),
            &body(3, "ping", json!({}), envelope(json!({}))),
        ),
        404,
        3,
        -32601,
    );
    // Nor initialize, when it carries the revision's fields: 404, and no session starts.
    let initialize = post(
        &serve,
        &headers(&serve, "initialize", None),
        &body(
            4,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}}),
            envelope(json!({})),
        ),
    );
    assert_error(&initialize, 404, 4, -32601);
    assert_eq!(initialize.header("mcp-session-id"), None, "{initialize:?}");
    // No session to GET a stream of or to DELETE.
    for method in ["GET", "DELETE"] {
        let reply = send(
            serve.port,
            method,
            &headers(&serve, "tools/list", None),
            b"",
        );
        assert_eq!(reply.status, 405, "{method}: {reply:?}");
    }
    // And without the bearer nothing of this is reached.
    let mut unauthorized = headers(&serve, "tools/list", None);
    unauthorized.retain(|(name, _)| name != "Authorization");
    assert_eq!(post(&serve, &unauthorized, &list).status, 401);
}

#[test]
fn progress_goes_only_to_the_stream_of_its_request_beside_a_handshake_session() {
    let (_test, _state, serve) = start();
    // A handshake client holds a session on the same endpoint meanwhile.
    let mut legacy = headers(&serve, "initialize", None);
    legacy.retain(|(name, _)| !name.starts_with("Mcp-") && !name.starts_with("MCP-"));
    let init = post(
        &serve,
        &legacy,
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "old", "version": "0"}}}),
    );
    assert_eq!(init.status, 200, "{init:?}");
    let session = init
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();

    let run = post(
        &serve,
        &headers(&serve, "tools/call", Some("once_run")),
        &body(
            7,
            "tools/call",
            json!({"name": "once_run", "arguments": {"target": "quick:build"}}),
            envelope(json!({"progressToken": "p-7", "io.modelcontextprotocol/logLevel": "debug"})),
        ),
    );
    assert_eq!(run.status, 200, "{run:?}");
    let received = messages(&run);
    let (last, before) = received.split_last().expect("messages");
    assert_eq!(last["id"], 7, "{received:?}");
    assert_eq!(last["result"]["resultType"], "complete", "{last}");
    assert!(!before.is_empty(), "progress came first: {received:?}");
    for message in before {
        match message["method"].as_str() {
            Some("notifications/progress") => {
                assert_eq!(message["params"]["progressToken"], "p-7", "{message}");
            }
            Some("notifications/message") => {}
            _ => panic!("only this request's notifications: {message}"),
        }
    }

    // The handshake session still answers as before, and saw none of it.
    let mut in_session = legacy.clone();
    in_session.push(("Mcp-Session-Id".into(), session));
    let ping = post(
        &serve,
        &in_session,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    );
    assert_eq!(ping.status, 200, "{ping:?}");
    assert_eq!(
        messages(&ping),
        vec![json!({"jsonrpc": "2.0", "id": 1, "result": {}})]
    );
}
