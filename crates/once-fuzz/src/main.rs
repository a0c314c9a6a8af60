//! `once-fuzz`: the stable-Rust fuzz driver.
//!
//! ```text
//! once-fuzz TARGET|all [--seconds N] [--seed S]
//! once-fuzz TARGET --replay FILE
//! ```
//!
//! For each target it runs every seed of `corpus/TARGET/`, then mutants of the seeds (and of
//! earlier mutants) until its time is up, each under `catch_unwind`. A failing input is saved to
//! `target/fuzz-crashes/TARGET/<hash>` with the command that replays it; an input still running
//! after `INPUT_TIMEOUT` counts as a hang and is saved the same way. It prints the inputs executed
//! and the failures per target, and exits 1 if there was any. It is a test tool: it must never
//! write anywhere but `target/fuzz-crashes/` and the targets' scratch folders.

use std::io::{self, Write};
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use once_fuzz::Target;
use once_fuzz::mutate::Mutator;

/// How long one input may run before it counts as a hang.
const INPUT_TIMEOUT: Duration = Duration::from_secs(60);

/// How many earlier mutants are kept to mutate further.
const RECENT: usize = 256;

const USAGE: &str = "usage: once-fuzz TARGET|all [--seconds N] [--seed S]\n       \
                     once-fuzz TARGET --replay FILE\n\
                     targets: mcp, manifest, memory, changes, http, remote";

fn main() -> ExitCode {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("once-fuzz: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    panic::set_hook(Box::new(record_panic));
    if let Some(file) = &args.replay {
        BACKTRACES.store(true, Ordering::Relaxed);
        return replay(args.targets[0], file);
    }
    say(&format!(
        "once-fuzz: seed {} (`--seed {}` repeats the same inputs), {} s per target",
        args.seed,
        args.seed,
        args.seconds.as_secs()
    ));
    let mut total = 0;
    let mut failures = 0;
    for target in &args.targets {
        let (inputs, failed) = fuzz(*target, args.seconds, args.seed);
        total += inputs;
        failures += usize::from(failed);
    }
    say(&format!(
        "once-fuzz: {} targets, {total} inputs, {failures} crashes",
        args.targets.len()
    ));
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[derive(Debug)]
struct Args {
    targets: Vec<Target>,
    seconds: Duration,
    seed: u64,
    replay: Option<PathBuf>,
}

impl Args {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
        let name = args.next().ok_or("no target given")?;
        let targets = match name.as_str() {
            "all" => once_fuzz::TARGETS.to_vec(),
            "-h" | "--help" => return Err("fuzzes the parsers that take hostile input".into()),
            name => vec![once_fuzz::target(name).ok_or(format!("no target named `{name}`"))?],
        };
        let mut parsed = Args {
            targets,
            seconds: Duration::from_secs(10),
            seed: default_seed(),
            replay: None,
        };
        while let Some(flag) = args.next() {
            let mut value = || args.next().ok_or(format!("`{flag}` needs a value"));
            match flag.as_str() {
                "--seconds" => {
                    let text = value()?;
                    let n: u64 = text
                        .parse()
                        .map_err(|_| format!("`--seconds {text}` is not a whole number"))?;
                    parsed.seconds = Duration::from_secs(n);
                }
                "--seed" => {
                    let text = value()?;
                    parsed.seed = text
                        .parse()
                        .map_err(|_| format!("`--seed {text}` is not a whole number"))?;
                }
                "--replay" => parsed.replay = Some(PathBuf::from(value()?)),
                other => return Err(format!("unknown argument `{other}`")),
            }
        }
        if parsed.replay.is_some() && parsed.targets.len() != 1 {
            return Err("`--replay` needs one target, not `all`".into());
        }
        Ok(parsed)
    }
}

/// A different seed per run unless one is given: the clock and the process id.
fn default_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    (nanos ^ u64::from(std::process::id()).rotate_left(32)) % 1_000_000_000_000
}

/// Runs one target for `seconds` on a thread of its own (so its scratch folders are removed
/// when it ends) and reports; returns the inputs executed and whether one failed.
fn fuzz(target: Target, seconds: Duration, seed: u64) -> (u64, bool) {
    let seeds = match once_fuzz::corpus(target.name) {
        Ok(seeds) => seeds,
        Err(e) => {
            eprintln!(
                "once-fuzz: cannot read the corpus `{}`: {e}",
                once_fuzz::corpus_dir(target.name).display()
            );
            return (0, true);
        }
    };
    let current: Arc<Current> = Arc::default();
    let (done_tx, done_rx) = mpsc::channel();
    let shared = Arc::clone(&current);
    let worker = std::thread::Builder::new()
        .name(format!("fuzz-{}", target.name))
        .spawn(move || {
            let _ = done_tx.send(fuzz_loop(target, seconds, seed, &seeds, &shared));
        });
    let worker = match worker {
        Ok(worker) => worker,
        Err(e) => {
            eprintln!("once-fuzz: cannot start a thread: {e}");
            return (0, true);
        }
    };
    let outcome = loop {
        match done_rx.recv_timeout(Duration::from_secs(1)) {
            Ok(outcome) => break outcome,
            Err(RecvTimeoutError::Disconnected) => {
                break Outcome {
                    inputs: 0,
                    elapsed: Duration::ZERO,
                    failure: Some((Vec::new(), "the fuzzing thread died".into())),
                };
            }
            Err(RecvTimeoutError::Timeout) => {
                let hung = lock(&current)
                    .as_ref()
                    .filter(|(start, _)| start.elapsed() > INPUT_TIMEOUT)
                    .map(|(_, input)| input.clone());
                if let Some(input) = hung {
                    // The thread cannot be stopped; report and leave with it still running.
                    report_failure(
                        target,
                        &input,
                        &format!("an input ran for more than {INPUT_TIMEOUT:?}"),
                    );
                    std::process::exit(1);
                }
            }
        }
    };
    // The thread ends by dropping its scratch folders; leaving before would leave them behind.
    let _ = worker.join();
    if let Some((input, message)) = &outcome.failure {
        report_failure(target, input, message);
    }
    let failed = outcome.failure.is_some();
    say(&format!(
        "{}: {} inputs in {} s, {} crashes",
        target.name,
        outcome.inputs,
        outcome.elapsed.as_secs(),
        usize::from(failed)
    ));
    (outcome.inputs, failed)
}

/// The input being run and since when, for the watchdog.
type Current = Mutex<Option<(Instant, Vec<u8>)>>;

struct Outcome {
    inputs: u64,
    elapsed: Duration,
    /// The failing input and why it failed.
    failure: Option<(Vec<u8>, String)>,
}

fn fuzz_loop(
    target: Target,
    seconds: Duration,
    seed: u64,
    seeds: &[(String, Vec<u8>)],
    current: &Current,
) -> Outcome {
    let name_hash = blake3::hash(target.name.as_bytes());
    let salt = u64::from_le_bytes(name_hash.as_bytes()[..8].try_into().unwrap_or_default());
    let mut mutator = Mutator::new(seed ^ salt, target.dictionary, target.max_len);
    let seeds: Vec<Vec<u8>> = seeds.iter().map(|(_, data)| data.clone()).collect();
    let mut recent: Vec<Vec<u8>> = Vec::with_capacity(RECENT);
    let start = Instant::now();
    let mut inputs = 0;
    let mut run = |input: Vec<u8>| -> Result<Vec<u8>, (Vec<u8>, String)> {
        *lock(current) = Some((Instant::now(), input.clone()));
        let result = run_one(target, &input);
        *lock(current) = None;
        inputs += 1;
        match result {
            Ok(()) => Ok(input),
            Err(message) => Err((input, message)),
        }
    };
    for data in &seeds {
        if let Err(failure) = run(data.clone()) {
            return Outcome {
                inputs,
                elapsed: start.elapsed(),
                failure: Some(failure),
            };
        }
    }
    while start.elapsed() < seconds {
        let input = if recent.is_empty() || mutator.rng().one_in(2) {
            mutator.generate(&seeds)
        } else {
            mutator.generate(&recent)
        };
        match run(input) {
            Ok(input) => {
                if mutator.rng().one_in(8) {
                    if recent.len() == RECENT {
                        let at = mutator.rng().below(RECENT);
                        recent[at] = input;
                    } else {
                        recent.push(input);
                    }
                }
            }
            Err(failure) => {
                return Outcome {
                    inputs,
                    elapsed: start.elapsed(),
                    failure: Some(failure),
                };
            }
        }
    }
    Outcome {
        inputs,
        elapsed: start.elapsed(),
        failure: None,
    }
}

/// Runs one input; `Err` carries what the panic said.
fn run_one(target: Target, input: &[u8]) -> Result<(), String> {
    LAST_PANIC.with(|last| last.borrow_mut().clear());
    match panic::catch_unwind(AssertUnwindSafe(|| (target.run)(input))) {
        Ok(()) => Ok(()),
        Err(payload) => {
            let recorded = LAST_PANIC.with(|last| std::mem::take(&mut *last.borrow_mut()));
            if !recorded.is_empty() {
                return Err(recorded);
            }
            // Raised again from another thread (`resume_unwind` calls no hook): the payload.
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_string()))
                .unwrap_or_else(|| "a panic without a message".into());
            Err(message)
        }
    }
}

/// Replays one saved input and says whether it still fails.
fn replay(target: Target, file: &Path) -> ExitCode {
    let input = match std::fs::read(file) {
        Ok(input) => input,
        Err(e) => {
            eprintln!("once-fuzz: cannot read `{}`: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    match run_one(target, &input) {
        Ok(()) => {
            say(&format!(
                "{}: `{}` passes every property",
                target.name,
                file.display()
            ));
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("{}: `{}` fails: {message}", target.name, file.display());
            ExitCode::FAILURE
        }
    }
}

/// Saves a failing input under `target/fuzz-crashes/` and says how to replay it.
fn report_failure(target: Target, input: &[u8], message: &str) {
    let hash = blake3::hash(input).to_hex();
    let dir = target_dir().join("fuzz-crashes").join(target.name);
    let file = dir.join(&hash.as_str()[..16]);
    let saved = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&file, input));
    eprintln!("{}: FAILED: {message}", target.name);
    match saved {
        Ok(()) => eprintln!(
            "{}: the input is saved in `{}`; replay it with\n  \
             cargo run -p once-fuzz --profile fuzz -- {} --replay {}",
            target.name,
            file.display(),
            target.name,
            file.display()
        ),
        Err(e) => eprintln!(
            "{}: cannot save the input to `{}`: {e}; it was {:?}",
            target.name,
            file.display(),
            String::from_utf8_lossy(input)
        ),
    }
}

/// Cargo's target folder: `CARGO_TARGET_DIR`, or `target/` at the workspace root.
fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    crate_dir
        .parent()
        .and_then(Path::parent)
        .unwrap_or(crate_dir)
        .join("target")
}

/// Whether the panic hook records backtraces: only when replaying.
static BACKTRACES: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// What the last panic on this thread said, and where.
    static LAST_PANIC: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// The panic hook: records instead of printing, since a tool of the `mcp` target panics on
/// purpose and the server catches it; the driver prints only the panics that fail an input.
/// When replaying with `RUST_BACKTRACE=1` the record holds a backtrace (never while fuzzing,
/// where resolving one per expected panic would cost more than the input).
fn record_panic(info: &panic::PanicHookInfo<'_>) {
    let mut text = info.to_string();
    if BACKTRACES.load(Ordering::Relaxed) {
        let backtrace = std::backtrace::Backtrace::capture();
        if backtrace.status() == std::backtrace::BacktraceStatus::Captured {
            text.push_str(&format!("\n{backtrace}"));
        }
    }
    LAST_PANIC.with(|last| *last.borrow_mut() = text);
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One line on stdout; a closed stdout is not worth failing the run for.
fn say(line: &str) {
    let _ = writeln!(io::stdout().lock(), "{line}");
}
