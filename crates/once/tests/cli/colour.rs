//! Colour: on a terminal only, never with `NO_COLOR`, and off a terminal too with
//! `CLICOLOR_FORCE`. Help, command-line errors and a run's output all follow the one decision.

use crate::support::Test;

const ESCAPE: char = '\u{1b}';

const ONE_ACTION: &str = r#"
[targets.a]
kind = "command"
[targets.a.capabilities.build]
command = "echo 'a says hello'"
"#;

fn help(env: &[(&str, &str)]) -> String {
    let mut test = Test::new().args(["query", "--help"]);
    for (name, value) in env {
        test = test.env(name, value);
    }
    let run = test.run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    run.stdout()
}

#[test]
fn help_on_a_pipe_is_plain_unless_forced() {
    assert!(!help(&[]).contains(ESCAPE), "{}", help(&[]));
    assert!(help(&[("CLICOLOR_FORCE", "1")]).contains(ESCAPE));
    assert!(!help(&[("CLICOLOR_FORCE", "0")]).contains(ESCAPE));
    assert!(!help(&[("CLICOLOR_FORCE", "")]).contains(ESCAPE));
}

#[test]
fn no_color_wins_over_clicolor_force() {
    let text = help(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]);
    assert!(!text.contains(ESCAPE), "{text:?}");
    // An empty `NO_COLOR` is no request at all.
    assert!(help(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "")]).contains(ESCAPE));
}

#[test]
fn command_line_errors_follow_the_same_decision() {
    let error = |env: &[(&str, &str)]| {
        let mut test = Test::new().args(["query", "--no-such-flag"]);
        for (name, value) in env {
            test = test.env(name, value);
        }
        let run = test.run();
        assert_eq!(run.code(), 2, "{}", run.transcript());
        run.stderr()
    };
    assert!(!error(&[]).contains(ESCAPE));
    assert!(error(&[("CLICOLOR_FORCE", "1")]).contains(ESCAPE));
    assert!(!error(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]).contains(ESCAPE));
}

#[test]
fn a_run_colours_its_prefixes_only_when_asked() {
    let run = |env: &[(&str, &str)]| {
        let mut test = Test::new().manifest(ONE_ACTION).args(["run", "a"]);
        for (name, value) in env {
            test = test.env(name, value);
        }
        let run = test.run();
        assert_eq!(run.code(), 0, "{}", run.transcript());
        assert!(
            run.stderr().contains("a says hello"),
            "{}",
            run.transcript()
        );
        run.stderr()
    };
    assert!(!run(&[]).contains(ESCAPE));
    let forced = run(&[("CLICOLOR_FORCE", "1")]);
    assert!(forced.contains("\u{1b}[36ma:build"), "{forced:?}");
    // Forced colour is not a terminal: no progress line is drawn.
    assert!(!forced.contains('\r'), "{forced:?}");
    assert!(!run(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]).contains(ESCAPE));
}
