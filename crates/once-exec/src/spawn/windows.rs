//! Starting `sh -c COMMAND` on Windows, with the environment its mode gives it, inside a job of
//! its own (see `job.rs`): the command runs only once it is in the job.
//!
//! The shell is the POSIX `sh` found on `PATH` (Git for Windows' or MSYS2's), so a command line
//! means the same on every platform and so do its cache keys. Its arguments reach it through the
//! Windows command line, quoted by std's rules, which MSYS2 programs parse back. This module must
//! never start a command outside a job.

use std::process::{Command, Stdio};
use std::sync::mpsc::Sender;

use super::{SpawnError, Spawned, watch};
use crate::contain::Containment;
use crate::env::command_env;
use crate::job;
use crate::spec::CommandSpec;
use crate::wake::Wake;

/// The shell, looked up on the command's `PATH`: Windows has no `/bin/sh`.
const SHELL: &str = "sh";

/// Spawns the command, and its waiter; when this returns `Ok`, it runs inside its job, whose table
/// key is its pid.
pub(crate) fn spawn(spec: &CommandSpec, waker: Sender<Wake>) -> Result<Spawned, SpawnError> {
    // The mode is decided once per process, as on Unix; here it is always a job.
    Containment::current();
    let mut command = Command::new(SHELL);
    command
        .arg("-c")
        .arg(&spec.command)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(command_env(&spec.env_mode, &spec.env))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    watch(
        job::spawn(&mut command).map_err(SpawnError::Command)?,
        waker,
    )
}
