//! Change sets end to end: an agent proposes over MCP (nothing applied), a person lists, reads,
//! applies or rejects with `once changes`, a stale base refuses the whole set, and a process
//! killed at an injected point during apply leaves the tree untouched or, after recovery by the
//! next command, fully applied.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;

use serde_json::{Value, json};

use crate::examples::{ok, once, snapshot};
use crate::support::{Mcp, TempDir, Test};

const LIB: &str = "pub fn a() {}\n";
const OLD: &str = "old\n";

fn workspace() -> TempDir {
    let dir = TempDir::new();
    std::fs::write(dir.path().join("once.toml"), "").expect("writes");
    std::fs::create_dir_all(dir.path().join("src")).expect("mkdir");
    std::fs::write(dir.path().join("src/lib.rs"), LIB).expect("writes");
    std::fs::write(dir.path().join("old.txt"), OLD).expect("writes");
    dir
}

fn blake3(text: &str) -> String {
    once_fs::hash_hex(text.as_bytes())
}

/// Proposes three changes through a real `once mcp` without any --allow flag; returns the id.
fn propose(root: &Path) -> String {
    let mut mcp = Mcp::spawn(root, &[]);
    mcp.initialize();
    let reply = mcp.call(
        1,
        "once_change_set_propose",
        json!({
            "title": "Document, extend, tidy",
            "rationale": "A guide for newcomers; b() is needed by the CLI; old.txt is unused.",
            "changes": [
                {"action": "create", "path": "docs/guide/intro.md", "content": "# Intro\n"},
                {"action": "replace", "path": "src/lib.rs", "content": "pub fn a() {}\npub fn b() {}\n", "base_blake3": blake3(LIB)},
                {"action": "delete", "path": "old.txt", "base_blake3": blake3(OLD)},
            ],
        }),
    );
    let value = &reply["result"]["structuredContent"]["result"];
    assert_eq!(value["status"], json!("pending"), "{reply}");
    assert_eq!(
        (&value["create"], &value["replace"], &value["delete"]),
        (&json!(1), &json!(1), &json!(1))
    );
    value["id"].as_str().expect("an id").to_string()
}

fn assert_applied(root: &Path) {
    assert_eq!(
        std::fs::read_to_string(root.join("docs/guide/intro.md")).expect("created"),
        "# Intro\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("src/lib.rs")).expect("replaced"),
        "pub fn a() {}\npub fn b() {}\n"
    );
    assert!(!root.join("old.txt").exists(), "not deleted");
}

fn status(root: &Path, id: &str) -> Value {
    let shown: Value =
        serde_json::from_str(&ok(&once(root, &["changes", "show", id, "--json"], &[])))
            .expect("JSON");
    shown["status"].clone()
}

/// The tree a person sees: everything but `.once/`, where the change sets themselves live.
fn tree(root: &Path) -> std::collections::BTreeMap<std::path::PathBuf, Option<Vec<u8>>> {
    let mut all = snapshot(root);
    all.retain(|path, _| !path.starts_with(".once"));
    all
}

#[test]
fn an_agent_proposes_and_a_person_reads_and_applies() {
    let ws = workspace();
    let root = ws.path();
    let before = tree(root);
    let id = propose(root);
    assert_eq!(tree(root), before, "a proposal applied something");
    assert!(
        root.join(".once/changes")
            .join(&id)
            .join("proposal.json")
            .is_file()
    );

    let overview: Value =
        serde_json::from_str(&ok(&once(root, &["query", "workspace"], &[]))).expect("JSON");
    assert_eq!(
        overview["change_sets"],
        json!({"pending": 1, "applied": 0, "rejected": 0, "failed": 0})
    );

    let list = ok(&once(root, &["changes", "list"], &[]));
    assert!(
        list.contains(&id) && list.contains("pending") && list.contains("+1 ~1 -1"),
        "{list}"
    );
    let diff = ok(&once(root, &["changes", "show", &id], &[]));
    assert!(
        diff.contains("by cli-test 0"),
        "the author is the client: {diff}"
    );
    assert!(
        diff.contains("--- a/src/lib.rs\n+++ b/src/lib.rs\n"),
        "{diff}"
    );
    assert!(diff.contains("+pub fn b() {}"), "{diff}");
    assert!(diff.contains("--- a/old.txt\n+++ /dev/null\n"), "{diff}");

    let applied = ok(&once(root, &["changes", "apply", &id], &[]));
    assert!(applied.contains("applied"), "{applied}");
    assert_applied(root);
    assert_eq!(status(root, &id), json!("applied"));
    let again = once(root, &["changes", "apply", &id], &[]);
    assert_eq!(again.status.code(), Some(1));
    let overview: Value =
        serde_json::from_str(&ok(&once(root, &["query", "workspace"], &[]))).expect("JSON");
    assert_eq!(
        overview["change_sets"],
        json!({"pending": 0, "applied": 1, "rejected": 0, "failed": 0})
    );
}

#[test]
fn a_stale_base_refuses_the_whole_set_and_changes_not_one_byte() {
    let ws = workspace();
    let root = ws.path();
    let id = propose(root);
    std::fs::write(
        root.join("src/lib.rs"),
        "pub fn a() {} // a person's edit\n",
    )
    .expect("writes");
    let before = tree(root);
    let refused = once(root, &["changes", "apply", &id], &[]);
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("`src/lib.rs` was changed since"),
        "{stderr}"
    );
    assert_eq!(tree(root), before, "a refused apply changed something");
    assert_eq!(status(root, &id), json!("pending"));
}

#[test]
fn a_proposal_with_a_stale_base_or_an_escaping_path_is_not_saved() {
    let ws = workspace();
    let root = ws.path();
    let outside = TempDir::new();
    std::os::unix::fs::symlink(outside.path(), root.join("escape")).expect("links");
    let mut mcp = Mcp::spawn(root, &[]);
    mcp.initialize();
    let reply = mcp.call(
        1,
        "once_change_set_propose",
        json!({
            "title": "Bad",
            "rationale": "",
            "changes": [
                {"action": "replace", "path": "src/lib.rs", "content": "x", "base_blake3": blake3("something else")},
                {"action": "create", "path": "escape/x", "content": "x"},
                {"action": "create", "path": "/tmp/x", "content": "x"},
                {"action": "create", "path": "../x", "content": "x"},
            ],
        }),
    );
    assert_eq!(reply["result"]["isError"], json!(true), "{reply}");
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    for expected in [
        "is not the file you read",
        "symbolic link",
        "absolute",
        "`..`",
    ] {
        assert!(text.contains(expected), "{expected:?} missing from {text}");
    }
    let list = ok(&once(root, &["changes", "list"], &[]));
    assert!(list.contains("no change sets"), "{list}");
    assert!(snapshot(outside.path()).is_empty());
}

#[test]
fn reject_keeps_the_record_with_the_decision() {
    let ws = workspace();
    let root = ws.path();
    let before = tree(root);
    let id = propose(root);
    ok(&once(
        root,
        &["changes", "reject", &id, "--reason", "not this way"],
        &[],
    ));
    assert_eq!(tree(root), before);
    let shown = ok(&once(root, &["changes", "show", &id], &[]));
    assert!(
        shown.contains("status: rejected") && shown.contains("not this way"),
        "{shown}"
    );
    let listed: Value = serde_json::from_str(&ok(&once(
        root,
        &["changes", "list", "--status", "rejected", "--json"],
        &[],
    )))
    .expect("JSON");
    assert_eq!(listed["change_sets"][0]["id"], json!(id));
    assert_eq!(
        once(root, &["changes", "apply", &id], &[]).status.code(),
        Some(1)
    );
}

/// A real process is killed (SIGKILL, no cleanup) at an injected point of `once changes apply`;
/// the next command that touches change sets recovers: before the commit point the tree is as it
/// was, after it the set is fully applied. The fault hook is read by debug builds only.
#[test]
fn a_process_killed_during_apply_leaves_nothing_half_written() {
    for (point, rolled_forward) in [
        ("stage:1", false),
        ("stage:2", false),
        ("commit", true),
        ("rename:1", true),
        ("rename:2", true),
        ("rename:3", true),
        ("decided", true),
    ] {
        let ws = workspace();
        let root = ws.path();
        let before = tree(root);
        let id = propose(root);
        let fault = format!("{point}:kill");
        let killed = once(
            root,
            &["changes", "apply", &id],
            &[("ONCE_CHANGES_FAULT", &fault)],
        );
        assert_eq!(
            killed.status.signal(),
            Some(9),
            "{point}: not killed: {killed:?}"
        );
        let journal = root.join(".once/changes").join(&id).join("journal.json");
        assert!(
            journal.exists(),
            "{point}: no journal left by the killed process"
        );
        if point == "rename:1" {
            // Killed half way: the first file is in place, the others are not yet.
            assert!(root.join("docs/guide/intro.md").exists());
            assert_eq!(
                std::fs::read_to_string(root.join("src/lib.rs")).expect("reads"),
                LIB
            );
        }

        ok(&once(root, &["changes", "list"], &[]));
        assert!(!journal.exists(), "{point}: not recovered");
        let leftovers: Vec<_> = snapshot(root)
            .into_keys()
            .filter(|p| p.to_string_lossy().contains("once-stage"))
            .collect();
        assert!(
            leftovers.is_empty(),
            "{point}: staging files left: {leftovers:?}"
        );
        if rolled_forward {
            assert_applied(root);
            assert_eq!(status(root, &id), json!("applied"), "{point}");
        } else {
            assert_eq!(tree(root), before, "{point}: the tree changed");
            assert_eq!(status(root, &id), json!("pending"), "{point}");
            ok(&once(root, &["changes", "apply", &id], &[]));
            assert_applied(root);
        }
    }
}

#[test]
fn help_teaches_with_examples() {
    for command in ["list", "show", "apply", "reject"] {
        let run = Test::new().args(["changes", command, "--help"]).run();
        assert_eq!(run.code(), 0, "{command}");
        assert!(
            run.stdout().contains("Example"),
            "{command}:\n{}",
            run.stdout()
        );
    }
}

/// A 255-byte name applies; a longer one is refused when proposed, with the limit; and an apply
/// that no recovery can finish or undo (here a journal left by an older `once` that staged under
/// a name too long for the file system) is marked failed, so every command keeps working.
#[test]
fn long_names_never_wedge_the_change_sets() {
    let dir = workspace();
    let root = dir.path();
    let longest = "n".repeat(255);
    let mut mcp = Mcp::spawn(root, &[]);
    mcp.initialize();
    let propose_one = |mcp: &mut Mcp, id: u64, path: &str| {
        mcp.call(
            id,
            "once_change_set_propose",
            json!({
                "title": "A file with a long name",
                "rationale": "Names can be long.",
                "changes": [{"action": "create", "path": path, "content": "x\n"}],
            }),
        )
    };
    let reply = propose_one(&mut mcp, 1, &format!("src/{longest}"));
    let id = reply["result"]["structuredContent"]["result"]["id"]
        .as_str()
        .expect("an id")
        .to_string();
    ok(&once(root, &["changes", "apply", &id], &[]));
    assert_eq!(
        std::fs::read_to_string(root.join("src").join(&longest)).expect("applied"),
        "x\n"
    );
    let refused = propose_one(&mut mcp, 2, &format!("src/{longest}x"));
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(
        refused.to_string().contains("at most 255 bytes"),
        "{refused}"
    );

    let wedged = propose(root);
    let staged = format!("src/.{}.once-stage-{wedged}", "n".repeat(240));
    std::fs::write(
        root.join(".once/changes")
            .join(&wedged)
            .join("journal.json"),
        json!({"state": "staging", "dirs": [], "steps": [{"path": "src/x", "staged": staged}]})
            .to_string(),
    )
    .expect("writes a journal");
    for args in [
        vec!["changes", "list"],
        vec!["changes", "show", &id],
        vec!["changes", "list", "--status", "failed"],
    ] {
        ok(&once(root, &args, &[]));
    }
    assert_eq!(status(root, &wedged), json!("failed"));
    let again = once(root, &["changes", "apply", &wedged], &[]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("already failed"),
        "{again:?}"
    );
    let other = propose(root);
    ok(&once(root, &["changes", "reject", &other], &[]));
}
