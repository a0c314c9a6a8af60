//! Deadlines, cancellation, `stop_all` and the death of the parent: no marked process may
//! outlive its run.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use once_exec::{Cancel, Containment, Error, Registry, Status, run};

use crate::{Fixture, MARK_VAR};

/// Three processes (the shell and two sleeps) that wait forever.
const FAMILY: &str = "sleep 1000 & sleep 1000 & wait";

/// The same family, deaf to SIGTERM (an ignored signal stays ignored across fork and exec).
const DEAF_FAMILY: &str = "trap '' TERM; sleep 1000 & sleep 1000 & wait";

const BOUND: Duration = Duration::from_secs(10);

#[test]
fn a_deadline_terminates_then_kills_the_whole_group() {
    let fixture = Fixture::new();
    let mut spec = fixture.spec(DEAF_FAMILY);
    spec.deadline = Duration::from_millis(700);
    spec.grace = Duration::from_millis(300);
    let seen = thread::scope(|scope| {
        let observer = scope.spawn(|| fixture.wait_count(|count| count >= 3, BOUND));
        let outcome = run(&spec, &Registry::new(), &Cancel::new()).unwrap();
        assert_eq!(outcome.status, Status::TimedOut);
        assert!(
            outcome.duration >= spec.deadline + spec.grace,
            "{outcome:?}"
        );
        assert!(outcome.duration < BOUND, "{outcome:?}");
        observer.join().unwrap()
    });
    assert_eq!(seen, 3, "the family never started");
    fixture.assert_none_left();
}

#[test]
fn a_background_grandchild_dies_with_its_group_when_the_command_exits() {
    let fixture = Fixture::new();
    // The grandchild also holds stdout open: the run must not wait for it to close.
    let outcome = run(
        &fixture.spec("sleep 1000 & echo $!"),
        &Registry::new(),
        &Cancel::new(),
    )
    .unwrap();
    assert_eq!(outcome.status, Status::Exited { code: 0 });
    assert!(outcome.duration < BOUND);
    let grandchild: u32 = outcome.tail[0].parse().unwrap();
    assert!(grandchild > 0);
    fixture.assert_none_left();
}

#[test]
fn cancel_stops_a_run_in_flight() {
    let fixture = Fixture::new();
    let cancel = Cancel::new();
    let registry = Registry::new();
    let outcome = thread::scope(|scope| {
        let running = scope.spawn(|| run(&fixture.spec(FAMILY), &registry, &cancel));
        assert_eq!(fixture.wait_count(|count| count >= 3, BOUND), 3);
        // The group's id is recorded by the runner's thread right after the spawn, which the
        // family can outrun on a loaded machine: wait for it, within the bound.
        let end = Instant::now() + BOUND;
        while registry.live_groups().is_empty() && Instant::now() < end {
            thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(registry.live_groups().len(), 1);
        cancel.cancel();
        running.join().unwrap().unwrap()
    });
    assert_eq!(outcome.status, Status::Cancelled);
    assert!(outcome.duration < BOUND);
    assert!(registry.live_groups().is_empty());
    fixture.assert_none_left();
}

#[test]
fn stop_all_ends_concurrent_runs_and_refuses_new_ones() {
    let fixture = Fixture::new();
    let registry = Registry::new();
    let cancel = Cancel::new();
    let mut deaf = fixture.spec(DEAF_FAMILY);
    // Longer than the test bound: only `stop_all`'s own SIGKILL can end this one in time.
    deaf.grace = Duration::from_secs(60);
    let specs = [fixture.spec(FAMILY), fixture.spec(FAMILY), deaf];
    let start = Instant::now();
    let outcomes = thread::scope(|scope| {
        let runs: Vec<_> = specs
            .iter()
            .map(|spec| scope.spawn(|| run(spec, &registry, &cancel)))
            .collect();
        assert_eq!(fixture.wait_count(|count| count >= 9, BOUND), 9);
        let stopper = {
            let registry = registry.clone();
            scope.spawn(move || registry.stop_all(Duration::from_millis(300)))
        };
        stopper.join().unwrap();
        runs.into_iter()
            .map(|run| run.join().unwrap().unwrap())
            .collect::<Vec<_>>()
    });
    assert!(start.elapsed() < BOUND);
    for outcome in outcomes {
        assert_eq!(outcome.status, Status::Cancelled, "{outcome:?}");
    }
    assert!(registry.live_groups().is_empty());
    fixture.assert_none_left();
    assert!(matches!(
        run(&fixture.spec("true"), &registry, &cancel),
        Err(Error::ShuttingDown)
    ));
}

/// Set in the re-executed test binary that plays the parent; holds the mark for its child.
const PARENT_ROLE: &str = "ONCE_EXEC_TEST_PARENT_MARK";

#[test]
fn the_direct_child_dies_with_its_parent() {
    if let Ok(mark) = std::env::var(PARENT_ROLE) {
        act_as_parent(&mark);
        return;
    }
    let fixture = Fixture::new();
    let mut parent = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "stop::the_direct_child_dies_with_its_parent",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PARENT_ROLE, &fixture.mark)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = parent.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            // libtest prints `test NAME ... ` without a newline just before our line.
            if let Some((_, pid)) = line.split_once("CHILD_PID=") {
                let _ = tx.send(pid.trim().parse::<i32>().unwrap());
            }
        }
    });
    let parent = KillOnDrop(parent);
    let child = rx
        .recv_timeout(BOUND)
        .expect("the parent never reported its child");
    assert!(child > 0);
    assert_eq!(fixture.wait_count(|count| count >= 1, BOUND), 1);
    drop(parent);
    fixture.assert_none_left();
}

/// Kills and reaps the parent even when an assertion fails first.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a run that would outlive us, reports its leader's pid, and waits to be killed; the
/// run's deadline ends it if the test never kills us.
fn act_as_parent(mark: &str) {
    let fixture = Fixture::new();
    let mut spec = fixture.spec("exec sleep 1000");
    spec.env.insert(MARK_VAR.into(), mark.to_owned());
    spec.deadline = BOUND * 2;
    let registry = Registry::new();
    thread::scope(|scope| {
        let running = scope.spawn(|| run(&spec, &registry, &Cancel::new()));
        let end = Instant::now() + BOUND;
        let pid = loop {
            if let Some(pid) = registry.live_groups().first() {
                break *pid;
            }
            assert!(Instant::now() < end, "the run never started");
            thread::sleep(Duration::from_millis(5));
        };
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "CHILD_PID={pid}").unwrap();
        stdout.flush().unwrap();
        drop(stdout);
        let _ = running.join();
    });
}

#[test]
fn a_process_that_left_the_group_cannot_hold_the_run_open() {
    let fixture = Fixture::new();
    // `setsid` moves a sleep to a session of its own, out of reach of group signals, with our
    // stdout still open; the fifo makes the shell wait until it has moved. A namespace or a
    // subreaper ends it with the command; with a process group only, the run stops waiting for
    // that pipe after a bound, and the escapee lives on (the documented limit of that mode).
    let command =
        "mkfifo moved; setsid sh -c 'echo > moved; exec sleep 30' & read x < moved; echo left";
    let outcome = run(&fixture.spec(command), &Registry::new(), &Cancel::new()).unwrap();
    assert_eq!(outcome.status, Status::Exited { code: 0 });
    assert_eq!(outcome.tail, ["left"]);
    assert!(outcome.duration < BOUND, "{outcome:?}");
    let escaped = crate::marked_pids(&fixture.mark);
    let contained = Containment::current() != Containment::ProcessGroup;
    assert_eq!(
        escaped.len(),
        usize::from(!contained),
        "{:?} decides whether the escapee survives the command",
        Containment::current()
    );
    for pid in escaped {
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    fixture.assert_none_left();
}
