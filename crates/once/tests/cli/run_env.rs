//! What a command of `once run` sees of the caller's environment, what its cache key covers, and
//! the actions that are never cached: each test runs the real binary.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use crate::run::{count_marked, once, report, unique_mark, wait_until, workspace};

/// `once run ARGS --json` with `vars` set in its environment.
fn run_with(root: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut command = once(root, args);
    command.arg("--json");
    for (name, value) in vars {
        command.env(name, value);
    }
    command.output().expect("runs once")
}

/// The `ran` and `cached` counts of a successful run.
fn counts(output: &Output) -> (u64, u64) {
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = report(output);
    (
        report["counts"]["ran"].as_u64().unwrap(),
        report["counts"]["cached"].as_u64().unwrap(),
    )
}

fn read(root: &Path, file: &str) -> String {
    std::fs::read_to_string(root.join(file)).unwrap_or_default()
}

/// Prints three variables (`unset` when absent); `{{` is a literal brace in a command.
const SHOW: &str = r#"echo "${{RUSTUP_AUTO_INSTALL-unset}} ${{ONCE_TEST_XYZ-unset}} ${{ONCE_WS_ONE-unset}}" > {target}.txt"#;

#[test]
fn loose_mode_passes_the_whole_environment_through() {
    let ws = workspace(&format!(
        "[targets.show]\nkind = \"command\"\n[targets.show.capabilities.build]\ncommand = '{SHOW}'\n"
    ));
    let vars = [
        ("RUSTUP_AUTO_INSTALL", "0"),
        ("ONCE_TEST_XYZ", "xyz"),
        ("ONCE_WS_ONE", "one"),
    ];
    assert_eq!(counts(&run_with(ws.path(), &["show"], &vars)), (1, 0));
    assert_eq!(read(ws.path(), "show.txt"), "0 xyz one\n");
}

#[test]
fn strict_mode_passes_the_base_the_declared_and_what_pass_env_names() {
    let ws = workspace(&format!(
        r#"
[workspace]
env-mode = "strict"
pass-env = ["ONCE_WS_*"]

[targets.plain]
kind = "command"
[targets.plain.capabilities.build]
command = '{SHOW}'

[targets.named]
kind = "command"
[targets.named.capabilities.build]
command = '{SHOW}'
pass-env = ["ONCE_TEST_X?Z"]
"#
    ));
    let vars = [
        ("RUSTUP_AUTO_INSTALL", "0"),
        ("ONCE_TEST_XYZ", "xyz"),
        ("ONCE_WS_ONE", "one"),
    ];
    let output = run_with(ws.path(), &["plain", "named"], &vars);
    assert_eq!(counts(&output), (2, 0));
    // `RUSTUP_AUTO_INSTALL=0` keeps rustup from installing toolchains: strict mode keeps it too.
    assert_eq!(read(ws.path(), "plain.txt"), "0 unset one\n");
    assert_eq!(read(ws.path(), "named.txt"), "0 xyz one\n");
}

#[test]
fn four_targets_with_one_command_in_one_folder_each_run() {
    let mut manifest = String::new();
    for name in ["a", "b", "c", "d"] {
        manifest.push_str(&format!(
            "[targets.{name}]\nkind = \"command\"\n[targets.{name}.capabilities.build]\n\
             command = \"true\"\ninputs = [\"none\"]\n\n"
        ));
    }
    let ws = workspace(&manifest);
    let output = run_with(ws.path(), &["--all", "build"], &[]);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(counts(&output), (4, 0), "{stderr}");
    assert!(stderr.contains("4 ran, 0 cached"), "{stderr}");
    assert_eq!(
        counts(&run_with(ws.path(), &["--all", "build"], &[])),
        (0, 4)
    );
}

fn script(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\n{text}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn the_program_a_command_starts_is_keyed_by_where_path_finds_it_and_its_content() {
    let ws = workspace(
        "[targets.t]\nkind = \"command\"\npath = \"t\"\n[targets.t.capabilities.build]\n\
         command = \"LANG=C once-test-tool > out.txt\"\ninputs = [\"in.txt\"]\n",
    );
    std::fs::create_dir_all(ws.path().join("t")).unwrap();
    std::fs::write(ws.path().join("t/in.txt"), "in").unwrap();
    let (v1, v2) = (ws.path().join("v1"), ws.path().join("v2"));
    script(&v1.join("once-test-tool"), "echo v1");
    script(&v2.join("once-test-tool"), "echo v2");
    let system = std::env::var("PATH").unwrap_or_default();
    let path = |first: &Path| format!("{}:{system}", first.display());
    let run = |first: &Path| run_with(ws.path(), &["t"], &[("PATH", &path(first))]);

    assert_eq!(counts(&run(&v1)), (1, 0));
    assert_eq!(read(ws.path(), "t/out.txt"), "v1\n");
    assert_eq!(counts(&run(&v1)), (0, 1));
    // The same name, another folder first on `PATH`: another program, so it runs again.
    assert_eq!(counts(&run(&v2)), (1, 0));
    assert_eq!(read(ws.path(), "t/out.txt"), "v2\n");
    assert_eq!(counts(&run(&v2)), (0, 1));
    // The same path with new content (an upgrade in place) runs again too.
    script(&v2.join("once-test-tool"), "echo v2.1");
    assert_eq!(counts(&run(&v2)), (1, 0));
    assert_eq!(read(ws.path(), "t/out.txt"), "v2.1\n");
}

#[test]
fn build_tool_variables_are_keyed_and_other_variables_are_not() {
    let ws = workspace(
        "[targets.t]\nkind = \"command\"\n[targets.t.capabilities.build]\n\
         command = \"echo ran >> runs.txt\"\ninputs = [\"in.txt\"]\n",
    );
    std::fs::write(ws.path().join("in.txt"), "in").unwrap();
    let run = |vars: &[(&str, &str)]| counts(&run_with(ws.path(), &["t"], vars));
    assert_eq!(run(&[("RUSTFLAGS", "-Copt-level=1")]), (1, 0));
    assert_eq!(run(&[("RUSTFLAGS", "-Copt-level=1")]), (0, 1));
    assert_eq!(run(&[("RUSTFLAGS", "-Copt-level=2")]), (1, 0));
    // A variable no tool reads for its results changes nothing.
    assert_eq!(
        run(&[("RUSTFLAGS", "-Copt-level=2"), ("ONCE_TEST_XYZ", "other")]),
        (0, 1)
    );
}

#[test]
fn a_secret_named_by_pass_env_is_keyed_but_never_stored_in_plain_text() {
    let ws = workspace(
        "[targets.t]\nkind = \"command\"\n[targets.t.capabilities.build]\n\
         command = \"test -n \\\"$ONCE_TEST_API_TOKEN\\\" && echo ok > out.txt\"\n\
         inputs = [\"in.txt\"]\noutputs = [\"out.txt\"]\npass-env = [\"ONCE_TEST_API_*\"]\n",
    );
    std::fs::write(ws.path().join("in.txt"), "in").unwrap();
    let secret = "s3cr3t-value-that-must-not-leak";
    let run = |value: &str| {
        counts(&run_with(
            ws.path(),
            &["t"],
            &[("ONCE_TEST_API_TOKEN", value), ("ONCE_LOG", "trace")],
        ))
    };
    assert_eq!(run(secret), (1, 0));
    assert_eq!(run(secret), (0, 1));
    assert_eq!(run("another-secret-value"), (1, 0));
    let mut stack = vec![ws.path().join(".once")];
    let mut files = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files += 1;
                let bytes = std::fs::read(&path).unwrap();
                assert!(
                    !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                    "{} holds the secret",
                    path.display()
                );
            }
        }
    }
    assert!(files > 0);
}

#[test]
fn an_uncached_action_always_runs_and_is_never_recorded() {
    let ws = workspace(
        "[targets.deploy]\nkind = \"command\"\n[targets.deploy.capabilities.build]\n\
         command = \"echo deployed >> deploys.txt\"\ninputs = [\"in.txt\"]\ncache = false\n\n\
         [targets.smoke]\nkind = \"command\"\npath = \"smoke\"\ndeps = [\"deploy\"]\n\
         [targets.smoke.capabilities.build]\ncommand = \"echo smoke >> ../smokes.txt\"\n",
    );
    std::fs::write(ws.path().join("in.txt"), "in").unwrap();
    std::fs::create_dir_all(ws.path().join("smoke")).unwrap();
    assert_eq!(counts(&run_with(ws.path(), &["smoke"], &[])), (2, 0));
    // What follows an action whose results are not reproducible is not replayed either.
    assert_eq!(counts(&run_with(ws.path(), &["smoke"], &[])), (2, 0));
    assert_eq!(read(ws.path(), "deploys.txt"), "deployed\ndeployed\n");
    assert_eq!(read(ws.path(), "smokes.txt"), "smoke\nsmoke\n");
    let recorded = std::fs::read_dir(ws.path().join(".once/cache/packs"))
        .map(|entries| entries.count())
        .unwrap_or(0);
    assert_eq!(
        recorded, 0,
        "an uncached action or its dependent was recorded"
    );
}

#[test]
fn a_persistent_server_outlives_any_deadline_and_stops_on_sigint() {
    let mark = unique_mark();
    let ws = workspace(&format!(
        r#"
[workspace]
default-deadline = "200ms"

[targets.dev]
kind = "command"
[targets.dev.capabilities.serve]
command = "echo listening > up.txt; (sleep 60) & sleep 60"
env = {{ ONCE_TEST_MARK = "{mark}" }}
persistent = true
"#
    ));
    let child = once(ws.path(), &["dev:serve", "--json"]).spawn().unwrap();
    wait_until("the server's processes", || count_marked(&mark) >= 2);
    let up = std::fs::metadata(ws.path().join("up.txt"))
        .unwrap()
        .modified()
        .unwrap();
    // Still there well past the workspace's deadline: a bounded poll that it is never killed
    // while younger than a second.
    wait_until("a second past the start", || {
        up.elapsed().is_ok_and(|age| age.as_millis() > 1000)
    });
    assert!(
        count_marked(&mark) >= 2,
        "the server was stopped at a deadline"
    );
    // SAFETY: kill(2) on the pid of a child we own and have not reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130));
    assert_eq!(report(&output)["status"], "interrupted");
    assert_eq!(count_marked(&mark), 0, "a process outlived `once run`");
    let recorded = std::fs::read_dir(ws.path().join(".once/cache/packs"))
        .map(|entries| entries.count())
        .unwrap_or(0);
    assert_eq!(recorded, 0, "a persistent action was recorded");
}

#[test]
fn no_code_of_ours_changes_the_environment_it_was_given() {
    // A variable set or removed in our own process (or dropped for a child) is a switch the user
    // set that a tool no longer sees: `RUSTUP_AUTO_INSTALL=0` dropped once let rustup replace a
    // toolchain. Only the places that build a child's environment from a mode may clear it.
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let may_clear = [
        "once-exec/src/spawn/unix.rs",
        "once-exec/src/spawn/windows.rs",
        "once-eval/src/process.rs",
    ];
    let mut stack = vec![crates.to_path_buf()];
    let mut files = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let relative = path
                .strip_prefix(crates)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                // Sources only: tests set variables for the processes they start.
                if !relative.ends_with("/tests") && !relative.ends_with("/benches") {
                    stack.push(path);
                }
                continue;
            }
            if !relative.contains("/src/") || !relative.ends_with(".rs") {
                continue;
            }
            files += 1;
            let text = std::fs::read_to_string(&path).unwrap();
            for call in ["set_var(", "remove_var(", ".env_remove("] {
                assert!(!text.contains(call), "{relative} calls `{call}`");
            }
            assert!(
                !text.contains(".env_clear()") || may_clear.contains(&relative.as_str()),
                "{relative} clears a child's environment"
            );
        }
    }
    assert!(files > 50, "only {files} source files found");
}

/// Every file under `dir` that holds `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if std::fs::read(&path)
                .unwrap()
                .windows(needle.len())
                .any(|w| w == needle.as_bytes())
            {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn an_env_file_reaches_the_command_under_env_is_keyed_and_never_stored() {
    let ws = workspace(
        "[targets.t]\nkind = \"command\"\n[targets.t.capabilities.build]\n\
         command = 'echo \"${{#ONCE_TEST_DB_URL}} $ONCE_TEST_MODE\" > out.txt'\n\
         inputs = [\"in.txt\"]\noutputs = [\"out.txt\"]\nenv-file = \"conf/dev.env\"\n\
         env = { ONCE_TEST_MODE = \"declared\" }\n",
    );
    std::fs::write(ws.path().join("in.txt"), "in").unwrap();
    std::fs::create_dir_all(ws.path().join("conf")).unwrap();
    let value = "postgres://user:pw-that-must-not-leak@db/x";
    let env = |url: &str| {
        std::fs::write(
            ws.path().join("conf/dev.env"),
            format!(
                "# dev settings\nexport ONCE_TEST_DB_URL=\"{url}\"\nONCE_TEST_MODE=from-file\n"
            ),
        )
        .unwrap()
    };
    env(value);
    assert_eq!(counts(&run_with(ws.path(), &["t"], &[])), (1, 0));
    // The command writes the value's length, so that no output holds the value itself.
    assert_eq!(
        read(ws.path(), "out.txt"),
        format!("{} declared\n", value.len())
    );
    assert_eq!(counts(&run_with(ws.path(), &["t"], &[])), (0, 1));
    // The file is not an input here: its values are in the key all the same.
    env("postgres://other");
    assert_eq!(counts(&run_with(ws.path(), &["t"], &[])), (1, 0));
    assert_eq!(read(ws.path(), "out.txt"), "16 declared\n");
    assert!(files_holding(&ws.path().join(".once"), "pw-that-must-not-leak").is_empty());
}

#[test]
fn an_env_file_that_is_missing_broken_or_outside_the_workspace_is_refused_by_line() {
    let ws = workspace(
        "[targets.t]\nkind = \"command\"\n[targets.t.capabilities.build]\n\
         command = \"true\"\nenv-file = \".env\"\n",
    );
    let refused = |needle: &str| {
        let run = once(ws.path(), &["t"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
        assert_ne!(run.status.code(), Some(0), "{stderr}");
        assert!(stderr.contains("env-file `.env` of `t:build`"), "{stderr}");
        assert!(stderr.contains(needle), "{stderr}");
        stderr
    };
    refused("");
    std::fs::write(
        ws.path().join(".env"),
        "OK=1\nSECRET_PART=\"hunter2-unclosed\n",
    )
    .unwrap();
    let stderr = refused("line 2");
    assert!(!stderr.contains("hunter2"), "{stderr}");
    // A link to a file outside the workspace: the workspace's parent holds it.
    let outside = ws
        .path()
        .parent()
        .unwrap()
        .join(format!("{}.env", unique_mark()));
    std::fs::write(&outside, "A=1\n").unwrap();
    std::fs::remove_file(ws.path().join(".env")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.path().join(".env")).unwrap();
    refused("outside");
    std::fs::remove_file(&outside).unwrap();
    // A huge file is refused before it is parsed.
    std::fs::remove_file(ws.path().join(".env")).unwrap();
    let huge = format!("A={}\n", "x".repeat(1024 * 1024 + 1));
    std::fs::write(ws.path().join(".env"), huge).unwrap();
    refused("larger than 1 MiB");
}
