//! How fast an evaluator answers: the round trip of a trivial evaluation on a warm evaluator
//! (target: under 2 ms for Python), and the cold start of a fresh one to ready.
//!
//!     cargo bench -p once-eval --bench eval
//!
//! A plain program (no harness): it prints one line per figure, median and 95th percentile.

use std::time::{Duration, Instant};

use once_eval::{EvaluatorSpec, Evaluators, Interrupt, Language};
use once_exec::Registry;

const WARM_ROUNDS: usize = 2000;
const COLD_ROUNDS: usize = 20;

fn main() {
    let dir = std::env::temp_dir();
    for language in [Language::Python, Language::Node] {
        let spec = EvaluatorSpec::new(language, &dir);
        let registry = Registry::new();
        let evaluators = match Evaluators::new(&registry) {
            Ok(evaluators) => evaluators,
            Err(error) => {
                eprintln!("cannot create evaluators: {error}");
                return;
            }
        };
        let deadline = Duration::from_secs(30);
        let interrupt = Interrupt::new();

        let mut cold = Vec::with_capacity(COLD_ROUNDS);
        for _ in 0..COLD_ROUNDS {
            evaluators.reset("bench");
            let started = Instant::now();
            // The first evaluation starts the evaluator and proves it ready, then runs `1`.
            if let Err(error) = evaluators.eval("bench", &spec, "1", deadline, &interrupt) {
                eprintln!("{}: {error}", language.as_str());
                return;
            }
            cold.push(started.elapsed());
        }

        let mut warm = Vec::with_capacity(WARM_ROUNDS);
        for round in 0..WARM_ROUNDS {
            let code = format!("{round} + 1");
            let started = Instant::now();
            match evaluators.eval("bench", &spec, &code, deadline, &interrupt) {
                Ok(evaluation) if evaluation.value == Some((round + 1).to_string()) => {}
                other => {
                    eprintln!("{}: unexpected answer {other:?}", language.as_str());
                    return;
                }
            }
            warm.push(started.elapsed());
        }
        report(language, "warm round trip of `N + 1`", &mut warm);
        report(language, "cold start to ready (+ `1`)", &mut cold);
        registry.stop_all(Duration::from_secs(1));
    }
}

fn report(language: Language, what: &str, samples: &mut [Duration]) {
    samples.sort_unstable();
    let at = |fraction: f64| {
        let index = ((samples.len() as f64 - 1.0) * fraction).round() as usize;
        samples.get(index).copied().unwrap_or_default()
    };
    eprintln!(
        "{:<6} {what:<30} median {:>9.3} ms   p95 {:>9.3} ms   ({} runs)",
        language.as_str(),
        at(0.5).as_secs_f64() * 1e3,
        at(0.95).as_secs_f64() * 1e3,
        samples.len()
    );
}
