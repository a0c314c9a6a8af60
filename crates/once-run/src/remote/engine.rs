//! Remote execution: sending an action to a REAPI engine's `Execution` service and waiting for
//! its result, for the scheduler to restore as it restores a remote cache hit.
//!
//! One execution is: the input root's blobs the engine lacks (`FindMissingBlobs`, then batches,
//! or ByteStream for a large file), read from the workspace and checked against the digest the
//! description gave them; `Execute` with the action's deadline as its `timeout`, followed by
//! `WaitExecution` when the stream breaks once the operation is named; and, while it waits, a
//! watcher that sends `CancelOperation` when the run is cancelled or stopping, or when the
//! engine lets the action outlive its deadline (plus time to queue).
//!
//! An engine that cannot be reached, does not execute, or fails a call turns remote execution
//! off for the rest of the run at its first failure, with one warning: the action, and every
//! one after it, runs here. A configuration the engine refuses (a wrong instance, credentials)
//! stops the run before it starts. It must never send a secret (the description holds none),
//! never execute one request twice, and never leave an operation running that the run gave up.

use std::fmt;
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use once_remote::{Bytes, Client, digest_of, reapi};
use serde::{Deserialize, Serialize};

use super::config::ExecutionConfig;
use super::download::span_ms;
use crate::describe::Described;
use crate::report::{Place, RanOn};

/// How long past its deadline the run waits for an action the engine has not finished: room to
/// wait in the engine's queue, and to fetch inputs and upload outputs.
const QUEUE_ROOM: Duration = Duration::from_secs(300);

/// How often the watcher of an execution looks for a cancel or a stop.
const WATCH_EVERY: Duration = Duration::from_millis(50);

/// How many times a broken stream is resumed with `WaitExecution` before the engine counts as
/// failing.
const RESUMES: usize = 2;

/// A remote execution engine for one run, shared by its workers: a pool of connections and
/// what the run did with it.
pub struct Engine {
    config: ExecutionConfig,
    clients: Mutex<Vec<Client>>,
    /// Set once, at the first failure: remote execution is off for the rest of the run.
    off: OnceLock<String>,
    executed: AtomicUsize,
    engine_cached: AtomicUsize,
    failed: AtomicUsize,
    local: AtomicUsize,
    /// Calls of the clients dropped so far (those in the pool are counted when asked).
    spent: AtomicU64,
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("config", &self.config)
            .field("off", &self.off.get())
            .finish_non_exhaustive()
    }
}

/// What a run did with remote execution: part of its report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionReport {
    pub url: String,
    pub instance: String,
    /// Remote actions in flight at most.
    pub jobs: usize,
    /// Actions the engine ran (whatever their exit code).
    pub executed: usize,
    /// Of those, the ones the engine answered from its own cache.
    pub engine_cached: usize,
    /// Of those, the ones that failed (an exit code other than 0, or a timeout).
    pub failed: usize,
    /// Actions whose command ran here instead (local-only, or after the engine went off).
    pub local: usize,
    /// Calls sent to the engine.
    pub round_trips: u64,
    /// Why remote execution went off, and headers not sent: one sentence per line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// How one execution ended.
pub(crate) enum Executed {
    /// The engine has a result: its exit code, outputs and logs, and where it ran.
    Result {
        result: Box<reapi::ActionResult>,
        ran_on: RanOn,
        /// The engine stopped it at its deadline.
        timed_out: bool,
    },
    /// The run was cancelled or is stopping; the operation was cancelled too.
    Cancelled,
    /// The engine did not finish it within its deadline and the room to queue; cancelled.
    Overdue,
    /// The engine refused this action (a platform it does not know, an input it says is
    /// missing), with its words: it runs here, and the engine stays on for the others.
    Refused(String),
    /// Remote execution is off (since now or before): run it here.
    Unavailable,
}

impl Engine {
    /// Connects to the engine and reads its capabilities. A configuration it refuses is an
    /// error; an engine that cannot be reached, or that does not execute, gives an engine that
    /// is off from the start, with the reason as its warning.
    pub fn connect(config: ExecutionConfig) -> Result<Engine, once_remote::Error> {
        let engine = Engine {
            config,
            clients: Mutex::new(Vec::new()),
            off: OnceLock::new(),
            executed: AtomicUsize::new(0),
            engine_cached: AtomicUsize::new(0),
            failed: AtomicUsize::new(0),
            local: AtomicUsize::new(0),
            spent: AtomicU64::new(0),
        };
        let client = match engine.open() {
            Ok(client) => client,
            Err(error) if super::fatal(&error) => return Err(error),
            Err(error) => {
                engine.turn_off(&error);
                return Ok(engine);
            }
        };
        match client.capabilities() {
            Ok(capabilities) if capabilities.execution_enabled => {
                engine.lock_clients().push(client);
            }
            Ok(_) => {
                engine.spent.fetch_add(client.calls(), Ordering::Relaxed);
                engine.turn_off(&format!(
                    "the server at `{}` does not execute actions (its capabilities say so)",
                    engine.config.url
                ));
            }
            Err(error) if super::fatal(&error) => return Err(error),
            Err(error) => {
                engine.spent.fetch_add(client.calls(), Ordering::Relaxed);
                engine.turn_off(&error);
            }
        }
        Ok(engine)
    }

    /// Whether actions still go to the engine in this run.
    pub(crate) fn is_on(&self) -> bool {
        self.off.get().is_none()
    }

    /// Remote actions in flight at most.
    pub fn jobs(&self) -> usize {
        self.config.jobs
    }

    /// The platform an action with `placement` asks of its worker: `[execution] platform`, the
    /// capability's `platform` over it, sorted by name as REAPI asks.
    pub(crate) fn platform(&self, placement: &once_graph::Placement) -> reapi::Platform {
        let mut properties = self.config.platform.clone();
        properties.extend(
            placement
                .platform
                .iter()
                .map(|(name, value)| (name.clone(), value.clone())),
        );
        reapi::Platform {
            properties: properties
                .into_iter()
                .map(|(name, value)| reapi::platform::Property { name, value })
                .collect(),
        }
    }

    /// The bounds a worker's result must keep to be downloaded.
    pub(crate) fn limits(&self) -> super::Limits {
        super::Limits {
            url: self.config.url.clone(),
            max_blob: self.config.max_blob,
            max_result: self.config.max_result,
        }
    }

    /// A failed result's stdout, then its stderr, each up to the log's cap; what cannot be
    /// read is left out (the exit code is still known).
    pub(crate) fn logs(&self, result: &reapi::ActionResult, spill: &std::path::Path) -> Vec<u8> {
        let cap = crate::cache::LOG_CAP;
        let wanted: Vec<reapi::Digest> = [&result.stdout_digest, &result.stderr_digest]
            .into_iter()
            .flatten()
            .filter(|d| d.size_bytes > 0 && u64::try_from(d.size_bytes).is_ok_and(|s| s <= cap))
            .cloned()
            .collect();
        let mut text = Vec::new();
        if wanted.is_empty() {
            return text;
        }
        if let Some(blobs) = self.with_client(|client| client.read_blobs(&wanted, spill)) {
            for blob in blobs.into_iter().flatten() {
                match blob {
                    once_remote::Blob::Memory(bytes) => text.extend_from_slice(&bytes),
                    once_remote::Blob::File(file) => {
                        text.extend(std::fs::read(file.path()).unwrap_or_default());
                    }
                }
            }
        }
        text
    }

    /// Counts an action whose command ran here while remote execution was configured.
    pub(crate) fn ran_here(&self) {
        self.local.fetch_add(1, Ordering::Relaxed);
    }

    /// What the run did with the engine so far.
    pub fn report(&self) -> ExecutionReport {
        let pooled: u64 = self.lock_clients().iter().map(Client::calls).sum();
        let warnings = self.warnings();
        ExecutionReport {
            url: self.config.url.clone(),
            instance: self.config.instance.clone(),
            jobs: self.config.jobs,
            executed: self.executed.load(Ordering::Relaxed),
            engine_cached: self.engine_cached.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            local: self.local.load(Ordering::Relaxed),
            round_trips: self.spent.load(Ordering::Relaxed) + pooled,
            warning: (!warnings.is_empty()).then(|| warnings.join("\n")),
        }
    }

    /// What the person should know about remote execution in this run, each said once.
    pub(crate) fn warnings(&self) -> Vec<&str> {
        [self.config.notice.as_ref(), self.off.get()]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect()
    }

    /// Runs the described action on the engine, waiting up to `deadline` (and the room to
    /// queue); `stop` says when the run is cancelled or stopping.
    /// `fresh` asks the engine to run it even when its own cache has a result (`--force`).
    pub(crate) fn execute(
        &self,
        described: &Described,
        deadline: Duration,
        fresh: bool,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Executed {
        if !self.is_on() {
            return Executed::Unavailable;
        }
        match self.with_client(|client| upload_inputs(client, described)) {
            Some(Ok(())) => {}
            // An input that changed or vanished since it was hashed: the workspace's doing,
            // not the engine's; this action runs here, and remote execution stays on.
            Some(Err(reason)) => {
                tracing::debug!(%reason, "cannot send the action's inputs: running it here");
                return Executed::Unavailable;
            }
            None => return Executed::Unavailable,
        }
        let Some(client) = self.take_client() else {
            return Executed::Unavailable;
        };
        let wait = deadline.saturating_add(QUEUE_ROOM);
        let watched = Watched::default();
        let response = thread::scope(|scope| {
            let (done, ended) = mpsc::channel::<()>();
            let watcher = scope.spawn(|| self.watch(&watched, ended, wait, stop));
            let mut response =
                client.execute(&described.action_digest, fresh, wait, |op| watched.saw(op));
            for _ in 0..RESUMES {
                let Err(error) = &response else { break };
                let name = watched.name();
                if name.is_empty() || watched.gave_up() || !resumable(error) {
                    break;
                }
                tracing::debug!(%error, operation = %name, "the execution stream broke: following the operation");
                response = client.wait_execution(&name, wait, |op| watched.saw(op));
            }
            drop(done);
            let _ = watcher.join();
            response
        });
        if watched.cancelled.load(Ordering::Relaxed) {
            self.pool(client);
            return Executed::Cancelled;
        }
        if watched.overdue.load(Ordering::Relaxed) {
            self.pool(client);
            self.failed.fetch_add(1, Ordering::Relaxed);
            return Executed::Overdue;
        }
        let response = match response {
            Ok(response) => response,
            Err(once_remote::Error::Status {
                code: code @ ("FAILED_PRECONDITION" | "INVALID_ARGUMENT"),
                message,
                ..
            }) => {
                self.pool(client);
                return Executed::Refused(format!("{code}: {message}"));
            }
            Err(once_remote::Error::DeadlineExceeded { .. }) => {
                self.cancel(&watched.name());
                self.pool(client);
                self.failed.fetch_add(1, Ordering::Relaxed);
                return Executed::Overdue;
            }
            Err(error) => {
                self.spent.fetch_add(client.calls(), Ordering::Relaxed);
                self.turn_off(&error);
                return Executed::Unavailable;
            }
        };
        self.pool(client);
        let status = response.status.clone().unwrap_or_default();
        let timed_out = status.code == DEADLINE_EXCEEDED;
        if matches!(status.code, FAILED_PRECONDITION | INVALID_ARGUMENT) {
            return Executed::Refused(format!(
                "{}: {}",
                once_remote::status_name(status.code),
                status.message
            ));
        }
        if status.code != 0 && !timed_out {
            self.turn_off(&format!(
                "the remote execution engine at `{}` could not run an action ({}): {}",
                self.config.url,
                once_remote::status_name(status.code),
                status.message
            ));
            return Executed::Unavailable;
        }
        let Some(result) = response.result else {
            if timed_out {
                self.failed.fetch_add(1, Ordering::Relaxed);
                return Executed::Overdue;
            }
            self.turn_off(&format!(
                "the remote execution engine at `{}` answered an execution with no result",
                self.config.url
            ));
            return Executed::Unavailable;
        };
        self.executed.fetch_add(1, Ordering::Relaxed);
        if response.cached_result {
            self.engine_cached.fetch_add(1, Ordering::Relaxed);
        }
        if result.exit_code != 0 || timed_out {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
        let ran_on = ran_on(&result, response.cached_result);
        Executed::Result {
            result: Box::new(result),
            ran_on,
            timed_out,
        }
    }

    /// Waits for the execution to end (`ended` closes), cancelling its operation when the run
    /// stops or the action is overdue.
    fn watch(
        &self,
        watched: &Watched,
        ended: mpsc::Receiver<()>,
        wait: Duration,
        stop: &(dyn Fn() -> bool + Sync),
    ) {
        let until = Instant::now() + wait;
        loop {
            match ended.recv_timeout(WATCH_EVERY) {
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                Err(RecvTimeoutError::Timeout) => {}
            }
            let overdue = Instant::now() >= until;
            if stop() || overdue {
                let flag = if overdue {
                    &watched.overdue
                } else {
                    &watched.cancelled
                };
                flag.store(true, Ordering::Relaxed);
                self.cancel(&watched.name());
                return;
            }
        }
    }

    /// Asks the engine to stop operation `name`, over a connection of its own (the execution's
    /// is busy with the stream); best effort.
    fn cancel(&self, name: &str) {
        if name.is_empty() {
            return;
        }
        match self.open() {
            Ok(client) => {
                if let Err(error) = client.cancel_operation(name) {
                    tracing::debug!(%error, operation = %name, "cannot cancel the remote operation");
                }
                self.spent.fetch_add(client.calls(), Ordering::Relaxed);
            }
            Err(error) => {
                tracing::debug!(%error, operation = %name, "cannot reach the engine to cancel");
            }
        }
    }

    /// Runs `call` on a pooled connection (or a new one); its first failure turns remote
    /// execution off.
    pub(crate) fn with_client<T>(
        &self,
        call: impl FnOnce(&Client) -> Result<T, once_remote::Error>,
    ) -> Option<T> {
        let client = self.take_client()?;
        match call(&client) {
            Ok(value) => {
                self.pool(client);
                Some(value)
            }
            Err(error) => {
                self.spent.fetch_add(client.calls(), Ordering::Relaxed);
                self.turn_off(&error);
                None
            }
        }
    }

    fn take_client(&self) -> Option<Client> {
        if !self.is_on() {
            return None;
        }
        let pooled = self.lock_clients().pop();
        match pooled {
            Some(client) => Some(client),
            None => match self.open() {
                Ok(client) => Some(client),
                Err(error) => {
                    self.turn_off(&error);
                    None
                }
            },
        }
    }

    fn pool(&self, client: Client) {
        self.lock_clients().push(client);
    }

    fn open(&self) -> Result<Client, once_remote::Error> {
        Client::connect(
            &self.config.url,
            &self.config.instance,
            self.config.headers.clone(),
            self.config.timeout,
        )
    }

    fn turn_off(&self, reason: &dyn fmt::Display) {
        let message = format!("{reason}; running the actions here, without remote execution");
        if self.off.set(message).is_ok() {
            tracing::debug!(reason = %reason, "remote execution off");
        }
    }

    fn lock_clients(&self) -> MutexGuard<'_, Vec<Client>> {
        // Each update is one push or pop, which leaves the pool whole.
        self.clients.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The gRPC code an engine gives an action it stopped at its timeout.
const DEADLINE_EXCEEDED: i32 = 4;
/// The gRPC codes of an engine that will not run one action as asked.
const INVALID_ARGUMENT: i32 = 3;
const FAILED_PRECONDITION: i32 = 9;

/// What the watcher and the waiting thread share about one execution.
#[derive(Default)]
struct Watched {
    /// The operation's name, once the engine gave it.
    name: Mutex<String>,
    cancelled: AtomicBool,
    overdue: AtomicBool,
}

impl Watched {
    fn saw(&self, op: &once_remote::longrunning::Operation) {
        let mut name = self.name.lock().unwrap_or_else(PoisonError::into_inner);
        if name.is_empty() && !op.name.is_empty() {
            op.name.clone_into(&mut name);
        }
    }

    fn name(&self) -> String {
        self.name
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn gave_up(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed) || self.overdue.load(Ordering::Relaxed)
    }
}

/// Errors after which the same operation may still be followed: the stream or the connection
/// broke, not the engine's answer.
fn resumable(error: &once_remote::Error) -> bool {
    matches!(
        error,
        once_remote::Error::CannotReach { .. }
            | once_remote::Error::Protocol { .. }
            | once_remote::Error::Status {
                code: "UNAVAILABLE",
                ..
            }
    )
}

/// Where `result` says it ran, and how long it queued and ran.
fn ran_on(result: &reapi::ActionResult, engine_cached: bool) -> RanOn {
    let meta = result.execution_metadata.clone().unwrap_or_default();
    RanOn {
        place: Place::Remote,
        worker: (!meta.worker.is_empty()).then(|| meta.worker.clone()),
        queued_ms: span_ms(
            meta.queued_timestamp.as_ref(),
            meta.worker_start_timestamp.as_ref(),
        ),
        executed_ms: span_ms(
            meta.worker_start_timestamp.as_ref(),
            meta.worker_completed_timestamp.as_ref(),
        ),
        engine_cached,
        because: None,
    }
}

/// Sends what the engine lacks of the action's messages and input files. `Ok(Err(why))` when an
/// input file cannot be read as it was hashed (changed or gone since).
fn upload_inputs(
    client: &Client,
    described: &Described,
) -> Result<Result<(), String>, once_remote::Error> {
    let mut digests: Vec<reapi::Digest> = described
        .blobs
        .values()
        .map(|bytes| digest_of(bytes))
        .collect();
    digests.extend(
        described
            .files
            .iter()
            .map(|(hash, (size, _))| reapi::Digest {
                hash: hash.clone(),
                size_bytes: *size,
            }),
    );
    let missing = client.find_missing_blobs(&digests)?;
    let mut batch: Vec<(reapi::Digest, Bytes)> = Vec::new();
    let mut held = 0usize;
    for digest in missing {
        let bytes = match described.blobs.get(&digest.hash) {
            Some(bytes) => Bytes::from(bytes.clone()),
            None => {
                let Some((_, path)) = described.files.get(&digest.hash) else {
                    continue;
                };
                match read_checked(path, &digest) {
                    Ok(bytes) => bytes,
                    Err(why) => return Ok(Err(why)),
                }
            }
        };
        held += bytes.len();
        batch.push((digest, bytes));
        // Bounded memory: send what is gathered before it grows past 64 MiB.
        if held > 64 << 20 {
            client.batch_update_blobs(&std::mem::take(&mut batch))?;
            held = 0;
        }
    }
    if !batch.is_empty() {
        client.batch_update_blobs(&batch)?;
    }
    Ok(Ok(()))
}

/// The bytes of the input file at `path`, if they are still those of `digest`.
fn read_checked(path: &std::path::Path, digest: &reapi::Digest) -> Result<Bytes, String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|mut file| file.read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read the input `{}`: {e}", path.display()))?;
    if digest_of(&bytes) != *digest {
        return Err(format!(
            "the input `{}` changed after it was hashed",
            path.display()
        ));
    }
    Ok(Bytes::from(bytes))
}
