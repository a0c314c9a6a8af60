//! Per-action overhead of `once_exec::run`: spawn, capture and wait on `true`, 500 times, next to
//! a bare `std::process::Command` running the same `sh -c true` as the floor.
//!
//! Prints p50, mean, p90 and max for both; the difference is what `once-exec` adds (a process
//! group, pipes, three threads, a log file). It must never need anything but `/bin/sh`.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use once_exec::{Cancel, CommandSpec, Registry, run};

const RUNS: usize = 500;
const WARM_UP: usize = 20;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("once-exec-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let spec = CommandSpec::new("true", &dir, dir.join("true.log"));
    let registry = Registry::new();
    let cancel = Cancel::new();
    let once_exec = measure(|| {
        let outcome = run(&spec, &registry, &cancel)?;
        assert!(outcome.success(), "{outcome:?}");
        Ok(())
    })?;
    let bare = measure(|| {
        let status = Command::new("/bin/sh")
            .args(["-c", "true"])
            .stdin(Stdio::null())
            .status()?;
        assert!(status.success());
        Ok(())
    })?;
    std::fs::remove_dir_all(&dir)?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", report("once_exec::run(`true`)", once_exec))?;
    writeln!(stdout, "{}", report("bare Command sh -c true", bare))?;
    Ok(())
}

/// Times `action` `RUNS` times after a warm-up; sorted.
fn measure(
    mut action: impl FnMut() -> Result<(), Box<dyn std::error::Error>>,
) -> Result<Vec<Duration>, Box<dyn std::error::Error>> {
    for _ in 0..WARM_UP {
        action()?;
    }
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let start = Instant::now();
        action()?;
        times.push(start.elapsed());
    }
    times.sort_unstable();
    Ok(times)
}

fn report(name: &str, times: Vec<Duration>) -> String {
    let mean = times.iter().sum::<Duration>() / RUNS as u32;
    let at = |q: f64| times[((RUNS as f64 * q) as usize).min(RUNS - 1)];
    format!(
        "{name:<26} x {RUNS}: p50 {:>9.3?}  mean {:>9.3?}  p90 {:>9.3?}  max {:>9.3?}",
        at(0.5),
        mean,
        at(0.9),
        times[RUNS - 1]
    )
}
