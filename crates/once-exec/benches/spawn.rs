//! Per-action overhead of `once_exec::run`: spawn, capture and wait on `true`, 500 times.
//!
//! Prints p50, mean, p90 and max; the figures measure `once-exec` plus one `fork`/`exec` of
//! `/bin/sh`, which is the floor of any action. It must never need anything but `/bin/sh`.

use std::io::Write;
use std::time::{Duration, Instant};

use once_exec::{Cancel, CommandSpec, Registry, run};

const RUNS: usize = 500;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("once-exec-bench-{}", std::process::id()));
    let spec = CommandSpec::new("true", &dir, dir.join("true.log"));
    std::fs::create_dir_all(&dir)?;
    let registry = Registry::new();
    let cancel = Cancel::new();
    // Warm up the page cache and the allocator.
    for _ in 0..20 {
        run(&spec, &registry, &cancel)?;
    }
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let start = Instant::now();
        let outcome = run(&spec, &registry, &cancel)?;
        times.push(start.elapsed());
        assert!(outcome.success(), "{outcome:?}");
    }
    std::fs::remove_dir_all(&dir)?;
    times.sort_unstable();
    let mean = times.iter().sum::<Duration>() / RUNS as u32;
    let at = |q: f64| times[((RUNS as f64 * q) as usize).min(RUNS - 1)];
    writeln!(
        std::io::stdout().lock(),
        "run(`true`) x {RUNS}: p50 {:?}  mean {:?}  p90 {:?}  max {:?}",
        at(0.5),
        mean,
        at(0.9),
        times[RUNS - 1]
    )?;
    Ok(())
}
