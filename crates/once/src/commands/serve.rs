//! `once serve`: start the live session of a workspace and serve it until stopped.
//!
//! The order of the first steps matters, as in `once mcp`: signals are blocked before any thread
//! exists, so the signal thread alone receives them; it removes the session's entry and stops
//! every run before the process exits. This module wires; it must never hold protocol or
//! registry logic of its own (that lives in `crate::session`).

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context, Result};
use once_mcp::Gates;

use crate::cli::ServeArgs;
use crate::exit::Outcome;
use crate::session::registry::Registry;
use crate::session::{Session, Stopper};
use crate::signals;

pub fn run(workspace: Option<&Path>, args: ServeArgs) -> Result<Outcome> {
    if args.status {
        return super::sessions::run(args.json);
    }
    // Held by the main thread while the session starts, so a signal that arrives between
    // publishing the entry and handing over the stopper still removes the entry.
    let stopper: Arc<Mutex<Option<Stopper>>> = Arc::new(Mutex::new(None));
    let on_signal = Arc::clone(&stopper);
    signals::install(move |signal| {
        tracing::info!("signal {signal}: stopping");
        let stopper = on_signal.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(stopper) = stopper.as_ref() {
            stopper.stop();
        }
        // The accept loop and the client's connection are blocked in calls no thread can
        // interrupt; the entry is gone and every run is stopped and recorded, so leaving now is
        // orderly, with the status that names the signal.
        std::process::exit(128 + signal);
    })
    .context("cannot install the signal handlers")?;

    let root = super::find_root_or_current(workspace)?;
    let gates = Gates {
        allow_edit: args.allow_edit,
        allow_run: args.allow_run,
    };
    let runtime = once_exec::Registry::new();
    // The session's evaluators are the person's too: the agent resets one only if allowed.
    let policy = once_mcp::EvalPolicy {
        reset_allowed: args.allow_eval_reset,
    };
    let config = super::mcp::server_config(&root, gates, policy, &runtime)?;
    let registry = Registry::open()?;
    let session = {
        let mut slot = stopper.lock().unwrap_or_else(PoisonError::into_inner);
        let session = Session::start(&registry, &root, Arc::new(config), runtime)?;
        *slot = Some(session.stopper());
        session
    };
    // The one line a script (or a test) waits for: the port is bound and the entry published.
    eprintln!(
        "once serve: listening on 127.0.0.1:{} for `{}` (entry `{}`)",
        session.port(),
        root.display(),
        session.entry_path().display()
    );
    session.serve()?;
    Ok(Outcome::Success)
}
