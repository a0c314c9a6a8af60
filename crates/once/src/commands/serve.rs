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
use crate::session::{Session, Stopper, WindowSources};
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
    let built = super::mcp::build_server(&root, gates, &runtime)?;
    let mut config = built.config;
    // The window mode's own tools: they point the person's page at things.
    let hub = Arc::new(once_web::Hub::default());
    config
        .tools
        .extend(once_web::window_tools(&root, &built.live, &hub));
    let evaluators = Arc::clone(&built.evaluators);
    let window = WindowSources {
        live: built.live,
        evaluators: Arc::new(move || evaluator_transcripts(&evaluators)),
        hub,
    };
    let registry = Registry::open()?;
    let session = {
        let mut slot = stopper.lock().unwrap_or_else(PoisonError::into_inner);
        let session = Session::start(&registry, &root, Arc::new(config), runtime, window)?;
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
    eprintln!(
        "once serve: MCP clients connect to http://127.0.0.1:{}/mcp with `Authorization: Bearer` \
         and the entry's `token`, or through `once mcp --attach`",
        session.port()
    );
    let url = session.login_url()?;
    eprintln!("once serve: open the window at {url} (the link works once)");
    if args.open {
        open_browser(&url);
    }
    session.serve()?;
    Ok(Outcome::Success)
}

/// The evaluators' transcripts, as the window shows them.
fn evaluator_transcripts(evaluators: &once_eval::Evaluators) -> serde_json::Value {
    let _ = evaluators;
    serde_json::Value::Array(Vec::new())
}

/// Opens `url` in the person's browser (`xdg-open`, or `open` on macOS), without waiting for it;
/// a missing opener only costs a warning, since the link is printed anyway.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let started = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match started {
        // Reaped by a thread of its own, so no zombie is left while the session runs.
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
        }
        Err(error) => {
            eprintln!("once serve: cannot start `{opener}` ({error}); open the link above by hand")
        }
    }
}
