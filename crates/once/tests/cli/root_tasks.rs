//! Root tasks from the command line: `--all test` runs the commands contributors run from the
//! root (the root `package.json`'s `test`, a Cargo workspace's one workspace-wide test in place
//! of one per crate), `--affected test` the affected crates' own tests, and a capability no
//! target has is answered with the ones that exist and how to add it.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::{Test, once_binary};

fn cargo_workspace() -> Test {
    Test::new()
        .file("Cargo.toml", "[workspace]\nmembers = [\"a\", \"b\"]\n")
        .file("a/Cargo.toml", "[package]\nname = \"a\"\nversion = \"0.1.0\"\n")
        .file("a/src/lib.rs", "")
        .file(
            "b/Cargo.toml",
            "[package]\nname = \"b\"\nversion = \"0.1.0\"\n\n[dependencies]\na = { path = \"../a\" }\n",
        )
        .file("b/src/lib.rs", "")
        .file(".config/nextest.toml", "[profile.default]\n")
}

/// The actions a dry run's JSON plans, sorted.
fn planned(report: &Value) -> Vec<String> {
    let mut names: Vec<String> = report["actions"]
        .as_array()
        .unwrap_or_else(|| panic!("no actions in {report}"))
        .iter()
        .map(|a| a["action"].as_str().expect("a name").to_string())
        .collect();
    names.sort();
    names
}

#[test]
fn all_test_on_a_cargo_workspace_is_one_workspace_wide_run() {
    let run = cargo_workspace()
        .args(["run", "--all", "test", "--dry-run", "--json"])
        .run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    assert_eq!(planned(&run.json()), ["root:test"]);
    let query = cargo_workspace().args(["query", "target", "root"]).run();
    assert!(
        query.stdout().contains("cargo nextest run --workspace"),
        "{}",
        query.transcript()
    );
}

#[test]
fn all_test_on_a_pnpm_workspace_runs_the_root_script() {
    let run = Test::new()
        .file(
            "package.json",
            r#"{ "private": true, "scripts": { "test": "vitest", "dev": "vite" } }"#,
        )
        .file("pnpm-workspace.yaml", "packages:\n  - 'packages/*'\n")
        .file("packages/core/package.json", r#"{ "name": "core" }"#)
        .file(
            "packages/web/package.json",
            r#"{ "name": "web", "dependencies": { "core": "workspace:*" } }"#,
        )
        .args(["run", "--all", "test", "--dry-run", "--json"])
        .run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    assert_eq!(planned(&run.json()), ["root:test"]);
}

fn git(dir: &Path, args: &[&str]) {
    let output = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CEILING_DIRECTORIES", dir.parent().expect("a parent"))
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .stdin(Stdio::null())
        .output()
        .expect("runs git");
    assert!(output.status.success(), "git {args:?}: {output:?}");
}

#[test]
fn affected_test_runs_the_affected_crates_not_the_workspace() {
    let run = cargo_workspace().args(["--version"]).run();
    let root = run.root();
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "start"]);
    std::fs::write(root.join("b/src/lib.rs"), "pub fn b() {}\n").expect("writes");
    let output = Command::new(once_binary())
        .args(["run", "--affected", "test", "--dry-run", "--json"])
        .current_dir(root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CEILING_DIRECTORIES", root.parent().expect("a parent"))
        .env_remove("ONCE_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("runs once");
    assert!(output.status.success(), "{output:?}");
    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    // `b` changed and `a` did not: one crate's tests, not the workspace's.
    assert_eq!(planned(&report), ["b:test"]);
}

#[test]
fn a_capability_no_target_has_is_answered_with_those_that_exist() {
    let run = Test::new()
        .file(
            "package.json",
            r#"{ "private": true, "workspaces": ["core"], "scripts": { "test": "vitest" } }"#,
        )
        .file(
            "core/package.json",
            r#"{ "name": "core", "scripts": { "build": "tsc" } }"#,
        )
        .args(["run", "--all", "lint"])
        .run();
    assert_eq!(run.code(), 2, "{}", run.transcript());
    let stderr = run.stderr();
    assert!(
        stderr.contains("no target has the capability `lint`"),
        "{stderr}"
    );
    assert!(stderr.contains("`build` (1 target)"), "{stderr}");
    assert!(stderr.contains("`test` (1 target)"), "{stderr}");
    assert!(stderr.contains("once.toml"), "{stderr}");
}

#[test]
fn init_suggests_a_capability_that_exists() {
    // A workspace whose only capabilities are `build` scripts: `--all test` would run nothing.
    let run = Test::new()
        .file(
            "package.json",
            r#"{ "private": true, "workspaces": ["core", "web"] }"#,
        )
        .file(
            "core/package.json",
            r#"{ "name": "core", "scripts": { "build": "tsc" } }"#,
        )
        .file(
            "web/package.json",
            r#"{ "name": "web", "scripts": { "build": "vite build" } }"#,
        )
        .args(["init"])
        .run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    let stdout = run.stdout();
    assert!(!stdout.contains("--all test"), "{stdout}");
    assert!(
        stdout.contains("`once run --all build` runs `build` on 2 targets"),
        "{stdout}"
    );
    assert!(stdout.contains("no target has `test`"), "{stdout}");

    let run = Test::new()
        .file(
            "package.json",
            r#"{ "private": true, "workspaces": ["core"], "scripts": { "test": "vitest" } }"#,
        )
        .file("core/package.json", r#"{ "name": "core" }"#)
        .args(["init"])
        .run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    assert!(
        run.stdout()
            .contains("`once run --all test` runs `test` on 1 target"),
        "{}",
        run.transcript()
    );

    let run = Test::new().file("notes.txt", "").args(["init"]).run();
    assert!(
        run.stdout().contains("no target has a capability yet"),
        "{}",
        run.transcript()
    );
}
