//! Benchmark of `once mcp` under a client that writes requests and does not read: 40,000
//! `tools/list` requests go in while nothing is read, then every reply is read. It reports the
//! server's peak resident memory (`VmHWM` of `/proc/PID/status`, taken before the server exits),
//! which the bounded outbox keeps flat: once the outbox is full the server stops reading, the pipe
//! fills and the client's writes block, instead of the replies piling up in the server.
//!
//! Run with `cargo bench -p once --bench flood`. It prints figures; it asserts nothing about them.

#![allow(clippy::print_stdout)]

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const REQUESTS: usize = 40_000;
/// How long the writer must make no progress to count as blocked by the server.
const STALL: Duration = Duration::from_secs(1);

fn main() {
    let starter = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/starter");
    let mut child = Command::new(env!("CARGO_BIN_EXE_once"))
        .arg("--workspace")
        .arg(&starter)
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawns once mcp");
    let pid = child.id();
    let stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");

    let written = Arc::new(AtomicUsize::new(0));
    let (release, released) = mpsc::channel::<()>();
    let progress = Arc::clone(&written);
    let writer = std::thread::spawn(move || {
        let mut stdin = BufWriter::with_capacity(4096, stdin);
        let initialize = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"flood","version":"0"}}}"#;
        writeln!(stdin, "{initialize}").expect("writes");
        for id in 1..=REQUESTS {
            writeln!(
                stdin,
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#
            )
            .expect("writes");
            progress.store(id, Ordering::Relaxed);
        }
        stdin.flush().expect("flushes");
        // Keep stdin open until every reply was read, so the server is alive to be measured.
        let _ = released.recv();
    });

    // Wait until the writer makes no progress (the server stopped reading) or is done.
    let started = Instant::now();
    let mut last = (0, Instant::now());
    let stalled_at = loop {
        std::thread::sleep(Duration::from_millis(50));
        let now = written.load(Ordering::Relaxed);
        if now == REQUESTS {
            break None;
        }
        if now != last.0 {
            last = (now, Instant::now());
        } else if last.1.elapsed() >= STALL {
            break Some(now);
        }
        assert!(started.elapsed() < Duration::from_secs(300), "no progress");
    };
    let while_stalled = status(pid, "VmRSS:");
    match stalled_at {
        Some(n) => println!(
            "the server stopped reading after {n} of {REQUESTS} requests; RSS then {:.1} MiB",
            mib(while_stalled)
        ),
        None => println!(
            "all {REQUESTS} requests were taken without a reply read; RSS then {:.1} MiB",
            mib(while_stalled)
        ),
    }

    let mut lines = BufReader::new(stdout).lines();
    let mut reply_bytes = 0;
    for expected in 0..=REQUESTS {
        let line = lines.next().expect("a reply").expect("reads");
        let reply: serde_json::Value = serde_json::from_str(&line).expect("a JSON reply");
        assert_eq!(reply["id"], expected, "replies come in order");
        reply_bytes = line.len();
    }
    let peak = status(pid, "VmHWM:");
    println!("one tools/list reply: {reply_bytes} bytes");
    println!(
        "peak RSS (VmHWM) over {REQUESTS} unread tools/list requests: {:.1} MiB",
        mib(peak)
    );
    let _ = release.send(());
    writer.join().expect("the writer ends");
    let _ = child.wait();
}

/// A `kB` line of `/proc/PID/status`.
fn status(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("reads /proc/PID/status")
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .expect("the key in /proc/PID/status")
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}
