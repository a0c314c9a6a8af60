//! Why an action ran again: the run names the inputs that changed since the action's last
//! recorded run (appeared, disappeared, changed), in its summary, its `--json` report and
//! `once_run`'s answer, and `once query key` says the same before the run.
//!
//! The attack is the commonest one: the first `cargo test` writes `Cargo.lock`, so the next run
//! misses once. The action stands in for it: its command writes the lock file its key reads.

use std::path::Path;

use serde_json::{Value, json};

use crate::run::{report, run, workspace};
use crate::support::{Mcp, PATIENCE, once_binary};

/// `app:test` reads `src/**` and the root's `Cargo.lock`, and writes that lock file when it is
/// missing, as a first `cargo test` does.
const MANIFEST: &str = r#"
[targets.app]
kind = "command"
path = "app"
[targets.app.capabilities.test]
command = "test -e ../Cargo.lock || echo '# written by the first test' > ../Cargo.lock"
inputs = ["src/**", "//Cargo.lock"]
"#;

fn ran_again(report: &Value) -> Value {
    report["actions"][0]["ran_again"].clone()
}

fn query_key(root: &Path) -> Value {
    let output = std::process::Command::new(once_binary())
        .arg("--workspace")
        .arg(root)
        .args(["query", "key", "app:test", "--json"])
        .env_remove("ONCE_LOG")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("runs once");
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).expect("json")
}

#[test]
fn the_run_after_the_first_names_the_lock_file_that_appeared() {
    let dir = workspace(MANIFEST);
    let root = dir.path();
    std::fs::create_dir_all(root.join("app/src")).unwrap();
    std::fs::write(root.join("app/src/main.txt"), "1").unwrap();

    let first = report(&run(root, &["app:test", "--json"]));
    assert_eq!(first["counts"]["ran"], 1, "{first}");
    assert!(
        ran_again(&first).is_null(),
        "a first run is no rerun: {first}"
    );
    assert!(root.join("Cargo.lock").exists());

    // Before the next run, the key's explanation already says what will make it run.
    let explained = query_key(root);
    assert_eq!(
        explained["changes"],
        json!([{"part": "file", "name": "//Cargo.lock", "how": "added"}]),
        "{explained}"
    );
    assert!(
        explained["verdict"]
            .as_str()
            .unwrap_or_default()
            .contains("`Cargo.lock` appeared"),
        "{explained}"
    );

    let second = run(root, &["app:test", "--json"]);
    let second = report(&second);
    assert_eq!(second["counts"]["ran"], 1, "{second}");
    assert_eq!(ran_again(&second), "`Cargo.lock` appeared", "{second}");

    // Nothing changed since: replayed, and nothing to explain.
    let third = report(&run(root, &["app:test", "--json"]));
    assert_eq!(third["counts"]["cached"], 1, "{third}");
    assert!(ran_again(&third).is_null(), "{third}");

    // A change and a removal, in the words a person reads at the end of the run.
    std::fs::write(root.join("Cargo.lock"), "# changed by hand").unwrap();
    std::fs::remove_file(root.join("app/src/main.txt")).unwrap();
    let human = run(root, &["app:test"]);
    let stderr = String::from_utf8_lossy(&human.stderr);
    assert!(
        stderr.contains("app:test ran again: `Cargo.lock` changed, `src/main.txt` disappeared"),
        "{stderr}"
    );
}

#[test]
fn many_changed_inputs_are_named_a_few_at_a_time() {
    let dir = workspace(MANIFEST);
    let root = dir.path();
    std::fs::create_dir_all(root.join("app/src")).unwrap();
    std::fs::write(root.join("Cargo.lock"), "# there from the start").unwrap();
    let first = report(&run(root, &["app:test", "--json"]));
    assert_eq!(first["counts"]["ran"], 1, "{first}");
    for n in 0..7 {
        std::fs::write(root.join(format!("app/src/f{n}.txt")), "new").unwrap();
    }
    let second = report(&run(root, &["app:test", "--json"]));
    assert_eq!(
        ran_again(&second),
        "`src/f0.txt` appeared, `src/f1.txt` appeared, `src/f2.txt` appeared and 4 more",
        "{second}"
    );
}

#[test]
fn once_run_answers_why_it_ran_again() {
    let dir = workspace(MANIFEST);
    let root = dir.path();
    std::fs::create_dir_all(root.join("app/src")).unwrap();
    let mut server = Mcp::spawn(root, &["--allow-run"]);
    server.initialize();
    let first = server.call(2, "once_run", json!({"target": "app:test"}));
    let first = &first["result"]["structuredContent"]["result"];
    assert_eq!(first["counts"]["ran"], 1, "{first}");
    assert!(first["actions"][0]["ran_again"].is_null(), "{first}");
    let second = server.call(3, "once_run", json!({"target": "app:test"}));
    let second = &second["result"]["structuredContent"]["result"];
    assert_eq!(
        second["actions"][0]["ran_again"], "`Cargo.lock` appeared",
        "{second}"
    );
    server.close_stdin();
    assert_eq!(server.wait(PATIENCE).0, Some(0));
}
