//! `once run --dry-run`: the plan with each action's verdict, computed without running or
//! writing anything (the whole tree, `.once` included, is compared before and after).

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::Path;
use std::time::SystemTime;

use serde_json::Value;

use crate::run::{report, run, workspace};

const MANIFEST: &str = r#"
[targets.lib]
kind = "command"
path = "lib"
[targets.lib.capabilities.build]
command = "echo lib >> ../runs"
inputs = ["src.txt"]

[targets.app]
kind = "command"
path = "app"
deps = ["lib"]
[targets.app.capabilities.build]
command = "echo app >> ../runs"
inputs = ["main.txt"]

[targets.solo]
kind = "command"
path = "solo"
[targets.solo.capabilities.build]
command = "echo solo >> ../runs"
inputs = ["solo.txt"]

[targets.live]
kind = "command"
path = "live"
[targets.live.capabilities.build]
command = "echo live >> ../runs"
cache = false
"#;

/// Every file and folder under `root`: its kind, size, modification time and bytes.
pub(crate) fn tree(root: &Path) -> BTreeMap<String, (bool, u64, Option<SystemTime>, Vec<u8>)> {
    let mut found = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let metadata = std::fs::symlink_metadata(&path).unwrap();
            let relative = path.strip_prefix(root).unwrap().display().to_string();
            let bytes = if metadata.is_file() {
                std::fs::read(&path).unwrap()
            } else {
                Vec::new()
            };
            found.insert(
                relative,
                (
                    metadata.is_dir(),
                    metadata.len(),
                    metadata.modified().ok(),
                    bytes,
                ),
            );
            if metadata.is_dir() {
                stack.push(path);
            }
        }
    }
    found
}

fn set_up() -> crate::support::TempDir {
    let dir = workspace(MANIFEST);
    for (path, text) in [
        ("lib/src.txt", "1"),
        ("app/main.txt", "1"),
        ("solo/solo.txt", "1"),
        ("live/x.txt", "1"),
    ] {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let first = run(dir.path(), &["--all", "build"]);
    assert!(first.status.success(), "{first:?}");
    dir
}

fn verdicts(preview: &Value) -> BTreeMap<String, (String, String, String)> {
    preview["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["action"].as_str().unwrap().to_owned(),
                (
                    a["verdict"].as_str().unwrap().to_owned(),
                    a["reason"].as_str().unwrap_or("").to_owned(),
                    a["because"]
                        .as_array()
                        .map(|b| {
                            b.iter()
                                .map(|n| n.as_str().unwrap())
                                .collect::<Vec<_>>()
                                .join(",")
                        })
                        .unwrap_or_default(),
                ),
            )
        })
        .collect()
}

fn verdict(v: &str, reason: &str, because: &str) -> (String, String, String) {
    (v.to_owned(), reason.to_owned(), because.to_owned())
}

#[test]
fn a_dry_run_says_what_is_cached_and_why_the_rest_runs_and_changes_nothing() {
    let dir = set_up();
    // `lib` changes: it runs, and `app` after it; `solo` is untouched and replayed.
    std::fs::write(dir.path().join("lib/src.txt"), "2").unwrap();
    let before = tree(dir.path());

    let output = run(dir.path(), &["--all", "build", "--dry-run", "--json"]);
    assert!(output.status.success(), "{output:?}");
    let preview = report(&output);
    let found = verdicts(&preview);
    assert_eq!(found["solo:build"], verdict("cached", "", ""));
    assert_eq!(found["lib:build"], verdict("run", "no_entry", ""));
    assert_eq!(
        found["app:build"],
        verdict("run", "depends_on_run", "lib:build")
    );
    assert_eq!(found["live:build"], verdict("run", "cache_false", ""));
    assert_eq!(preview["cached"], 1);
    assert_eq!(preview["run"], 3);
    // In plan order: `lib` before `app`.
    let order: Vec<&str> = preview["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["action"].as_str().unwrap())
        .collect();
    let position = |name: &str| order.iter().position(|a| *a == name).unwrap();
    assert!(position("lib:build") < position("app:build"), "{order:?}");

    let text = run(dir.path(), &["--all", "build", "--dry-run"]);
    assert!(text.status.success(), "{text:?}");
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(
        stdout.starts_with("dry run: 4 actions, 1 cached, 3 would run\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("depends on `lib:build`, which would run"),
        "{stdout}"
    );

    // Nothing ran, no run folder, no cache entry, no saved file hash: the tree is as it was.
    assert_eq!(tree(dir.path()), before);

    // The run that follows does what the preview said.
    let real = run(dir.path(), &["--all", "build", "--json"]);
    let summary = report(&real);
    assert_eq!(summary["counts"]["cached"], 1, "{summary}");
}

#[test]
fn forced_and_remote_previews_call_no_server() {
    let dir = set_up();
    let forced = report(&run(
        dir.path(),
        &["solo:build", "--dry-run", "--json", "--force"],
    ));
    assert_eq!(
        verdicts(&forced)["solo:build"],
        verdict("run", "forced", "")
    );

    std::fs::write(dir.path().join("solo/solo.txt"), "2").unwrap();
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    server.set_nonblocking(true).unwrap();
    let url = format!("grpc://{}", server.local_addr().unwrap());
    let before = tree(dir.path());
    let remote = report(&run(
        dir.path(),
        &["solo:build", "--dry-run", "--json", "--remote-cache", &url],
    ));
    assert_eq!(
        verdicts(&remote)["solo:build"],
        verdict("run", "ask_remote", "")
    );
    // The process has ended; a connection it made would be waiting in the backlog.
    assert!(
        server.accept().is_err(),
        "a dry run connected to the remote cache"
    );
    assert_eq!(tree(dir.path()), before);
}
