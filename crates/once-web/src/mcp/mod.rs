//! MCP over Streamable HTTP (protocols 2025-11-25 and 2026-07-28) at `/mcp`: the same server, tools and gates as
//! the socket door, reached by clients that speak HTTP, without a bridge.
//!
//! # Theory of operation
//!
//! `route` has already checked `Host` and `Origin`; here a request must also carry the session
//! token as `Authorization: Bearer` (401 otherwise; the page's key is no way in). `POST`
//! carries one JSON-RPC message: `initialize` claims the door's one client slot (409 with the
//! JSON-RPC error `-32000` when another client holds it), starts a session (`session.rs`) and
//! answers with its `Mcp-Session-Id`; every other message names that session (400 without it,
//! 404 for one unknown or ended). A notification or response is handed to the loop and answered
//! 202. A request is handed to the loop and its connection waits for what the router leaves in
//! its mailbox: when the response is the first thing to come, it is the answer, as
//! `application/json`; when a notification comes first (progress, a log message), the answer
//! becomes an event stream that carries the notifications, then the response, and ends. A
//! client that disconnects before its answer has its call cancelled (`notifications/cancelled`
//! into the loop). `GET` opens the session's one standalone event stream (409 for a second),
//! which carries the messages tied to no request; `DELETE` ends the session.
//!
//! A POST that names no session and is not `initialize` may be of the 2026-07-28 revision, which
//! has no session: `modern.rs` serves it (one request, one loop, no session id); `GET` and
//! `DELETE` without a session are that revision's, and answer 405.
//!
//! A connection's thread is the only one that writes to its socket, each write bounded by
//! [`http::WRITE_WAIT`]; it waits for its mailbox in ticks of [`TICK`], looking between ticks for
//! a peer that left. This module must never let an unauthenticated request reach a session, nor
//! block the loop on a socket.

mod mailbox;
mod modern;
mod pipe;
mod session;

use std::net::TcpStream;
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use once_mcp::ProtocolVersion;
use once_mcp::message::{
    INVALID_REQUEST, Incoming, PARSE_ERROR, RequestId, RpcError, classify, error_response, excerpt,
};
use serde_json::Value;

use crate::Shared;
use crate::http::{self, Request, Response};
use crate::token::Token;
use mailbox::{Mailbox, Next};
pub(crate) use session::Sessions;
use session::{Refusal, Session};

/// How long a connection waits for its mailbox before it looks whether its peer left.
const TICK: Duration = Duration::from_millis(200);
/// How often an idle event stream sends a comment.
const KEEPALIVE: Duration = Duration::from_secs(15);
/// How long `initialize` may take to be answered.
const INITIALIZE_WAIT: Duration = Duration::from_secs(10);
/// The JSON-RPC error of a client turned away because another holds the slot (as at the door).
const BUSY: i64 = -32000;
/// The JSON-RPC error of a request without the session token (as at the door).
const UNAUTHORIZED: i64 = -32001;
/// The header naming the session.
const SESSION_HEADER: &str = "mcp-session-id";

/// Serves one request to `/mcp`; whether the connection may carry another.
pub(crate) fn serve(shared: &Shared, request: &Request, stream: &mut TcpStream) -> bool {
    let refused = if !shared.access.bearer_ok(request) {
        Some(
            rpc_error(
                401,
                "unauthorized: send the session token as `Authorization: Bearer <token>`; it is \
                 the `token` of the session's entry, `<state dir>/once/mcp/<pid>.json`",
            )
            .with("WWW-Authenticate", "Bearer"),
        )
    } else if let Some(version) = request.header("mcp-protocol-version")
        && ProtocolVersion::parse(version.trim()).is_none()
        // A POST without a session may be of the 2026-07-28 revision, which answers an unknown
        // version with the versions it serves (`modern.rs`).
        && !(request.method == "POST" && request.header(SESSION_HEADER).is_none())
    {
        Some(rpc_error(
            400,
            &format!(
                "unsupported `MCP-Protocol-Version` `{}`",
                excerpt(version.trim())
            ),
        ))
    } else {
        None
    };
    if let Some(response) = refused {
        return answer(stream, &response, request.keep_alive);
    }
    match request.method.as_str() {
        "POST" => post(shared, request, stream),
        // The 2026-07-28 revision has no stream to GET and no session to DELETE: without a
        // session id these are its requests, answered as it asks.
        "GET" | "DELETE" if request.header(SESSION_HEADER).is_none() => answer(
            stream,
            &rpc_error(
                405,
                "protocol 2026-07-28 takes only POST; GET and DELETE need the `Mcp-Session-Id` \
                 of a session that `initialize` started",
            )
            .with("Allow", "POST"),
            request.keep_alive,
        ),
        "GET" => get(shared, request, stream),
        "DELETE" => {
            let response = match session_of(shared, request) {
                Ok(session) => {
                    shared.mcp.end(&session);
                    Response::empty(204)
                }
                Err(response) => response,
            };
            answer(stream, &response, request.keep_alive)
        }
        _ => answer(
            stream,
            &rpc_error(405, "use POST, GET or DELETE").with("Allow", "GET, POST, DELETE"),
            request.keep_alive,
        ),
    }
}

fn post(shared: &Shared, request: &Request, stream: &mut TcpStream) -> bool {
    let keep_alive = request.keep_alive;
    let json = request.header("content-type").is_some_and(|t| {
        t.trim()
            .to_ascii_lowercase()
            .starts_with("application/json")
    });
    if !json {
        return answer(
            stream,
            &rpc_error(415, "send the message as application/json"),
            keep_alive,
        );
    }
    if !accepts(request, "application/json") || !accepts(request, "text/event-stream") {
        return answer(
            stream,
            &rpc_error(406, "accept both application/json and text/event-stream"),
            keep_alive,
        );
    }
    let value: Value = match serde_json::from_slice(&request.body) {
        Ok(value) => value,
        Err(error) => {
            let reply = error_response(
                None,
                &RpcError::new(PARSE_ERROR, format!("Parse error: {error}")),
            );
            return answer(stream, &Response::json(400, &reply), keep_alive);
        }
    };
    if value.is_array() {
        return answer(
            stream,
            &rpc_error(
                400,
                "Invalid Request: batches are not part of MCP 2025-11-25; send one message per POST",
            ),
            keep_alive,
        );
    }
    // One line for the loop, whatever whitespace the body had.
    let mut line = value.to_string().into_bytes();
    line.push(b'\n');
    if request.header(SESSION_HEADER).is_none() && modern::wants(request, &value) {
        return modern::post(shared, request, value, &line, stream, keep_alive);
    }
    let progress = value.pointer("/params/_meta/progressToken").cloned();
    match classify(value) {
        Incoming::Invalid { id, reason } => {
            let reply = error_response(id.as_ref(), &RpcError::new(INVALID_REQUEST, reason));
            answer(stream, &Response::json(400, &reply), keep_alive)
        }
        Incoming::Request { id, method, .. } if method == "initialize" => {
            initialize(shared, request, id, &line, stream, keep_alive)
        }
        Incoming::Request { id, .. } => match session_of(shared, request) {
            Ok(session) => call(
                &session,
                id,
                progress.as_ref(),
                &line,
                stream,
                keep_alive,
                |_| 200,
            ),
            Err(response) => answer(stream, &response, keep_alive),
        },
        Incoming::Notification { method, params } => {
            let cancels = (method == "notifications/cancelled")
                .then(|| {
                    params
                        .as_ref()?
                        .get("requestId")
                        .and_then(RequestId::from_value)
                })
                .flatten();
            let response = match session_of(shared, request) {
                Ok(session) => match session.notify(&line, cancels.as_ref()) {
                    Ok(()) => Response::empty(202),
                    Err(refusal) => refusal_response(&refusal),
                },
                Err(response) => response,
            };
            answer(stream, &response, keep_alive)
        }
        Incoming::Response => {
            let response = match session_of(shared, request) {
                Ok(session) => match session.notify(&line, None) {
                    Ok(()) => Response::empty(202),
                    Err(refusal) => refusal_response(&refusal),
                },
                Err(response) => response,
            };
            answer(stream, &response, keep_alive)
        }
    }
}

/// Claims the client slot, starts a session and answers `initialize` with its id.
fn initialize(
    shared: &Shared,
    request: &Request,
    id: RequestId,
    line: &[u8],
    stream: &mut TcpStream,
    keep_alive: bool,
) -> bool {
    let Ok(peer) = stream.peer_addr() else {
        return false;
    };
    // Only its client knows a session's id: an initialize that names a live one replaces it.
    if let Some(previous) = request_session(shared, request) {
        shared.mcp.end(&previous);
    }
    // A later claimant may end this session when it has been idle long enough; the session is
    // made only after the claim, so the hook finds it through this cell.
    let cell: Arc<OnceLock<Weak<Session>>> = Arc::new(OnceLock::new());
    let evict = {
        let sessions = Arc::downgrade(&shared.mcp);
        let cell = Arc::clone(&cell);
        Arc::new(move || {
            cell.get()
                .is_some_and(|session| Sessions::evict(&sessions, session))
        })
    };
    let held = match (shared.claim)(peer, evict) {
        Ok(held) => held,
        Err(busy) => {
            let reply = error_response(Some(&id), &RpcError::new(BUSY, busy));
            return answer(stream, &Response::json(409, &reply), keep_alive);
        }
    };
    let started = Token::generate().and_then(|token| {
        shared
            .mcp
            .start(token.to_hex(), Arc::clone(&shared.config), held)
    });
    let session = match started {
        Ok(session) => session,
        Err(error) => {
            return answer(
                stream,
                &rpc_error(500, &format!("cannot start an MCP session: {error}")),
                keep_alive,
            );
        }
    };
    let _ = cell.set(Arc::downgrade(&session));
    session.used_by(peer);
    let mailbox = match session.request(id, None, line) {
        Ok(mailbox) => mailbox,
        Err(refusal) => {
            shared.mcp.end(&session);
            return answer(stream, &refusal_response(&refusal), keep_alive);
        }
    };
    let deadline = Instant::now() + INITIALIZE_WAIT;
    let reply = loop {
        match mailbox.next(TICK) {
            Next::Response(reply) => break Some(reply),
            Next::Closed => break None,
            Next::Note(_) | Next::Nothing if Instant::now() < deadline => {}
            Next::Note(_) | Next::Nothing => break None,
        }
    };
    let accepted = |reply: &str| {
        serde_json::from_str::<Value>(reply).is_ok_and(|value| value.get("result").is_some())
    };
    match reply {
        Some(reply) if accepted(&reply) => {
            tracing::info!("an MCP session over HTTP started for {peer}");
            let response = json_text(reply).with("Mcp-Session-Id", session.id());
            answer(stream, &response, keep_alive)
        }
        // A refused initialize starts nothing: the client must not hold the slot for it.
        Some(reply) => {
            shared.mcp.end(&session);
            answer(stream, &json_text(reply), keep_alive)
        }
        None => {
            shared.mcp.end(&session);
            answer(
                stream,
                &rpc_error(503, "the session did not answer initialize in time"),
                keep_alive,
            )
        }
    }
}

/// Hands request `id` to the session and answers with what comes back for it; a response that
/// is the whole answer gets the HTTP status `status` gives it.
fn call(
    session: &Session,
    id: RequestId,
    progress: Option<&Value>,
    line: &[u8],
    stream: &mut TcpStream,
    keep_alive: bool,
    status: fn(&str) -> u16,
) -> bool {
    if let Ok(peer) = stream.peer_addr() {
        session.used_by(peer);
    }
    let mailbox = match session.request(id.clone(), progress, line) {
        Ok(mailbox) => mailbox,
        Err(refusal) => return answer(stream, &refusal_response(&refusal), keep_alive),
    };
    let mut streaming = false;
    let mut written = Instant::now();
    loop {
        match mailbox.next(TICK) {
            Next::Response(reply) if !streaming => {
                let response = Response::new(status(&reply), "application/json", reply);
                return answer(stream, &response, keep_alive);
            }
            Next::Response(reply) => {
                let _ = http::write_event(stream, None, None, &reply);
                return false;
            }
            Next::Note(note) => {
                let sent = (streaming || http::start_event_stream(stream, &[]).is_ok())
                    && http::write_event(stream, None, None, &note).is_ok();
                if !sent {
                    session.abandon(&id);
                    return false;
                }
                streaming = true;
                written = Instant::now();
            }
            Next::Closed if streaming => return false,
            Next::Closed if session.is_ended() => {
                return answer(stream, &rpc_error(404, "the MCP session ended"), false);
            }
            // The client cancelled the request: no response, so an empty stream that ends.
            Next::Closed => {
                let _ = http::start_event_stream(stream, &[]);
                return false;
            }
            Next::Nothing => {
                let alive = !peer_left(stream)
                    && (!streaming
                        || written.elapsed() < KEEPALIVE
                        || http::write_keepalive(stream).is_ok());
                if !alive {
                    session.abandon(&id);
                    return false;
                }
                if streaming && written.elapsed() >= KEEPALIVE {
                    written = Instant::now();
                }
            }
        }
    }
}

/// Holds the session's standalone stream open until the peer or the session leaves.
fn get(shared: &Shared, request: &Request, stream: &mut TcpStream) -> bool {
    if !accepts(request, "text/event-stream") {
        return answer(
            stream,
            &rpc_error(406, "accept text/event-stream"),
            request.keep_alive,
        );
    }
    let session = match session_of(shared, request) {
        Ok(session) => session,
        Err(response) => return answer(stream, &response, request.keep_alive),
    };
    if let Ok(peer) = stream.peer_addr() {
        session.used_by(peer);
    }
    let mailbox = match session.open_stream() {
        Ok(mailbox) => mailbox,
        Err(refusal) => return answer(stream, &refusal_response(&refusal), request.keep_alive),
    };
    hold_stream(&mailbox, stream);
    session.close_stream(&mailbox);
    false
}

fn hold_stream(mailbox: &Mailbox, stream: &mut TcpStream) {
    if http::start_event_stream(stream, &[]).is_err() {
        return;
    }
    let mut written = Instant::now();
    loop {
        match mailbox.next(TICK) {
            Next::Note(message) | Next::Response(message) => {
                if http::write_event(stream, None, None, &message).is_err() {
                    return;
                }
                written = Instant::now();
            }
            Next::Closed => return,
            Next::Nothing => {
                if peer_left(stream) {
                    return;
                }
                if written.elapsed() >= KEEPALIVE {
                    if http::write_keepalive(stream).is_err() {
                        return;
                    }
                    written = Instant::now();
                }
            }
        }
    }
}

/// The live session the request names, if any.
fn request_session(shared: &Shared, request: &Request) -> Option<Arc<Session>> {
    shared.mcp.find(request.header(SESSION_HEADER)?.trim())
}

/// The live session the request names, or the answer when it names none.
fn session_of(shared: &Shared, request: &Request) -> Result<Arc<Session>, Response> {
    let Some(id) = request.header(SESSION_HEADER) else {
        return Err(rpc_error(
            400,
            "no `Mcp-Session-Id` header: send `initialize` first, then its session id with every request",
        ));
    };
    shared.mcp.find(id.trim()).ok_or_else(|| {
        rpc_error(
            404,
            "no such MCP session (it ended or never existed); send initialize for a new one",
        )
    })
}

fn refusal_response(refusal: &Refusal) -> Response {
    match refusal {
        Refusal::Ended => rpc_error(404, "the MCP session ended; send initialize for a new one"),
        Refusal::DuplicateId => rpc_error(
            409,
            "a request with this id is already in flight in this session",
        ),
        Refusal::Busy => rpc_error(503, "the MCP session is not reading its input; try again"),
        Refusal::StreamOpen => rpc_error(409, "this session's event stream is already open"),
    }
}

/// A message as the loop wrote it, as a `200` JSON body.
fn json_text(message: String) -> Response {
    Response::new(200, "application/json", message)
}

/// A JSON-RPC error with no id, as the body of an HTTP error.
fn rpc_error(status: u16, message: &str) -> Response {
    let code = match status {
        400 => INVALID_REQUEST,
        401 => UNAUTHORIZED,
        _ => BUSY,
    };
    Response::json(status, &error_response(None, &RpcError::new(code, message)))
}

/// Writes `response`; whether the connection may carry another request.
fn answer(stream: &mut TcpStream, response: &Response, keep_alive: bool) -> bool {
    response.write(stream, keep_alive).is_ok() && keep_alive
}

/// Whether the `Accept` header allows `wanted` (a type, its `type/*`, or `*/*`).
fn accepts(request: &Request, wanted: &str) -> bool {
    let family = wanted.split('/').next().unwrap_or_default();
    request
        .headers
        .iter()
        .filter(|(name, _)| name == "accept")
        .flat_map(|(_, value)| value.split(','))
        .map(|item| {
            item.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
        .any(|media| {
            media == wanted
                || media == "*/*"
                || media
                    .strip_suffix("/*")
                    .is_some_and(|prefix| prefix == family)
        })
}

/// Whether the peer closed its side (or the connection broke), without consuming anything.
#[cfg(unix)]
fn peer_left(stream: &TcpStream) -> bool {
    use std::os::fd::AsRawFd;
    let mut byte = [0u8; 1];
    // SAFETY: a one-byte peek into a live buffer on a descriptor this stream owns; it neither
    // blocks (MSG_DONTWAIT) nor consumes (MSG_PEEK).
    let n = unsafe {
        libc::recv(
            stream.as_raw_fd(),
            byte.as_mut_ptr().cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    match n {
        0 => true,
        n if n > 0 => false,
        _ => !matches!(
            std::io::Error::last_os_error().kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
        ),
    }
}

/// Whether the peer closed its side (or the connection broke), without consuming anything.
/// Windows has no `MSG_DONTWAIT`: a poll with no timeout says first whether a peek can answer
/// at once, and a hang-up or an error counts as gone without one.
#[cfg(windows)]
fn peer_left(stream: &TcpStream) -> bool {
    use std::os::windows::io::AsRawSocket;
    use windows_sys::Win32::Networking::WinSock::{
        MSG_PEEK, POLLERR, POLLHUP, POLLNVAL, POLLRDNORM, WSAPOLLFD, WSAPoll, recv,
    };
    let gone_unless_busy = || {
        !matches!(
            std::io::Error::last_os_error().kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
        )
    };
    let mut poll = WSAPOLLFD {
        fd: stream.as_raw_socket() as usize,
        events: POLLRDNORM,
        revents: 0,
    };
    // SAFETY: one live `WSAPOLLFD` naming a socket this stream owns; a zero timeout never waits.
    let ready = unsafe { WSAPoll(&mut poll, 1, 0) };
    if ready < 0 {
        return gone_unless_busy();
    }
    if poll.revents & (POLLHUP | POLLERR | POLLNVAL) != 0 {
        return true;
    }
    if ready == 0 || poll.revents & POLLRDNORM == 0 {
        return false;
    }
    let mut byte = 0u8;
    // SAFETY: a one-byte peek into a live byte on the same socket; the poll said it is readable,
    // so it does not block, and MSG_PEEK consumes nothing.
    let n = unsafe { recv(poll.fd, &mut byte, 1, MSG_PEEK) };
    match n {
        0 => true,
        n if n > 0 => false,
        _ => gone_unless_busy(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_accept(accept: &str) -> Request {
        Request {
            method: "POST".into(),
            path: "/mcp".into(),
            query: Vec::new(),
            headers: vec![("accept".into(), accept.into())],
            body: Vec::new(),
            keep_alive: true,
        }
    }

    #[test]
    fn accept_allows_exact_types_and_wildcards() {
        let both = with_accept("application/json, text/event-stream;q=0.9");
        assert!(accepts(&both, "application/json") && accepts(&both, "text/event-stream"));
        let any = with_accept("*/*");
        assert!(accepts(&any, "text/event-stream"));
        let text = with_accept("text/*");
        assert!(accepts(&text, "text/event-stream") && !accepts(&text, "application/json"));
        let json = with_accept("application/json");
        assert!(!accepts(&json, "text/event-stream"));
    }
}
