//! The process group of one live evaluator, signalled from any thread and reaped by one.
//!
//! A group id is its leader's pid, and a reaped pid can be reused by an unrelated process, so
//! the group may only be signalled while its leader is unreaped. [`Group::take`] removes the id
//! under the same lock that [`Group::signal`] reads it under, and the owner reaps only after
//! taking it: this module must never let a signal reach a group whose leader was reaped.
//!
//! On Windows the group is the leader's job (`once_exec::spawn_contained`), which its table
//! keeps until [`once_exec::wait_group_gone`] releases it; there is no interrupt there.

#[cfg(unix)]
use std::mem::MaybeUninit;
use std::sync::{Mutex, MutexGuard, PoisonError};

#[derive(Debug, Default)]
pub(crate) struct Group {
    pgid: Mutex<Option<i32>>,
}

impl Group {
    pub(crate) fn set(&self, pgid: i32) {
        *self.lock() = Some(pgid);
    }

    /// Sends SIGINT to the group, as a terminal's Ctrl-C would: the interpreter raises in the
    /// evaluated code, and the subprocesses it waits on stop too.
    #[cfg(unix)]
    pub(crate) fn interrupt(&self) {
        self.signal(libc::SIGINT);
    }

    /// Nothing reaches the interpreter on Windows: a console Ctrl-C or Ctrl-Break goes only to
    /// processes that share `once`'s console, and an evaluator runs without one. The
    /// evaluation's grace then runs out and the evaluator is killed, its state lost.
    #[cfg(windows)]
    pub(crate) fn interrupt(&self) {
        tracing::debug!("no interrupt on Windows; the evaluator is killed after the grace");
    }

    /// Kills every process of the group, if one is live; the owner still reaps the leader.
    #[cfg(unix)]
    pub(crate) fn kill(&self) {
        self.signal(libc::SIGKILL);
    }

    /// Terminates the job, if one is live; the owner still waits for the leader.
    #[cfg(windows)]
    pub(crate) fn kill(&self) {
        if let Some(pid) = *self.lock() {
            once_exec::Containment::current().kill(pid);
        }
    }

    /// Sends `signal` to the group, if one is live.
    #[cfg(unix)]
    fn signal(&self, signal: libc::c_int) {
        if let Some(pgid) = *self.lock() {
            once_exec::signal_group(pgid, signal);
        }
    }

    /// Kills the group, and whatever its containment holds, and forgets it; the caller then
    /// reaps the leader. Returns the id that was killed, if any.
    pub(crate) fn take(&self) -> Option<i32> {
        let pgid = self.lock().take()?;
        once_exec::Containment::current().kill(pgid);
        Some(pgid)
    }

    fn lock(&self) -> MutexGuard<'_, Option<i32>> {
        // An optional id; a panic cannot leave it half-written.
        self.pgid.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether `pid` (our unreaped child) has exited, without reaping it.
#[cfg(unix)]
pub(crate) fn has_exited(pid: i32) -> bool {
    let Ok(id) = libc::id_t::try_from(pid) else {
        return true;
    };
    let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
    // SAFETY: `info` is a valid, zeroed out-pointer for the duration of the call.
    let rc = unsafe {
        libc::waitid(
            libc::P_PID,
            id,
            info.as_mut_ptr(),
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    if rc != 0 {
        // ECHILD: not our child any more, so certainly not a usable evaluator.
        return true;
    }
    // SAFETY: waitid returned 0, so `info` is initialised; with WNOHANG, si_pid is 0 when the
    // child has not changed state.
    unsafe { info.assume_init().si_pid() != 0 }
}
