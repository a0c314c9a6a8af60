//! `tests/hostile/deep-pnpm`: a pnpm member 40 folders below `vendor/**` is past the walk's
//! depth bound; the person is told where the walk stopped and what to add, never left with a
//! silently smaller workspace.

use std::process::Command;

use crate::support::{TempDir, copy_hostile, once_binary, output_within};

fn cut() -> String {
    format!("vendor{}", "/n".repeat(32))
}

#[test]
fn a_package_below_the_depth_bound_is_a_warning_with_its_fix() {
    let dir = TempDir::new();
    copy_hostile("deep-pnpm", dir.path());

    let mut check = Command::new(once_binary());
    check
        .arg("check")
        .current_dir(dir.path())
        .env_remove("ONCE_LOG");
    let check = output_within(check);
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert_eq!(check.status.code(), Some(0), "{stderr}");
    let cut = cut();
    let expected = format!(
        "pnpm-workspace.yaml:3:6: warning[glob-too-deep]: folder glob `vendor/**` is searched \
         only 32 folders deep and stopped at `{cut}`: nothing below it was found\n  help: name \
         the deeper folder in a glob of its own, like `{cut}/**`\n"
    );
    assert!(stderr.contains(&expected), "{stderr}");

    // The same warning reaches an agent through the workspace's diagnostics.
    let mut query = Command::new(once_binary());
    query
        .args(["query", "workspace"])
        .current_dir(dir.path())
        .env_remove("ONCE_LOG");
    let query = output_within(query);
    let workspace: serde_json::Value = serde_json::from_slice(&query.stdout).expect("JSON");
    let codes: Vec<&str> = workspace["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter_map(|d| d["code"].as_str())
        .collect();
    assert_eq!(codes, ["glob-too-deep"], "{workspace}");
    assert_eq!(workspace["counts"]["targets"], 1, "{workspace}");
}
