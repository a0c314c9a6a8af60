//! `once run`: plan the request, run it under a registry that the signal thread can stop, show
//! progress, and turn the report into an exit status.
//!
//! Signals are blocked before any thread starts. On SIGINT, SIGTERM or SIGHUP the watcher calls
//! `Registry::stop_all`, which returns only when every process group we started is gone; the
//! run then ends as interrupted, its report is written, and we exit with 128 + the signal. This
//! module must never print a child's output: that is in the logs, and only a failure's tail
//! is shown.

use std::collections::BTreeMap;
use std::io::{self, IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use once_exec::{Cancel, Registry};
use once_run::{ActionStatus, Event, Options, Plan, Request, RunReport, RunStatus, RunStore};

use crate::cli::RunArgs;
use crate::exit::Outcome;
use crate::{output, signals};

/// How long after a stop signal we wait for the run to write its report before leaving anyway.
const REPORT_WAIT: Duration = Duration::from_secs(10);

pub fn run(workspace: Option<&Path>, args: RunArgs) -> Result<Outcome> {
    let registry = Registry::new();
    let finished = Cancel::new();
    let signalled = Arc::new(AtomicI32::new(0));
    {
        let registry = registry.clone();
        let finished = finished.clone();
        let signalled = Arc::clone(&signalled);
        signals::install(move |signal| {
            signalled.store(signal, Ordering::SeqCst);
            tracing::info!("signal {signal}: stopping every process");
            registry.stop_all(once_exec::DEFAULT_GRACE);
            // Every group is gone now; give the run a moment to write its report and print.
            if !finished.wait_timeout(REPORT_WAIT) {
                std::process::exit(128 + signal);
            }
        })
        .context("cannot install the signal handlers")?;
    }

    let workspace = super::load(workspace)?;
    if workspace.has_errors() {
        super::report_diagnostics(&workspace);
        return Ok(Outcome::Invalid);
    }
    let mut request = match request(&args) {
        Ok(request) => request,
        Err(message) => {
            eprintln!("error: {message}");
            return Ok(Outcome::Invalid);
        }
    };
    if let Some(values) = &args.affected {
        let (since, capability) = match values.as_slice() {
            [capability] => ("HEAD", capability),
            [since, capability, ..] => (since.as_str(), capability),
            [] => unreachable!("clap asks for one or two values"),
        };
        let targets = match super::affected::targets(&workspace, since, capability) {
            Ok(targets) => targets,
            Err(refusal) => return Ok(refusal.report()),
        };
        if targets.is_empty() && request.actions.is_empty() {
            eprintln!(
                "nothing to run: the changes since `{since}` affect no `{capability}` action"
            );
            return Ok(Outcome::Success);
        }
        eprintln!(
            "affected since `{since}`: {} target(s) with `{capability}`",
            targets.len()
        );
        request
            .actions
            .extend(targets.into_iter().map(|t| format!("{t}:{capability}")));
    }
    let plan = match once_run::plan(&workspace, &request) {
        Ok(plan) => plan,
        Err(error) if error.is_bad_request() => {
            eprintln!("error: {error}");
            return Ok(Outcome::Invalid);
        }
        Err(error) => return Err(error.into()),
    };
    let mut options = Options {
        keep_going: args.keep_going,
        force: args.force,
        ..Options::default()
    };
    if let Some(jobs) = args.jobs {
        options.jobs = jobs.max(1);
    }
    let run = RunStore::new(workspace.root())
        .create()
        .context("cannot create the run's folder under `.once/runs`")?;
    let cache = once_run::Cache::new(workspace.root());
    let mut display = Display::new(&plan, io::stderr().is_terminal());
    let report = once_run::execute(
        &plan,
        &cache,
        &run,
        &registry,
        &Cancel::new(),
        &options,
        &mut |event| display.show(event),
    );
    display.clear();
    summarise(&report);
    if args.json {
        // The bounded summary, as MCP returns it; `run.json` lists every action.
        output::json(&report.summary()).context("cannot print the report")?;
    }
    finished.cancel();
    let signal = signalled.load(Ordering::SeqCst);
    Ok(if signal != 0 {
        Outcome::Signal(signal)
    } else if report.status == RunStatus::Succeeded {
        Outcome::Success
    } else {
        Outcome::Failure
    })
}

fn request(args: &RunArgs) -> Result<Request, String> {
    let mut params = BTreeMap::new();
    for text in &args.params {
        let (name, value) = once_run::parse_param(text).map_err(|e| e.to_string())?;
        params.insert(name, value);
    }
    let deadline = args
        .deadline
        .as_deref()
        .map(|text| {
            once_graph::duration::parse_duration(text)
                .map_err(|e| format!("invalid `--deadline {text}`: {e}"))
        })
        .transpose()?;
    Ok(Request {
        actions: args.actions.clone(),
        all: args.all.clone(),
        params,
        deadline,
    })
}

/// Progress on stderr: redrawn in place on a terminal, one plain line per finished action
/// otherwise.
struct Display {
    live: bool,
    total: usize,
    running: Vec<String>,
    done: usize,
    cached: usize,
    failed: usize,
}

impl Display {
    fn new(plan: &Plan, live: bool) -> Display {
        Display {
            live,
            total: plan.steps.len(),
            running: Vec::new(),
            done: 0,
            cached: 0,
            failed: 0,
        }
    }

    fn show(&mut self, event: Event<'_>) {
        let mut err = io::stderr().lock();
        match event {
            Event::Started { action } => self.running.push(action.to_owned()),
            Event::Finished {
                action,
                status,
                cached,
                done,
                ..
            } => {
                self.running.retain(|a| a != action);
                self.done = done;
                self.cached += usize::from(cached);
                self.failed += usize::from(status.is_failure());
                let word = match (status, cached) {
                    (ActionStatus::Succeeded, true) => "cached",
                    (ActionStatus::Succeeded, false) => "ok",
                    (ActionStatus::Failed, _) => "FAILED",
                    (ActionStatus::TimedOut, _) => "TIMED OUT",
                    (ActionStatus::Cancelled, _) => "cancelled",
                    (ActionStatus::Interrupted, _) => "interrupted",
                    (ActionStatus::Skipped, _) => "skipped",
                    // Never the status of an action that ended.
                    (ActionStatus::Pending | ActionStatus::Running, _) => "ended",
                };
                // On a terminal only what matters stays on screen; elsewhere every line does.
                if !self.live || status.is_failure() {
                    // One write per line: stderr is unbuffered, and a run may have thousands.
                    let clear = if self.live { "\r\x1b[K" } else { "" };
                    let _ = err.write_all(format!("{clear}{word:>9} {action}\n").as_bytes());
                }
            }
        }
        if self.live {
            let mut names = self.running.join(", ");
            if names.len() > 60 {
                let mut cut = 57;
                while !names.is_char_boundary(cut) {
                    cut -= 1;
                }
                names.truncate(cut);
                names.push_str("...");
            }
            let line = format!(
                "\r\x1b[K[{}/{}] {} running, {} cached, {} failed  {}",
                self.done,
                self.total,
                self.running.len(),
                self.cached,
                self.failed,
                names
            );
            let _ = err.write_all(line.as_bytes());
        }
        let _ = err.flush();
    }

    fn clear(&self) {
        if self.live {
            let _ = write!(io::stderr(), "\r\x1b[K");
        }
    }
}

/// The end of a run on stderr: each failure's tail and log, then one summary line.
fn summarise(report: &RunReport) {
    let mut err = io::stderr().lock();
    for action in &report.actions {
        if let Some(tail) = &action.tail {
            let _ = writeln!(err, "--- {} ({}) ---", action.action, word(&action.status));
            for line in tail {
                let _ = writeln!(err, "  {line}");
            }
            if let Some(log) = &action.log {
                let _ = writeln!(err, "  full log: {}", log.display());
            }
        }
    }
    let counts = &report.counts;
    let status = word(&report.status);
    let _ = writeln!(
        err,
        "{status}: {} actions ({} ran, {} cached, {} failed, {} skipped) in {:.2}s, run {}",
        counts.total,
        counts.ran,
        counts.cached,
        counts.failed,
        counts.skipped,
        report.duration_ms as f64 / 1000.0,
        report.run_id
    );
}

/// A status as the JSON spells it.
fn word(status: &impl serde::Serialize) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}
