//! Starting an adapter on Unix: descriptor 3 is one end of a socket pair, and the code between
//! `fork` and `exec` puts the child in its group, its signal state and its containment.
//!
//! Between `fork` and `exec` the child clears its signal mask (the binary blocks its stop
//! signals in every thread), sets SIGINT and SIGPIPE back to their defaults (an ignored SIGINT
//! survives `exec`, and Python then never turns it into `KeyboardInterrupt`), asks for SIGKILL
//! when the launcher thread dies, and enters the containment of `once_exec` (a PID namespace of
//! its own where the kernel allows), so nothing the evaluated code starts outlives the
//! evaluator, even a `setsid`'d process or a SIGKILL of `once`. This module must never run code
//! between `fork` and `exec` that is not async-signal-safe.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};

use crate::group;
use crate::launcher::Launcher;
use crate::spec::EvaluatorSpec;

/// The private channel of the protocol.
pub(super) type Channel = UnixStream;

/// The shell; POSIX places it here.
pub(super) const SHELL: &str = "/bin/sh";

/// The descriptor the adapters read requests from and write replies to.
const CHANNEL_FD: libc::c_int = 3;

/// Spawns `command` on the launcher thread with the other end of the channel at descriptor 3.
pub(super) fn start(
    launcher: &Launcher,
    mut command: Command,
    _spec: &EvaluatorSpec,
) -> io::Result<(Child, Channel)> {
    let (ours, theirs) = UnixStream::pair()?;
    let channel_fd = theirs.as_raw_fd();
    // Probed before the fork: a forked child may not probe.
    once_exec::Containment::current();
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: `prepare_child` only makes async-signal-safe calls and touches no shared memory.
    unsafe {
        command.pre_exec(move || prepare_child(parent, channel_fd));
    }
    let child = launcher.spawn(command)?;
    // The child has its own copies; ours would keep the pipe and the socket open forever.
    drop(theirs);
    Ok((child, ours))
}

/// Whether `child` has exited, without reaping it.
pub(super) fn has_exited(child: &Child) -> bool {
    i32::try_from(child.id()).map_or(true, group::has_exited)
}

/// "was killed by signal N (NAME)", for a status without an exit code.
pub(super) fn describe_signal(status: ExitStatus) -> Option<String> {
    let signal = status.signal()?;
    let name = match signal {
        libc::SIGKILL => " (SIGKILL)",
        libc::SIGTERM => " (SIGTERM)",
        libc::SIGINT => " (SIGINT)",
        libc::SIGSEGV => " (SIGSEGV)",
        libc::SIGABRT => " (SIGABRT)",
        _ => "",
    };
    Some(format!("was killed by signal {signal}{name}"))
}

/// Runs in the child between `fork` and `exec`.
fn prepare_child(parent: libc::pid_t, channel_fd: libc::c_int) -> io::Result<()> {
    // SAFETY: every call below is async-signal-safe and only passes pointers to this stack frame.
    unsafe {
        if libc::setpgid(0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut empty = MaybeUninit::<libc::sigset_t>::zeroed();
        libc::sigemptyset(empty.as_mut_ptr());
        if libc::sigprocmask(libc::SIG_SETMASK, empty.as_ptr(), std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
        for signal in [libc::SIGPIPE, libc::SIGINT] {
            if libc::signal(signal, libc::SIG_DFL) == libc::SIG_ERR {
                return Err(io::Error::last_os_error());
            }
        }
        if channel_fd == CHANNEL_FD {
            // dup2 onto itself would keep close-on-exec set.
            let flags = libc::fcntl(CHANNEL_FD, libc::F_GETFD);
            if flags < 0 || libc::fcntl(CHANNEL_FD, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                return Err(io::Error::last_os_error());
            }
        } else if libc::dup2(channel_fd, CHANNEL_FD) < 0 {
            return Err(io::Error::last_os_error());
        }
        // Only Linux has a death signal; elsewhere a SIGKILL of `once` leaves the evaluator.
        #[cfg(target_os = "linux")]
        {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The launcher may have died between fork and prctl; then no death signal would come.
            if libc::getppid() != parent {
                libc::_exit(127);
            }
        }
        // Last: the shims it forks keep descriptor 3 and the signal state out of their own way.
        once_exec::enter_containment(parent)
    }
}
