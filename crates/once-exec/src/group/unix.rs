//! The few system calls that act on a process group and its leader: signal the group, wait for
//! the leader without reaping it, reap it.
//!
//! A group id is its leader's pid, so the group may only be signalled while the leader is not yet
//! reaped: a reaped pid can be reused by an unrelated process. Callers keep that order (wait with
//! `WNOWAIT`, kill the group, then reap); this module must never reap as a side effect of waiting.

use std::io;
use std::mem::MaybeUninit;

use crate::outcome::Status;

/// Asks every process in group `pgid` to stop (SIGTERM); the caller gives it a grace.
pub(crate) fn terminate(pgid: i32) {
    signal(pgid, libc::SIGTERM);
}

/// Kills every process in group `pgid` (SIGKILL).
pub(crate) fn kill(pgid: i32) {
    signal(pgid, libc::SIGKILL);
}

/// Sends `signal` to every process in group `pgid`; a group that is already gone is fine.
pub fn signal(pgid: i32, signal: libc::c_int) {
    // A group id of 0 or 1 would mean "our own group" or "every process": never.
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill has no memory effects; a negative pid addresses the group.
    let rc = unsafe { libc::kill(-pgid, signal) };
    if rc != 0 {
        let error = io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::ESRCH) {
            tracing::warn!(pgid, signal, %error, "cannot signal process group");
        }
    }
}

/// Waits, up to `limit`, until no process of group `pgid` is alive; its members have all been
/// sent SIGKILL and its leader is reaped. SIGKILL is delivered asynchronously: a member can still
/// be tearing itself down when the leader is reaped, and `once` must not report a run over, or
/// exit, while any of them is alive (a zombie is dead: it only waits for its reaper). Only signal
/// 0 is sent, which acts on nothing: while members remain, the kernel keeps their group id from
/// being reused, and once none remains the answer is `ESRCH`. Returns whether the group is gone.
pub fn wait_gone(pgid: i32, limit: std::time::Duration) -> bool {
    if pgid <= 1 {
        return true;
    }
    let end = std::time::Instant::now() + limit;
    let mut pause = std::time::Duration::from_micros(100);
    loop {
        // SAFETY: signal 0 only checks for existence; a negative pid addresses the group.
        let gone = unsafe { libc::kill(-pgid, 0) } != 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        // Members that are only zombies have died; whoever inherited them reaps them, on its
        // own schedule (some init processes take a second).
        if gone || !has_live_member(pgid) {
            return true;
        }
        if std::time::Instant::now() >= end {
            return false;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(std::time::Duration::from_millis(10));
    }
}

/// Whether a process of group `pgid` is alive, zombies aside (Linux: read from `/proc`).
#[cfg(target_os = "linux")]
fn has_live_member(pgid: i32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return true;
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .any(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // `pid (comm) state ppid pgrp …`; comm may hold anything, so read after its last `)`.
            let mut fields = stat
                .rsplit_once(')')
                .map_or("", |(_, rest)| rest)
                .split_whitespace();
            let state = fields.next();
            let group = fields.nth(1).and_then(|field| field.parse::<i32>().ok());
            group == Some(pgid) && !matches!(state, Some("Z" | "X"))
        })
}

/// Without `/proc`, any member counts as alive.
#[cfg(not(target_os = "linux"))]
fn has_live_member(_pgid: i32) -> bool {
    true
}

/// Blocks until `pid` has exited, leaving it a zombie so its pid stays reserved.
pub(crate) fn wait_exited(pid: i32) -> io::Result<()> {
    let id = libc::id_t::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    loop {
        let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
        // SAFETY: `info` is a valid, zeroed out-pointer for the duration of the call.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                id,
                info.as_mut_ptr(),
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// Reaps `pid`, which must have exited already, and says how it ended.
pub(crate) fn reap(pid: i32) -> io::Result<Status> {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: `status` is a valid out-pointer.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            return Ok(if libc::WIFSIGNALED(status) {
                Status::Signaled {
                    signal: libc::WTERMSIG(status),
                }
            } else {
                Status::Exited {
                    code: libc::WEXITSTATUS(status),
                }
            });
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}
