//! The group calls of a run on Windows, where a command's "group" is its job (see `job.rs`):
//! stop the job, wait for the leader, read how it ended, wait until the job is empty.
//!
//! The job's entry keeps a handle to the leader, so its pid names no other process while the
//! entry exists; these functions find nothing once it is released, and must never open a process
//! by pid. Terminating and killing are one hard stop: Windows has no SIGTERM for console programs.

use std::io;
use std::os::windows::io::AsRawHandle;
use std::time::{Duration, Instant};

use windows_sys::Win32::Foundation::{WAIT_FAILED, WAIT_OBJECT_0};
use windows_sys::Win32::System::Threading::{GetExitCodeProcess, INFINITE, WaitForSingleObject};

use crate::job;
use crate::outcome::Status;

/// Stops the job of `pid`; a hard stop, so the grace that follows finds it ended.
pub(crate) fn terminate(pid: i32) {
    job::terminate(pid);
}

/// Kills every process in the job of `pid`.
pub(crate) fn kill(pid: i32) {
    job::terminate(pid);
}

/// Waits, up to `limit`, until no process of the job of `pid` is alive, then releases the job
/// (closing it kills whatever is left). Returns whether the job was empty.
pub fn wait_gone(pid: i32, limit: Duration) -> bool {
    let Some(contained) = job::find(pid) else {
        return true;
    };
    let end = Instant::now() + limit;
    let mut pause = Duration::from_micros(100);
    let gone = loop {
        if contained.active_processes() == 0 {
            break true;
        }
        if Instant::now() >= end {
            break false;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(10));
    };
    job::release(pid);
    gone
}

/// Blocks until the leader `pid` has exited; its job's entry keeps its pid reserved.
pub(crate) fn wait_exited(pid: i32) -> io::Result<()> {
    // A handle of our own, so a blocked waiter does not keep the job open after its release.
    let leader = job::find(pid).ok_or_else(released)?.leader().try_clone()?;
    // SAFETY: `leader` is a live process handle for the duration of the call.
    match unsafe { WaitForSingleObject(leader.as_raw_handle(), INFINITE) } {
        WAIT_OBJECT_0 => Ok(()),
        WAIT_FAILED => Err(io::Error::last_os_error()),
        other => Err(io::Error::other(format!(
            "waiting for process {pid} returned {other}"
        ))),
    }
}

/// Waits for the leader `pid` to exit and says how it ended: always an exit code on Windows.
pub(crate) fn reap(pid: i32) -> io::Result<Status> {
    wait_exited(pid)?;
    let contained = job::find(pid).ok_or_else(released)?;
    let mut code = 0_u32;
    // SAFETY: a live process handle and a valid out-pointer.
    if unsafe { GetExitCodeProcess(contained.leader().as_raw_handle(), &mut code) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // Exit codes are 32 bits; an NTSTATUS such as 0xC000013A reads as a negative code.
    Ok(Status::Exited { code: code as i32 })
}

fn released() -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        "the process's job was already released",
    )
}
