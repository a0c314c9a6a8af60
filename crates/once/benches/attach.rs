//! Benchmark of the live session's bridge: the round trip of a `ping` through `once mcp --attach`
//! (stdio → bridge → loopback TCP → `once serve` → back) against the same ping to a direct
//! `once mcp` over a pipe. The difference at p50 is what attaching costs; the target is under
//! 0.2 ms.
//!
//! Run with `cargo bench -p once --bench attach`. It prints figures; it asserts nothing about
//! them. The session lives in a private `XDG_STATE_HOME`, and is killed at the end.

#![allow(clippy::print_stdout)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const WARM_UP: usize = 1_000;
const PINGS: usize = 20_000;

fn main() {
    let starter = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/starter");
    let state = std::env::temp_dir().join(format!("once-bench-attach-{}", std::process::id()));
    std::fs::create_dir_all(&state).expect("creates a state dir");

    let mut direct = Client::spawn(
        Command::new(env!("CARGO_BIN_EXE_once"))
            .arg("--workspace")
            .arg(&starter)
            .arg("mcp"),
    );
    let direct_times = direct.pings();
    direct.stop();

    let mut session = Session::start(&starter, &state);
    let mut attached = Client::spawn(
        Command::new(env!("CARGO_BIN_EXE_once"))
            .args(["mcp", "--attach"])
            .arg(&starter)
            .env("XDG_STATE_HOME", &state),
    );
    let attached_times = attached.pings();
    attached.stop();
    session.stop();
    let _ = std::fs::remove_dir_all(&state);

    let direct = report("ping, direct `once mcp` over a pipe", direct_times);
    let attached = report("ping, through `once mcp --attach`", attached_times);
    println!(
        "added by the bridge: p50 {:.1} µs, p99 {:.1} µs (target: p50 under 200 µs)",
        micros(attached.0.saturating_sub(direct.0)),
        micros(attached.1.saturating_sub(direct.1)),
    );
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

/// Prints min, p50, p99 and max; returns (p50, p99).
fn report(label: &str, mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    println!(
        "{label} ({} round trips): min {:.1} µs, p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs",
        times.len(),
        micros(times[0]),
        micros(at(0.5)),
        micros(at(0.99)),
        micros(times[times.len() - 1]),
    );
    (at(0.5), at(0.99))
}

/// A stdio MCP client of a child process, initialized.
struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Client {
    fn spawn(command: &mut Command) -> Client {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawns once");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut client = Client {
            child,
            stdin,
            stdout,
        };
        client.send(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#,
        );
        let reply = client.receive();
        assert!(reply.contains("\"result\""), "{reply}");
        client.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        client
    }

    fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).expect("writes");
        self.stdin.write_all(b"\n").expect("writes");
        self.stdin.flush().expect("flushes");
    }

    fn receive(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("reads");
        assert!(!line.is_empty(), "the server closed the connection");
        line
    }

    fn pings(&mut self) -> Vec<Duration> {
        let mut times = Vec::with_capacity(PINGS);
        for i in 0..WARM_UP + PINGS {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{},"method":"ping"}}"#, i + 1);
            let started = Instant::now();
            self.send(&line);
            let reply = self.receive();
            let elapsed = started.elapsed();
            assert!(reply.contains("\"result\":{}"), "{reply}");
            if i >= WARM_UP {
                times.push(elapsed);
            }
        }
        times
    }

    fn stop(self) {
        let Client {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let _ = child.wait();
    }
}

/// A `once serve` of the starter workspace, ready when its ready line is printed.
struct Session {
    child: Child,
}

impl Session {
    fn start(root: &Path, state: &PathBuf) -> Session {
        let mut child = Command::new(env!("CARGO_BIN_EXE_once"))
            .arg("--workspace")
            .arg(root)
            .arg("serve")
            .env("XDG_STATE_HOME", state)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawns once serve");
        let mut stderr = BufReader::new(child.stderr.take().expect("piped stderr"));
        let mut line = String::new();
        while !line.contains("listening on 127.0.0.1:") {
            line.clear();
            let n = stderr.read_line(&mut line).expect("reads stderr");
            assert!(n > 0, "once serve exited before it was ready");
        }
        // Keep draining stderr so the session never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Session { child }
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
