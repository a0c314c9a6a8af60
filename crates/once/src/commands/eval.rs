//! `once eval`: evaluate code in a target's evaluator and print what happened.
//!
//! Signals are blocked before any thread starts; the first SIGINT, SIGTERM or SIGHUP interrupts
//! the evaluation exactly as a deadline does (the evaluator then gets its grace before it is
//! killed), and the evaluators are stopped when the command ends. This module must never print
//! the code's output anywhere but where the code meant it: stdout to stdout, stderr to stderr.

use std::io::{self, Read, Write};
use std::path::Path;

use anyhow::{Context, Result, anyhow};
use once_eval::{Evaluators, Interrupt, Status};

use crate::cli::EvalArgs;
use crate::exit::Outcome;
use crate::{output, signals};

pub fn run(workspace: Option<&Path>, args: EvalArgs) -> Result<Outcome> {
    let interrupt = Interrupt::new();
    {
        let interrupt = interrupt.clone();
        signals::install(move |signal| {
            tracing::info!("signal {signal}: interrupting the evaluation");
            interrupt.fire();
        })
        .context("cannot install the signal handlers")?;
    }
    let loaded = super::load(workspace)?;
    let spec = once_mcp::evaluator_spec(&loaded, &args.target).map_err(|text| anyhow!(text))?;
    let registry = once_exec::Registry::new();
    let evaluators = Evaluators::new(&registry).context("cannot set up the evaluators")?;
    if args.reset {
        // Evaluators live as long as their owner; this command owns none yet, so there is
        // nothing to stop unless a `once serve` session holds it (reset it with once_eval_reset).
        let was_running = evaluators.reset(&args.target);
        if args.json {
            output::json(&serde_json::json!({"target": args.target, "was_running": was_running}))?;
        } else {
            eprintln!(
                "once: no evaluator of `{}` runs in this command; the next `once eval` starts a \
                 fresh one (in `once serve`, reset it with the MCP tool once_eval_reset)",
                args.target
            );
        }
        return Ok(Outcome::Success);
    }
    let code = read_code(&args)?;
    let deadline = once_graph::duration::parse_duration(&args.deadline)
        .map_err(|error| anyhow!("invalid `--deadline`: {error}"))?;
    let evaluation = evaluators.eval(&args.target, &spec, &code, deadline, &interrupt)?;
    if args.json {
        output::json(&evaluation)?;
    } else {
        if !evaluation.stdout.is_empty() {
            let mut stdout = io::stdout().lock();
            stdout.write_all(evaluation.stdout.as_bytes())?;
            stdout.flush()?;
        }
        eprint!("{}", evaluation.stderr);
        if let Some(value) = &evaluation.value {
            output::text(value)?;
        }
        if let Some(error) = &evaluation.error {
            eprintln!("{}", error.trim_end());
        }
        if let Some(notice) = &evaluation.notice {
            eprintln!("once: {notice}");
        }
    }
    Ok(if evaluation.status == Status::Ok {
        Outcome::Success
    } else {
        Outcome::Failure
    })
}

fn read_code(args: &EvalArgs) -> Result<String> {
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
