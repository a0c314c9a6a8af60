//! `once memory …` end to end: real processes on real files, including many writers at once.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use once_memory::Store;
use serde_json::Value;

use crate::support::{TempDir, Test, once_binary};

const MANIFEST: &str = "[targets.core]\nkind = \"command\"\n\n[targets.web]\nkind = \"command\"\n";

/// A workspace with a manifest and one source file.
fn workspace() -> TempDir {
    let dir = TempDir::new();
    std::fs::write(dir.path().join("once.toml"), MANIFEST).expect("writes");
    std::fs::create_dir_all(dir.path().join("src")).expect("mkdir");
    std::fs::write(dir.path().join("src/lib.rs"), "pub fn f() {}\n").expect("writes");
    dir
}

fn once(root: &Path, args: &[&str]) -> Output {
    once_with_stdin(root, args, None)
}

fn once_with_stdin(root: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(once_binary())
        .args(args)
        .current_dir(root)
        .env_remove("ONCE_LOG")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs once");
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().expect("piped stdin");
        pipe.write_all(text.as_bytes()).expect("writes stdin");
    }
    child.wait_with_output().expect("waits")
}

fn ok(output: &Output) -> String {
    assert!(
        output.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn json(output: &Output) -> Value {
    serde_json::from_str(&ok(output)).expect("stdout is JSON")
}

fn add(root: &Path, title: &str, extra: &[&str]) -> String {
    let mut args = vec!["memory", "add", "--title", title];
    args.extend_from_slice(extra);
    ok(&once(root, &args)).trim().to_string()
}

#[test]
fn add_show_list_search_and_forget() {
    let ws = workspace();
    let root = ws.path();
    std::fs::write(root.join("notes.md"), "Body from a file.\n").expect("writes");
    let a = add(
        root,
        "OpenSSL is vendored",
        &[
            "--kind",
            "gotcha",
            "--tag",
            "build",
            "--target",
            "core",
            "--path",
            "src/lib.rs",
            "--body",
            "Release builds need the vendored feature.\n",
        ],
    );
    let b = add(
        root,
        "Error handling",
        &["--kind", "convention", "--file", "notes.md"],
    );
    let c = ok(&once_with_stdin(
        root,
        &["memory", "add", "--title", "From stdin", "--file", "-"],
        Some("Piped body.\n"),
    ));
    let c = c.trim();

    let shown = json(&once(root, &["memory", "show", &a, "--json"]));
    let entry = &shown["entries"][0];
    assert_eq!(entry["title"], "OpenSSL is vendored");
    assert_eq!(entry["kind"], "gotcha");
    assert_eq!(entry["tags"], serde_json::json!(["build"]));
    assert_eq!(entry["targets"], serde_json::json!(["core"]));
    assert_eq!(entry["paths"][0]["path"], "src/lib.rs");
    assert_eq!(entry["revision"], 1);
    assert_eq!(entry["body"], "Release builds need the vendored feature.\n");
    assert_eq!(entry["stale"], serde_json::json!([]));
    let show_b = json(&once(root, &["memory", "show", &b, "--json"]));
    assert_eq!(show_b["entries"][0]["body"], "Body from a file.\n");
    let show_c = json(&once(root, &["memory", "show", c, "--json"]));
    assert_eq!(show_c["entries"][0]["body"], "Piped body.\n");

    let listed = json(&once(root, &["memory", "list", "--json"]));
    assert_eq!(listed["total"], 3);
    assert_eq!(
        listed["entries"][0]["body"],
        Value::Null,
        "bodies only on request"
    );
    let gotchas = json(&once(
        root,
        &["memory", "list", "--kind", "gotcha", "--json"],
    ));
    assert_eq!(gotchas["total"], 1);

    let found = json(&once(
        root,
        &["memory", "search", "vendored", "openssl", "--json"],
    ));
    assert_eq!(found["entries"][0]["id"], a.as_str());
    assert!(found["entries"][0]["score"].as_f64().expect("a score") > 0.0);
    let text = ok(&once(root, &["memory", "search", "vendored"]));
    assert!(
        text.contains(&a) && text.contains("OpenSSL is vendored"),
        "{text}"
    );

    ok(&once(root, &["memory", "forget", &b]));
    let after = json(&once(root, &["memory", "list", "--json"]));
    assert_eq!(after["total"], 2);
    let gone = once(root, &["memory", "show", &b]);
    assert_eq!(gone.status.code(), Some(1));
}

#[test]
fn a_stale_revision_is_refused_with_the_current_text() {
    let ws = workspace();
    let root = ws.path();
    let id = add(root, "Shared", &["--body", "first\n"]);
    ok(&once(
        root,
        &[
            "memory",
            "edit",
            &id,
            "--revision",
            "1",
            "--body",
            "second\n",
        ],
    ));
    let refused = once(
        root,
        &["memory", "edit", &id, "--revision", "1", "--body", "mine\n"],
    );
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("revision 2, not 1"), "{stderr}");
    assert!(
        stderr.contains("second"),
        "the current text is shown: {stderr}"
    );
    let now = json(&once(root, &["memory", "show", &id, "--json"]));
    assert_eq!(now["entries"][0]["body"], "second\n");
    assert_eq!(now["entries"][0]["revision"], 2);
}

#[test]
fn the_editor_edits_the_whole_entry() {
    let ws = workspace();
    let root = ws.path();
    let id = add(root, "Before", &["--body", "old words\n"]);
    let output = Command::new(once_binary())
        .args(["memory", "edit", &id, "--editor"])
        .current_dir(root)
        .env("VISUAL", "sed -i -e s/Before/After/ -e s/old/new/")
        .stdin(Stdio::null())
        .output()
        .expect("runs once");
    ok(&output);
    let now = json(&once(root, &["memory", "show", &id, "--json"]));
    assert_eq!(now["entries"][0]["title"], "After");
    assert_eq!(now["entries"][0]["body"], "new words\n");
    assert_eq!(now["entries"][0]["revision"], 2);
}

#[test]
fn a_broken_entry_is_reported_with_its_line_and_the_rest_are_served() {
    let ws = workspace();
    let root = ws.path();
    let good = add(root, "Good", &["--body", "fine\n"]);
    let bad = add(root, "Bad", &["--body", "fine too\n"]);
    let file = root.join(format!(".once/memory/{bad}.md"));
    let text = std::fs::read_to_string(&file).expect("reads");
    std::fs::write(&file, text.replace("revision = 1", "revision = one")).expect("writes");

    let listed = once(root, &["memory", "list", "--json"]);
    let page = json(&listed);
    assert_eq!(page["total"], 1);
    assert_eq!(page["entries"][0]["id"], good.as_str());
    assert_eq!(page["broken"][0]["line"], 9);
    let stderr = String::from_utf8_lossy(&listed.stderr);
    assert!(stderr.contains(&format!("{bad}.md:9:")), "{stderr}");

    let check = once(root, &["memory", "check"]);
    assert_eq!(check.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&check.stdout).contains(&format!("{bad}.md:9:")));
    let overview = json(&once(root, &["query", "workspace"]));
    assert_eq!(
        overview["memory"],
        serde_json::json!({"entries": 1, "stale": 0, "broken": 1})
    );
}

#[test]
fn check_reports_changed_and_vanished_files_and_targets() {
    let ws = workspace();
    let root = ws.path();
    std::fs::write(root.join("src/gone.rs"), "x\n").expect("writes");
    let id = add(
        root,
        "Linked",
        &[
            "--path",
            "src/lib.rs",
            "--path",
            "src/gone.rs",
            "--target",
            "core",
            "--target",
            "web",
        ],
    );
    let fresh = once(root, &["memory", "check", "--json"]);
    assert_eq!(fresh.status.code(), Some(0));

    std::fs::write(root.join("src/lib.rs"), "pub fn g() {}\n").expect("writes");
    std::fs::remove_file(root.join("src/gone.rs")).expect("removes");
    std::fs::write(
        root.join("once.toml"),
        "[targets.core]\nkind = \"command\"\n",
    )
    .expect("writes");
    let stale = once(root, &["memory", "check", "--json"]);
    assert_eq!(stale.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&stale.stdout).expect("JSON");
    assert_eq!(report["stale"][0]["id"], id.as_str());
    assert_eq!(
        report["stale"][0]["stale"],
        serde_json::json!([
            {"reason": "changed", "path": "src/lib.rs"},
            {"reason": "missing", "path": "src/gone.rs"},
            {"reason": "no-target", "target": "web"},
        ])
    );
    let overview = json(&once(root, &["query", "workspace"]));
    assert_eq!(
        overview["memory"],
        serde_json::json!({"entries": 1, "stale": 1, "broken": 0})
    );
}

#[test]
fn eight_processes_writing_200_entries_each_lose_nothing() {
    let ws = workspace();
    let root = ws.path().to_path_buf();
    let writers: Vec<_> = (0..8)
        .map(|writer| {
            let root = root.clone();
            std::thread::spawn(move || {
                for n in 0..200 {
                    let title = format!("writer {writer} entry {n}");
                    let output = once(
                        &root,
                        &["memory", "add", "--title", &title, "--body", &title],
                    );
                    ok(&output);
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().expect("a writer finished");
    }
    let (entries, broken) = Store::new(&root).scan().expect("scans");
    assert!(broken.is_empty(), "{broken:?}");
    assert_eq!(entries.len(), 1600);
    let mut titles: Vec<_> = entries.iter().map(|e| e.title.clone()).collect();
    titles.sort();
    titles.dedup();
    assert_eq!(titles.len(), 1600, "every write is its own entry");
    let files = std::fs::read_dir(root.join(".once/memory"))
        .expect("lists")
        .filter(|f| {
            f.as_ref()
                .is_ok_and(|f| f.file_name().to_string_lossy().ends_with(".md"))
        })
        .count();
    assert_eq!(files, 1600, "no temporary file is left behind");
}

#[test]
fn concurrent_updates_of_one_entry_never_lose_an_update() {
    let ws = workspace();
    let root = ws.path().to_path_buf();
    let id = add(&root, "Log", &["--body", "start\n"]);
    const WRITERS: usize = 4;
    const LINES: usize = 8;
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let (root, id) = (root.clone(), id.clone());
            std::thread::spawn(move || {
                let mut refused = 0;
                for n in 0..LINES {
                    loop {
                        let shown = json(&once(&root, &["memory", "show", &id, "--json"]));
                        let entry = &shown["entries"][0];
                        let revision = entry["revision"].as_u64().expect("a revision").to_string();
                        let body =
                            format!("{}w{writer}-{n}\n", entry["body"].as_str().expect("a body"));
                        let edit = once(
                            &root,
                            &[
                                "memory",
                                "edit",
                                &id,
                                "--revision",
                                &revision,
                                "--body",
                                &body,
                            ],
                        );
                        match edit.status.code() {
                            Some(0) => break,
                            Some(1)
                                if String::from_utf8_lossy(&edit.stderr)
                                    .contains("changed since you read it") =>
                            {
                                refused += 1
                            }
                            _ => panic!("{}", String::from_utf8_lossy(&edit.stderr)),
                        }
                    }
                }
                refused
            })
        })
        .collect();
    for writer in writers {
        writer.join().expect("a writer finished");
    }
    let entry = Store::new(&root).get(&id).expect("reads");
    assert_eq!(entry.revision, 1 + (WRITERS * LINES) as u64);
    for writer in 0..WRITERS {
        for n in 0..LINES {
            let line = format!("w{writer}-{n}\n");
            assert_eq!(
                entry.body.matches(&line).count(),
                1,
                "{line} in:\n{}",
                entry.body
            );
        }
    }
}

#[test]
fn help_teaches_with_examples() {
    for command in ["add", "edit", "show", "list", "search", "forget", "check"] {
        let run = Test::new().args(["memory", command, "--help"]).run();
        assert_eq!(run.code(), 0, "{command}");
        assert!(
            run.stdout().contains("Example"),
            "{command}:\n{}",
            run.stdout()
        );
    }
}

/// The structured value of a successful tool result.
fn result(reply: &Value) -> &Value {
    assert_ne!(reply["result"]["isError"], true, "{reply}");
    &reply["result"]["structuredContent"]["result"]
}

#[test]
fn mcp_remember_query_and_forget_with_revisions() {
    let ws = workspace();
    let root = ws.path();
    let mut server = crate::support::Mcp::spawn(root, &["--allow-edit"]);
    let init = server.initialize();
    let instructions = init["result"]["instructions"]
        .as_str()
        .expect("instructions");
    assert!(instructions.contains("once_query_memory") && instructions.contains("revision"));
    let tools = server.request(1, "tools/list", serde_json::json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for name in ["once_query_memory", "once_remember", "once_forget"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let forget = tools["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "once_forget")
        .expect("once_forget");
    assert_eq!(forget["annotations"]["destructiveHint"], true);

    let created = server.call(
        2,
        "once_remember",
        serde_json::json!({"title": "Vendored OpenSSL", "kind": "gotcha", "paths": ["src/lib.rs"], "body": "one\n"}),
    );
    let id = result(&created)["id"].as_str().expect("an id").to_string();
    assert_eq!(result(&created)["revision"], 1);
    let found = server.call(
        3,
        "once_query_memory",
        serde_json::json!({"query": "openssl"}),
    );
    assert_eq!(result(&found)["entries"][0]["id"], id.as_str());
    // The CLI prints the very same value.
    let cli = json(&once(root, &["memory", "search", "openssl", "--json"]));
    assert_eq!(&cli, result(&found));

    let updated = server.call(
        4,
        "once_remember",
        serde_json::json!({"id": id, "revision": 1, "body": "two\n"}),
    );
    assert_eq!(result(&updated)["revision"], 2);
    let stale = server.call(
        5,
        "once_remember",
        serde_json::json!({"id": id, "revision": 1, "body": "lost?\n"}),
    );
    assert_eq!(stale["result"]["isError"], true);
    let refused = &stale["result"]["structuredContent"];
    assert_eq!(refused["outcome"], "refused", "{stale}");
    assert!(
        refused["message"]
            .as_str()
            .is_some_and(|m| m.contains("revision 2, not 1")),
        "{stale}"
    );
    // The current text comes with the refusal, to merge into.
    assert!(
        refused["result"]["current"]
            .as_str()
            .is_some_and(|t| t.contains("two\n")),
        "{stale}"
    );
    let overview = server.call(6, "once_query_workspace", serde_json::json!({}));
    assert_eq!(
        result(&overview)["memory"],
        serde_json::json!({"entries": 1, "stale": 0, "broken": 0})
    );
    let gone = server.call(
        7,
        "once_forget",
        serde_json::json!({"id": id, "revision": 2}),
    );
    assert_eq!(result(&gone)["title"], "Vendored OpenSSL");
    let empty = server.call(8, "once_query_memory", serde_json::json!({}));
    assert_eq!(result(&empty)["total"], 0);
}

#[test]
fn mcp_without_allow_edit_cannot_write_memory() {
    let ws = workspace();
    let mut server = crate::support::Mcp::spawn(ws.path(), &[]);
    server.initialize();
    let tools = server.request(1, "tools/list", serde_json::json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"once_query_memory"), "{names:?}");
    assert!(!names.contains(&"once_remember") && !names.contains(&"once_forget"));
    let refused = server.call(2, "once_remember", serde_json::json!({"title": "x"}));
    assert!(refused.to_string().contains("--allow-edit"), "{refused}");
    assert!(!ws.path().join(".once/memory").exists());
}

#[test]
fn query_memory_prints_the_same_value_as_memory_json() {
    let ws = workspace();
    let root = ws.path();
    let id = add(root, "Release checklist", &["--body", "Tag, then publish."]);
    add(root, "Unrelated", &["--body", "Nothing here."]);

    let searched = json(&once(root, &["query", "memory", "release"]));
    assert_eq!(
        searched,
        json(&once(root, &["memory", "search", "release", "--json"]))
    );
    assert_eq!(searched["entries"][0]["id"], id.as_str(), "{searched}");

    let one = json(&once(root, &["query", "memory", "--id", &id]));
    assert_eq!(one, json(&once(root, &["memory", "show", &id, "--json"])));

    let listed = json(&once(root, &["query", "memory", "--limit", "1"]));
    assert_eq!(
        listed,
        json(&once(root, &["memory", "list", "--limit", "1", "--json"]))
    );
    assert_eq!(
        listed["entries"].as_array().expect("a list").len(),
        1,
        "{listed}"
    );
}

/// The linked paths of the entry `add` printed the id of.
fn linked_paths(root: &Path, add: &Output) -> Vec<String> {
    assert_eq!(
        add.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );
    let id = String::from_utf8_lossy(&add.stdout).trim().to_owned();
    let show = once(root, &["memory", "show", &id, "--json"]);
    let value: Value = serde_json::from_slice(&show.stdout).expect("JSON");
    value["entries"][0]["paths"]
        .as_array()
        .expect("paths")
        .iter()
        .map(|link| link["path"].as_str().expect("a path").to_owned())
        .collect()
}

#[test]
fn path_is_relative_to_here_or_else_to_the_workspace_root() {
    let dir = workspace();
    let root = dir.path();
    let src = root.join("src");
    // From a subfolder: a file there, and a file named from the root.
    let here = once(&src, &["memory", "add", "--title", "t", "--path", "lib.rs"]);
    assert_eq!(linked_paths(root, &here), ["src/lib.rs"]);
    let from_root = once(
        &src,
        &["memory", "add", "--title", "t", "--path", "once.toml"],
    );
    assert_eq!(linked_paths(root, &from_root), ["once.toml"]);
    let nested = once(
        &src,
        &["memory", "add", "--title", "t", "--path", "src/lib.rs"],
    );
    assert_eq!(linked_paths(root, &nested), ["src/lib.rs"]);
    // From outside the workspace, named with `-C`: relative to its root.
    let outside = TempDir::new();
    let root_text = root.display().to_string();
    let add = once(
        outside.path(),
        &[
            "-C",
            &root_text,
            "memory",
            "add",
            "--title",
            "t",
            "--path",
            "src/lib.rs",
        ],
    );
    assert_eq!(linked_paths(root, &add), ["src/lib.rs"]);
    // A path outside the workspace is a wrong command line.
    let escape = once(
        &src,
        &["memory", "add", "--title", "t", "--path", "../../x"],
    );
    assert_eq!(escape.status.code(), Some(2));
}

#[test]
fn entry_files_end_with_a_newline() {
    let dir = workspace();
    let root = dir.path();
    for body in ["no newline at the end", "", "two\nlines\n"] {
        let add = once(root, &["memory", "add", "--title", "t", "--body", body]);
        assert_eq!(add.status.code(), Some(0));
        let id = String::from_utf8_lossy(&add.stdout).trim().to_owned();
        let text = std::fs::read_to_string(root.join(format!(".once/memory/{id}.md")))
            .expect("the entry file");
        assert!(text.ends_with('\n'), "{body:?}: {text:?}");
        assert!(!text.ends_with("\n\n\n"), "{body:?}: {text:?}");
    }
}
