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
    shown(root, id)["status"].clone()
}

fn shown(root: &Path, id: &str) -> Value {
    serde_json::from_str(&ok(&once(root, &["changes", "show", id, "--json"], &[]))).expect("JSON")
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
        diff.contains("by cli-test/0"),
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
    assert_eq!(shown(root, &id)["decided_by"], json!("terminal"));
    let diff = ok(&once(root, &["changes", "show", &id], &[]));
    assert!(diff.contains("by a person in the terminal)"), "{diff}");
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
            // `once changes list` finished it; the person who applied is still the one recorded.
            assert_eq!(shown(root, &id)["decided_by"], json!("terminal"), "{point}");
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

/// What `sha256sum src/lib.rs` prints for [`LIB`].
const LIB_SHA256: &str = "6bb4ec83453bc2ef6ea55fd5a116ff0286cc5694dde3e4d0d33f375ef3ab4875";

/// The value of a tool that answered, or the whole reply in the panic.
fn value(reply: &Value) -> Value {
    assert_ne!(reply["result"]["isError"], json!(true), "{reply}");
    reply["result"]["structuredContent"]["result"].clone()
}

/// The loop an agent goes through: read a file, ask for its hashes, propose a replacement named
/// by its SHA-256; a person applies it with the CLI. A base that went stale is refused, and the
/// refusal says how to get a fresh one.
#[test]
fn an_agent_names_its_base_by_sha256_and_a_person_applies_it() {
    let ws = workspace();
    let root = ws.path();
    let mut mcp = Mcp::spawn(root, &[]);
    mcp.initialize();
    let listed = mcp.tools(1);
    let tool = listed
        .iter()
        .find(|t| t["name"] == "once_query_hashes")
        .expect("once_query_hashes is listed without any --allow flag");
    assert_eq!(tool["annotations"]["readOnlyHint"], json!(true), "{tool}");
    assert!(
        tool["description"]
            .as_str()
            .unwrap_or_default()
            .contains("sha256sum"),
        "{tool}"
    );
    let propose = listed
        .iter()
        .find(|t| t["name"] == "once_change_set_propose")
        .expect("listed");
    for expected in ["sha256:", "once_query_hashes", "sha256sum"] {
        assert!(
            propose["description"]
                .as_str()
                .unwrap_or_default()
                .contains(expected),
            "{expected}: {propose}"
        );
    }

    let read = std::fs::read_to_string(root.join("src/lib.rs")).expect("reads");
    let hashes = value(&mcp.call(2, "once_query_hashes", json!({"paths": ["src/lib.rs"]})));
    assert_eq!(
        hashes,
        json!({"files": [{
            "path": "src/lib.rs",
            "exists": true,
            "size": read.len(),
            "blake3": blake3(&read),
            "sha256": LIB_SHA256,
        }]})
    );
    let sha256 = hashes["files"][0]["sha256"].as_str().expect("a digest");
    let proposed = value(&mcp.call(
        3,
        "once_change_set_propose",
        json!({
            "title": "Add b",
            "rationale": "The CLI needs it.",
            "changes": [{"action": "replace", "path": "src/lib.rs",
                         "content": format!("{read}pub fn b() {{}}\n"),
                         "base": format!("sha256:{sha256}")}],
        }),
    ));
    let id = proposed["id"].as_str().expect("an id").to_string();
    let shown: Value =
        serde_json::from_str(&ok(&once(root, &["changes", "show", &id, "--json"], &[])))
            .expect("JSON");
    assert_eq!(shown["changes"][0]["base_sha256"], json!(LIB_SHA256));
    let applied = ok(&once(root, &["changes", "apply", &id], &[]));
    assert!(applied.contains("applied"), "{applied}");
    assert_eq!(
        std::fs::read_to_string(root.join("src/lib.rs")).expect("reads"),
        "pub fn a() {}\npub fn b() {}\n"
    );

    // The base the agent read before is stale now.
    let stale = mcp.call(
        4,
        "once_change_set_propose",
        json!({
            "title": "Add c",
            "rationale": "Also needed.",
            "changes": [{"action": "replace", "path": "src/lib.rs", "content": "x\n",
                         "base": format!("sha256:{sha256}")}],
        }),
    );
    assert_eq!(stale["result"]["isError"], json!(true), "{stale}");
    let text = stale["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    for expected in [
        "refused",
        "is not the file you read",
        "sha256:<hex>",
        "blake3:<hex>",
        "once_query_hashes",
    ] {
        assert!(text.contains(expected), "{expected:?} missing from {text}");
    }
    // A bare BLAKE3 base still works as it always did, and the CLI tells the same hashes.
    let now = std::fs::read_to_string(root.join("src/lib.rs")).expect("reads");
    value(&mcp.call(
        5,
        "once_change_set_propose",
        json!({
            "title": "Drop lib",
            "rationale": "Old style.",
            "changes": [{"action": "delete", "path": "src/lib.rs", "base_blake3": blake3(&now)}],
        }),
    ));
    let asked = value(&mcp.call(
        6,
        "once_query_hashes",
        json!({"paths": ["src/lib.rs", "old.txt", "nope.txt"]}),
    ));
    let printed = once(
        root,
        &[
            "query",
            "hashes",
            "src/lib.rs",
            "old.txt",
            "nope.txt",
            "--json",
        ],
        &[],
    );
    assert_eq!(
        printed.status.code(),
        Some(1),
        "a missing file: {printed:?}"
    );
    let printed: Value = serde_json::from_slice(&printed.stdout).expect("JSON");
    assert_eq!(printed, asked);
    assert_eq!(
        asked["files"][2],
        json!({"path": "nope.txt", "exists": false})
    );
}

/// Paths that a change set could never name get an error of their own, and nothing is read
/// through a link; a question out of bounds is refused whole.
#[test]
fn hashes_refuse_links_escapes_git_and_folders_and_stay_bounded() {
    let ws = workspace();
    let root = ws.path();
    let outside = TempDir::new();
    std::fs::write(outside.path().join("secret"), "secret\n").expect("writes");
    std::os::unix::fs::symlink(outside.path(), root.join("escape")).expect("links");
    std::os::unix::fs::symlink(outside.path().join("secret"), root.join("secret.txt"))
        .expect("links");
    std::fs::create_dir_all(root.join(".git")).expect("mkdir");
    std::fs::write(root.join(".git/config"), "[core]\n").expect("writes");
    let mut mcp = Mcp::spawn(root, &[]);
    mcp.initialize();
    let asked = value(&mcp.call(
        1,
        "once_query_hashes",
        json!({"paths": ["escape/secret", "secret.txt", "../x", ".git/config", "src", "/etc/passwd"]}),
    ));
    let rows = asked["files"].as_array().expect("rows");
    assert_eq!(rows.len(), 6, "{asked}");
    for (row, expected) in rows.iter().zip([
        "symbolic link",
        "symbolic link",
        "`..`",
        "`.git/`",
        "folder",
        "absolute",
    ]) {
        let error = row["error"].as_str().unwrap_or_default();
        assert!(error.contains(expected), "{row} lacks {expected:?}");
        assert!(
            row.get("sha256").is_none() && row.get("exists").is_none(),
            "{row}"
        );
    }
    let printed = once(
        root,
        &["query", "hashes", "escape/secret", "src/lib.rs", "--json"],
        &[],
    );
    assert_eq!(printed.status.code(), Some(1), "{printed:?}");
    let text = ok(&once(root, &["query", "hashes", "src/lib.rs"], &[]));
    assert!(
        text.contains(LIB_SHA256) && text.contains("src/lib.rs"),
        "{text}"
    );

    let many: Vec<String> = (0..101).map(|i| format!("f{i}")).collect();
    let refused = mcp.call(2, "once_query_hashes", json!({"paths": many}));
    assert_eq!(refused["result"]["isError"], json!(true), "{refused}");
    let none = mcp.call(3, "once_query_hashes", json!({"paths": []}));
    assert_eq!(none["result"]["isError"], json!(true), "{none}");
    let hundred = value(&mcp.call(4, "once_query_hashes", json!({"paths": &many[..100]})));
    assert_eq!(hundred["files"].as_array().map(Vec::len), Some(100));

    // A hundred files with long names: the answer stays under 40 KB, and says how many paths
    // at the end it left for another call.
    let long: Vec<String> = (0..100)
        .map(|i| format!("long/{i:03}-{}.txt", "n".repeat(200)))
        .collect();
    std::fs::create_dir_all(root.join("long")).expect("mkdir");
    for path in &long {
        std::fs::write(root.join(path), path).expect("writes");
    }
    let reply = mcp.call(5, "once_query_hashes", json!({"paths": long}));
    assert!(
        reply.to_string().len() < 40 * 1024,
        "{} bytes",
        reply.to_string().len()
    );
    let answer = value(&reply);
    let rows = answer["files"].as_array().expect("rows");
    let omitted = answer["omitted"].as_u64().expect("omitted") as usize;
    assert!(omitted > 0 && rows.len() + omitted == 100, "{answer}");
    assert_eq!(rows[rows.len() - 1]["path"], json!(long[rows.len() - 1]));
    // The command line has no reply to fit: it answers every path.
    let mut args = vec!["query", "hashes", "--json"];
    args.extend(long.iter().map(String::as_str));
    let printed: Value = serde_json::from_str(&ok(&once(root, &args, &[]))).expect("JSON");
    assert_eq!(printed["files"].as_array().map(Vec::len), Some(100));
    assert!(printed.get("omitted").is_none(), "{printed}");
}
