//! The public tool API: what a tool is, how it is gated, what a handler gets
//! (cancellation, progress, logging) and what it returns: a read-only tool a value or an error,
//! a tool that acts an [`Answer`] (see `outcome.rs`).
//!
//! Handlers are plain synchronous functions run on a worker thread; this
//! module gives them a [`CallContext`] whose methods never block and never
//! touch the output stream directly. It also checks tool definitions (names,
//! schemas) once, before a server starts. It must never know about JSON-RPC
//! framing or protocol versions beyond what a context needs to shape its
//! notifications.

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

mod outcome;

pub use outcome::{Answer, MESSAGE_BYTES, Outcome, answer_output_schema};

use crate::message::{RequestId, notification};
use crate::outbox::Outbox;
use crate::task::Task;
use crate::version::ProtocolVersion;

/// Which command-line permission a tool needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Always available (read-only queries).
    Always,
    /// Needs `--allow-edit`: the tool changes files.
    Edit,
    /// Needs `--allow-run`: the tool runs commands.
    Run,
}

impl Gate {
    /// The flag that opens this gate, if any.
    pub fn flag(self) -> Option<&'static str> {
        match self {
            Self::Always => None,
            Self::Edit => Some("--allow-edit"),
            Self::Run => Some("--allow-run"),
        }
    }
}

/// The permissions the person started the server with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Gates {
    /// `--allow-edit` was given.
    pub allow_edit: bool,
    /// `--allow-run` was given.
    pub allow_run: bool,
}

impl Gates {
    /// Whether a tool behind `gate` may be listed and called.
    pub fn allows(self, gate: Gate) -> bool {
        match gate {
            Gate::Always => true,
            Gate::Edit => self.allow_edit,
            Gate::Run => self.allow_run,
        }
    }
}

/// Behaviour hints for clients (MCP `ToolAnnotations`); hints only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annotations {
    /// The tool does not modify its environment.
    pub read_only: bool,
    /// The tool may destroy or overwrite (meaningful when not read-only).
    pub destructive: bool,
    /// Repeating a call with the same arguments has no further effect.
    pub idempotent: bool,
    /// The tool reaches outside the workspace (network, external systems).
    pub open_world: bool,
}

impl Annotations {
    /// The hints of a pure query over the workspace.
    pub const READ_ONLY: Self = Self {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: false,
    };
}

/// What a handler returns.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolResult {
    /// Success: the value must match the tool's `output_schema`.
    Value(Value),
    /// A failure the agent should read: becomes a result with `isError: true`.
    /// Say what went wrong and what to do next.
    Error(String),
}

impl From<Result<Value, String>> for ToolResult {
    /// Lets a handler use `?` on the argument readers below.
    fn from(result: Result<Value, String>) -> Self {
        match result {
            Ok(value) => Self::Value(value),
            Err(text) => Self::Error(text),
        }
    }
}

/// What kind of JSON value `value` is, as a message names it (`a string`, `null`).
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn missing(name: &str, kind: &str) -> String {
    format!(
        "missing argument `{name}` ({kind}): call the tool again with it; its inputSchema lists \
         every argument"
    )
}

fn mistyped(name: &str, kind: &str, found: &Value) -> String {
    format!(
        "argument `{name}` must be {kind}, not {}: call the tool again with a corrected value",
        json_kind(found)
    )
}

/// Reads a required string argument; the error text tells an agent what to fix.
pub fn required_str<'a>(args: &'a Map<String, Value>, name: &str) -> Result<&'a str, String> {
    optional_str(args, name)?.ok_or_else(|| missing(name, "a string"))
}

/// Reads an optional string argument (`null` counts as absent).
pub fn optional_str<'a>(
    args: &'a Map<String, Value>,
    name: &str,
) -> Result<Option<&'a str>, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(mistyped(name, "a string", other)),
    }
}

/// Reads an optional array of strings (`null` counts as absent).
pub fn optional_strings(
    args: &Map<String, Value>,
    name: &str,
) -> Result<Option<Vec<String>>, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => Ok(Some(
            items
                .iter()
                .filter_map(|item| item.as_str().map(str::to_owned))
                .collect(),
        )),
        Some(other) => Err(mistyped(name, "an array of strings", other)),
    }
}

/// Reads an optional boolean argument (`null` counts as absent).
pub fn optional_bool(args: &Map<String, Value>, name: &str) -> Result<Option<bool>, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(flag)) => Ok(Some(*flag)),
        Some(other) => Err(mistyped(name, "a boolean", other)),
    }
}

/// Reads an optional non-negative integer argument (`null` counts as absent).
pub fn optional_u64(args: &Map<String, Value>, name: &str) -> Result<Option<u64>, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_u64()
            .map(Some)
            .ok_or_else(|| mistyped(name, "a non-negative integer", value)),
    }
}

/// The signature of a read-only tool's handler.
pub type QueryFn = dyn Fn(&CallContext, Map<String, Value>) -> ToolResult + Send + Sync;
/// The signature of an acting tool's handler: every return is an [`Answer`].
pub type ActFn = dyn Fn(&CallContext, Map<String, Value>) -> Answer + Send + Sync;

/// The function that does a tool's work. Which of the two a tool has decides its answer's shape:
/// a query answers `{"result": value}`, a tool that acts `{"outcome", "message", "result"}`,
/// and the server refuses a call of an acting tool (closed gate, bad arguments) with an
/// [`Answer`] too.
#[derive(Clone)]
pub enum Handler {
    /// A tool that only reads.
    Query(Arc<QueryFn>),
    /// A tool that runs, cancels, evaluates, proposes or writes something.
    Act(Arc<ActFn>),
}

impl fmt::Debug for Handler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Handler::Query(_) => "Handler::Query",
            Handler::Act(_) => "Handler::Act",
        })
    }
}

impl Handler {
    /// The handler of a read-only tool.
    pub fn query(
        f: impl Fn(&CallContext, Map<String, Value>) -> ToolResult + Send + Sync + 'static,
    ) -> Handler {
        Handler::Query(Arc::new(f))
    }

    /// The handler of a tool that acts.
    pub fn act(
        f: impl Fn(&CallContext, Map<String, Value>) -> Answer + Send + Sync + 'static,
    ) -> Handler {
        Handler::Act(Arc::new(f))
    }

    /// Whether the tool acts (answers with an outcome).
    pub fn acts(&self) -> bool {
        matches!(self, Handler::Act(_))
    }
}

/// One tool of the catalog.
#[derive(Clone)]
pub struct Tool {
    /// Unique name, `[A-Za-z0-9_.-]{1,128}`.
    pub name: &'static str,
    /// Human-readable display name.
    pub title: &'static str,
    /// What the tool does and when to use it (read by the model).
    pub description: String,
    /// JSON Schema of the arguments; root `type: "object"` with
    /// `additionalProperties: false`.
    pub input_schema: Value,
    /// JSON Schema of the returned value; the server wraps it under `result` (and, for a tool
    /// that acts, next to `outcome` and `message`).
    pub output_schema: Value,
    /// Behaviour hints.
    pub annotations: Annotations,
    /// The permission it needs.
    pub gate: Gate,
    /// The function that does the work.
    pub handler: Handler,
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("title", &self.title)
            .field("gate", &self.gate)
            .field("annotations", &self.annotations)
            .field("acts", &self.handler.acts())
            .finish_non_exhaustive()
    }
}

/// Wraps a tool's value schema into the object MCP requires at the root of
/// an `outputSchema`.
pub fn wrap_output_schema(value_schema: &Value) -> Value {
    json!({
        "type": "object",
        "properties": {"result": value_schema},
        "required": ["result"],
        "additionalProperties": false,
    })
}

/// Why a tool definition was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolDefinitionError {
    /// The name breaks the spec's naming rule.
    #[error("tool name {0:?} must be 1 to 128 characters of A-Z, a-z, 0-9, '_', '-' or '.'")]
    BadName(String),
    /// Two tools share a name.
    #[error("two tools are named {0:?}")]
    DuplicateName(String),
    /// A schema breaks one of our rules.
    #[error("tool {tool:?}: {which} schema at {path}: {problem}")]
    Schema {
        /// The tool.
        tool: String,
        /// "input" or "output".
        which: &'static str,
        /// A JSON-pointer-like location.
        path: String,
        /// What is wrong.
        problem: String,
    },
}

/// Checks a catalog before serving it: names, uniqueness, and schemas (input
/// root is a closed object; no boolean sub-schema and no `type` array
/// anywhere, since several model providers reject those).
pub fn validate_tools(tools: &[Tool]) -> Result<(), ToolDefinitionError> {
    let mut seen = std::collections::HashSet::new();
    for tool in tools {
        let name_ok = (1..=128).contains(&tool.name.len())
            && tool
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
        if !name_ok {
            return Err(ToolDefinitionError::BadName(tool.name.to_owned()));
        }
        if !seen.insert(tool.name) {
            return Err(ToolDefinitionError::DuplicateName(tool.name.to_owned()));
        }
        let schema_error = |which, (path, problem)| ToolDefinitionError::Schema {
            tool: tool.name.to_owned(),
            which,
            path,
            problem,
        };
        check_input_root(&tool.input_schema).map_err(|p| schema_error("input", p))?;
        check_schema(&tool.input_schema, "#").map_err(|p| schema_error("input", p))?;
        check_schema(&tool.output_schema, "#/properties/result")
            .map_err(|p| schema_error("output", p))?;
    }
    Ok(())
}

type SchemaProblem = (String, String);

fn check_input_root(schema: &Value) -> Result<(), SchemaProblem> {
    if schema.get("type") != Some(&json!("object")) {
        return Err(("#".into(), "the root must have \"type\": \"object\"".into()));
    }
    if schema.get("additionalProperties") != Some(&json!(false)) {
        return Err((
            "#".into(),
            "the root must have \"additionalProperties\": false".into(),
        ));
    }
    Ok(())
}

/// Walks every sub-schema position of JSON Schema 2020-12 (and draft-07's
/// `definitions` / array `items`).
fn check_schema(schema: &Value, path: &str) -> Result<(), SchemaProblem> {
    let Value::Object(map) = schema else {
        let problem = if schema.is_boolean() {
            "boolean sub-schemas are not allowed; use an object schema"
        } else {
            "a schema must be a JSON object"
        };
        return Err((path.to_owned(), problem.to_owned()));
    };
    if map.get("type").is_some_and(|kind| !kind.is_string()) {
        return Err((
            format!("{path}/type"),
            "\"type\" must be a single string (use anyOf for alternatives)".into(),
        ));
    }
    for (key, value) in map {
        let here = format!("{path}/{key}");
        match key.as_str() {
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                let Value::Object(children) = value else {
                    return Err((here, "must be an object of schemas".into()));
                };
                for (name, child) in children {
                    check_schema(child, &format!("{here}/{name}"))?;
                }
            }
            "prefixItems" | "anyOf" | "allOf" | "oneOf" => {
                let Value::Array(children) = value else {
                    return Err((here, "must be an array of schemas".into()));
                };
                for (index, child) in children.iter().enumerate() {
                    check_schema(child, &format!("{here}/{index}"))?;
                }
            }
            "items" | "additionalItems" => match value {
                Value::Array(children) => {
                    for (index, child) in children.iter().enumerate() {
                        check_schema(child, &format!("{here}/{index}"))?;
                    }
                }
                other => check_schema(other, &here)?,
            },
            "not" | "if" | "then" | "else" | "contains" | "propertyNames" | "unevaluatedItems" => {
                check_schema(value, &here)?;
            }
            // `false` here is the one boolean we require (closed objects).
            "additionalProperties" | "unevaluatedProperties" if value.is_boolean() => {}
            "additionalProperties" | "unevaluatedProperties" => check_schema(value, &here)?,
            _ => {}
        }
    }
    Ok(())
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking handler is caught elsewhere; the data behind these locks
    // stays consistent, so poisoning is not a reason to fail.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A cancellation flag that can be waited on.
#[derive(Clone, Default)]
pub struct CancelToken {
    inner: Arc<(Mutex<bool>, Condvar)>,
}

impl fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl CancelToken {
    /// A fresh, not-cancelled token.
    pub fn new() -> Self {
        Self::default()
    }

    /// Marks it cancelled and wakes every waiter. Idempotent.
    pub fn cancel(&self) {
        let (flag, condvar) = &*self.inner;
        *lock(flag) = true;
        condvar.notify_all();
    }

    /// Whether it was cancelled.
    pub fn is_cancelled(&self) -> bool {
        *lock(&self.inner.0)
    }

    /// Waits until cancelled or `timeout` passes; returns whether cancelled.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        let (flag, condvar) = &*self.inner;
        let deadline = Instant::now() + timeout;
        let mut cancelled = lock(flag);
        while !*cancelled {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            cancelled = condvar
                .wait_timeout(cancelled, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }
}

/// MCP log levels (RFC 5424 severities), least severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// `debug`
    Debug,
    /// `info`
    Info,
    /// `notice`
    Notice,
    /// `warning`
    Warning,
    /// `error`
    Error,
    /// `critical`
    Critical,
    /// `alert`
    Alert,
    /// `emergency`
    Emergency,
}

impl LogLevel {
    const ALL: [Self; 8] = [
        Self::Debug,
        Self::Info,
        Self::Notice,
        Self::Warning,
        Self::Error,
        Self::Critical,
        Self::Alert,
        Self::Emergency,
    ];

    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }

    /// The level for a wire string.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.as_str() == text)
    }
}

/// The connection's log threshold, shared by every call's context.
/// `u8::MAX` means "the client never asked": we then send no log messages.
#[derive(Debug)]
pub(crate) struct LogThreshold(AtomicU8);

impl LogThreshold {
    pub(crate) fn off() -> Self {
        Self(AtomicU8::new(u8::MAX))
    }

    pub(crate) fn set(&self, level: LogLevel) {
        self.0.store(level as u8, Ordering::Relaxed);
    }

    fn allows(&self, level: LogLevel) -> bool {
        (level as u8) >= self.0.load(Ordering::Relaxed)
    }
}

#[derive(Debug, Default)]
struct ProgressState {
    last: Option<f64>,
    finished: bool,
}

/// What a handler gets besides its arguments.
pub struct CallContext {
    tool: &'static str,
    request_id: RequestId,
    cancel: CancelToken,
    progress_token: Option<Value>,
    version: ProtocolVersion,
    outbox: Outbox,
    log_threshold: Arc<LogThreshold>,
    progress: Mutex<ProgressState>,
    client: Option<Arc<str>>,
    /// The task this call may become: its progress is kept there too, and once the request was
    /// answered with it nothing more goes to the connection.
    task: Option<Arc<Task>>,
}

impl fmt::Debug for CallContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallContext")
            .field("tool", &self.tool)
            .field("request_id", &self.request_id)
            .field("cancelled", &self.is_cancelled())
            .field("progress_token", &self.progress_token)
            .finish_non_exhaustive()
    }
}

impl CallContext {
    pub(crate) fn new(
        tool: &'static str,
        request_id: RequestId,
        cancel: CancelToken,
        progress_token: Option<Value>,
        version: ProtocolVersion,
        outbox: Outbox,
        log_threshold: Arc<LogThreshold>,
    ) -> Self {
        Self {
            tool,
            request_id,
            cancel,
            progress_token,
            version,
            outbox,
            log_threshold,
            progress: Mutex::new(ProgressState::default()),
            client: None,
            task: None,
        }
    }

    /// Makes it the call of `task`.
    pub(crate) fn with_task(mut self, task: Option<Arc<Task>>) -> Self {
        self.task = task;
        self
    }

    /// Whether the request was answered with a task, so nothing of this call reaches the client
    /// but through `tasks/get`.
    fn detached(&self) -> bool {
        self.task.as_ref().is_some_and(|task| task.is_promoted())
    }

    /// Whether this call may outlive its request as a task: a handler may then wait longer for
    /// its work, since no client's request timeout bounds the wait.
    pub fn may_become_task(&self) -> bool {
        self.task.is_some()
    }

    /// Records who the client said it is at `initialize`.
    pub(crate) fn with_client(mut self, client: Option<Arc<str>>) -> Self {
        self.client = client;
        self
    }

    /// The client's `clientInfo` as `name/version`, when it sent one: who is asking, for records
    /// such as a change set's author. Clients name themselves; it is not an identity.
    pub fn client(&self) -> Option<&str> {
        self.client.as_deref()
    }

    /// The name of the tool being called.
    pub fn tool(&self) -> &'static str {
        self.tool
    }

    /// The JSON-RPC id of this call.
    pub fn request_id(&self) -> &RequestId {
        &self.request_id
    }

    /// Whether the client cancelled this call (or the server is shutting
    /// down); a long handler should check it and stop early.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// The token itself, to hand to helpers or wait on.
    pub fn cancelled(&self) -> &CancelToken {
        &self.cancel
    }

    /// Reports progress. A no-op when the client sent no progress token, when
    /// `progress` does not increase (the spec requires it to), after
    /// cancellation, and after the reply. Never blocks: when the client has
    /// left the output unread up to the outbox's limit, it is dropped.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if !progress.is_finite() || self.is_cancelled() {
            return;
        }
        if let Some(task) = &self.task {
            task.record_progress(progress, total.filter(|t| t.is_finite()), message);
        }
        let Some(token) = self.progress_token.as_ref().filter(|_| !self.detached()) else {
            return;
        };
        // Holding the lock while queueing keeps the queue order equal to the
        // order of the monotonicity checks, and orders us before `finish`.
        let mut state = lock(&self.progress);
        if state.finished || state.last.is_some_and(|last| progress <= last) {
            return;
        }
        state.last = Some(progress);
        let mut params = Map::new();
        params.insert("progressToken".into(), token.clone());
        params.insert("progress".into(), json!(progress));
        if let Some(total) = total.filter(|t| t.is_finite()) {
            params.insert("total".into(), json!(total));
        }
        if let Some(message) = message.filter(|_| self.version.has_progress_message()) {
            params.insert("message".into(), json!(message));
        }
        self.outbox
            .notify(&notification("notifications/progress", params));
    }

    /// Logs a message: always to `tracing`, and to the client as
    /// `notifications/message` when it asked for this level or lower (dropped,
    /// like progress, while the client leaves the outbox full).
    pub fn log(&self, level: LogLevel, message: &str) {
        tracing::debug!(tool = self.tool, level = level.as_str(), "{message}");
        if !self.log_threshold.allows(level) || self.detached() {
            return;
        }
        let mut params = Map::new();
        params.insert("level".into(), json!(level.as_str()));
        params.insert("logger".into(), json!("once"));
        params.insert("data".into(), json!(message));
        self.outbox
            .notify(&notification("notifications/message", params));
    }

    /// Called by the worker before queueing the reply: no progress after it.
    pub(crate) fn finish(&self) {
        lock(&self.progress).finished = true;
    }
}

/// Sends a server-level log message (not tied to a call) when allowed.
pub(crate) fn log_to_client(
    outbox: &Outbox,
    threshold: &LogThreshold,
    level: LogLevel,
    text: &str,
) {
    if threshold.allows(level) {
        let mut params = Map::new();
        params.insert("level".into(), json!(level.as_str()));
        params.insert("logger".into(), json!("once"));
        params.insert("data".into(), json!(text));
        outbox.notify(&notification("notifications/message", params));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &'static str, input: Value, output: Value) -> Tool {
        Tool {
            name,
            title: "T",
            description: String::new(),
            input_schema: input,
            output_schema: output,
            annotations: Annotations::READ_ONLY,
            gate: Gate::Always,
            handler: Handler::query(|_, _| ToolResult::Value(Value::Null)),
        }
    }

    fn closed() -> Value {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    }

    #[test]
    fn schema_rules() {
        assert!(validate_tools(&[tool("ok", closed(), json!({"type": "string"}))]).is_ok());
        let open = json!({"type": "object"});
        assert!(validate_tools(&[tool("a", open, json!({}))]).is_err());
        let boolean =
            json!({"type": "object", "additionalProperties": false, "properties": {"x": true}});
        assert!(validate_tools(&[tool("a", boolean, json!({}))]).is_err());
        let type_array = json!({"type": ["string", "null"]});
        assert!(validate_tools(&[tool("a", closed(), type_array)]).is_err());
        let nested = json!({"type": "array", "items": {"anyOf": [{"type": "string"}, false]}});
        assert!(validate_tools(&[tool("a", closed(), nested)]).is_err());
        assert!(validate_tools(&[tool("bad name", closed(), json!({}))]).is_err());
        assert!(
            validate_tools(&[
                tool("a", closed(), json!({})),
                tool("a", closed(), json!({}))
            ])
            .is_err()
        );
    }

    #[test]
    fn cancel_token_wakes_waiters() {
        let token = CancelToken::new();
        assert!(!token.wait_timeout(Duration::from_millis(1)));
        let other = token.clone();
        let waiter = std::thread::spawn(move || other.wait_timeout(Duration::from_secs(60)));
        token.cancel();
        assert!(waiter.join().unwrap());
    }

    #[test]
    fn argument_readers_explain_themselves() {
        let args = json!({"s": "x", "n": 3, "b": true, "z": null});
        let args = args.as_object().unwrap();
        assert_eq!(required_str(args, "s"), Ok("x"));
        assert!(
            required_str(args, "missing")
                .unwrap_err()
                .contains("missing argument `missing`")
        );
        assert!(
            required_str(args, "n")
                .unwrap_err()
                .contains("not a number")
        );
        assert_eq!(optional_str(args, "z"), Ok(None));
        assert_eq!(optional_bool(args, "b"), Ok(Some(true)));
        assert_eq!(optional_u64(args, "n"), Ok(Some(3)));
        assert!(optional_u64(args, "s").is_err());
        let handler = |args: &Map<String, Value>| -> Result<Value, String> {
            Ok(json!(required_str(args, "nope")?))
        };
        assert!(matches!(
            ToolResult::from(handler(args)),
            ToolResult::Error(_)
        ));
    }

    #[test]
    fn log_levels_are_ordered() {
        assert!(LogLevel::Debug < LogLevel::Emergency);
        assert_eq!(LogLevel::parse("warning"), Some(LogLevel::Warning));
        assert_eq!(LogLevel::parse("warn"), None);
    }
}
