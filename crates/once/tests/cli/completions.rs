//! `once completions SHELL`: a script for every shell clap knows, written from the same command
//! line the parser reads.

use std::process::{Command, Stdio};

use crate::support::{TempDir, Test};

const SHELLS: [&str; 5] = ["bash", "zsh", "fish", "powershell", "elvish"];

fn script(shell: &str) -> String {
    let run = Test::new().args(["completions", shell]).run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    assert!(run.stderr().is_empty(), "{}", run.transcript());
    run.stdout()
}

#[test]
fn every_shell_gets_a_script_that_names_once_and_its_subcommands() {
    for shell in SHELLS {
        let script = script(shell);
        assert!(script.len() > 200, "{shell}: {script}");
        assert!(script.contains("once"), "{shell} names the command");
        for subcommand in ["query", "memory", "completions"] {
            assert!(script.contains(subcommand), "{shell} names `{subcommand}`");
        }
    }
}

#[test]
fn the_bash_script_parses() {
    let dir = TempDir::new();
    let path = dir.path().join("once.bash");
    std::fs::write(&path, script("bash")).expect("writes the script");
    let output = Command::new("bash")
        .arg("-n")
        .arg(&path)
        .stdin(Stdio::null())
        .output()
        .expect("runs bash");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn an_unknown_shell_is_a_wrong_command_line() {
    let run = Test::new().args(["completions", "tcsh"]).run();
    assert_eq!(run.code(), 2, "{}", run.transcript());
    assert!(run.stderr().contains("bash"), "{}", run.transcript());
}

/// `once completions bash | head -3` and `once query schema --manifest | head`: a reader that
/// stops early closes the pipe, and that is no error of ours (Rust ignores SIGPIPE, so the write
/// fails with EPIPE instead of killing us): nothing on stderr, and the exit of a program that
/// SIGPIPE stopped, 141 (never 0, which could turn a failed run whose report was cut into a
/// success).
#[test]
fn a_reader_that_closes_the_pipe_early_is_not_an_error() {
    for args in [
        &["completions", "bash"][..],
        &["query", "schema", "--manifest"][..],
    ] {
        let mut child = Command::new(crate::support::once_binary())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starts once");
        // The read end closes before once writes a byte of its output, which is far longer
        // than the pipe's buffer would need for a write to be refused.
        drop(child.stdout.take());
        let output = child.wait_with_output().expect("once ends");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            matches!(output.status.code(), Some(0 | 141)),
            "{args:?}: {:?} {stderr}",
            output.status
        );
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}
