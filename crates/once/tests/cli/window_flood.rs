//! Connections that never prove anything must not lock the owner out of `once serve`: floods of
//! 64 and then 500 unauthenticated connections, held open while the owner's own requests (MCP
//! over HTTP with the bearer, the logged-in page with its key, a new login link with the bearer,
//! and `once sessions --url`) must still be answered.
//!
//! Three floods, each on real loopback sockets against a real `once serve`: connections that
//! sent nothing; connections that sent a request earning 401 and asked to be kept alive; and
//! connections trickling a request head a byte at a time. The owner's requests are bounded by a
//! generous [`OWNER_BOUND`] (they take milliseconds; `bench/window_flood.py` measures them).

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{HttpReply, PATIENCE, Serve, TempDir, Test, once_binary, output_within};

const MANIFEST: &str =
    "[targets.core]\nkind = \"command\"\n\n[targets.core.capabilities.build]\ncommand = \"true\"\n";

/// How long the owner's request may take while a flood is held: a bound, not a measurement.
const OWNER_BOUND: Duration = Duration::from_secs(2);
/// The floods' sizes: the old connection limit, then far beyond it.
const FLOODS: [usize; 2] = [64, 500];
/// Descriptors this test process needs for the largest flood and its neighbours' tests (the
/// session, a child, inherits the limit and needs a few per connection).
const DESCRIPTORS: u64 = 4096;

/// How an unauthenticated connection holds on.
#[derive(Clone, Copy, Debug)]
enum Flood {
    /// Connected, sends nothing.
    Idle,
    /// Sent `POST /mcp` without a bearer, read the 401, and keeps the connection.
    Refused,
    /// Sent a request line, then trickles a header a byte at a time.
    Trickle,
}

#[test]
fn idle_connections_never_lock_the_owner_out() {
    flood_then_owner(Flood::Idle);
}

#[test]
fn connections_refused_with_401_never_lock_the_owner_out() {
    flood_then_owner(Flood::Refused);
}

#[test]
fn connections_trickling_a_request_never_lock_the_owner_out() {
    flood_then_owner(Flood::Trickle);
}

fn flood_then_owner(kind: Flood) {
    ensure_descriptors(DESCRIPTORS);
    let test = Test::new().manifest(MANIFEST);
    let state = TempDir::new();
    let serve = Serve::start(test.root(), state.path(), &[]);
    let token = serve.entry()["token"].as_str().expect("a token").to_owned();
    let mut owner = Owner::new(serve.port, token, state.path());
    let mut held: Vec<TcpStream> = Vec::new();
    let trickler = Trickler::start();
    for size in FLOODS {
        while held.len() < size {
            let stream = attack(serve.port, kind);
            if matches!(kind, Flood::Trickle) {
                trickler.add(stream.try_clone().expect("clones"));
            }
            held.push(stream);
        }
        taken_in(serve.port);
        owner.is_served(&format!("{size} {kind:?} connections"));
    }
    trickler.stop();
    drop(held);
}

/// Opens one unauthenticated connection that holds on as `kind` says.
fn attack(port: u16, kind: Flood) -> TcpStream {
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).expect("connects");
    stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
    match kind {
        Flood::Idle => {}
        Flood::Refused => {
            let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
            write!(
                stream,
                "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
                 Accept: application/json, text/event-stream\r\nConnection: keep-alive\r\n\
                 Content-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .expect("writes");
            // Wait for the refusal, so the session has read the request before the owner asks;
            // whether it then keeps the connection is the session's choice.
            let head = read_head(&mut stream);
            assert!(
                head.starts_with("HTTP/1.1 401 ") || head.starts_with("HTTP/1.1 503 "),
                "{head}"
            );
        }
        Flood::Trickle => {
            // The session may already have closed it (a 503 when full): the attacker keeps it.
            let _ = write!(
                stream,
                "GET /api/session HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: "
            );
        }
    }
    stream
}

/// Writes one more byte of an endless header to every stream it holds, round after round, until
/// stopped: requests that never end but are never silent. A stream the session closed is dropped.
struct Trickler {
    streams: Arc<Mutex<Vec<TcpStream>>>,
    going: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Trickler {
    fn start() -> Trickler {
        let streams: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let going = Arc::new(AtomicBool::new(true));
        let thread = {
            let (streams, going) = (Arc::clone(&streams), Arc::clone(&going));
            std::thread::spawn(move || {
                // Bounded even if the test panics before `stop`.
                let end = Instant::now() + PATIENCE * 6;
                while going.load(Ordering::Acquire) && Instant::now() < end {
                    streams
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .retain_mut(|stream| stream.write_all(b"a").is_ok());
                    // The attack's pace (a byte every 50 ms per connection), not a wait.
                    std::thread::sleep(Duration::from_millis(50));
                }
            })
        };
        Trickler {
            streams,
            going,
            thread,
        }
    }

    fn add(&self, stream: TcpStream) {
        self.streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(stream);
    }

    fn stop(self) {
        self.going.store(false, Ordering::Release);
        self.thread.join().expect("the trickler ends");
    }
}

/// Reads until the end of a response head.
fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(0) => break,
            Ok(_) => head.push(byte[0]),
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// The session's owner: holds its token, asks what a person and their agent ask.
struct Owner {
    port: u16,
    token: String,
    state: std::path::PathBuf,
    /// The MCP session over HTTP, once `initialize` made it.
    mcp: Option<String>,
    pings: u64,
    /// The page key of the owner's logged-in page.
    key: String,
}

impl Owner {
    /// The owner, with a page logged in before any flood.
    fn new(port: u16, token: String, state: &std::path::Path) -> Owner {
        let mut owner = Owner {
            port,
            token,
            state: state.to_path_buf(),
            mcp: None,
            pings: 0,
            key: String::new(),
        };
        let link = owner.send(
            "POST /session/login",
            &[("Authorization", &format!("Bearer {}", owner.token))],
            "",
        );
        let url: Value = serde_json::from_str(&link.body).expect("JSON");
        let url = url["url"].as_str().expect("a login link");
        let login = url.rsplit_once("login=").expect("a token").1;
        let redeemed = owner.send(
            "POST /api/login",
            &[("Content-Type", "application/json")],
            &json!({ "login": login }).to_string(),
        );
        let redeemed: Value = serde_json::from_str(&redeemed.body).expect("JSON");
        redeemed["key"]
            .as_str()
            .expect("the page key")
            .clone_into(&mut owner.key);
        owner
    }

    /// Every door the owner uses answers within [`OWNER_BOUND`].
    fn is_served(&mut self, during: &str) {
        let (reply, took) = self.timed_mcp();
        assert_eq!(
            reply.status, 200,
            "MCP over HTTP during {during}: {reply:?}"
        );
        assert!(
            took < OWNER_BOUND,
            "MCP over HTTP took {took:?} during {during}"
        );

        let started = Instant::now();
        let page = self.send("GET /api/session", &[("X-Once-Key", &self.key)], "");
        let took = started.elapsed();
        assert_eq!(page.status, 200, "the page during {during}: {page:?}");
        assert!(took < OWNER_BOUND, "the page took {took:?} during {during}");

        let started = Instant::now();
        let login = self.send(
            "POST /session/login",
            &[("Authorization", &format!("Bearer {}", self.token))],
            "",
        );
        let took = started.elapsed();
        assert_eq!(login.status, 200, "a login link during {during}: {login:?}");
        assert!(
            took < OWNER_BOUND,
            "a login link took {took:?} during {during}"
        );

        let started = Instant::now();
        let mut command = std::process::Command::new(once_binary());
        command
            .args(["sessions", "--url"])
            .env("XDG_STATE_HOME", &self.state);
        let asked = output_within(command);
        let took = started.elapsed();
        assert!(
            asked.status.success(),
            "`once sessions --url` during {during}: {asked:?}"
        );
        assert!(
            took < OWNER_BOUND,
            "`once sessions --url` took {took:?} during {during}"
        );
    }

    /// `initialize` the first time, a `ping` in that session after; the answer and its time.
    fn timed_mcp(&mut self) -> (HttpReply, Duration) {
        let body = match &self.mcp {
            None => json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "flood-test", "version": "0"}}}),
            Some(_) => {
                self.pings += 1;
                json!({"jsonrpc": "2.0", "id": self.pings, "method": "ping"})
            }
        };
        let bearer = format!("Bearer {}", self.token);
        let mut headers = vec![
            ("Authorization", bearer.as_str()),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        let session = self.mcp.clone();
        if let Some(session) = &session {
            headers.push(("Mcp-Session-Id", session));
        }
        let started = Instant::now();
        let reply = self.send("POST /mcp", &headers, &body.to_string());
        let took = started.elapsed();
        if self.mcp.is_none()
            && let Some(id) = reply.header("mcp-session-id")
        {
            self.mcp = Some(id.to_owned());
        }
        (reply, took)
    }

    /// One request on a fresh connection, read until the session closes it.
    fn send(&self, line: &str, headers: &[(&str, &str)], body: &str) -> HttpReply {
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).expect("connects");
        stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
        let mut text = format!("{line} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n", self.port);
        for (name, value) in headers {
            text.push_str(&format!("{name}: {value}\r\n"));
        }
        text.push_str(&format!(
            "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ));
        stream.write_all(text.as_bytes()).expect("writes");
        let mut bytes = Vec::new();
        match stream.read_to_end(&mut bytes) {
            Ok(_) => {}
            Err(error) if error.kind() == ErrorKind::ConnectionReset && !bytes.is_empty() => {}
            Err(error) => panic!("{line}: no whole answer: {error}"),
        }
        HttpReply::parse(&String::from_utf8_lossy(&bytes))
    }
}

/// Raises this process's soft descriptor limit to `wanted` (children inherit it), or fails the
/// test saying how to raise the hard limit.
fn ensure_descriptors(wanted: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    assert_eq!(
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) },
        0
    );
    if limit.rlim_cur >= wanted {
        return;
    }
    assert!(
        limit.rlim_max >= wanted,
        "the flood tests need {wanted} file descriptors and the hard limit is {}: raise it \
         (`ulimit -Hn {wanted}` as root)",
        limit.rlim_max
    );
    limit.rlim_cur = wanted;
    // SAFETY: setrlimit reads the struct we own.
    assert_eq!(
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) },
        0,
        "raising the soft descriptor limit to {wanted}"
    );
}

/// Waits (at most [`PATIENCE`]) until the session has taken every connection made so far off its
/// listener's accept queue, so that the flood is held by the session when the owner is timed.
///
/// `connect` returns as soon as the kernel has queued a connection, long before the session
/// accepts it: right after a flood, 30 to 90 of them still wait in the queue on a loaded machine,
/// and the owner's connection would be timed queueing behind them, or, when the queue of 128 is
/// full, after the kernel dropped its handshake and TCP retried it a second later. The bound is
/// about the session's admission while a flood is held, not the kernel draining a burst this
/// test made an instant before.
fn taken_in(port: u16) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        match accept_queue(port) {
            Some(0) => return,
            Some(waiting) => assert!(
                Instant::now() < deadline,
                "{waiting} connections still wait to be accepted after {PATIENCE:?}"
            ),
            None => panic!("no listener on 127.0.0.1:{port} in `/proc/net/tcp`"),
        }
        // Polling the kernel's count, with a bounded deadline: nothing waits on this pause.
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The number of connections waiting in the accept queue of the listener on 127.0.0.1:`port`
/// (the `rx_queue` of a listening socket in `/proc/net/tcp`).
fn accept_queue(port: u16) -> Option<u64> {
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    let local = format!("0100007F:{port:04X}");
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let listening = fields.get(1) == Some(&local.as_str()) && fields.get(3) == Some(&"0A");
        let (_, waiting) = fields.get(4).filter(|_| listening)?.split_once(':')?;
        u64::from_str_radix(waiting, 16).ok()
    })
}
