//! One action, in the same three steps wherever it runs: look up (the local cache, then the
//! remote one), perform (here, or on the remote execution engine when it may go there), record
//! (the local cache, then an upload to the remote cache).
//!
//! Looking up takes the key's lock, so that two runs never perform one action at once, and
//! holds it to the end of the record. What performing hands the record is the same for both
//! places ([`Ran`]): a status, an exit code, a log, and, for a remote success, the outputs
//! already downloaded and checked, which the record stores and restores as it would a remote
//! cache hit's. Nothing here holds the scheduler's lock.

use std::path::PathBuf;
use std::time::Instant;

use once_exec::{CommandSpec, EnvMode, Status};

use super::{Finished, Worker, attempt_log, failure, millis, status_of};
use crate::cache::{ActionResult, KeyLock, output_globs};
use crate::describe::Described;
use crate::explain::KeyParts;
use crate::fetched::Fetched;
use crate::key::Key;
use crate::plan::Step;
use crate::remote::Remote;
use crate::report::{ActionReport, ActionStatus, Place, RanOn};

/// What a lookup that found nothing leaves for the rest of the action.
struct Miss {
    /// The key's lock, held to the end of the record (none for a persistent action).
    _lock: Option<KeyLock>,
    /// Whether the remote cache can be told of the result (the action could be described).
    describable: bool,
}

/// How an action's command went, here or remotely: what the record needs.
pub(super) struct Ran {
    pub status: ActionStatus,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    pub tail: Vec<String>,
    /// Its log, when one was written.
    pub log: Option<PathBuf>,
    pub retried: usize,
    /// Where it ran, in a run with remote execution.
    pub ran_on: Option<RanOn>,
    /// A remote success's outputs and log, downloaded and checked: recorded and restored in
    /// place of what the workspace holds.
    pub fetched: Option<Fetched>,
}

impl Worker<'_> {
    /// Step `i`: looked up, performed, recorded.
    pub(super) fn perform(&self, i: usize, dep_keys: &[Key], buffer: &mut [u8]) -> Finished {
        let step = &self.plan.steps[i];
        let start = Instant::now();
        let key = match self.keyer.key(step, dep_keys, buffer) {
            Ok(key) => key,
            Err(error) => {
                return failure(
                    step,
                    start,
                    format!("once: cannot compute the cache key: {error}"),
                );
            }
        };
        let miss = match self.look_up(i, key, dep_keys, buffer) {
            Ok(miss) => miss,
            Err(finished) => return *finished,
        };
        // The key's parts as the key saw them, taken before the command can change its inputs
        // (a first `cargo test` writes `Cargo.lock`): recorded after a success, and compared
        // with the last recorded ones to say why a cached action runs again.
        let parts = step
            .cache
            .then(|| self.key_parts(step, dep_keys, key, buffer))
            .flatten();
        let ran_again = parts
            .as_ref()
            .filter(|_| step.cache && !self.force)
            .and_then(|now| self.recall.ran_again(now));
        let ran = match self.run(i, start) {
            Ok(ran) => ran,
            Err(finished) => return *finished,
        };
        self.record(i, key, &miss, parts.as_ref(), ran, ran_again, buffer)
    }

    /// The local cache, then (after taking the key's lock and looking again) the remote cache:
    /// `Err` with the action's end on a hit or when it cannot go on, else what the miss holds.
    fn look_up(
        &self,
        i: usize,
        key: Key,
        dep_keys: &[Key],
        buffer: &mut [u8],
    ) -> Result<Miss, Box<Finished>> {
        let step = &self.plan.steps[i];
        // An uncached action, and whatever depends on one, is never replayed nor recorded.
        let replayable = step.cache && !self.force;
        if replayable && let Some(finished) = self.replay(step, key, buffer) {
            return Err(Box::new(finished));
        }
        // Another process may be running this very action; wait for it, then look again. A
        // server holds no lock: a second one would wait, silent, for as long as the first runs.
        let lock = if step.persistent {
            None
        } else {
            match self.cache.lock(&key) {
                Ok(lock) => Some(lock),
                Err(error) => {
                    return Err(Box::new(failure(
                        step,
                        Instant::now(),
                        format!("once: cannot lock the cache entry: {error}"),
                    )));
                }
            }
        };
        if replayable {
            self.cache.look_again();
            if let Some(finished) = self.replay(step, key, buffer) {
                return Err(Box::new(finished));
            }
        }
        // It runs (or comes from a remote cache): this run proves no later no-op, and its
        // witness stops recording for the actions still to be keyed.
        self.hashes
            .witness()
            .spoil("an action missed the local cache");
        // The remote cache: looked up by the `Action` digest alone, described in full only for
        // the upload after a success. An action that is never recorded is neither looked up nor
        // uploaded: nothing to describe.
        let mut describable = false;
        if let Some(remote) = self.remote.filter(|r| r.is_on() && step.cache) {
            let action = self.action_digest(i);
            describable = action.is_some();
            if replayable {
                // Held from storing the download to the end of its restore, not while it runs.
                let hold = self.cache.hold().ok();
                if let Some(found) = action
                    .as_ref()
                    .and_then(|action| self.fetch(remote, step, action, &key))
                    && let Some(finished) = self.restored(step, key, found, true, buffer)
                {
                    drop(hold);
                    // Recorded in the local cache now, so its key's parts go beside it as after a run.
                    self.remember_parts(step, dep_keys, key, buffer);
                    return Err(Box::new(finished));
                }
            }
        }
        Ok(Miss {
            _lock: lock,
            describable,
        })
    }

    /// Performs step `i`: on the engine when it may go there and the engine takes it, else here.
    fn run(&self, i: usize, start: Instant) -> Result<Ran, Box<Finished>> {
        let step = &self.plan.steps[i];
        let here = match self.engine {
            None => None,
            Some(engine) => match self.stays_here(step) {
                Some(because) => Some(because),
                None => match self.run_remotely(engine, i, start) {
                    Ok(ran) => return Ok(ran),
                    Err(because) => Some(because),
                },
            },
        };
        let mut ran = self.run_here(step, start)?;
        if let (Some(engine), Some(because)) = (self.engine, here) {
            engine.ran_here();
            ran.ran_on = Some(RanOn {
                place: Place::Local,
                worker: None,
                queued_ms: None,
                executed_ms: None,
                engine_cached: false,
                because: Some(because),
            });
        }
        Ok(ran)
    }

    /// Runs `step`'s command here: with its mutex held, within a local slot, and again after a
    /// failure up to `retries` times.
    fn run_here(&self, step: &Step, start: Instant) -> Result<Ran, Box<Finished>> {
        let spec = CommandSpec {
            command: step.command.clone(),
            cwd: step.dir.clone(),
            env: step.env.clone(),
            env_mode: if step.strict {
                EnvMode::Strict {
                    pass: step.pass_env.to_vec(),
                }
            } else {
                EnvMode::Loose
            },
            deadline: step.deadline,
            grace: once_exec::DEFAULT_GRACE,
            log_path: self.run.log_path(&step.action),
            tail_lines: once_exec::DEFAULT_TAIL_LINES,
            label: step.action.clone(),
        };
        // Another `once run` on this workspace may be running an action with the same mutex
        // (this run's own never start together): wait for it. Taken after the key's lock, and
        // no action waits for anything while holding a mutex, so no two runs wait on each other.
        let _mutex = match &step.mutex {
            Some(mutex) => match self.cache.lock_mutex(mutex) {
                Ok(lock) => Some(lock),
                Err(error) => {
                    return Err(Box::new(failure(
                        step,
                        start,
                        format!("once: cannot lock the mutex `{mutex}`: {error}"),
                    )));
                }
            },
            None => None,
        };
        // With remote execution on, more actions are in flight than commands may run here.
        let _slot = self.slots.as_ref().map(super::slots::Slots::take);
        // A failed attempt is run again up to `retries` times, each earlier attempt's log kept
        // beside the last one's. A timeout is not retried: it has already cost a whole
        // deadline, and a hang rarely passes on a second try.
        let mut retried = 0;
        let outcome = loop {
            let outcome = match once_exec::run(&spec, self.registry, self.cancel) {
                Ok(outcome) => outcome,
                Err(once_exec::Error::ShuttingDown) => {
                    return Err(Box::new(Finished {
                        report: ActionReport {
                            status: ActionStatus::Cancelled,
                            ..failure(step, start, String::new()).report
                        },
                        key: None,
                    }));
                }
                Err(error) => return Err(Box::new(failure(step, start, format!("once: {error}")))),
            };
            let failed_run = matches!(
                outcome.status,
                Status::Exited { code } if code != 0
            ) || matches!(outcome.status, Status::Signaled { .. });
            if !failed_run
                || retried >= usize::from(step.retries)
                || self.cancel.is_cancelled()
                || self.registry.is_shutting_down()
            {
                break outcome;
            }
            retried += 1;
            let kept = attempt_log(&outcome.log_path, retried);
            match std::fs::rename(&outcome.log_path, &kept) {
                // An attempt that printed nothing has no log to keep.
                Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                    tracing::warn!(action = %step.action, %error, "cannot keep the log of a failed attempt");
                }
                _ => {}
            }
            tracing::info!(action = %step.action, attempt = retried + 1, "failed: running it again");
        };
        let (status, exit_code) = status_of(&outcome.status);
        let mut tail = outcome.tail;
        if let Status::FailedToStart { message } = &outcome.status {
            tail.push(message.clone());
        }
        Ok(Ran {
            status,
            exit_code,
            duration_ms: millis(outcome.duration),
            tail,
            log: Some(outcome.log_path),
            retried,
            ran_on: None,
            fetched: None,
        })
    }

    /// Records a success in the local cache (what a remote run downloaded, restored into the
    /// workspace, or what the command wrote) and the remote cache, and makes the report.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        i: usize,
        key: Key,
        miss: &Miss,
        parts: Option<&KeyParts>,
        ran: Ran,
        ran_again: Option<String>,
        buffer: &mut [u8],
    ) -> Finished {
        let step = &self.plan.steps[i];
        let Ran {
            mut status,
            mut exit_code,
            duration_ms,
            mut tail,
            mut log,
            retried,
            ran_on,
            fetched,
        } = ran;
        let _hold = (status == ActionStatus::Succeeded && step.cache)
            .then(|| self.cache.hold().ok())
            .flatten();
        let remotely = fetched.is_some();
        if status == ActionStatus::Succeeded && step.cache {
            let recorded = match fetched {
                Some(fetched) => self.keep_remote(step, key, fetched, buffer),
                None => self
                    .cache
                    .record(
                        &key,
                        &step.action,
                        &step.dir,
                        &step.outputs,
                        crate::cache::Ran {
                            duration_ms,
                            tail: tail.clone(),
                            log: log.as_deref(),
                        },
                    )
                    .map_err(|error| format!("cannot record the result in the cache: {error}")),
            };
            match recorded {
                Ok(result) => {
                    if remotely {
                        log = self.remote_log(step, &result);
                    }
                    if let Some(parts) = parts {
                        crate::explain::remember(self.cache, parts);
                    }
                    if let Some(remote) = self.remote.filter(|_| miss.describable)
                        && let Some(described) = self.describe(i)
                    {
                        remote.upload(&described, &result, self.cache);
                    }
                }
                // A remote result that cannot be kept or restored is a failure of the action:
                // its outputs are not where they must be.
                Err(error) if remotely => {
                    status = ActionStatus::Failed;
                    exit_code = None;
                    tail.push(format!("once: {error}"));
                }
                Err(error) => {
                    tracing::warn!(action = %step.action, %error, "cannot record the result in the cache");
                }
            }
        }
        let failure = status != ActionStatus::Succeeded && status != ActionStatus::Cancelled;
        Finished {
            report: ActionReport {
                action: step.action.clone(),
                status,
                cached: false,
                remote: false,
                exit_code,
                duration_ms,
                started_ms: None,
                log,
                tail: failure.then_some(tail),
                retried,
                skipped_because: None,
                ran_again,
                batch: None,
                ran_on,
            },
            key: (status == ActionStatus::Succeeded).then_some(key),
        }
    }

    /// A remote success's log (stdout, then stderr), put where a local run's log would be, so
    /// that the run's view and its record read it as they read any other.
    fn remote_log(&self, step: &Step, result: &ActionResult) -> Option<PathBuf> {
        let kept = self.cache.replay_log(result)?;
        let log = self.run.log_path(&step.action);
        let copied = log
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::copy(&kept, &log));
        match copied {
            Ok(_) => Some(log),
            Err(error) => {
                tracing::debug!(action = %step.action, %error, "cannot copy the remote log into the run");
                Some(kept)
            }
        }
    }

    /// A remote success's download kept in the local cache under `key` and restored into the
    /// workspace, as a remote cache hit is.
    fn keep_remote(
        &self,
        step: &Step,
        key: Key,
        fetched: Fetched,
        buffer: &mut [u8],
    ) -> Result<ActionResult, String> {
        let result = self
            .cache
            .record_fetched(&key, &step.action, fetched)
            .map_err(|error| format!("cannot keep the remote result: {error}"))?;
        self.cache
            .restore(&step.dir, &result, self.hashes, buffer)
            .map_err(|error| format!("cannot restore the remote result's outputs: {error}"))?;
        Ok(result)
    }

    /// Step `i` described for the remote cache; `None` (and no remote lookup nor upload for it)
    /// when it cannot be, which is said in the debug log only: the run goes on locally.
    pub(super) fn describe(&self, i: usize) -> Option<Described> {
        let describer = self.describer.as_ref()?;
        match describer.describe_step(i) {
            Ok(described) => Some(described),
            Err(error) => {
                tracing::debug!(action = %self.plan.steps[i].action, %error, "cannot describe the action for the remote cache");
                None
            }
        }
    }

    /// Step `i`'s `Action` digest, all a lookup needs: the messages and files of its input tree
    /// are collected only for an upload, after a miss (see `describe`).
    pub(super) fn action_digest(&self, i: usize) -> Option<once_remote::reapi::Digest> {
        let describer = self.describer.as_ref()?;
        match describer.action_digest_of_step(i) {
            Ok(digest) => Some(digest),
            Err(error) => {
                tracing::debug!(action = %self.plan.steps[i].action, %error, "cannot describe the action for the remote cache");
                None
            }
        }
    }

    /// Looks `step` up in the remote cache and, on a hit, stores what it downloaded in the local
    /// cache under `key`: the result to restore.
    pub(super) fn fetch(
        &self,
        remote: &Remote,
        step: &Step,
        action: &once_remote::reapi::Digest,
        key: &Key,
    ) -> Option<ActionResult> {
        let outputs = output_globs(&step.action, &step.outputs).ok()?;
        let spill = match self.cache.staging_folder() {
            Ok(folder) => folder,
            Err(error) => {
                tracing::warn!(%error, "no folder for downloads: running instead");
                return None;
            }
        };
        let fetched = remote.fetch(action, &outputs, &spill)?;
        match self.cache.record_fetched(key, &step.action, fetched) {
            Ok(result) => Some(result),
            Err(error) => {
                tracing::warn!(action = %step.action, %error, "cannot keep the remote result: running instead");
                None
            }
        }
    }

    /// Keeps the parts of `key` beside its entry, for "why did this run again?" next time; a
    /// failure costs that answer, never the run.
    pub(super) fn remember_parts(
        &self,
        step: &Step,
        dep_keys: &[Key],
        key: Key,
        buffer: &mut [u8],
    ) {
        if let Some(parts) = self.key_parts(step, dep_keys, key, buffer) {
            crate::explain::remember(self.cache, &parts);
        }
    }

    /// The parts of `key`, or `None` (logged) when they cannot be listed: that costs the
    /// explanation, never the run.
    pub(super) fn key_parts(
        &self,
        step: &Step,
        dep_keys: &[Key],
        key: Key,
        buffer: &mut [u8],
    ) -> Option<crate::explain::KeyParts> {
        match crate::explain::parts(self.plan, &self.keyer, step, dep_keys, key, buffer) {
            Ok(parts) => Some(parts),
            Err(error) => {
                tracing::warn!(action = %step.action, %error, "cannot list the key's parts");
                None
            }
        }
    }

    /// `step`'s result under `key` replayed from the local cache: `None` on a miss, or when its
    /// outputs cannot be restored (the action then runs). From the lookup to the end of the
    /// restore, a prune removes nothing (see `prune.rs`).
    pub(super) fn replay(&self, step: &Step, key: Key, buffer: &mut [u8]) -> Option<Finished> {
        let _hold = match self.cache.hold() {
            Ok(hold) => hold,
            Err(error) => {
                tracing::warn!(action = %step.action, %error, "cannot hold the cache: running instead");
                return None;
            }
        };
        let finished = self.restored(
            step,
            key,
            self.cache.lookup_seen(&key, self.hashes.witness())?,
            false,
            buffer,
        )?;
        self.cache.used(&key);
        Some(finished)
    }

    /// `hit` (from the remote cache when `remote`) restored for `step`, as its report.
    pub(super) fn restored(
        &self,
        step: &Step,
        key: Key,
        hit: ActionResult,
        remote: bool,
        buffer: &mut [u8],
    ) -> Option<Finished> {
        match self.cache.restore(&step.dir, &hit, self.hashes, buffer) {
            Ok(()) => Some(Finished {
                report: ActionReport {
                    action: step.action.clone(),
                    status: ActionStatus::Succeeded,
                    cached: true,
                    remote,
                    exit_code: Some(hit.exit_code),
                    duration_ms: hit.duration_ms,
                    started_ms: None,
                    log: self.cache.replay_log(&hit),
                    tail: None,
                    retried: 0,
                    skipped_because: None,
                    batch: None,
                    ran_on: None,
                    ran_again: None,
                },
                key: Some(key),
            }),
            Err(error) => {
                tracing::warn!(action = %step.action, %error, "cannot restore outputs: running instead");
                None
            }
        }
    }
}
