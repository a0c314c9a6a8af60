//! The run tools: `once_run` and `once_cancel` (behind `--allow-run`) and `once_query_runs`
//! (always).
//!
//! `once_run` plans with `once_run::plan` (so a bad request is refused before anything runs)
//! and executes on a thread of its own, under the server's process registry, so the binary's
//! `stop_all` reaches every process it started. The call waits up to `wait_seconds` for the
//! report, the very value `once run --json` prints; after that it answers with the run id and
//! the run goes on, to be followed with `once_query_runs` or stopped with `once_cancel`. While
//! it waits, a client's `notifications/cancelled` stops the run's process groups. Answers stay
//! bounded whatever the size of the run: a report is its `RunSummary` (every count, at most
//! `once_run::SUMMARY_ROWS` actions, the tail of a log only for the first failures), and
//! `once_query_runs` returns `once_run::query_runs` unchanged, the value `once query runs`
//! prints, which reads a run's actions and an action's log a page at a time. This module must
//! never compute or reshape that value, nor put a whole log, or every action of a run, into an
//! answer.
//!
//! While it waits, a call with a progress token hears of every action that starts and ends, and
//! about once a second the last lines each running action has printed so far (read from the end
//! of its log, a bounded read). A call answered with a task (`task.rs`) keeps the same reports as
//! the task's status, and waits up to an hour by default, since no request is left to time out.
//!
//! Both acting tools answer an outcome: a run whose actions all succeeded (ran or replayed from
//! the cache) is `done`, one with a failed, timed-out or cancelled action `problem`, a request
//! the plan refuses `refused`; cancelling a run that has ended is `none`.
//!
//! The runs in flight are a `once_exec::Runtime` of the registry: when the binary stops (a
//! signal, the end of input), `stop_all` stops their processes and then waits, bounded, until
//! each run has written its final record (`interrupted`, every action's state), so no run is
//! left recorded as `running` by a process that is gone.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use once_exec::{Cancel, Registration, Registry, Runtime};
use once_run::{
    ActionStatus, Cache, Counts, Event, Options, Request, RunReport, RunStatus, RunStore,
    RunSummary, RunsQuery,
};
use serde_json::{Map, Value, json};

use super::LiveWorkspace;
use crate::tool::{
    Annotations, Answer, CallContext, Gate, Handler, LogLevel, Tool, ToolResult, optional_bool,
    optional_str, optional_strings, optional_u64, required_str,
};

/// How long `once_run` waits for the report when `wait_seconds` is not given.
const DEFAULT_WAIT: Duration = Duration::from_secs(300);
/// The longest wait an agent may ask for.
const MAX_WAIT_SECONDS: u64 = 3600;
/// How long `once_cancel` waits for a cancelled run to end before answering.
const CANCEL_WAIT: Duration = Duration::from_secs(10);
/// How long a stop waits for the runs in flight to record their end: their groups get SIGKILL
/// after `once_exec::DEFAULT_GRACE`, so this is ample.
const STOP_WAIT: Duration = Duration::from_secs(10);
/// How often the waiting call wakes to see whether a heartbeat is due.
const HEARTBEAT_TICK: Duration = Duration::from_millis(200);
/// How often a progress notification carries the output so far of the running actions.
const HEARTBEAT_EVERY: Duration = Duration::from_secs(1);
/// How many running actions a heartbeat shows the output of; the rest are counted.
const HEARTBEAT_ACTIONS: usize = 8;

/// A run this server started and that has not ended yet.
#[derive(Debug, Clone)]
struct Live {
    cancel: Cancel,
    /// Fired when the run has ended and its report is written.
    ended: Cancel,
}

type LiveRuns = Arc<Mutex<HashMap<String, Live>>>;

/// The runs in flight as the registry sees them: stopping waits for each to record its end.
struct InFlight(LiveRuns);

impl Runtime for InFlight {
    fn stop(&self) {
        // The registry has already told every group to stop; each run now ends on its own.
        let until = Instant::now() + STOP_WAIT;
        let runs: Vec<Live> = lock(&self.0).values().cloned().collect();
        for run in runs {
            if !run
                .ended
                .wait_timeout(until.saturating_duration_since(Instant::now()))
            {
                tracing::warn!("a run did not record its end within {STOP_WAIT:?}");
                return;
            }
        }
    }
}

/// The run tools; the server lists only those whose gate is open. Every process they start is
/// registered in `registry`, which the binary stops on a signal or at end of input.
pub fn run_tools(live: &Arc<LiveWorkspace>, registry: &Registry) -> Vec<Tool> {
    let runs: LiveRuns = Arc::default();
    // Held by the `once_run` tool, so the runs stay registered as long as the server lives. A
    // registry already stopping refuses it, and then refuses every run too.
    let registration = registry
        .register(Arc::new(InFlight(Arc::clone(&runs))))
        .ok()
        .map(Arc::new);
    vec![
        run(live, registry, &runs, registration),
        cancel(live, &runs),
        query_runs(live),
    ]
}

fn run(
    live: &Arc<LiveWorkspace>,
    registry: &Registry,
    runs: &LiveRuns,
    registration: Option<Arc<Registration>>,
) -> Tool {
    let live = Arc::clone(live);
    let registry = registry.clone();
    let runs = Arc::clone(runs);
    Tool {
        name: "once_run",
        title: "Run a capability",
        description: "Run `target:capability` (or `target` with `capability`), or `capability` \
                      of every target with `tag` and/or named like the glob `name` (both: \
                      targets matching both; with `target` too: all of them), after everything \
                      it depends on, in parallel, each in its own process group under a \
                      deadline. Actions whose command, parameters, environment, inputs and \
                      dependencies are unchanged are not run again: their result is replayed \
                      from the cache. Parameters are checked against the capability's typed \
                      schema (once_query_target shows it) before anything runs. Waits up to \
                      `wait_seconds` (default 300) for the report; after that it returns \
                      `{run_id, status: \"running\"}` and the run goes on: follow it with \
                      once_query_runs, stop it with once_cancel. The report counts every action \
                      (ran, cached, failed, skipped) and lists at most 20 (failed, timed out, \
                      cancelled and skipped first, then those that ran, then cached ones) with \
                      status, `cached`, exit code and log path; `omitted` says how many are not \
                      listed, and once_query_runs with the run id pages through all of them. \
                      Only the first failures carry the tail of their log; read more of a log \
                      with once_query_runs."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "target": {"type": "string", "description": "`target` or `target:capability`"},
                "capability": {"type": "string", "description": "The capability, when `target` names none (default: the target's only capability, or build); required with `tag` or `name`"},
                "tag": {"type": "string", "description": "Also run `capability` of every target with this tag"},
                "name": {"type": "string", "description": "Also run `capability` of every target whose name matches this glob (`api-*`); with `tag`, of those matching both"},
                "args": {"type": "array", "items": {"type": "string"}, "description": "Words appended to the command of `target`'s action, each quoted for the shell (like `once run web:test -- --grep checkout`); part of its cache key"},
                "params": {"type": "object", "description": "Parameters of the capability, by name, typed as its schema says", "additionalProperties": {}},
                "deadline": {"type": "string", "description": "Replaces every action's deadline: 90s, 5m, 1h30m"},
                "wait_seconds": {"type": "integer", "minimum": 0, "maximum": MAX_WAIT_SECONDS, "description": "How long to wait for the report before returning the run id (default 300)"},
                "force": {"type": "boolean", "description": "Run even what the cache could replay"},
            },
            "additionalProperties": false,
        }),
        output_schema: report_schema(),
        annotations: Annotations {
            read_only: false,
            destructive: false,
            idempotent: false,
            open_world: true,
        },
        gate: Gate::Run,
        handler: Handler::act(move |ctx: &CallContext, args: Map<String, Value>| {
            let _registered = &registration;
            start(&live, &registry, &runs, ctx, &args).into()
        }),
    }
}

/// Who asked, in a run's record, when the client gave no name at `initialize`.
const UNNAMED_CLIENT: &str = "an MCP client";

/// The call's arguments as the `once run` words that ask the same, for the run's record, so a
/// run reads the same whoever started it: `web:test`, `--tag backend test`.
fn request_words(args: &Map<String, Value>) -> Vec<String> {
    let text = |name: &str| args.get(name).and_then(Value::as_str);
    let mut words: Vec<String> = Vec::new();
    if let Some(tag) = text("tag") {
        words.extend(["--tag".to_owned(), tag.to_owned()]);
    }
    if let Some(name) = text("name") {
        words.extend(["--name".to_owned(), name.to_owned()]);
    }
    match (text("target"), text("capability")) {
        (Some(target), Some(capability)) if !target.contains(':') => {
            words.push(format!("{target}:{capability}"));
        }
        (Some(target), _) => words.push(target.to_owned()),
        (None, Some(capability)) => words.push(capability.to_owned()),
        (None, None) => {}
    }
    if let Some(Value::Object(params)) = args.get("params") {
        for (name, value) in params {
            let value = value
                .as_str()
                .map_or_else(|| value.to_string(), str::to_owned);
            words.extend(["--param".to_owned(), format!("{name}={value}")]);
        }
    }
    if args.get("force").and_then(Value::as_bool) == Some(true) {
        words.push("--force".to_owned());
    }
    if let Some(Value::Array(extra)) = args.get("args") {
        words.push("--".to_owned());
        words.extend(extra.iter().filter_map(Value::as_str).map(str::to_owned));
    }
    words
}

fn start(
    live: &LiveWorkspace,
    registry: &Registry,
    runs: &LiveRuns,
    ctx: &CallContext,
    args: &Map<String, Value>,
) -> Result<Answer, Answer> {
    let target = optional_str(args, "target").map_err(Answer::refused)?;
    let capability = optional_str(args, "capability").map_err(Answer::refused)?;
    let tag = optional_str(args, "tag").map_err(Answer::refused)?;
    let name = optional_str(args, "name").map_err(Answer::refused)?;
    let action = target.map(|target| match capability {
        Some(capability) if !target.contains(':') => format!("{target}:{capability}"),
        _ => target.to_owned(),
    });
    let select = match (tag, name, capability) {
        (None, None, _) => None,
        (_, _, None) => {
            return Err(Answer::refused(
                "`tag` and `name` select targets, and `capability` says what to run on them: call the tool again with `capability`",
            ));
        }
        (tag, name, Some(capability)) => Some(once_run::Selection {
            capability: capability.to_owned(),
            tags: tag.map(str::to_owned).into_iter().collect(),
            names: name.map(str::to_owned).into_iter().collect(),
        }),
    };
    if action.is_none() && select.is_none() {
        return Err(Answer::refused(
            "name what to run: `target` (`target:capability`), or `capability` with `tag` or `name`",
        ));
    }
    let words = optional_strings(args, "args")
        .map_err(Answer::refused)?
        .unwrap_or_default();
    if !words.is_empty() && action.is_none() {
        return Err(Answer::refused(
            "`args` are appended to the command of `target`'s action, and no `target` is named: call the tool again with `target`",
        ));
    }
    // What the answers call the request.
    let asked = match (&action, &select) {
        (Some(action), _) => format!("`{action}`"),
        (None, Some(selection)) => format!("`{}` of the selected targets", selection.capability),
        (None, None) => String::new(),
    };
    let params: BTreeMap<String, Value> = match args.get("params") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(Value::Object(map)) => map.clone().into_iter().collect(),
        Some(_) => {
            return Err(Answer::refused(
                "argument `params` must be an object of parameter values: call the tool again",
            ));
        }
    };
    let deadline = optional_str(args, "deadline")
        .map_err(Answer::refused)?
        .map(|text| {
            once_graph::duration::parse_duration(text).map_err(|e| {
                Answer::refused(format!(
                    "invalid deadline {text:?}: {e}; write it like 90s, 5m or 1h30m"
                ))
            })
        })
        .transpose()?;
    // A call that may become a task is bounded by no client's request timeout: by default it
    // follows the run as long as any call may.
    let default_wait = if ctx.may_become_task() {
        Duration::from_secs(MAX_WAIT_SECONDS)
    } else {
        DEFAULT_WAIT
    };
    let wait = optional_u64(args, "wait_seconds")
        .map_err(Answer::refused)?
        .map_or(default_wait, |s| {
            Duration::from_secs(s.min(MAX_WAIT_SECONDS))
        });
    let force = optional_bool(args, "force")
        .map_err(Answer::refused)?
        .unwrap_or(false);
    let request = Request {
        actions: action.into_iter().collect(),
        select,
        params,
        deadline,
        args: words,
        ..Request::default()
    };
    let (plan, root, cache_settings, execution_settings) = {
        let workspace = live.read();
        if workspace.has_errors() {
            return Err(Answer::refused(
                "the manifest has errors, so nothing can run; once_query_workspace lists them",
            ));
        }
        let plan = match once_run::plan(&workspace, &request) {
            Ok(plan) => plan,
            Err(once_run::Error::EmptyRequest) => {
                return Ok(Answer::none(format!(
                    "{asked} selects no action: nothing to run"
                )));
            }
            Err(error @ once_run::Error::NothingSelected { .. }) => {
                return Ok(Answer::none(error.to_string()));
            }
            Err(e) => {
                return Err(Answer::refused(format!(
                    "{e}; once_query_target shows a target's capabilities and their parameters"
                )));
            }
        };
        (
            plan,
            workspace.root().to_path_buf(),
            workspace.cache_settings().clone(),
            workspace.execution_settings().clone(),
        )
    };
    if plan.steps.is_empty() {
        return Ok(Answer::none(format!(
            "{asked} selects no action: nothing to run"
        )));
    }
    let (remote, engine) = remote(&cache_settings, &execution_settings)?;
    let run_dir = RunStore::new(&root)
        .create()
        .map_err(|e| Answer::problem(format!("cannot create the run's folder: {e}")))?;
    let run_id = run_dir.id.clone();
    // Where the running actions' logs are, for the heartbeats; the run itself owns `run_dir`.
    let logs = run_dir.clone();
    let total = plan.steps.len();
    // Readable before this call answers, however soon that is.
    let who_asked =
        once_run::Asked::new(&request_words(args), ctx.client().unwrap_or(UNNAMED_CLIENT));
    once_run::announce(&plan, &run_dir, Some(&who_asked));
    let handle = Live {
        cancel: Cancel::new(),
        ended: Cancel::new(),
    };
    lock(runs).insert(run_id.clone(), handle.clone());

    let (events, received) = mpsc::channel::<Update>();
    let worker = {
        let registry = registry.clone();
        let runs = Arc::clone(runs);
        let handle = handle.clone();
        let run_id = run_id.clone();
        thread::Builder::new()
            .name(format!("once-run-{run_id}"))
            .spawn(move || {
                let options = Options {
                    force,
                    remote,
                    engine,
                    asked: Some(who_asked),
                    ..Options::default()
                };
                let report = once_run::execute(
                    &plan,
                    &Cache::configured(&root, &cache_settings),
                    &run_dir,
                    &registry,
                    &handle.cancel,
                    &options,
                    &mut |event| {
                        // The caller may have stopped listening; the run goes on regardless.
                        let _ = events.send(update(event, total));
                    },
                );
                lock(&runs).remove(&run_id);
                handle.ended.cancel();
                let _ = events.send(Update::Done(Box::new(report)));
            })
    };
    if let Err(error) = worker {
        lock(runs).remove(&run_id);
        return Err(Answer::problem(format!("cannot start the run: {error}")));
    }

    // A client's cancellation of this call stops the run, for as long as the call lasts.
    let released = Arc::new(AtomicBool::new(false));
    {
        let token = ctx.cancelled().clone();
        let released = Arc::clone(&released);
        let cancel = handle.cancel.clone();
        let _ = thread::Builder::new()
            .name("once-run-cancel".into())
            .spawn(move || {
                if token.wait_timeout(wait + Duration::from_secs(1))
                    && !released.load(Ordering::SeqCst)
                {
                    cancel.cancel();
                }
            });
    }
    let end = Instant::now() + wait;
    let mut progress = 0u64;
    let mut running: Vec<String> = Vec::new();
    // Heartbeats since the last event, and when the next is due.
    let mut beats = 0u32;
    let mut next_beat = Instant::now() + HEARTBEAT_EVERY;
    let answer = loop {
        let left = end.saturating_duration_since(Instant::now());
        match received.recv_timeout(left.min(HEARTBEAT_TICK)) {
            Ok(Update::Event(described)) => {
                let Described {
                    text,
                    steps,
                    total,
                    started,
                    finished,
                } = described;
                running.extend(started);
                running.retain(|action| Some(action) != finished.as_ref());
                progress += steps;
                beats = 0;
                ctx.progress(progress as f64 / 2.0, Some(total as f64), Some(&text));
            }
            Err(RecvTimeoutError::Timeout) if Instant::now() < end => {
                if Instant::now() < next_beat || running.is_empty() {
                    continue;
                }
                next_beat = Instant::now() + HEARTBEAT_EVERY;
                beats += 1;
                // Progress must grow with every notification (the client drops one that does
                // not): a heartbeat moves on within the current half step and never reaches the
                // value of the next event.
                let value = progress as f64 / 2.0 + 0.5 * f64::from(beats) / f64::from(beats + 1);
                ctx.progress(
                    value,
                    Some(total as f64),
                    Some(&output_so_far(&logs, &running)),
                );
            }
            Ok(Update::Warning(message)) => ctx.log(LogLevel::Warning, &message),
            Ok(Update::Done(report)) => break ended(&report.summary()),
            Err(RecvTimeoutError::Timeout) => {
                break Ok(Answer::done(format!(
                    "run `{run_id}` is still going after {} s; follow it with once_query_runs, \
                     stop it with once_cancel",
                    wait.as_secs()
                ))
                .with_result(json!({"run_id": run_id, "status": "running"})));
            }
            Err(RecvTimeoutError::Disconnected) => {
                break Err(Answer::problem(format!(
                    "run `{run_id}` ended without a report; see once_query_runs"
                )));
            }
        }
    };
    // From here on the run belongs to once_cancel, not to this call: release the bridge by
    // firing the call's own token, which nothing else reads once the handler returns.
    released.store(true, Ordering::SeqCst);
    ctx.cancelled().cancel();
    answer
}

/// A heartbeat's message: the running actions, and the last lines each has printed so far.
fn output_so_far(run: &once_run::RunDir, running: &[String]) -> String {
    let names: Vec<String> = running.iter().map(|a| format!("`{a}`")).collect();
    let mut message = format!("running {}", names.join(", "));
    for action in running.iter().take(HEARTBEAT_ACTIONS) {
        let tail = super::tail::last_lines(&run.log_path(action));
        if !tail.is_empty() {
            message.push_str(&format!("\noutput so far of `{action}`:\n{tail}"));
        }
    }
    if running.len() > HEARTBEAT_ACTIONS {
        message.push_str(&format!(
            "\n({} more running; once_query_runs with the run id and an action pages its log)",
            running.len() - HEARTBEAT_ACTIONS
        ));
    }
    message
}

/// The answer for a run that has ended: `done` when every action succeeded (ran or replayed
/// from the cache), else `problem` naming the first actions that did not.
fn ended(summary: &RunSummary) -> Result<Answer, Answer> {
    let value = serde_json::to_value(summary)
        .map_err(|e| Answer::problem(format!("cannot encode the report: {e}")))?;
    let Counts {
        total,
        ran,
        cached,
        remote,
        failed,
        skipped,
        retried,
    } = summary.counts;
    let retried = if retried > 0 {
        format!(", {retried} after a retry")
    } else {
        String::new()
    };
    let cached = if remote > 0 {
        format!("{cached} cached, {remote} of them from the remote cache")
    } else {
        format!("{cached} cached")
    };
    let id = &summary.run_id;
    let actions = if total == 1 { "action" } else { "actions" };
    let answer = match summary.status {
        RunStatus::Succeeded => Answer::done(format!(
            "run `{id}`: {total} {actions} succeeded ({ran} ran{retried}, {cached})"
        )),
        status => {
            let named: Vec<String> = summary
                .actions
                .iter()
                .filter(|a| !matches!(a.status, ActionStatus::Succeeded | ActionStatus::Skipped))
                .take(3)
                .map(|a| format!("`{}` {}", a.action, a.status.word()))
                .collect();
            let which = if named.is_empty() {
                String::new()
            } else {
                format!(": {}", named.join(", "))
            };
            Answer::problem(format!(
                "run `{id}` {}: {failed} of {total} {actions} failed, {skipped} skipped{which}; \
                 once_query_runs with this run_id and an action pages its log",
                run_word(status)
            ))
        }
    };
    Ok(answer.with_result(value))
}

/// A run's status as its JSON spells it.
fn run_word(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Running => "running",
        RunStatus::Succeeded => "succeeded",
        RunStatus::Failed => "failed",
        RunStatus::Cancelled => "cancelled",
        RunStatus::TimedOut => "timed_out",
        RunStatus::Interrupted => "interrupted",
    }
}

enum Update {
    Event(Described),
    /// Said once per run: the remote cache went off, and why.
    Warning(String),
    Done(Box<RunReport>),
}

/// A run's remote cache and remote execution engine, each when configured.
type Servers = (Option<Arc<once_run::Remote>>, Option<Arc<once_run::Engine>>);

/// The remote cache and execution engine for a run, as the manifest and the server's
/// environment (`ONCE_REMOTE_*`) configure them, connected; a server that cannot be reached is
/// no error (the run goes on locally and its report says why). A configuration a server refuses
/// is a problem that names what to fix and who can: the caller has no flag to turn either off
/// with, so the command line's advice (`--no-remote-cache`) would mislead it.
fn remote(
    cache: &once_graph::CacheSettings,
    execution: &once_graph::ExecutionSettings,
) -> Result<Servers, Answer> {
    let env = |name: &str| std::env::var(name).ok();
    let flags = once_run::RemoteFlags::default();
    let refused = |e: once_run::Error| {
        Answer::refused(format!("{e}; the person who started the server can fix it"))
    };
    let config =
        once_run::RemoteConfig::resolve(cache, execution, &flags, &env).map_err(refused)?;
    let engine_config =
        once_run::ExecutionConfig::resolve(cache, execution, &flags, &env).map_err(refused)?;
    let remote = match config {
        None => None,
        Some(config) => Some(Arc::new(once_run::Remote::connect(config).map_err(
            |e| {
                Answer::problem(format!(
                    "{e}; the person who started the server can fix the remote cache's settings"
                ))
            },
        )?)),
    };
    let engine = match engine_config {
        None => None,
        Some(config) => Some(Arc::new(once_run::Engine::connect(config).map_err(
            |e| {
                Answer::problem(format!(
                    "{e}; the person who started the server can fix the remote execution settings"
                ))
            },
        )?)),
    };
    Ok((remote, engine))
}

/// A scheduler event as a progress message, with how many half-steps it advances and which
/// action it started or ended.
struct Described {
    text: String,
    steps: u64,
    total: usize,
    started: Option<String>,
    finished: Option<String>,
}

fn describe(event: Event<'_>, total: usize) -> Described {
    match event {
        Event::Started { action } => Described {
            text: format!("{action} started"),
            steps: 1,
            total,
            started: Some(action.to_owned()),
            finished: None,
        },
        Event::Finished {
            action,
            status,
            cached,
            ..
        } => {
            let word = match (status, cached) {
                (once_run::ActionStatus::Succeeded, true) => "cached",
                (once_run::ActionStatus::Succeeded, false) => "finished",
                (once_run::ActionStatus::Skipped, _) => "skipped",
                (once_run::ActionStatus::Cancelled, _) => "cancelled",
                (once_run::ActionStatus::TimedOut, _) => "timed out",
                (once_run::ActionStatus::Failed, _) => "failed",
                (once_run::ActionStatus::Interrupted, _) => "interrupted",
                // Never the status of an action that ended.
                (once_run::ActionStatus::Pending | once_run::ActionStatus::Running, _) => "ended",
            };
            Described {
                text: format!("{action} {word}"),
                // A skipped action never started: it advances by both halves at once.
                steps: if status == once_run::ActionStatus::Skipped {
                    2
                } else {
                    1
                },
                total,
                started: None,
                finished: Some(action.to_owned()),
            }
        }
        // Not progress: `update` sends it as a log message.
        Event::Warning { message } => Described {
            text: message.to_owned(),
            steps: 0,
            total,
            started: None,
            finished: None,
        },
    }
}

/// A scheduler event as the call's loop receives it: progress, or a warning to log (progress
/// must advance, and a warning advances nothing).
fn update(event: Event<'_>, total: usize) -> Update {
    match event {
        Event::Warning { message } => Update::Warning(message.to_owned()),
        event => Update::Event(describe(event, total)),
    }
}

fn cancel(live: &Arc<LiveWorkspace>, runs: &LiveRuns) -> Tool {
    let live = Arc::clone(live);
    let runs = Arc::clone(runs);
    Tool {
        name: "once_cancel",
        title: "Cancel a run",
        description: "Stop a run that once_run started and that is still going (it returned \
                      `status: \"running\"`): every process group of the run gets SIGTERM, then \
                      SIGKILL after a grace period. Returns the run's report once it has ended."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {"run_id": {"type": "string", "description": "The id once_run returned"}},
            "required": ["run_id"],
            "additionalProperties": false,
        }),
        output_schema: report_schema(),
        annotations: Annotations {
            read_only: false,
            destructive: true,
            idempotent: true,
            open_world: false,
        },
        gate: Gate::Run,
        handler: Handler::act(move |_: &CallContext, args: Map<String, Value>| {
            cancel_run(&live, &runs, &args).into()
        }),
    }
}

fn cancel_run(
    live: &LiveWorkspace,
    runs: &LiveRuns,
    args: &Map<String, Value>,
) -> Result<Answer, Answer> {
    let id = required_str(args, "run_id").map_err(Answer::refused)?;
    let store = RunStore::new(live.read().root());
    let handle = lock(runs).get(id).cloned();
    let Some(handle) = handle else {
        let report = store.read(id).map_err(|_| {
            Answer::refused(format!(
                "no run with id {id:?}; once_query_runs lists the recent runs"
            ))
        })?;
        let summary = report.summary();
        let value = serde_json::to_value(&summary).map_err(|e| Answer::problem(e.to_string()))?;
        return Ok(Answer::none(format!(
            "run `{id}` already ended ({}): nothing to cancel",
            run_word(summary.status)
        ))
        .with_result(value));
    };
    handle.cancel.cancel();
    if !handle.ended.wait_timeout(CANCEL_WAIT) {
        return Ok(Answer::done(format!(
            "asked run `{id}` to stop; it has not ended within {} s, so follow it with \
             once_query_runs",
            CANCEL_WAIT.as_secs()
        ))
        .with_result(json!({"run_id": id, "status": "running"})));
    }
    let summary = store
        .read(id)
        .map_err(|e| Answer::problem(format!("cancelled run `{id}`, but {e}")))?
        .summary();
    let value = serde_json::to_value(&summary).map_err(|e| Answer::problem(e.to_string()))?;
    Ok(Answer::done(format!(
        "cancelled run `{id}`: it ended {}",
        run_word(summary.status)
    ))
    .with_result(value))
}

/// A thin adapter: the arguments become a `RunsQuery`, and `once_run::query_runs` computes the
/// value that `once query runs` prints too.
fn query_runs(live: &Arc<LiveWorkspace>) -> Tool {
    let live = Arc::clone(live);
    Tool {
        name: "once_query_runs",
        title: "Recent runs and their logs",
        description: "Without arguments: the recent runs, newest first, each with its status, \
                      duration, counts (ran, cached, failed, skipped) and the names of its first \
                      failed actions. With `run_id`: a page of that run's actions in plan order \
                      (status, `cached`, exit code, duration, log path; the tail of a failed \
                      action's log) from `offset` (default 0, `limit` default 50, max 200), with \
                      `total_actions`; pass `next_offset` back for more. While a run goes on, \
                      its actions are `pending`, `running` or ended; a run whose process \
                      stopped first is `interrupted`. With `run_id` and `action` \
                      (`target:capability`): a page of that action's log lines from `offset` \
                      (default 0, `limit` default 100, max 500), also the output so far of an \
                      action still running, and the recorded log of a cached one."
            .into(),
        input_schema: once_run::runs_input_schema(),
        output_schema: once_run::runs_output_schema(),
        annotations: Annotations::READ_ONLY,
        gate: Gate::Always,
        handler: Handler::query(move |_: &CallContext, args: Map<String, Value>| {
            let q: RunsQuery = match serde_json::from_value(Value::Object(args)) {
                Ok(q) => q,
                Err(error) => {
                    return ToolResult::Error(format!(
                        "invalid arguments for once_query_runs: {}; its input schema lists \
                         the arguments it accepts",
                        crate::message::excerpt_to(&error.to_string(), 300)
                    ));
                }
            };
            let store = RunStore::new(live.read().root());
            match once_run::query_runs(&store, &q).map(serde_json::to_value) {
                Ok(Ok(value)) => ToolResult::Value(value),
                Ok(Err(error)) => ToolResult::Error(format!("cannot encode the answer: {error}")),
                Err(error) => ToolResult::Error(error.to_string()),
            }
        }),
    }
}

/// The shape of `RunSummary`, or `{run_id, status: "running"}`.
fn report_schema() -> Value {
    once_run::summary_schema()
}

fn lock(runs: &LiveRuns) -> std::sync::MutexGuard<'_, HashMap<String, Live>> {
    // Each update is one insert or remove; a panic cannot leave the map half-changed.
    runs.lock().unwrap_or_else(PoisonError::into_inner)
}
