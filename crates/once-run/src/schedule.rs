//! The scheduler: runs a plan on a pool of `jobs` threads, starting each action the moment all
//! its dependencies have succeeded, consulting the cache first.
//!
//! One coordinator (the calling thread) owns all the bookkeeping and is the only one to decide
//! what starts; workers only compute a key, replay or run, and send the result back on a
//! channel, so no state is shared but the job queue. The coordinator never starts anything after
//! the first failure (unless `keep_going`), after `cancel` fires, or once the registry is
//! shutting down; what it did not start is reported as skipped. It must never wait for anything
//! but the result channel, so a run ends as soon as its last action does.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ignore::gitignore::Gitignore;
use once_exec::{Cancel, CommandSpec, Registry, Status};

use crate::cache::Cache;
use crate::error::Error;
use crate::key::{Inputs, Key, action_key, folders_above, gitignore};
use crate::plan::{Plan, Step};
use crate::report::{ActionReport, ActionStatus, RunReport, RunStatus};
use crate::store::RunDir;

/// How a plan is run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Most actions at once.
    pub jobs: usize,
    /// Go on after a failure with everything that does not depend on it.
    pub keep_going: bool,
    /// Run every action even when the cache has its result.
    pub force: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            jobs: thread::available_parallelism().map_or(1, usize::from),
            keep_going: false,
            force: false,
        }
    }
}

/// What the scheduler tells its observer, as it happens.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// An action was handed to a worker.
    Started { action: &'a str },
    /// An action ended; `done` of `total` have ended so far (skipped ones included).
    Finished {
        action: &'a str,
        status: ActionStatus,
        cached: bool,
        done: usize,
        total: usize,
    },
}

/// Runs `plan`, recording logs and the report in `run`, and returns the report. Blocks until
/// every started action has ended.
pub fn execute(
    plan: &Plan,
    cache: &Cache,
    run: &RunDir,
    registry: &Registry,
    cancel: &Cancel,
    options: &Options,
    observe: &mut dyn FnMut(Event<'_>),
) -> RunReport {
    let started_at = unix_millis();
    let start = Instant::now();
    let steps = &plan.steps;
    let total = steps.len();
    // A report that says `running`, so another process (or an agent) listing runs sees this one.
    let running_report = RunReport {
        run_id: run.id.clone(),
        status: RunStatus::Running,
        started_at,
        duration_ms: 0,
        counts: crate::report::Counts {
            total,
            ..Default::default()
        },
        actions: Vec::new(),
    };
    if let Err(error) = run.write_report(&running_report) {
        tracing::warn!(%error, "cannot write the run report");
    }
    let mut reports: Vec<Option<ActionReport>> = vec![None; total];
    let mut keys: Vec<Option<Key>> = vec![None; total];
    let mut pending: Vec<usize> = steps.iter().map(|s| s.deps.len()).collect();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); total];
    for (i, step) in steps.iter().enumerate() {
        for &d in &step.deps {
            dependents[d].push(i);
        }
    }
    let mut ready: VecDeque<usize> = (0..total).filter(|&i| pending[i] == 0).collect();
    let mut running = 0usize;
    let mut done = 0usize;
    let mut stopped = false;
    let jobs = options.jobs.max(1).min(total.max(1));

    let (job_tx, job_rx) = mpsc::channel::<Job>();
    let job_rx = Arc::new(Mutex::new(job_rx));
    let (result_tx, result_rx) = mpsc::channel::<(usize, Finished)>();
    let worker = Worker {
        plan,
        cache,
        run,
        registry,
        cancel,
        force: options.force,
        inputs: Mutex::new(HashMap::new()),
        ignores: Mutex::new(HashMap::new()),
    };

    thread::scope(|scope| {
        for _ in 0..jobs {
            let jobs = Arc::clone(&job_rx);
            let results = result_tx.clone();
            let worker = &worker;
            scope.spawn(move || worker.serve(&jobs, &results));
        }
        drop(result_tx);
        loop {
            if cancel.is_cancelled() || registry.is_shutting_down() {
                stopped = true;
            }
            while !stopped && running < jobs {
                let Some(i) = ready.pop_front() else { break };
                let dep_keys = steps[i].deps.iter().filter_map(|&d| keys[d]).collect();
                if job_tx.send(Job { index: i, dep_keys }).is_err() {
                    stopped = true;
                    break;
                }
                running += 1;
                observe(Event::Started {
                    action: &steps[i].action,
                });
            }
            if running == 0 {
                break;
            }
            let Ok((i, finished)) = result_rx.recv() else {
                break;
            };
            running -= 1;
            done += 1;
            let status = finished.report.status;
            observe(Event::Finished {
                action: &steps[i].action,
                status,
                cached: finished.report.cached,
                done,
                total,
            });
            reports[i] = Some(finished.report);
            keys[i] = finished.key;
            if status == ActionStatus::Succeeded {
                for &j in &dependents[i] {
                    pending[j] -= 1;
                    if pending[j] == 0 && reports[j].is_none() {
                        ready.push_back(j);
                    }
                }
            } else {
                if !options.keep_going || status == ActionStatus::Cancelled {
                    stopped = true;
                }
                // Whatever depends on a failure cannot run: mark it skipped now, so the
                // progress count stays true.
                let mut blocked: Vec<usize> = dependents[i].clone();
                while let Some(j) = blocked.pop() {
                    if reports[j].is_none() {
                        reports[j] = Some(skipped(&steps[j]));
                        done += 1;
                        observe(Event::Finished {
                            action: &steps[j].action,
                            status: ActionStatus::Skipped,
                            cached: false,
                            done,
                            total,
                        });
                        blocked.extend_from_slice(&dependents[j]);
                    }
                }
            }
        }
        // Closing the queue ends the workers; the scope joins them.
        drop(job_tx);
    });

    let actions: Vec<ActionReport> = reports
        .into_iter()
        .zip(steps)
        .map(|(report, step)| report.unwrap_or_else(|| skipped(step)))
        .collect();
    let cancelled = cancel.is_cancelled() || registry.is_shutting_down();
    let (status, counts) = RunReport::summarise(&actions, cancelled);
    let report = RunReport {
        run_id: run.id.clone(),
        status,
        started_at,
        duration_ms: millis(start.elapsed()),
        counts,
        actions,
    };
    if let Err(error) = run.write_report(&report) {
        tracing::warn!(%error, "cannot write the run report");
    }
    report
}

fn unix_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, millis)
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn skipped(step: &Step) -> ActionReport {
    ActionReport {
        action: step.action.clone(),
        status: ActionStatus::Skipped,
        cached: false,
        exit_code: None,
        duration_ms: 0,
        log: None,
        tail: None,
    }
}

/// A step's input globs and output globs, which together decide its [`Inputs`].
type GlobLists = (Vec<String>, Vec<String>);

struct Job {
    index: usize,
    dep_keys: Vec<Key>,
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
    /// Compiled input globs, shared by the many actions that declare the same ones.
    inputs: Mutex<HashMap<GlobLists, Arc<Inputs>>>,
    /// The `.gitignore` of each folder above a target, read once per run.
    ignores: Mutex<HashMap<PathBuf, Arc<Gitignore>>>,
}

impl Worker<'_> {
    fn serve(&self, jobs: &Mutex<Receiver<Job>>, results: &Sender<(usize, Finished)>) {
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            // The lock is held only to take one job; the guard drops at the end of the statement.
            let job = jobs.lock().unwrap_or_else(PoisonError::into_inner).recv();
            let Ok(job) = job else { return };
            let finished = self.perform(&self.plan.steps[job.index], &job.dep_keys, &mut buffer);
            if results.send((job.index, finished)).is_err() {
                return;
            }
        }
    }

    fn inputs(&self, step: &Step) -> Result<Arc<Inputs>, Error> {
        let id = (step.inputs.to_vec(), step.outputs.to_vec());
        let mut compiled = self.inputs.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(inputs) = compiled.get(&id) {
            return Ok(Arc::clone(inputs));
        }
        let inputs = Arc::new(Inputs::new(step)?);
        compiled.insert(id, Arc::clone(&inputs));
        Ok(inputs)
    }

    fn above(&self, step: &Step) -> Vec<Arc<Gitignore>> {
        folders_above(&self.plan.root, &step.dir)
            .into_iter()
            .map(|folder| {
                let mut ignores = self.ignores.lock().unwrap_or_else(PoisonError::into_inner);
                Arc::clone(
                    ignores
                        .entry(folder)
                        .or_insert_with_key(|folder| Arc::new(gitignore(folder))),
                )
            })
            .collect()
    }

    fn perform(&self, step: &Step, dep_keys: &[Key], buffer: &mut [u8]) -> Finished {
        let start = Instant::now();
        let failed = |message: String| Finished {
            report: ActionReport {
                action: step.action.clone(),
                status: ActionStatus::Failed,
                cached: false,
                exit_code: None,
                duration_ms: millis(start.elapsed()),
                log: None,
                tail: Some(vec![message]),
            },
            key: None,
        };
        let key = match self
            .inputs(step)
            .and_then(|inputs| action_key(step, &inputs, &self.above(step), dep_keys, buffer))
        {
            Ok(key) => key,
            Err(error) => return failed(format!("once: cannot compute the cache key: {error}")),
        };
        let replay = |buffer: &mut [u8]| -> Option<Finished> {
            let hit = self.cache.lookup(&key)?;
            match self.cache.restore(&step.dir, &hit, buffer) {
                Ok(()) => Some(Finished {
                    report: ActionReport {
                        action: step.action.clone(),
                        status: ActionStatus::Succeeded,
                        cached: true,
                        exit_code: Some(hit.exit_code),
                        duration_ms: hit.duration_ms,
                        log: None,
                        tail: None,
                    },
                    key: Some(key),
                }),
                Err(error) => {
                    tracing::warn!(action = %step.action, %error, "cannot restore outputs: running instead");
                    None
                }
            }
        };
        if !self.force
            && let Some(finished) = replay(buffer)
        {
            return finished;
        }
        // Another process may be running this very action; wait for it, then look again.
        let _lock = match self.cache.lock(&key) {
            Ok(lock) => lock,
            Err(error) => return failed(format!("once: cannot lock the cache entry: {error}")),
        };
        if !self.force
            && let Some(finished) = replay(buffer)
        {
            return finished;
        }
        let spec = CommandSpec {
            command: step.command.clone(),
            cwd: step.dir.clone(),
            env: step.env.clone(),
            deadline: step.deadline,
            grace: once_exec::DEFAULT_GRACE,
            log_path: self.run.log_path(&step.action),
            tail_lines: once_exec::DEFAULT_TAIL_LINES,
            label: step.action.clone(),
        };
        let outcome = match once_exec::run(&spec, self.registry, self.cancel) {
            Ok(outcome) => outcome,
            Err(once_exec::Error::ShuttingDown) => {
                return Finished {
                    report: ActionReport {
                        status: ActionStatus::Cancelled,
                        ..failed(String::new()).report
                    },
                    key: None,
                };
            }
            Err(error) => return failed(format!("once: {error}")),
        };
        let duration_ms = millis(outcome.duration);
        let (status, exit_code) = match &outcome.status {
            Status::Exited { code: 0 } => (ActionStatus::Succeeded, Some(0)),
            Status::Exited { code } => (ActionStatus::Failed, Some(*code)),
            Status::Signaled { signal } => (ActionStatus::Failed, Some(128 + signal)),
            Status::TimedOut => (ActionStatus::TimedOut, None),
            Status::Cancelled => (ActionStatus::Cancelled, None),
            Status::FailedToStart { .. } => (ActionStatus::Failed, None),
        };
        let mut tail = outcome.tail;
        if let Status::FailedToStart { message } = &outcome.status {
            tail.push(message.clone());
        }
        let failure = status != ActionStatus::Succeeded && status != ActionStatus::Cancelled;
        if status == ActionStatus::Succeeded
            && let Err(error) = self.cache.record(
                &key,
                &step.action,
                &step.dir,
                &step.outputs,
                duration_ms,
                tail.clone(),
            )
        {
            tracing::warn!(action = %step.action, %error, "cannot record the result in the cache");
        }
        Finished {
            report: ActionReport {
                action: step.action.clone(),
                status,
                cached: false,
                exit_code,
                duration_ms,
                log: Some(outcome.log_path),
                tail: failure.then_some(tail),
            },
            key: (status == ActionStatus::Succeeded).then_some(key),
        }
    }
}
