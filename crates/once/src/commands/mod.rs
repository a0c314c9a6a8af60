//! Resolving a parsed command line against the workspace and running it. Each subcommand lives in
//! its own module; this one finds the workspace, sets up logging, and reports errors.

mod affected;
mod cache;
mod changes;
mod check;
mod completions;
mod dry_run;
mod eval;
mod examples;
mod init;
mod key;
mod mcp;
mod memory;
mod query;
mod reference;
mod run;
mod serve;
mod sessions;
mod tools;
mod worker;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use once_graph::{SafeDirectories, Workspace};

use crate::cli::{Cli, Command};
use crate::exit::{Outcome, Usage};
use crate::wording;

/// Runs one command and reports any error on stderr.
pub fn run(cli: Cli) -> Outcome {
    init_logging();
    let result = match cli.command {
        Command::Completions { shell } => completions::run(shell),
        Command::Check { json } => check::run(cli.workspace.as_deref(), json),
        Command::Init { json } => init::run(cli.workspace.as_deref(), json),
        Command::Query(query) => query::run(cli.workspace.as_deref(), query),
        Command::Mcp(args) => mcp::run(cli.workspace.as_deref(), args),
        Command::Cache(command) => cache::run(cli.workspace.as_deref(), command),
        Command::Memory(command) => memory::run(cli.workspace.as_deref(), command),
        Command::Examples(command) => examples::list_or_show(command),
        Command::Materialize(args) => examples::materialize(cli.workspace.as_deref(), args),
        Command::Changes(command) => changes::run(cli.workspace.as_deref(), command),
        Command::Run(args) => run::run(cli.workspace.as_deref(), args),
        Command::Eval(args) => eval::run(cli.workspace.as_deref(), args),
        Command::Serve(args) => serve::run(cli.workspace.as_deref(), args),
        Command::Worker(args) => worker::run(args),
        Command::Sessions { json, url: false } => sessions::run(json),
        Command::Sessions { json, url: true } => {
            sessions::login_url(cli.workspace.as_deref(), json)
        }
    };
    match result {
        Ok(outcome) => outcome,
        // The reader of our stdout went away (`once … | head`): nothing to say to anyone, and
        // the exit a program killed by SIGPIPE would have (never 0: a run's failure must not
        // turn into a success because its report could not be written).
        Err(error) if is_broken_pipe(&error) => Outcome::Signal(SIGPIPE),
        Err(error) => {
            eprintln!("error: {}", wording::for_cli(&format!("{error:#}")));
            if error.chain().any(|cause| cause.is::<Usage>()) {
                Outcome::Invalid
            } else {
                Outcome::Failure
            }
        }
    }
}

/// The number of SIGPIPE, the same on every platform `once` builds for (Windows has no signals,
/// and the exit code is all that is left of it there).
const SIGPIPE: i32 = 13;

/// Whether `error` came from writing to a pipe whose reader is gone.
fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Logs go to stderr only, at the level `ONCE_LOG` names (default `warn`), coloured as
/// [`crate::colour`] decides for stderr: a pipe or a log file gets plain text unless forced.
fn init_logging() {
    let level = std::env::var("ONCE_LOG")
        .ok()
        .and_then(|value| value.parse::<tracing::Level>().ok())
        .unwrap_or(tracing::Level::WARN);
    let colour = crate::colour::enabled(&std::io::stderr());
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .with_target(false)
        .with_ansi(colour)
        .init();
}

/// The workspace root: `--workspace DIR` when given (the person's own choice, trusted as it is),
/// else the nearest folder upwards from the current one that holds `once.toml`, else the outermost
/// one holding an ecosystem's manifest, never above the repository's top, and outside any
/// repository never one that another user owns unless `ONCE_SAFE_DIRECTORIES` names it.
pub fn find_root(workspace: Option<&Path>) -> Result<PathBuf> {
    match workspace {
        Some(dir) => {
            let root = dir
                .canonicalize()
                .with_context(|| format!("cannot open workspace folder `{}`", dir.display()))?;
            if !root.is_dir() {
                anyhow::bail!(
                    "`{}` is not a folder; point `--workspace` at the workspace's root folder",
                    root.display()
                );
            }
            Ok(root)
        }
        None => {
            let cwd = std::env::current_dir().context("cannot read the current folder")?;
            Ok(Workspace::discover(&cwd, &SafeDirectories::from_env())?)
        }
    }
}

/// The workspace root as [`find_root`] finds it, or the current folder when there is none: a
/// server must start (and say what it sees) in any folder an agent is configured to open.
pub fn find_root_or_current(workspace: Option<&Path>) -> Result<PathBuf> {
    match find_root(workspace) {
        Ok(root) => Ok(root),
        Err(e) if workspace.is_none() => {
            let cwd = std::env::current_dir().context("cannot read the current folder")?;
            tracing::warn!("{e:#}; serving `{}` as an empty workspace", cwd.display());
            Ok(cwd.canonicalize().unwrap_or(cwd))
        }
        Err(e) => Err(e),
    }
}

/// Loads the workspace and prints its diagnostics (errors and warnings) to stderr.
pub fn load(workspace: Option<&Path>) -> Result<Workspace> {
    let root = find_root(workspace)?;
    let loaded = Workspace::load(&root)
        .with_context(|| format!("cannot load the workspace at `{}`", root.display()))?;
    Ok(loaded)
}

/// Prints every diagnostic to stderr followed by a one-line summary.
pub fn report_diagnostics(workspace: &Workspace) {
    let diagnostics = workspace.diagnostics();
    for diagnostic in diagnostics {
        eprintln!("{diagnostic}");
    }
    if let Some(summary) = check::summary(workspace) {
        eprintln!("{summary}");
    }
}
