//! Tool calls that outlive their request: the `io.modelcontextprotocol/tasks` extension of the
//! 2026-07-28 revision (`resultType: "task"`, `tasks/get`, `tasks/update`, `tasks/cancel`).
//!
//! A call of a tool the [`TaskPolicy`] names, from a request that declares the extension, takes
//! a place in [`Tasks`] before it starts. If it answers within `promote_after` the place is
//! given back and the request is answered as it always was; otherwise the request is answered
//! with the task, and the call goes on with nothing of the connection: its cancellation is the
//! task's, its progress is kept here (the status message a poll shows), its answer is kept here
//! until the task expires. The 2026-07-28 era keeps no connection state, so a task lives in the
//! server's process ([`Tasks`] is the `ServerConfig`'s), found again from any connection by its
//! id alone: 128 random bits, the only thing that names it, so the ids are never listed.
//!
//! This module must never hold more than `max_tasks` tasks (a full store with every task still
//! working turns new calls back into ordinary ones), never keep a task past its time to live
//! (an expired task that still works is cancelled, so no process outlives its handle), and never
//! let a value a client sent grow what it keeps.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::message::{INTERNAL_ERROR, RpcError, excerpt};
use crate::tool::CancelToken;

/// The extension's identifier, in a client's `extensions` and in `server/discover`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// `_meta` key of a task: how far its call has got (`progress` of `total`), as its last
/// progress report said.
pub const PROGRESS_META_KEY: &str = "dev.once/progress";
/// The longest status message kept: a heartbeat of `once_run` is a few KB.
const STATUS_MESSAGE_BYTES: usize = 16 * 1024;

/// Which calls may become tasks, and the bounds of the store.
#[derive(Debug, Clone)]
pub struct TaskPolicy {
    /// The tools whose calls may become tasks.
    pub tools: Vec<&'static str>,
    /// How long a call runs before its request is answered with a task.
    pub promote_after: Duration,
    /// How long a task is kept after it was created (its `ttlMs`).
    pub ttl: Duration,
    /// Most tasks kept at once.
    pub max_tasks: usize,
    /// How often a client should poll (its `pollIntervalMs`): `once_run`'s heartbeat rate.
    pub poll_interval: Duration,
}

impl Default for TaskPolicy {
    /// `once_run` and `once_eval`, after a second; kept two hours (a run's longest wait is one);
    /// at most 64.
    fn default() -> Self {
        Self {
            tools: vec!["once_run", "once_eval"],
            promote_after: Duration::from_secs(1),
            ttl: Duration::from_secs(2 * 3600),
            max_tasks: 64,
            poll_interval: Duration::from_secs(1),
        }
    }
}

/// The tasks of one server process.
#[derive(Debug, Default)]
pub struct Tasks {
    policy: TaskPolicy,
    entries: Mutex<HashMap<String, Arc<Task>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Tasks {
    /// An empty store under `policy`.
    pub fn new(policy: TaskPolicy) -> Self {
        Self {
            policy,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The policy it was made with.
    pub fn policy(&self) -> &TaskPolicy {
        &self.policy
    }

    /// A place for a call of `tool` that `cancel` stops, or `None` when the tool never becomes a
    /// task or every place is held by a task still working. To make room it drops expired tasks,
    /// then the oldest that has ended.
    pub(crate) fn reserve(&self, tool: &str, cancel: CancelToken) -> Option<Arc<Task>> {
        if !self.policy.tools.contains(&tool) || self.policy.max_tasks == 0 {
            return None;
        }
        let mut entries = lock(&self.entries);
        self.purge(&mut entries);
        if entries.len() >= self.policy.max_tasks {
            let oldest_ended = entries
                .values()
                .filter(|task| task.has_ended())
                .min_by_key(|task| task.created)
                .map(|task| task.id.clone());
            entries.remove(&oldest_ended?);
        }
        let task = Arc::new(Task::new(new_task_id(), cancel, &self.policy));
        entries.insert(task.id.clone(), Arc::clone(&task));
        Some(task)
    }

    /// Gives back the place of a call that answered before it became a task.
    pub(crate) fn release(&self, task: &Task) {
        lock(&self.entries).remove(&task.id);
    }

    /// `tasks/get`, `tasks/update` or `tasks/cancel` with `params`.
    pub(crate) fn serve(&self, method: &str, params: Option<&Value>) -> Result<Value, RpcError> {
        let id = params
            .and_then(|p| p.get("taskId"))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                RpcError::invalid_params(format!(
                    "Invalid params: {method} needs a string \"taskId\", the one the tool call answered"
                ))
            })?;
        let task = self.find(id).ok_or_else(|| self.not_found(id))?;
        match method {
            "tasks/get" => Ok(task.describe(false)),
            "tasks/cancel" => {
                task.request_cancel();
                Ok(json!({}))
            }
            // No task of ours ever asks for input, so every response names a key that is not
            // outstanding, which the extension says to ignore.
            _ => Ok(json!({})),
        }
    }

    fn find(&self, id: &str) -> Option<Arc<Task>> {
        let mut entries = lock(&self.entries);
        self.purge(&mut entries);
        entries.get(id).filter(|task| task.is_promoted()).cloned()
    }

    /// Drops every expired task, cancelling those still at work.
    fn purge(&self, entries: &mut HashMap<String, Arc<Task>>) {
        let now = Instant::now();
        entries.retain(|_, task| {
            let alive = now < task.created + self.policy.ttl;
            if !alive {
                task.cancel.cancel();
            }
            alive
        });
    }

    fn not_found(&self, id: &str) -> RpcError {
        RpcError::invalid_params(format!(
            "Failed to retrieve task: no task `{}`: it never existed or has expired (a task is \
             kept {} s after it was created); call the tool again",
            excerpt(id),
            self.policy.ttl.as_secs()
        ))
    }
}

/// 128 bits from the platform's CSPRNG, in hex: the task's only name, so it must not be
/// guessable.
fn new_task_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // Without a random source no id is safe to hand out; a second try is all we can do, and
        // the clock mixed in keeps ids apart should it fail too.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let _ = getrandom::fill(&mut bytes);
        for (byte, clock) in bytes.iter_mut().zip(nanos.to_le_bytes()) {
            *byte ^= clock;
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Where a task's call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Working,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

#[derive(Debug)]
struct State {
    status: Status,
    promoted: bool,
    cancel_requested: bool,
    message: Option<String>,
    progress: Option<(f64, Option<f64>)>,
    /// The call's result (`completed`) or JSON-RPC error (`failed`).
    outcome: Option<Value>,
    updated_at: String,
}

/// One call that may outlive its request.
#[derive(Debug)]
pub(crate) struct Task {
    id: String,
    created: Instant,
    created_at: String,
    ttl: Duration,
    poll_interval: Duration,
    cancel: CancelToken,
    state: Mutex<State>,
}

fn now_rfc3339() -> String {
    once_fs::clock::rfc3339(once_fs::clock::now_seconds())
}

impl Task {
    fn new(id: String, cancel: CancelToken, policy: &TaskPolicy) -> Self {
        let created_at = now_rfc3339();
        Self {
            id,
            created: Instant::now(),
            ttl: policy.ttl,
            poll_interval: policy.poll_interval,
            cancel,
            state: Mutex::new(State {
                status: Status::Working,
                promoted: false,
                cancel_requested: false,
                message: None,
                progress: None,
                outcome: None,
                updated_at: created_at.clone(),
            }),
            created_at,
        }
    }

    /// Whether the request was answered with this task: from then on nothing of the call may
    /// reach the connection.
    pub(crate) fn is_promoted(&self) -> bool {
        lock(&self.state).promoted
    }

    fn has_ended(&self) -> bool {
        lock(&self.state).status != Status::Working
    }

    /// Marks it answered and returns the `CreateTaskResult` (before the server's stamp).
    pub(crate) fn promote(&self) -> Value {
        lock(&self.state).promoted = true;
        let mut created = self.describe(true);
        created["resultType"] = json!("task");
        created
    }

    /// Keeps the call's last progress report, its message cut to a bound.
    pub(crate) fn record_progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let mut state = lock(&self.state);
        if state.status != Status::Working {
            return;
        }
        state.progress = Some((progress, total));
        // Once a cancel is asked for, the status message says so until the call has ended.
        if let Some(message) = message.filter(|_| !state.cancel_requested) {
            state.message = Some(cut(message, STATUS_MESSAGE_BYTES).to_owned());
        }
        state.updated_at = now_rfc3339();
    }

    /// Records how the call ended: its result, or the JSON-RPC error it became.
    pub(crate) fn finish(&self, outcome: Result<Value, RpcError>) {
        let mut state = lock(&self.state);
        if state.status != Status::Working {
            return;
        }
        // A call that finished what it was asked before the cancel reached it (an acting tool's
        // `done`) completed: its result is kept, as the revision allows a late cancel to end.
        let done = outcome.as_ref().is_ok_and(|result| {
            result.pointer("/structuredContent/outcome") == Some(&json!("done"))
        });
        state.status = match (&outcome, state.cancel_requested) {
            (Ok(_), true) if done => Status::Completed,
            (_, true) => Status::Cancelled,
            (Ok(_), false) => Status::Completed,
            (Err(_), false) => Status::Failed,
        };
        state.message = Some(match (&outcome, state.status) {
            (_, Status::Cancelled) => "cancelled: the call was stopped".to_owned(),
            (Err(error), _) => error.message.clone(),
            (Ok(result), _) => summary_of(result),
        });
        state.outcome = match (outcome, state.status) {
            (_, Status::Cancelled) => None,
            (Ok(result), _) => Some(result),
            (Err(error), _) => Some(error_value(&error)),
        };
        state.updated_at = now_rfc3339();
    }

    pub(crate) fn request_cancel(&self) {
        let mut state = lock(&self.state);
        if state.status == Status::Working && !state.cancel_requested {
            state.cancel_requested = true;
            state.message = Some("cancelling: the call was told to stop".to_owned());
            state.updated_at = now_rfc3339();
        }
        drop(state);
        self.cancel.cancel();
    }

    /// The task as `tasks/get` shows it (`seed`: as the tool call's answer, without an outcome).
    fn describe(&self, seed: bool) -> Value {
        let state = lock(&self.state);
        let mut task = Map::new();
        task.insert("taskId".into(), json!(self.id));
        task.insert("status".into(), json!(state.status.as_str()));
        if let Some(message) = &state.message {
            task.insert("statusMessage".into(), json!(message));
        }
        task.insert("createdAt".into(), json!(self.created_at));
        task.insert("lastUpdatedAt".into(), json!(state.updated_at));
        task.insert("ttlMs".into(), json!(millis(self.ttl)));
        task.insert("pollIntervalMs".into(), json!(millis(self.poll_interval)));
        match (state.status, &state.outcome) {
            (Status::Completed, Some(result)) if !seed => {
                task.insert("result".into(), result.clone());
            }
            (Status::Failed, Some(error)) if !seed => {
                task.insert("error".into(), error.clone());
            }
            _ => {}
        }
        if let Some((progress, total)) = state.progress {
            let mut counts = Map::new();
            counts.insert("progress".into(), json!(progress));
            if let Some(total) = total {
                counts.insert("total".into(), json!(total));
            }
            task.insert(
                "_meta".into(),
                json!({ PROGRESS_META_KEY: Value::Object(counts) }),
            );
        }
        Value::Object(task)
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The first line of a call result's first text: for `once_run`, `done: run … succeeded`.
fn summary_of(result: &Value) -> String {
    let text = result
        .pointer("/content/0/text")
        .and_then(Value::as_str)
        .unwrap_or("completed");
    cut(text.lines().next().unwrap_or_default(), 2_000).to_owned()
}

fn error_value(error: &RpcError) -> Value {
    let mut value = json!({"code": error.code, "message": error.message});
    if let Some(data) = &error.data {
        value["data"] = data.clone();
    }
    value
}

/// `text` cut to at most `bytes`, on a character boundary.
fn cut(text: &str, bytes: usize) -> &str {
    if text.len() <= bytes {
        return text;
    }
    let mut end = bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The JSON-RPC error of a call whose handler could not be run or crashed, as a task keeps it.
pub(crate) fn internal(message: String) -> RpcError {
    RpcError::new(INTERNAL_ERROR, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(max_tasks: usize, ttl: Duration) -> TaskPolicy {
        TaskPolicy {
            tools: vec!["slow"],
            max_tasks,
            ttl,
            ..TaskPolicy::default()
        }
    }

    #[test]
    fn ids_are_128_random_bits_in_hex() {
        let (a, b) = (new_task_id(), new_task_id());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn a_full_store_drops_the_oldest_ended_task_and_never_a_working_one() {
        let tasks = Tasks::new(policy(2, Duration::from_secs(60)));
        let first = tasks.reserve("slow", CancelToken::new()).unwrap();
        let second = tasks.reserve("slow", CancelToken::new()).unwrap();
        assert!(tasks.reserve("slow", CancelToken::new()).is_none());
        first.finish(Ok(json!({"content": []})));
        assert!(tasks.reserve("slow", CancelToken::new()).is_some());
        assert!(!lock(&tasks.entries).contains_key(&first.id));
        assert!(lock(&tasks.entries).contains_key(&second.id));
        assert!(tasks.reserve("other", CancelToken::new()).is_none());
    }

    #[test]
    fn a_call_that_was_done_before_a_late_cancel_completed_and_keeps_its_result() {
        let tasks = Tasks::default();
        let finished = |structured: Value| {
            let task = tasks.reserve("once_run", CancelToken::new()).unwrap();
            task.request_cancel();
            task.record_progress(1.0, Some(1.0), Some("a heartbeat"));
            assert_eq!(
                lock(&task.state).message.as_deref(),
                Some("cancelling: the call was told to stop")
            );
            task.finish(Ok(json!({"content": [], "structuredContent": structured})));
            let state = lock(&task.state);
            (state.status, state.outcome.is_some())
        };
        assert_eq!(
            finished(json!({"outcome": "done", "message": "ran 1 action"})),
            (Status::Completed, true)
        );
        assert_eq!(
            finished(json!({"outcome": "problem", "message": "cancelled"})),
            (Status::Cancelled, false)
        );
    }

    #[test]
    fn an_expired_task_is_forgotten_and_its_call_cancelled() {
        let tasks = Tasks::new(policy(4, Duration::ZERO));
        let cancel = CancelToken::new();
        let task = tasks.reserve("slow", cancel.clone()).unwrap();
        task.promote();
        let error = tasks
            .serve("tasks/get", Some(&json!({"taskId": task.id})))
            .unwrap_err();
        assert_eq!(error.code, crate::message::INVALID_PARAMS);
        assert!(error.message.contains("expired"), "{}", error.message);
        assert!(cancel.is_cancelled());
    }

    #[test]
    fn status_messages_are_cut_on_a_character_boundary() {
        let long = "é".repeat(STATUS_MESSAGE_BYTES);
        let cut = cut(&long, STATUS_MESSAGE_BYTES + 1);
        assert_eq!(cut.len(), STATUS_MESSAGE_BYTES);
    }
}
