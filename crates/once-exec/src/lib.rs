//! Running the commands of `once` safely: one command, one process group, one deadline, one log.
//!
//! This crate knows nothing about targets, capabilities or the graph; it must never depend on
//! `once-graph` or `once-mcp`, never print, and never install signal handlers (only the binary
//! owns signals). A scheduler that decides *what* to run sits on top of it.
//!
//! # Theory of operation
//!
//! [`run`] takes a [`CommandSpec`] and blocks until the command is over. It spawns `sh -c
//! COMMAND` in a new process group (led by the command, or by its shim; see *Containment*),
//! with stdin from `/dev/null`, stdout and stderr on pipes, and the environment its [`EnvMode`] builds (see [`command_env`]): in loose mode our
//! whole environment, in strict mode only the documented [`BASE_ENV`] names and those its globs
//! match; the spec's declared variables on top in both. Nothing is ever added or removed beyond
//! that, so a command sees the switches that keep tools from changing the machine
//! (`RUSTUP_AUTO_INSTALL=0`) whenever the caller has them. Between `fork` and `exec` the child clears its signal mask (the `once` binary blocks
//! SIGINT, SIGTERM and SIGHUP in every thread, and a mask survives `exec`), resets SIGPIPE to its
//! default (Rust ignores it), and asks the kernel for SIGKILL when its parent dies
//! (`PR_SET_PDEATHSIG`), then checks that the parent is still the one that forked it, which
//! closes the race where the parent died before the request.
//!
//! Two capture threads, one per pipe, read as fast as the child writes, so the child never
//! blocks on a full pipe. They append whole lines to the log file (created with the first output:
//! a command that prints nothing leaves no file) in arrival order and keep only
//! the last [`CommandSpec::tail_lines`] lines, each cut to [`LINE_CAP`] bytes, in memory; a
//! command may write gigabytes and memory stays bounded.
//!
//! A waiter thread blocks in `waitid(WNOWAIT)` for the leader and reports through a channel (on
//! Linux it is also the thread that cloned the leader, suspended until the leader execs or, for a
//! shim, exits: see `spawn/vfork.rs`).
//! The calling thread sleeps on that channel with a timeout, never spinning. The same channel
//! is woken by a [`Cancel`] token and by [`Registry::stop_all`]. The state machine is:
//!
//! ```text
//!   running ──deadline──► terminating (SIGTERM to the group) ──grace──► killed (SIGKILL)
//!      │     ──cancel/stop_all──►  │                                      │
//!      └────────── leader exits ───┴──────────────────────────────────────┴──► finished
//! ```
//!
//! Whichever way the leader ends, the whole group gets SIGKILL before the leader is reaped
//! (`WNOWAIT` keeps it a zombie, so its pid, which is the group id, cannot be reused by an
//! unrelated process while we signal it): no grandchild outlives its action, and the pipes close
//! so the capture threads finish. SIGKILL is delivered asynchronously, so after reaping the
//! leader a run waits (bounded) until signal 0 to the group says no member is left, and only
//! then deregisters: `stop_all`, and `once` exiting after it, never leaves a member still dying. Their join is still bounded, because a process that left the
//! group (`setsid`) could keep a pipe open.
//!
//! The [`Registry`] knows every live group and every other long-lived [`Runtime`]. A signal
//! thread calls [`Registry::stop_all`]: in-flight runs return [`Status::Cancelled`], groups that
//! ignore SIGTERM get SIGKILL after the grace, and later runs are refused with
//! [`Error::ShuttingDown`].
//!
//! # Containment
//!
//! The group is not the boundary: a process leaves it with `setsid`, and if `once` itself is
//! killed with SIGKILL nothing of ours runs. So the spawned child enters a [`Containment`] before
//! it execs (see `contain.rs` for the theory of operation): in the strongest mode a shim and a
//! PID namespace whose init's death makes the kernel kill everything in it, then a subreaper shim
//! that sweeps the command's descendants, then the process group alone. The shims lead the
//! group, so everything above (SIGTERM to the group, grace, a hard kill, reaping the leader)
//! works unchanged; the hard kill goes through [`Containment::kill`].
//!
//! On Windows the same state machine runs over a Job Object instead of a process group (see
//! `job.rs`): `sh -c COMMAND` (the POSIX `sh` on `PATH`, as Git for Windows installs it) starts
//! suspended, enters a job of its own that kills everything in it when `once` closes it or dies,
//! and only then runs. The group calls become job calls (`group/windows.rs`): the stop before the
//! grace is already a hard stop (`TerminateJobObject`), since Windows has no SIGTERM for console
//! programs; "the group is gone" means the job counts no active process; the leader's handle,
//! not a zombie, keeps its pid from being reused; a run closes its job when it ends.
//!
//! # Limits
//!
//! In process-group mode, a process that leaves the group (`setsid`, `setpgid`, a daemon that
//! double-forks into a new session) is out of reach of group signals, and a SIGKILL of `once`
//! reaches only the shell. In every mode, if a process outside the group keeps a pipe open, the
//! run stops waiting for that pipe after a bound and returns without it. In subreaper mode a
//! SIGKILL of the shim itself (not of `once`) leaves its orphans to the machine's init.
//! On Windows a command gets no chance to clean up when it is stopped, and where the system
//! refuses to put it in a job (before Windows 8, a process already in a job could not join
//! another) it fails to start rather than run uncontained.

mod cancel;
mod capture;
mod contain;
mod env;
mod error;
#[cfg(unix)]
mod exec;
#[cfg_attr(unix, path = "group/unix.rs")]
#[cfg_attr(windows, path = "group/windows.rs")]
mod group;
#[cfg(windows)]
mod job;
mod outcome;
mod registry;
mod run;
#[cfg(target_os = "linux")]
mod shim;
mod spawn;
mod spec;
mod wake;

pub use cancel::Cancel;
pub use capture::LINE_CAP;
#[cfg(unix)]
pub use contain::enter_containment;
pub use contain::{CONTAINMENT_ENV, Containment};
pub use env::{BASE_ENV, EnvMode, base_env, command_env, env_glob_matches};
pub use error::Error;
#[cfg(unix)]
pub use group::signal as signal_group;
pub use group::wait_gone as wait_group_gone;
pub use outcome::{Outcome, Status};
pub use registry::{Registration, Registry, Runtime};
pub use run::run;
pub use spec::{CommandSpec, DEFAULT_DEADLINE, DEFAULT_GRACE, DEFAULT_TAIL_LINES};

/// Spawns `command` (its stdio and environment already set) into a Job Object of its own, the
/// Windows counterpart of [`enter_containment`]'s `pre_exec`: when this returns `Ok` the process
/// runs inside the job, [`Containment::kill`] with its pid ends everything in it, and
/// [`wait_group_gone`] waits for the job to empty and then closes it. The creation flags of
/// `command` are replaced.
#[cfg(windows)]
pub fn spawn_contained(
    command: &mut std::process::Command,
) -> std::io::Result<std::process::Child> {
    job::spawn(command)
}
