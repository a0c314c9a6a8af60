//! `once mcp`: serve the workspace over the Model Context Protocol on stdio, or, with
//! `--attach`, bridge stdio to a live `once serve` session.
//!
//! The order of the first steps matters. Signals are blocked before any thread exists (so the
//! watcher thread alone receives them), then stdout is moved aside (so no thread, library or child
//! can ever write a stray byte into the JSON-RPC stream), and only then does anything else start.

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use anyhow::{Context, Result};
use once_graph::Workspace;
use once_mcp::{Gates, LiveWorkspace, ServeOptions, ServerConfig};

use crate::cli::McpArgs;
use crate::exit::Outcome;
use crate::session::bridge;
use crate::session::registry::Registry;
use crate::{signals, stdout_guard};

pub fn run(workspace: Option<&Path>, args: McpArgs) -> Result<Outcome> {
    if let Some(dir) = args.attach {
        return attach(bridge::requested_dir(dir, workspace).as_deref());
    }
    let options = ServeOptions::default();
    let shutdown = options.shutdown.clone();
    // Every process a tool starts is registered here, so both ways out stop them all.
    let runtime = once_exec::Registry::new();
    let on_signal = runtime.clone();
    // The signal that asked us to stop, 0 for none. Set before the shutdown is cancelled: the
    // serve loop may notice that cancellation and finish first, and the main thread must then
    // leave with the signal's status too, never 0, whichever thread reaches the exit first.
    let stopped_by = Arc::new(AtomicI32::new(0));
    let record_signal = Arc::clone(&stopped_by);
    signals::install(move |signal| {
        tracing::info!("signal {signal}: stopping");
        record_signal.store(signal, Ordering::SeqCst);
        shutdown.cancel();
        on_signal.stop_all(once_exec::DEFAULT_GRACE);
        // The serve loop may be blocked reading stdin, which no thread can interrupt; every
        // process of ours is gone now and every run has recorded its end, so leaving at once
        // is the orderly stop, with the status that names the signal.
        std::process::exit(128 + signal);
    })
    .context("cannot install the signal handlers")?;
    let protocol_out = stdout_guard::take().context("cannot set stdout aside for the protocol")?;

    let root = super::find_root_or_current(workspace)?;
    let gates = Gates {
        allow_edit: args.allow_edit,
        allow_run: args.allow_run,
    };
    // This process owns its evaluators: the agent may reset them.
    let policy = once_mcp::EvalPolicy {
        reset_allowed: true,
    };
    let config = server_config(&root, gates, policy, &runtime)?;

    tracing::info!("serving {} over stdio", root.display());
    // Kept until everything is stopped: its tools hold the registrations of the runs in flight
    // and of the evaluators, which `stop_all` waits for (each run records its end).
    let config = Arc::new(config);
    let served = once_mcp::serve_with(
        Arc::clone(&config),
        io::stdin().lock(),
        protocol_out,
        options,
    );
    // The client is gone (end of input) or the connection broke: no run may outlive it.
    runtime.stop_all(once_exec::DEFAULT_GRACE);
    drop(config);
    match stopped_by.load(Ordering::SeqCst) {
        0 => {}
        signal => return Ok(Outcome::Signal(signal)),
    }
    served.context("the MCP connection failed")?;
    Ok(Outcome::Success)
}

/// `once mcp --attach [DIR]`: bridge stdio to a live session. No signal handlers: the default
/// action ends the bridge, which closes the socket, which ends the session's connection.
fn attach(dir: Option<&Path>) -> Result<Outcome> {
    let protocol_out = stdout_guard::take().context("cannot set stdout aside for the protocol")?;
    let registry = Registry::open()?;
    registry.reap(&registry.lock()?)?;
    let entry = bridge::choose(&registry.live()?, dir)?;
    if entry.version != env!("CARGO_PKG_VERSION") {
        tracing::warn!(
            "the session of `{}` runs once {}, this is {}",
            entry.workspace.display(),
            entry.version,
            env!("CARGO_PKG_VERSION")
        );
    }
    tracing::info!(
        "attaching to pid {} on port {} for {}",
        entry.pid,
        entry.port,
        entry.workspace.display()
    );
    bridge::run(&entry, protocol_out)?;
    Ok(Outcome::Success)
}

/// The server both doors share: stdio (`once mcp`) and the live session (`once serve`) build
/// their catalog, instructions and gates here, so an agent sees the same tools through either.
/// Processes started by the run tools are registered in `runtime`; `eval_policy` says what the
/// evaluator tools may do to evaluators that may be the person's too.
pub fn server_config(
    root: &Path,
    gates: Gates,
    eval_policy: once_mcp::EvalPolicy,
    runtime: &once_exec::Registry,
) -> Result<ServerConfig> {
    Ok(build_server(root, gates, eval_policy, runtime)?.config)
}

/// The server config and the parts of it that the window of `once serve` also reads.
pub struct Built {
    pub config: ServerConfig,
    pub live: Arc<LiveWorkspace>,
    pub evaluators: Arc<once_eval::Evaluators>,
}

/// Builds the server both doors share (see [`server_config`]), keeping hold of its live graph
/// and evaluators.
pub fn build_server(
    root: &Path,
    gates: Gates,
    eval_policy: once_mcp::EvalPolicy,
    runtime: &once_exec::Registry,
) -> Result<Built> {
    let loaded = Workspace::load(root)
        .with_context(|| format!("cannot load the workspace at `{}`", root.display()))?;
    if loaded.has_errors() {
        // The server still starts: the agent sees the diagnostics in once_query_workspace and
        // can fix the manifest, after which the graph reloads by itself.
        super::report_diagnostics(&loaded);
    }
    let live = Arc::new(LiveWorkspace::new(loaded));

    let root_text = root.display().to_string();
    let mut config = ServerConfig::new(env!("CARGO_PKG_VERSION"));
    config.instructions = once_mcp::instructions(&root_text, gates);
    config.workspace_root = Some(root_text);
    config.gates = gates;
    let overview: once_mcp::Overview = Arc::new(crate::overview::workspace_overview);
    // Owned by the config, so they live as long as the server (in `once serve`, the session):
    // an agent that reconnects finds its evaluators, and their variables, where it left them.
    let evaluators =
        Arc::new(once_eval::Evaluators::new(runtime).context("cannot set up the evaluators")?);
    config.tools = once_mcp::catalog(&live, overview, runtime, &evaluators, eval_policy);
    let refresh = Arc::clone(&live);
    config.before_request = Some(Arc::new(move || refresh.refresh()));
    Ok(Built {
        config,
        live,
        evaluators,
    })
}
