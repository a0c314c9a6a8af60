//! The one error type of the crate.
//!
//! An error means `once` could not give the code an evaluator at all (it cannot start, it never
//! became ready, another call holds it, `once` is shutting down), or there was no code to give. What happened to the code itself, including an
//! exception, a deadline or a crash mid-evaluation, is an [`Evaluation`](crate::Evaluation),
//! never an error. Every variant carries what a person needs to act on it.

use std::io;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The runtime registry was stopped: no evaluator may start.
    #[error("once is shutting down: no evaluator may start")]
    ShuttingDown,
    /// Another call is evaluating on this target's evaluator; nothing ran. Answered at once:
    /// a caller never waits silently behind another.
    #[error(
        "the evaluator of `{target}` is {} (started {seconds} s ago)",
        if *stopping { "stopping another call, which was interrupted" } else { "evaluating another call" }
    )]
    Busy {
        target: String,
        seconds: u64,
        /// The holding call was interrupted and is ending.
        stopping: bool,
    },
    /// The code is empty or only whitespace; nothing ran and no evaluator was started.
    #[error("nothing to evaluate: the code for `{target}` is empty")]
    Empty { target: String },
    /// The runtime could not be spawned at all (no interpreter, no such folder).
    #[error("cannot start the {language} evaluator of `{target}` (`{command}`): {source}")]
    Spawn {
        target: String,
        language: &'static str,
        command: String,
        source: io::Error,
    },
    /// The runtime started but did not answer a trivial evaluation.
    #[error("the {language} evaluator of `{target}` did not become ready: {reason}")]
    NotReady {
        target: String,
        language: &'static str,
        reason: String,
    },
    /// The runtime was not ready within its start timeout; it has been killed.
    #[error(
        "the {language} evaluator of `{target}` was not ready within {timeout:?}; it was killed"
    )]
    StartTimeout {
        target: String,
        language: &'static str,
        timeout: Duration,
    },
    /// No nREPL server could be found or reached.
    #[error("no nREPL server for `{target}`: {reason}")]
    Nrepl { target: String, reason: String },
    /// A helper thread could not be started.
    #[error("cannot start a {role} thread: {source}")]
    Thread {
        role: &'static str,
        source: io::Error,
    },
}
