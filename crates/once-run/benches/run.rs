//! Benchmarks of `once run`'s own costs, printed as plain figures:
//!
//! - the no-op run (everything cached) of a generated 1,000-target workspace with 10 input files
//!   per target: load, plan, key every action (hashing 10,000 files) and replay; target < 150 ms;
//! - the incremental run of the same workspace after one source file of one target changed (a
//!   leaf, and a foundation target many others depend on): what is re-keyed, what re-runs;
//! - scheduling overhead per action: a forced run of many actions that do nothing (`:`),
//!   against a bare `once_exec::run` of the same command; target < 1 ms;
//! - hashing throughput on warm files; target > 1 GB/s.
//!
//! Run with `cargo bench -p once-run --bench run`. The workspace is generated once under
//! `target/bench-run/` by `bench/gen_workspace.py --commands-only` (python3 is needed).

#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use once_exec::{Cancel, CommandSpec, Registry};
use once_graph::Workspace;
use once_run::{Cache, Options, Request, RunStatus, RunStore};

fn main() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-run");
    no_op_run(&base);
    incremental_run(&base);
    scheduling_overhead(&base);
    hashing(&base);
}

fn run_all(root: &Path, capability: &str, options: &Options) -> (Duration, once_run::RunReport) {
    let start = Instant::now();
    let ws = Workspace::load(root).expect("loads");
    let loaded = start.elapsed();
    let plan = once_run::plan(
        &ws,
        &Request {
            all: Some(capability.into()),
            ..Request::default()
        },
    )
    .expect("plans");
    let planned = start.elapsed();
    let run = RunStore::new(ws.root()).create().expect("run folder");
    let report = once_run::execute(
        &plan,
        &Cache::new(ws.root()),
        &run,
        &Registry::new(),
        &Cancel::new(),
        options,
        &mut |_| {},
    );
    if std::env::var_os("ONCE_BENCH_PHASES").is_some() {
        println!(
            "  load {:.1} ms, plan {:.1} ms, execute {:.1} ms",
            loaded.as_secs_f64() * 1e3,
            (planned - loaded).as_secs_f64() * 1e3,
            (start.elapsed() - planned).as_secs_f64() * 1e3
        );
    }
    (start.elapsed(), report)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn no_op_run(base: &Path) {
    let root = base.join("ws-1000x10");
    if !root.join("once.toml").exists() {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/gen_workspace.py");
        let status = Command::new("python3")
            .arg(script)
            .arg(&root)
            .args(["--targets", "1000", "--files", "10", "--commands-only"])
            .status()
            .expect("python3 runs the generator");
        assert!(status.success());
    }
    for capability in ["build", "test"] {
        let (cold, report) = run_all(&root, capability, &Options::default());
        assert_eq!(report.status, RunStatus::Succeeded, "{report:?}");
        let samples: Vec<Duration> = (0..7)
            .map(|_| {
                let (took, report) = run_all(&root, capability, &Options::default());
                assert_eq!(report.counts.cached, report.counts.total);
                took
            })
            .collect();
        println!(
            "no-op run, 1000 targets x 10 input files, --all {capability} ({} actions, all cached): \
             median {:.1} ms (first run {:.0} ms, {} ran)",
            report.counts.total,
            median(samples).as_secs_f64() * 1e3,
            cold.as_secs_f64() * 1e3,
            report.counts.ran,
        );
    }
}

/// One source file of `target` changes before each sample; `--all build` then re-runs the
/// target and everything that depends on it, and replays the rest.
fn incremental_run(base: &Path) {
    let root = base.join("ws-1000x10");
    // Leaves of the generated graph have the highest indexes; foundations the lowest.
    for (what, target) in [("a leaf", "pkg-00999"), ("a foundation", "pkg-00001")] {
        let file = root.join("packages").join(target).join("src/file0.txt");
        let original = std::fs::read(&file).expect("a source file");
        let _ = run_all(&root, "build", &Options::default());
        let mut ran = 0;
        let samples: Vec<Duration> = (0..5)
            .map(|i| {
                // Content no run has seen, so no earlier run's cached result can be replayed.
                let nonce = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos());
                let mut changed = original.clone();
                changed.extend_from_slice(format!("change {i} {nonce}\n").as_bytes());
                std::fs::write(&file, changed).expect("changes the file");
                let (took, report) = run_all(&root, "build", &Options::default());
                assert_eq!(report.status, RunStatus::Succeeded, "{report:?}");
                ran = report.counts.ran;
                took
            })
            .collect();
        std::fs::write(&file, &original).expect("restores the file");
        let _ = run_all(&root, "build", &Options::default());
        println!(
            "incremental run, 1000 targets x 10 input files, --all build after one file of {what} \
             ({target}) changed: median {:.1} ms ({ran} ran, the rest replayed)",
            median(samples).as_secs_f64() * 1e3,
        );
    }
}

fn scheduling_overhead(base: &Path) {
    let root = base.join("ws-noop");
    let count = 400;
    let mut manifest = String::new();
    for i in 0..count {
        manifest.push_str(&format!(
            "[targets.t{i:04}]\nkind = \"command\"\npath = \"t\"\n\
             [targets.t{i:04}.capabilities.build]\ncommand = \":\"\ninputs = [\"none\"]\n\n"
        ));
    }
    std::fs::create_dir_all(root.join("t")).expect("mkdir");
    std::fs::write(root.join("once.toml"), manifest).expect("manifest");
    let jobs = std::thread::available_parallelism().map_or(1, usize::from);

    // One at a time, so the per-action figure is not divided by the parallelism.
    let serial = Options {
        jobs: 1,
        force: true,
        keep_going: false,
        ..Options::default()
    };
    let samples: Vec<Duration> = (0..3).map(|_| run_all(&root, "build", &serial).0).collect();
    let per_action = median(samples) / count;

    let bare_root = base.join("bare");
    let registry = Registry::new();
    let spec = CommandSpec::new(":", &bare_root, bare_root.join("bare.log"));
    std::fs::create_dir_all(&bare_root).expect("mkdir");
    let start = Instant::now();
    for _ in 0..count {
        let outcome = once_exec::run(&spec, &registry, &Cancel::new()).expect("runs");
        assert!(outcome.success());
    }
    let bare = start.elapsed() / count;
    let parallel = Options {
        jobs,
        force: true,
        keep_going: false,
        ..Options::default()
    };
    let wall = median(
        (0..3)
            .map(|_| run_all(&root, "build", &parallel).0)
            .collect(),
    ) / count;
    println!(
        "action that does nothing (`:`), forced, {count} actions: {:.3} ms each with --jobs 1 \
         vs {:.3} ms for a bare once_exec::run => scheduling overhead {:.3} ms per action; \
         wall {:.3} ms per action with --jobs {jobs}",
        per_action.as_secs_f64() * 1e3,
        bare.as_secs_f64() * 1e3,
        per_action.saturating_sub(bare).as_secs_f64() * 1e3,
        wall.as_secs_f64() * 1e3,
    );
}

fn hashing(base: &Path) {
    let dir = base.join("hash");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let files: Vec<PathBuf> = (0..32).map(|i| dir.join(format!("f{i}.bin"))).collect();
    let size = 8 * 1024 * 1024;
    let mut content = vec![0u8; size];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for byte in content.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *byte = x as u8;
    }
    for file in &files {
        if std::fs::metadata(file).map(|m| m.len()).ok() != Some(size as u64) {
            std::fs::write(file, &content).expect("writes");
        }
    }
    let mut buffer = vec![0u8; 64 * 1024];
    let pass = |buffer: &mut [u8]| {
        let start = Instant::now();
        for file in &files {
            once_run::hash_file(file, buffer).expect("hashes");
        }
        start.elapsed()
    };
    pass(&mut buffer); // warms the page cache
    let took = median((0..5).map(|_| pass(&mut buffer)).collect());
    let bytes = (files.len() * size) as f64;
    println!(
        "hashing {} MB of warm files (BLAKE3, one thread, 64 KiB reads): {:.0} MB/s",
        bytes / 1e6,
        bytes / 1e6 / took.as_secs_f64()
    );
}
