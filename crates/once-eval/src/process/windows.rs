//! Starting an adapter on Windows: in a job of its own (`once_exec::spawn_contained`), with a
//! loopback connection for its channel, since a child cannot inherit descriptor 3 (see
//! `loopback.rs`).
//!
//! The adapter is run by the POSIX `sh` on `PATH`, as commands are, so an evaluator's `command`
//! means the same words on every platform. This module must never return an adapter whose
//! channel is not proven, nor leave one running when its start fails.

use std::io;
use std::net::TcpStream;
use std::os::windows::io::AsRawHandle;
use std::process::{Child, Command, ExitStatus};

use windows_sys::Win32::Foundation::WAIT_OBJECT_0;
use windows_sys::Win32::System::Threading::WaitForSingleObject;

use crate::launcher::Launcher;
use crate::loopback::{CHANNEL_ENV, Loopback};
use crate::spec::EvaluatorSpec;

/// The private channel of the protocol.
pub(super) type Channel = TcpStream;

/// The shell, looked up on `PATH`: Windows has no `/bin/sh`.
pub(super) const SHELL: &str = "sh";

/// How long a failed start waits for the adapter's job to empty.
const GONE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Spawns `command` into a job and waits, within the spec's start timeout, for its connection.
pub(super) fn start(
    launcher: &Launcher,
    mut command: Command,
    spec: &EvaluatorSpec,
) -> io::Result<(Child, Channel)> {
    let loopback = Loopback::bind()?;
    command.env(CHANNEL_ENV, loopback.env_value()?);
    let mut child = launcher.spawn(command)?;
    let accepted = loopback.accept(spec.start_timeout, || !has_exited(&child));
    match accepted {
        Ok(channel) => Ok((child, channel)),
        Err(error) => {
            let pid = child.id() as i32;
            once_exec::Containment::current().kill(pid);
            let _ = child.wait();
            once_exec::wait_group_gone(pid, GONE_WAIT);
            Err(error)
        }
    }
}

/// Whether `child` has exited; a process handle stays signalled once it has.
pub(super) fn has_exited(child: &Child) -> bool {
    // SAFETY: `child` owns a live process handle; a zero timeout only polls it.
    unsafe { WaitForSingleObject(child.as_raw_handle(), 0) == WAIT_OBJECT_0 }
}

/// Windows processes end with an exit code, never a signal.
pub(super) fn describe_signal(_status: ExitStatus) -> Option<String> {
    None
}
