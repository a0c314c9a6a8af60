//! The window of a `once serve` session: a web page where the person sees the graph, runs,
//! change sets, memory and evaluators and decides on change sets, served on the session's own
//! loopback port beside its MCP door.
//!
//! # Theory of operation
//!
//! The session's door (`crates/once/src/session/listener.rs`) reads a connection's first line;
//! when it is an HTTP request line, it hands the connection to [`Web::serve_connection`], which
//! serves requests on it, kept alive, until the peer leaves or stays idle for
//! [`http::IDLE_WAIT`]. Every request passes the access checks of `access.rs` (host, origin,
//! page key or bearer, CSRF) before anything is read on its behalf. Routes answer from the
//! libraries (`api.rs`); `/api/events` holds a stream of Server-Sent Events that `events.rs`
//! feeds, so a page learns within a fraction of a second what an agent did.
//!
//! Connections are bounded in number, each with its own deadlines (`admission.rs`): a
//! connection that has proven nothing yet has a small budget of its own, whose oldest member
//! gives way to a newcomer, a short deadline for its one request, and is closed after its
//! answer, so a flood of browsers or scripts costs a bounded number of threads and never takes
//! a place the owner or the MCP client needs. This crate must never bind a socket (the door
//! owns it), never serve a byte beyond the page's own static files to a request that failed its
//! checks, never take a credential from a cookie, and never act for a page beyond a person's
//! decision on a change set.

mod access;
mod admission;
mod api;
mod assets;
pub mod events;
pub mod http;
mod mcp;
mod token;
mod window;

use std::io::BufReader;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use once_graph::query::Picture;
use once_mcp::{LiveWorkspace, ServerConfig};
use serde_json::Value;

pub use admission::{MAX_CONNECTIONS, MAX_UNPROVEN};
pub use events::{Event, Hub};
pub use token::Token;
pub use window::window_tools;

use access::Access;
use http::{ReadError, Request, Response};

/// How long a connection that has proven nothing yet has for its request to arrive whole.
const UNPROVEN_WAIT: Duration = Duration::from_secs(5);
/// How often an idle event stream sends a comment, to notice a page that left.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// What the window reads from the session.
pub struct Sources {
    /// The workspace root.
    pub root: PathBuf,
    /// The session's MCP server config: its read-only tools answer the page, its gates are shown.
    pub config: Arc<ServerConfig>,
    /// The session's live graph.
    pub live: Arc<LiveWorkspace>,
    /// The evaluators' transcripts, as JSON (an array).
    pub evaluators: Arc<dyn Fn() -> Value + Send + Sync>,
    /// A number that changes whenever the evaluators' transcripts would (cheap: looked at five
    /// times a second while a page is open).
    pub evaluators_stamp: Arc<dyn Fn() -> u64 + Send + Sync>,
    /// The hub the window tools publish to (made before the tools, so they can hold it).
    pub hub: Arc<Hub>,
    /// Takes the door's one client slot for an MCP session over HTTP.
    pub claim: Claim,
}

/// Takes the session's one client slot for the client at the address: a guard that holds it
/// until dropped, or the busy message to answer with. The [`Evict`] is what a later claimant
/// calls when the slot is taken.
pub type Claim = Arc<dyn Fn(SocketAddr, Evict) -> Result<Box<dyn Send>, String> + Send + Sync>;

/// Ends the slot's holder if it has been idle long enough to be replaced; whether it did (and
/// so dropped its guard).
pub type Evict = Arc<dyn Fn() -> bool + Send + Sync>;

impl std::fmt::Debug for Sources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sources")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

/// What every connection of one session's window shares.
pub(crate) struct Shared {
    pub(crate) root: PathBuf,
    pub(crate) config: Arc<ServerConfig>,
    pub(crate) live: Arc<LiveWorkspace>,
    pub(crate) evaluators: Arc<dyn Fn() -> Value + Send + Sync>,
    pub(crate) access: Access,
    pub(crate) claim: Claim,
    pub(crate) mcp: Arc<mcp::Sessions>,
    admission: admission::Admission,
}

impl Shared {
    /// The whole graph, reloaded first if a manifest changed.
    pub(crate) fn picture(&self) -> Picture {
        self.live.refresh();
        once_graph::query::picture(&self.live.read())
    }
}

/// One session's window.
#[derive(Clone)]
pub struct Web {
    shared: Arc<Shared>,
    watcher: Arc<events::Watcher>,
}

impl std::fmt::Debug for Web {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Web")
            .field("root", &self.shared.root)
            .field("port", &self.shared.access.port())
            .finish_non_exhaustive()
    }
}

impl Web {
    /// The window of the session listening on `port` with token `session`; starts the watcher
    /// that feeds the pages' events.
    pub fn new(port: u16, session: Token, sources: Sources) -> std::io::Result<Web> {
        let Sources {
            root,
            config,
            live,
            evaluators,
            evaluators_stamp,
            hub,
            claim,
        } = sources;
        let shared = Arc::new(Shared {
            root: root.clone(),
            config,
            live: Arc::clone(&live),
            evaluators,
            access: Access::new(port, session)?,
            claim,
            mcp: Arc::default(),
            admission: admission::Admission::default(),
        });
        let watcher = events::Watcher::start(
            &hub,
            events::Watched {
                root,
                graph: Box::new(move || {
                    live.refresh();
                    live.generation()
                }),
                evaluators: Box::new(move || evaluators_stamp()),
            },
        )?;
        Ok(Web { shared, watcher })
    }

    /// A new one-time link that logs a browser in.
    pub fn login_url(&self) -> std::io::Result<String> {
        self.shared.access.login_url()
    }

    /// Serves HTTP requests on a connection whose first bytes, `carried`, the door already read
    /// (they belong to the first request), until the peer leaves or a request breaks a rule.
    pub fn serve_connection(
        &self,
        stream: TcpStream,
        reader: BufReader<TcpStream>,
        carried: Vec<u8>,
    ) {
        let shared = &self.shared;
        let Some(mut ticket) = shared.admission.admit(&stream) else {
            let _ = stream.shutdown(Shutdown::Both);
            return;
        };
        // An MCP session whose client's every connection closed may be replaced at once.
        let closed = stream
            .peer_addr()
            .ok()
            .map(|peer| Closed(&shared.mcp, peer));
        let mut stream = stream;
        let mut reader = reader;
        let mut carried = Some(carried);
        loop {
            let (idle, whole) = if ticket.is_proven() {
                (http::IDLE_WAIT, http::REQUEST_WAIT)
            } else {
                (UNPROVEN_WAIT, UNPROVEN_WAIT)
            };
            let request = http::read_request_within(
                &mut reader,
                idle,
                whole,
                carried.take().unwrap_or_default(),
            );
            let mut request = match request {
                Ok(request) => request,
                Err(ReadError::Closed | ReadError::Io(_)) => break,
                Err(ReadError::Bad { status, message }) => {
                    let _ = Response::text(status, message).write(&mut stream, false);
                    break;
                }
            };
            if shared.access.proves(&request) && !ticket.prove() {
                let _ = Response::text(503, "too many connections to this session; try again")
                    .write(&mut stream, false);
                break;
            }
            // A connection that proved nothing gets one answer and is closed, never held.
            if !ticket.is_proven() {
                request.keep_alive = false;
            }
            let keep_alive = request.keep_alive;
            match route(shared, &request) {
                Routed::Answer(response) => {
                    if response.write(&mut stream, keep_alive).is_err() || !keep_alive {
                        break;
                    }
                }
                Routed::Events => {
                    stream_events(&self.watcher, &mut stream);
                    break;
                }
                Routed::Mcp => {
                    if !mcp::serve(shared, &request, &mut stream) {
                        break;
                    }
                }
            }
        }
        // Before the peer can see the end of the connection: a client that reads to the end and
        // at once sends its next request must find this connection already counted as closed.
        drop(closed);
        let _ = stream.shutdown(Shutdown::Both);
    }
}

/// Tells the MCP sessions a connection closed, however it ends.
struct Closed<'a>(&'a mcp::Sessions, std::net::SocketAddr);

impl Drop for Closed<'_> {
    fn drop(&mut self) {
        self.0.connection_closed(self.1);
    }
}

enum Routed {
    Answer(Response),
    /// Hold the connection as an event stream.
    Events,
    /// MCP over HTTP, which checks its own bearer (`mcp.rs`).
    Mcp,
}

const FORBIDDEN: &str =
    "forbidden: open the link `once serve` printed, or run `once sessions --url` for a new one";
const DEAD_LOGIN: &str = "forbidden: this login link was already used or has expired; run `once sessions --url` for a new one";

/// Whether the body is declared as JSON.
fn is_json(request: &Request) -> bool {
    request.header("content-type").is_some_and(|t| {
        t.trim()
            .to_ascii_lowercase()
            .starts_with("application/json")
    })
}

fn route(shared: &Shared, request: &Request) -> Routed {
    use Routed::Answer;
    let access = &shared.access;
    if !access.host_ok(request) {
        return Answer(Response::text(
            403,
            "forbidden: the Host header does not name this session",
        ));
    }
    if !access.origin_ok(request) {
        return Answer(Response::text(
            403,
            "forbidden: requests from another origin are refused",
        ));
    }
    let method = request.method.as_str();
    let path = request.path.as_str();
    if path == "/mcp" {
        return Routed::Mcp;
    }
    // The page's own files carry no data: they are served to anyone on our own Host and
    // Origin, since a navigation (a reload included) cannot send the page key. A login link
    // that cannot be used is refused here, before the page would try it.
    if method == "GET" {
        if matches!(path, "/" | "/index.html")
            && let Some(login) = request.query("login")
            && !access.login_waiting(login)
        {
            return Answer(Response::text(403, DEAD_LOGIN));
        }
        match path {
            "/" | "/index.html" => return Answer(assets::page()),
            "/app.js" => return Answer(assets::script()),
            "/app.css" => return Answer(assets::style()),
            _ => {}
        }
    }
    // Logging in: the page posts its link's one-time token and keeps the key it gets back.
    if path == "/api/login" {
        if method != "POST" {
            return Answer(Response::error(405, "use POST").with("Allow", "POST"));
        }
        if !is_json(request) {
            return Answer(Response::error(415, "send the body as application/json"));
        }
        let login = serde_json::from_slice::<serde_json::Value>(&request.body)
            .ok()
            .and_then(|body| body["login"].as_str().map(str::to_owned))
            .unwrap_or_default();
        return Answer(match access.redeem_login(&login) {
            Some(key) => Response::json(200, &serde_json::json!({ "key": key })),
            None => Response::error(403, DEAD_LOGIN),
        });
    }
    // A new login link for `once sessions --url`, which holds the session token.
    if path == "/session/login" {
        if !access.bearer_ok(request) {
            return Answer(Response::error(
                401,
                "unauthorized: send the session token as a bearer token",
            ));
        }
        if method != "POST" {
            return Answer(Response::error(405, "use POST").with("Allow", "POST"));
        }
        return Answer(match access.login_url() {
            Ok(url) => Response::json(200, &serde_json::json!({ "url": url })),
            Err(error) => Response::error(500, &format!("cannot draw a login token: {error}")),
        });
    }
    if !access.key_ok(request) {
        return Answer(Response::text(403, FORBIDDEN));
    }
    if method != "GET" && method != "HEAD" {
        if !access.csrf_ok(request) {
            return Answer(Response::error(
                403,
                "forbidden: the X-Once-CSRF header is missing or wrong",
            ));
        }
        if !is_json(request) {
            return Answer(Response::error(415, "send the body as application/json"));
        }
    }
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    Answer(match (method, segments.as_slice()) {
        ("GET", ["api", "session"]) => api::session(shared),
        ("GET", ["api", "graph"]) => api::graph(shared),
        ("GET", ["api", "changes"]) => api::changes(shared),
        ("GET", ["api", "changes", id]) => api::change_set(shared, id),
        ("POST", ["api", "changes", id, "apply"]) => {
            api::decide(shared, id, api::Decision::Apply, request)
        }
        ("POST", ["api", "changes", id, "reject"]) => {
            api::decide(shared, id, api::Decision::Reject, request)
        }
        ("GET", ["api", "evaluators"]) => api::evaluators(shared),
        ("GET", ["api", "events"]) => return Routed::Events,
        ("POST", ["api", "tool", name]) => api::tool(shared, name, request),
        _ => Response::error(404, &format!("no route for {method} {path}")),
    })
}

/// Holds an event stream open: events from the hub as they come, a comment when idle; ends when
/// the page leaves, stops reading, or the hub drops it. The page fetches what it shows once the
/// stream is open (and again whenever it reopens), so the watcher's look at subscription is the
/// baseline every later change is compared with.
fn stream_events(watcher: &events::Watcher, stream: &mut TcpStream) {
    let Some(events) = watcher.subscribe() else {
        let _ =
            Response::error(503, "too many pages are open on this session").write(stream, false);
        return;
    };
    if http::start_event_stream(stream, &[]).is_err() {
        return;
    }
    loop {
        match events.recv_timeout(KEEPALIVE) {
            Ok(event) => {
                if http::write_event(stream, None, Some(event.name), &event.data).is_err() {
                    return;
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if http::write_keepalive(stream).is_err() {
                    return;
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
        }
    }
}
