//! The few parts of HTTP/1.1 the window needs: read one request with hard limits and one
//! deadline, write one response, and hold a stream of Server-Sent Events open.
//!
//! Parsing is `httparse`'s (the parser hyper uses); this module adds the limits and deadlines
//! that keep a slow, silent or hostile peer from holding a thread or memory: a request head of at
//! most [`HEAD_LIMIT`] bytes and a body of at most [`BODY_LIMIT`], each whole before its
//! deadline, whatever the peer trickles. Request bodies must state a `Content-Length`
//! (browsers and the MCP SDKs do); chunked request bodies are refused with 411. It must never
//! read past the request it was asked for, nor write a response without a length or a
//! `Connection: close`.

use std::io::{self, BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::token::hex_value;

/// The largest request head (request line and headers) read.
pub const HEAD_LIMIT: usize = 16 * 1024;
/// The largest request body read: as large as one MCP message on stdio may be.
pub const BODY_LIMIT: usize = 8 * 1024 * 1024;
/// How long a request may take, from its first byte, to arrive whole.
pub const REQUEST_WAIT: Duration = Duration::from_secs(10);
/// How long a kept-alive connection may sit idle before its next request.
pub const IDLE_WAIT: Duration = Duration::from_secs(30);
/// How long one write may block on a peer that does not read.
pub const WRITE_WAIT: Duration = Duration::from_secs(10);
const MAX_HEADERS: usize = 64;

/// One parsed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `GET`, `POST`, … as sent.
    pub method: String,
    /// The path, percent-decoded, without the query.
    pub path: String,
    /// The query's pairs, percent-decoded, in order.
    pub query: Vec<(String, String)>,
    /// Header names lowercased, values as sent (lossily decoded as UTF-8).
    pub headers: Vec<(String, String)>,
    /// The body (empty without a `Content-Length`).
    pub body: Vec<u8>,
    /// Whether the connection may carry another request after this one.
    pub keep_alive: bool,
}

impl Request {
    /// The first value of header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// How many times header `name` was sent.
    pub fn header_count(&self, name: &str) -> usize {
        self.headers.iter().filter(|(n, _)| n == name).count()
    }

    /// The first value of query parameter `name`.
    pub fn query(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Why no request was read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The peer closed the connection (or was idle too long) between requests: not an error.
    #[error("closed")]
    Closed,
    /// The request broke a rule; answer with this status and close.
    #[error("{status}: {message}")]
    Bad {
        /// The status to answer with.
        status: u16,
        /// Why.
        message: &'static str,
    },
    /// The socket failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

fn bad(status: u16, message: &'static str) -> ReadError {
    ReadError::Bad { status, message }
}

/// Where requests are read from: a buffered socket whose reads can be bounded by a deadline.
pub trait Wire: BufRead {
    /// Makes reads fail with a timeout once `deadline` has passed.
    fn set_deadline(&mut self, deadline: Instant) -> io::Result<()>;
}

impl Wire for BufReader<TcpStream> {
    fn set_deadline(&mut self, deadline: Instant) -> io::Result<()> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        self.get_ref().set_read_timeout(Some(left))
    }
}

/// Bytes in memory, read as a peer that sends them all and then closes: for tests and fuzzing.
impl Wire for io::Cursor<Vec<u8>> {
    fn set_deadline(&mut self, _deadline: Instant) -> io::Result<()> {
        Ok(())
    }
}

/// Reads one request, whose first bytes may already have been read (`carried`). The first byte
/// may take `idle` to come; from then on the whole request has [`REQUEST_WAIT`].
pub fn read_request(
    reader: &mut impl Wire,
    idle: Duration,
    carried: Vec<u8>,
) -> Result<Request, ReadError> {
    read_request_within(reader, idle, REQUEST_WAIT, carried)
}

/// As [`read_request`], with `whole` for the request to arrive from its first byte (shorter for
/// a connection that has proven nothing yet).
pub fn read_request_within(
    reader: &mut impl Wire,
    idle: Duration,
    whole: Duration,
    carried: Vec<u8>,
) -> Result<Request, ReadError> {
    let mut started = !carried.is_empty();
    let mut deadline = Instant::now() + if started { whole } else { idle };
    let mut head = carried;
    head.truncate(HEAD_LIMIT);
    let head_end = loop {
        reader.set_deadline(deadline)?;
        let available = match reader.fill_buf() {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) if is_timeout(&error) && !started => return Err(ReadError::Closed),
            Err(error) if is_timeout(&error) => {
                return Err(bad(408, "the request came too slowly"));
            }
            Err(error) => return Err(error.into()),
        };
        if available.is_empty() {
            return if head.is_empty() {
                Err(ReadError::Closed)
            } else {
                Err(bad(400, "the connection closed in the middle of a request"))
            };
        }
        if !started {
            started = true;
            deadline = Instant::now() + whole;
        }
        let before = head.len();
        let room = HEAD_LIMIT - before;
        let taken = available.len().min(room);
        head.extend_from_slice(&available[..taken]);
        // Look for the blank line from a little before the new bytes, since it may straddle.
        let from = before.saturating_sub(3);
        if let Some(at) = find(&head[from..], b"\r\n\r\n") {
            let end = from + at + 4;
            reader.consume(end - before);
            head.truncate(end);
            break end;
        }
        reader.consume(taken);
        if head.len() >= HEAD_LIMIT {
            return Err(bad(431, "the request head is too large"));
        }
    };
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut headers);
    match parsed.parse(&head[..head_end]) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err(bad(400, "the request head is incomplete")),
        Err(httparse::Error::TooManyHeaders) => return Err(bad(431, "too many headers")),
        Err(_) => return Err(bad(400, "the request is not valid HTTP/1.1")),
    }
    let method = parsed.method.unwrap_or_default().to_owned();
    let target = parsed.path.unwrap_or_default();
    let version = parsed.version.unwrap_or(1);
    let headers: Vec<(String, String)> = parsed
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_ascii_lowercase(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect();
    let (path, query) = split_target(target).ok_or(bad(400, "the request target is malformed"))?;
    let mut request = Request {
        method,
        path,
        query,
        headers,
        body: Vec::new(),
        keep_alive: false,
    };
    request.keep_alive = wants_keep_alive(&request, version);
    if request.header("transfer-encoding").is_some() {
        return Err(bad(411, "send the body with a Content-Length, not chunked"));
    }
    if request.header_count("content-length") > 1 {
        return Err(bad(400, "more than one Content-Length"));
    }
    if let Some(length) = request.header("content-length") {
        let length: usize = length
            .trim()
            .parse()
            .map_err(|_| bad(400, "the Content-Length is not a number"))?;
        if length > BODY_LIMIT {
            return Err(bad(413, "the body is too large"));
        }
        request.body = read_body(reader, length, deadline)?;
    }
    Ok(request)
}

fn read_body(
    reader: &mut impl Wire,
    length: usize,
    deadline: Instant,
) -> Result<Vec<u8>, ReadError> {
    let mut body = vec![0; length];
    let mut filled = 0;
    while filled < length {
        reader.set_deadline(deadline)?;
        match reader.read(&mut body[filled..]) {
            Ok(0) => return Err(bad(400, "the connection closed in the middle of the body")),
            Ok(n) => filled += n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) if is_timeout(&error) => return Err(bad(408, "the body came too slowly")),
            Err(error) => return Err(error.into()),
        }
    }
    Ok(body)
}

fn wants_keep_alive(request: &Request, version: u8) -> bool {
    let connection = request
        .header("connection")
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    if version == 0 {
        connection.contains("keep-alive")
    } else {
        !connection.contains("close")
    }
}

fn is_timeout(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Splits an origin-form target into its decoded path and query pairs (`*` stays `*`); `None`
/// for any other form (absolute URLs) or bad escapes.
fn split_target(target: &str) -> Option<(String, Vec<(String, String)>)> {
    // `OPTIONS *` asks about the server as a whole; it goes through the checks like any request.
    if target == "*" {
        return Some(("*".to_owned(), Vec::new()));
    }
    if !target.starts_with('/') {
        return None;
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let path = percent_decode(path, false)?;
    let mut pairs = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        pairs.push((percent_decode(name, true)?, percent_decode(value, true)?));
    }
    Some((path, pairs))
}

/// Decodes `%XX` escapes (and `+` as a space in a query); `None` for a bad escape or bytes that
/// are not UTF-8.
pub fn percent_decode(text: &str, plus_is_space: bool) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        match byte {
            b'%' => {
                let high = hex_value(*bytes.get(i + 1)?)?;
                let low = hex_value(*bytes.get(i + 2)?)?;
                out.push((high << 4) | low);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            other => {
                out.push(other);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// One response, written whole with a `Content-Length`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Headers beyond the ones every response gets.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// A response with a body of `content_type`.
    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            headers: vec![("Content-Type", content_type.to_owned())],
            body: body.into(),
        }
    }

    /// A JSON body.
    pub fn json(status: u16, value: &serde_json::Value) -> Response {
        Response::new(status, "application/json", value.to_string())
    }

    /// A plain-text body, for people and for `curl`.
    pub fn text(status: u16, text: &str) -> Response {
        let mut body = text.to_owned();
        if !body.ends_with('\n') {
            body.push('\n');
        }
        Response::new(status, "text/plain; charset=utf-8", body)
    }

    /// An error as the API gives it: `{"error": message}`.
    pub fn error(status: u16, message: &str) -> Response {
        Response::json(status, &serde_json::json!({ "error": message }))
    }

    /// No body.
    pub fn empty(status: u16) -> Response {
        Response {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// Adds a header.
    pub fn with(mut self, name: &'static str, value: impl Into<String>) -> Response {
        self.headers.push((name, value.into()));
        self
    }

    /// Writes the response; `keep_alive` false adds `Connection: close`.
    pub fn write(&self, stream: &mut TcpStream, keep_alive: bool) -> io::Result<()> {
        stream.set_write_timeout(Some(WRITE_WAIT))?;
        let mut head = format!("HTTP/1.1 {} {}\r\n", self.status, reason(self.status));
        for (name, value) in &self.headers {
            push_header(&mut head, name, value);
        }
        push_common_headers(&mut head);
        push_header(&mut head, "Content-Length", &self.body.len().to_string());
        if !keep_alive {
            push_header(&mut head, "Connection", "close");
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(&self.body);
        stream.write_all(&bytes)?;
        stream.flush()
    }
}

/// Starts a stream of Server-Sent Events: the head, with no length; the stream ends when the
/// connection closes.
pub fn start_event_stream(
    stream: &mut TcpStream,
    extra: &[(&'static str, String)],
) -> io::Result<()> {
    stream.set_write_timeout(Some(WRITE_WAIT))?;
    let mut head = String::from("HTTP/1.1 200 OK\r\n");
    push_header(&mut head, "Content-Type", "text/event-stream");
    for (name, value) in extra {
        push_header(&mut head, name, value);
    }
    push_common_headers(&mut head);
    push_header(&mut head, "Connection", "close");
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.flush()
}

/// Writes one event (`data` may hold newlines: each line gets its own `data:` field).
pub fn write_event(
    stream: &mut TcpStream,
    id: Option<&str>,
    name: Option<&str>,
    data: &str,
) -> io::Result<()> {
    let mut event = String::new();
    if let Some(id) = id {
        event.push_str("id: ");
        event.push_str(id);
        event.push('\n');
    }
    if let Some(name) = name {
        event.push_str("event: ");
        event.push_str(name);
        event.push('\n');
    }
    for line in data.split('\n') {
        event.push_str("data: ");
        event.push_str(line);
        event.push('\n');
    }
    event.push('\n');
    stream.write_all(event.as_bytes())?;
    stream.flush()
}

/// A comment line: keeps the stream alive through idle proxies and finds a peer that left.
pub fn write_keepalive(stream: &mut TcpStream) -> io::Result<()> {
    stream.write_all(b": keep-alive\n\n")?;
    stream.flush()
}

fn push_header(head: &mut String, name: &str, value: &str) {
    // Values are ours; a newline in one would split the head, so none is ever written.
    let value: String = value
        .chars()
        .filter(|c| !matches!(c, '\r' | '\n'))
        .collect();
    head.push_str(name);
    head.push_str(": ");
    head.push_str(&value);
    head.push_str("\r\n");
}

/// What every response says: never cache, never sniff a type, never be framed, never leak the
/// URL (which may carry a login token) to another site.
fn push_common_headers(head: &mut String) {
    push_header(head, "Cache-Control", "no-store");
    push_header(head, "X-Content-Type-Options", "nosniff");
    push_header(head, "X-Frame-Options", "DENY");
    push_header(head, "Referrer-Policy", "no-referrer");
    push_header(head, "Cross-Origin-Resource-Policy", "same-origin");
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        204 => "No Content",
        303 => "See Other",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Content",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_split_into_a_decoded_path_and_query() {
        let (path, query) = split_target("/api/x%20y?a=1&b=two+words&c").expect("valid");
        assert_eq!(path, "/api/x y");
        assert_eq!(
            query,
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "two words".into()),
                ("c".into(), String::new())
            ]
        );
        assert_eq!(split_target("http://evil/"), None);
        assert_eq!(split_target("*"), Some(("*".to_owned(), Vec::new())));
        assert_eq!(split_target("/%zz"), None);
        assert_eq!(split_target("/%ff"), None, "not UTF-8");
        assert_eq!(split_target("/%4"), None);
    }

    #[test]
    fn header_values_never_split_the_head() {
        let mut head = String::new();
        push_header(&mut head, "Location", "/\r\nSet-Cookie: x=1");
        assert_eq!(head, "Location: /Set-Cookie: x=1\r\n");
    }
}
