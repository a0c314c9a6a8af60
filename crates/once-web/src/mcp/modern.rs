//! `/mcp` for the 2026-07-28 revision: one POST, one request, no session.
//!
//! A POST is served here when it names no `Mcp-Session-Id`, is not `initialize`, and either its
//! body carries the revision's `_meta` fields or its `MCP-Protocol-Version` is a version served
//! per request (`once_mcp::era::is_modern_http`). Its mirrored headers are checked against the
//! body (`once_mcp::era::check_http_headers`: -32020), then it goes, as one line, to a loop of its
//! own (`Sessions::start_single`) that the era's dispatcher answers; the loop ends with the
//! answer. So progress and log messages can only reach the stream of the request they belong
//! to, no session id is ever minted, and nothing one request does is seen by the next. The
//! HTTP status follows the answer's error code (`once_mcp::era::http_status`).
//!
//! This module must never decide anything the dispatcher decides (versions, envelopes,
//! methods): it carries headers and lines; nor may it run before the bearer, Host and Origin
//! checks, which `route` and `serve` make first for every request.

use std::net::TcpStream;

use once_mcp::ProtocolVersion;
use once_mcp::era::{self, HttpHeaders};
use once_mcp::message::{INVALID_REQUEST, Incoming, RpcError, classify, error_response};
use serde_json::Value;

use super::{answer, call, rpc_error};
use crate::Shared;
use crate::http::{Request, Response};

/// The headers of `request` that mirror its body.
pub(super) fn headers(request: &Request) -> HttpHeaders<'_> {
    HttpHeaders {
        protocol_version: request.header("mcp-protocol-version").map(str::trim),
        method: request.header("mcp-method").map(str::trim),
        name: request.header("mcp-name").map(str::trim),
    }
}

/// Whether a POST without a session goes here: see the module's paragraph. An `initialize`
/// comes here only when its body carries the revision's fields (which has no `initialize`, and
/// answers it so); any other starts a handshake session, whatever its headers say.
pub(super) fn wants(request: &Request, value: &Value) -> bool {
    if value.get("method").and_then(Value::as_str) == Some("initialize") {
        return era::is_modern_http(&HttpHeaders::default(), value);
    }
    let headers = headers(request);
    let unknown_version = headers
        .protocol_version
        .is_some_and(|v| ProtocolVersion::parse(v).is_none());
    unknown_version || era::is_modern_http(&headers, value)
}

/// Serves one POST of the revision; whether the connection may carry another request.
pub(super) fn post(
    shared: &Shared,
    request: &Request,
    value: Value,
    line: &[u8],
    stream: &mut TcpStream,
    keep_alive: bool,
) -> bool {
    let headers = headers(request);
    let id = value
        .get("id")
        .and_then(once_mcp::message::RequestId::from_value);
    let refuse = |error: RpcError| {
        let reply = error_response(id.as_ref(), &error);
        Response::json(era::http_status(Some(error.code)), &reply)
    };
    if let Some(version) = headers.protocol_version
        && !ProtocolVersion::parse(version).is_some_and(ProtocolVersion::is_modern)
    {
        return answer(
            stream,
            &refuse(era::unsupported_version(version)),
            keep_alive,
        );
    }
    match classify(value.clone()) {
        Incoming::Invalid { reason, .. } => answer(
            stream,
            &refuse(RpcError::new(INVALID_REQUEST, reason)),
            keep_alive,
        ),
        // The revision defines no notification over HTTP (closing a stream cancels): accepted,
        // and there is nothing to do with it.
        Incoming::Notification { .. } => answer(stream, &Response::empty(202), keep_alive),
        Incoming::Response => answer(
            stream,
            &refuse(RpcError::new(
                INVALID_REQUEST,
                "Invalid Request: this server sends no requests, so it takes no responses",
            )),
            keep_alive,
        ),
        Incoming::Request { id, .. } => {
            if let Err(error) = era::check_http_headers(&headers, &value) {
                return answer(stream, &refuse(error), keep_alive);
            }
            let session = match shared
                .mcp
                .start_single(std::sync::Arc::clone(&shared.config))
            {
                Ok(session) => session,
                Err(error) => {
                    return answer(
                        stream,
                        &rpc_error(500, &format!("cannot start the MCP loop: {error}")),
                        keep_alive,
                    );
                }
            };
            let progress = value.pointer("/params/_meta/progressToken");
            let more = call(&session, id, progress, line, stream, keep_alive, status_of);
            shared.mcp.end(&session);
            more
        }
    }
}

/// The HTTP status of a response line the loop wrote.
fn status_of(reply: &str) -> u16 {
    let code = serde_json::from_str::<Value>(reply)
        .ok()
        .and_then(|value| value.pointer("/error/code").and_then(Value::as_i64));
    era::http_status(code)
}
