//! MCP sessions over HTTP: each one a `once_mcp::serve_with` loop on its own thread, fed through
//! a pipe, whose output a router hands to the HTTP answers waiting for it.
//!
//! The router is the loop's writer. It reads each line the loop writes and puts it in a
//! mailbox: a response (an `id` with `result` or `error`) in the one of the POST that sent that
//! id; a `notifications/progress` in the one of the POST whose request carried that progress
//! token; anything else in the GET stream's if one is open, else in any waiting POST's, else
//! nowhere. It never blocks (mailboxes never do), so the loop's own bounded outbox never fills
//! because of a slow client.
//!
//! A session holds the door's one client slot from `initialize` until it ends: by `DELETE`, by
//! [`IDLE_END`] without a request or stream, by a newcomer when its client has left (nothing in
//! flight, no stream, every connection that carried its messages closed) or it has been idle for
//! [`IDLE_REPLACE`], or when its loop stops. Ending closes the input (the loop cancels its calls),
//! closes every mailbox (their answers end) and frees the slot. This module must never write to
//! a socket.

use std::collections::{HashMap, HashSet};
use std::io::{self, BufReader, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use once_mcp::message::RequestId;
use once_mcp::{ServeOptions, ServerConfig};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

use super::mailbox::Mailbox;
use super::pipe::{self, Input, Refused};

/// A session with nothing in flight and no stream open for this long may be replaced by a new
/// `initialize` (or a socket client), so a client that crashed cannot lock the person out.
pub(super) const IDLE_REPLACE: Duration = Duration::from_secs(60);
/// A session with nothing in flight and no stream open for this long ends by itself.
pub(super) const IDLE_END: Duration = Duration::from_secs(30 * 60);
/// How often idle sessions are looked for.
const REAP_EVERY: Duration = Duration::from_secs(15);
/// How long a message may wait for room in the loop's input.
const INPUT_WAIT: Duration = Duration::from_secs(10);

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The guard of the door's client slot, held for the session's life.
pub(super) type Held = Box<dyn Send>;

/// Who waits for the loop's output.
#[derive(Debug)]
struct Routes {
    /// The POSTs waiting for a response, by request id.
    pending: HashMap<RequestId, Arc<Mailbox>>,
    /// Progress tokens (as JSON text) of the pending requests.
    progress: HashMap<String, RequestId>,
    /// The standalone stream, if open.
    stream: Option<Arc<Mailbox>>,
    /// When the session last had a request in flight or a stream open.
    last_active: Instant,
    /// The connections that carried its messages and are still open.
    connections: HashSet<SocketAddr>,
}

impl Routes {
    fn idle_for(&self, now: Instant) -> Option<Duration> {
        (self.pending.is_empty() && self.stream.is_none())
            .then(|| now.saturating_duration_since(self.last_active))
    }

    /// Nothing in flight, no stream, and every connection its client used is closed: the client
    /// has most likely exited without `DELETE` (many do), so nobody is left to serve.
    fn departed(&self) -> bool {
        self.pending.is_empty() && self.stream.is_none() && self.connections.is_empty()
    }
}

/// One MCP session.
pub(super) struct Session {
    id: String,
    input: Input,
    routes: Mutex<Routes>,
    held: Mutex<Option<Held>>,
    ended: AtomicBool,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

/// Why a request could not be handed to the loop.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// The session ended.
    Ended,
    /// A request with this id is already in flight.
    DuplicateId,
    /// The loop's input stayed full.
    Busy,
    /// The standalone stream is already open.
    StreamOpen,
}

impl Session {
    pub(super) fn id(&self) -> &str {
        &self.id
    }

    pub(super) fn is_ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }

    fn routes(&self) -> MutexGuard<'_, Routes> {
        lock(&self.routes)
    }

    /// Hands a request to the loop; its answer comes in the returned mailbox.
    pub(super) fn request(
        &self,
        id: RequestId,
        progress: Option<&Value>,
        line: &[u8],
    ) -> Result<Arc<Mailbox>, Refusal> {
        let mailbox = Arc::new(Mailbox::default());
        {
            let mut routes = self.routes();
            if self.ended.load(Ordering::Acquire) {
                return Err(Refusal::Ended);
            }
            if routes.pending.contains_key(&id) {
                return Err(Refusal::DuplicateId);
            }
            routes.pending.insert(id.clone(), Arc::clone(&mailbox));
            if let Some(token) = progress {
                routes.progress.insert(token.to_string(), id.clone());
            }
            routes.last_active = Instant::now();
        }
        match self.input.push(line, INPUT_WAIT) {
            Ok(()) => Ok(mailbox),
            Err(refused) => {
                self.forget(&id);
                Err(match refused {
                    Refused::Closed => Refusal::Ended,
                    Refused::Full => Refusal::Busy,
                })
            }
        }
    }

    /// Hands a notification (or a client's response) to the loop.
    pub(super) fn notify(&self, line: &[u8], cancels: Option<&RequestId>) -> Result<(), Refusal> {
        {
            let mut routes = self.routes();
            routes.last_active = Instant::now();
            // A cancelled request is never answered: its connection ends with no response.
            if let Some(mailbox) = cancels.and_then(|id| routes.pending.remove(id)) {
                routes
                    .progress
                    .retain(|_, waiting| Some(&*waiting) != cancels);
                mailbox.close();
            }
        }
        self.input
            .push(line, INPUT_WAIT)
            .map_err(|refused| match refused {
                Refused::Closed => Refusal::Ended,
                Refused::Full => Refusal::Busy,
            })
    }

    /// The client of request `id` left before its answer: forget it, and cancel the call if it
    /// still runs.
    pub(super) fn abandon(&self, id: &RequestId) {
        if self.forget(id) {
            let cancel = serde_json::json!({
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": id.to_value(), "reason": "the HTTP client disconnected"},
            });
            let mut line = cancel.to_string().into_bytes();
            line.push(b'\n');
            let _ = self.input.push(&line, INPUT_WAIT);
        }
    }

    /// Removes request `id`'s routes; whether it was still waiting.
    fn forget(&self, id: &RequestId) -> bool {
        let mut routes = self.routes();
        routes.progress.retain(|_, waiting| waiting != id);
        routes.last_active = Instant::now();
        routes.pending.remove(id).is_some()
    }

    /// Opens the standalone stream.
    pub(super) fn open_stream(&self) -> Result<Arc<Mailbox>, Refusal> {
        let mut routes = self.routes();
        if self.ended.load(Ordering::Acquire) {
            return Err(Refusal::Ended);
        }
        if routes.stream.is_some() {
            return Err(Refusal::StreamOpen);
        }
        let mailbox = Arc::new(Mailbox::default());
        routes.stream = Some(Arc::clone(&mailbox));
        routes.last_active = Instant::now();
        Ok(mailbox)
    }

    /// Closes the standalone stream `mailbox`, if it is still the open one.
    pub(super) fn close_stream(&self, mailbox: &Arc<Mailbox>) {
        let mut routes = self.routes();
        if routes
            .stream
            .as_ref()
            .is_some_and(|open| Arc::ptr_eq(open, mailbox))
        {
            routes.stream = None;
            routes.last_active = Instant::now();
        }
    }

    /// Notes that the connection from `peer` carries this session's messages.
    pub(super) fn used_by(&self, peer: SocketAddr) {
        self.routes().connections.insert(peer);
    }

    /// Whether the session was idle for at least `limit` at `now`.
    fn idle(&self, now: Instant, limit: Duration) -> bool {
        self.routes()
            .idle_for(now)
            .is_some_and(|idle| idle >= limit)
    }

    /// Ends the session: the loop's input closes (it cancels its calls), every answer waiting
    /// ends, and the client slot is free.
    fn finish(&self) {
        if self.ended.swap(true, Ordering::AcqRel) {
            return;
        }
        self.input.close();
        let mut routes = self.routes();
        routes.progress.clear();
        for (_, mailbox) in routes.pending.drain() {
            mailbox.close();
        }
        if let Some(stream) = routes.stream.take() {
            stream.close();
        }
        drop(routes);
        drop(lock(&self.held).take());
        tracing::info!("an MCP session over HTTP ended");
    }

    /// Routes one line the loop wrote.
    fn route(&self, line: &[u8]) {
        let (Ok(head), Ok(text)) = (
            serde_json::from_slice::<Head>(line),
            String::from_utf8(line.to_vec()),
        ) else {
            tracing::warn!("the MCP loop wrote a line that is not JSON");
            return;
        };
        let mut routes = self.routes();
        if head.method.is_none() && (head.result.is_some() || head.error.is_some()) {
            let Some(id) = head.id.as_ref().and_then(RequestId::from_value) else {
                tracing::debug!("dropped a response with no request to go to");
                return;
            };
            routes.progress.retain(|_, waiting| *waiting != id);
            match routes.pending.remove(&id) {
                Some(mailbox) => mailbox.respond(text),
                None => tracing::debug!(%id, "dropped the response of a request whose client left"),
            }
            routes.last_active = Instant::now();
            return;
        }
        if head.method.as_deref() == Some("notifications/progress") {
            let waiting = head
                .params
                .and_then(|params| params.progress_token)
                .and_then(|token| routes.progress.get(&token.to_string()))
                .and_then(|id| routes.pending.get(id));
            if let Some(mailbox) = waiting {
                mailbox.note(text);
            }
            return;
        }
        let open = routes
            .stream
            .as_ref()
            .or_else(|| routes.pending.values().next());
        match open {
            Some(mailbox) => mailbox.note(text),
            None => tracing::debug!("dropped a notification with no stream open"),
        }
    }
}

/// What the router reads of a line: enough to route it, without building the rest.
#[derive(Deserialize)]
struct Head {
    id: Option<Value>,
    method: Option<String>,
    result: Option<IgnoredAny>,
    error: Option<IgnoredAny>,
    params: Option<HeadParams>,
}

#[derive(Deserialize)]
struct HeadParams {
    #[serde(rename = "progressToken")]
    progress_token: Option<Value>,
}

/// The loop's writer: splits what the loop writes into lines and routes each.
struct Router {
    session: Arc<Session>,
    line: Vec<u8>,
}

impl Write for Router {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let mut rest = bytes;
        while let Some(at) = rest.iter().position(|&b| b == b'\n') {
            self.line.extend_from_slice(&rest[..at]);
            self.session.route(&self.line);
            self.line.clear();
            rest = &rest[at + 1..];
        }
        self.line.extend_from_slice(rest);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Every MCP session of the window, by id.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    live: Mutex<HashMap<String, Arc<Session>>>,
    reaping: AtomicBool,
}

impl Sessions {
    /// The live session `id`.
    pub(super) fn find(&self, id: &str) -> Option<Arc<Session>> {
        lock(&self.live).get(id).cloned()
    }

    /// Starts a session whose loop serves `config`, holding the client slot through `held`.
    pub(super) fn start(
        self: &Arc<Self>,
        id: String,
        config: Arc<ServerConfig>,
        held: Held,
    ) -> io::Result<Arc<Session>> {
        let session = self.spawn(id.clone(), config, held)?;
        lock(&self.live).insert(id, Arc::clone(&session));
        self.start_reaper();
        Ok(session)
    }

    /// Starts the loop of one request of the 2026-07-28 revision, which has no session: the
    /// loop has no id a client could name, is in no list, holds no client slot, and ends once
    /// its one answer is out ([`Sessions::end`]). Its router therefore sends every notification
    /// the loop writes to that one request's answer, and to no other.
    pub(super) fn start_single(
        self: &Arc<Self>,
        config: Arc<ServerConfig>,
    ) -> io::Result<Arc<Session>> {
        self.spawn(String::new(), config, Box::new(()))
    }

    fn spawn(
        self: &Arc<Self>,
        id: String,
        config: Arc<ServerConfig>,
        held: Held,
    ) -> io::Result<Arc<Session>> {
        let (input, output) = pipe::pipe();
        let session = Arc::new(Session {
            id,
            input,
            routes: Mutex::new(Routes {
                pending: HashMap::new(),
                progress: HashMap::new(),
                stream: None,
                last_active: Instant::now(),
                connections: HashSet::new(),
            }),
            held: Mutex::new(Some(held)),
            ended: AtomicBool::new(false),
        });
        let router = Router {
            session: Arc::clone(&session),
            line: Vec::new(),
        };
        let sessions = Arc::downgrade(self);
        let loop_session = Arc::downgrade(&session);
        std::thread::Builder::new()
            .name("mcp over http".into())
            .spawn(move || {
                let served = once_mcp::serve_with(
                    config,
                    BufReader::new(output),
                    router,
                    ServeOptions::default(),
                );
                if let Err(error) = served {
                    tracing::warn!("an MCP session over HTTP failed: {error}");
                }
                if let (Some(sessions), Some(session)) =
                    (sessions.upgrade(), loop_session.upgrade())
                {
                    sessions.end(&session);
                }
            })?;
        Ok(session)
    }

    /// Forgets the connection from `peer`, which closed, in every session it carried.
    pub(crate) fn connection_closed(&self, peer: SocketAddr) {
        for session in lock(&self.live).values() {
            session.routes().connections.remove(&peer);
        }
    }

    /// Ends `session` and forgets it.
    pub(super) fn end(&self, session: &Session) {
        if !session.id.is_empty() {
            lock(&self.live).remove(&session.id);
        }
        session.finish();
    }

    /// What a later claimant of the client slot calls: ends `session` if its client has left or
    /// it has been idle for [`IDLE_REPLACE`]; whether it did.
    pub(super) fn evict(sessions: &Weak<Sessions>, session: &Weak<Session>) -> bool {
        let (Some(sessions), Some(session)) = (sessions.upgrade(), session.upgrade()) else {
            return false;
        };
        if session.routes().departed() {
            tracing::info!("replacing an MCP session over HTTP whose client left without DELETE");
        } else if session.idle(Instant::now(), IDLE_REPLACE) {
            tracing::info!("replacing an MCP session over HTTP idle for over {IDLE_REPLACE:?}");
        } else {
            return false;
        }
        sessions.end(&session);
        true
    }

    /// Starts, once, the thread that ends sessions idle for [`IDLE_END`].
    fn start_reaper(self: &Arc<Self>) {
        if self.reaping.swap(true, Ordering::AcqRel) {
            return;
        }
        let sessions = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name("mcp over http reaper".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(REAP_EVERY);
                    let Some(sessions) = sessions.upgrade() else {
                        return;
                    };
                    let now = Instant::now();
                    let idle: Vec<Arc<Session>> = lock(&sessions.live)
                        .values()
                        .filter(|session| session.idle(now, IDLE_END))
                        .cloned()
                        .collect();
                    for session in idle {
                        tracing::info!("ending an MCP session over HTTP idle for {IDLE_END:?}");
                        sessions.end(&session);
                    }
                }
            });
        if let Err(error) = spawned {
            self.reaping.store(false, Ordering::Release);
            tracing::warn!("cannot start the MCP session reaper: {error}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::mailbox::Next;
    use serde_json::json;

    fn routes(last_active: Instant) -> Routes {
        Routes {
            pending: HashMap::new(),
            progress: HashMap::new(),
            stream: None,
            last_active,
            connections: HashSet::new(),
        }
    }

    #[test]
    fn a_client_has_left_when_nothing_is_in_flight_no_stream_is_open_and_no_connection_is() {
        let mut routes = routes(Instant::now());
        assert!(routes.departed());
        let peer: SocketAddr = "127.0.0.1:40000".parse().expect("an address");
        routes.connections.insert(peer);
        assert!(!routes.departed(), "a keep-alive connection is still open");
        routes.connections.remove(&peer);
        routes.stream = Some(Arc::new(Mailbox::default()));
        assert!(!routes.departed(), "its stream is open");
        routes.stream = None;
        routes
            .pending
            .insert(RequestId::Integer(1), Arc::new(Mailbox::default()));
        assert!(!routes.departed(), "a request is in flight");
    }

    #[test]
    fn only_a_session_with_nothing_in_flight_and_no_stream_is_idle() {
        let start = Instant::now();
        let later = start + IDLE_REPLACE;
        let mut idle = routes(start);
        assert_eq!(idle.idle_for(later), Some(IDLE_REPLACE));
        idle.stream = Some(Arc::new(Mailbox::default()));
        assert_eq!(idle.idle_for(later), None, "a stream is open");
        idle.stream = None;
        idle.pending
            .insert(RequestId::Integer(1), Arc::new(Mailbox::default()));
        assert_eq!(idle.idle_for(later), None, "a request is in flight");
    }

    #[test]
    fn the_loop_answers_through_the_router_and_ending_closes_everything() {
        let sessions = Arc::new(Sessions::default());
        let config = Arc::new(ServerConfig::new("0"));
        let session = sessions
            .start("s".into(), config, Box::new(()))
            .expect("starts");
        let line = b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n";
        let mailbox = session
            .request(RequestId::Integer(3), None, line)
            .expect("goes in");
        assert_eq!(
            session.request(RequestId::Integer(3), None, line).err(),
            Some(Refusal::DuplicateId)
        );
        match mailbox.next(Duration::from_secs(10)) {
            Next::Response(reply) => {
                let reply: Value = serde_json::from_str(&reply).expect("JSON");
                assert_eq!(reply, json!({"jsonrpc": "2.0", "id": 3, "result": {}}));
            }
            other => panic!("{other:?}"),
        }
        let stream = session.open_stream().expect("opens");
        assert_eq!(session.open_stream().err(), Some(Refusal::StreamOpen));
        sessions.end(&session);
        assert_eq!(stream.next(Duration::ZERO), Next::Closed);
        assert!(sessions.find("s").is_none());
        assert_eq!(
            session.request(RequestId::Integer(4), None, line).err(),
            Some(Refusal::Ended)
        );
    }
}
