//! Benchmark of `once mcp` over a pipe, as an agent's client sees it: time from spawn to the
//! `initialize` reply, latency of `once_query_target` on a 10,000-target workspace, pings per
//! second, and the server's resident memory when idle.
//!
//! Run with `cargo bench -p once --bench mcp`. It prints figures; it asserts nothing about them.

#![allow(clippy::print_stdout)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const TARGETS: usize = 10_000;
const SPAWNS: usize = 50;
const QUERIES: usize = 2_000;
const PINGS: usize = 20_000;

fn main() {
    let starter = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/starter");
    let spawn = spawn_to_initialize(&starter);
    report("spawn → initialize reply (starter workspace)", &spawn);
    let mut small = Server::start(&starter);
    small.initialize();
    println!(
        "idle RSS, starter workspace: {:.1} MiB",
        mib(small.rss_kib())
    );
    small.stop();

    let large = generate();
    settle(&large.join("once.toml"));
    let mut server = Server::start(&large);
    server.initialize();
    println!(
        "idle RSS, {TARGETS} targets loaded: {:.1} MiB",
        mib(server.rss_kib())
    );
    let latencies = server.query_latencies();
    report(
        &format!("once_query_target over a pipe ({TARGETS} targets)"),
        &latencies,
    );
    let rate = server.pings_per_second();
    println!("pings per second over a pipe: {rate:.0}");
    server.stop();
}

/// Waits until the just-generated manifest is older than the window in which its times cannot
/// prove it unchanged (see `once_fs::Stamp`): the server hashes it before every request until
/// then, and the steady state is what this measures. (A benchmark may wait; a test may not.)
fn settle(manifest: &Path) {
    let written = std::fs::metadata(manifest)
        .and_then(|m| m.modified())
        .expect("the manifest exists");
    let settled = written + Duration::from_millis(2_100);
    if let Ok(left) = settled.duration_since(std::time::SystemTime::now()) {
        std::thread::sleep(left);
    }
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn generate() -> PathBuf {
    let root = std::env::temp_dir().join(format!("once-bench-mcp-{TARGETS}"));
    let generator = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/gen_workspace.py");
    let status = Command::new("python3")
        .arg(generator)
        .arg(&root)
        .args(["--targets", &TARGETS.to_string()])
        .status()
        .expect("python3 runs the workspace generator");
    assert!(status.success(), "the generator failed");
    root
}

/// Measured on a small workspace, so the figure is the server's own start-up, not a big load.
fn spawn_to_initialize(root: &Path) -> Vec<Duration> {
    (0..SPAWNS)
        .map(|_| {
            let started = Instant::now();
            let mut server = Server::start(root);
            server.initialize();
            let elapsed = started.elapsed();
            server.stop();
            elapsed
        })
        .collect()
}

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    fn start(root: &Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_once"))
            .arg("--workspace")
            .arg(root)
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawns once mcp");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        Server {
            child,
            stdin,
            stdout,
            next_id: 0,
        }
    }

    fn request(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        self.next_id += 1;
        let message = serde_json::json!({
            "jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params,
        });
        let mut line = serde_json::to_string(&message).expect("encodes");
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).expect("writes");
        self.stdin.flush().expect("flushes");
        let mut reply = String::new();
        self.stdout.read_line(&mut reply).expect("reads");
        serde_json::from_str(&reply).expect("a JSON reply")
    }

    fn initialize(&mut self) {
        let reply = self.request(
            "initialize",
            serde_json::json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            }),
        );
        assert!(reply.get("result").is_some(), "{reply}");
        let note = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
        self.stdin.write_all(note).expect("writes");
    }

    fn query_latencies(&mut self) -> Vec<Duration> {
        (0..QUERIES)
            .map(|i| {
                let name = format!("pkg-{:05}", (i * 7919) % TARGETS);
                let started = Instant::now();
                let reply = self.request(
                    "tools/call",
                    serde_json::json!({"name": "once_query_target", "arguments": {"name": name}}),
                );
                let elapsed = started.elapsed();
                assert!(
                    reply["result"]["isError"] != serde_json::json!(true),
                    "{reply}"
                );
                elapsed
            })
            .collect()
    }

    fn pings_per_second(&mut self) -> f64 {
        let started = Instant::now();
        for _ in 0..PINGS {
            self.request("ping", serde_json::json!({}));
        }
        PINGS as f64 / started.elapsed().as_secs_f64()
    }

    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("reads /proc");
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS in /proc/PID/status")
    }

    fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

fn report(what: &str, samples: &[Duration]) {
    let mut sorted = samples.to_vec();
    sorted.sort();
    let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
    println!(
        "{what}: p50 {:.3} ms, p99 {:.3} ms, min {:.3} ms, max {:.3} ms ({} samples)",
        ms(at(0.5)),
        ms(at(0.99)),
        ms(sorted[0]),
        ms(sorted[sorted.len() - 1]),
        sorted.len()
    );
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
