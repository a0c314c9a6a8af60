//! Which containment keeps a command's processes from outliving `once`, and how to end all of
//! them: the mode in force, probed once per process, and the signal that kills a contained tree.
//!
//! # Theory of operation
//!
//! A process group is not enough: a process leaves it with `setsid`, and if `once` dies by
//! SIGKILL only its direct child gets a death signal. So on Linux every command (and every
//! evaluator) is spawned through a shim, a forked copy of `once` that never execs (see `shim.rs`):
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
//!   The only mode of the other Unix systems (macOS).
//! - **job-object** (Windows, the only mode there): the command starts suspended in a Job Object
//!   of its own that kills everything in it when its last handle closes, so when `once` dies the
//!   kernel ends the tree (see `job.rs`).
//!
//! `ONCE_CONTAINMENT` may ask for a weaker mode than the kernel grants, never a stronger one,
//! and only a mode of this platform. This module must never fork outside
//! [`Containment::current`]'s one probe, and must never be called between `fork` and `exec`
//! except for [`enter_containment`].

#[cfg(unix)]
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
    /// Each command in a Windows Job Object of its own that kills what it holds when `once`
    /// closes it or dies: nothing started inside can leave it.
    JobObject,
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
    /// Every mode of every platform, strongest first; a report from any platform reads back.
    pub const ALL: [Containment; 4] = [
        Containment::PidNamespace,
        Containment::JobObject,
        Containment::Subreaper,
        Containment::ProcessGroup,
    ];

    /// The modes `ONCE_CONTAINMENT` may name on this platform, strongest first: only these can
    /// be in force here.
    #[cfg(unix)]
    pub(crate) const PLATFORM: &[Containment] = &[
        Containment::PidNamespace,
        Containment::Subreaper,
        Containment::ProcessGroup,
    ];

    /// The modes `ONCE_CONTAINMENT` may name on this platform, strongest first: only these can
    /// be in force here.
    #[cfg(windows)]
    pub(crate) const PLATFORM: &[Containment] = &[Containment::JobObject];

    /// The name used in `ONCE_CONTAINMENT` and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Containment::PidNamespace => "pid-namespace",
            Containment::JobObject => "job-object",
            Containment::Subreaper => "subreaper",
            Containment::ProcessGroup => "process-group",
        }
    }

    /// The mode asked for by `ONCE_CONTAINMENT`, if set; a value that names no mode of this
    /// platform is an error.
    pub fn from_env() -> Result<Option<Containment>, Error> {
        let Some(value) = std::env::var_os(CONTAINMENT_ENV) else {
            return Ok(None);
        };
        Containment::parse(&value.to_string_lossy()).map(Some)
    }

    /// The mode of this platform named `value`.
    fn parse(value: &str) -> Result<Containment, Error> {
        Containment::PLATFORM
            .iter()
            .copied()
            .find(|mode| mode.name() == value)
            .ok_or_else(|| Error::UnknownContainment {
                value: value.to_owned(),
                expected: expected(Containment::PLATFORM),
            })
    }

    /// The mode in force in this process: the strongest the kernel grants, or the weaker one
    /// `ONCE_CONTAINMENT` asks for (an unknown value is ignored here; the binary refuses it).
    pub fn current() -> Containment {
        probe().mode
    }

    /// The probe behind [`current`](Self::current): the mode, and whether a PID namespace needs
    /// a user namespace around it.
    #[cfg(target_os = "linux")]
    pub(crate) fn probed() -> Probe {
        probe()
    }

    /// Kills everything `leader` (a process spawned in this mode, not yet reaped) contains.
    #[cfg(unix)]
    pub fn kill(self, leader: i32) {
        match self {
            // The shim sweeps its descendants with SIGKILL, then exits.
            Containment::Subreaper => send(leader, libc::SIGUSR1),
            // SIGKILL to the namespace's init (in the group) ends the namespace. A job object
            // is never in force on Unix.
            Containment::PidNamespace | Containment::JobObject | Containment::ProcessGroup => {
                send(-leader, libc::SIGKILL)
            }
        }
    }

    /// Kills everything `leader` (a process spawned in this mode, not yet released) contains:
    /// its job is terminated, whatever the mode says, since a job is the only mode here.
    #[cfg(windows)]
    pub fn kill(self, leader: i32) {
        crate::job::terminate(leader);
    }
}

/// The names of `modes` as an error lists them: `a`, `b` or `c`.
fn expected(modes: &[Containment]) -> String {
    let names: Vec<String> = modes
        .iter()
        .map(|mode| format!("`{}`", mode.name()))
        .collect();
    match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
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
#[cfg(unix)]
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
#[cfg(unix)]
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
    #[cfg(all(unix, not(target_os = "linux")))]
    {
        Probe {
            mode: Containment::ProcessGroup,
            user_namespace: false,
        }
    }
    // Nothing to try: every supported Windows (8 and later) nests jobs, and a failed assignment
    // fails the spawn rather than running the command uncontained.
    #[cfg(windows)]
    {
        Probe {
            mode: Containment::JobObject,
            user_namespace: false,
        }
    }
}

#[cfg(unix)]
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
        let back: Containment = serde_json::from_value(serde_json::json!("job-object")).unwrap();
        assert_eq!(back, Containment::JobObject);
    }

    #[test]
    fn only_a_mode_of_this_platform_can_be_asked_for() {
        #[cfg(unix)]
        let (granted, foreign, choices) = (
            Containment::Subreaper,
            Containment::JobObject,
            "`pid-namespace`, `subreaper` or `process-group`",
        );
        #[cfg(windows)]
        let (granted, foreign, choices) = (
            Containment::JobObject,
            Containment::Subreaper,
            "`job-object`",
        );
        assert_eq!(Containment::parse(granted.name()).unwrap(), granted);
        let refused = Containment::parse(foreign.name()).unwrap_err().to_string();
        assert_eq!(
            refused,
            format!(
                "`ONCE_CONTAINMENT` is `{}`; expected {choices}",
                foreign.name()
            )
        );
        assert!(Containment::PLATFORM.contains(&Containment::current()));
    }
}
