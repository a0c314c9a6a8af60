//! The one error type of the crate.
//!
//! An error means `once` could not do its part (open the log, start a thread, wait for a child);
//! what the command itself did, including failing to start, is an [`Outcome`](crate::Outcome),
//! never an error. Every variant carries what a person needs to act on it.

use std::io;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// [`Registry::stop_all`](crate::Registry::stop_all) was called: nothing new may start.
    #[error("once is shutting down: no new process may start")]
    ShuttingDown,
    /// `ONCE_CONTAINMENT` names no containment of this platform.
    #[error("`ONCE_CONTAINMENT` is `{value}`; expected {expected}")]
    UnknownContainment {
        value: String,
        /// This platform's choices, as a sentence lists them.
        expected: String,
    },
    /// The log file's folder could not be created.
    #[error("cannot create the folder of the log file `{path}`: {source}")]
    Log { path: PathBuf, source: io::Error },
    /// A helper thread (capture or waiter) could not be started; the group has been killed.
    #[error("cannot start a {role} thread for `{label}`: {source}")]
    Thread {
        role: &'static str,
        label: String,
        source: io::Error,
    },
    /// Waiting for the leader failed, which means someone else reaped it; the group has been killed.
    #[error("cannot wait for process {pid} of `{label}`: {source}")]
    Wait {
        pid: i32,
        label: String,
        source: io::Error,
    },
}
