//! Exit codes and how a command's outcome maps to them. The codes are part of the CLI's contract:
//! scripts and agents branch on them, so they change only with a major version.

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
}

impl From<Outcome> for ExitCode {
    fn from(outcome: Outcome) -> Self {
        match outcome {
            Outcome::Success => ExitCode::SUCCESS,
            Outcome::Failure => ExitCode::from(1),
            Outcome::Invalid => ExitCode::from(2),
        }
    }
}
