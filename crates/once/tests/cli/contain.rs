//! Containment: no process an action or an evaluator starts outlives `once`, however `once`
//! ends (SIGKILL included) and however the process tried to get away: a `setsid`'d sleeper, a
//! double-forked one, and one that ignores SIGTERM. Every entry point that runs commands is
//! covered (`once run`, `once mcp`, `once serve`, `once eval`), and so is each weaker mode that
//! `ONCE_CONTAINMENT` can force.
//!
//! The processes carry a unique `ONCE_TEST_MARK`; a test waits (bounded) until all three
//! sleepers run, ends `once`, then waits (bounded) until no marked process is alive. Zombies do
//! not count: the machine's init may take its time to reap orphans.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::run::{count_marked, report, unique_mark, wait_until, workspace};
use crate::support::{Mcp, PATIENCE, Serve, TempDir, Test, once_binary};

/// A setsid'd sleeper, a double-forked sleeper and a sleeper that ignores SIGTERM, then a wait.
const ESCAPES: &str = "setsid sleep 60 & (sleep 60 &); sh -c \"trap '' TERM; sleep 60\" & wait";

/// How long survivors get to be gone after `once` ended: the kernel kills a namespace at once,
/// a subreaper sweeps in a few milliseconds; well under the sleepers' minute.
const GONE: Duration = Duration::from_secs(8);

fn manifest(mark: &str) -> String {
    format!(
        r#"
[targets.escapes]
kind = "command"
[targets.escapes.capabilities.build]
command = '''{ESCAPES}'''
env = {{ ONCE_TEST_MARK = "{mark}" }}
"#
    )
}

/// Marked processes that run `sleep`, zombies aside.
fn sleepers(mark: &str) -> usize {
    let needle = format!("ONCE_TEST_MARK={mark}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sleep")
                && std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|environ| environ.split(|&b| b == 0).any(|e| e == needle.as_bytes()))
        })
        .count()
}

fn wait_for_sleepers(mark: &str) {
    wait_until("the three sleepers", || sleepers(mark) >= 3);
}

/// Waits up to [`GONE`] for every marked process to be gone; fails with how many survived.
fn assert_none_survive(mark: &str, what: &str) {
    let end = Instant::now() + GONE;
    loop {
        let left = count_marked(mark);
        if left == 0 {
            return;
        }
        assert!(Instant::now() < end, "{left} process(es) outlived {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(pid: i32, signal: i32) {
    // SAFETY: kill(2) on the pid of a child this test owns and has not reaped.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
}

fn run_command(root: &Path, mode: Option<&str>) -> Command {
    let mut command = Command::new(once_binary());
    command
        .arg("--workspace")
        .arg(root)
        .args(["run", "escapes", "--json"])
        .env_remove("ONCE_LOG")
        .env_remove("ONCE_CONTAINMENT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(mode) = mode {
        command.env("ONCE_CONTAINMENT", mode);
    }
    command
}

/// Kills `child` with `sig`, reaps it within [`PATIENCE`], and checks that nothing survived.
fn end_and_check(mut child: Child, sig: i32, mark: &str, what: &str) {
    signal(child.id() as i32, sig);
    let end = Instant::now() + PATIENCE;
    while child.try_wait().expect("waits").is_none() {
        assert!(Instant::now() < end, "{what} did not exit");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_none_survive(mark, what);
}

fn sigkill_of_once_run(mode: Option<&str>) {
    let mark = unique_mark();
    let ws = workspace(&manifest(&mark));
    let child = run_command(ws.path(), mode).spawn().expect("spawns once");
    wait_for_sleepers(&mark);
    end_and_check(child, libc::SIGKILL, &mark, "a SIGKILL of `once run`");
}

fn sigint_of_once_run(mode: Option<&str>, containment: &str) {
    let mark = unique_mark();
    let ws = workspace(&manifest(&mark));
    let child = run_command(ws.path(), mode).spawn().expect("spawns once");
    wait_for_sleepers(&mark);
    signal(child.id() as i32, libc::SIGINT);
    let output = child.wait_with_output().expect("waits");
    assert_none_survive(&mark, "a SIGINT of `once run`");
    assert_eq!(output.status.code(), Some(130));
    let report = report(&output);
    assert_eq!(report["status"], "interrupted");
    assert_eq!(report["containment"], containment, "{report}");
}

#[test]
fn sigkill_of_once_run_leaves_no_process() {
    sigkill_of_once_run(None);
}

#[test]
fn sigint_of_once_run_leaves_no_process_and_the_report_names_the_containment() {
    sigint_of_once_run(None, "pid-namespace");
}

#[test]
fn a_subreaper_contains_too_when_namespaces_are_refused() {
    sigkill_of_once_run(Some("subreaper"));
    sigint_of_once_run(Some("subreaper"), "subreaper");
}

/// Without privilege a PID namespace needs a user namespace around it (or, where those are
/// refused too, the subreaper takes over); as root, the test drops to `nobody` to get there.
#[test]
fn an_unprivileged_once_contains_too() {
    let mark = unique_mark();
    let ws = workspace(&manifest(&mark));
    // `nobody` writes `.once` in the workspace.
    std::fs::set_permissions(ws.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut command = run_command(ws.path(), None);
    command.env("HOME", ws.path());
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // SAFETY: setgroups, setgid and setuid are async-signal-safe and touch only the child.
        unsafe {
            command.pre_exec(|| {
                if libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(65534) != 0
                    || libc::setuid(65534) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let child = command.spawn().expect("spawns once");
    wait_for_sleepers(&mark);
    end_and_check(
        child,
        libc::SIGKILL,
        &mark,
        "a SIGKILL of an unprivileged `once run`",
    );
}

#[test]
fn process_groups_can_be_forced_and_still_end_their_members() {
    let mark = unique_mark();
    let ws = workspace(&format!(
        r#"
[targets.escapes]
kind = "command"
[targets.escapes.capabilities.build]
command = "(sleep 60) & sleep 60"
env = {{ ONCE_TEST_MARK = "{mark}" }}
"#
    ));
    let child = run_command(ws.path(), Some("process-group"))
        .spawn()
        .expect("spawns once");
    wait_until("the action's processes", || count_marked(&mark) >= 2);
    signal(child.id() as i32, libc::SIGTERM);
    let output = child.wait_with_output().expect("waits");
    assert_eq!(output.status.code(), Some(143));
    assert_eq!(report(&output)["containment"], "process-group");
    assert_none_survive(&mark, "a SIGTERM of `once run`");
}

#[test]
fn an_unknown_containment_is_refused_with_the_choices() {
    let ws = workspace(&manifest("unused"));
    let output = run_command(ws.path(), Some("jail"))
        .output()
        .expect("runs once");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("`ONCE_CONTAINMENT`") && stderr.contains("subreaper"),
        "{stderr}"
    );
}

#[test]
fn sigkill_of_once_mcp_leaves_no_process() {
    let mark = unique_mark();
    let ws = workspace(&manifest(&mark));
    let mut mcp = Mcp::spawn(ws.path(), &["--allow-run"]);
    mcp.initialize();
    let answer = mcp.call(
        1,
        "once_run",
        json!({"target": "escapes", "wait_seconds": 0}),
    );
    assert_eq!(
        answer["result"]["structuredContent"]["result"]["status"], "running",
        "{answer}"
    );
    wait_for_sleepers(&mark);
    signal(mcp.pid(), libc::SIGKILL);
    let (code, _) = mcp.wait(PATIENCE);
    assert_eq!(code, None, "killed by its signal");
    assert_none_survive(&mark, "a SIGKILL of `once mcp`");
}

#[test]
fn a_cancelled_once_run_call_leaves_no_process() {
    let mark = unique_mark();
    let ws = workspace(&manifest(&mark));
    let mut mcp = Mcp::spawn(ws.path(), &["--allow-run"]);
    mcp.initialize();
    let answer = mcp.call(
        1,
        "once_run",
        json!({"target": "escapes", "wait_seconds": 0}),
    );
    let run_id = answer["result"]["structuredContent"]["result"]["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("a run id: {answer}"))
        .to_owned();
    wait_for_sleepers(&mark);
    let cancelled = mcp.call(2, "once_cancel", json!({"run_id": run_id}));
    assert_ne!(cancelled["result"]["isError"], true, "{cancelled}");
    assert_none_survive(&mark, "a cancelled `once_run`");
    mcp.close_stdin();
    assert_eq!(mcp.wait(PATIENCE).0, Some(0));
}

#[test]
fn sigkill_of_once_serve_leaves_no_process() {
    let mark = unique_mark();
    let ws = workspace(&manifest(&mark));
    let state = TempDir::new();
    let serve = Serve::start(ws.path(), state.path(), &["--allow-run"]);
    let mut client = Mcp::attach(state.path(), Some(ws.path()));
    client.initialize();
    let answer = client.call(
        1,
        "once_run",
        json!({"target": "escapes", "wait_seconds": 0}),
    );
    assert_eq!(
        answer["result"]["structuredContent"]["result"]["status"], "running",
        "{answer}"
    );
    wait_for_sleepers(&mark);
    signal(serve.pid(), libc::SIGKILL);
    // The guard reaps it when dropped; the survivors are counted first.
    assert_none_survive(&mark, "a SIGKILL of `once serve`");
    drop(serve);
}

#[test]
fn sigkill_of_once_eval_leaves_no_process() {
    let mark = unique_mark();
    let test = Test::new().manifest(
        "[targets.py]\nkind = \"command\"\n[targets.py.evaluator]\nlanguage = \"python\"\n",
    );
    let state = TempDir::new();
    let code = format!(
        "import os, subprocess, time\n\
         subprocess.Popen(['sh', '-c', {ESCAPES:?}], env=dict(os.environ, ONCE_TEST_MARK={mark:?}))\n\
         time.sleep(600)"
    );
    let child = Command::new(once_binary())
        .args(["eval", "py", &code])
        .current_dir(test.root())
        .env("XDG_STATE_HOME", state.path())
        .env_remove("ONCE_LOG")
        .env_remove("ONCE_CONTAINMENT")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawns once eval");
    wait_for_sleepers(&mark);
    end_and_check(child, libc::SIGKILL, &mark, "a SIGKILL of `once eval`");
}
