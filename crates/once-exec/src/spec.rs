//! What to run: the command line, where, with which declared variables, for how long, and where
//! its output goes.
//!
//! A spec is plain data that a scheduler fills from a capability; it must never hold processes,
//! files or any other live resource, so it can be cloned, logged and hashed freely.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::env::EnvMode;

/// The deadline of a spec built by [`CommandSpec::new`]; generous, because every run must have one.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(30 * 60);

/// How long a group may take to exit after SIGTERM before it gets SIGKILL.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(2);

/// How many lines of output an [`Outcome`](crate::Outcome) keeps in memory.
pub const DEFAULT_TAIL_LINES: usize = 40;

/// One command to run under `sh -c`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    /// The command line, run as `sh -c COMMAND`.
    pub command: String,
    /// The working directory; a missing one gives [`Status::FailedToStart`](crate::Status).
    pub cwd: PathBuf,
    /// Declared variables, set on top of what [`CommandSpec::env_mode`] passes.
    pub env: BTreeMap<String, String>,
    /// What of `once`'s own environment the command sees.
    pub env_mode: EnvMode,
    /// Time from spawn after which the group gets SIGTERM.
    pub deadline: Duration,
    /// Time between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// The log file: its parent directories are created before the command starts, and the file
    /// itself (or emptied) with the command's first output. No file means no output.
    pub log_path: PathBuf,
    /// How many last lines of output to keep in [`Outcome::tail`](crate::Outcome).
    pub tail_lines: usize,
    /// A name for traces, usually `target:capability`.
    pub label: String,
}

impl CommandSpec {
    /// A spec with the default deadline, grace and tail, the caller's whole environment, no
    /// declared variables and no label.
    pub fn new(
        command: impl Into<String>,
        cwd: impl Into<PathBuf>,
        log_path: impl Into<PathBuf>,
    ) -> Self {
        CommandSpec {
            command: command.into(),
            cwd: cwd.into(),
            env: BTreeMap::new(),
            env_mode: EnvMode::Loose,
            deadline: DEFAULT_DEADLINE,
            grace: DEFAULT_GRACE,
            log_path: log_path.into(),
            tail_lines: DEFAULT_TAIL_LINES,
            label: String::new(),
        }
    }
}
