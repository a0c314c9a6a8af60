//! No false greens: for each kind, a change that makes the real tool fail re-runs the action
//! through `once run`, and the run fails where the tool fails; an unchanged tree (and a change
//! undone) replays from the cache. Real tools run here: cargo (offline, crates without
//! dependencies, one target folder per test), node, python3, and go (offline, the Go of
//! `scripts/install-test-deps`, its caches in the test's folder).
//!
//! Each test prints its rows of the table kind × change → reran, failed (on stderr: run with
//! `--nocapture` to see it).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::{TempDir, copy_tree, once_binary};

/// One `once run ACTION --json` in `root`: whether the action's command ran, and whether the
/// run failed.
fn run(root: &Path, action: &str, env: &[(&str, String)]) -> (bool, bool) {
    let mut command = Command::new(once_binary());
    command
        .args(["run", action, "--json"])
        .current_dir(root)
        .env_remove("ONCE_LOG");
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().expect("runs once");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "not a report ({error}): {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let ran = report["counts"]["ran"].as_u64().expect("counts") > 0;
    (ran, report["status"] != "succeeded")
}

pub(crate) fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, text).expect("writes");
}

fn read(root: &Path, path: &str) -> String {
    std::fs::read_to_string(root.join(path)).expect("reads")
}

/// A change: what it is, the file, the text it writes; the file's old text comes back after.
struct Change<'a> {
    what: &'a str,
    path: &'a str,
    edit: &'a dyn Fn(&str) -> String,
    fails: Option<bool>,
}

/// Runs `action` on an unchanged tree (fully cached), then applies each change: the action
/// re-runs and fails exactly when the tool does; undone, the action replays from the cache.
fn table(kind: &str, root: &Path, action: &str, env: &[(&str, String)], changes: &[Change<'_>]) {
    assert_eq!(run(root, action, env), (true, false), "{kind}: first run");
    assert_eq!(run(root, action, env), (false, false), "{kind}: unchanged");
    eprintln!("{kind:<15} {:<28} reran=no  failed=no", "unchanged tree");
    for change in changes {
        let before = std::fs::read_to_string(root.join(change.path)).unwrap_or_default();
        write(root, change.path, &(change.edit)(&before));
        let (ran, failed) = run(root, action, env);
        eprintln!(
            "{kind:<15} {:<28} reran={:<3} failed={}",
            change.what,
            if ran { "yes" } else { "no" },
            if failed { "yes" } else { "no" }
        );
        assert!(ran, "{kind}: {} must re-run {action}", change.what);
        if let Some(fails) = change.fails {
            assert_eq!(failed, fails, "{kind}: {}", change.what);
        }
        if before.is_empty() {
            std::fs::remove_file(root.join(change.path)).expect("removes");
        } else {
            write(root, change.path, &before);
        }
        assert_eq!(
            run(root, action, env),
            (false, false),
            "{kind}: {} undone replays",
            change.what
        );
    }
}

#[test]
fn the_starters_main_job_is_fully_cached_the_second_time() {
    let dir = TempDir::new();
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/starter");
    copy_tree(&from, dir.path());
    let args = ["run", "report:build", "--param", "level=full", "--json"];
    let run = || {
        let output = Command::new(once_binary())
            .args(args)
            .current_dir(dir.path())
            .env_remove("ONCE_LOG")
            .output()
            .expect("runs once");
        let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
            panic!("{error}: {output:?}");
        });
        report["counts"].clone()
    };
    assert_eq!(run()["ran"], 4);
    let second = run();
    assert_eq!(
        (second["cached"].as_u64(), second["ran"].as_u64()),
        (Some(4), Some(0))
    );
}

/// What cargo needs to run here: a target folder of the test's own, offline, and never a
/// toolchain download.
pub(crate) fn cargo_env(root: &Path) -> [(&'static str, String); 3] {
    [
        (
            "CARGO_TARGET_DIR",
            root.join("target").display().to_string(),
        ),
        ("RUSTUP_AUTO_INSTALL", "0".to_owned()),
        ("CARGO_NET_OFFLINE", "true".to_owned()),
    ]
}

/// Writes `Cargo.lock` as a repository has it. Cargo writes a missing one on its first run: a
/// change of an input, which a second run would rightly notice.
pub(crate) fn generate_lockfile(root: &Path, env: &[(&str, String)]) {
    let lock = Command::new("cargo")
        .args(["generate-lockfile", "--offline"])
        .current_dir(root)
        .envs(env.iter().map(|(n, v)| (n, v)))
        .output()
        .expect("runs cargo");
    assert!(lock.status.success(), "{lock:?}");
}

#[test]
fn cargo_packages_rerun_and_fail_where_cargo_fails() {
    let dir = TempDir::new();
    let root = dir.path();
    write(
        root,
        "once.toml",
        r#"
[targets.a]
kind = "cargo-package"
path = "a"
[targets.a.capabilities.test]
command = "cargo test --locked --offline -p a"

[targets.c]
kind = "cargo-package"
path = "c"
deps = ["a"]
[targets.c.capabilities.test]
command = "cargo test --locked --offline -p c"
"#,
    );
    write(
        root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"a\", \"c\"]\nresolver = \"2\"\n",
    );
    write(
        root,
        "a/Cargo.toml",
        "[package]\nname = \"a\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    write(root, "a/src/lib.rs", "pub fn v() -> i32 {\n    1\n}\n");
    write(
        root,
        "c/Cargo.toml",
        "[package]\nname = \"c\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\na = { path = \"../a\" }\n",
    );
    write(
        root,
        "c/src/lib.rs",
        "#[test]\nfn uses_a() {\n    assert_eq!(a::v(), 1);\n    let data = std::fs::read_to_string(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/tests/data.txt\")).unwrap();\n    assert_eq!(data.trim(), \"ok\");\n}\n",
    );
    write(root, "c/tests/data.txt", "ok\n");
    let env = cargo_env(root);
    generate_lockfile(root, &env);
    assert!(read(root, "Cargo.lock").contains("name = \"a\""));
    table(
        "cargo-package",
        root,
        "c:test",
        &env,
        &[
            Change {
                what: "dependency source (a)",
                path: "a/src/lib.rs",
                edit: &|text| text.replace('1', "2"),
                fails: Some(true),
            },
            Change {
                what: "test data",
                path: "c/tests/data.txt",
                edit: &|_| "bad\n".to_owned(),
                fails: Some(true),
            },
            Change {
                what: "Cargo.lock (--locked)",
                path: "Cargo.lock",
                edit: &|text| text.replace("name = \"a\"", "name = \"gone\""),
                fails: Some(true),
            },
            Change {
                what: "rust-toolchain.toml",
                path: "rust-toolchain.toml",
                edit: &|_| "[toolchain]\nchannel = \"stable\"\n".to_owned(),
                fails: None,
            },
        ],
    );
}

#[test]
fn npm_packages_rerun_and_fail_where_node_fails() {
    let dir = TempDir::new();
    let root = dir.path();
    write(
        root,
        "once.toml",
        r#"
[targets.lib]
kind = "npm-package"
path = "lib"
[targets.lib.capabilities.test]
command = "node -e 0"

[targets.app]
kind = "npm-package"
path = "app"
deps = ["lib"]
[targets.app.capabilities.test]
command = "node test/run.js"
"#,
    );
    write(root, "package.json", "{\"private\": true}\n");
    write(root, "package-lock.json", "{\"lockfileVersion\": 3}\n");
    write(root, "tsconfig.json", "{}\n");
    write(root, "lib/package.json", "{\"name\": \"lib\"}\n");
    write(root, "lib/index.js", "module.exports = { v: () => 1 };\n");
    write(root, "app/package.json", "{\"name\": \"app\"}\n");
    write(
        root,
        "app/test/run.js",
        "const assert = require('assert');\nassert.strictEqual(require('../../lib/index.js').v(), 1);\nassert.strictEqual(require('./data.json').ok, true);\n",
    );
    write(root, "app/test/data.json", "{\"ok\": true}\n");
    write(root, "app/node_modules/x/index.js", "x\n");
    table(
        "npm-package",
        root,
        "app:test",
        &[],
        &[
            Change {
                what: "dependency source (lib)",
                path: "lib/index.js",
                edit: &|text| text.replace('1', "2"),
                fails: Some(true),
            },
            Change {
                what: "test data",
                path: "app/test/data.json",
                edit: &|_| "{\"ok\": false}\n".to_owned(),
                fails: Some(true),
            },
            Change {
                what: "root package-lock.json",
                path: "package-lock.json",
                edit: &|_| "{\"lockfileVersion\": 2}\n".to_owned(),
                fails: Some(false),
            },
            Change {
                what: "root tsconfig.json",
                path: "tsconfig.json",
                edit: &|_| "{\"strict\": true}\n".to_owned(),
                fails: Some(false),
            },
        ],
    );
    // What npm installs is no input.
    write(root, "app/node_modules/x/index.js", "y\n");
    assert_eq!(run(root, "app:test", &[]), (false, false));
}

#[test]
fn python_projects_rerun_and_fail_where_python_fails() {
    let dir = TempDir::new();
    let root = dir.path();
    write(
        root,
        "once.toml",
        r#"
[targets.lib]
kind = "python-project"
path = "lib"
[targets.lib.capabilities.test]
command = "python3 -c 'import mylib'"

[targets.app]
kind = "python-project"
path = "app"
deps = ["lib"]
[targets.app.capabilities.test]
command = "python3 -m unittest discover -s tests -t ."
env = { PYTHONPATH = "../lib" }
"#,
    );
    write(root, "uv.lock", "version = 1\n");
    write(root, "lib/pyproject.toml", "[project]\nname = \"lib\"\n");
    write(root, "lib/mylib.py", "def v():\n    return 1\n");
    write(root, "app/pyproject.toml", "[project]\nname = \"app\"\n");
    write(root, "app/tests/__init__.py", "");
    write(
        root,
        "app/tests/test_app.py",
        "import json, os, unittest\nimport mylib\n\nclass T(unittest.TestCase):\n    def test_v(self):\n        self.assertEqual(mylib.v(), 1)\n        with open(os.path.join(os.path.dirname(__file__), 'data.json')) as f:\n            self.assertTrue(json.load(f)['ok'])\n",
    );
    write(root, "app/tests/data.json", "{\"ok\": true}\n");
    // Python writes `__pycache__` on each import: never an input, or nothing would be cached.
    table(
        "python-project",
        root,
        "app:test",
        &[],
        &[
            Change {
                what: "dependency source (lib)",
                path: "lib/mylib.py",
                edit: &|text| text.replace('1', "2"),
                fails: Some(true),
            },
            Change {
                what: "test data",
                path: "app/tests/data.json",
                edit: &|_| "{\"ok\": false}\n".to_owned(),
                fails: Some(true),
            },
            Change {
                what: "root uv.lock",
                path: "uv.lock",
                edit: &|_| "version = 2\n".to_owned(),
                fails: Some(false),
            },
            Change {
                what: "root requirements.txt",
                path: "requirements.txt",
                edit: &|_| "requests\n".to_owned(),
                fails: Some(false),
            },
        ],
    );
}

/// A uv workspace whose `app` fills its dependencies in with a build hook (`dynamic`): only
/// `uv.lock` says it depends on `mylib`. That edge must reach `app:test`'s key, so a change
/// that breaks `mylib` re-runs the test and it fails where Python fails. The overlay only
/// swaps the inferred `uv run` for `python3` (uv is not needed here); the edge is inferred.
#[test]
fn a_uv_lock_only_edge_reruns_and_fails_where_python_fails() {
    let dir = TempDir::new();
    let root = dir.path();
    write(
        root,
        "pyproject.toml",
        "[tool.uv.workspace]\nmembers = [\"lib\", \"app\"]\n\
         [tool.uv.sources]\nmylib = { workspace = true }\n",
    );
    write(
        root,
        "uv.lock",
        "version = 1\nrevision = 3\n\n[[package]]\nname = \"app\"\n\
         source = { editable = \"app\" }\ndependencies = [{ name = \"mylib\" }]\n\n\
         [[package]]\nname = \"mylib\"\nsource = { editable = \"lib\" }\n",
    );
    write(root, "lib/pyproject.toml", "[project]\nname = \"mylib\"\n");
    write(root, "lib/mylib.py", "def v():\n    return 1\n");
    write(
        root,
        "app/pyproject.toml",
        "[project]\nname = \"app\"\ndynamic = [\"version\", \"dependencies\"]\n\
         [tool.hatch.metadata.hooks.custom]\n",
    );
    write(root, "app/tests/__init__.py", "");
    write(
        root,
        "app/tests/test_app.py",
        "import unittest\nimport mylib\n\nclass T(unittest.TestCase):\n    def test_v(self):\n        self.assertEqual(mylib.v(), 1)\n",
    );
    write(
        root,
        "once.toml",
        "[targets.app.capabilities.test]\ncommand = \"python3 -m unittest discover -s tests -t .\"\n\
         env = { PYTHONPATH = \"../lib\" }\n",
    );
    let check = Command::new(once_binary())
        .args(["query", "target", "app"])
        .current_dir(root)
        .output()
        .expect("runs once");
    assert!(check.status.success(), "{check:?}");
    let target: Value = serde_json::from_slice(&check.stdout).expect("a target");
    assert_eq!(target["deps"], serde_json::json!(["mylib"]), "{target}");
    table(
        "uv.lock edge",
        root,
        "app:test",
        &[],
        &[
            Change {
                what: "locked dependency source",
                path: "lib/mylib.py",
                edit: &|text| text.replace('1', "2"),
                fails: Some(true),
            },
            Change {
                what: "root uv.lock relocked",
                path: "uv.lock",
                edit: &|text| format!("{text}# relocked\n"),
                fails: Some(false),
            },
        ],
    );
}

/// With no once.toml at all, Cargo's own manifests give the edge: a dependency declared only as a
/// path in `Cargo.toml` reaches its dependent's key, so a change that breaks the dependent's tests
/// re-runs them, and they fail as `cargo test` does.
#[test]
fn an_inferred_cargo_path_dependency_reruns_and_fails_where_cargo_fails() {
    let dir = TempDir::new();
    let root = dir.path();
    write(
        root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"crates/*\"]\nresolver = \"2\"\n",
    );
    write(
        root,
        "crates/a/Cargo.toml",
        "[package]\nname = \"a\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    write(
        root,
        "crates/a/src/lib.rs",
        "pub fn v() -> i32 {\n    1\n}\n",
    );
    write(
        root,
        "crates/c/Cargo.toml",
        "[package]\nname = \"c\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\na = { path = \"../a\" }\n",
    );
    write(
        root,
        "crates/c/src/lib.rs",
        "#[test]\nfn uses_a() {\n    assert_eq!(a::v(), 1);\n}\n",
    );
    let env = cargo_env(root);
    generate_lockfile(root, &env);
    let check = Command::new(once_binary())
        .args(["query", "target", "c"])
        .current_dir(root)
        .output()
        .expect("runs once");
    let target: Value = serde_json::from_slice(&check.stdout).expect("a target");
    assert_eq!(
        target["inferred"]["manifest"]["file"],
        "crates/c/Cargo.toml"
    );
    assert_eq!(target["deps"], serde_json::json!(["a"]));
    table(
        "cargo, inferred",
        root,
        "c:test",
        &env,
        &[Change {
            what: "path dependency source (a)",
            path: "crates/a/src/lib.rs",
            edit: &|text| text.replace('1', "2"),
            fails: Some(true),
        }],
    );
}

/// A dev-dependency back on a dependent (legal in Cargo: `a`'s tests use `b`, which depends on
/// `a`) orders nothing, or the graph would have a cycle; its sources still reach `a:test`'s key.
#[test]
fn a_dev_dependency_cycle_still_reaches_the_tests_key() {
    let dir = TempDir::new();
    let root = dir.path();
    write(
        root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"a\", \"b\"]\nresolver = \"2\"\n",
    );
    write(
        root,
        "a/Cargo.toml",
        "[package]\nname = \"a\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dev-dependencies]\nb = { path = \"../b\" }\n",
    );
    write(
        root,
        "a/src/lib.rs",
        "pub fn v() -> i32 {\n    1\n}\n\n#[test]\nfn b_doubles() {\n    assert_eq!(b::twice(), 2);\n}\n",
    );
    write(
        root,
        "b/Cargo.toml",
        "[package]\nname = \"b\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\na = { path = \"../a\" }\n",
    );
    write(
        root,
        "b/src/lib.rs",
        "pub fn twice() -> i32 {\n    a::v() * 2\n}\n",
    );
    let env = cargo_env(root);
    generate_lockfile(root, &env);
    table(
        "cargo, dev cycle",
        root,
        "a:test",
        &env,
        &[Change {
            what: "dev-dependency source (b)",
            path: "b/src/lib.rs",
            edit: &|text| text.replace("* 2", "* 3"),
            fails: Some(true),
        }],
    );
}

/// A key takes in its direct dependencies' source digests only, and each of those covers the
/// dependency's own dependencies: a change two steps away still re-runs the action, and
/// undoing it replays.
#[test]
fn a_change_two_dependencies_away_reaches_the_key() {
    let dir = TempDir::new();
    let root = dir.path();
    write(
        root,
        "once.toml",
        r#"
[targets.app]
kind = "command"
path = "app"
deps = ["lib"]
[targets.app.capabilities.test]
command = "cat ../base/value.txt | grep -qx 1"

[targets.lib]
kind = "command"
path = "lib"
deps = ["base"]
[targets.lib.capabilities.build]
command = "true"

[targets.base]
kind = "command"
path = "base"
[targets.base.capabilities.build]
command = "true"
"#,
    );
    write(root, "app/main.txt", "app\n");
    write(root, "lib/lib.txt", "lib\n");
    write(root, "base/value.txt", "1\n");
    table(
        "command, 2 steps",
        root,
        "app:test",
        &[],
        &[Change {
            what: "source two dependencies away",
            path: "base/value.txt",
            edit: &|_| "2\n".to_owned(),
            fails: Some(true),
        }],
    );
}

/// uv's layout in small, in `root`, with its `Cargo.lock`.
fn uv_layout(root: &Path) -> [(&'static str, String); 3] {
    write(
        root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"crates/*\"]\nresolver = \"2\"\n",
    );
    write(
        root,
        "crates/app/Cargo.toml",
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\napp-python = { path = \"../app-python\" }\n",
    );
    write(
        root,
        "crates/app/src/lib.rs",
        "#[test]\nfn finds_python() {\n    assert_eq!(app_python::version(), 3);\n}\n",
    );
    write(
        root,
        "crates/app-python/Cargo.toml",
        "[package]\nname = \"app-python\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    write(
        root,
        "crates/app-python/src/lib.rs",
        "pub fn version() -> i32 {\n    3\n}\n",
    );
    write(
        root,
        "pyproject.toml",
        "[tool.uv.workspace]\nmembers = [\"python/app\"]\n",
    );
    write(
        root,
        "python/app/pyproject.toml",
        "[project]\nname = \"app\"\nversion = \"0.1.0\"\n",
    );
    let env = cargo_env(root);
    generate_lockfile(root, &env);
    env
}

/// uv's layout in small: a Cargo crate `app` with a path dependency on the crate `app-python`,
/// and a Python project named `app` (a uv workspace member). Discovery's answer must keep the
/// crate edge on the crate under every overlay: with none, with one that renames the Python
/// project to a free name (the usual fix for a clash), and with one that tries to rename it to
/// the crate's own name (refused, so the crate keeps its name and its dependents). A crate edge
/// that reached the Python project instead would leave the crate's sources out of `app:test`'s
/// key: broken Rust, replayed as a success.
#[test]
fn a_crate_edge_reaches_the_crate_under_every_overlay() {
    let overlays = [
        ("no overlay", None),
        (
            "python renamed",
            Some(
                "[targets.app-py]\nkind = \"python-project\"\npath = \"python/app\"\n\
                 [targets.app-py.capabilities.test]\ncommand = \"python3 -c pass\"\n",
            ),
        ),
        (
            "python renamed onto the crate",
            Some(
                "[targets.app-python]\nkind = \"python-project\"\npath = \"python/app\"\n\
                 [targets.app-python.capabilities.test]\ncommand = \"python3 -c pass\"\n",
            ),
        ),
    ];
    for (what, overlay) in overlays {
        // A tree of its own per overlay: each table starts from an empty cache.
        let dir = TempDir::new();
        let root = dir.path();
        let env = uv_layout(root);
        if let Some(text) = overlay {
            write(root, "once.toml", text);
        }
        let check = Command::new(once_binary())
            .args(["query", "target", "app"])
            .current_dir(root)
            .output()
            .expect("runs once");
        assert!(check.status.success(), "{what}: {check:?}");
        let target: Value = serde_json::from_slice(&check.stdout).expect("a target");
        assert_eq!(target["deps"], serde_json::json!(["app-python"]), "{what}");
        let dependency = Command::new(once_binary())
            .args(["query", "target", "app-python"])
            .current_dir(root)
            .output()
            .expect("runs once");
        let dependency: Value = serde_json::from_slice(&dependency.stdout).expect("a target");
        assert_eq!(dependency["kind"], "cargo-package", "{what}");
        assert_eq!(dependency["path"], "crates/app-python", "{what}");
        table(
            &format!("identity, {what}"),
            root,
            "app:test",
            &env,
            &[Change {
                what: "crate dependency source",
                path: "crates/app-python/src/lib.rs",
                edit: &|text| text.replace('3', "\"three\""),
                fails: Some(true),
            }],
        );
    }
}

/// A discovered crate's own `test` runs its doc-tests, as `cargo test` in its folder does: a
/// doc-test that breaks fails the run. (An empty filter, `cargo test ''`, makes cargo skip every
/// doc-test; that was a green no tool of the crate would give.)
#[test]
fn a_broken_doc_test_fails_the_crates_own_test() {
    let dir = TempDir::new();
    let root = dir.path();
    write(
        root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"a\"]\nresolver = \"2\"\n",
    );
    write(
        root,
        "a/Cargo.toml",
        "[package]\nname = \"a\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    write(
        root,
        "a/src/lib.rs",
        "/// ```\n/// assert_eq!(a::one(), 1);\n/// ```\npub fn one() -> u32 {\n    1\n}\n",
    );
    let env = cargo_env(root);
    generate_lockfile(root, &env);
    table(
        "cargo doc-test",
        root,
        "a:test",
        &env,
        &[Change {
            what: "doc-test broken",
            path: "a/src/lib.rs",
            edit: &|text| text.replace("assert_eq!(a::one(), 1)", "assert_eq!(a::one(), 2)"),
            fails: Some(true),
        }],
    );
}

/// What the real `go` needs to run here offline: the Go that `scripts/install-test-deps`
/// installs (target/interop/go) first on `PATH`, its caches and module folder in the test's
/// temp folder, no module proxy, no user settings, and never a toolchain download.
fn go_env(root: &Path) -> Vec<(&'static str, String)> {
    let go_bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/interop/go/bin");
    assert!(
        go_bin.join("go").is_file(),
        "no Go at `{}`: run `scripts/install-test-deps`",
        go_bin.display()
    );
    let path = std::env::var("PATH").unwrap_or_default();
    vec![
        ("PATH", format!("{}:{path}", go_bin.display())),
        ("GOCACHE", root.join(".go/cache").display().to_string()),
        ("GOPATH", root.join(".go/path").display().to_string()),
        ("GOENV", "off".to_owned()),
        ("GOFLAGS", String::new()),
        ("GOPROXY", "off".to_owned()),
        ("GOTOOLCHAIN", "local".to_owned()),
        ("GOTELEMETRY", "off".to_owned()),
        (
            "XDG_CONFIG_HOME",
            root.join(".go/config").display().to_string(),
        ),
    ]
}

/// A Go library `lib` and an app whose test uses it; `wiring` joins them (a `replace` in the
/// app's `go.mod`, or a `go.work`).
fn go_layout(root: &Path, app_go_mod: &str, go_work: Option<&str>) {
    write(root, "lib/go.mod", "module example.com/lib\n\ngo 1.22\n");
    write(
        root,
        "lib/lib.go",
        "package lib\n\n// V is what the app checks.\nfunc V() int {\n\treturn 1\n}\n",
    );
    write(root, "app/go.mod", app_go_mod);
    write(
        root,
        "app/app_test.go",
        "package app\n\nimport (\n\t\"testing\"\n\n\t\"example.com/lib\"\n)\n\n\
         func TestUsesLib(t *testing.T) {\n\tif lib.V() != 1 {\n\t\tt.Fatal(\"lib.V() changed\")\n\t}\n}\n",
    );
    if let Some(work) = go_work {
        write(root, "go.work", work);
    }
    // A module beside them that nothing requires: `go` never reads it for the app.
    write(
        root,
        "tools/go.mod",
        "module example.com/tools\n\ngo 1.22\n",
    );
}

/// With no once.toml, Go's own manifests give the edge: the app's `replace` of `lib` by its
/// folder puts lib's sources in `app:test`'s key, so a lib that stops compiling, or answers
/// otherwise, re-runs the app's tests and fails them as `go test` does.
#[test]
fn an_inferred_go_replace_reruns_and_fails_where_go_fails() {
    let dir = TempDir::new();
    let root = dir.path();
    // The root is not a Go module: the modules are found beside it (a polyglot layout).
    write(
        root,
        "package.json",
        "{\"name\": \"site\", \"private\": true}\n",
    );
    go_layout(
        root,
        "module example.com/app\n\ngo 1.22\n\nrequire example.com/lib v0.0.0\n\n\
         replace example.com/lib => ../lib\n",
        None,
    );
    let env = go_env(root);
    let check = Command::new(once_binary())
        .args(["query", "target", "app"])
        .current_dir(root)
        .output()
        .expect("runs once");
    let target: Value = serde_json::from_slice(&check.stdout).expect("a target");
    assert_eq!(target["inferred"]["manifest"]["file"], "app/go.mod");
    assert_eq!(target["deps"], serde_json::json!(["lib"]));
    table(
        "go, replace",
        root,
        "app:test",
        &env,
        &[
            Change {
                what: "dependency stops compiling",
                path: "lib/lib.go",
                edit: &|text| text.replace("return 1", "return \"one\""),
                fails: Some(true),
            },
            Change {
                what: "dependency answers otherwise",
                path: "lib/lib.go",
                edit: &|text| text.replace("return 1", "return 2"),
                fails: Some(true),
            },
            Change {
                what: "replace removed (go.mod)",
                path: "app/go.mod",
                edit: &|text| text.replace("replace example.com/lib => ../lib\n", ""),
                fails: Some(true),
            },
        ],
    );
}

/// In a `go.work`, every `use`d module is built from its folder: the app's plain `require` of
/// `lib` is an edge, and `go.work` itself is in the key.
#[test]
fn an_inferred_go_work_module_reruns_and_fails_where_go_fails() {
    let dir = TempDir::new();
    let root = dir.path();
    go_layout(
        root,
        "module example.com/app\n\ngo 1.22\n\nrequire example.com/lib v0.0.0\n",
        Some("go 1.22\n\nuse (\n\t./app\n\t./lib\n)\n"),
    );
    let env = go_env(root);
    let check = Command::new(once_binary())
        .args(["query", "target", "app"])
        .current_dir(root)
        .output()
        .expect("runs once");
    let target: Value = serde_json::from_slice(&check.stdout).expect("a target");
    assert_eq!(target["deps"], serde_json::json!(["lib"]));
    table(
        "go, go.work",
        root,
        "app:test",
        &env,
        &[
            Change {
                what: "dependency stops compiling",
                path: "lib/lib.go",
                edit: &|text| text.replace("return 1", "return \"one\""),
                fails: Some(true),
            },
            Change {
                what: "go.work drops lib",
                path: "go.work",
                edit: &|text| text.replace("\t./lib\n", ""),
                fails: Some(true),
            },
        ],
    );
}
