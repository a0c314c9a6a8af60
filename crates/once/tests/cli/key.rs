//! `once query key`: the parts of an action's key, and exactly which of them changed since the
//! run that recorded it; computed without writing anything.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::dry_run::tree;
use crate::run::{run, workspace};
use crate::support::once_binary;

fn manifest(mode: &str) -> String {
    format!(
        r#"
[targets.lib]
kind = "command"
path = "lib"
[targets.lib.capabilities.build]
command = "echo lib >> ../runs"
inputs = ["src.txt", "more.txt"]
env = {{ MODE = "{mode}", API_TOKEN = "hunter2" }}
"#
    )
}

fn key(root: &Path) -> Value {
    let output = Command::new(once_binary())
        .arg("--workspace")
        .arg(root)
        .args(["query", "key", "lib:build", "--json"])
        .env_remove("ONCE_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn the_explanation_names_exactly_what_changed() {
    let dir = workspace(&manifest("x"));
    let root = dir.path();
    std::fs::create_dir_all(root.join("lib")).unwrap();
    std::fs::write(root.join("lib/src.txt"), "1").unwrap();
    std::fs::write(root.join("lib/more.txt"), "1").unwrap();
    let first = run(root, &["lib:build"]);
    assert!(first.status.success(), "{first:?}");

    // Nothing changed: the entry is there, and the recorded key is the key.
    let same = key(root);
    assert_eq!(same["entry"], true);
    assert_eq!(same["last_key"], same["key"]);
    assert_eq!(same["changes"], json!([]));
    assert!(
        same["verdict"]
            .as_str()
            .unwrap()
            .starts_with("nothing changed: the entry is there"),
        "{same}"
    );
    let names: Vec<&str> = same["parts"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["more.txt", "src.txt"]);
    let token = &same["parts"]["env"].as_array().unwrap()[0];
    assert_eq!(
        (token["name"].as_str(), token["secret"].as_bool()),
        (Some("API_TOKEN"), Some(true))
    );

    // One input file changes: the explanation names that file and nothing else.
    std::fs::write(root.join("lib/src.txt"), "2").unwrap();
    let before = tree(root);
    let changed = key(root);
    assert_eq!(changed["entry"], false);
    assert_eq!(changed["last_key"], same["key"]);
    assert_eq!(
        changed["changes"],
        json!([{"part": "file", "name": "src.txt", "how": "changed"}])
    );
    // Explaining wrote nothing.
    assert_eq!(tree(root), before);

    // Back as it was, then one variable's value changes in the manifest: it names that variable.
    std::fs::write(root.join("lib/src.txt"), "1").unwrap();
    std::fs::write(root.join("once.toml"), manifest("y")).unwrap();
    let env = key(root);
    assert_eq!(
        env["changes"],
        json!([{"part": "env", "name": "MODE", "how": "changed"}])
    );

    // A run appends the new key's parts, which replace the old ones as the action's manifest;
    // no value is ever written.
    let second = run(root, &["lib:build"]);
    assert!(second.status.success(), "{second:?}");
    let after = key(root);
    assert_eq!(after["last_key"], env["key"]);
    assert_eq!(after["changes"], json!([]));
    let journal = std::fs::read_to_string(root.join(".once/cache/key-parts")).unwrap();
    assert_eq!(journal.lines().count(), 2, "{journal}");
    assert!(
        !journal.contains("hunter2") && journal.contains("API_TOKEN"),
        "{journal}"
    );
}

#[test]
fn a_dry_run_with_explain_and_json_carries_the_explanations_in_its_one_document() {
    let dir = workspace(&manifest("x"));
    let root = dir.path();
    std::fs::create_dir_all(root.join("lib")).unwrap();
    std::fs::write(root.join("lib/src.txt"), "1").unwrap();
    std::fs::write(root.join("lib/more.txt"), "1").unwrap();
    let first = run(root, &["lib:build"]);
    assert!(first.status.success(), "{first:?}");
    std::fs::write(root.join("lib/src.txt"), "2").unwrap();

    let output = Command::new(once_binary())
        .arg("--workspace")
        .arg(root)
        .args(["run", "lib:build", "--dry-run", "--explain", "--json"])
        .env_remove("ONCE_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    // The explanation is in the JSON, not printed beside it.
    assert!(
        !String::from_utf8_lossy(&output.stderr).contains("changed since"),
        "{output:?}"
    );
    let preview: Value = serde_json::from_slice(&output.stdout).unwrap();
    let explanation = &preview["actions"][0]["explanation"];
    assert_eq!(preview["actions"][0]["verdict"], json!("run"), "{preview}");
    assert_eq!(explanation["entry"], json!(false), "{preview}");
    assert_eq!(
        explanation["changes"],
        json!([{"part": "file", "name": "src.txt", "how": "changed"}]),
        "{preview}"
    );
    assert_eq!(
        explanation["key"], preview["actions"][0]["key"],
        "{preview}"
    );
    assert!(explanation["last_key"].is_string(), "{preview}");
}
