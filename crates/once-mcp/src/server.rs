//! The MCP server core: handshake, dispatch, tool calls, cancellation and the
//! read loop, over any reader and writer.
//!
//! It sees only a byte reader and a byte writer: no file descriptors, signals
//! or process state (the binary owns those). One `serve` call is one
//! connection. It must never let one bad message end the loop or be answered
//! under another message's id, it must never write to the output except
//! through the single writer thread, and no answer it builds may grow with what
//! a client sends: quoted names are clipped, tool lists and error texts bounded.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, BufRead, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::arguments::check_arguments;
use crate::codec::{DEFAULT_MAX_LINE_BYTES, DecodeError, Frame, LineReader, decode_line, is_blank};
use crate::era::{self, Envelope, Era};
use crate::message::{
    INTERNAL_ERROR, INVALID_REQUEST, Incoming, PARSE_ERROR, RequestId, RpcError, classify,
    error_response, excerpt, result_response,
};
use crate::outbox::{self, Outbox, Writer};
use crate::task::{self, Task, TaskPolicy, Tasks};
use crate::tool::{
    Answer, CallContext, CancelToken, Gate, Gates, Handler, LogLevel, LogThreshold, Tool,
    ToolResult, answer_output_schema, json_kind, log_to_client, validate_tools, wrap_output_schema,
};
use crate::version::ProtocolVersion;

/// The `_meta` key under which `initialize` reports the workspace root
/// (reverse-DNS prefix, as the spec's `_meta` key rules ask).
pub const WORKSPACE_META_KEY: &str = "dev.once/workspace";

/// The size at which a `tools/list` page ends. It is well above the whole catalog with every tool
/// enabled, in `once serve` too (`once query tools --markdown` prints the figure, and the book's
/// agents guide quotes it): many hosts read only the first page, and a tool the person enabled must never be
/// hidden on a second one. The catalog does not grow with the workspace; the limit is a guard
/// against a catalog that one day would.
pub const TOOLS_PAGE_BYTES: usize = 96 * 1024;
/// The longest text of a tool error; what is longer is cut (see [`error_result`]).
const ERROR_TEXT_BYTES: usize = 4 * 1024;

/// What the server offers and how.
pub struct ServerConfig {
    /// `serverInfo.name`.
    pub name: String,
    /// `serverInfo.version`.
    pub version: String,
    /// `instructions` of the initialize result (omitted when empty).
    pub instructions: String,
    /// Reported as `_meta["dev.once/workspace"]` of the initialize result.
    pub workspace_root: Option<String>,
    /// Which gated tools are available.
    pub gates: Gates,
    /// The catalog; checked by [`validate_tools`] when serving starts.
    pub tools: Vec<Tool>,
    /// Called before each request except `ping` (the binary reloads the
    /// graph here when a manifest changed). Runs on the read loop.
    pub before_request: Option<Arc<dyn Fn() + Send + Sync>>,
    /// How many tools one `tools/list` page holds.
    pub page_size: usize,
    /// The calls answered with a task (`io.modelcontextprotocol/tasks`): the process's, so a
    /// task made on one connection is found from any other.
    pub tasks: Arc<Tasks>,
}

impl ServerConfig {
    /// A config named `once-mcp` with no tools, closed gates and pages of 100.
    pub fn new(version: impl Into<String>) -> Self {
        Self {
            name: "once-mcp".into(),
            version: version.into(),
            instructions: String::new(),
            workspace_root: None,
            gates: Gates::default(),
            tools: Vec::new(),
            before_request: None,
            page_size: 100,
            tasks: Arc::new(Tasks::new(TaskPolicy::default())),
        }
    }
}

impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerConfig")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("workspace_root", &self.workspace_root)
            .field("gates", &self.gates)
            .field("tools", &self.tools)
            .field("before_request", &self.before_request.is_some())
            .field("page_size", &self.page_size)
            .field("tasks", self.tasks.policy())
            .finish_non_exhaustive()
    }
}

/// Knobs of one connection's loop.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Longest accepted line; longer ones get an error and are skipped.
    pub max_line_bytes: usize,
    /// Most tool calls running at once; more get a -32603 "busy" error.
    pub max_in_flight: usize,
    /// Most bytes of output waiting for the client to read them. When they are reached, replies
    /// wait (so the loop stops reading input) and notifications are dropped; see `outbox.rs`.
    pub outbox_bytes: usize,
    /// How long, at end of input, to wait for cancelled calls to return.
    pub shutdown_grace: Duration,
    /// When cancelled, the loop stops before reading the next line. (A read
    /// already blocked cannot be interrupted from here; the binary closes the
    /// input or exits.)
    pub shutdown: CancelToken,
    /// Called once when the input has ended and every running call has been told to stop,
    /// before the loop waits for them to return: a door frees its client slot here, so that a
    /// client which reconnects at once is served instead of told the session is busy.
    pub on_input_end: Option<InputEnd>,
}

/// What [`ServeOptions::on_input_end`] calls.
#[derive(Clone)]
pub struct InputEnd(pub Arc<dyn Fn() + Send + Sync>);

impl std::fmt::Debug for InputEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InputEnd")
    }
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            max_in_flight: 32,
            outbox_bytes: outbox::DEFAULT_CAPACITY,
            shutdown_grace: Duration::from_millis(500),
            shutdown: CancelToken::new(),
            on_input_end: None,
        }
    }
}

/// Serves one connection with default options until `reader` hits end of
/// input. See [`serve_with`].
pub fn serve<R: BufRead, W: Write + Send + 'static>(
    config: Arc<ServerConfig>,
    reader: R,
    writer: W,
) -> io::Result<()> {
    serve_with(config, reader, writer, ServeOptions::default())
}

/// Serves one connection until end of input, shutdown, or a broken output.
///
/// At the end it cancels every in-flight call, waits for them at most
/// `shutdown_grace`, writes and flushes what they queued, and returns. An
/// invalid catalog is refused before anything is read (`InvalidInput`).
pub fn serve_with<R: BufRead, W: Write + Send + 'static>(
    config: Arc<ServerConfig>,
    reader: R,
    writer: W,
    options: ServeOptions,
) -> io::Result<()> {
    validate_tools(&config.tools).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let writer = Writer::spawn(writer, options.outbox_bytes)?;
    let mut session = Session::new(config, writer.outbox(), &options);
    let mut lines = LineReader::new(reader, options.max_line_bytes);
    let read_result = loop {
        if options.shutdown.is_cancelled() || session.outbox.is_broken() {
            break Ok(());
        }
        match lines.next_frame() {
            Ok(None) => break Ok(()),
            Ok(Some(Frame::Line(line))) => session.handle_line(&line),
            Ok(Some(Frame::TooLong { length })) => {
                tracing::warn!(length, "dropped an oversized line");
                session.outbox.send(&error_response(
                    None,
                    &RpcError::new(
                        INVALID_REQUEST,
                        format!(
                            "Invalid Request: the message is {length} bytes, over the {} byte limit",
                            options.max_line_bytes
                        ),
                    ),
                ));
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading from the client failed");
                break Err(e);
            }
        }
    };
    session.calls.cancel_all();
    if let Some(InputEnd(hook)) = &options.on_input_end {
        hook();
    }
    session.calls.wait_idle(options.shutdown_grace);
    let write_result = writer.close();
    read_result.and(write_result)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Where a reply goes: straight out, or into a batch being assembled.
#[derive(Clone, Debug)]
enum Sink {
    Direct(Outbox),
    Batch(Arc<Batch>),
}

/// A batch reply under construction: written as one array line once every
/// request of the batch has delivered (a suppressed reply delivers nothing).
#[derive(Debug)]
struct Batch {
    outbox: Outbox,
    state: Mutex<(usize, Vec<Value>)>,
}

impl Sink {
    /// Announces one more reply to wait for (batches only).
    fn expect(&self) {
        if let Self::Batch(batch) = self {
            lock(&batch.state).0 += 1;
        }
    }

    /// Delivers a reply, or `None` for a reply that is suppressed.
    fn deliver(&self, reply: Option<Value>) {
        match self {
            Self::Direct(outbox) => {
                if let Some(reply) = reply {
                    outbox.send(&reply);
                }
            }
            Self::Batch(batch) => {
                let mut state = lock(&batch.state);
                state.1.extend(reply);
                state.0 = state.0.saturating_sub(1);
                // An all-notification (or all-suppressed) batch gets no reply
                // at all, as JSON-RPC requires.
                if state.0 == 0 && !state.1.is_empty() {
                    let replies = std::mem::take(&mut state.1);
                    batch.outbox.send(&Value::Array(replies));
                }
            }
        }
    }
}

/// One running tool call.
#[derive(Debug)]
struct Running {
    token: CancelToken,
    /// The client cancelled it: its reply must never be written.
    suppressed: bool,
}

/// The calls in flight, shared by the loop and the workers.
#[derive(Debug, Default)]
struct Calls {
    running: Mutex<HashMap<RequestId, Running>>,
    idle: Condvar,
}

impl Calls {
    /// Cancels everything and waits (bounded) for the workers to finish.
    /// Tells every running call to stop.
    fn cancel_all(&self) {
        for call in lock(&self.running).values() {
            call.token.cancel();
        }
    }

    /// Waits, at most `grace`, for the running calls to return.
    fn wait_idle(&self, grace: Duration) {
        let deadline = Instant::now() + grace;
        let mut running = lock(&self.running);
        while !running.is_empty() {
            let now = Instant::now();
            if now >= deadline {
                tracing::warn!(left = running.len(), "tool calls still running at shutdown");
                return;
            }
            running = self
                .idle
                .wait_timeout(running, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

/// The state of one connection.
struct Session {
    config: Arc<ServerConfig>,
    outbox: Outbox,
    version: ProtocolVersion,
    initialized: bool,
    /// `clientInfo` of `initialize` as `name/version`, so a tool can say who asked.
    client: Option<Arc<str>>,
    log_threshold: Arc<LogThreshold>,
    calls: Arc<Calls>,
    max_in_flight: usize,
}

impl Session {
    fn new(config: Arc<ServerConfig>, outbox: Outbox, options: &ServeOptions) -> Self {
        Self {
            config,
            outbox,
            // Before initialize we answer in the newest shape.
            version: ProtocolVersion::LATEST,
            initialized: false,
            client: None,
            log_threshold: Arc::new(LogThreshold::off()),
            calls: Arc::new(Calls::default()),
            max_in_flight: options.max_in_flight,
        }
    }

    fn handle_line(&mut self, line: &[u8]) {
        if is_blank(line) {
            return;
        }
        match decode_line(line) {
            Err(DecodeError::LoneSurrogate {
                escape,
                offset,
                lenient,
            }) => self.refuse_lone_surrogate(&escape, offset, *lenient),
            Err(e) => {
                tracing::debug!(error = %e, "unparseable line");
                self.outbox.send(&error_response(
                    None,
                    &RpcError::new(PARSE_ERROR, format!("Parse error: {e}")),
                ));
            }
            Ok(Value::Array(items)) => self.handle_batch(items),
            Ok(value) => {
                let sink = Sink::Direct(self.outbox.clone());
                self.handle_message(value, &sink);
            }
        }
    }

    /// A message whose strings are no Unicode text is not served, but it is answered as the
    /// request it is: read with U+FFFD in place of its lone surrogates, it names its id.
    fn refuse_lone_surrogate(&mut self, escape: &str, offset: usize, lenient: Value) {
        let id = match classify(lenient) {
            Incoming::Request { id, .. } | Incoming::Invalid { id: Some(id), .. } => Some(id),
            // A notification is never answered, nor is a response.
            Incoming::Notification { .. } | Incoming::Response => return,
            Incoming::Invalid { id: None, .. } => None,
        };
        tracing::debug!(offset, "a lone surrogate escape");
        self.outbox.send(&error_response(
            id.as_ref(),
            &RpcError::new(
                INVALID_REQUEST,
                format!(
                    "Invalid Request: the message holds a lone UTF-16 surrogate escape (`{escape}` at \
                     byte {offset}), which is no Unicode character; send text as UTF-8, or a \
                     surrogate only as half of a pair"
                ),
            ),
        ));
    }

    fn handle_batch(&mut self, items: Vec<Value>) {
        let refuse =
            |message: String| error_response(None, &RpcError::new(INVALID_REQUEST, message));
        if !(self.initialized && self.version.accepts_batches()) {
            self.outbox.send(&refuse(format!(
                "Invalid Request: JSON-RPC batches are only part of protocol version 2025-03-26; this connection uses {}",
                self.version
            )));
            return;
        }
        if items.is_empty() {
            self.outbox
                .send(&refuse("Invalid Request: an empty batch".into()));
            return;
        }
        // The guard count of 1 keeps the batch open until every element was
        // dispatched, even if fast replies arrive meanwhile.
        let batch = Arc::new(Batch {
            outbox: self.outbox.clone(),
            state: Mutex::new((1, Vec::new())),
        });
        let sink = Sink::Batch(batch);
        for item in items {
            self.handle_message(item, &sink);
        }
        sink.deliver(None);
    }

    fn handle_message(&mut self, value: Value, sink: &Sink) {
        match classify(value) {
            Incoming::Response => tracing::debug!("ignored a response: we send no requests"),
            Incoming::Invalid { id, reason } => {
                sink.expect();
                sink.deliver(Some(error_response(
                    id.as_ref(),
                    &RpcError::new(INVALID_REQUEST, reason),
                )));
            }
            Incoming::Notification { method, params } => self.handle_notification(&method, params),
            Incoming::Request { id, method, params } => {
                sink.expect();
                self.handle_request(id, &method, params, sink);
            }
        }
    }

    fn handle_notification(&mut self, method: &str, params: Option<Value>) {
        match method {
            "notifications/initialized" => tracing::debug!("client initialized"),
            "notifications/cancelled" => {
                let Some(id) = params
                    .as_ref()
                    .and_then(|p| p.get("requestId"))
                    .and_then(RequestId::from_value)
                else {
                    tracing::debug!("cancellation without a usable requestId");
                    return;
                };
                let mut running = lock(&self.calls.running);
                if let Some(call) = running.get_mut(&id) {
                    tracing::debug!(%id, "call cancelled by the client");
                    call.suppressed = true;
                    call.token.cancel();
                }
            }
            // Notifications never get a reply, even unknown ones.
            other => tracing::debug!(method = other, "ignored a notification"),
        }
    }

    fn handle_request(&mut self, id: RequestId, method: &str, params: Option<Value>, sink: &Sink) {
        // The era is the request's own: a modern one is served by what it carries, whatever the
        // connection negotiated before.
        let modern = match era::classify(method, params.as_ref()) {
            Ok(Era::Modern(envelope)) => Some(envelope),
            Ok(Era::Handshake) => None,
            Err(error) => {
                sink.deliver(Some(error_response(Some(&id), &error)));
                return;
            }
        };
        if modern.is_none() && !self.initialized && needs_initialize(method) {
            sink.deliver(Some(error_response(
                Some(&id),
                &era::not_initialized(method),
            )));
            return;
        }
        if let Some(hook) = self
            .config
            .before_request
            .as_ref()
            .filter(|_| method != "ping")
            && catch_unwind(AssertUnwindSafe(|| hook())).is_err()
        {
            tracing::error!("the before_request hook panicked");
        }
        // A bug in a method handler must cost only this request, under its id.
        let outcome = catch_unwind(AssertUnwindSafe(|| match &modern {
            Some(envelope) => self.dispatch_modern(&id, method, params, envelope, sink),
            None => self.dispatch(&id, method, params, sink),
        }));
        let reply = match outcome {
            Ok(None) => return, // a worker thread owns the reply now
            Ok(Some(Ok(result))) if modern.is_some() => result_response(
                &id,
                era::stamp_result(result, &self.config.name, &self.config.version),
            ),
            Ok(Some(Ok(result))) => result_response(&id, result),
            Ok(Some(Err(error))) => error_response(Some(&id), &error),
            Err(panic) => error_response(
                Some(&id),
                &RpcError::new(
                    INTERNAL_ERROR,
                    format!(
                        "Internal error while handling {method}: {}",
                        panic_text(&panic)
                    ),
                ),
            ),
        };
        sink.deliver(Some(reply));
    }

    /// `None` when the reply will be delivered later by a worker.
    fn dispatch(
        &mut self,
        id: &RequestId,
        method: &str,
        params: Option<Value>,
        sink: &Sink,
    ) -> Option<Result<Value, RpcError>> {
        // JSON-RPC lets params be an object or an array; a number, string or boolean is a
        // method's invalid params (-32602), which is what a client's validation of
        // `tools/call` params expects, not a malformed message.
        if let Some(params) = params.as_ref().filter(|p| !(p.is_object() || p.is_array()))
            && KNOWN_METHODS.contains(&method)
        {
            return Some(Err(RpcError::invalid_params(format!(
                "Invalid params: the params of {method} must be an object, not {}",
                json_kind(params)
            ))));
        }
        Some(match method {
            "initialize" => self.initialize(params),
            "ping" => Ok(json!({})),
            "logging/setLevel" => self.set_level(params),
            "tools/list" => self.list_tools(params, self.version),
            "tools/call" => {
                let caller = Caller {
                    version: self.version,
                    client: self.client.clone(),
                    log_threshold: Arc::clone(&self.log_threshold),
                    stamp: None,
                    tasks: false,
                };
                return self.call_tool(id, params, sink, caller);
            }
            // We advertise neither resources nor prompts; answering their
            // lists with empty arrays keeps clients that ask anyway happy.
            "resources/list" => Ok(json!({"resources": []})),
            "resources/templates/list" => Ok(json!({"resourceTemplates": []})),
            "prompts/list" => Ok(json!({"prompts": []})),
            // Newer clients probe this first and fall back to initialize on
            // -32601; answer at once so the fallback is immediate.
            _ => Err(RpcError::method_not_found(method)),
        })
    }

    /// A request of the 2026-07-28 revision: everything it needs is in `envelope`, nothing comes
    /// from the connection. `None` when a worker will deliver the reply.
    fn dispatch_modern(
        &mut self,
        id: &RequestId,
        method: &str,
        params: Option<Value>,
        envelope: &Envelope,
        sink: &Sink,
    ) -> Option<Result<Value, RpcError>> {
        Some(match method {
            "server/discover" => Ok(era::discover_result(
                &self.config.instructions,
                self.config
                    .workspace_root
                    .as_deref()
                    .map(|root| (WORKSPACE_META_KEY, root)),
                modern_capabilities(),
            )),
            "tools/list" => self
                .list_tools(params, envelope.version)
                .map(era::cacheable),
            "tools/call" => {
                // Log messages only at the level this request asks for, none without one.
                let log_threshold = Arc::new(LogThreshold::off());
                if let Some(level) = envelope.log_level {
                    log_threshold.set(level);
                }
                let caller = Caller {
                    version: envelope.version,
                    client: envelope.client.as_deref().map(Arc::from),
                    log_threshold,
                    stamp: Some((self.config.name.clone(), self.config.version.clone())),
                    tasks: envelope.tasks,
                };
                return self.call_tool(id, params, sink, caller);
            }
            "resources/list" => Ok(era::cacheable(json!({"resources": []}))),
            "resources/templates/list" => Ok(era::cacheable(json!({"resourceTemplates": []}))),
            "prompts/list" => Ok(era::cacheable(json!({"prompts": []}))),
            // Declared (empty) in discover, so a read names a resource that does not exist.
            "resources/read" => Err(era::no_such_resource(params.as_ref())),
            "tasks/get" | "tasks/update" | "tasks/cancel" if !envelope.tasks => {
                Err(era::tasks_not_declared(method))
            }
            "tasks/get" | "tasks/update" | "tasks/cancel" => {
                self.config.tasks.serve(method, params.as_ref())
            }
            other => Err(era::not_in_modern(other)),
        })
    }

    fn initialize(&mut self, params: Option<Value>) -> Result<Value, RpcError> {
        if self.initialized {
            return Err(RpcError::new(
                INVALID_REQUEST,
                "Invalid Request: this connection is already initialized",
            ));
        }
        let params = params_object(params)?;
        let Some(requested) = params.get("protocolVersion").and_then(Value::as_str) else {
            return Err(RpcError::invalid_params(
                "Invalid params: initialize needs a string \"protocolVersion\"",
            ));
        };
        self.version = ProtocolVersion::negotiate(requested);
        self.initialized = true;
        self.client = client_name(&params);
        tracing::info!(requested, negotiated = %self.version, "initialized");
        let mut result = Map::new();
        result.insert("protocolVersion".into(), json!(self.version.as_str()));
        result.insert("capabilities".into(), capabilities());
        result.insert(
            "serverInfo".into(),
            json!({"name": self.config.name, "version": self.config.version}),
        );
        if !self.config.instructions.is_empty() {
            result.insert("instructions".into(), json!(self.config.instructions));
        }
        if let Some(root) = &self.config.workspace_root {
            result.insert("_meta".into(), json!({ WORKSPACE_META_KEY: root }));
        }
        Ok(Value::Object(result))
    }

    fn set_level(&mut self, params: Option<Value>) -> Result<Value, RpcError> {
        let params = params_object(params)?;
        let level = params.get("level").and_then(Value::as_str);
        let Some(level) = level.and_then(LogLevel::parse) else {
            return Err(RpcError::invalid_params(
                "Invalid params: \"level\" must be one of debug, info, notice, warning, error, critical, alert, emergency",
            ));
        };
        self.log_threshold.set(level);
        Ok(json!({}))
    }

    fn listed_tools(&self) -> impl Iterator<Item = &Tool> {
        let gates = self.config.gates;
        self.config
            .tools
            .iter()
            .filter(move |t| gates.allows(t.gate))
    }

    fn list_tools(
        &self,
        params: Option<Value>,
        version: ProtocolVersion,
    ) -> Result<Value, RpcError> {
        let params = params_object(params)?;
        let listed: Vec<&Tool> = self.listed_tools().collect();
        let start = match params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(cursor)) => cursor
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0 && n < listed.len())
                .ok_or_else(|| {
                    RpcError::invalid_params(format!(
                        "Invalid params: unknown cursor {:?}; call tools/list without a cursor to start over",
                        excerpt(cursor)
                    ))
                })?,
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "Invalid params: \"cursor\" must be a string",
                ));
            }
        };
        Ok(Value::Object(tools_page(
            &listed,
            start,
            self.config.page_size,
            version,
        )))
    }

    fn call_tool(
        &mut self,
        id: &RequestId,
        params: Option<Value>,
        sink: &Sink,
        caller: Caller,
    ) -> Option<Result<Value, RpcError>> {
        let params = match params {
            Some(Value::Object(params)) => params,
            _ => {
                return Some(Err(RpcError::invalid_params(
                    "Invalid params: tools/call needs an object with a string \"name\"",
                )));
            }
        };
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Some(Err(RpcError::invalid_params(
                "Invalid params: tools/call needs a string \"name\"",
            )));
        };
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(arguments)) => arguments.clone(),
            Some(_) => {
                return Some(Err(RpcError::invalid_params(
                    "Invalid params: tools/call \"arguments\" must be an object",
                )));
            }
        };
        let Some(tool) = self.config.tools.iter().find(|t| t.name == name) else {
            return Some(Ok(error_result(self.unknown_tool_text(name))));
        };
        if let Some(flag) = tool
            .gate
            .flag()
            .filter(|_| !self.config.gates.allows(tool.gate))
        {
            let what = match tool.gate {
                Gate::Edit => "it edits files",
                _ => "it runs commands",
            };
            let text = format!(
                "the tool `{name}` is disabled because {what} and this server was started without \
                 `{flag}`; ask the person to restart the server as `once mcp {flag}` if they want \
                 to allow it, and until then do not retry this call"
            );
            return Some(Ok(refusal(tool, text, caller.version)));
        }
        if let Err(text) = check_arguments(tool, &arguments) {
            return Some(Ok(refusal(tool, text, caller.version)));
        }
        let progress_token = params
            .get("_meta")
            .and_then(|m| m.get("progressToken"))
            .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
            .cloned();

        let token = CancelToken::new();
        {
            let mut running = lock(&self.calls.running);
            if running.contains_key(id) {
                return Some(Err(RpcError::new(
                    INVALID_REQUEST,
                    format!("Invalid Request: the id {id} is already used by a call in progress"),
                )));
            }
            if running.len() >= self.max_in_flight {
                return Some(Err(RpcError::new(
                    INTERNAL_ERROR,
                    format!(
                        "Server busy: {} tool calls are already running; retry when one has finished",
                        running.len()
                    ),
                )));
            }
            running.insert(
                id.clone(),
                Running {
                    token: token.clone(),
                    suppressed: false,
                },
            );
        }
        let task = if caller.tasks {
            self.config.tasks.reserve(tool.name, token.clone())
        } else {
            None
        };
        let context = CallContext::new(
            tool.name,
            id.clone(),
            token,
            progress_token,
            caller.version,
            self.outbox.clone(),
            Arc::clone(&caller.log_threshold),
        )
        .with_client(caller.client.clone())
        .with_task(task.clone());
        let job = Job {
            tool: tool.clone(),
            id: id.clone(),
            context,
            arguments,
            version: caller.version,
            stamp: caller.stamp,
            sink: sink.clone(),
            calls: Arc::clone(&self.calls),
            task: task.map(|task| (task, Arc::clone(&self.config.tasks))),
        };
        let spawned = std::thread::Builder::new()
            .name(format!("once-mcp-{}", tool.name))
            .spawn(move || job.run());
        match spawned {
            Ok(_) => None,
            Err(e) => {
                lock(&self.calls.running).remove(id);
                log_to_client(
                    &self.outbox,
                    &self.log_threshold,
                    LogLevel::Error,
                    "could not start a worker thread",
                );
                Some(Err(RpcError::new(
                    INTERNAL_ERROR,
                    format!("Internal error: could not start the tool: {e}"),
                )))
            }
        }
    }

    fn unknown_tool_text(&self, name: &str) -> String {
        // No tool name is longer than 128 characters, so a longer one is near none of them (and
        // the quadratic distance is never computed over a huge name).
        let comparable = name.chars().count() <= 128;
        let mut near: Vec<(usize, &str)> = self
            .listed_tools()
            .filter(|_| comparable)
            .map(|t| {
                (
                    strsim::levenshtein(&name.to_lowercase(), &t.name.to_lowercase()),
                    t.name,
                )
            })
            .filter(|(d, candidate)| {
                *d <= (name.len() / 3).max(2)
                    || candidate.contains(name)
                    || name.contains(candidate)
            })
            .collect();
        near.sort();
        let names: Vec<String> = near.iter().take(3).map(|(_, n)| format!("{n:?}")).collect();
        let name = excerpt(name);
        if names.is_empty() {
            format!("Unknown tool {name:?}. Call tools/list to see the available tools.")
        } else {
            format!(
                "Unknown tool {name:?}. Did you mean {}? Call tools/list to see every available tool.",
                names.join(" or ")
            )
        }
    }
}

/// Who asks for a tool call, and how its answer is shaped: from the connection's handshake, or
/// from the request's own envelope.
struct Caller {
    version: ProtocolVersion,
    client: Option<Arc<str>>,
    log_threshold: Arc<LogThreshold>,
    /// The server's name and version for a modern result's `_meta` (and its `resultType`).
    stamp: Option<(String, String)>,
    /// The request declared the tasks extension: a long call may be answered with a task.
    tasks: bool,
}

/// Everything a worker thread needs to run one call and deliver its reply.
struct Job {
    tool: Tool,
    id: RequestId,
    context: CallContext,
    arguments: Map<String, Value>,
    version: ProtocolVersion,
    stamp: Option<(String, String)>,
    sink: Sink,
    calls: Arc<Calls>,
    /// The task this call becomes if it outlasts the store's `promote_after`.
    task: Option<(Arc<Task>, Arc<Tasks>)>,
}

/// What a handler returned, or the panic that stopped it.
type HandlerOutcome = std::thread::Result<Value>;

impl Job {
    fn run(self) {
        let Self {
            tool,
            id,
            context,
            arguments,
            version,
            stamp,
            sink,
            calls,
            task,
        } = self;
        let stamp_reply = |outcome: Result<Value, RpcError>| match outcome {
            Ok(result) => match &stamp {
                Some((name, server_version)) => {
                    result_response(&id, era::stamp_result(result, name, server_version))
                }
                None => result_response(&id, result),
            },
            Err(error) => error_response(Some(&id), &error),
        };
        let reply = match task {
            None => stamp_reply(reply_of(
                &tool,
                execute(&tool, &context, arguments, version),
            )),
            Some((task, tasks)) => {
                match run_as_task(&tool, context, arguments, version, &task, &tasks) {
                    // Answered in time: as it would be without the extension.
                    Promotion::Answered(outcome) => stamp_reply(reply_of(&tool, outcome)),
                    Promotion::Due(outcome) => {
                        // Off the connection before the answer goes out: a stateless HTTP
                        // request's loop ends with that answer and stops what it still holds.
                        let suppressed = lock(&calls.running)
                            .remove(&id)
                            .is_some_and(|call| call.suppressed);
                        calls.idle.notify_all();
                        if suppressed {
                            // The client cancelled before the task was handed out: nobody knows
                            // it, so it must not outlive the call.
                            task.request_cancel();
                            let _ = outcome.recv();
                            tasks.release(&task);
                        } else {
                            sink.deliver(Some(stamp_reply(Ok(task.promote()))));
                            let ended = outcome.recv().map_err(|_| {
                                task::internal(format!(
                                    "Internal error: the tool {:?} ended without an answer",
                                    tool.name
                                ))
                            });
                            task.finish(ended.and_then(|outcome| reply_of(&tool, outcome)));
                        }
                        return;
                    }
                }
            }
        };
        // Delivering may wait for the client to read (a full outbox), so it happens outside the
        // lock, which the read loop needs. The call stays registered until its reply is queued:
        // shutdown waits for it, and its id stays in use. A cancellation that arrives after the
        // check finds a reply already on its way, which the client ignores as the spec says.
        let suppressed = lock(&calls.running)
            .get(&id)
            .is_some_and(|call| call.suppressed);
        if suppressed {
            tracing::debug!(%id, "reply suppressed: the client cancelled the call");
        }
        sink.deliver((!suppressed).then_some(reply));
        lock(&calls.running).remove(&id);
        calls.idle.notify_all();
    }
}

/// Runs the handler, catching a panic.
fn execute(
    tool: &Tool,
    context: &CallContext,
    arguments: Map<String, Value>,
    version: ProtocolVersion,
) -> HandlerOutcome {
    let outcome = catch_unwind(AssertUnwindSafe(|| match &tool.handler {
        Handler::Query(handler) => call_result(handler(context, arguments), version),
        Handler::Act(handler) => answer_result(&handler(context, arguments), version),
    }));
    context.finish();
    outcome
}

/// The result of a handler's outcome, or the JSON-RPC error of its panic.
fn reply_of(tool: &Tool, outcome: HandlerOutcome) -> Result<Value, RpcError> {
    outcome.map_err(|panic| {
        let text = panic_text(&panic);
        tracing::error!(tool = tool.name, panic = %text, "tool handler panicked");
        RpcError::new(
            INTERNAL_ERROR,
            format!("Internal error: the tool {:?} crashed: {text}", tool.name),
        )
    })
}

/// Whether a call that may become a task answered in time.
enum Promotion {
    /// It answered within `promote_after`; its place in the store is given back.
    Answered(HandlerOutcome),
    /// It is still working: the request is to be answered with the task, the outcome comes later.
    Due(std::sync::mpsc::Receiver<HandlerOutcome>),
}

/// Runs the handler on a thread of its own and waits for it at most the store's
/// `promote_after`.
fn run_as_task(
    tool: &Tool,
    context: CallContext,
    arguments: Map<String, Value>,
    version: ProtocolVersion,
    task: &Task,
    tasks: &Tasks,
) -> Promotion {
    let (sender, outcome) = std::sync::mpsc::channel();
    let worker = tool.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("once-task-{}", tool.name))
        .spawn(move || {
            let _ = sender.send(execute(&worker, &context, arguments, version));
        });
    if let Err(error) = spawned {
        tasks.release(task);
        return Promotion::Answered(Ok(error_result(format!(
            "could not start the tool `{}`: {error}; retry the call",
            tool.name
        ))));
    }
    match outcome.recv_timeout(tasks.policy().promote_after) {
        Ok(answered) => {
            tasks.release(task);
            Promotion::Answered(answered)
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Promotion::Due(outcome),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            tasks.release(task);
            Promotion::Answered(Ok(error_result(format!(
                "the tool `{}` ended without an answer; retry the call",
                tool.name
            ))))
        }
    }
}

/// Whether `method` is one we serve only after `initialize`: everything we know but `initialize`
/// and `ping`. An unknown method is left to dispatch, whose -32601 lets a client that probes for
/// a newer method fall back at once.
fn needs_initialize(method: &str) -> bool {
    matches!(
        method,
        "logging/setLevel"
            | "tools/list"
            | "tools/call"
            | "resources/list"
            | "resources/templates/list"
            | "prompts/list"
    )
}

/// The `tools/list` result from the tool at `start` on: a page ends at `page_size` tools or once
/// it holds [`TOOLS_PAGE_BYTES`], whichever comes first, so the answer stays small however long
/// the descriptions and schemas grow.
fn tools_page(
    listed: &[&Tool],
    start: usize,
    page_size: usize,
    version: ProtocolVersion,
) -> Map<String, Value> {
    let mut tools: Vec<Value> = Vec::new();
    let mut bytes = 0;
    for tool in listed.iter().skip(start).take(page_size.max(1)) {
        let entry = describe_tool(tool, version);
        let size = entry.to_string().len();
        if !tools.is_empty() && bytes + size > TOOLS_PAGE_BYTES {
            break;
        }
        bytes += size;
        tools.push(entry);
    }
    let end = start + tools.len();
    let mut result = Map::new();
    result.insert("tools".into(), Value::Array(tools));
    if end < listed.len() {
        // The cursor is the offset of the next page; opaque to clients.
        result.insert("nextCursor".into(), json!(end.to_string()));
    }
    result
}

/// The size in bytes of the first `tools/list` result a client of the newest protocol version
/// gets from `config` (the tools its gates open), and whether that page holds every one of them.
pub fn first_tools_page(config: &ServerConfig) -> (usize, bool) {
    let gates = config.gates;
    let listed: Vec<&Tool> = config
        .tools
        .iter()
        .filter(|t| gates.allows(t.gate))
        .collect();
    let page = tools_page(&listed, 0, config.page_size, ProtocolVersion::LATEST);
    let whole = !page.contains_key("nextCursor");
    (Value::Object(page).to_string().len(), whole)
}

/// The methods [`Session::dispatch`] serves; any other is answered -32601.
const KNOWN_METHODS: [&str; 8] = [
    "initialize",
    "ping",
    "logging/setLevel",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
];

/// What the server offers, the same in `initialize` and `server/discover`.
fn capabilities() -> Value {
    json!({"tools": {"listChanged": false}, "logging": {}})
}

/// What `server/discover` declares: the same, the resource and prompt lists, which both eras
/// answer (empty), since a client of the revision may only call what is declared.
fn modern_capabilities() -> Value {
    json!({
        "tools": {"listChanged": false},
        "logging": {},
        "resources": {},
        "prompts": {},
        "extensions": {task::TASKS_EXTENSION: {}},
    })
}

fn params_object(params: Option<Value>) -> Result<Map<String, Value>, RpcError> {
    match params {
        None => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map),
        Some(_) => Err(RpcError::invalid_params(
            "Invalid params: params must be an object",
        )),
    }
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Why [`call_read_only`] did not call a tool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DetachedCallError {
    /// No tool of the catalog has that name.
    #[error("no tool is named `{0}`")]
    Unknown(String),
    /// The tool exists but may change something: only read-only, ungated tools are called
    /// outside a connection.
    #[error("`{0}` is not a read-only tool")]
    NotReadOnly(String),
    /// The arguments do not match the tool's input schema.
    #[error("{0}")]
    Arguments(String),
    /// The worker could not be set up.
    #[error("cannot call `{tool}`: {reason}")]
    Internal {
        /// The tool.
        tool: String,
        /// What failed.
        reason: String,
    },
}

/// Calls a read-only, ungated tool of `config` outside any connection, as another front end (the
/// window page) reads the same answers agents read. The freshness hook runs first, as before a
/// request; the handler gets a context that is never cancelled and whose notifications go
/// nowhere. Refuses every tool that acts, is gated or is not marked read-only, so this door can
/// never act.
pub fn call_read_only(
    config: &ServerConfig,
    name: &str,
    arguments: Map<String, Value>,
) -> Result<ToolResult, DetachedCallError> {
    let tool = config
        .tools
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| DetachedCallError::Unknown(name.to_owned()))?;
    let handler = match &tool.handler {
        Handler::Query(handler) if tool.gate == Gate::Always && tool.annotations.read_only => {
            Arc::clone(handler)
        }
        _ => return Err(DetachedCallError::NotReadOnly(name.to_owned())),
    };
    check_arguments(tool, &arguments).map_err(DetachedCallError::Arguments)?;
    if let Some(before) = &config.before_request {
        before();
    }
    let internal = |reason: io::Error| DetachedCallError::Internal {
        tool: name.to_owned(),
        reason: reason.to_string(),
    };
    let writer = Writer::spawn(io::sink(), 64 * 1024).map_err(internal)?;
    let context = CallContext::new(
        tool.name,
        RequestId::Integer(0),
        CancelToken::new(),
        None,
        ProtocolVersion::LATEST,
        writer.outbox(),
        Arc::new(LogThreshold::off()),
    );
    let result = catch_unwind(AssertUnwindSafe(|| handler(&context, arguments)));
    drop(context);
    writer.close().map_err(internal)?;
    result.map_err(|panic| DetachedCallError::Internal {
        tool: name.to_owned(),
        reason: format!("the tool panicked: {}", panic_text(&panic)),
    })
}

/// A `CallToolResult` for a tool-level failure. The text is cut at `ERROR_TEXT_BYTES`: every
/// message quotes its arguments, and one quoting a huge argument must not make a huge answer.
fn error_result(mut text: String) -> Value {
    if text.len() > ERROR_TEXT_BYTES {
        let mut end = ERROR_TEXT_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let cut = text.len() - end;
        text.truncate(end);
        text.push_str(&format!("… ({cut} more bytes cut)"));
    }
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

/// The `CallToolResult` of a handler's return, shaped for `version`.
fn call_result(result: ToolResult, version: ProtocolVersion) -> Value {
    match result {
        ToolResult::Error(text) => error_result(text),
        ToolResult::Value(value) => {
            let text = value.to_string();
            let mut result = Map::new();
            result.insert("content".into(), json!([{"type": "text", "text": text}]));
            if version.has_structured_output() {
                result.insert("structuredContent".into(), json!({ "result": value }));
            }
            Value::Object(result)
        }
    }
}

/// The `CallToolResult` of an acting tool's answer: the word first in the text, `isError` for
/// refused, busy and problem, and the whole answer as `structuredContent` where `version` has it
/// (even with `isError`, so a client reads the word without parsing text).
fn answer_result(answer: &Answer, version: ProtocolVersion) -> Value {
    let mut result = Map::new();
    result.insert(
        "content".into(),
        json!([{"type": "text", "text": answer.text()}]),
    );
    if version.has_structured_output() {
        result.insert("structuredContent".into(), answer.structured());
    }
    result.insert("isError".into(), json!(answer.outcome().is_error()));
    Value::Object(result)
}

/// A call the server refuses before the handler runs: an acting tool answers `refused`, a query
/// a tool error.
fn refusal(tool: &Tool, text: String, version: ProtocolVersion) -> Value {
    if tool.handler.acts() {
        answer_result(&Answer::refused(text), version)
    } else {
        error_result(text)
    }
}

/// A `Tool` entry of `tools/list`, with only the fields `version` knows.
fn describe_tool(tool: &Tool, version: ProtocolVersion) -> Value {
    let mut entry = Map::new();
    entry.insert("name".into(), json!(tool.name));
    if version.has_tool_title() {
        entry.insert("title".into(), json!(tool.title));
    }
    entry.insert("description".into(), json!(tool.description));
    entry.insert("inputSchema".into(), tool.input_schema.clone());
    if version.has_structured_output() {
        let schema = if tool.handler.acts() {
            answer_output_schema(&tool.output_schema)
        } else {
            wrap_output_schema(&tool.output_schema)
        };
        entry.insert("outputSchema".into(), schema);
    }
    if version.has_tool_annotations() {
        let a = tool.annotations;
        let mut hints = Map::new();
        if version.title_in_annotations() {
            hints.insert("title".into(), json!(tool.title));
        }
        hints.insert("readOnlyHint".into(), json!(a.read_only));
        hints.insert("destructiveHint".into(), json!(a.destructive));
        hints.insert("idempotentHint".into(), json!(a.idempotent));
        hints.insert("openWorldHint".into(), json!(a.open_world));
        entry.insert("annotations".into(), Value::Object(hints));
    }
    Value::Object(entry)
}

/// `clientInfo.name` of an `initialize` request as the client gave it, with its version as a
/// product token (`claude-code/1.2`, as in a `User-Agent`): written as two words, a bare version
/// read as part of the name (`claude-code 1`).
fn client_name(params: &Map<String, Value>) -> Option<Arc<str>> {
    era::client_name(params.get("clientInfo")).map(Arc::from)
}
