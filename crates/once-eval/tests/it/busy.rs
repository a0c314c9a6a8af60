//! Two callers, one evaluator: the second answers at once that the evaluator is busy instead of
//! waiting silently behind the first, and says who holds it.

use std::path::Path;
use std::time::{Duration, Instant};

use once_eval::{EntryOutcome, Evaluators, Interrupt, Language, Status};
use once_exec::Registry;

use crate::Fixture;

/// How long anything here may take on a loaded machine before the test fails.
const PATIENCE: Duration = Duration::from_secs(60);

/// Python that says it has started (a file), then sleeps in short steps until it is released
/// (another file) or 60 s have passed: the evaluator is busy for exactly as long as the test
/// needs, and never longer than its bound.
fn held_until(started: &Path, release: &Path) -> String {
    format!(
        "import os, time\nopen({started:?}, 'w').close()\nend = time.time() + 60\n\
         while not os.path.exists({release:?}) and time.time() < end:\n    time.sleep(0.01)\n'released'",
        started = started.display().to_string(),
        release = release.display().to_string(),
    )
}

fn wait_for(path: &Path) {
    let end = Instant::now() + PATIENCE;
    while !path.exists() {
        assert!(Instant::now() < end, "`{}` never appeared", path.display());
        std::thread::yield_now();
    }
}

#[test]
fn a_second_evaluation_on_a_busy_evaluator_is_answered_at_once_with_busy() {
    let fixture = Fixture::new();
    let registry = Registry::new();
    let evaluators = Evaluators::new(&registry).expect("evaluators");
    let spec = fixture.spec(Language::Python);
    let (started, release) = (fixture.dir.join("started"), fixture.dir.join("release"));
    let code = held_until(&started, &release);

    std::thread::scope(|scope| {
        let first =
            scope.spawn(|| evaluators.eval("web", &spec, &code, PATIENCE, &Interrupt::new()));
        wait_for(&started);
        // The first evaluation is in the code now, and stays there until `release` exists.
        let second = evaluators.eval("web", &spec, "1 + 1", PATIENCE, &Interrupt::new());
        let released_before = release.exists();
        std::fs::write(&release, "").expect("releases the first evaluation");
        assert!(!released_before);
        let error = second.expect_err("the second caller must not wait behind the first");
        let text = error.to_string();
        assert!(
            text.starts_with("the evaluator of `web` is evaluating another call (started "),
            "{text}"
        );
        assert!(matches!(error, once_eval::Error::Busy { .. }), "{error:?}");
        let first = first.join().expect("joins").expect("an evaluation");
        assert_eq!(
            (first.status, first.value.as_deref()),
            (Status::Ok, Some("'released'"))
        );
    });
    // Free again: the next caller evaluates, in the same evaluator.
    let again = evaluators
        .eval("web", &spec, "2 + 2", PATIENCE, &Interrupt::new())
        .expect("an evaluation");
    assert_eq!(again.value.as_deref(), Some("4"));
    let empty = evaluators.eval("web", &spec, " \n", PATIENCE, &Interrupt::new());
    assert!(
        matches!(empty, Err(once_eval::Error::Empty { .. })),
        "{empty:?}"
    );

    // The transcript holds every call in the order each was answered, with what came back.
    let transcripts = evaluators.transcripts();
    assert_eq!(transcripts.len(), 1, "{transcripts:?}");
    let web = &transcripts[0];
    assert_eq!(
        (web.target.as_str(), web.language),
        ("web", Language::Python)
    );
    assert!(
        web.running && !web.evaluating && web.pid.is_some(),
        "{web:?}"
    );
    let seen: Vec<(&str, EntryOutcome, Option<&str>)> = web
        .entries
        .iter()
        .map(|e| (e.code.as_str(), e.outcome, e.value.as_deref()))
        .collect();
    assert_eq!(
        seen,
        [
            ("1 + 1", EntryOutcome::Busy, None),
            (code.as_str(), EntryOutcome::Done, Some("'released'")),
            ("2 + 2", EntryOutcome::Done, Some("4")),
            (" \n", EntryOutcome::None, None),
        ]
    );
    assert!(
        web.entries[0]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("is evaluating another call")),
        "{:?}",
        web.entries[0]
    );
    assert!(web.entries.windows(2).all(|w| w[0].at <= w[1].at));
}

#[test]
fn a_transcript_shows_problems_and_a_reset_evaluator_as_not_running() {
    let fixture = Fixture::new();
    let registry = Registry::new();
    let evaluators = Evaluators::new(&registry).expect("evaluators");
    let spec = fixture.spec(Language::Python);
    let raised = evaluators
        .eval(
            "py",
            &spec,
            "print('before'); 1/0",
            PATIENCE,
            &Interrupt::new(),
        )
        .expect("an evaluation");
    assert_eq!(raised.status, Status::Error);
    assert!(evaluators.reset("py"));
    let transcripts = evaluators.transcripts();
    let py = &transcripts[0];
    assert!(!py.running && py.pid.is_none(), "{py:?}");
    let entry = &py.entries[0];
    assert_eq!(entry.outcome, EntryOutcome::Problem);
    assert_eq!(entry.output, "before\n");
    assert!(
        entry
            .error
            .as_deref()
            .is_some_and(|e| e.contains("ZeroDivisionError")),
        "{entry:?}"
    );
    let json = serde_json::to_value(&transcripts).expect("serializes");
    assert_eq!(json[0]["entries"][0]["outcome"], "problem");
    assert_eq!(json[0]["language"], "python");
}

#[test]
fn a_caller_told_busy_learns_when_the_holder_was_interrupted_and_is_stopping() {
    let fixture = Fixture::new();
    let registry = Registry::new();
    let evaluators = Evaluators::new(&registry).expect("evaluators");
    let mut spec = fixture.spec(Language::Python);
    // Long enough that the stubborn code below is never killed while the test looks at it.
    spec.grace = PATIENCE;
    let (started, interrupted, release) = (
        fixture.dir.join("started"),
        fixture.dir.join("interrupted"),
        fixture.dir.join("release"),
    );
    // Says it started; an interrupt only makes it say so (its own SIGINT handler, so no
    // exception can land between two statements), and it goes on waiting until released.
    let code = format!(
        "import os, signal, time\n\
         signal.signal(signal.SIGINT, lambda *_: open({interrupted:?}, 'w').close())\n\
         open({started:?}, 'w').close()\nend = time.time() + 60\n\
         while not os.path.exists({release:?}) and time.time() < end:\n    time.sleep(0.01)\n\
         signal.signal(signal.SIGINT, signal.default_int_handler)\n'done'",
        started = started.display().to_string(),
        release = release.display().to_string(),
        interrupted = interrupted.display().to_string(),
    );
    let interrupt = Interrupt::new();
    std::thread::scope(|scope| {
        let first = scope.spawn(|| evaluators.eval("web", &spec, &code, PATIENCE, &interrupt));
        wait_for(&started);
        let before = evaluators
            .eval("web", &spec, "1", PATIENCE, &Interrupt::new())
            .expect_err("busy");
        interrupt.fire();
        wait_for(&interrupted);
        let after = evaluators
            .eval("web", &spec, "1", PATIENCE, &Interrupt::new())
            .expect_err("still busy");
        std::fs::write(&release, "").expect("releases the first evaluation");
        assert!(
            matches!(
                before,
                once_eval::Error::Busy {
                    stopping: false,
                    ..
                }
            ),
            "{before:?}"
        );
        assert!(
            after.to_string().starts_with(
                "the evaluator of `web` is stopping another call, which was interrupted"
            ),
            "{after}"
        );
        let first = first.join().expect("joins").expect("an evaluation");
        // The code caught the interrupt and ran to its end.
        assert_eq!(first.value.as_deref(), Some("'done'"), "{first:?}");
    });
}
