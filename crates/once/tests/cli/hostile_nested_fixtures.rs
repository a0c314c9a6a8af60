//! `tests/hostile/nested-fixtures`: a workspace found in a subfolder joins the graph, and the
//! test data, examples, vendored code and deep folders around it never do, so `once run --all
//! test` never runs a script a fixture carries.

use std::process::Command;

use crate::support::{TempDir, copy_hostile, once_binary, output_within};

fn once_json(root: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let mut command = Command::new(once_binary());
    command.args(args).current_dir(root).env_remove("ONCE_LOG");
    let output = output_within(command);
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON")
}

#[test]
fn only_the_nested_workspace_joins_and_no_fixture_script_is_planned() {
    let dir = TempDir::new();
    copy_hostile("nested-fixtures", dir.path());

    let targets = once_json(dir.path(), &["query", "targets", "--json"]);
    let mut found: Vec<(String, String)> = targets["targets"]
        .as_array()
        .expect("targets")
        .iter()
        .map(|t| {
            (
                t["path"].as_str().expect("path").to_owned(),
                t["kind"].as_str().expect("kind").to_owned(),
            )
        })
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            (".".to_owned(), "go-module".to_owned()),
            ("sdk/web".to_owned(), "npm-package".to_owned()),
        ],
        "{targets}"
    );

    let plan = once_json(dir.path(), &["run", "--all", "test", "--dry-run", "--json"]);
    let commands: Vec<&str> = plan["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .map(|a| a["command"].as_str().expect("command"))
        .collect();
    assert_eq!(
        commands,
        ["GOTOOLCHAIN=local go test ./...", "npm run test"],
        "{plan}"
    );
}
