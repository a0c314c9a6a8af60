//! What `once run` shows of the commands' own output, by `--output-logs` mode, when stderr is
//! not a terminal: each line whole, prefixed by its action, with no colour and no progress line.

use std::process::Output;

use crate::run::{run, workspace};

/// Two independent actions that print two lines each; `b` fails when `FAIL_B` names a file
/// that exists.
fn two_actions() -> crate::support::TempDir {
    workspace(
        r#"
[targets.a]
kind = "command"
[targets.a.capabilities.build]
command = "echo 'a says one'; echo 'a says two'"

[targets.bee]
kind = "command"
[targets.bee.capabilities.build]
command = "echo 'bee says one'; echo 'bee says two'; if [ -e fail ]; then echo 'bee broke' >&2; exit 3; fi"
"#,
    )
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The lines of `text` that carry an action's output, in order.
fn prefixed(text: &str) -> Vec<&str> {
    text.lines().filter(|l| l.contains(" | ")).collect()
}

#[test]
fn full_shows_every_line_prefixed_by_its_action_and_aligned() {
    let ws = two_actions();
    let output = run(ws.path(), &["a", "bee", "--output-logs", "full"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stderr(&output);
    let lines = prefixed(&text);
    for expected in [
        "a:build   | a says one",
        "a:build   | a says two",
        "bee:build | bee says one",
        "bee:build | bee says two",
    ] {
        assert!(lines.contains(&expected), "{expected:?} missing: {text}");
    }
    // The lines of one action keep their order, whatever the other printed in between.
    let position = |line: &str| lines.iter().position(|l| *l == line).unwrap();
    assert!(position("a:build   | a says one") < position("a:build   | a says two"));
    assert!(
        !text.contains('\u{1b}'),
        "colour or redraws on a pipe: {text:?}"
    );
    assert!(!text.contains('\r'), "a progress line on a pipe: {text:?}");
}

#[test]
fn errors_only_shows_the_failing_action_alone() {
    let ws = two_actions();
    std::fs::write(ws.path().join("fail"), "").unwrap();
    let output = run(
        ws.path(),
        &["a", "bee", "--keep-going", "--output-logs", "errors-only"],
    );
    assert_eq!(output.status.code(), Some(1));
    let text = stderr(&output);
    // Its stdout and stderr are read apart, so only each stream's own order is certain.
    let mut lines = prefixed(&text);
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            "bee:build | bee broke",
            "bee:build | bee says one",
            "bee:build | bee says two",
        ],
        "{text}"
    );
}

#[test]
fn none_shows_the_summary_and_no_output() {
    let ws = two_actions();
    let output = run(ws.path(), &["a", "bee", "--output-logs", "none"]);
    assert_eq!(output.status.code(), Some(0));
    let text = stderr(&output);
    assert!(!text.contains("says"), "{text}");
    assert!(
        text.contains("succeeded: 2 actions (2 ran, 0 cached"),
        "{text}"
    );
}

#[test]
fn new_only_hides_a_cached_action_and_full_replays_it() {
    let ws = two_actions();
    let first = run(ws.path(), &["a", "--output-logs", "new-only"]);
    assert!(
        stderr(&first).contains("a:build | a says one"),
        "{}",
        stderr(&first)
    );
    let second = run(ws.path(), &["a", "--output-logs", "new-only"]);
    let text = stderr(&second);
    assert!(text.contains("cached a:build"), "{text}");
    assert!(!text.contains("says"), "a cached action's output: {text}");
    let third = run(ws.path(), &["a", "--output-logs", "full"]);
    let text = stderr(&third);
    assert!(text.contains("cached a:build"), "{text}");
    assert_eq!(
        prefixed(&text),
        ["a:build | a says one", "a:build | a says two"],
        "{text}"
    );
}

#[test]
fn the_default_shows_what_ran_and_json_keeps_stdout_for_the_report() {
    let ws = two_actions();
    let output = run(ws.path(), &["a", "--json"]);
    assert_eq!(output.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["counts"]["ran"], 1);
    assert!(stderr(&output).contains("a:build | a says one"));
    let again = run(ws.path(), &["a"]);
    assert!(!stderr(&again).contains("says"), "{}", stderr(&again));
}

#[test]
fn one_action_is_singular() {
    let ws = two_actions();
    let output = run(ws.path(), &["a"]);
    let text = stderr(&output);
    assert!(
        text.contains("succeeded: 1 action (1 ran, 0 cached"),
        "{text}"
    );
}

/// `once run` under a pseudo-terminal `columns` wide (through `script`), or `None` where the
/// machine has no `script`.
fn under_terminal(root: &std::path::Path, columns: usize, env: &str) -> Option<String> {
    let script = ["/usr/bin/script", "/bin/script"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())?;
    let line = format!(
        "stty cols {columns}; {env} '{}' --workspace '{}' run --output-logs full \
         a bee a-target-whose-name-is-longer-than-the-terminal",
        crate::support::once_binary(),
        root.display()
    );
    let mut command = std::process::Command::new(script);
    command
        .args(["-qec", &line, "/dev/null"])
        // The caller's own `NO_COLOR` (CI sets it) must not decide; `env` does.
        .env_remove("NO_COLOR")
        .env_remove("ONCE_LOG");
    let output = crate::support::output_within(command);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    Some(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[test]
fn on_a_terminal_the_progress_line_fits_and_is_redrawn_in_place() {
    let ws = two_actions();
    let manifest = std::fs::read_to_string(ws.path().join("once.toml")).unwrap();
    std::fs::write(
        ws.path().join("once.toml"),
        format!(
            "{manifest}\n[targets.a-target-whose-name-is-longer-than-the-terminal]\n\
             kind = \"command\"\n\
             [targets.a-target-whose-name-is-longer-than-the-terminal.capabilities.build]\n\
             command = \"echo long\"\n"
        ),
    )
    .unwrap();
    let Some(screen) = under_terminal(ws.path(), 30, "") else {
        return;
    };
    // Every redraw starts with `\r` and a clear to the end of the line; what a redraw leaves
    // without a newline is a progress line, and it never reaches the last column.
    let redraws: Vec<&str> = screen.split("\r\x1b[K").skip(1).collect();
    assert!(redraws.len() >= 2, "{screen:?}");
    for drawn in &redraws {
        let progress = drawn.rsplit('\n').next().unwrap();
        assert!(progress.chars().count() < 30, "{progress:?} in {screen:?}");
    }
    assert!(screen.contains("\x1b[36ma:build"), "no colour: {screen:?}");
    assert!(screen.contains("| a says one"), "{screen:?}");
    let plain = under_terminal(ws.path(), 30, "NO_COLOR=1").unwrap();
    assert!(
        !plain.contains("\x1b[3"),
        "colour despite `NO_COLOR`: {plain:?}"
    );
    assert!(plain.contains("a:build"), "{plain:?}");
}

/// A failure that printed nothing has no log file: the summary says it printed nothing rather
/// than point at a file that is not there, and one that printed points at its log.
#[test]
fn a_quiet_failure_says_it_printed_nothing_and_a_loud_one_points_at_its_log() {
    let ws = workspace(
        r#"
[targets.quiet]
kind = "command"
[targets.quiet.capabilities.build]
command = "exit 3"

[targets.loud]
kind = "command"
[targets.loud.capabilities.build]
command = "echo 'loud broke' >&2; exit 4"
"#,
    );
    let output = run(ws.path(), &["quiet", "loud", "--keep-going"]);
    assert_eq!(output.status.code(), Some(1));
    let text = stderr(&output);
    let section = |action: &str| {
        let start = text
            .find(&format!("--- {action} (failed) ---"))
            .unwrap_or_else(|| panic!("no section for {action}: {text}"));
        let rest = &text[start..];
        // Up to the next section's header or the summary line.
        let end = ["\n--- ", "\nfailed:"]
            .iter()
            .filter_map(|next| rest.find(next))
            .min()
            .unwrap_or(rest.len());
        rest[..end].to_owned()
    };
    let quiet = section("quiet:build");
    assert!(quiet.contains("(it printed nothing)"), "{quiet}");
    assert!(!quiet.contains("full log:"), "{quiet}");
    let loud = section("loud:build");
    let log = loud
        .lines()
        .find_map(|line| line.trim().strip_prefix("full log: "))
        .unwrap_or_else(|| panic!("no log named: {loud}"));
    assert_eq!(std::fs::read_to_string(log).unwrap(), "loud broke\n");
}
