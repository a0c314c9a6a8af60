//! Fault injection for the tests of `apply`, and nothing else.
//!
//! An apply passes named points (`stage:N` before staging the N-th file, `commit` right after the
//! journal's commit point, `rename:N` after the N-th file was put in place). A test names one
//! point and what happens there: `fail` (the step returns an error, as a full disk would) or
//! `kill` (the process sends itself SIGKILL, so nothing is cleaned up, exactly as if it were
//! killed from outside at that instant).
//!
//! Integration tests reach it through the environment variable [`FAULT_ENV`]
//! (`ONCE_CHANGES_FAULT=rename:1:kill`), which only debug builds read: it is a test-only hook,
//! and a release binary ignores it. Must never be reachable any other way.

use std::io;

/// The environment variable a debug build reads its fault from: `POINT:fail` or `POINT:kill`.
pub const FAULT_ENV: &str = "ONCE_CHANGES_FAULT";

/// One injected fault; [`Fault::none`] in production.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fault {
    point: Option<String>,
    kill: bool,
}

impl Fault {
    /// No fault.
    pub fn none() -> Fault {
        Fault::default()
    }

    /// Fail with an error at `point`.
    pub fn fail_at(point: &str) -> Fault {
        Fault {
            point: Some(point.to_string()),
            kill: false,
        }
    }

    /// The fault named by [`FAULT_ENV`] in a debug build; none in a release build.
    pub fn from_env() -> Fault {
        if !cfg!(debug_assertions) {
            return Fault::none();
        }
        let Ok(spec) = std::env::var(FAULT_ENV) else {
            return Fault::none();
        };
        match spec.rsplit_once(':') {
            Some((point, "kill")) => Fault {
                point: Some(point.to_string()),
                kill: true,
            },
            Some((point, "fail")) => Fault::fail_at(point),
            _ => Fault::none(),
        }
    }

    /// Passes the point `name`: fails or dies there if this fault names it.
    pub(crate) fn at(&self, name: &str) -> io::Result<()> {
        if self.point.as_deref() != Some(name) {
            return Ok(());
        }
        if self.kill {
            // SAFETY: sending a signal to ourselves has no memory effects.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
        }
        Err(io::Error::other(format!("injected fault at `{name}`")))
    }
}
