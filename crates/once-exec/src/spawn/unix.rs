//! Starting `sh -c COMMAND` on Unix as the leader of its own process group, with the environment its mode
//! gives it, a clean signal state and (on Linux) a death signal tied to its parent, then in the
//! containment in force (the leader is then the shim, and the command runs below it), and the
//! thread that waits for the leader.
//!
//! On Linux, in the pid-namespace and process-group modes, the child is a clone that shares
//! `once`'s memory (`vfork.rs`). Elsewhere, and in the subreaper mode, it is a fork through
//! `std`'s `Command` (this file).
//!
//! The code between `fork` and `exec` runs in a copy of a multi-threaded process, so it must
//! never allocate, lock or log: only async-signal-safe system calls. `PR_SET_PDEATHSIG` fires
//! when the *thread* that forked exits, not the process; that is safe here because that thread
//! blocks until the leader is reaped ([`run`](crate::run) forks on its own thread; the clone
//! path clones on the waiter, which outlives the leader).

use std::ffi::OsStr;
use std::io;
use std::mem::MaybeUninit;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc::Sender;

use super::{SpawnError, Spawned, watch};
use crate::contain::{Containment, enter_containment_with};
use crate::env::command_env;
use crate::exec::Exec;
use crate::spec::CommandSpec;
use crate::wake::Wake;

#[cfg(target_os = "linux")]
#[path = "vfork.rs"]
mod vfork;

/// The shell; POSIX places it here, and an absolute path does not depend on the child's `PATH`.
const SHELL: &str = "/bin/sh";

/// Spawns the command and a thread that sends [`Wake::Exited`] to `waker` when the leader exits
/// (and reaps it itself if the run is gone by then).
pub(crate) fn spawn(spec: &CommandSpec, waker: Sender<Wake>) -> Result<Spawned, SpawnError> {
    // Probed before the fork: a forked child may not probe.
    Containment::current();
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    let env = command_env(&spec.env_mode, &spec.env);
    // For a child that execs the command itself (a shim, or a clone).
    let exec = Exec::new(
        OsStr::new(SHELL),
        [
            OsStr::new(SHELL),
            OsStr::new("-c"),
            OsStr::new(&spec.command),
        ],
        env.iter()
            .map(|(name, value)| (name.as_os_str(), value.as_os_str())),
    )
    .map_err(SpawnError::Command)?;
    #[cfg(target_os = "linux")]
    {
        let probe = Containment::probed();
        if vfork::serves(probe) {
            return vfork::spawn(spec, exec, probe, parent, waker);
        }
    }
    let mut command = Command::new(SHELL);
    command
        .arg("-c")
        .arg(&spec.command)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: `prepare_child` only makes async-signal-safe calls and touches no shared memory.
    unsafe {
        command.pre_exec(move || prepare_child(parent, &exec));
    }
    watch(command.spawn().map_err(SpawnError::Command)?, waker)
}

/// Runs in the child between `fork` and `exec`.
fn prepare_child(parent: libc::pid_t, exec: &Exec) -> io::Result<()> {
    // SAFETY: every call below is async-signal-safe and only passes pointers to this stack frame.
    unsafe {
        // A group of its own, so one signal reaches the command and everything it starts.
        if libc::setpgid(0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        // `once` blocks its stop signals in every thread and a mask survives exec; a child that
        // inherited it could not be stopped with SIGTERM.
        let mut empty = MaybeUninit::<libc::sigset_t>::zeroed();
        libc::sigemptyset(empty.as_mut_ptr());
        if libc::sigprocmask(libc::SIG_SETMASK, empty.as_ptr(), std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
        // Rust ignores SIGPIPE and an ignored disposition survives exec; `yes | head` must end.
        if libc::signal(libc::SIGPIPE, libc::SIG_DFL) == libc::SIG_ERR {
            return Err(io::Error::last_os_error());
        }
        // Only Linux has a death signal; elsewhere a SIGKILL of `once` leaves the group running.
        #[cfg(target_os = "linux")]
        {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl; then no death signal will come.
            if libc::getppid() != parent {
                libc::_exit(127);
            }
        }
        enter_containment_with(parent, Some(exec))
    }
}
