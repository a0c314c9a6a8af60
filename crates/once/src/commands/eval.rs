//! `once eval`: evaluate code in a target's evaluator and print what happened.
//!
//! When a live `once serve` session serves this workspace (and `--local` is not given), the
//! evaluation happens there, through the session's `once_eval` / `once_eval_reset` tools, so the
//! evaluator stays warm between commands and `--reset` resets it. Otherwise the command starts
//! an evaluator of its own, which is stopped when the command ends. Either way the same value is
//! printed the same way. An evaluator the session's agent (or another `once eval`) is using
//! answers `busy` at once: the command prints who holds it and exits 1, never waiting.
//!
//! Signals are blocked before any thread starts; the first SIGINT, SIGTERM or SIGHUP interrupts
//! the evaluation exactly as a deadline does (the evaluator then gets its grace before it is
//! killed); in a session it becomes `notifications/cancelled` for the call. This module must
//! never print the code's output anywhere but where the code meant it: stdout to stdout, stderr
//! to stderr.

use std::io::{self, IsTerminal, Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context, Result, anyhow, bail};
use once_eval::{Evaluators, Interrupt, Status};
use serde_json::json;

use crate::cli::EvalArgs;
use crate::exit::Outcome;
use crate::session::client::{self, CallOutcome, Client, Writer};
use crate::session::registry::Entry;
use crate::{output, signals};

/// A session call the signal thread may cancel: the connection's writer and the call's id.
type Pending = Arc<Mutex<Option<(Writer, u64)>>>;

pub fn run(workspace: Option<&Path>, args: EvalArgs) -> Result<Outcome> {
    let interrupt = Interrupt::new();
    let pending: Pending = Arc::default();
    let stopped_by = Arc::new(AtomicI32::new(0));
    {
        let interrupt = interrupt.clone();
        let pending = Arc::clone(&pending);
        let stopped_by = Arc::clone(&stopped_by);
        signals::install(move |signal| {
            tracing::info!("signal {signal}: interrupting the evaluation");
            stopped_by.store(signal, Ordering::SeqCst);
            interrupt.fire();
            let call = pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some((writer, id)) = call
                && let Err(error) = writer.cancel(id, "interrupted by a signal")
            {
                tracing::warn!("cannot cancel the evaluation in the session: {error:#}");
            }
        })
        .context("cannot install the signal handlers")?;
    }
    if !args.local {
        let root = super::find_root(workspace)?;
        match client::find(&root) {
            Ok(Some(entry)) => return in_session(&entry, &args, &pending, &stopped_by),
            Ok(None) => {}
            // An unreadable registry is no session: evaluating here is still right.
            Err(error) => tracing::info!("cannot look for a live session: {error:#}"),
        }
        if !args.json && !args.reset && io::stderr().is_terminal() {
            eprintln!(
                "once: no `once serve` session for this workspace, so the evaluator stops with \
                 this command; run `once serve --allow-run` to keep its state between commands"
            );
        }
    }
    let loaded = super::load(workspace)?;
    let spec = once_mcp::evaluator_spec(&loaded, &args.target).map_err(|text| anyhow!(text))?;
    let registry = once_exec::Registry::new();
    let evaluators = Evaluators::new(&registry).context("cannot set up the evaluators")?;
    if args.reset {
        // Evaluators live as long as their owner; this command owns none yet, so there is
        // nothing to stop unless a `once serve` session holds it.
        let was_running = evaluators.reset(&args.target);
        if args.json {
            output::json(&json!({"target": args.target, "was_running": was_running}))?;
        } else {
            eprintln!(
                "once: no evaluator of `{}` runs in this command; the next `once eval` starts a \
                 fresh one (with `once serve --allow-run` running, `once eval --reset` resets the \
                 session's)",
                args.target
            );
        }
        return Ok(Outcome::Success);
    }
    let code = read_code(&args)?;
    let deadline = parse_deadline(&args.deadline)?;
    let evaluation = evaluators.eval(&args.target, &spec, &code, deadline, &interrupt)?;
    if args.json {
        output::json(&evaluation)?;
    } else {
        print(&Printed {
            stdout: &evaluation.stdout,
            stderr: &evaluation.stderr,
            value: evaluation.value.as_deref(),
            error: evaluation.error.as_deref(),
            notice: evaluation.notice.as_deref(),
        })?;
    }
    Ok(if evaluation.status == Status::Ok {
        Outcome::Success
    } else {
        Outcome::Failure
    })
}

/// Evaluates (or resets) through the session's tools, printing what the local path prints.
fn in_session(
    entry: &Entry,
    args: &EvalArgs,
    pending: &Pending,
    stopped_by: &AtomicI32,
) -> Result<Outcome> {
    // Everything that can fail here fails before the session is asked.
    let code = if args.reset {
        None
    } else {
        parse_deadline(&args.deadline)?;
        Some(read_code(args)?)
    };
    tracing::info!(
        "evaluating in the session of pid {} on port {}",
        entry.pid,
        entry.port
    );
    let mut session = Client::open(entry, "once eval").with_context(|| {
        format!(
            "cannot evaluate in the `once serve` session of `{}` (pid {}); pass `--local` to \
             evaluate in a one-off evaluator",
            entry.workspace.display(),
            entry.pid
        )
    })?;
    if !session.lists("once_eval")? {
        bail!(
            "the `once serve` session of `{}` (pid {}) runs without `--allow-run`, so it keeps no \
             evaluators; restart it with `once serve --allow-run`, or pass `--local` to evaluate \
             in a one-off evaluator",
            entry.workspace.display(),
            entry.pid
        );
    }
    let Some(code) = code else {
        let value = match session.call("once_eval_reset", json!({"target": args.target}))? {
            CallOutcome::Value(value) => value,
            CallOutcome::Error(text) => bail!("{}", message_of(&text)),
        };
        if args.json {
            output::json(&value)?;
        } else if value["was_running"] == true {
            eprintln!(
                "once: stopped the session's evaluator of `{}`; the next `once eval` starts a \
                 fresh one",
                args.target
            );
        } else {
            eprintln!(
                "once: no evaluator of `{}` runs in the session; the next `once eval` starts a \
                 fresh one",
                args.target
            );
        }
        return Ok(Outcome::Success);
    };
    *pending.lock().unwrap_or_else(PoisonError::into_inner) =
        Some((session.writer(), session.next_id()));
    if stopped_by.load(Ordering::SeqCst) != 0 {
        // The signal came before there was a call to cancel: make none.
        return Ok(Outcome::Failure);
    }
    let arguments = json!({"target": args.target, "code": code, "deadline": args.deadline});
    let answer = session.call("once_eval", arguments);
    pending
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if stopped_by.load(Ordering::SeqCst) != 0 {
        // A cancelled call is never answered; the session interrupted it and kept its state.
        eprintln!("once: interrupted the evaluation in the session");
        return Ok(Outcome::Failure);
    }
    let value = match answer? {
        CallOutcome::Value(value) => value,
        CallOutcome::Error(text) if text.starts_with("busy: ") => {
            // Another evaluation holds the evaluator: say who, and leave at once.
            eprintln!("once: {}", message_of(&text));
            return Ok(Outcome::Failure);
        }
        CallOutcome::Error(text) => match evaluation_of(&text) {
            // The code ran and failed: the evaluation follows the message, printed as locally.
            Some(value) => value,
            None => bail!("{}", message_of(&text)),
        },
    };
    if args.json {
        output::json(&value)?;
    } else {
        let text = |key: &str| value[key].as_str();
        print(&Printed {
            stdout: text("stdout").unwrap_or_default(),
            stderr: text("stderr").unwrap_or_default(),
            value: text("value"),
            error: text("error"),
            notice: text("notice"),
        })?;
    }
    Ok(if value["status"] == "ok" {
        Outcome::Success
    } else {
        Outcome::Failure
    })
}

/// The message of a tool's error text: its first line without the outcome word (`busy: …`).
fn message_of(text: &str) -> &str {
    let line = text.lines().next().unwrap_or_default();
    ["refused: ", "busy: ", "problem: "]
        .iter()
        .find_map(|word| line.strip_prefix(word))
        .unwrap_or(line)
}

/// The evaluation a `problem` answer carries on the line after its message, if any.
fn evaluation_of(text: &str) -> Option<serde_json::Value> {
    let (first, rest) = text.split_once('\n')?;
    first.starts_with("problem: ").then_some(())?;
    serde_json::from_str::<serde_json::Value>(rest)
        .ok()
        .filter(|value| value.get("status").is_some())
}

/// The parts of an evaluation a person reads.
struct Printed<'a> {
    stdout: &'a str,
    stderr: &'a str,
    value: Option<&'a str>,
    error: Option<&'a str>,
    notice: Option<&'a str>,
}

fn print(printed: &Printed<'_>) -> Result<()> {
    if !printed.stdout.is_empty() {
        let mut stdout = io::stdout().lock();
        stdout.write_all(printed.stdout.as_bytes())?;
        stdout.flush()?;
    }
    eprint!("{}", own_stderr(printed.stderr, printed.error));
    if let Some(value) = printed.value {
        output::text(value)?;
    }
    if let Some(error) = printed.error {
        eprintln!("{}", error.trim_end());
    }
    if let Some(notice) = printed.notice {
        eprintln!("once: {notice}");
    }
    Ok(())
}

/// The code's stderr as printed before its value: all of it, unless the error already starts
/// with it. An nREPL error is the text the server wrote to `err` followed by the exception
/// (`Execution error … Divide by zero`, then `class java.lang.ArithmeticException`), so printing
/// both would say it twice.
fn own_stderr<'a>(stderr: &'a str, error: Option<&str>) -> &'a str {
    let told = stderr.trim_end();
    match error {
        Some(error) if !told.is_empty() && error.starts_with(told) => "",
        _ => stderr,
    }
}

fn parse_deadline(text: &str) -> Result<std::time::Duration> {
    once_graph::duration::parse_duration(text)
        .map_err(|error| crate::exit::Usage(format!("invalid `--deadline`: {error}")).into())
}

/// The code to evaluate; empty code is refused here, before any evaluator is asked.
fn read_code(args: &EvalArgs) -> Result<String> {
    let code = code_text(args)?;
    if code.trim().is_empty() {
        bail!("nothing to evaluate: the code is empty");
    }
    Ok(code)
}

fn code_text(args: &EvalArgs) -> Result<String> {
    match (&args.code, &args.file) {
        (Some(code), None) if code == "-" => {
            let mut code = String::new();
            io::stdin()
                .read_to_string(&mut code)
                .context("cannot read the code from stdin")?;
            Ok(code)
        }
        (Some(code), None) => Ok(code.clone()),
        (None, Some(file)) => std::fs::read_to_string(file)
            .with_context(|| format!("cannot read the code from `{}`", file.display())),
        _ => Err(anyhow!(
            "give the code as an argument, with `-f FILE`, or `-` to read it from stdin"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_that_repeats_the_stderr_is_printed_once() {
        let err = "Execution error (ArithmeticException) at user/eval1 (REPL:1).\nDivide by zero\n";
        let error = "Execution error (ArithmeticException) at user/eval1 (REPL:1).\nDivide by \
                     zero\nclass java.lang.ArithmeticException";
        assert_eq!(own_stderr(err, Some(error)), "");
        // Output that is not part of the error, or no error at all: printed as it came.
        assert_eq!(own_stderr("warning\n", Some("Traceback …")), "warning\n");
        assert_eq!(own_stderr(err, None), err);
        assert_eq!(own_stderr("", Some("boom")), "");
    }

    #[test]
    fn a_tool_error_is_read_as_its_message_or_its_evaluation() {
        let busy = "busy: the evaluator of `py` is evaluating another call (started 3 s ago); \
                    call again when it finishes";
        assert_eq!(
            message_of(busy),
            "the evaluator of `py` is evaluating another call (started 3 s ago); call again when \
             it finishes"
        );
        assert_eq!(message_of("not a word: x"), "not a word: x");
        assert_eq!(evaluation_of(busy), None);
        let raised = "problem: the code raised in `py`: ZeroDivisionError\n{\"status\":\"error\"}";
        assert_eq!(evaluation_of(raised), Some(json!({"status": "error"})));
        assert_eq!(evaluation_of("refused: no\n{\"status\":\"x\"}"), None);
    }
}
