//! `tests/hostile/lying-uv-lock`: a stale `uv.lock` that drops a member's edge and names a
//! "member" outside the repository; the manifest's edge stays, nothing outside joins, and the
//! person is told to run `uv lock`.

use std::process::Command;

use serde_json::Value;

use crate::support::{TempDir, copy_hostile, once_binary, output_within};

#[test]
fn a_lying_lock_drops_no_edge_and_adds_nothing_outside() {
    let dir = TempDir::new();
    let repo = dir.path().join("repo");
    copy_hostile("lying-uv-lock", &repo);
    // The folder the lock points at, beside the repository: a project that must not join.
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(
        outside.join("pyproject.toml"),
        "[project]\nname = \"evil\"\n",
    )
    .expect("writes");

    let once = |args: &[&str]| {
        let mut command = Command::new(once_binary());
        command.args(args).current_dir(&repo).env_remove("ONCE_LOG");
        output_within(command)
    };
    let check = once(&["check"]);
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert_eq!(check.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "uv.lock:1:1: warning[stale-uv-lock]: `uv.lock` does not match the `pyproject.toml` \
             of `app`; their edges come from both; run `uv lock` to update it"
        ),
        "{stderr}"
    );

    let targets = once(&["query", "targets"]);
    let targets: Value = serde_json::from_slice(&targets.stdout).expect("JSON");
    let mut paths: Vec<&str> = targets["targets"]
        .as_array()
        .expect("targets")
        .iter()
        .filter_map(|t| t["path"].as_str())
        .collect();
    paths.sort_unstable();
    assert_eq!(paths, ["app", "lib"], "{targets}");

    let app = once(&["query", "target", "app"]);
    let app: Value = serde_json::from_slice(&app.stdout).expect("JSON");
    assert_eq!(app["deps"], serde_json::json!(["lib"]), "{app}");
}
