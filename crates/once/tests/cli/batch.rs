//! Batches with real cargo (offline, crates without dependencies, a target folder of the
//! test's own): the `test` of several crates ready together runs as one `cargo test -p a -p b
//! …`, and each crate's result is recorded under its own key, never the batch's; a batch with
//! one broken crate records none and fails the run where cargo fails; `--no-batch` runs one
//! process per crate.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::false_green::{cargo_env, generate_lockfile, write};
use crate::support::{TempDir, once_binary};

/// A Cargo workspace of three crates, each with one passing test, and a `once.toml` that adds
/// a command depending on `a`'s test and one depending on nothing.
fn three_crates(root: &Path) -> [(&'static str, String); 3] {
    write(
        root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"crates/*\"]\nresolver = \"2\"\n",
    );
    for name in ["a", "b", "c"] {
        write(
            root,
            &format!("crates/{name}/Cargo.toml"),
            &format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"),
        );
        write(
            root,
            &format!("crates/{name}/src/lib.rs"),
            &format!("#[test]\nfn {name}_passes() {{\n    assert_eq!(1, 1);\n}}\n"),
        );
    }
    write(
        root,
        "once.toml",
        "[targets.after]\nkind = \"command\"\npath = \"after\"\ndeps = [\"a\"]\n\
         [targets.after.capabilities.test]\ncommand = \"echo after\"\n\
         [targets.other]\nkind = \"command\"\npath = \"other\"\n\
         [targets.other.capabilities.test]\ncommand = \"echo other\"\n",
    );
    write(root, "after/README", "waits for a:test\n");
    write(root, "other/README", "waits for nothing\n");
    let env = cargo_env(root);
    generate_lockfile(root, &env);
    env
}

/// `once run WORDS… --json` in `root`: the exit code and the report.
fn run(root: &Path, env: &[(&str, String)], words: &[&str]) -> (i32, Value) {
    let output = Command::new(once_binary())
        .arg("run")
        .args(words)
        .arg("--json")
        .current_dir(root)
        .env_remove("ONCE_LOG")
        .envs(env.iter().map(|(n, v)| (n, v)))
        .output()
        .expect("runs once");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "not a report ({error}): {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.code().unwrap_or(-1), report)
}

/// Each action of `report` as `action status cached batch`, by name (the summary lists
/// failures first).
fn rows(report: &Value) -> Vec<String> {
    let mut rows: Vec<String> = report["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .map(|a| {
            format!(
                "{} {} cached={} batch={}",
                a["action"].as_str().unwrap_or("?"),
                a["status"].as_str().unwrap_or("?"),
                a["cached"],
                a["batch"]
            )
        })
        .collect();
    rows.sort();
    rows
}

fn log_of<'r>(report: &'r Value, action: &str) -> &'r str {
    report["actions"]
        .as_array()
        .and_then(|all| all.iter().find(|a| a["action"] == action))
        .and_then(|a| a["log"].as_str())
        .unwrap_or_else(|| panic!("no log for {action}: {report:#}"))
}

const THREE: &[&str] = &["a:test", "b:test", "c:test"];

#[test]
fn a_batch_of_three_records_three_keys_and_an_edit_reruns_only_its_crate() {
    let dir = TempDir::new();
    let root = dir.path();
    let env = three_crates(root);

    let (code, report) = run(root, &env, &[THREE, &["--batch"]].concat());
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(
        rows(&report),
        [
            "a:test succeeded cached=false batch=1",
            "b:test succeeded cached=false batch=1",
            "c:test succeeded cached=false batch=1",
        ],
        "{report:#}"
    );
    // One process: one log, named by every member, holding every crate's tests.
    let log = log_of(&report, "a:test");
    assert_eq!(log_of(&report, "b:test"), log);
    assert_eq!(log_of(&report, "c:test"), log);
    let text = std::fs::read_to_string(log).expect("the batch's log");
    for name in ["a", "b", "c"] {
        assert!(
            text.contains(&format!("test {name}_passes ... ok")),
            "{text}"
        );
    }

    // Three keys: the next run replays all three.
    let (code, report) = run(root, &env, &[THREE, &["--batch"]].concat());
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["counts"]["cached"], 3, "{report:#}");
    assert_eq!(report["counts"]["ran"], 0, "{report:#}");

    // An edit to one crate re-runs that crate alone (a batch of one is no batch).
    write(
        root,
        "crates/c/src/lib.rs",
        "#[test]\nfn c_passes() {\n    assert_eq!(2, 2);\n}\n",
    );
    let (code, report) = run(root, &env, &[THREE, &["--batch"]].concat());
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(
        rows(&report),
        [
            "a:test succeeded cached=true batch=null",
            "b:test succeeded cached=true batch=null",
            "c:test succeeded cached=false batch=null",
        ],
        "{report:#}"
    );
}

#[test]
fn a_batch_with_a_broken_crate_records_none_and_fails_where_cargo_fails() {
    let dir = TempDir::new();
    let root = dir.path();
    let env = three_crates(root);
    write(
        root,
        "crates/b/src/lib.rs",
        "#[test]\nfn b_passes() {\n    assert_eq!(1, 2);\n}\n",
    );

    let (code, report) = run(root, &env, &[THREE, &["--batch"]].concat());
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["status"], "failed", "{report:#}");
    assert_eq!(
        rows(&report),
        [
            "a:test failed cached=false batch=1",
            "b:test failed cached=false batch=1",
            "c:test failed cached=false batch=1",
        ],
        "{report:#}"
    );
    let a = &report["actions"][0];
    assert_eq!(a["exit_code"], 101, "cargo test's own exit code: {a:#}");

    // None was recorded: without batches each crate runs, one process each, and only the
    // broken one fails.
    let (code, report) = run(root, &env, &[THREE, &["--no-batch"]].concat());
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        rows(&report),
        [
            "a:test succeeded cached=false batch=null",
            "b:test failed cached=false batch=null",
            "c:test succeeded cached=false batch=null",
        ],
        "{report:#}"
    );
    assert_ne!(log_of(&report, "a:test"), log_of(&report, "c:test"));
}

#[test]
fn keep_going_runs_what_no_failed_batch_blocks_and_skips_what_waits_for_a_member() {
    let dir = TempDir::new();
    let root = dir.path();
    let env = three_crates(root);
    write(
        root,
        "crates/b/src/lib.rs",
        "#[test]\nfn b_passes() {\n    assert_eq!(1, 2);\n}\n",
    );
    let words = [
        THREE,
        &["after:test", "other:test", "--batch", "--keep-going"],
    ]
    .concat();
    let (code, report) = run(root, &env, &words);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        rows(&report),
        [
            "a:test failed cached=false batch=1",
            "after:test skipped cached=false batch=null",
            "b:test failed cached=false batch=1",
            "c:test failed cached=false batch=1",
            "other:test succeeded cached=false batch=null",
        ],
        "{report:#}"
    );
}

#[test]
fn batches_are_off_by_default_and_once_toml_turns_them_on_per_capability() {
    let dir = TempDir::new();
    let root = dir.path();
    let env = three_crates(root);
    let (code, report) = run(root, &env, &["a:test", "b:test"]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(
        rows(&report),
        [
            "a:test succeeded cached=false batch=null",
            "b:test succeeded cached=false batch=null",
        ],
        "{report:#}"
    );
    // Only `a` and `c` say `batch = true`: `b` runs alone.
    let manifest = std::fs::read_to_string(root.join("once.toml")).expect("reads");
    write(
        root,
        "once.toml",
        &format!(
            "{manifest}[targets.a.capabilities.test]\nbatch = true\n\
             [targets.c.capabilities.test]\nbatch = true\n"
        ),
    );
    let (code, report) = run(root, &env, &[THREE, &["--force"]].concat());
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(
        rows(&report),
        [
            "a:test succeeded cached=false batch=1",
            "b:test succeeded cached=false batch=null",
            "c:test succeeded cached=false batch=1",
        ],
        "{report:#}"
    );
}

#[test]
fn a_batch_runs_exactly_what_its_members_run_alone() {
    // A failing doc-test: each crate's own `cargo test` runs its doc-tests, so the batch must run
    // them too (and fail), or it would be a green its members never give.
    let dir = TempDir::new();
    let root = dir.path();
    let env = three_crates(root);
    write(
        root,
        "crates/a/src/lib.rs",
        "/// ```\n/// assert!(false, \"a doc-test\");\n/// ```\npub fn documented() {}\n\n\
         #[test]\nfn a_passes() {\n    assert_eq!(1, 1);\n}\n",
    );
    let (alone_code, alone) = run(root, &env, &[THREE, &["--no-batch"]].concat());
    assert!(
        rows(&alone).iter().any(|r| r.starts_with("a:test failed")),
        "{alone:#}"
    );
    let (batch_code, batch) = run(root, &env, &[THREE, &["--batch", "--force"]].concat());
    assert_eq!(batch_code, alone_code, "{batch:#}\n{alone:#}");
    // A failed batch fails every member: cargo's exit code cannot say which package failed.
    assert!(
        rows(&batch).iter().all(|r| r.contains(" failed ")),
        "{batch:#}"
    );
    assert!(
        batch["actions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["batch"] == 1),
        "{batch:#}"
    );
    let log = batch["actions"][0]["log"]
        .as_str()
        .expect("the batch's log");
    let log = std::fs::read_to_string(log).expect("reads the batch's log");
    assert!(log.contains("Doc-tests a"), "{log}");
}
