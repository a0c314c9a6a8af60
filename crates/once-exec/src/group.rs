//! The few system calls that act on a process group and its leader: signal the group, wait for
//! the leader without reaping it, reap it.
//!
//! A group id is its leader's pid, so the group may only be signalled while the leader is not yet
//! reaped: a reaped pid can be reused by an unrelated process. Callers keep that order (wait with
//! `WNOWAIT`, kill the group, then reap); this module must never reap as a side effect of waiting.

use std::io;
use std::mem::MaybeUninit;

use crate::outcome::Status;

/// Sends `signal` to every process in group `pgid`; a group that is already gone is fine.
pub(crate) fn signal(pgid: i32, signal: libc::c_int) {
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
