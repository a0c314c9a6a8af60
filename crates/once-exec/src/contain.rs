//! Which containment keeps a command's processes from outliving `once`, and how to end all of
//! them: the mode in force, probed once per process, and the signal that kills a contained tree.
//!
//! # Theory of operation
//!
//! A process group is not enough: a process leaves it with `setsid`, and if `once` dies by
//! SIGKILL only its direct child gets a death signal. So every command (and every evaluator) is
//! spawned through a shim, a forked copy of `once` that never execs (see `shim.rs`):
//!
//! - **pid-namespace**: the shim unshares a PID namespace (with a user namespace when it lacks
//!   `CAP_SYS_ADMIN`), starts its init (pid 1, which reaps orphans) and forks the command into
//!   it (pid 2). When the init dies the kernel SIGKILLs everything in the namespace, wherever it
//!   went; the shim kills the init when the command ends, the init's death signal is tied to the
//!   shim, and the shim's to `once`'s thread. SIGTERM to the group reaches the init, which passes
//!   it to every process of the namespace.
//! - **subreaper**: where namespaces are refused, the shim makes itself a child subreaper, so
//!   orphans are reparented to it rather than to the machine's init, and kills its descendants
//!   (found in `/proc`) when the command ends, on SIGTERM (SIGTERM), on SIGUSR1 (SIGKILL), and
//!   when `once` dies (its death signal is SIGUSR1). Only a SIGKILL of the shim itself escapes it.
//! - **process-group**: the command leads a process group and nothing more; `setsid` escapes.
//!
//! `ONCE_CONTAINMENT` may ask for a weaker mode than the kernel grants, never a stronger one.
//! This module must never fork outside [`Containment::current`]'s one probe, and must never be
//! called between `fork` and `exec` except for [`enter_containment`].

use std::io;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// The variable that forces a weaker containment.
pub const CONTAINMENT_ENV: &str = "ONCE_CONTAINMENT";

/// How the processes of a command are kept from outliving it and `once`; strongest first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Containment {
    /// Each command in a PID namespace of its own: nothing in it survives its init.
    PidNamespace,
    /// A subreaper shim kills the command's descendants; only a SIGKILL of the shim escapes.
    Subreaper,
    /// A process group: `setsid` and a SIGKILL of `once` escape. The default, because it is
    /// what a record written before containment existed ran under.
    #[default]
    ProcessGroup,
}

/// The probed mode, and whether a namespace needs a user namespace around it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Probe {
    pub(crate) mode: Containment,
    pub(crate) user_namespace: bool,
}

impl Containment {
    pub const ALL: [Containment; 3] = [
        Containment::PidNamespace,
        Containment::Subreaper,
        Containment::ProcessGroup,
    ];

    /// The name used in `ONCE_CONTAINMENT` and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Containment::PidNamespace => "pid-namespace",
            Containment::Subreaper => "subreaper",
            Containment::ProcessGroup => "process-group",
        }
    }

    /// The mode asked for by `ONCE_CONTAINMENT`, if set; an unknown value is an error.
    pub fn from_env() -> Result<Option<Containment>, Error> {
        let Some(value) = std::env::var_os(CONTAINMENT_ENV) else {
            return Ok(None);
        };
        let value = value.to_string_lossy();
        Containment::ALL
            .into_iter()
            .find(|mode| mode.name() == value)
            .map(Some)
            .ok_or_else(|| Error::UnknownContainment {
                value: value.into_owned(),
            })
    }

    /// The mode in force in this process: the strongest the kernel grants, or the weaker one
    /// `ONCE_CONTAINMENT` asks for (an unknown value is ignored here; the binary refuses it).
    pub fn current() -> Containment {
        probe().mode
    }

    /// Kills everything `leader` (a process spawned in this mode, not yet reaped) contains.
    pub fn kill(self, leader: i32) {
        match self {
            // The shim sweeps its descendants with SIGKILL, then exits.
            Containment::Subreaper => send(leader, libc::SIGUSR1),
            // SIGKILL to the namespace's init (in the group) ends the namespace.
            Containment::PidNamespace | Containment::ProcessGroup => send(-leader, libc::SIGKILL),
        }
    }
}

/// Puts the child being spawned into the containment in force. Call [`Containment::current`]
/// before spawning (it probes once, and a probe cannot run in a forked child), then this from a
/// `pre_exec` closure, last, after the child made itself a group leader and tied its death
/// signal to `parent`. Returns in the process that goes on to exec the command; the shims it
/// forks never return. Without a probe done, the child only stays a group leader.
///
/// # Safety
///
/// Only between `fork` and `exec` in the child: it forks, and the processes that do not return
/// run async-signal-safe code until they `_exit`.
pub unsafe fn enter_containment(parent: libc::pid_t) -> io::Result<()> {
    // SAFETY: forwarded from the caller.
    unsafe { enter_containment_with(parent, None) }
}

/// [`enter_containment`], and with `exec` the PID-namespace shim starts the command itself with
/// a vfork-style clone that execs it at once, sharing the shim's memory instead of copying
/// `once`'s page tables a second time; then no process returns.
///
/// # Safety
///
/// As for [`enter_containment`].
pub(crate) unsafe fn enter_containment_with(
    parent: libc::pid_t,
    exec: Option<&crate::exec::Exec>,
) -> io::Result<()> {
    // An atomic load: no lock, no allocation.
    let Some(probe) = PROBE.get().copied() else {
        return Ok(());
    };
    #[cfg(target_os = "linux")]
    {
        // SAFETY: forwarded from the caller.
        unsafe { crate::shim::enter(probe, parent, exec) }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (probe, parent, exec);
        Ok(())
    }
}

static PROBE: OnceLock<Probe> = OnceLock::new();

/// The probe of this process, run once.
fn probe() -> Probe {
    *PROBE.get_or_init(|| {
        let granted = granted();
        let wanted = Containment::from_env().ok().flatten();
        let mode = wanted.map_or(granted.mode, |wanted| wanted.max(granted.mode));
        tracing::debug!(
            mode = mode.name(),
            granted = granted.mode.name(),
            "containment"
        );
        Probe {
            mode,
            user_namespace: granted.user_namespace,
        }
    })
}

/// What the kernel grants, tried in a throwaway child.
fn granted() -> Probe {
    #[cfg(target_os = "linux")]
    {
        crate::shim::probe()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Probe {
            mode: Containment::ProcessGroup,
            user_namespace: false,
        }
    }
}

fn send(pid: i32, signal: libc::c_int) {
    // 0, 1 and -1 would mean our own group, init or every process: never.
    if (-1..=1).contains(&pid) {
        return;
    }
    // SAFETY: kill has no memory effects.
    if unsafe { libc::kill(pid, signal) } != 0 {
        let error = io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::ESRCH) {
            tracing::warn!(pid, signal, %error, "cannot signal a contained process");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_order_from_strongest() {
        for mode in Containment::ALL {
            assert_eq!(serde_json::to_value(mode).unwrap(), mode.name());
        }
        assert!(Containment::PidNamespace < Containment::ProcessGroup);
    }
}
