//! `once examples`, `once materialize` and `once_materialize_example` end to end: idempotency, a
//! conflict that leaves the tree byte-identical, path escapes, and each example's own tests
//! passing with `once run --all test` in a freshly materialized copy.

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::support::{Mcp, TempDir, Test, once_binary};

pub fn once(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(once_binary())
        .args(args)
        .current_dir(cwd)
        .env_remove("ONCE_LOG")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("runs once")
}

pub fn ok(output: &Output) -> String {
    assert!(
        output.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Every file, folder and link under `dir` with its bytes (folders `None`, links their target):
/// compared before and after, it shows that not one byte changed.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).expect("reads a folder") {
            let path = entry.expect("an entry").path();
            let meta = std::fs::symlink_metadata(&path).expect("stats");
            let key = path.strip_prefix(dir).expect("inside").to_path_buf();
            if meta.is_symlink() {
                let target = std::fs::read_link(&path).expect("reads a link");
                out.insert(key, Some(target.into_os_string().into_encoded_bytes()));
            } else if meta.is_dir() {
                out.insert(key, None);
                stack.push(path);
            } else {
                out.insert(key, Some(std::fs::read(&path).expect("reads a file")));
            }
        }
    }
    out
}

#[test]
fn list_and_show_describe_every_example() {
    let dir = TempDir::new();
    let list: Value =
        serde_json::from_str(&ok(&once(dir.path(), &["examples", "list", "--json"], &[])))
            .expect("JSON");
    let names: Vec<&str> = list["examples"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|e| e["name"].as_str().expect("a name"))
        .collect();
    assert_eq!(
        names,
        [
            "rust-workspace",
            "node-package",
            "python-project",
            "polyglot"
        ]
    );
    let shown = ok(&once(dir.path(), &["examples", "show", "polyglot"], &[]));
    assert!(shown.contains("web/test/price.test.js"), "{shown}");
    let manifest = ok(&once(
        dir.path(),
        &["examples", "show", "rust-workspace", "--file", "once.toml"],
        &[],
    ));
    assert!(manifest.contains("kind = \"cargo-package\""), "{manifest}");
    let unknown = once(dir.path(), &["materialize", "rust"], &[]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("rust-workspace"));
}

#[test]
fn materializing_twice_changes_nothing_and_a_conflict_changes_not_one_byte() {
    let dir = TempDir::new();
    let root = dir.path();
    let first = ok(&once(
        root,
        &["materialize", "rust-workspace", "--json"],
        &[],
    ));
    let first: Value = serde_json::from_str(&first).expect("JSON");
    assert_eq!(first["created"].as_array().expect("a list").len(), 9);
    assert!(first.to_string().len() < 2000, "contents leaked: {first}");
    let after_first = snapshot(root);

    let second: Value = serde_json::from_str(&ok(&once(
        root,
        &["materialize", "rust-workspace", "--json"],
        &[],
    )))
    .expect("JSON");
    assert_eq!(second["created"], json!([]));
    assert_eq!(second["unchanged"], first["created"]);
    assert_eq!(snapshot(root), after_first);

    // Two conflicts, among files that are missing and would otherwise be created.
    std::fs::write(root.join("crates/core/src/lib.rs"), "// mine\n").expect("writes");
    std::fs::remove_file(root.join("README.md")).expect("removes");
    std::fs::remove_dir_all(root.join("crates/cli")).expect("removes");
    std::fs::remove_file(root.join("Cargo.lock")).expect("removes");
    std::fs::create_dir(root.join("Cargo.lock")).expect("mkdir");
    let before = snapshot(root);
    let refused = once(root, &["materialize", "rust-workspace"], &[]);
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("nothing was written"), "{stderr}");
    assert!(
        stderr.contains("  Cargo.lock (not a regular file)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("  crates/core/src/lib.rs (different content)"),
        "{stderr}"
    );
    assert_eq!(
        snapshot(root),
        before,
        "a refused materialize changed the tree"
    );
}

#[test]
fn paths_that_leave_the_workspace_are_refused() {
    let outside = TempDir::new();
    let test = Test::new().manifest("");
    let root = test.root().to_path_buf();
    symlink(outside.path(), root.join("escape")).expect("links");
    std::fs::create_dir_all(root.join(".git")).expect("a git folder");
    std::fs::create_dir_all(root.join(".once")).expect("a state folder");
    symlink(".git", root.join("gitdir")).expect("links");
    symlink(".once", root.join("oncedir")).expect("links");
    let before = snapshot(&root);
    let absolute = outside.path().display().to_string();
    for (into, expected) in [
        (absolute.as_str(), "absolute"),
        ("../sibling", "`..`"),
        ("web/../../sibling", "`..`"),
        ("escape", "symbolic link"),
        ("escape/deeper", "symbolic link"),
        (".git", "`.git/`"),
        (".once", "`.once/`"),
        ("vendor/lib/.git", "`.git/`"),
        ("gitdir", "symbolic link"),
        ("oncedir/sub", "symbolic link"),
    ] {
        let output = once(&root, &["materialize", "node-package", "--into", into], &[]);
        assert_eq!(output.status.code(), Some(1), "--into {into}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "--into {into}: {stderr}");
    }
    assert_eq!(snapshot(&root), before);
    assert!(snapshot(outside.path()).is_empty(), "wrote outside");
}

#[test]
fn the_mcp_tool_is_behind_allow_edit_and_returns_paths_not_contents() {
    let test = Test::new().manifest("");
    let root = test.root().to_path_buf();
    let tool_names = |mcp: &mut Mcp| -> Vec<String> {
        mcp.tools(1)
            .iter()
            .map(|t| t["name"].as_str().expect("a name").to_string())
            .collect()
    };

    let mut closed = Mcp::spawn(&root, &[]);
    closed.initialize();
    assert!(!tool_names(&mut closed).contains(&"once_materialize_example".to_string()));
    let refused = closed.call(
        2,
        "once_materialize_example",
        json!({"example": "polyglot"}),
    );
    assert_eq!(refused["result"]["isError"], json!(true), "{refused}");
    assert!(!root.join("shop").exists());

    let mut open = Mcp::spawn(&root, &["--allow-edit"]);
    open.initialize();
    let tool = open
        .tools(1)
        .into_iter()
        .find(|t| t["name"] == "once_materialize_example")
        .expect("listed with --allow-edit");
    assert_eq!(
        tool["inputSchema"]["properties"]["example"]["enum"],
        json!([
            "rust-workspace",
            "node-package",
            "python-project",
            "polyglot"
        ])
    );
    let reply = open.call(
        2,
        "once_materialize_example",
        json!({"example": "polyglot", "into": "shop"}),
    );
    let value = &reply["result"]["structuredContent"]["result"];
    assert!(
        value["created"]
            .as_array()
            .expect("created")
            .contains(&json!("shop/web/src/price.js")),
        "{reply}"
    );
    assert!(
        !reply.to_string().contains("formatCents"),
        "file contents leaked"
    );
    std::fs::write(root.join("shop/once.toml"), "# changed\n").expect("writes");
    let before = snapshot(&root);
    let conflict = open.call(
        3,
        "once_materialize_example",
        json!({"example": "polyglot", "into": "shop"}),
    );
    assert_eq!(conflict["result"]["isError"], json!(true), "{conflict}");
    let text = conflict["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    assert!(text.contains("shop/once.toml"), "{text}");
    assert_eq!(snapshot(&root), before);
}

/// Each example's own `test` capability passes, run the way CI runs it: `once run --all test`
/// in a freshly materialized copy.
#[test]
fn every_example_passes_its_own_tests() {
    let examples = [
        // One workspace-wide `cargo test` stands for both crates' tests.
        ("rust-workspace", 1),
        ("node-package", 1),
        ("python-project", 1),
        ("polyglot", 3),
    ];
    let threads: Vec<_> = examples
        .into_iter()
        .map(|(name, targets)| {
            std::thread::spawn(move || {
                let dir = TempDir::new();
                ok(&once(dir.path(), &["materialize", name], &[]));
                let run = once(dir.path(), &["run", "--all", "test", "--json"], &[]);
                (name, targets, ok(&run))
            })
        })
        .collect();
    for thread in threads {
        let (name, targets, report) = thread.join().expect("a thread");
        let report: Value = serde_json::from_str(&report).expect("JSON report");
        assert_eq!(report["status"], json!("succeeded"), "{name}: {report}");
        assert_eq!(
            report["counts"]["total"],
            json!(targets),
            "{name}: {report}"
        );
        assert_eq!(report["counts"]["ran"], json!(targets), "{name}: {report}");
        for action in report["actions"].as_array().expect("actions") {
            assert!(
                action["action"]
                    .as_str()
                    .expect("a name")
                    .ends_with(":test"),
                "{name}: {action}"
            );
            assert_eq!(action["exit_code"], json!(0), "{name}: {action}");
        }
    }
}

#[test]
fn help_teaches_with_examples() {
    for args in [
        &["examples", "--help"][..],
        &["examples", "list", "--help"],
        &["examples", "show", "--help"],
        &["materialize", "--help"],
    ] {
        let run = Test::new().args(args.iter().copied()).run();
        assert_eq!(run.code(), 0, "{args:?}");
        assert!(
            run.stdout().contains("Example"),
            "{args:?}:\n{}",
            run.stdout()
        );
    }
}

#[test]
fn materialized_into_a_member_folder_it_is_a_member() {
    let dir = TempDir::new();
    let root = dir.path();
    std::fs::write(
        root.join("once.toml"),
        "[workspace]\nname = \"shop\"\nmembers = [\"packages/*\"]\n",
    )
    .expect("writes");
    ok(&once(
        root,
        &["materialize", "node-package", "--into", "packages/web2"],
        &[],
    ));
    let member = std::fs::read_to_string(root.join("packages/web2/once.toml")).expect("written");
    assert!(!member.contains("[workspace]"), "{member}");
    assert!(member.contains("[targets.hello]"), "{member}");
    let check = once(root, &["check"], &[]);
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let targets: Value =
        serde_json::from_str(&ok(&once(root, &["query", "targets"], &[]))).expect("JSON");
    let names: Vec<&str> = targets["targets"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|row| row["name"].as_str().expect("a name"))
        .collect();
    assert!(names.contains(&"hello"), "{targets}");
    // Into the root of a folder of its own, an example is a workspace of its own, as written.
    let alone = TempDir::new();
    ok(&once(alone.path(), &["materialize", "node-package"], &[]));
    let text = std::fs::read_to_string(alone.path().join("once.toml")).expect("written");
    assert!(text.contains("[workspace]"), "{text}");
}
