//! Fault injection for the tests of `apply` and recovery, and nothing else.
//!
//! An apply passes named points, in order: `journal` (before the journal is first written),
//! `stage:N` (before staging the N-th file), `commit` (right after the journal's commit point),
//! `rename:N` (after the N-th step was put in place), `decided` (after `applied` was recorded,
//! before the journal is removed). Rolling back passes `unstage:N` (before removing the N-th
//! staging file). A test names one or more points, each with what happens there: `fail` (the step
//! returns an error, as a full disk would) or `kill` (the process sends itself SIGKILL, so nothing
//! is cleaned up, exactly as if it were killed from outside at that instant; on Windows it
//! aborts, which runs no destructor either). A fault given to a
//! recovery too stands for a failure that does not go away.
//!
//! Integration tests reach it through the environment variable [`FAULT_ENV`]
//! (`ONCE_CHANGES_FAULT=rename:1:kill`, or several separated by commas:
//! `stage:2:fail,unstage:1:fail`), which only debug builds read: it is a test-only hook, and a
//! release binary ignores it. Must never be reachable any other way.

use std::io;

/// The environment variable a debug build reads its faults from: `POINT:fail` or `POINT:kill`,
/// separated by commas.
pub const FAULT_ENV: &str = "ONCE_CHANGES_FAULT";

/// Injected faults; [`Fault::none`] in production.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fault {
    /// Each point, and whether it kills (else it fails).
    points: Vec<(String, bool)>,
}

impl Fault {
    /// No fault.
    pub fn none() -> Fault {
        Fault::default()
    }

    /// Fail with an error at `point`.
    pub fn fail_at(point: &str) -> Fault {
        Fault {
            points: vec![(point.to_string(), false)],
        }
    }

    /// This fault, and a failure at `point` too.
    pub fn and_fail_at(mut self, point: &str) -> Fault {
        self.points.push((point.to_string(), false));
        self
    }

    /// The faults named by [`FAULT_ENV`] in a debug build; none in a release build.
    pub fn from_env() -> Fault {
        if !cfg!(debug_assertions) {
            return Fault::none();
        }
        let Ok(spec) = std::env::var(FAULT_ENV) else {
            return Fault::none();
        };
        let points = spec
            .split(',')
            .filter_map(|one| match one.trim().rsplit_once(':') {
                Some((point, "kill")) => Some((point.to_string(), true)),
                Some((point, "fail")) => Some((point.to_string(), false)),
                _ => None,
            })
            .collect();
        Fault { points }
    }

    /// Passes the point `name`: fails or dies there if this fault names it.
    pub(crate) fn at(&self, name: &str) -> io::Result<()> {
        let Some((_, kill)) = self.points.iter().find(|(point, _)| point == name) else {
            return Ok(());
        };
        if *kill {
            die();
        }
        Err(io::Error::other(format!("injected fault at `{name}`")))
    }
}

/// Ends the process at once, with nothing cleaned up.
#[cfg(unix)]
fn die() {
    // SAFETY: sending a signal to ourselves has no memory effects.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
}

/// Ends the process at once, with nothing cleaned up: no destructor runs and no buffer is
/// flushed, as with a kill from outside.
#[cfg(windows)]
fn die() {
    std::process::abort();
}
