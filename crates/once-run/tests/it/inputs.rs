//! What a key covers: a cached success only when the real command would succeed. A change that
//! can change a command's answer re-runs it; an unchanged tree replays everything.

use once_run::RunStatus;

use super::{Fixture, serial};

/// A key must not cover what the target's own capabilities write: `check` runs over the whole
/// folder, `build` writes `report.txt` into it.
#[test]
fn the_outputs_of_a_targets_capabilities_are_never_its_inputs() {
    let ws = Fixture::new(
        r#"
[targets.report]
kind = "command"
[targets.report.capabilities.build]
command = "echo built > report.txt"
deps = [":check"]
outputs = ["report.txt"]
[targets.report.capabilities.check]
command = "true"
"#,
    );
    ws.file("notes.txt", "n\n");
    let first = ws.run(&["report:build"], &serial());
    assert_eq!(first.counts.ran, 2, "{first:?}");
    let second = ws.run(&["report:build"], &serial());
    assert_eq!(second.counts.cached, 2, "{second:?}");
    assert_eq!(second.counts.ran, 0);
}

/// A file `once` stages while it restores an output is listed and renamed away in an instant, so
/// it is never an input: one left in the folder (a write cut by a crash) changes no key.
#[test]
fn a_staged_file_of_once_is_never_an_input() {
    let ws = Fixture::new(
        r#"
[targets.report]
kind = "command"
[targets.report.capabilities.check]
command = "true"
"#,
    );
    ws.file("notes.txt", "n\n");
    let first = ws.run(&["report:check"], &serial());
    assert_eq!(first.counts.ran, 1, "{first:?}");
    ws.file(&once_fs::stage_name(), "half a restored output");
    ws.file(".once-stage-cs1-1", "half an applied change");
    let second = ws.run(&["report:check"], &serial());
    assert_eq!(second.counts.cached, 1, "{second:?}");
    ws.file("notes.txt", "changed\n");
    let third = ws.run(&["report:check"], &serial());
    assert_eq!(
        third.counts.ran, 1,
        "a real change still runs it again: {third:?}"
    );
}

/// `app` declares `deps = ["lib"]` and `lib` has no `test` of its own: a change in `lib`'s
/// sources still re-runs `app:test`, and the run fails where the test fails.
#[test]
fn a_dependencys_sources_reach_its_dependents_keys() {
    let ws = Fixture::new(
        r#"
[targets.lib]
kind = "command"
path = "lib"
[targets.lib.capabilities.build]
command = "true"
inputs = ["src/**"]

[targets.app]
kind = "command"
path = "app"
deps = ["lib"]
[targets.app.capabilities.test]
command = "grep -q good ../lib/src/lib.txt"
"#,
    );
    ws.file("lib/src/lib.txt", "good\n")
        .file("lib/README", "r\n")
        .file("app/main.txt", "m\n");
    assert_eq!(ws.run(&["app:test"], &serial()).counts.ran, 1);
    assert_eq!(ws.run(&["app:test"], &serial()).counts.cached, 1);
    // Outside `lib`'s inputs: no reason to re-run.
    ws.file("lib/README", "changed\n");
    assert_eq!(ws.run(&["app:test"], &serial()).counts.cached, 1);
    ws.file("lib/src/lib.txt", "bad\n");
    let after = ws.run(&["app:test"], &serial());
    assert_eq!(after.counts.ran, 1, "{after:?}");
    assert_eq!(after.status, RunStatus::Failed);
}

/// A glob starting with `//` names files from the workspace root: a lockfile beside the
/// manifest is an input of a target in a subfolder.
#[test]
fn root_relative_globs_reach_files_outside_the_targets_folder() {
    let ws = Fixture::new(
        r#"
[targets.pkg]
kind = "command"
path = "pkg"
[targets.pkg.capabilities.test]
command = "grep -q ok ../deps.lock && grep -q ok ../conf/a.cfg"
inputs = ["src/**", "//deps.lock", "//conf/*.cfg", "!//conf/skip.cfg"]
"#,
    );
    ws.file("deps.lock", "ok\n")
        .file("conf/a.cfg", "ok\n")
        .file("conf/skip.cfg", "s\n")
        .file("other.txt", "o\n")
        .file("pkg/src/main.txt", "m\n");
    assert_eq!(ws.run(&["pkg:test"], &serial()).counts.ran, 1);
    ws.file("other.txt", "changed\n")
        .file("conf/skip.cfg", "t\n");
    assert_eq!(ws.run(&["pkg:test"], &serial()).counts.cached, 1);
    ws.file("deps.lock", "ok\nmore\n");
    assert_eq!(ws.run(&["pkg:test"], &serial()).counts.ran, 1);
    ws.file("conf/a.cfg", "bad\n");
    let after = ws.run(&["pkg:test"], &serial());
    assert_eq!(after.counts.ran, 1);
    assert_eq!(after.status, RunStatus::Failed);
}

/// The kinds' default inputs cover test data and lockfiles, not only the sources.
#[test]
fn default_inputs_cover_test_data_and_lockfiles() {
    let ws = Fixture::new(
        r#"
[targets.py]
kind = "python-project"
path = "py"
[targets.py.capabilities.test]
command = "grep -q ok tests/data.json"

[targets.rs]
kind = "cargo-package"
path = "crates/rs"
[targets.rs.capabilities.test]
command = "grep -q ok ../../Cargo.lock"
"#,
    );
    ws.file("py/pyproject.toml", "[project]\nname = \"py\"\n")
        .file("py/tests/test_a.py", "def test_a(): pass\n")
        .file("py/tests/data.json", "\"ok\"\n")
        .file("py/__pycache__/a.pyc", "x")
        .file("Cargo.toml", "[workspace]\nmembers = [\"crates/rs\"]\n")
        .file("Cargo.lock", "ok\n")
        .file("crates/rs/Cargo.toml", "[package]\nname = \"rs\"\n")
        .file("crates/rs/src/lib.rs", "\n");
    assert_eq!(ws.run(&["py:test", "rs:test"], &serial()).counts.ran, 2);
    ws.file("py/__pycache__/a.pyc", "y")
        .file("crates/rs/target/debug/x", "y");
    assert_eq!(ws.run(&["py:test", "rs:test"], &serial()).counts.cached, 2);
    ws.file("py/tests/data.json", "\"bad\"\n")
        .file("Cargo.lock", "bad\n");
    for action in ["py:test", "rs:test"] {
        let after = ws.run(&[action], &serial());
        assert_eq!(after.counts.ran, 1, "{after:?}");
        assert_eq!(after.status, RunStatus::Failed);
    }
}

/// A target at the root holds the folders of the others: what they write is not its input
/// either, or its key would depend on whether they ran before it was computed.
#[test]
fn the_outputs_of_targets_inside_a_folder_are_not_its_inputs() {
    let ws = Fixture::new(
        r#"
[targets.report]
kind = "command"
deps = ["zz"]
[targets.report.capabilities.build]
command = "cat zz/out/x > report.txt"
deps = ["zz:build", ":check"]
outputs = ["report.txt"]
[targets.report.capabilities.check]
command = "true"

[targets.zz]
kind = "command"
path = "zz"
[targets.zz.capabilities.build]
command = "mkdir -p out && cat src.txt > out/x"
inputs = ["src.txt"]
outputs = ["out/x"]
"#,
    );
    ws.file("zz/src.txt", "z\n");
    // Serially, in graph order, `report:check` is keyed before `zz:build` writes `zz/out/x`.
    let first = ws.run(&["report:build"], &serial());
    assert_eq!(first.counts.ran, 3, "{first:?}");
    let second = ws.run(&["report:build"], &serial());
    assert_eq!(second.counts.cached, 3, "{second:?}");
    ws.file("zz/src.txt", "changed\n");
    let third = ws.run(&["report:build"], &serial());
    assert_eq!(third.counts.ran, 3, "{third:?}");
}
