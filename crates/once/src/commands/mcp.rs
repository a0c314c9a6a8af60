//! `once mcp`: serve the workspace over the Model Context Protocol on stdio, or, with
//! `--attach`, bridge stdio to a live `once serve` session.
//!
//! The order of the first steps matters. Signals are blocked before any thread exists (so the
//! watcher thread alone receives them), then stdout is moved aside (so no thread, library or child
//! can ever write a stray byte into the JSON-RPC stream), and only then does anything else start.

use std::io;
use std::path::Path;
use std::sync::Arc;

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
    signals::install(move |signal| {
        tracing::info!("signal {signal}: stopping");
        shutdown.cancel();
        // The serve loop may be blocked reading stdin, which no thread can interrupt; nothing
        // of ours runs in the background yet, so leaving at once is the orderly stop.
        std::process::exit(0);
    })
    .context("cannot install the signal handlers")?;
    let protocol_out = stdout_guard::take().context("cannot set stdout aside for the protocol")?;

    let root = super::find_root(workspace)?;
    let gates = Gates {
        allow_edit: args.allow_edit,
        allow_run: args.allow_run,
    };
    let config = server_config(&root, gates)?;

    tracing::info!("serving {} over stdio", root.display());
    once_mcp::serve_with(Arc::new(config), io::stdin().lock(), protocol_out, options)
        .context("the MCP connection failed")?;
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
pub fn server_config(root: &Path, gates: Gates) -> Result<ServerConfig> {
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
    config.tools = once_mcp::query_tools(&live, overview);
    config.tools.extend(once_mcp::memory_tools(&live));
    let refresh = Arc::clone(&live);
    config.before_request = Some(Arc::new(move || refresh.refresh()));
    Ok(config)
}
