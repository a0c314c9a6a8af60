//! One run from spawn to outcome: the deadline, cancellation and stop state machine described at
//! the top of the crate.
//!
//! The calling thread sleeps on one channel with a timeout and never spins. Whatever happens, the
//! group gets SIGKILL and its id is retired from the registry before its leader is reaped, and
//! the run deregisters only once the rest of the group is gone too; no wait here is unbounded: a leader that survives SIGKILL, or a pipe that another process keeps open, is given
//! up on after a bound and left to a detached thread.

use std::fs;
use std::io;
use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::cancel::Cancel;
use crate::capture::Capture;
use crate::contain::Containment;
use crate::error::Error;
use crate::group;
use crate::outcome::{Outcome, Status};
use crate::registry::Registry;
use crate::spawn::{SpawnError, Spawned, give_up, spawn};
use crate::spec::CommandSpec;
use crate::wake::Wake;

/// How long to wait, after the leader is reaped, for the rest of its group to finish dying.
const GONE_WAIT: Duration = Duration::from_secs(2);
/// How long to wait for the leader to die after SIGKILL; longer means it is stuck in the kernel.
const KILL_WAIT: Duration = Duration::from_secs(5);

/// How long to wait for the pipes to close once the group is dead; only a process that left the
/// group can hold them longer.
const CAPTURE_WAIT: Duration = Duration::from_secs(2);

/// Where a run is in its state machine.
#[derive(Debug, Clone, Copy)]
enum Phase {
    Running,
    /// SIGTERM was sent; SIGKILL follows at `kill_at`.
    Terminating {
        kill_at: Instant,
    },
    /// SIGKILL was sent; the leader must be gone by `give_up_at`.
    Killed {
        give_up_at: Instant,
    },
}

/// Runs `spec` to its end and says how it ended. Blocks the calling thread, which must stay alive
/// until this returns (the child's death signal is tied to it).
///
/// Returns `Err` only when `once` could not do its part: [`Error::ShuttingDown`] after
/// [`Registry::stop_all`], or when the log, a thread or the wait failed. Everything the command
/// did, including not starting at all, is in the [`Outcome`].
pub fn run(spec: &CommandSpec, registry: &Registry, cancel: &Cancel) -> Result<Outcome, Error> {
    let (waker, wakes) = mpsc::channel();
    let registration = registry.admit(waker.clone())?;
    let _subscription = cancel.subscribe(waker.clone());
    let started_at = unix_millis();
    let start = Instant::now();
    // The log file itself is created with the command's first output (`capture.rs`); its folder
    // now, so a log that cannot be kept fails the run before anything runs.
    log_folder(&spec.log_path)?;
    let finished = |status, tail, log_bytes| Outcome {
        status,
        started_at,
        duration: start.elapsed(),
        log_path: spec.log_path.clone(),
        tail,
        log_bytes,
    };
    // A token that already fired, or a stop that came first, wakes us before anything runs.
    if let Ok(Wake::Cancelled | Wake::Stopped) = wakes.try_recv() {
        return Ok(finished(Status::Cancelled, Vec::new(), 0));
    }

    let Spawned { pid, pipes } = match spawn(spec, waker) {
        Ok(spawned) => spawned,
        Err(SpawnError::Command(error)) => {
            let message = format!("cannot start `sh -c` in `{}`: {error}", spec.cwd.display());
            tracing::debug!(label = %spec.label, %message, "failed to start");
            return Ok(finished(Status::FailedToStart { message }, Vec::new(), 0));
        }
        Err(SpawnError::Thread(role, source)) => {
            return Err(Error::Thread {
                role,
                label: spec.label.clone(),
                source,
            });
        }
    };
    registration.set_group(pid);
    tracing::debug!(label = %spec.label, pid, "spawned");

    let capture = match Capture::start(spec.log_path.clone(), spec.tail_lines, pipes) {
        Ok(capture) => capture,
        Err(source) => return Err(abandon(pid, spec, "capture", source)),
    };

    let deadline = later(start, spec.deadline);
    let mut stopped_by: Option<Status> = None;
    let mut phase = Phase::Running;
    let exited = loop {
        let wake_at = match phase {
            Phase::Running => deadline,
            Phase::Terminating { kill_at } => kill_at,
            Phase::Killed { give_up_at } => give_up_at,
        };
        let reason = match wakes.recv_timeout(wake_at.saturating_duration_since(Instant::now())) {
            Ok(Wake::Exited(result)) => break Some(result),
            Ok(Wake::Cancelled | Wake::Stopped) => Status::Cancelled,
            Err(RecvTimeoutError::Timeout) => Status::TimedOut,
            // We hold the registration, whose entry holds a sender; this cannot happen.
            Err(RecvTimeoutError::Disconnected) => break None,
        };
        phase = match phase {
            Phase::Running => {
                tracing::debug!(label = %spec.label, pid, ?reason, "stopping the group");
                stopped_by = Some(reason);
                group::terminate(pid);
                Phase::Terminating {
                    kill_at: later(Instant::now(), spec.grace),
                }
            }
            // A second cancel or stop changes nothing; the timer decides.
            Phase::Terminating { .. } | Phase::Killed { .. } if reason == Status::Cancelled => {
                phase
            }
            Phase::Terminating { .. } => {
                Containment::current().kill(pid);
                Phase::Killed {
                    give_up_at: later(Instant::now(), KILL_WAIT),
                }
            }
            Phase::Killed { .. } => {
                tracing::warn!(label = %spec.label, pid, "the leader survived SIGKILL; giving up on it");
                break None;
            }
        };
    };

    // The leader is a zombie (or stuck), so `pid` still names our group: kill what is left of it
    // (grandchildren included), retire the id from the registry, and only then reap. The run stays
    // registered until the rest of the group is gone too, so `stop_all` (and `once` exiting after
    // it) waits for processes still dying of their SIGKILL.
    group::kill(pid);
    registration.retire_group();
    let leader = match exited {
        Some(Ok(())) => group::reap(pid).map(Some),
        Some(Err(source)) => Err(source),
        None => Ok(None),
    };
    if leader.is_ok() && !group::wait_gone(pid, GONE_WAIT) {
        tracing::warn!(label = %spec.label, pid, "processes of the group outlived SIGKILL for {GONE_WAIT:?}");
    }
    // The job of a leader that was lost is still held; closing it kills what is left.
    #[cfg(windows)]
    crate::job::release(pid);
    drop(registration);
    let leader = leader.map_err(|source| Error::Wait {
        pid,
        label: spec.label.clone(),
        source,
    })?;
    let (tail, log_bytes) = capture.finish(CAPTURE_WAIT);
    let status = match (stopped_by, leader) {
        (Some(reason), _) => reason,
        (None, Some(status)) => status,
        (None, None) => Status::Cancelled,
    };
    let outcome = finished(status, tail, log_bytes);
    tracing::debug!(label = %spec.label, pid, status = ?outcome.status, ms = outcome.duration.as_millis() as u64, "finished");
    Ok(outcome)
}

/// Kills and reaps a leader whose run cannot go on, and says why.
fn abandon(pid: i32, spec: &CommandSpec, role: &'static str, source: io::Error) -> Error {
    give_up(pid);
    Error::Thread {
        role,
        label: spec.label.clone(),
        source,
    }
}

/// The waiter's part, on a thread of its own: blocks until the leader `pid` exits, then wakes
/// the run; if the run is gone by then, kills what is left of the group and reaps the leader.
pub(crate) fn wait_for_leader(pid: i32, waker: &Sender<Wake>) {
    let exited = group::wait_exited(pid);
    if waker.send(Wake::Exited(exited)).is_err() {
        // The run gave up on this leader; it still has to be reaped by someone.
        group::kill(pid);
        let _ = group::reap(pid);
    }
}

fn log_folder(path: &Path) -> Result<(), Error> {
    match path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        Some(parent) => fs::create_dir_all(parent).map_err(|source| Error::Log {
            path: path.to_owned(),
            source,
        }),
        None => Ok(()),
    }
}

/// `from + by`, or a time too far away to matter when that overflows.
fn later(from: Instant, by: Duration) -> Instant {
    from.checked_add(by)
        .unwrap_or_else(|| from + Duration::from_secs(100 * 365 * 24 * 3600))
}

fn unix_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|since| u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}
