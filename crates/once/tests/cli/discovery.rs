//! A workspace without `once.toml`: `once init`, and `once mcp` serving any folder it is started
//! in, with the graph following manifests as they appear.

use std::process::Command;

use serde_json::json;

use crate::support::{Mcp, TempDir, Test, once_binary};

#[test]
fn init_writes_a_short_overlay_once_and_never_over_one() {
    let test = Test::new().file("src/main.txt", "");
    let root = test.root().to_path_buf();
    let run = test.args(["init"]).run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    assert!(run.stdout().contains("wrote"), "{}", run.transcript());
    let text = std::fs::read_to_string(root.join("once.toml")).expect("once.toml written");
    for teaches in ["[discover]", "exclude", "enabled = false", "[targets."] {
        assert!(text.contains(teaches), "{text}");
    }
    // What it wrote is a valid manifest.
    let check = Command::new(once_binary())
        .args(["check", "--json"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&check.stdout).trim(), "[]");
    // A second init leaves the file as it is.
    std::fs::write(root.join("once.toml"), "# mine\n").unwrap();
    let again = Command::new(once_binary())
        .arg("init")
        .current_dir(&root)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
    assert_eq!(
        std::fs::read_to_string(root.join("once.toml")).unwrap(),
        "# mine\n"
    );
}

#[test]
fn mcp_serves_a_folder_with_no_manifest_at_all_and_follows_one_appearing() {
    let dir = TempDir::new();
    let mut command = Command::new(once_binary());
    command.arg("mcp").current_dir(dir.path());
    let mut server = Mcp::from_command(command);
    let reply = server.initialize();
    assert_eq!(reply["result"]["serverInfo"]["name"], "once-mcp", "{reply}");
    let workspace = server.call(1, "once_query_workspace", json!({}));
    let result = &workspace["result"]["structuredContent"]["result"];
    assert_eq!(result["counts"]["targets"], 0, "{workspace}");
    std::fs::write(
        dir.path().join("once.toml"),
        "[targets.docs]\nkind = \"command\"\n",
    )
    .unwrap();
    let target = server.call(2, "once_query_target", json!({"name": "docs"}));
    assert_eq!(
        target["result"]["structuredContent"]["result"]["name"], "docs",
        "{target}"
    );
}

#[test]
fn workspace_flag_takes_a_folder_without_once_toml() {
    let test = Test::new().file("README.md", "hello\n");
    let root = test.root().display().to_string();
    let run = test
        .args(["--workspace", root.as_str(), "query", "workspace"])
        .run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    assert_eq!(run.json()["counts"]["targets"], 0);
}
