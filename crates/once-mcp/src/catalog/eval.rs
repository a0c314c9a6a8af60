//! The evaluator tools, behind `--allow-run`: `once_eval` (code in a target's persistent
//! evaluator) and `once_eval_reset`.
//!
//! The evaluators are handed in by whoever owns them (the `once serve` session, or the `once
//! mcp` process), so they outlive any one client connection. While an evaluation runs, a
//! heartbeat thread sends progress (when the client gave a progress token), carrying the last
//! 2 KB the code printed so far, and turns the client's `notifications/cancelled` into an
//! interrupt. A call that finds the evaluator evaluating another call is answered `busy` at
//! once. In a window session the evaluators are the person's too, so `once_eval_reset` is
//! `refused` unless the person allowed it ([`EvalPolicy`]). This module must never keep an
//! evaluator of its own, nor answer with a value the CLI's `once eval --json` would not print.

use std::sync::Arc;
use std::time::{Duration, Instant};

use once_eval::{EvaluatorSpec, Evaluators, Interrupt, Language, Status};
use once_graph::Workspace;
use serde_json::{Map, Value, json};

use super::LiveWorkspace;
use crate::tool::{
    Annotations, Answer, CallContext, CancelToken, Gate, Handler, Tool, optional_str, required_str,
};

/// The deadline of an evaluation that names none.
pub const DEFAULT_EVAL_DEADLINE: Duration = Duration::from_secs(30);
/// How often a running evaluation checks for a client's cancellation and sends a heartbeat.
const HEARTBEAT_TICK: Duration = Duration::from_millis(200);
const HEARTBEAT_EVERY: Duration = Duration::from_secs(1);

/// What the evaluator tools may do to the evaluators they are handed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EvalPolicy {
    /// Whether `once_eval_reset` may stop an evaluator. `once mcp` owns its evaluators and
    /// allows it; `once serve` shares them with the person and allows it only with
    /// `--allow-eval-reset`.
    pub reset_allowed: bool,
}

/// The evaluator tools; the server lists them only when `--allow-run` is given.
pub fn eval_tools(
    live: &Arc<LiveWorkspace>,
    evaluators: &Arc<Evaluators>,
    policy: EvalPolicy,
) -> Vec<Tool> {
    vec![
        eval(live, evaluators, policy),
        reset(live, evaluators, policy),
    ]
}

/// The evaluator spec of `target` as its manifest declares it; the error says what to fix.
pub fn evaluator_spec(workspace: &Workspace, target: &str) -> Result<EvaluatorSpec, String> {
    let Some(found) = workspace.target(target) else {
        let query = once_graph::query::TargetQuery {
            name: target.to_owned(),
            ..Default::default()
        };
        return Err(match once_graph::query::target(workspace, &query) {
            Err(error) => error.to_string(),
            Ok(_) => format!("no target `{target}`"),
        });
    };
    let Some(declared) = &found.evaluator else {
        return Err(format!(
            "target `{target}` declares no evaluator; add `[targets.{target}.evaluator]` with \
             `language = \"python\"` (or \"node\", or \"nrepl\" for a running nREPL server) to its \
             once.toml"
        ));
    };
    let language = Language::parse(&declared.language)
        .ok_or_else(|| format!("unknown evaluator language `{}`", declared.language))?;
    let mut spec = EvaluatorSpec::new(language, workspace.root().join(&found.path));
    spec.command.clone_from(&declared.command);
    spec.port_file = declared.port_file.as_ref().map(Into::into);
    Ok(spec)
}

fn eval(live: &Arc<LiveWorkspace>, evaluators: &Arc<Evaluators>, policy: EvalPolicy) -> Tool {
    let live = Arc::clone(live);
    let evaluators = Arc::clone(evaluators);
    Tool {
        name: "once_eval",
        title: "Evaluate code in a target's evaluator",
        description: "Evaluate `code` in the persistent evaluator the target declares (Python, \
                      Node.js, or a running nREPL server): variables, imports and definitions \
                      stay for the next call. Returns the last expression's value as the REPL \
                      prints it, the code's stdout and stderr, and the exception with its \
                      traceback. Past `deadline` (default 30s) the code is interrupted and the \
                      evaluator keeps its state; code that will not stop is killed, a fresh \
                      evaluator starts, and the result says `state_lost: true` with a `notice` \
                      saying why. Read `notice` whenever it is present. An evaluator runs one \
                      call at a time: while another call evaluates, the answer is `busy` at \
                      once; call again when it finishes. once_query_target shows which targets \
                      declare an evaluator."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "target": {"type": "string", "description": "A target that declares an evaluator"},
                "code": {"type": "string", "description": "The code to evaluate"},
                "deadline": {"type": "string", "description": "How long the code may run before it is interrupted: 500ms, 30s, 5m (default 30s)"},
            },
            "required": ["target", "code"],
            "additionalProperties": false,
        }),
        output_schema: once_eval::Evaluation::schema(),
        annotations: Annotations {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: true,
        },
        gate: Gate::Run,
        handler: Handler::act(move |ctx: &CallContext, args: Map<String, Value>| {
            evaluate(&live, &evaluators, policy, ctx, &args).into()
        }),
    }
}

fn evaluate(
    live: &LiveWorkspace,
    evaluators: &Evaluators,
    policy: EvalPolicy,
    ctx: &CallContext,
    args: &Map<String, Value>,
) -> Result<Answer, Answer> {
    let target = required_str(args, "target").map_err(Answer::refused)?;
    let code = required_str(args, "code").map_err(Answer::refused)?;
    let deadline = match optional_str(args, "deadline").map_err(Answer::refused)? {
        None => DEFAULT_EVAL_DEADLINE,
        Some(text) => once_graph::duration::parse_duration(text).map_err(|error| {
            Answer::refused(format!(
                "invalid `deadline`: {error}; call again with e.g. \"30s\""
            ))
        })?,
    };
    let spec = evaluator_spec(&live.read(), target).map_err(Answer::refused)?;
    let interrupt = Interrupt::new();
    let finished = CancelToken::new();
    let result = std::thread::scope(|scope| {
        scope.spawn(|| heartbeat(ctx, evaluators, &interrupt, &finished, target, deadline));
        let result = evaluators.eval(target, &spec, code, deadline, &interrupt);
        finished.cancel();
        result
    });
    let evaluation = match result {
        Ok(evaluation) => evaluation,
        Err(error @ once_eval::Error::Busy { .. }) => {
            let or_reset = if policy.reset_allowed {
                ", or once_eval_reset it (its state is lost)"
            } else {
                ""
            };
            return Err(Answer::busy(format!(
                "{error}; call again when it finishes{or_reset}"
            )));
        }
        Err(error @ once_eval::Error::Empty { .. }) => return Ok(Answer::none(error.to_string())),
        Err(error) => return Err(Answer::problem(error.to_string())),
    };
    let value = serde_json::to_value(&evaluation)
        .map_err(|error| Answer::problem(format!("cannot encode the result: {error}")))?;
    Ok(judge(&evaluation).with_result(value))
}

/// The word and message of an evaluation that ran: `done` when the code ran to the end, else
/// `problem`, naming what stopped it and whether state was lost.
fn judge(evaluation: &once_eval::Evaluation) -> Answer {
    let target = &evaluation.target;
    let lost = if evaluation.state_lost {
        "; earlier state was lost (see `notice`)"
    } else {
        ""
    };
    match evaluation.status {
        Status::Ok => Answer::done(match &evaluation.value {
            Some(value) => format!(
                "evaluated in `{target}`: {}{lost}",
                crate::message::excerpt_to(value, 200)
            ),
            None => format!("evaluated in `{target}`{lost}"),
        }),
        Status::Error => {
            // A traceback ends with the exception itself: that is the line to name.
            let raised = evaluation
                .error
                .as_deref()
                .and_then(|text| text.lines().rev().find(|l| !l.trim().is_empty()))
                .unwrap_or("an exception");
            Answer::problem(format!(
                "the code raised in `{target}`: {}{lost}",
                crate::message::excerpt_to(raised.trim(), 300)
            ))
        }
        Status::TimedOut => Answer::problem(format!(
            "the code passed its deadline in `{target}` and was interrupted{lost}"
        )),
        Status::Cancelled => {
            Answer::problem(format!("the evaluation in `{target}` was cancelled{lost}"))
        }
        Status::Died => Answer::problem(format!(
            "the evaluator of `{target}` died during the evaluation{lost}"
        )),
        Status::Stopped => Answer::problem(format!(
            "once is shutting down: the evaluator of `{target}` was stopped"
        )),
    }
}

/// Sends progress while the evaluation runs, and interrupts it when the client cancels.
fn heartbeat(
    ctx: &CallContext,
    evaluators: &Evaluators,
    interrupt: &Interrupt,
    finished: &CancelToken,
    target: &str,
    deadline: Duration,
) {
    let started = Instant::now();
    let mut next_beat = started + HEARTBEAT_EVERY;
    while !finished.wait_timeout(HEARTBEAT_TICK) {
        if ctx.is_cancelled() {
            interrupt.fire();
            return;
        }
        if Instant::now() >= next_beat {
            next_beat += HEARTBEAT_EVERY;
            let elapsed = started.elapsed().as_secs_f64();
            let mut message = format!(
                "evaluating in `{target}`: {elapsed:.0}s of a {}s deadline",
                deadline.as_secs()
            );
            // Bounded by the evaluators: the end of the output, never all of it.
            let output = evaluators.output_so_far(target);
            if !output.is_empty() {
                message.push_str("; output so far:\n");
                message.push_str(&output);
            }
            ctx.progress(elapsed, Some(deadline.as_secs_f64()), Some(&message));
        }
    }
}

fn reset(live: &Arc<LiveWorkspace>, evaluators: &Arc<Evaluators>, policy: EvalPolicy) -> Tool {
    let live = Arc::clone(live);
    let evaluators = Arc::clone(evaluators);
    Tool {
        name: "once_eval_reset",
        title: "Reset a target's evaluator",
        description: "Stop the target's evaluator; the next once_eval starts a fresh one, without \
                      the old variables, imports and definitions. An evaluation in flight ends \
                      with status `died`. For nREPL, closes once's session (the server goes on). \
                      In a `once serve` session the evaluators are shared with the person, and \
                      this is refused unless they started it with `--allow-eval-reset`."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "target": {"type": "string", "description": "The target whose evaluator to reset"},
            },
            "required": ["target"],
            "additionalProperties": false,
        }),
        output_schema: json!({
            "type": "object",
            "properties": {
                "target": {"type": "string"},
                "was_running": {"type": "boolean", "description": "Whether an evaluator was running"},
            },
            "required": ["target", "was_running"],
            "additionalProperties": false,
        }),
        annotations: Annotations {
            read_only: false,
            destructive: true,
            idempotent: true,
            open_world: false,
        },
        gate: Gate::Run,
        handler: Handler::act(move |_: &CallContext, args: Map<String, Value>| {
            reset_evaluator(&live, &evaluators, policy, &args).into()
        }),
    }
}

fn reset_evaluator(
    live: &LiveWorkspace,
    evaluators: &Evaluators,
    policy: EvalPolicy,
    args: &Map<String, Value>,
) -> Result<Answer, Answer> {
    let target = required_str(args, "target").map_err(Answer::refused)?;
    if !policy.reset_allowed {
        return Err(Answer::refused(format!(
            "the evaluator of `{target}` is shared with the person in this `once serve` session, \
             so it is not reset from here; the person can allow it by restarting the session as \
             `once serve --allow-run --allow-eval-reset`"
        )));
    }
    // Only a target of the workspace can have an evaluator; anything else is refused with the
    // graph's own message rather than echoed back.
    {
        let workspace = live.read();
        if workspace.target(target).is_none() {
            let query = once_graph::query::TargetQuery {
                name: target.to_owned(),
                ..Default::default()
            };
            if let Err(error) = once_graph::query::target(&workspace, &query) {
                return Err(Answer::refused(error.to_string()));
            }
        }
    }
    let was_running = evaluators.reset(target);
    let value = json!({"target": target, "was_running": was_running});
    Ok(if was_running {
        Answer::done(format!(
            "stopped the evaluator of `{target}`; the next once_eval starts a fresh one"
        ))
    } else {
        Answer::none(format!(
            "no evaluator of `{target}` was running: nothing to reset"
        ))
    }
    .with_result(value))
}
