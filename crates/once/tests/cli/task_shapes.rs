//! Task shapes as the ecosystems' own tools have them: a test waits for what it needs from its
//! dependencies (their build, or nothing where the tool builds them), never for their tests, so
//! with `--keep-going` every test whose needs succeeded runs, whatever the other tests did.

use serde_json::Value;

use crate::support::Test;

/// A Cargo workspace where `app` depends on `base`, with commands the overlay makes
/// observable: `base`'s tests fail, `app`'s record that they ran.
fn cargo_app_on_base() -> Test {
    Test::new()
        .file("Cargo.toml", "[workspace]\nmembers = [\"app\", \"base\"]\n")
        .file(
            "app/Cargo.toml",
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\n\n[dependencies]\nbase = { path = \"../base\" }\n",
        )
        .file("app/src/lib.rs", "")
        .file("base/Cargo.toml", "[package]\nname = \"base\"\nversion = \"0.1.0\"\n")
        .file("base/src/lib.rs", "")
        .manifest(
            "[targets.base.capabilities.test]\ncommand = \"echo a foundation test fails; exit 1\"\n\n\
             [targets.app.capabilities.test]\ncommand = \"echo ran > ran.txt\"\n",
        )
}

fn action<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .find(|a| a["action"] == name)
        .unwrap_or_else(|| panic!("no `{name}` in {report}"))
}

#[test]
fn a_failing_foundation_test_skips_no_dependent_test_with_keep_going() {
    // Named one by one: `--all test` would run the root's one workspace-wide `cargo test`.
    let run = cargo_app_on_base()
        .args(["run", "base:test", "app:test", "--keep-going", "--json"])
        .run();
    assert_eq!(run.code(), 1, "{}", run.transcript());
    let report = run.json();
    assert_eq!(action(&report, "base:test")["status"], "failed", "{report}");
    assert_eq!(
        action(&report, "app:test")["status"],
        "succeeded",
        "{report}"
    );
    assert!(run.root().join("app/ran.txt").is_file());
}

#[test]
fn a_dependent_test_waits_for_the_build_it_needs() {
    let run = Test::new()
        .file(
            "package.json",
            r#"{ "name": "root", "private": true, "workspaces": ["app", "base"] }"#,
        )
        .file(
            "app/package.json",
            r#"{ "name": "app", "scripts": { "test": "x" }, "dependencies": { "base": "*" } }"#,
        )
        .file(
            "base/package.json",
            r#"{ "name": "base", "scripts": { "build": "x", "test": "x" } }"#,
        )
        .manifest(
            "[targets.base.capabilities.build]\ncommand = \"echo the build breaks; exit 1\"\n\n\
             [targets.base.capabilities.test]\ncommand = \"true\"\n\n\
             [targets.app.capabilities.test]\ncommand = \"echo ran > ran.txt\"\n",
        )
        .args(["run", "--all", "test", "--keep-going", "--json"])
        .run();
    assert_eq!(run.code(), 1, "{}", run.transcript());
    let report = run.json();
    assert_eq!(
        action(&report, "base:build")["status"],
        "failed",
        "{report}"
    );
    assert_eq!(
        action(&report, "base:test")["status"],
        "succeeded",
        "{report}"
    );
    assert_eq!(action(&report, "app:test")["status"], "skipped", "{report}");
    assert!(!run.root().join("app/ran.txt").exists());
}
