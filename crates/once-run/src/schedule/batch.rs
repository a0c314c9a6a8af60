//! Batches: where a capability's tool is faster run once for several packages (`cargo test -p a
//! -p b`, see `once_graph::model::Batch`), the actions of that capability that are ready at the
//! same time run as one command.
//!
//! A batch is a way to run actions, never an action: it has no key and no result of its own.
//! Each member is keyed, looked up and recorded under its own key; a cache hit replays on its
//! own and never joins. A batch that succeeds records every member's result, each naming the
//! batch's one log; one that fails, times out or is cancelled records none, and every member
//! ends as the batch did, since which member's tests failed is in the log, not in an exit code
//! (cargo stops at the first failing test binary). The batch's process is started like any
//! action's (`once_exec::run`: its process group, containment, output limits, the run's
//! cancel), under every member's key lock, with the sum of the members' deadlines: the time
//! they would have had one after another, so joining never times out what would have passed.
//!
//! Must never let a member join that the batch would run differently from its own command: the
//! plan offers only actions whose command is the batch's form for one member (`Joinable`), and
//! members share the kind, capability, folder and environment of the batch's command.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use once_exec::{CommandSpec, EnvMode};

use super::{Finished, Worker, failure, millis, status_of};
use crate::cache::{KeyLock, Ran};
use crate::key::Key;
use crate::plan::Step;
use crate::report::{ActionReport, ActionStatus};

impl Worker<'_> {
    /// Whether step `i` is to join a batch in this run: its capability declares one and the run
    /// (`--batch`, `--no-batch`) or its `batch` setting says so. A run with a remote cache runs
    /// each action alone, so that each is looked up and uploaded on its own.
    pub(super) fn batches(&self, i: usize) -> bool {
        let Some(joinable) = &self.plan.steps[i].batch else {
            return false;
        };
        self.remote.is_none() && self.engine.is_none() && self.batch.unwrap_or(joinable.on)
    }

    /// Performs `members` (each with its dependencies' keys): the cache hits replayed each on
    /// its own, the rest as one command when at least two remain, alone otherwise. Returns how
    /// each ended, in the order of `members`.
    pub(super) fn perform_batch(
        &self,
        members: &[(usize, Vec<Key>)],
        buffer: &mut [u8],
    ) -> Vec<(usize, Finished)> {
        let steps = &self.plan.steps;
        let start = Instant::now();
        let mut ended: Vec<(usize, Finished)> = Vec::with_capacity(members.len());
        let mut missed: Vec<(usize, &[Key], Key)> = Vec::with_capacity(members.len());
        let replayable = |step: &Step| step.cache && !self.force;
        for (i, dep_keys) in members {
            let step = &steps[*i];
            let key = match self.keyer.key(step, dep_keys, buffer) {
                Ok(key) => key,
                Err(error) => {
                    let message = format!("once: cannot compute the cache key: {error}");
                    ended.push((*i, failure(step, start, message)));
                    continue;
                }
            };
            match replayable(step)
                .then(|| self.replay(step, key, buffer))
                .flatten()
            {
                Some(finished) => ended.push((*i, finished)),
                None => missed.push((*i, dep_keys, key)),
            }
        }
        if missed.len() >= 2 {
            // Another `once run` may be running a member; its lock is waited for, then the
            // member looked up again. Taken in one order (by slot) so that two runs taking
            // several never wait on each other, and a slot once even if two keys share it.
            missed.sort_by_key(|(_, _, key)| key.prefix());
            let mut locks: Vec<KeyLock> = Vec::with_capacity(missed.len());
            let mut locked: Vec<(usize, &[Key], Key)> = Vec::with_capacity(missed.len());
            let mut slot = None;
            for (i, dep_keys, key) in missed.drain(..) {
                if slot != Some(key.prefix()) {
                    match self.cache.lock(&key) {
                        Ok(lock) => locks.push(lock),
                        Err(error) => {
                            let message = format!("once: cannot lock the cache entry: {error}");
                            ended.push((i, failure(&steps[i], start, message)));
                            continue;
                        }
                    }
                    slot = Some(key.prefix());
                }
                locked.push((i, dep_keys, key));
            }
            self.cache.look_again();
            for (i, dep_keys, key) in locked {
                let step = &steps[i];
                match replayable(step)
                    .then(|| self.replay(step, key, buffer))
                    .flatten()
                {
                    Some(finished) => ended.push((i, finished)),
                    None => missed.push((i, dep_keys, key)),
                }
            }
            if missed.len() >= 2 {
                missed.sort_by_key(|(i, _, _)| *i);
                // The log is the first member's as the scheduler took them, whose log every
                // member's record points at while the batch runs, even if that one replayed.
                ended.extend(self.run_batch(members[0].0, &missed, buffer));
                drop(locks);
                missed.clear();
            }
        }
        // Fewer than two left to run: each runs as it would alone (having let go of the locks,
        // which `perform` takes again).
        for (i, dep_keys, _) in missed {
            ended.push((i, self.perform(i, dep_keys, buffer)));
        }
        let order = |i: usize| members.iter().position(|(m, _)| *m == i);
        ended.sort_by_key(|(i, _)| order(*i));
        ended
    }

    /// Runs `members` (two or more misses, their keys locked) as one command, its log named
    /// after step `lead`, and records each member's result when it succeeds.
    fn run_batch(
        &self,
        lead: usize,
        members: &[(usize, &[Key], Key)],
        buffer: &mut [u8],
    ) -> Vec<(usize, Finished)> {
        let steps = &self.plan.steps;
        let number = self.batches.fetch_add(1, Ordering::Relaxed) + 1;
        let first = &steps[members[0].0];
        let Some(joinable) = &first.batch else {
            // The scheduler hands over only steps that join; should one not, each still ends
            // (never left running), and says why.
            let start = Instant::now();
            return members
                .iter()
                .map(|(i, _, _)| {
                    let message = "once: this action cannot run in a batch".to_owned();
                    (*i, failure(&steps[*i], start, message))
                })
                .collect();
        };
        let mut command = joinable.command.to_string();
        for (i, _, _) in members {
            if let Some(member) = &steps[*i].batch {
                command.push(' ');
                command.push_str(&member.member);
            }
        }
        if !joinable.tail.is_empty() {
            command.push(' ');
            command.push_str(&joinable.tail);
        }
        let deadline = members.iter().fold(Duration::ZERO, |sum, (i, _, _)| {
            sum.saturating_add(steps[*i].deadline)
        });
        let spec = CommandSpec {
            command,
            cwd: joinable.dir.clone(),
            env: first.env.clone(),
            env_mode: if first.strict {
                EnvMode::Strict {
                    pass: first.pass_env.to_vec(),
                }
            } else {
                EnvMode::Loose
            },
            deadline,
            grace: once_exec::DEFAULT_GRACE,
            // One log, named after the action the batch was formed around, which every
            // member's report names.
            log_path: self.run.log_path(&steps[lead].action),
            tail_lines: once_exec::DEFAULT_TAIL_LINES,
            label: format!("{} and {} more", first.action, members.len() - 1),
        };
        // Each member's key parts as its key saw them, taken before the command can change its
        // inputs (a first `cargo test` writes `Cargo.lock`), as for an action run alone: recorded
        // after a success, and compared with the last recorded ones to say why it runs again.
        let parts: Vec<Option<crate::explain::KeyParts>> = members
            .iter()
            .map(|(i, dep_keys, key)| {
                let step = &steps[*i];
                step.cache
                    .then(|| self.key_parts(step, dep_keys, *key, buffer))
                    .flatten()
            })
            .collect();
        let ran_again: Vec<Option<String>> = parts
            .iter()
            .map(|parts| parts.as_ref().and_then(|now| self.recall.ran_again(now)))
            .collect();
        let ended = |report: &dyn Fn(&Step) -> ActionReport, key: &dyn Fn(Key) -> Option<Key>| {
            members
                .iter()
                .zip(&ran_again)
                .map(|((i, _, k), ran_again)| {
                    let finished = Finished {
                        report: ActionReport {
                            batch: Some(number),
                            ran_on: None,
                            ran_again: ran_again.clone(),
                            ..report(&steps[*i])
                        },
                        key: key(*k),
                    };
                    (*i, finished)
                })
                .collect::<Vec<_>>()
        };
        let start = Instant::now();
        let outcome = match once_exec::run(&spec, self.registry, self.cancel) {
            Ok(outcome) => outcome,
            Err(once_exec::Error::ShuttingDown) => {
                return ended(
                    &|step| ActionReport {
                        status: ActionStatus::Cancelled,
                        tail: None,
                        ..failure(step, start, String::new()).report
                    },
                    &|_| None,
                );
            }
            Err(error) => {
                let message = format!("once: {error}");
                return ended(
                    &|step| failure(step, start, message.clone()).report,
                    &|_| None,
                );
            }
        };
        let duration_ms = millis(outcome.duration);
        let (status, exit_code) = status_of(&outcome.status);
        let mut tail = outcome.tail;
        if let once_exec::Status::FailedToStart { message } = &outcome.status {
            tail.push(message.clone());
        }
        let succeeded = status == ActionStatus::Succeeded;
        if succeeded {
            // Every member's result under its own key, each naming the one log.
            let _hold = self.cache.hold().ok();
            for ((i, _, key), parts) in members.iter().zip(&parts) {
                let step = &steps[*i];
                if !step.cache {
                    continue;
                }
                let ran = Ran {
                    duration_ms,
                    tail: tail.clone(),
                    log: Some(&outcome.log_path),
                };
                match self
                    .cache
                    .record(key, &step.action, &step.dir, &step.outputs, ran)
                {
                    Ok(_) => {
                        if let Some(parts) = parts {
                            crate::explain::remember(self.cache, parts);
                        }
                    }
                    Err(error) => {
                        tracing::warn!(action = %step.action, %error, "cannot record the result in the cache");
                    }
                }
            }
        }
        let failed = !succeeded && status != ActionStatus::Cancelled;
        ended(
            &|step| ActionReport {
                action: step.action.clone(),
                status,
                cached: false,
                remote: false,
                exit_code,
                duration_ms,
                started_ms: None,
                log: Some(outcome.log_path.clone()),
                tail: failed.then(|| tail.clone()),
                retried: 0,
                skipped_because: None,
                batch: None,
                ran_on: None,
                ran_again: None,
            },
            &|key| succeeded.then_some(key),
        )
    }
}

/// Takes out of `ready` every step that joins `steps[first]` in one batch: the same group (kind,
/// capability, the batch's command and folder) and the same environment, so that the one
/// command runs each as its own would. `batches` says whether a step joins batches at all in
/// this run.
pub(super) fn take_joining(
    ready: &mut VecDeque<usize>,
    steps: &[Step],
    first: usize,
    batches: impl Fn(usize) -> bool,
) -> Vec<usize> {
    let lead = &steps[first];
    let Some(group) = lead.batch.as_ref().map(|b| &b.group) else {
        return Vec::new();
    };
    let joins = |step: &Step| {
        step.batch.as_ref().is_some_and(|b| &b.group == group)
            && step.env == lead.env
            && step.env_file_vars == lead.env_file_vars
            && step.strict == lead.strict
            && step.pass_env == lead.pass_env
    };
    let mut taken = Vec::new();
    ready.retain(|&j| {
        let joining = batches(j) && joins(&steps[j]);
        if joining {
            taken.push(j);
        }
        !joining
    });
    taken
}
