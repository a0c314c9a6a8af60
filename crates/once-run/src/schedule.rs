//! The scheduler: runs a plan on a pool of `jobs` threads, starting each action the moment all
//! its dependencies have succeeded, consulting the cache first.
//!
//! The bookkeeping (what is ready, what is pending, the reports) sits behind one mutex that every
//! worker takes twice per action: to take the next ready action and to record its end, which
//! makes its dependents ready. No thread hands work to another, so a cache hit costs no context
//! switch; a worker sleeps only when nothing is ready, and is woken only when something is. The
//! calling thread is one of the workers. Nothing starts after the first failure (unless
//! `keep_going`), after `cancel` fires, or once the registry is shutting down; what did not
//! start is reported as skipped. A worker must never hold the mutex while it hashes, replays or
//! runs, so a run ends as soon as its last action does.
//!
//! A capability's `mutex` is kept at two levels: a worker takes the first ready action whose
//! mutex no running action of this run holds (the board's `held`), and, to keep other runs on
//! the workspace out too, holds the mutex's lock file while the command runs.

use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use once_exec::{Cancel, Registry, Status};

use crate::asked::Asked;
use crate::cache::Cache;
use crate::describe::Describer;
use crate::environ::Environ;
use crate::hashes::FileHashes;
use crate::key::Key;
use crate::keyer::Keyer;
use crate::plan::{Plan, Step};
use crate::remote::{Engine, Remote};
use crate::report::{ActionReport, ActionStatus, Owner, RunReport, RunStatus, Stop};
use crate::store::RunDir;
use crate::witness::Witness;

mod batch;
mod perform;
mod remotely;
mod slots;

/// How a plan is run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Most actions at once.
    pub jobs: usize,
    /// Go on after a failure with everything that does not depend on it.
    pub keep_going: bool,
    /// Run every action even when the cache has its result.
    pub force: bool,
    /// The remote cache behind the local one, if any.
    pub remote: Option<Arc<Remote>>,
    /// The remote execution engine actions go to, if any (local-only ones stay here).
    pub engine: Option<Arc<Engine>>,
    /// Where to record every path the run's keys and look-ups read, for a proof that a later
    /// run would be a no-op (`once_run::Proof`).
    pub witness: Option<Arc<Witness>>,
    /// What was asked and by whom, kept in the run's record.
    pub asked: Option<Asked>,
    /// Whether actions that can run in batches do (`--batch`, `--no-batch`); `None` follows
    /// each capability's `batch` (see `batch.rs`).
    pub batch: Option<bool>,
}

/// How many actions run at once by default: the cores, plus two. A command spends part of its
/// life off the processor (starting, exiting, waiting for the disk or the network), and with
/// one command per core a core idles for each of those moments; two more keep them busy. On a
/// cold build of 1,000 short commands on 2 cores, 4 at once took 5% less time than 2.
fn default_jobs() -> usize {
    thread::available_parallelism().map_or(1, usize::from) + 2
}

impl Default for Options {
    fn default() -> Self {
        Options {
            jobs: default_jobs(),
            keep_going: false,
            force: false,
            remote: None,
            engine: None,
            witness: None,
            asked: None,
            batch: None,
        }
    }
}

/// What the scheduler tells its observer, as it happens.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// An action was handed to a worker.
    Started { action: &'a str },
    /// An action ended; `done` of `total` have ended so far (skipped ones included). `log` is
    /// its output: this run's log, or for a cache hit the output recorded when it ran.
    Finished {
        action: &'a str,
        status: ActionStatus,
        cached: bool,
        done: usize,
        total: usize,
        log: Option<&'a Path>,
    },
    /// Something the person should know once: the remote cache was turned off, and why.
    Warning { message: &'a str },
}

/// Runs `plan`, recording logs and the report in `run`, and returns the report. Blocks until
/// every started action has ended. `observe` is called from the worker threads, one call at a
/// time, in the order things happen.
pub fn execute(
    plan: &Plan,
    cache: &Cache,
    run: &RunDir,
    registry: &Registry,
    cancel: &Cancel,
    options: &Options,
    observe: &mut (dyn FnMut(Event<'_>) + Send),
) -> RunReport {
    let started_at = unix_millis();
    let start = Instant::now();
    let steps = &plan.steps;
    let total = steps.len();
    let owner = crate::owner::current();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); total];
    for (i, step) in steps.iter().enumerate() {
        for &d in &step.deps {
            dependents[d].push(i);
        }
    }
    let pending: Vec<usize> = steps.iter().map(|s| s.deps.len()).collect();
    let board = Board {
        state: Mutex::new(State {
            ready: (0..total).filter(|&i| pending[i] == 0).collect(),
            pending,
            reports: vec![None; total],
            started: vec![None; total],
            writes: (0..total).collect(),
            keys: vec![None; total],
            held: HashSet::new(),
            running: 0,
            idle: 0,
            done: 0,
            stopped: false,
            changed: false,
            warned: Vec::new(),
            observe,
        }),
        wake: Condvar::new(),
        dependents,
        keep_going: options.keep_going,
        start,
    };
    let record = Record {
        run,
        started_at,
        start,
        owner,
        asked: options.asked.clone(),
        over: Mutex::new(false),
        ended: Condvar::new(),
    };
    // A report that says `running`, with every action pending, so another process (or an
    // agent) listing runs sees this one and its owner from the start.
    record.write_running(board.snapshot(steps, run));
    let local_jobs = options.jobs.max(1);
    let engine = options.engine.as_deref();
    // With an engine, a worker per remote action in flight; commands that run here still
    // take one of `jobs` slots.
    let jobs = engine
        .filter(|engine| engine.is_on())
        .map_or(local_jobs, |engine| local_jobs.max(engine.jobs()))
        .min(total.max(1));
    let hashes = cache.file_hashes().witnessed_by(options.witness.clone());
    if plan.steps.iter().any(|step| step.env_file.is_some()) {
        // Read while planning, before anything was recorded.
        hashes.witness().spoil("an action reads an env-file");
    }
    let environ = Environ::new();
    let remote = options.remote.as_deref();
    board.warn_once(&mut board.lock(), remote, engine);
    let worker = Worker {
        plan,
        cache,
        run,
        registry,
        cancel,
        force: options.force,
        keyer: Keyer::new(plan, &hashes, &environ),
        hashes: &hashes,
        remote,
        engine,
        slots: (jobs > local_jobs).then(|| slots::Slots::new(local_jobs)),
        describer: (remote.is_some() || engine.is_some())
            .then(|| Describer::new(plan, &environ, &hashes)),
        recall: crate::explain::Recall::new(cache, plan),
        batch: options.batch,
        batches: AtomicUsize::new(0),
    };

    // The calling thread is one of the workers.
    thread::scope(|scope| {
        scope.spawn(|| record.keep(&board, steps));
        // Ends the record's thread when this worker returns (only once nothing runs and nothing
        // can start: the run is over) or unwinds, so the scope can always join it.
        let _over = Over(&record);
        for _ in 1..jobs {
            scope.spawn(|| worker.serve(&board));
        }
        worker.serve(&board);
    });

    drop(worker);
    hashes.save();
    let state = board
        .state
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    let mut actions: Vec<ActionReport> = state
        .reports
        .into_iter()
        .zip(steps)
        .map(|(report, step)| report.unwrap_or_else(|| skipped(step, STOPPED_FIRST.to_owned())))
        .collect();
    let unfinished = actions
        .iter()
        .any(|a| matches!(a.status, ActionStatus::Cancelled | ActionStatus::Skipped));
    let stop = if cancel.is_cancelled() {
        Stop::Cancelled
    } else if registry.is_shutting_down() && unfinished {
        // The process that owns the run is stopping: what it stopped was interrupted, not
        // cancelled by anyone who asked.
        for action in &mut actions {
            if action.status == ActionStatus::Cancelled {
                action.status = ActionStatus::Interrupted;
            }
        }
        Stop::Interrupted
    } else {
        Stop::None
    };
    let (status, counts) = RunReport::summarise(&actions, stop);
    let report = RunReport {
        run_id: run.id.clone(),
        status,
        started_at,
        duration_ms: millis(start.elapsed()),
        counts,
        containment: once_exec::Containment::current(),
        actions,
        owner: None,
        remote: remote.map(Remote::report),
        execution: engine.map(Engine::report),
        asked: options.asked.clone(),
    };
    record.write(&report);
    // The keys this run used go to the journal of recency; a run that grew the cache past its
    // bound prunes it.
    cache.settle();
    report
}

/// Writes the record of a run about to start: `running`, every action pending, owned by this
/// process. [`execute`] writes it too; a caller that answers before `execute` gets that far (an
/// MCP `once_run` that does not wait) calls this first, so the run id it hands out can be read.
pub fn announce(plan: &Plan, run: &RunDir, asked: Option<&Asked>) {
    let actions: Vec<ActionReport> = plan.steps.iter().map(not_started).collect();
    let (_, counts) = RunReport::summarise(&actions, Stop::None);
    let report = RunReport {
        run_id: run.id.clone(),
        status: RunStatus::Running,
        started_at: unix_millis(),
        duration_ms: 0,
        counts,
        containment: once_exec::Containment::current(),
        actions,
        owner: crate::owner::current(),
        remote: None,
        execution: None,
        asked: asked.cloned(),
    };
    if let Err(error) = run.write_report(&report) {
        tracing::warn!(%error, "cannot write the run report");
    }
}

/// How often, at most, the record of a run in flight is rewritten. Each rewrite serialises
/// every action (about 150 bytes each) and renames one file into place; at this rate even a
/// 1,000-action run spends well under 1% of its time on it, and a reader is never more than
/// this far behind.
const RECORD_EVERY: Duration = Duration::from_millis(100);

/// How many times the last rewrite's own time the record waits before the next one, at least:
/// its thread then spends at most 2% of a core on it. A record grows with the run (about 750 KB
/// at 5,000 actions, a snapshot under the scheduler's lock, its JSON and a new file each time),
/// so a large run's record is rewritten less often instead of costing it more.
const RECORD_SHARE: u32 = 50;

/// The run's `run.json` while it is in flight: rewritten by one thread of its own when actions
/// started or ended since the last write, at most every [`RECORD_EVERY`] (less often for a
/// large run, see [`RECORD_SHARE`]), so no worker ever waits for a write.
struct Record<'a> {
    run: &'a RunDir,
    started_at: u64,
    start: Instant,
    owner: Option<Owner>,
    asked: Option<Asked>,
    over: Mutex<bool>,
    ended: Condvar,
}

impl Record<'_> {
    fn write(&self, report: &RunReport) {
        if let Err(error) = self.run.write_report(report) {
            tracing::warn!(%error, "cannot write the run report");
        }
    }

    /// Rewrites the record while the run goes on; returns when [`Record::end`] is called.
    fn keep(&self, board: &Board<'_>, steps: &[Step]) {
        let mut over = self.over.lock().unwrap_or_else(PoisonError::into_inner);
        let mut pause = RECORD_EVERY;
        loop {
            over = self
                .ended
                .wait_timeout(over, pause)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            if *over {
                return;
            }
            let began = Instant::now();
            let report = {
                let mut state = board.lock();
                if !std::mem::take(&mut state.changed) {
                    continue;
                }
                board.snapshot_of(&state, steps, self.run)
            };
            self.write_running(report);
            pause = RECORD_EVERY.max(began.elapsed() * RECORD_SHARE);
        }
    }

    fn write_running(&self, mut report: RunReport) {
        report.started_at = self.started_at;
        report.duration_ms = millis(self.start.elapsed());
        report.owner = self.owner;
        report.asked.clone_from(&self.asked);
        self.write(&report);
    }

    fn end(&self) {
        *self.over.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.ended.notify_all();
    }
}

/// Calls [`Record::end`] when dropped.
struct Over<'r, 'a>(&'r Record<'a>);

impl Drop for Over<'_, '_> {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// The bookkeeping of a run, shared by the workers: each takes the next ready action itself and
/// records its end itself, so an action costs no hand-off between threads.
struct Board<'o> {
    state: Mutex<State<'o>>,
    /// Signalled when an action becomes ready or the run can end.
    wake: Condvar,
    dependents: Vec<Vec<usize>>,
    keep_going: bool,
    /// When the run started: actions record their start relative to it.
    start: Instant,
}

struct State<'o> {
    ready: VecDeque<usize>,
    /// Dependencies of each action that have not succeeded yet.
    pending: Vec<usize>,
    reports: Vec<Option<ActionReport>>,
    /// When each action was handed to a worker (and not necessarily ended), in milliseconds
    /// after the run started.
    started: Vec<Option<u64>>,
    /// Whose log each action's command writes while it runs: its own, or for a member of a
    /// batch the first member's (the batch's one log).
    writes: Vec<usize>,
    keys: Vec<Option<Key>>,
    /// The mutexes of the actions running now: a ready action naming one of them waits.
    held: HashSet<Arc<str>>,
    running: usize,
    /// Workers waiting for an action to become ready; only they need waking.
    idle: usize,
    /// Actions ended so far, skipped ones included.
    done: usize,
    /// Nothing new starts: a failure (without `keep_going`), a cancel or a shutdown.
    stopped: bool,
    /// Something started or ended since the record was last written.
    changed: bool,
    /// The remote cache's warnings told so far: each is told once.
    warned: Vec<String>,
    observe: &'o mut (dyn FnMut(Event<'_>) + Send),
}

impl<'o> Board<'o> {
    /// The report as far as the run got: ended actions as they ended, the others running or
    /// pending.
    fn snapshot(&self, steps: &[Step], run: &RunDir) -> RunReport {
        let state = self.lock();
        self.snapshot_of(&state, steps, run)
    }

    fn snapshot_of(&self, state: &State<'_>, steps: &[Step], run: &RunDir) -> RunReport {
        let actions: Vec<ActionReport> = steps
            .iter()
            .enumerate()
            .map(|(i, step)| match &state.reports[i] {
                Some(report) => report.clone(),
                None => ActionReport {
                    // The log a command writes as it runs; a cache hit in progress has none
                    // yet, and its page reads as empty until it has.
                    // A batch's members all write the log of its first (`State::writes`).
                    log: state.started[i].map(|_| run.log_path(&steps[state.writes[i]].action)),
                    started_ms: state.started[i],
                    status: if state.started[i].is_some() {
                        ActionStatus::Running
                    } else {
                        ActionStatus::Pending
                    },
                    ..not_started(step)
                },
            })
            .collect();
        let (_, counts) = RunReport::summarise(&actions, Stop::None);
        RunReport {
            run_id: run.id.clone(),
            status: RunStatus::Running,
            started_at: 0,
            duration_ms: 0,
            counts,
            containment: once_exec::Containment::current(),
            actions,
            owner: None,
            remote: None,
            execution: None,
            asked: None,
        }
    }

    /// Tells the observer each of the remote cache's and the engine's warnings once per run
    /// (that it went off, a result too large to fetch, headers not sent).
    fn warn_once(&self, state: &mut State<'_>, remote: Option<&Remote>, engine: Option<&Engine>) {
        let warnings = remote
            .map(Remote::warnings)
            .unwrap_or_default()
            .into_iter()
            .chain(engine.map(Engine::warnings).unwrap_or_default());
        for message in warnings {
            if !state.warned.iter().any(|told| told == message) {
                state.warned.push(message.to_owned());
                (state.observe)(Event::Warning { message });
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<'o>> {
        // Every update of the state is made in one critical section that cannot panic halfway
        // but in the observer, after which the state is still whole.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records the end of action `i` and makes ready what waited only for it.
    fn finish(&self, state: &mut State<'_>, steps: &[Step], i: usize, finished: Finished) {
        state.running -= 1;
        state.done += 1;
        state.changed = true;
        if let Some(mutex) = &steps[i].mutex {
            state.held.remove(mutex);
        }
        let status = finished.report.status;
        let (done, total) = (state.done, steps.len());
        (state.observe)(Event::Finished {
            action: &steps[i].action,
            status,
            cached: finished.report.cached,
            done,
            total,
            log: finished.report.log.as_deref(),
        });
        let mut report = finished.report;
        report.started_ms = state.started[i];
        state.reports[i] = Some(report);
        state.keys[i] = finished.key;
        if status == ActionStatus::Succeeded {
            for &j in &self.dependents[i] {
                state.pending[j] -= 1;
                if state.pending[j] == 0 && state.reports[j].is_none() {
                    state.ready.push_back(j);
                }
            }
            return;
        }
        if !self.keep_going || status == ActionStatus::Cancelled {
            state.stopped = true;
        }
        // Whatever depends on a failure cannot run: mark it skipped now, so the progress count
        // stays true.
        let mut blocked: Vec<usize> = self.dependents[i].clone();
        while let Some(j) = blocked.pop() {
            if state.reports[j].is_none() {
                let because = format!("`{}` failed", steps[i].action);
                state.reports[j] = Some(skipped(&steps[j], because));
                state.done += 1;
                let done = state.done;
                (state.observe)(Event::Finished {
                    action: &steps[j].action,
                    status: ActionStatus::Skipped,
                    cached: false,
                    done,
                    total,
                    log: None,
                });
                blocked.extend_from_slice(&self.dependents[j]);
            }
        }
    }
}

/// `step`, started at `start`, failed before or without its command: `message` says why.
fn failure(step: &Step, start: Instant, message: String) -> Finished {
    Finished {
        report: ActionReport {
            action: step.action.clone(),
            status: ActionStatus::Failed,
            cached: false,
            remote: false,
            exit_code: None,
            duration_ms: millis(start.elapsed()),
            started_ms: None,
            log: None,
            tail: Some(vec![message]),
            retried: 0,
            skipped_because: None,
            batch: None,
            ran_on: None,
            ran_again: None,
        },
        key: None,
    }
}

/// An action's status and exit code (`128 + N` for signal N) after its command ended so.
fn status_of(status: &Status) -> (ActionStatus, Option<i32>) {
    match status {
        Status::Exited { code: 0 } => (ActionStatus::Succeeded, Some(0)),
        Status::Exited { code } => (ActionStatus::Failed, Some(*code)),
        Status::Signaled { signal } => (ActionStatus::Failed, Some(128 + signal)),
        Status::TimedOut => (ActionStatus::TimedOut, None),
        Status::Cancelled => (ActionStatus::Cancelled, None),
        Status::FailedToStart { .. } => (ActionStatus::Failed, None),
    }
}

/// Where the log of failed attempt `n` (from 1) is kept: `web_test.log` → `web_test.attempt-1.log`.
fn attempt_log(log: &Path, n: usize) -> PathBuf {
    let stem = log
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    log.with_file_name(format!("{stem}.attempt-{n}.log"))
}

pub(crate) fn unix_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, millis)
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Why an action that no failure blocked never started: the run stopped before it (a failure
/// elsewhere without `keep_going`, a cancellation, the owner stopping).
const STOPPED_FIRST: &str = "the run stopped before it started";

/// An action that never started, and why.
fn skipped(step: &Step, because: String) -> ActionReport {
    ActionReport {
        status: ActionStatus::Skipped,
        skipped_because: Some(because),
        ran_again: None,
        ..not_started(step)
    }
}

/// An action waiting for its turn.
fn not_started(step: &Step) -> ActionReport {
    ActionReport {
        action: step.action.clone(),
        status: ActionStatus::Pending,
        cached: false,
        remote: false,
        exit_code: None,
        duration_ms: 0,
        started_ms: None,
        log: None,
        tail: None,
        retried: 0,
        skipped_because: None,
        ran_again: None,
        batch: None,
        ran_on: None,
    }
}

struct Finished {
    report: ActionReport,
    /// Known when the action succeeded.
    key: Option<Key>,
}

/// What every worker thread shares.
struct Worker<'a> {
    plan: &'a Plan,
    cache: &'a Cache,
    run: &'a RunDir,
    registry: &'a Registry,
    cancel: &'a Cancel,
    force: bool,
    /// Computes keys, sharing what it walked and hashed among the workers.
    keyer: Keyer<'a>,
    /// Digests of files hashed before, proven current by a `stat`.
    hashes: &'a FileHashes,
    remote: Option<&'a Remote>,
    engine: Option<&'a Engine>,
    /// The commands that may run here at once, when workers outnumber them (remote execution).
    slots: Option<slots::Slots>,
    /// Describes actions for the remote cache and the engine (only when there is one).
    describer: Option<Describer<'a>>,
    /// The last recorded parts of the plan's actions, to say why one runs again.
    recall: crate::explain::Recall<'a>,
    /// The run's word on batches, over each capability's (`Options::batch`).
    batch: Option<bool>,
    /// Batches started so far: the next one's number is this plus one.
    batches: AtomicUsize,
}

impl Worker<'_> {
    /// Takes ready actions and performs them until nothing is running and nothing can start.
    fn serve(&self, board: &Board<'_>) {
        let steps = &self.plan.steps;
        let mut buffer = vec![0u8; 64 * 1024];
        let mut state = board.lock();
        loop {
            if self.cancel.is_cancelled() || self.registry.is_shutting_down() {
                state.stopped = true;
            }
            let next = if state.stopped {
                None
            } else {
                // The first ready action whose mutex no running action holds.
                let held = &state.held;
                state
                    .ready
                    .iter()
                    .position(|&i| steps[i].mutex.as_ref().is_none_or(|m| !held.contains(m)))
                    .and_then(|p| state.ready.remove(p))
            };
            if let Some(i) = next {
                if let Some(mutex) = &steps[i].mutex {
                    state.held.insert(Arc::clone(mutex));
                }
                state.running += 1;
                state.started[i] = Some(millis(board.start.elapsed()));
                state.changed = true;
                // More is ready than this worker takes: wake one that waits, and it will wake
                // the next if there is still more.
                if !state.ready.is_empty() && state.idle > 0 {
                    board.wake.notify_one();
                }
                // Ready beside it, the same capability of the same kind and workspace with
                // the same environment: one command for all of them (see `batch.rs`).
                let mut members = vec![i];
                if self.batches(i) {
                    members.extend(batch::take_joining(&mut state.ready, steps, i, |j| {
                        self.batches(j)
                    }));
                }
                for &j in &members[1..] {
                    state.running += 1;
                    state.started[j] = state.started[i];
                    state.writes[j] = i;
                }
                for &j in &members {
                    (state.observe)(Event::Started {
                        action: &steps[j].action,
                    });
                }
                let dep_keys = |j: usize| -> Vec<Key> {
                    steps[j]
                        .deps
                        .iter()
                        .filter_map(|&d| state.keys[d])
                        .collect()
                };
                if members.len() == 1 {
                    let dep_keys = dep_keys(i);
                    drop(state);
                    let finished = self.perform(i, &dep_keys, &mut buffer);
                    state = board.lock();
                    board.finish(&mut state, steps, i, finished);
                } else {
                    let members: Vec<(usize, Vec<Key>)> =
                        members.iter().map(|&j| (j, dep_keys(j))).collect();
                    drop(state);
                    let ended = self.perform_batch(&members, &mut buffer);
                    state = board.lock();
                    for (j, finished) in ended {
                        board.finish(&mut state, steps, j, finished);
                    }
                }
                board.warn_once(&mut state, self.remote, self.engine);
                continue;
            }
            if state.running == 0 {
                // Nothing runs, so nothing new can become ready: the run is over for everyone.
                if state.idle > 0 {
                    board.wake.notify_all();
                }
                return;
            }
            state.idle += 1;
            state = board
                .wake
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
            state.idle -= 1;
        }
    }
}
