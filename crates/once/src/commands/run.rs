//! `once run`: plan the request, run it under a registry that the signal thread can stop, show
//! progress and the commands' output (through [`crate::live`]), and turn the report into an exit
//! status. Before loading anything it asks whether a no-op proof answers the request
//! (`once_run::proof`), and replays it when one does; a run that was a no-op leaves one.
//!
//! Signals are blocked before any thread starts. On SIGINT, SIGTERM or SIGHUP the watcher calls
//! `Registry::stop_all`, which returns only when every process group we started is gone; the
//! run then ends as interrupted, its report is written, and we exit with 128 + the signal. This
//! module must never print a child's output itself nor write to stderr from the scheduler's
//! observer: the live view reads the logs on its own thread.

use std::collections::BTreeMap;
use std::io::{self, IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use once_exec::{Cancel, Registry};
use once_run::{Event, Options, Request, RunDir, RunReport, RunStatus, RunStore, Witness};

use crate::cli::RunArgs;
use crate::exit::Outcome;
use crate::live::{Live, OutputLogs};
use crate::{output, render, signals};

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

    // A request a proof can answer: one that only looks (never `--force`), whose answer the
    // files decide (never `--affected`, which asks git), and that prints a run's report.
    let provable = !(args.force || args.dry_run || args.explain || args.affected.is_some());
    let asked = provable
        .then(once_run::proof::Request::of_this_process)
        .flatten();
    if let Some(asked) = &asked
        && let Some((run, report)) = replayed(workspace, asked)
    {
        let outcome = show_replay(&run, report, &args)?;
        finished.cancel();
        return Ok(match signalled.load(Ordering::SeqCst) {
            0 => outcome,
            signal => Outcome::Signal(signal),
        });
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
            "affected since `{since}`: {} with `{capability}`",
            render::count(targets.len(), "target")
        );
        // Before the named ones: the words after `--` go to the action named last.
        request.actions.splice(
            0..0,
            targets.into_iter().map(|t| format!("{t}:{capability}")),
        );
    }
    let plan = match once_run::plan(&workspace, &request) {
        Ok(plan) => plan,
        Err(error @ once_run::Error::NothingSelected { .. }) => {
            eprintln!("{error}");
            return Ok(Outcome::Success);
        }
        Err(error) if error.is_bad_request() => {
            eprintln!("error: {error}");
            return Ok(Outcome::Invalid);
        }
        Err(error) => return Err(error.into()),
    };
    // A dry run with `--json` carries the explanations in its one JSON document instead.
    if args.explain && !(args.dry_run && args.json) {
        super::key::explain_run(&workspace, &plan, args.force)?;
    }
    if args.dry_run {
        return super::dry_run::show(&workspace, &plan, &args);
    }
    let mut options = Options {
        keep_going: args.keep_going,
        force: args.force,
        // The last of the two flags wins (`overrides_with`); neither follows `once.toml`.
        batch: match (args.batch, args.no_batch) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        },
        asked: Some(once_run::Asked::new(
            &request_words(&args),
            once_run::TERMINAL,
        )),
        ..Options::default()
    };
    if let Some(jobs) = args.jobs {
        options.jobs = jobs.max(1);
    }
    match remote(&workspace, &args) {
        Ok(remote) => options.remote = remote,
        Err(outcome) => return Ok(outcome),
    }
    match engine(&workspace, &args) {
        Ok(engine) => options.engine = engine,
        Err(outcome) => return Ok(outcome),
    }
    // A run the witness follows may prove the next one a no-op.
    let witness = asked
        .filter(|_| options.remote.is_none() && options.engine.is_none() && readable(&workspace))
        .map(|request| (request, Arc::new(Witness::new())));
    options.witness = witness.as_ref().map(|(_, witness)| Arc::clone(witness));
    let run = RunStore::new(workspace.root())
        .create()
        .context("cannot create the run's folder under `.once/runs`")?;
    let cache = once_run::Cache::configured(workspace.root(), workspace.cache_settings());
    let live = start_live(
        plan.steps.iter().map(|step| step.action.clone()).collect(),
        args.output_logs,
    )?;
    let report = once_run::execute(
        &plan,
        &cache,
        &run,
        &registry,
        &Cancel::new(),
        &options,
        &mut |event| live.observe(&run, event),
    );
    live.finish();
    summarise(&report, args.output_logs);
    if args.json {
        // The bounded summary, as MCP returns it; `run.json` lists every action.
        output::json(&report.summary()).context("cannot print the report")?;
    }
    let signal = signalled.load(Ordering::SeqCst);
    if let Some((request, witness)) = witness
        && signal == 0
        && is_no_op(&report)
    {
        // The options held the other reference; the run is over.
        drop(options);
        if let Ok(witness) = Arc::try_unwrap(witness) {
            once_run::proof::prove(&request, &workspace.freshness(), witness, &report);
        }
    }
    finished.cancel();
    Ok(if signal != 0 {
        Outcome::Signal(signal)
    } else if report.status == RunStatus::Succeeded {
        Outcome::Success
    } else {
        Outcome::Failure
    })
}

/// The report of the run that a proof shows this request would repeat, when one does, and the
/// folder of the new run that repeats it.
fn replayed(
    workspace: Option<&Path>,
    request: &once_run::proof::Request,
) -> Option<(RunDir, RunReport)> {
    let root = super::find_root(workspace).ok()?;
    if !once_run::proof::exists(&root, request) {
        return None;
    }
    let store = RunStore::new(&root);
    // The run's folder is made while the proof is checked: neither waits for the other.
    let (made, report) = std::thread::scope(|scope| {
        let made = scope.spawn(|| store.create());
        let report = once_run::proof::replay(&root, request);
        (made.join(), report)
    });
    match (made, report) {
        (Ok(Ok(run)), Some(report)) => Some((run, report)),
        (Ok(Ok(run)), None) => {
            // Still empty: the normal run that follows makes its own.
            let _ = std::fs::remove_dir(&run.path);
            None
        }
        _ => None,
    }
}

/// Shows a replayed run as the run it repeats would show: each action as the live view shows a
/// cache hit, the summary, the JSON report when asked; and records it in `run`, a run of its
/// own.
fn show_replay(run: &RunDir, mut report: RunReport, args: &RunArgs) -> Result<Outcome> {
    let start = Instant::now();
    report.run_id.clone_from(&run.id);
    tracing::info!(run = %run.id, "answered by its no-op proof");
    let live = start_live(
        report.actions.iter().map(|a| a.action.clone()).collect(),
        args.output_logs,
    )?;
    let total = report.actions.len();
    // Only endings: a replayed action never runs, so the view has nothing to follow.
    for (done, action) in report.actions.iter().enumerate() {
        live.observe(
            run,
            Event::Finished {
                action: &action.action,
                status: action.status,
                cached: action.cached,
                done: done + 1,
                total,
                log: action.log.as_deref(),
            },
        );
    }
    report.duration_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
    if let Err(error) = run.write_report(&report) {
        tracing::warn!(%error, "cannot write the run's report");
    }
    live.finish();
    summarise(&report, args.output_logs);
    if args.json {
        output::json(&report.summary()).context("cannot print the report")?;
    }
    Ok(Outcome::Success)
}

/// Whether a run's report is one a later run may replay: it succeeded, and every action was a
/// hit of the local cache.
fn is_no_op(report: &RunReport) -> bool {
    report.status == RunStatus::Succeeded
        && report.counts.cached == report.counts.total
        && report.counts.remote == 0
        && report.counts.ran == 0
}

/// Whether loading read every manifest it found: a manifest it could not read is not in its
/// record, so no proof could notice it becoming readable.
fn readable(workspace: &once_graph::Workspace) -> bool {
    !workspace
        .diagnostics()
        .iter()
        .any(|d| matches!(d.code, "unreadable-manifest" | "io"))
}

fn start_live(actions: Vec<String>, mode: OutputLogs) -> Result<Live> {
    let terminal = io::stderr().is_terminal();
    let colour = crate::colour::enabled(&io::stderr());
    Live::start(actions, mode, terminal, colour)
        .context("cannot start the thread that shows the run")
}

/// The remote cache of this run, connected: `None` when none is configured. A setting that
/// cannot be used is exit 2; a server that refuses the configuration, exit 1. A server that
/// cannot be reached is not an error: the run goes on locally and says so once.
fn remote(
    workspace: &once_graph::Workspace,
    args: &RunArgs,
) -> Result<Option<Arc<once_run::Remote>>, Outcome> {
    let env = |name: &str| std::env::var(name).ok();
    connected(
        once_run::RemoteConfig::resolve(
            workspace.cache_settings(),
            workspace.execution_settings(),
            &args.remote.flags(),
            &env,
        ),
        once_run::Remote::connect,
    )
}

/// The remote execution engine of this run, connected, with the remote cache's rules.
fn engine(
    workspace: &once_graph::Workspace,
    args: &RunArgs,
) -> Result<Option<Arc<once_run::Engine>>, Outcome> {
    let env = |name: &str| std::env::var(name).ok();
    connected(
        once_run::ExecutionConfig::resolve(
            workspace.cache_settings(),
            workspace.execution_settings(),
            &args.remote.flags(),
            &env,
        ),
        once_run::Engine::connect,
    )
}

/// A remote server from its resolved configuration: none when none is configured, exit 2 for
/// a setting that cannot be used, exit 1 for a configuration the server refuses.
fn connected<C, S>(
    config: Result<Option<C>, once_run::Error>,
    connect: impl FnOnce(C) -> Result<S, once_remote::Error>,
) -> Result<Option<Arc<S>>, Outcome> {
    let config = match config {
        Ok(Some(config)) => config,
        Ok(None) => return Ok(None),
        Err(error) => {
            eprintln!("error: {error}");
            return Err(Outcome::Invalid);
        }
    };
    match connect(config) {
        Ok(server) => Ok(Some(Arc::new(server))),
        Err(error) => {
            eprintln!("error: {}", once_run::Error::from(error));
            Err(Outcome::Failure)
        }
    }
}

/// The words of the request as a person would type them after `once run`, for the run's
/// record: what was asked, not how it was run (`--jobs`, `--json` and the remote flags say
/// nothing about what ran).
fn request_words(args: &RunArgs) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    if let Some(capability) = &args.all {
        words.extend(["--all".to_owned(), capability.clone()]);
    }
    if let Some(values) = &args.affected {
        words.push("--affected".to_owned());
        words.extend(values.iter().cloned());
    }
    for tag in &args.tag {
        words.extend(["--tag".to_owned(), tag.clone()]);
    }
    for name in &args.name {
        words.extend(["--name".to_owned(), name.clone()]);
    }
    words.extend(args.actions.iter().cloned());
    for param in &args.params {
        words.extend(["--param".to_owned(), param.clone()]);
    }
    if args.force {
        words.push("--force".to_owned());
    }
    if args.batch {
        words.push("--batch".to_owned());
    }
    if args.no_batch {
        words.push("--no-batch".to_owned());
    }
    if !args.args.is_empty() {
        words.push("--".to_owned());
        words.extend(args.args.iter().cloned());
    }
    words
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
    let mut actions = args.actions.clone();
    let select = if args.tag.is_empty() && args.name.is_empty() {
        None
    } else {
        // `--tag backend test`: the first positional word is the capability to select.
        if actions.is_empty() {
            return Err(
                "`--tag` and `--name` need the capability to run: `once run --tag TAG CAPABILITY`"
                    .to_owned(),
            );
        }
        let capability = actions.remove(0);
        if capability.contains(':') {
            return Err(format!(
                "with `--tag` or `--name`, the first word is the capability to run, not an action: write `once run --tag TAG CAPABILITY {capability}`"
            ));
        }
        Some(once_run::Selection {
            capability,
            tags: args.tag.clone(),
            names: args.name.clone(),
        })
    };
    // Checked here as well as in the plan: `--affected` adds actions that are not named.
    if !args.args.is_empty() && actions.is_empty() {
        return Err(once_run::Error::ArgsWithoutAction.to_string());
    }
    Ok(Request {
        actions,
        all: args.all.clone(),
        select,
        params,
        deadline,
        args: args.args.clone(),
    })
}

/// How many actions the end of a run says why they ran again.
const RAN_AGAIN_SHOWN: usize = 5;

/// The end of a run on stderr: each failure's tail and log, why actions ran again, then one
/// summary line. With
/// `--output-logs none` a failure's tail is left out when it is the command's output (it has a
/// log); a tail without a log is once's own word on why the action failed, and always shown.
fn summarise(report: &RunReport, mode: OutputLogs) {
    let mut err = io::stderr().lock();
    for action in &report.actions {
        if let Some(tail) = &action.tail {
            let _ = writeln!(err, "--- {} ({}) ---", action.action, word(&action.status));
            if mode != OutputLogs::None || action.log.is_none() {
                for line in tail {
                    let _ = writeln!(err, "  {line}");
                }
            }
            // A command that printed nothing has no log file to point at: say so instead.
            match action.log.as_ref().filter(|log| log.exists()) {
                Some(log) => {
                    let _ = writeln!(err, "  full log: {}", log.display());
                }
                None if tail.is_empty() => {
                    let _ = writeln!(err, "  (it printed nothing)");
                }
                None => {}
            }
        }
    }
    // Why what had run before ran again, a few actions at a time: "ran again" is a question a
    // person asks of a run that should have been cached.
    let again: Vec<_> = report
        .actions
        .iter()
        .filter_map(|a| Some((&a.action, a.ran_again.as_deref()?)))
        .collect();
    for (action, why) in again.iter().take(RAN_AGAIN_SHOWN) {
        let _ = writeln!(err, "  {action} ran again: {why}");
    }
    if again.len() > RAN_AGAIN_SHOWN {
        let _ = writeln!(
            err,
            "  and {} more ran again: `once query runs {}` lists them",
            again.len() - RAN_AGAIN_SHOWN,
            report.run_id
        );
    }
    let counts = &report.counts;
    let status = word(&report.status);
    let cached = if counts.remote > 0 {
        format!("{} cached ({} remote)", counts.cached, counts.remote)
    } else {
        format!("{} cached", counts.cached)
    };
    // Said only when it happened: a success that needed a second try is worth noticing.
    let retried = if counts.retried > 0 {
        format!(", {} retried", counts.retried)
    } else {
        String::new()
    };
    // Where commands ran, when they could have run elsewhere.
    let remote = report
        .execution
        .as_ref()
        .map(|e| format!(", {} on the engine", e.executed))
        .unwrap_or_default();
    let _ = writeln!(
        err,
        "{status}: {} ({} ran{remote}{retried}, {cached}, {} failed, {} skipped) in {:.2}s, run {}",
        render::count(counts.total, "action"),
        counts.ran,
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
