//! The session's door: a TCP listener on 127.0.0.1 that lets one authenticated client at a time
//! talk MCP.
//!
//! Every connection gets its own thread, which must read a complete first line within
//! [`TOKEN_WAIT`] of the accept — one deadline for the whole line, not a timeout per read, so a
//! peer that trickles a byte at a time is cut off as surely as a silent one. Something that looks
//! like HTTP goes to the window (`once_web`), which checks its own credentials (the page key, or
//! the token as a bearer for MCP over HTTP); only an MCP session over HTTP takes the client slot,
//! through [`Clients::claim_hook`], so one MCP client is served at a time by either door. Anything but
//! `{"once_token":"<hex>"}` with the session's token gets a JSON-RPC error line and is closed.
//! Only then does the connection claim the single client slot; when it is taken, the newcomer
//! gets a "busy" error naming the holder and is closed. The holder runs `once_mcp::serve_with`
//! over the socket until it disconnects, which cancels its calls, exactly as end of input does on
//! stdio.
//!
//! Unauthenticated connections can never keep the owner out. At most [`MAX_HANDSHAKES`] of them
//! wait for their first line at once; when one more arrives, the oldest waiting one is shut down
//! to make room, instead of the newcomer being turned away. A real client presents its token in
//! its first write, right after connecting, so it leaves the queue as soon as its thread has read
//! one line, long before it could become the oldest of 16; connections that hold the door open
//! without a token are the ones that age and are evicted. (Only a flood of sixteen new
//! connections inside that first read could evict a real client; it then sees the connection
//! closed and may retry, and the flood must go on at full speed to do it again.) A connection
//! stays in the queue until it is accepted or its refusal is sent, so a flood costs at most
//! `MAX_HANDSHAKES` threads, each for at most [`TOKEN_WAIT`] and [`DRAIN`], plus those of evicted
//! connections, which end at once.
//!
//! No byte of an unauthenticated connection ever reaches `serve`, and this module must never
//! bind anything but loopback or leave a refused peer waiting.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use once_mcp::{ServeOptions, ServerConfig};

use super::peer;
use once_web::Token;

/// How long a connection may take, from its accept, to send its whole first line.
pub const TOKEN_WAIT: Duration = Duration::from_secs(3);
/// The longest first line read; a token line is 47 bytes.
const FIRST_LINE_LIMIT: usize = 256;
/// Connections allowed to wait for their first line at once; one more evicts the oldest, so a
/// flood of idle connections can neither pile up threads nor turn the owner away.
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
#[derive(Clone)]
struct Holder {
    peer: SocketAddr,
    since: Instant,
    /// Ends the holder when it has been idle long enough (an MCP session over HTTP whose client
    /// may have crashed); socket clients have none, their connection is their liveness.
    evict: Option<once_web::Evict>,
}

/// The one client slot, shared by the socket clients and the window's MCP sessions over HTTP.
pub struct Clients {
    /// The session's address, to name a holder's process by its connection.
    local: SocketAddr,
    holder: Mutex<Option<Holder>>,
}

impl std::fmt::Debug for Clients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clients")
            .field("local", &self.local)
            .finish_non_exhaustive()
    }
}

impl Clients {
    pub fn new(local: SocketAddr) -> Arc<Clients> {
        Arc::new(Clients {
            local,
            holder: Mutex::new(None),
        })
    }

    /// The window's way to take the slot for an MCP session over HTTP.
    pub fn claim_hook(self: &Arc<Self>) -> once_web::Claim {
        let clients = Arc::clone(self);
        Arc::new(move |peer, evict| {
            clients
                .claim(peer, Some(evict))
                .map(|slot| Box::new(slot) as Box<dyn Send>)
                .ok_or_else(|| clients.busy_message())
        })
    }

    /// Takes the slot for `peer`; when it is taken, first asks the holder to leave if it is
    /// idle (outside the lock: leaving drops the holder's slot, which takes the lock).
    fn claim(self: &Arc<Self>, peer: SocketAddr, evict: Option<once_web::Evict>) -> Option<Slot> {
        for _ in 0..2 {
            let stale = {
                let mut holder = self.holder.lock().unwrap_or_else(PoisonError::into_inner);
                match holder.as_ref() {
                    None => {
                        *holder = Some(Holder {
                            peer,
                            since: Instant::now(),
                            evict,
                        });
                        return Some(Slot(Arc::clone(self)));
                    }
                    Some(current) => current.evict.clone(),
                }
            };
            if !stale.is_some_and(|evict| evict()) {
                return None;
            }
        }
        None
    }

    fn busy_message(&self) -> String {
        let holder = self
            .holder
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|holder| (holder.peer, holder.since));
        let Some((peer, since)) = holder else {
            // The holder left between the claim and now; the client may simply retry.
            return "busy: this session was serving another client; try again".into();
        };
        let who = match peer::owner(peer, self.local) {
            Some((pid, name)) => format!("pid {pid} `{name}`"),
            None => "pid unknown".into(),
        };
        format!(
            "busy: this session already serves a client ({who}, from {peer}, connected {}s ago); \
             close that client, or run `once mcp` on stdio for a second one",
            since.elapsed().as_secs()
        )
    }
}

struct Door {
    token: Token,
    config: Arc<ServerConfig>,
    /// The window: HTTP connections are handed to it after their first line.
    web: once_web::Web,
    clients: Arc<Clients>,
    /// The connections waiting for their first line, oldest first, by a number of their own.
    waiting: Mutex<VecDeque<(u64, TcpStream)>>,
    next: AtomicU64,
}

/// Accepts connections for the life of the process; returns only if accepting fails.
pub fn run(
    listener: TcpListener,
    token: Token,
    config: Arc<ServerConfig>,
    web: once_web::Web,
    clients: Arc<Clients>,
) -> io::Result<()> {
    let door = Arc::new(Door {
        token,
        config,
        web,
        clients,
        waiting: Mutex::new(VecDeque::new()),
        next: AtomicU64::new(0),
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
        let accepted = Instant::now();
        let Some(number) = door.wait_for_token(&stream) else {
            continue;
        };
        let handle = Arc::clone(&door);
        let spawned = std::thread::Builder::new()
            .name(format!("connection {peer}"))
            .spawn(move || handle.connection(stream, peer, number, accepted + TOKEN_WAIT));
        if let Err(error) = spawned {
            tracing::warn!("cannot start a thread for {peer}: {error}");
            door.done_waiting(number);
        }
    }
}

fn is_transient(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    ) || out_of_resources(error)
}

/// Too many open files or no memory for a socket: the next accept may succeed.
#[cfg(unix)]
fn out_of_resources(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// Too many open sockets or no buffer space: the next accept may succeed.
#[cfg(windows)]
fn out_of_resources(error: &io::Error) -> bool {
    use windows_sys::Win32::Networking::WinSock::{WSAEMFILE, WSAENOBUFS};
    matches!(error.raw_os_error(), Some(WSAEMFILE | WSAENOBUFS))
}

/// How a connection got past the first line.
enum Entered {
    /// With the token: an MCP client, its reader positioned after the line.
    Mcp(BufReader<TcpStream>),
    /// With an HTTP request line: a request for the window, with the bytes read so far.
    Http(BufReader<TcpStream>, Vec<u8>),
}

/// What the first line of a connection turned out to be.
enum FirstLine {
    Token(Token),
    /// An HTTP request line, with the bytes read so far.
    Http(Vec<u8>),
    Other,
    /// The deadline passed before a whole line came.
    Late,
    Closed,
}

impl Door {
    fn waiting(&self) -> MutexGuard<'_, VecDeque<(u64, TcpStream)>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Puts a new connection in the queue of those waiting for their first line, shutting down
    /// the oldest when the queue is full; `None` if the connection cannot be tracked.
    fn wait_for_token(&self, stream: &TcpStream) -> Option<u64> {
        let tracked = stream
            .try_clone()
            .map_err(|error| tracing::warn!("cannot track a connection: {error}"))
            .ok()?;
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        let mut waiting = self.waiting();
        if waiting.len() >= MAX_HANDSHAKES
            && let Some((_, oldest)) = waiting.pop_front()
        {
            // Its thread's read returns at once and the thread ends; the peer had its chance.
            tracing::info!("evicted a connection that sent no token, to make room");
            let _ = oldest.shutdown(Shutdown::Both);
        }
        waiting.push_back((number, tracked));
        Some(number)
    }

    fn done_waiting(&self, number: u64) {
        self.waiting().retain(|(n, _)| *n != number);
    }

    fn connection(
        self: Arc<Self>,
        stream: TcpStream,
        peer: SocketAddr,
        number: u64,
        deadline: Instant,
    ) {
        let accepted = self.authenticate(&stream, deadline);
        self.done_waiting(number);
        let reader = match accepted {
            Some(Entered::Mcp(reader)) => reader,
            Some(Entered::Http(reader, carried)) => {
                // The window's requests take the client slot only for an MCP session, through
                // the claim hook.
                let Ok(web_stream) = stream.try_clone() else {
                    return;
                };
                self.web.serve_connection(web_stream, reader, carried);
                return;
            }
            None => return,
        };
        let Some(slot) = self.clients.claim(peer, None) else {
            let message = self.clients.busy_message();
            tracing::info!("refused {peer}: {message}");
            refuse(stream, BUSY, &message);
            return;
        };
        tracing::info!("serving {peer}");
        // The slot is freed as soon as the client's input ends and its calls are told to stop,
        // not when they have returned: a host that restarts its client at once must get in.
        // And in any case before the client can see the connection close: a client that waits
        // for the close (the bridge, `once eval`) and connects again at once must find it free.
        let slot = Arc::new(Mutex::new(Some(slot)));
        let release = {
            let slot = Arc::clone(&slot);
            once_mcp::InputEnd(Arc::new(move || {
                slot.lock().unwrap_or_else(PoisonError::into_inner).take();
            }))
        };
        if let Err(error) = serve(&self.config, reader, &stream, release) {
            tracing::warn!("the connection from {peer} failed: {error}");
        }
        slot.lock().unwrap_or_else(PoisonError::into_inner).take();
        let _ = stream.shutdown(Shutdown::Both);
        tracing::info!("{peer} disconnected");
    }

    /// Checks the first line, which must be complete by `deadline`; on success returns the
    /// reader, positioned after it, and what the connection is for.
    fn authenticate(&self, stream: &TcpStream, deadline: Instant) -> Option<Entered> {
        let mut reader = stream
            .try_clone()
            .and_then(|clone| {
                stream.set_nodelay(true)?;
                Ok(BufReader::new(clone))
            })
            .map_err(|error| tracing::warn!("cannot set up a connection: {error}"))
            .ok()?;
        let reason = match first_line(&mut reader, stream, deadline) {
            FirstLine::Token(presented) if self.token.matches(&presented) => {
                return stream
                    .set_read_timeout(None)
                    .map_err(|error| tracing::warn!("cannot clear the read timeout: {error}"))
                    .ok()
                    .map(|()| Entered::Mcp(reader));
            }
            FirstLine::Closed => return None,
            FirstLine::Http(carried) => return Some(Entered::Http(reader, carried)),
            FirstLine::Token(_) => "unauthorized: wrong session token",
            FirstLine::Other => "unauthorized: the first line must be {\"once_token\":\"…\"}",
            FirstLine::Late => "unauthorized: no session token in time",
        };
        refuse(
            stream.try_clone().ok()?,
            UNAUTHORIZED,
            &format!("{reason}; connect with `once mcp --attach`, which presents it"),
        );
        None
    }
}

/// The client slot, held while a client is served; dropping it frees the slot.
struct Slot(Arc<Clients>);

impl Drop for Slot {
    fn drop(&mut self) {
        *self.0.holder.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

fn serve(
    config: &Arc<ServerConfig>,
    reader: BufReader<TcpStream>,
    stream: &TcpStream,
    on_input_end: once_mcp::InputEnd,
) -> io::Result<()> {
    let writer = stream.try_clone()?;
    let options = ServeOptions {
        on_input_end: Some(on_input_end),
        ..ServeOptions::default()
    };
    once_mcp::serve_with(Arc::clone(config), reader, writer, options)
}

/// Reads the first line, at most [`FIRST_LINE_LIMIT`] bytes, all of it before `deadline`: the
/// read timeout is set to what is left of the deadline before every read.
fn first_line(
    reader: &mut BufReader<TcpStream>,
    stream: &TcpStream,
    deadline: Instant,
) -> FirstLine {
    let mut line = Vec::new();
    let ended = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break Err(io::ErrorKind::TimedOut.into());
        }
        if let Err(error) = stream.set_read_timeout(Some(left)) {
            break Err(error);
        }
        let available = match reader.fill_buf() {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => break Err(error),
        };
        if available.is_empty() {
            break Ok(false);
        }
        let room = FIRST_LINE_LIMIT - line.len();
        let newline = available.iter().take(room).position(|&b| b == b'\n');
        let taken = newline.map_or(available.len().min(room), |at| at + 1);
        line.extend_from_slice(&available[..taken]);
        reader.consume(taken);
        if newline.is_some() {
            break Ok(true);
        }
        if line.len() == FIRST_LINE_LIMIT {
            break Ok(false);
        }
    };
    if looks_like_http(&line) {
        return FirstLine::Http(line);
    }
    match ended {
        Ok(true) => {
            let text = line
                .strip_suffix(b"\r\n")
                .or(line.strip_suffix(b"\n"))
                .unwrap_or(&line);
            Token::from_line(text).map_or(FirstLine::Other, FirstLine::Token)
        }
        Ok(false) if line.is_empty() => FirstLine::Closed,
        // Too long, or the peer closed its side in the middle of a line.
        Ok(false) => FirstLine::Other,
        Err(error)
            if matches!(
                error.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) =>
        {
            FirstLine::Late
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

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, port))
    }

    #[test]
    fn a_holder_gives_way_only_when_its_evict_ends_it() {
        let clients = Clients::new(addr(1));
        // The holder keeps its guard where its evict can drop it, as an HTTP session does.
        let held: Arc<Mutex<Option<Box<dyn Send>>>> = Arc::default();
        let idle = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let evict: once_web::Evict = {
            let (held, idle) = (Arc::clone(&held), Arc::clone(&idle));
            Arc::new(move || {
                idle.load(Ordering::Acquire)
                    && held
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .take()
                        .is_some()
            })
        };
        let claim = clients.claim_hook();
        let guard = claim(addr(2), evict).expect("the slot is free");
        *held.lock().unwrap_or_else(PoisonError::into_inner) = Some(guard);

        let busy = clients.claim(addr(3), None);
        assert!(busy.is_none(), "a holder that is not idle keeps the slot");
        assert!(clients.busy_message().starts_with("busy: "));

        idle.store(true, Ordering::Release);
        let socket = clients
            .claim(addr(3), None)
            .expect("the idle holder gave way");
        assert!(
            claim(addr(4), Arc::new(|| false)).is_err(),
            "a socket client cannot be evicted"
        );
        drop(socket);
        assert!(claim(addr(4), Arc::new(|| false)).is_ok(), "freed on drop");
    }

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
