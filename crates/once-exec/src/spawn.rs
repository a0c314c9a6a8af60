//! Starting a command: `sh -c COMMAND` in its containment, its output piped, and a thread that
//! waits for it to exit. Each platform starts it its own way (`spawn/unix.rs`, `spawn/vfork.rs`
//! on Linux, `spawn/windows.rs`); what they return, and the waiter of a `std` child, are here.

use std::io::{self, Read};
use std::process::Child;
use std::sync::mpsc::Sender;
use std::thread;

use crate::contain::Containment;
use crate::group;
use crate::run::wait_for_leader;
use crate::wake::Wake;

#[cfg(unix)]
#[path = "spawn/unix.rs"]
mod platform;
#[cfg(windows)]
#[path = "spawn/windows.rs"]
mod platform;

pub(crate) use platform::spawn;

/// A command that runs, leading its own group (whose id is `pid`; on Windows, its job's key),
/// with a waiter on it.
pub(crate) struct Spawned {
    pub(crate) pid: i32,
    /// Its stdout and stderr.
    pub(crate) pipes: [Box<dyn Read + Send>; 2],
}

/// Why a command did not start.
#[derive(Debug)]
pub(crate) enum SpawnError {
    /// The command could not start (a missing folder, a NUL byte, no more processes).
    Command(io::Error),
    /// `once` could not start a thread of its own, in the role the `&str` names.
    Thread(&'static str, io::Error),
}

/// Starts the waiter of a child that `std` spawned: it sends [`Wake::Exited`] to `waker` when
/// the leader exits, and reaps the leader itself if the run is gone by then.
fn watch(mut child: Child, waker: Sender<Wake>) -> Result<Spawned, SpawnError> {
    // Linux pids are below 2^22 (PID_MAX_LIMIT), so the cast is exact; Windows ids are far below
    // 2^31, and its job table is keyed by this same cast.
    let pid = child.id() as i32;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        // Every platform pipes both.
        give_up(pid);
        return Err(SpawnError::Thread(
            "capture",
            io::Error::other("missing pipes"),
        ));
    };
    thread::Builder::new()
        .name("once-exec-wait".into())
        .spawn(move || wait_for_leader(pid, &waker))
        .map_err(|source| {
            give_up(pid);
            SpawnError::Thread("waiter", source)
        })?;
    Ok(Spawned {
        pid,
        pipes: [Box::new(stdout), Box::new(stderr)],
    })
}

/// Kills and reaps a leader whose run cannot go on.
pub(crate) fn give_up(pid: i32) {
    Containment::current().kill(pid);
    // After SIGKILL the leader dies at once, so this reap does not block for long.
    let _ = group::reap(pid);
    // The job of a leader that was lost is still held; closing it kills what is left.
    #[cfg(windows)]
    crate::job::release(pid);
}
