//! The session's door: a TCP listener on 127.0.0.1 that lets one authenticated client at a time
//! talk MCP.
//!
//! Every connection gets its own thread, which reads one first line within [`TOKEN_WAIT`]:
//! something that looks like HTTP is answered `403` and closed (a web page cannot reach the
//! session); anything but `{"once_token":"<hex>"}` with the session's token gets a JSON-RPC error
//! line and is closed. Only then does the connection claim the single client slot; when it is
//! taken, the newcomer gets a "busy" error naming the holder and is closed. The holder runs
//! `once_mcp::serve_with` over the socket until it disconnects, which cancels its calls, exactly
//! as end of input does on stdio. No byte of an unauthenticated connection ever reaches `serve`,
//! and this module must never bind anything but loopback or leave a refused peer waiting.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use once_mcp::{ServeOptions, ServerConfig};

use super::peer;
use super::token::Token;

/// How long a connection may take to send its first line.
pub const TOKEN_WAIT: Duration = Duration::from_secs(3);
/// The longest first line read; a token line is 47 bytes.
const FIRST_LINE_LIMIT: u64 = 256;
/// Connections allowed to sit in the handshake at once; more are closed straight away, so a
/// flood of idle connections cannot pile up threads.
const MAX_HANDSHAKES: usize = 16;
/// How long a refused connection's unread input is drained, so closing it does not reset the
/// connection and destroy the error line before the peer reads it.
const DRAIN: Duration = Duration::from_millis(500);

/// JSON-RPC server error codes of the door (the implementation-defined range).
const BUSY: i64 = -32000;
const UNAUTHORIZED: i64 = -32001;

/// Binds an OS-picked port on the IPv4 loopback address, never a wider one.
pub fn bind() -> io::Result<TcpListener> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
}

/// Who holds the client slot.
#[derive(Debug, Clone, Copy)]
struct Holder {
    peer: SocketAddr,
    since: Instant,
}

struct Door {
    token: Token,
    config: Arc<ServerConfig>,
    local: SocketAddr,
    holder: Mutex<Option<Holder>>,
    handshakes: AtomicUsize,
}

/// Accepts connections for the life of the process; returns only if accepting fails.
pub fn run(listener: TcpListener, token: Token, config: Arc<ServerConfig>) -> io::Result<()> {
    let door = Arc::new(Door {
        token,
        config,
        local: listener.local_addr()?,
        holder: Mutex::new(None),
        handshakes: AtomicUsize::new(0),
    });
    loop {
        let (stream, peer) = match listener.accept() {
            Ok(accepted) => accepted,
            // A connection reset before accept, or a transient lack of descriptors: the
            // listener itself is fine.
            Err(error) if is_transient(&error) => {
                tracing::warn!("accept failed: {error}");
                continue;
            }
            Err(error) => return Err(error),
        };
        if door.handshakes.fetch_add(1, Ordering::SeqCst) >= MAX_HANDSHAKES {
            door.handshakes.fetch_sub(1, Ordering::SeqCst);
            refuse(
                stream,
                BUSY,
                "busy: too many connections are waiting to authenticate",
            );
            continue;
        }
        let door = Arc::clone(&door);
        let spawned = std::thread::Builder::new()
            .name(format!("connection {peer}"))
            .spawn(move || door.connection(stream, peer));
        if let Err(error) = spawned {
            tracing::warn!("cannot start a thread for {peer}: {error}");
        }
    }
}

fn is_transient(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    ) || matches!(
        error.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// What the first line of a connection turned out to be.
enum FirstLine {
    Token(Token),
    Http,
    Other,
    Silent,
    Closed,
}

impl Door {
    fn connection(self: Arc<Self>, stream: TcpStream, peer: SocketAddr) {
        let accepted = self.authenticate(&stream);
        self.handshakes.fetch_sub(1, Ordering::SeqCst);
        let Some(reader) = accepted else { return };
        let Some(slot) = self.claim(peer) else {
            let message = self.busy_message();
            tracing::info!("refused {peer}: {message}");
            refuse(stream, BUSY, &message);
            return;
        };
        tracing::info!("serving {peer}");
        if let Err(error) = serve(&self.config, reader, &stream) {
            tracing::warn!("the connection from {peer} failed: {error}");
        }
        // Free the slot before the client can see the connection close: a client that waits for
        // the close (the bridge, `once eval`) and connects again at once must find it free.
        drop(slot);
        let _ = stream.shutdown(Shutdown::Both);
        tracing::info!("{peer} disconnected");
    }

    /// Checks the first line; on success returns the reader, positioned after it.
    fn authenticate(&self, stream: &TcpStream) -> Option<BufReader<TcpStream>> {
        let mut reader = stream
            .try_clone()
            .and_then(|clone| {
                stream.set_nodelay(true)?;
                stream.set_read_timeout(Some(TOKEN_WAIT))?;
                Ok(BufReader::new(clone))
            })
            .map_err(|error| tracing::warn!("cannot set up a connection: {error}"))
            .ok()?;
        let reason = match first_line(&mut reader) {
            FirstLine::Token(presented) if self.token.matches(&presented) => {
                return stream
                    .set_read_timeout(None)
                    .map_err(|error| tracing::warn!("cannot clear the read timeout: {error}"))
                    .ok()
                    .map(|()| reader);
            }
            FirstLine::Closed => return None,
            FirstLine::Http => {
                refuse_http(stream);
                return None;
            }
            FirstLine::Token(_) => "unauthorized: wrong session token",
            FirstLine::Other => "unauthorized: the first line must be {\"once_token\":\"…\"}",
            FirstLine::Silent => "unauthorized: no session token in time",
        };
        refuse(
            stream.try_clone().ok()?,
            UNAUTHORIZED,
            &format!("{reason}; connect with `once mcp --attach`, which presents it"),
        );
        None
    }

    fn claim(self: &Arc<Self>, peer: SocketAddr) -> Option<Slot> {
        let mut holder = self.holder.lock().unwrap_or_else(PoisonError::into_inner);
        if holder.is_some() {
            return None;
        }
        *holder = Some(Holder {
            peer,
            since: Instant::now(),
        });
        Some(Slot(Arc::clone(self)))
    }

    fn busy_message(&self) -> String {
        let holder = *self.holder.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(holder) = holder else {
            // The holder left between the claim and now; the client may simply retry.
            return "busy: this session was serving another client; try again".into();
        };
        let who = match peer::owner(holder.peer, self.local) {
            Some((pid, name)) => format!("pid {pid} `{name}`"),
            None => "pid unknown".into(),
        };
        format!(
            "busy: this session already serves a client ({who}, from {}, connected {}s ago); \
             close that client, or run `once mcp` on stdio for a second one",
            holder.peer,
            holder.since.elapsed().as_secs()
        )
    }
}

/// The client slot, held while a client is served; dropping it frees the slot.
struct Slot(Arc<Door>);

impl Drop for Slot {
    fn drop(&mut self) {
        *self.0.holder.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

fn serve(
    config: &Arc<ServerConfig>,
    reader: BufReader<TcpStream>,
    stream: &TcpStream,
) -> io::Result<()> {
    let writer = stream.try_clone()?;
    once_mcp::serve_with(Arc::clone(config), reader, writer, ServeOptions::default())
}

fn first_line(reader: &mut BufReader<TcpStream>) -> FirstLine {
    let mut line = Vec::new();
    let read = reader
        .by_ref()
        .take(FIRST_LINE_LIMIT)
        .read_until(b'\n', &mut line);
    if looks_like_http(&line) {
        return FirstLine::Http;
    }
    match read {
        Ok(0) => FirstLine::Closed,
        Ok(_) if line.ends_with(b"\n") => {
            let text = line
                .strip_suffix(b"\r\n")
                .or(line.strip_suffix(b"\n"))
                .unwrap_or(&line);
            Token::from_line(text).map_or(FirstLine::Other, FirstLine::Token)
        }
        // Too long, or the peer closed its side in the middle of a line.
        Ok(_) => FirstLine::Other,
        Err(error)
            if matches!(
                error.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) =>
        {
            if line.is_empty() {
                FirstLine::Silent
            } else {
                FirstLine::Other
            }
        }
        Err(_) => FirstLine::Closed,
    }
}

/// A request line of any HTTP method (or the HTTP/2 preface), or a header line.
fn looks_like_http(line: &[u8]) -> bool {
    const METHODS: [&[u8]; 10] = [
        b"GET ",
        b"POST ",
        b"PUT ",
        b"HEAD ",
        b"DELETE ",
        b"OPTIONS ",
        b"PATCH ",
        b"CONNECT ",
        b"TRACE ",
        b"PRI ",
    ];
    let upper = line.to_ascii_uppercase();
    METHODS.iter().any(|method| upper.starts_with(method))
        || upper.starts_with(b"HOST:")
        || upper.windows(6).any(|w| w == b" HTTP/")
}

/// Answers with one JSON-RPC error line (`id: null`: no request was read) and closes.
fn refuse(stream: TcpStream, code: i64, message: &str) {
    let reply = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": message},
    });
    let mut line = reply.to_string().into_bytes();
    line.push(b'\n');
    close_with(stream, &line);
}

fn refuse_http(stream: &TcpStream) {
    let body = "once: this port speaks MCP to `once mcp --attach`, not HTTP\n";
    let response = format!(
        "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    if let Ok(stream) = stream.try_clone() {
        close_with(stream, response.as_bytes());
    }
}

/// Writes `bytes`, ends our direction, and drains what the peer still sends for a moment: a
/// socket closed with unread input is reset, and a reset can destroy the reply in flight.
fn close_with(mut stream: TcpStream, bytes: &[u8]) {
    let _ = stream.write_all(bytes);
    let _ = stream.flush();
    let _ = stream.shutdown(Shutdown::Write);
    let deadline = Instant::now() + DRAIN;
    let mut sink = [0u8; 4096];
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            break;
        }
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_is_recognised_in_any_case() {
        for line in [
            &b"GET / HTTP/1.1\r\n"[..],
            b"post /mcp HTTP/1.1\r\n",
            b"OPTIONS * HTTP/1.1\r\n",
            b"PRI * HTTP/2.0\r\n",
            b"Host: 127.0.0.1:4242\r\n",
            b"BREW /pot HTTP/1.1\r\n",
        ] {
            assert!(looks_like_http(line), "{}", String::from_utf8_lossy(line));
        }
        for line in [
            &b"{\"once_token\":\"00\"}\n"[..],
            b"{\"jsonrpc\":\"2.0\",\"method\":\"GET \"}\n",
            b"",
        ] {
            assert!(!looks_like_http(line), "{}", String::from_utf8_lossy(line));
        }
    }
}
