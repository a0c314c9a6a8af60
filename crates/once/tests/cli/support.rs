//! A small fluent builder for running `once` in a fresh workspace, in the style of
//! `Test::new().manifest(…).args(…).run()`, and a handle on a live `once mcp` process.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use serde_json::Value;

/// How long any single wait on the binary may take before the test fails instead of hanging.
pub const PATIENCE: Duration = Duration::from_secs(10);

pub fn once_binary() -> &'static str {
    env!("CARGO_BIN_EXE_once")
}

/// A folder under the system temp dir, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new() -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("once-cli-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("creates a temp folder");
        TempDir(path.canonicalize().expect("canonical temp folder"))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One run of the binary in a workspace of its own.
pub struct Test {
    dir: TempDir,
    args: Vec<String>,
    current_dir: Option<PathBuf>,
}

impl Test {
    pub fn new() -> Test {
        Test {
            dir: TempDir::new(),
            args: Vec::new(),
            current_dir: None,
        }
    }

    pub fn manifest(self, text: &str) -> Test {
        self.file("once.toml", text)
    }

    pub fn file(self, path: &str, text: &str) -> Test {
        let path = self.dir.path().join(path);
        std::fs::create_dir_all(path.parent().expect("a parent folder")).expect("mkdir");
        std::fs::write(path, text).expect("writes a file");
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Test {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Run from this folder (relative to the workspace) instead of the workspace root.
    pub fn current_dir(mut self, relative: &str) -> Test {
        self.current_dir = Some(self.dir.path().join(relative));
        self
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn run(self) -> Run {
        let cwd = self
            .current_dir
            .clone()
            .unwrap_or_else(|| self.dir.path().to_path_buf());
        std::fs::create_dir_all(&cwd).expect("mkdir");
        let output = Command::new(once_binary())
            .args(&self.args)
            .current_dir(&cwd)
            .env_remove("ONCE_LOG")
            .stdin(Stdio::null())
            .output()
            .expect("runs once");
        Run {
            output,
            root: self.dir,
        }
    }
}

/// What a run printed, with the workspace's absolute path replaced by `[ROOT]`.
pub struct Run {
    pub output: Output,
    root: TempDir,
}

impl Run {
    pub fn code(&self) -> i32 {
        self.output.status.code().expect("exited, not killed")
    }

    pub fn stdout(&self) -> String {
        self.scrub(&self.output.stdout)
    }

    pub fn stderr(&self) -> String {
        self.scrub(&self.output.stderr)
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.output.stdout).expect("stdout is JSON")
    }

    /// Exit code, stdout and stderr in one text, for snapshots.
    pub fn transcript(&self) -> String {
        format!(
            "exit: {}\n--- stdout\n{}--- stderr\n{}",
            self.code(),
            self.stdout(),
            self.stderr()
        )
    }

    fn scrub(&self, bytes: &[u8]) -> String {
        String::from_utf8_lossy(bytes).replace(&self.root.path().display().to_string(), "[ROOT]")
    }
}

/// A live `once mcp` process, spoken to line by line.
pub struct Mcp {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Mcp {
    pub fn spawn(root: &Path, extra: &[&str]) -> Mcp {
        let mut child = Command::new(once_binary())
            .arg("--workspace")
            .arg(root)
            .arg("mcp")
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawns once mcp");
        let stdin = child.stdin.take();
        // Drain stderr so a chatty server can never block on a full pipe.
        let stderr = child.stderr.take().expect("piped stderr");
        std::thread::spawn(move || {
            std::io::copy(&mut BufReader::new(stderr), &mut std::io::sink())
        });
        let stdout = child.stdout.take().expect("piped stdout");
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Mcp {
            child,
            stdin,
            lines,
        }
    }

    pub fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        stdin.write_all(line.as_bytes()).expect("writes");
        stdin.write_all(b"\n").expect("writes");
        stdin.flush().expect("flushes");
    }

    /// The next line the server wrote, parsed; fails the test after [`PATIENCE`].
    pub fn recv(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(PATIENCE)
            .expect("the server answers in time");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    pub fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        let message =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(&message.to_string());
        self.recv()
    }

    pub fn initialize(&mut self) -> Value {
        let reply = self.request(
            0,
            "initialize",
            serde_json::json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "cli-test", "version": "0"},
            }),
        );
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        reply
    }

    pub fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        self.request(
            id,
            "tools/call",
            serde_json::json!({"name": tool, "arguments": arguments}),
        )
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits for the process to exit, failing the test after `limit`; returns the exit code and
    /// every line it wrote to stdout that was not read yet. Stdin stays as it is until then, so a
    /// test can tell an exit caused by a signal from one caused by end of input.
    pub fn wait(self, limit: Duration) -> (Option<i32>, Vec<String>) {
        let Mcp {
            mut child,
            stdin,
            lines,
        } = self;
        let (sender, done) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = sender.send(child.wait());
        });
        let status = done
            .recv_timeout(limit)
            .expect("the server exits in time")
            .expect("waits");
        drop(stdin);
        // The reader thread ends when the last writer of the pipe is gone.
        let mut rest = Vec::new();
        loop {
            match lines.recv_timeout(PATIENCE) {
                Ok(line) => rest.push(line),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => panic!("stdout stays open after exit"),
            }
        }
        (status.code(), rest)
    }

    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).expect("a pid fits in i32")
    }
}
