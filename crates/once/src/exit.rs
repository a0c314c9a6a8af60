//! Exit codes and how a command's outcome maps to them. The codes are part of the CLI's contract:
//! scripts and agents branch on them, so they change only with a major version.

use std::fmt;
use std::process::ExitCode;

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The command did what was asked.
    Success,
    /// The command ran but the answer is a failure (no such target, a failed run, …): exit 1.
    Failure,
    /// A manifest is invalid or the command line was wrong: exit 2.
    Invalid,
    /// A signal stopped the command (after everything it started was stopped): exit 128 + N.
    Signal(i32),
}

/// A wrong command line that only a command can see (a value clap cannot check, such as an
/// unknown memory kind): returned as an error, it is reported like any other, with exit 2.
#[derive(Debug)]
pub struct Usage(pub String);

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

impl From<Outcome> for ExitCode {
    fn from(outcome: Outcome) -> Self {
        match outcome {
            Outcome::Success => ExitCode::SUCCESS,
            Outcome::Failure => ExitCode::from(1),
            Outcome::Invalid => ExitCode::from(2),
            Outcome::Signal(signal) => ExitCode::from(u8::try_from(128 + signal).unwrap_or(1)),
        }
    }
}
