//! The Python and Node.js adapters against real interpreters: persistence, capture, deadlines,
//! stubborn code, deaths from outside, `stop_all`.

use std::time::Duration;

use once_eval::{Error, Evaluators, Interrupt, Language, Status};
use once_exec::Registry;

use crate::Fixture;

const SHORT: Duration = Duration::from_secs(20);

/// The code of each check, per language.
struct Codes {
    language: Language,
    define: &'static str,
    use_it: &'static str,
    print_both: &'static str,
    raise: &'static str,
    spin: &'static str,
    stubborn: &'static str,
    subprocess: &'static str,
}

const PYTHON: Codes = Codes {
    language: Language::Python,
    define: "import math\nx = 40\ndef add(a, b):\n    return a + b",
    use_it: "add(x, 2)",
    print_both: "import sys\nprint('to out')\nprint('to err', file=sys.stderr)\n'v'",
    raise: "def f():\n    raise ValueError('boom')\nf()",
    spin: "while True:\n    pass",
    stubborn: "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass",
    subprocess: "import subprocess\nsubprocess.run(['echo', 'from a child'])\nNone",
};

const NODE: Codes = Codes {
    language: Language::Node,
    define: "var x = 40; function add(a, b) { return a + b }",
    use_it: "add(x, 2)",
    print_both: "console.log('to out'); console.error('to err'); 'v'",
    raise: "function f() { throw new TypeError('boom') }\nf()",
    spin: "while (true) {}",
    // Node cannot ignore breakOnSigint from inside the script, but a synchronous wait on a child
    // that ignores SIGINT keeps it from ever reaching the check.
    stubborn: "require('child_process').execSync(\"trap '' INT; while :; do :; done\", {shell: '/bin/sh'})",
    subprocess: "require('child_process').spawnSync('echo', ['from a child'], {stdio: 'inherit'}); undefined",
};

fn eval(
    evaluators: &Evaluators,
    fixture: &Fixture,
    codes: &Codes,
    code: &str,
    deadline: Duration,
) -> once_eval::Evaluation {
    evaluators
        .eval(
            "t",
            &fixture.spec(codes.language),
            code,
            deadline,
            &Interrupt::new(),
        )
        .expect("an evaluator")
}

fn state_persists_and_output_is_captured_per_evaluation(codes: &Codes) {
    let fixture = Fixture::new();
    let registry = Registry::new();
    let evaluators = Evaluators::new(&registry).unwrap();
    let defined = eval(&evaluators, &fixture, codes, codes.define, SHORT);
    assert_eq!(defined.status, Status::Ok, "{defined:?}");
    assert_eq!(defined.value, None);
    assert!(!defined.state_lost);
    let used = eval(&evaluators, &fixture, codes, codes.use_it, SHORT);
    assert_eq!(used.value.as_deref(), Some("42"), "{used:?}");
    assert_eq!(used.stdout, "");

    let printed = eval(&evaluators, &fixture, codes, codes.print_both, SHORT);
    assert_eq!(printed.stdout, "to out\n", "{printed:?}");
    assert_eq!(printed.stderr, "to err\n");
    assert_eq!(printed.value.as_deref(), Some("'v'"));
    // Output belongs to the evaluation that printed it, never the next one.
    let quiet = eval(&evaluators, &fixture, codes, codes.use_it, SHORT);
    assert_eq!((quiet.stdout.as_str(), quiet.stderr.as_str()), ("", ""));

    let child = eval(&evaluators, &fixture, codes, codes.subprocess, SHORT);
    assert_eq!(child.stdout, "from a child\n", "{child:?}");
    assert_eq!(child.value, None);

    let raised = eval(&evaluators, &fixture, codes, codes.raise, SHORT);
    assert_eq!(raised.status, Status::Error);
    let error = raised.error.unwrap_or_default();
    assert!(error.contains("boom") && error.contains("f"), "{error}");
    assert!(!error.contains("once-eval"), "adapter frames leak: {error}");
    let after = eval(&evaluators, &fixture, codes, codes.use_it, SHORT);
    assert_eq!(after.value.as_deref(), Some("42"));
    assert_eq!(fixture.processes().len(), 1);
}

#[test]
fn python_state_persists_and_output_is_captured_per_evaluation() {
    state_persists_and_output_is_captured_per_evaluation(&PYTHON);
}

#[test]
fn node_state_persists_and_output_is_captured_per_evaluation() {
    state_persists_and_output_is_captured_per_evaluation(&NODE);
}

fn a_loop_past_its_deadline_is_interrupted_and_state_is_kept(codes: &Codes) {
    let fixture = Fixture::new();
    let registry = Registry::new();
    let evaluators = Evaluators::new(&registry).unwrap();
    eval(&evaluators, &fixture, codes, codes.define, SHORT);
    let pid = evaluators.pid("t");
    let spun = eval(
        &evaluators,
        &fixture,
        codes,
        codes.spin,
        Duration::from_millis(300),
    );
    assert_eq!(spun.status, Status::TimedOut, "{spun:?}");
    assert!(!spun.state_lost, "{spun:?}");
    assert!(spun.notice.unwrap_or_default().contains("kept its state"));
    let error = spun.error.unwrap_or_default();
    assert!(
        !error.contains("on_interrupt") && !error.contains("<string>"),
        "{error}"
    );
    assert!(spun.elapsed_ms >= 300);
    let after = eval(&evaluators, &fixture, codes, codes.use_it, SHORT);
    assert_eq!(after.value.as_deref(), Some("42"), "{after:?}");
    assert_eq!(evaluators.pid("t"), pid, "the same process");
}

#[test]
fn python_a_loop_past_its_deadline_is_interrupted_and_state_is_kept() {
    a_loop_past_its_deadline_is_interrupted_and_state_is_kept(&PYTHON);
}

#[test]
fn node_a_loop_past_its_deadline_is_interrupted_and_state_is_kept() {
    a_loop_past_its_deadline_is_interrupted_and_state_is_kept(&NODE);
}

fn code_that_ignores_the_interrupt_is_killed_and_the_result_says_state_was_lost(codes: &Codes) {
    let fixture = Fixture::new();
    let registry = Registry::new();
    let evaluators = Evaluators::new(&registry).unwrap();
    eval(&evaluators, &fixture, codes, codes.define, SHORT);
    let before = evaluators.pid("t");
    let stuck = eval(
        &evaluators,
        &fixture,
        codes,
        codes.stubborn,
        Duration::from_millis(300),
    );
    assert_eq!(stuck.status, Status::TimedOut, "{stuck:?}");
    assert!(stuck.state_lost);
    let notice = stuck.notice.unwrap_or_default();
    assert!(
        notice.contains("killed") && notice.contains("state was lost"),
        "{notice}"
    );
    // A fresh evaluator is already up, and it is a different process without the old state.
    let after = evaluators.pid("t");
    assert!(after.is_some() && after != before);
    assert_eq!(
        fixture.wait_for_processes(1).len(),
        1,
        "the stuck group is gone"
    );
    let fresh = eval(&evaluators, &fixture, codes, codes.use_it, SHORT);
    assert_eq!(fresh.status, Status::Error, "x is gone: {fresh:?}");
    assert!(
        !fresh.state_lost,
        "the loss was reported once, by the evaluation that caused it"
    );
}

#[test]
fn python_code_that_ignores_the_interrupt_is_killed_and_the_result_says_state_was_lost() {
    code_that_ignores_the_interrupt_is_killed_and_the_result_says_state_was_lost(&PYTHON);
}

#[test]
fn node_code_that_ignores_the_interrupt_is_killed_and_the_result_says_state_was_lost() {
    code_that_ignores_the_interrupt_is_killed_and_the_result_says_state_was_lost(&NODE);
}

fn an_evaluator_killed_from_outside_is_restarted_on_next_use(codes: &Codes) {
    let fixture = Fixture::new();
    let registry = Registry::new();
    let evaluators = Evaluators::new(&registry).unwrap();
    eval(&evaluators, &fixture, codes, codes.define, SHORT);
    let pid = evaluators.pid("t").unwrap();
    // SAFETY: kill has no memory effects; `pid` is our own live child.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    assert!(fixture.wait_for_processes(0).is_empty());
    // Its environ vanishes before its last thread is gone; wait until it can be waited for,
    // which is the state "killed from outside some time ago" means.
    wait_until_exited(pid);
    let next = eval(&evaluators, &fixture, codes, codes.use_it, SHORT);
    assert!(next.state_lost, "{next:?}");
    let notice = next.notice.unwrap_or_default();
    assert!(
        notice.contains("had died") && notice.contains("signal 9"),
        "{notice}"
    );
    assert_eq!(
        next.status,
        Status::Error,
        "x is gone in the fresh evaluator"
    );
    assert_ne!(evaluators.pid("t"), Some(pid));
    let again = eval(&evaluators, &fixture, codes, "1 + 1", SHORT);
    assert_eq!(again.value.as_deref(), Some("2"));
    assert!(!again.state_lost);
}

#[test]
fn python_an_evaluator_killed_from_outside_is_restarted_on_next_use() {
    an_evaluator_killed_from_outside_is_restarted_on_next_use(&PYTHON);
}

#[test]
fn node_an_evaluator_killed_from_outside_is_restarted_on_next_use() {
    an_evaluator_killed_from_outside_is_restarted_on_next_use(&NODE);
}

#[test]
fn stop_all_leaves_no_process_and_wakes_an_evaluation_in_flight() {
    let fixture = Fixture::new();
    let registry = Registry::new();
    let evaluators = std::sync::Arc::new(Evaluators::new(&registry).unwrap());
    let python = fixture.spec(Language::Python);
    let node = fixture.spec(Language::Node);
    let none = Interrupt::new();
    evaluators.eval("py", &python, "1", SHORT, &none).unwrap();
    evaluators.eval("js", &node, "1", SHORT, &none).unwrap();
    assert_eq!(fixture.processes().len(), 2);
    let spinning = {
        let evaluators = std::sync::Arc::clone(&evaluators);
        std::thread::spawn(move || {
            evaluators.eval(
                "py",
                &python,
                "while True:\n    pass",
                Duration::from_secs(600),
                &Interrupt::new(),
            )
        })
    };
    // Whether the loop has started yet or not, stop_all must neither wait for it nor miss it.
    registry.stop_all(Duration::from_secs(1));
    let stopped = spinning.join().unwrap();
    match stopped {
        Ok(evaluation) => assert_eq!(evaluation.status, Status::Stopped),
        Err(error) => assert!(matches!(error, Error::ShuttingDown), "{error}"),
    }
    assert!(fixture.processes().is_empty(), "{:?}", fixture.processes());
    let refused = evaluators.eval("js", &fixture.spec(Language::Node), "1", SHORT, &none);
    assert!(matches!(refused, Err(Error::ShuttingDown)));
}

#[test]
fn an_interrupt_from_the_caller_stops_the_evaluation_and_keeps_state() {
    let fixture = Fixture::new();
    let registry = Registry::new();
    let evaluators = Evaluators::new(&registry).unwrap();
    let spec = fixture.spec(Language::Python);
    evaluators
        .eval("t", &spec, "y = 7", SHORT, &Interrupt::new())
        .unwrap();
    // Fired before the evaluation starts: nothing runs.
    let early = Interrupt::new();
    early.fire();
    let skipped = evaluators.eval("t", &spec, "y = 8", SHORT, &early).unwrap();
    assert_eq!(skipped.status, Status::Cancelled, "{skipped:?}");
    // Fired while the code runs (the code itself says when it is running).
    let interrupt = Interrupt::new();
    let firing = {
        let interrupt = interrupt.clone();
        let fixture_dir = fixture.dir.clone();
        std::thread::spawn(move || {
            let flag = fixture_dir.join("running");
            while !flag.exists() {
                std::thread::yield_now();
            }
            interrupt.fire();
        })
    };
    let cancelled = evaluators
        .eval(
            "t",
            &spec,
            "import time\nopen('running', 'w').close()\ntime.sleep(600)",
            SHORT,
            &interrupt,
        )
        .unwrap();
    firing.join().unwrap();
    assert_eq!(cancelled.status, Status::Cancelled, "{cancelled:?}");
    assert!(!cancelled.state_lost);
    assert!(
        cancelled
            .error
            .unwrap_or_default()
            .contains("KeyboardInterrupt")
    );
    let kept = evaluators
        .eval("t", &spec, "y", SHORT, &Interrupt::new())
        .unwrap();
    assert_eq!(kept.value.as_deref(), Some("7"));
}

#[test]
fn a_missing_interpreter_is_an_error_that_names_it_and_reset_starts_fresh() {
    let fixture = Fixture::new();
    let registry = Registry::new();
    let evaluators = Evaluators::new(&registry).unwrap();
    let mut spec = fixture.spec(Language::Python);
    spec.command = Some("no-such-python-anywhere".into());
    let error = evaluators
        .eval("t", &spec, "1", SHORT, &Interrupt::new())
        .unwrap_err();
    let text = error.to_string();
    assert!(text.contains("did not become ready"), "{text}");
    assert!(text.contains("no-such-python-anywhere"), "{text}");
    assert!(fixture.processes().is_empty());

    let spec = fixture.spec(Language::Python);
    evaluators
        .eval("t", &spec, "z = 1", SHORT, &Interrupt::new())
        .unwrap();
    assert!(evaluators.reset("t"));
    assert!(fixture.wait_for_processes(0).is_empty());
    assert!(!evaluators.reset("t"));
    let fresh = evaluators
        .eval("t", &spec, "'z' in globals()", SHORT, &Interrupt::new())
        .unwrap();
    assert_eq!(fresh.value.as_deref(), Some("False"));
    assert!(
        !fresh.state_lost,
        "a reset the caller asked for is not news"
    );
}

#[test]
fn evaluators_outlive_the_thread_that_started_them() {
    let fixture = Fixture::new();
    let registry = Registry::new();
    let evaluators = std::sync::Arc::new(Evaluators::new(&registry).unwrap());
    let spec = fixture.spec(Language::Python);
    {
        let evaluators = std::sync::Arc::clone(&evaluators);
        let spec = spec.clone();
        std::thread::spawn(move || {
            evaluators
                .eval("t", &spec, "kept = 'yes'", SHORT, &Interrupt::new())
                .unwrap();
        })
        .join()
        .unwrap();
    }
    // A client connection's thread has ended; its evaluator must not have died with it.
    let later = evaluators
        .eval("t", &spec, "kept", SHORT, &Interrupt::new())
        .unwrap();
    assert_eq!(later.value.as_deref(), Some("'yes'"), "{later:?}");
    assert!(!later.state_lost);
}

/// Polls (bounded) until our child `pid` has exited, without reaping it.
fn wait_until_exited(pid: u32) {
    let end = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < end {
        let mut info = std::mem::MaybeUninit::<libc::siginfo_t>::zeroed();
        // SAFETY: `info` is a valid out-pointer; WNOWAIT leaves the child for its owner to reap.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid,
                info.as_mut_ptr(),
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        // SAFETY: waitid succeeded, so `info` is initialised.
        if rc != 0 || unsafe { info.assume_init().si_pid() } != 0 {
            return;
        }
        std::thread::yield_now();
    }
    panic!("process {pid} did not exit");
}
