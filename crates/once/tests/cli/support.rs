//! A small fluent builder for running `once` in a fresh workspace, in the style of
//! `Test::new().manifest(…).args(…).run()`, a handle on a live `once mcp` process, and a guard on
//! a live `once serve` that kills it when dropped; and a process run in the background whose
//! every wait is bounded.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
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
    env: Vec<(String, String)>,
    current_dir: Option<PathBuf>,
}

impl Test {
    pub fn new() -> Test {
        Test {
            dir: TempDir::new(),
            args: Vec::new(),
            env: Vec::new(),
            current_dir: None,
        }
    }

    /// Set an environment variable of the run (the colour variables are otherwise unset).
    pub fn env(mut self, name: &str, value: &str) -> Test {
        self.env.push((name.to_owned(), value.to_owned()));
        self
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
            .env_remove("NO_COLOR")
            .env_remove("CLICOLOR_FORCE")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
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

    /// The workspace the command ran in (still there until the run is dropped).
    pub fn root(&self) -> &Path {
        self.root.path()
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
        let mut command = Command::new(once_binary());
        command.arg("--workspace").arg(root).arg("mcp").args(extra);
        Mcp::from_command(command)
    }

    /// `once mcp --attach [DIR]`, finding sessions in the state dir `state`.
    pub fn attach(state: &Path, dir: Option<&Path>) -> Mcp {
        Mcp::from_command(attach_command(state, dir))
    }

    /// Runs `command` (any way of starting an MCP server on stdio) with piped stdio.
    pub fn from_command(mut command: Command) -> Mcp {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawns once");
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

    /// Sends `line` if the server still reads: one that has exited (a broken pipe) is no error.
    pub fn send_unless_gone(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        let _ = writeln!(stdin, "{line}").and_then(|()| stdin.flush());
    }

    /// The next line the server wrote, parsed; fails the test after [`PATIENCE`].
    pub fn recv(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(PATIENCE)
            .expect("the server answers in time");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// The next line the server wrote, unparsed; fails the test after `limit`.
    pub fn recv_line_within(&mut self, limit: Duration) -> String {
        self.lines
            .recv_timeout(limit)
            .expect("the server answers in time")
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

    /// Every tool `tools/list` lists, following `nextCursor` from page to page (ids from `id`).
    pub fn tools(&mut self, id: u64) -> Vec<Value> {
        let mut tools = Vec::new();
        let mut params = serde_json::json!({});
        for id in id.. {
            let page = self.request(id, "tools/list", params);
            tools.extend(page["result"]["tools"].as_array().expect("tools").clone());
            match page["result"]["nextCursor"].as_str() {
                Some(cursor) => params = serde_json::json!({"cursor": cursor}),
                None => break,
            }
        }
        tools
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

/// `once mcp --attach [DIR]` with `XDG_STATE_HOME` set to `state`.
pub fn attach_command(state: &Path, dir: Option<&Path>) -> Command {
    let mut command = Command::new(once_binary());
    command
        .args(["mcp", "--attach"])
        .args(dir)
        .env("XDG_STATE_HOME", state)
        .env_remove("ONCE_LOG");
    command
}

/// Runs `command` to the end with stdin closed, failing the test after [`PATIENCE`].
pub fn output_within(command: Command) -> Output {
    Running::start(command).finish(PATIENCE)
}

/// A process started with stdin closed and its output collected in the background, for a test
/// that acts while it runs.
pub struct Running {
    pid: u32,
    done: Receiver<std::io::Result<Output>>,
}

impl Running {
    pub fn start(mut command: Command) -> Running {
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawns once");
        let pid = child.id();
        let (sender, done) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = sender.send(child.wait_with_output());
        });
        Running { pid, done }
    }

    /// The process's id, for a test that signals it.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Waits for the end, failing the test (and killing the process) after `limit`.
    pub fn finish(self, limit: Duration) -> Output {
        match self.done.recv_timeout(limit) {
            Ok(output) => output.expect("waits"),
            Err(_) => {
                // SAFETY: a signal to the child we spawned, which has not been reaped (its waiter
                // is still blocked), so the pid is still ours.
                unsafe { libc::kill(i32::try_from(self.pid).expect("pid fits"), libc::SIGKILL) };
                panic!("`once` did not finish within {limit:?}");
            }
        }
    }
}

/// A live `once serve`, started in a session of its own (`setsid`), so that every process it
/// spawns can be found by session id after it is gone. Killed when dropped, so a failing test
/// leaves nothing behind.
pub struct Serve {
    child: Option<Child>,
    pub port: u16,
    state: PathBuf,
    /// stderr after the ready line, for a test that fails.
    stderr: Receiver<String>,
}

impl Serve {
    /// Starts `once -C root serve EXTRA` with `XDG_STATE_HOME=state` and waits for the ready
    /// line `… listening on 127.0.0.1:PORT …` on stderr: the port is bound and the registry
    /// entry is published by the time it is printed, so no test polls for either.
    pub fn start(root: &Path, state: &Path, extra: &[&str]) -> Serve {
        Serve::try_start(root, state, extra)
            .unwrap_or_else(|stderr| panic!("once serve failed:\n{stderr}"))
    }

    /// As [`Serve::start`], but returns everything the process wrote to stderr when it exits
    /// before it is ready.
    pub fn try_start(root: &Path, state: &Path, extra: &[&str]) -> Result<Serve, String> {
        Serve::try_start_with(root, state, extra, &[])
    }

    /// As [`Serve::start`], but started in the folder `cwd` with no `-C`, so that `once serve`
    /// finds its workspace as a person's shell would.
    pub fn start_in(cwd: &Path, state: &Path, extra: &[&str]) -> Serve {
        let mut command = Command::new(once_binary());
        command.current_dir(cwd).arg("serve").args(extra);
        Serve::try_start_command(command, state)
            .unwrap_or_else(|stderr| panic!("once serve failed:\n{stderr}"))
    }

    /// As [`Serve::start`], with environment variables of its own (`PATH`, say).
    pub fn start_with(root: &Path, state: &Path, extra: &[&str], env: &[(&str, &Path)]) -> Serve {
        Serve::try_start_with(root, state, extra, env)
            .unwrap_or_else(|stderr| panic!("once serve failed:\n{stderr}"))
    }

    fn try_start_with(
        root: &Path,
        state: &Path,
        extra: &[&str],
        env: &[(&str, &Path)],
    ) -> Result<Serve, String> {
        let mut command = Command::new(once_binary());
        command.envs(env.iter().copied());
        command.arg("-C").arg(root).arg("serve").args(extra);
        Serve::try_start_command(command, state)
    }

    fn try_start_command(mut command: Command, state: &Path) -> Result<Serve, String> {
        command
            .env("XDG_STATE_HOME", state)
            .env_remove("ONCE_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // SAFETY: setsid is async-signal-safe and touches only the child.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = command.spawn().expect("spawns once serve");
        let stderr = child.stderr.take().expect("piped stderr");
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let mut serve = Serve {
            child: Some(child),
            port: 0,
            state: state.to_path_buf(),
            stderr: lines,
        };
        let mut seen = String::new();
        loop {
            match serve.stderr.recv_timeout(PATIENCE) {
                Ok(line) => {
                    if let Some(port) = ready_port(&line) {
                        serve.port = port;
                        return Ok(serve);
                    }
                    seen.push_str(&line);
                    seen.push('\n');
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(seen),
                Err(mpsc::RecvTimeoutError::Timeout) => panic!("once serve is not ready:\n{seen}"),
            }
        }
    }

    /// The one-time window link `once serve` prints right after its ready line.
    pub fn login_url(&self) -> String {
        loop {
            let line = self
                .stderr
                .recv_timeout(PATIENCE)
                .expect("once serve prints the window's link");
            if line.contains("?login=")
                && let Some(at) = line.find("http://")
            {
                return line[at..]
                    .split_whitespace()
                    .next()
                    .expect("a link")
                    .to_owned();
            }
        }
    }

    pub fn pid(&self) -> i32 {
        let child = self.child.as_ref().expect("still running");
        i32::try_from(child.id()).expect("a pid fits in i32")
    }

    /// Its registry file.
    pub fn entry_path(&self) -> PathBuf {
        self.state
            .join("once/mcp")
            .join(format!("{}.json", self.pid()))
    }

    pub fn entry(&self) -> Value {
        let text = std::fs::read(self.entry_path()).expect("reads the registry entry");
        serde_json::from_slice(&text).expect("the entry is JSON")
    }

    /// Sends `signal` and waits for the exit, failing the test after [`PATIENCE`]; returns the
    /// exit code (`None` when a signal ended it).
    pub fn stop_with(&mut self, signal: i32) -> Option<i32> {
        let mut child = self.child.take().expect("still running");
        let pid = i32::try_from(child.id()).expect("a pid fits in i32");
        // SAFETY: a signal to our own, not yet reaped child.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "signals once serve");
        let (sender, done) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = sender.send(child.wait());
        });
        let status = done
            .recv_timeout(PATIENCE)
            .unwrap_or_else(|_| {
                // SAFETY: as above; the waiter still holds it unreaped.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                panic!("once serve did not stop within {PATIENCE:?}")
            })
            .expect("waits");
        status.code()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn ready_port(line: &str) -> Option<u16> {
    let rest = &line[line.find("listening on 127.0.0.1:")? + "listening on 127.0.0.1:".len()..];
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// An HTTP answer as the window or `/mcp` sent it: status, headers (as sent) and body.
#[derive(Debug)]
pub struct HttpReply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl HttpReply {
    /// Parses a whole answer: the status line, the headers, a blank line, the body.
    pub fn parse(text: &str) -> HttpReply {
        let (head, body) = text
            .split_once("\r\n\r\n")
            .unwrap_or_else(|| panic!("no head: {text:?}"));
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|line| line.split(' ').nth(1))
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("no status: {head:?}"));
        let headers = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
            .collect();
        HttpReply {
            status,
            headers,
            body: body.to_owned(),
        }
    }

    /// The first value of header `name`, in any case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON; fails the test if it is not.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}), status {}: {:?}", self.status, self.body))
    }
}

/// Copies the folder `from` into the existing folder `to`, recursively: for fixtures that a test
/// changes or serves from a folder of its own. A `.once` folder is state, not source (a person
/// may have run `once` in an example), and is never copied.
pub fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("lists") {
        let entry = entry.expect("an entry");
        if entry.file_name() == ".once" {
            continue;
        }
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a type").is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copies");
        }
    }
}

/// The folder of hostile repositories, `tests/hostile/` at the project's root: one folder per
/// attack, each with a `README.md` saying what it attacks and a `repo/` tree.
pub fn hostile_fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/hostile")
}

/// Copies the hostile repository `name` (`tests/hostile/NAME/repo`) into `dest`, which must
/// exist. git will not track a folder named `.git`, and a `.gitattributes` would act on this
/// project's own files, so the fixtures spell them `dot-git` and `dot-gitattributes`: every path
/// component so named loses its `dot-` for a `.` in the copy. Links are copied as links.
pub fn copy_hostile(name: &str, dest: &Path) {
    let source = hostile_fixtures().join(name).join("repo");
    assert!(
        source.is_dir(),
        "no hostile fixture at `{}`",
        source.display()
    );
    copy_fixture_tree(&source, dest);
}

fn copy_fixture_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("reads a fixture folder") {
        let entry = entry.expect("reads a fixture entry");
        let name = entry.file_name();
        let target_name = match name.to_str() {
            Some("dot-git") => std::ffi::OsString::from(".git"),
            Some("dot-gitattributes") => std::ffi::OsString::from(".gitattributes"),
            _ => name,
        };
        let target = to.join(target_name);
        let kind = entry.file_type().expect("a fixture entry's type");
        if kind.is_symlink() {
            let link = std::fs::read_link(entry.path()).expect("reads a fixture link");
            std::os::unix::fs::symlink(link, &target).expect("copies a fixture link");
        } else if kind.is_dir() {
            std::fs::create_dir_all(&target).expect("creates a fixture folder");
            copy_fixture_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copies a fixture file");
        }
    }
}
