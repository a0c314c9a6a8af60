//! `once query affected`, `once query owner` and `once run --affected` in a real git repository:
//! what changed since a revision (committed, uncommitted and untracked), files named on the
//! command line, and the refusals (outside the workspace, no repository, unknown revision).

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::support::{Mcp, TempDir, once_binary};

const MANIFEST: &str = r#"
[workspace]
name = "repo"

[targets.lib]
kind = "command"
path = "lib"
[targets.lib.capabilities.build]
command = "true"
inputs = ["src/**"]
[targets.lib.capabilities.test]
command = "true"
inputs = ["src/**", "tests/**"]

[targets.app]
kind = "command"
path = "app"
deps = ["lib"]
[targets.app.capabilities.build]
command = "true"
[targets.app.capabilities.test]
command = "true"

[targets.docs]
kind = "command"
path = "docs"
[targets.docs.capabilities.test]
command = "true"
inputs = ["**", "//style.toml"]
"#;

/// The environment git and `once` get: no user or system configuration, no repository above
/// the temporary folder.
fn isolate(command: &mut Command, dir: &Path) {
    command
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env(
            "GIT_CEILING_DIRECTORIES",
            dir.parent().expect("a parent folder"),
        )
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("ONCE_LOG")
        .stdin(Stdio::null());
}

fn git(dir: &Path, args: &[&str]) {
    let mut command = Command::new("git");
    command
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(["-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir);
    isolate(&mut command, dir);
    let output = command.output().expect("runs git");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn write(dir: &Path, path: &str, text: &str) {
    let path = dir.join(path);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, text).expect("writes");
}

/// A workspace with one commit.
fn repository() -> TempDir {
    let dir = TempDir::new();
    let root = dir.path();
    write(root, "once.toml", MANIFEST);
    write(root, "lib/src/a.rs", "fn a() {}\n");
    write(root, "lib/tests/t.rs", "\n");
    write(root, "app/main.rs", "fn main() {}\n");
    write(root, "docs/index.md", "# docs\n");
    write(root, "style.toml", "\n");
    write(root, "README.md", "read me\n");
    write(root, ".gitignore", ".once/\n");
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "first"]);
    dir
}

fn once(dir: &Path, cwd: &str, args: &[&str]) -> Output {
    let mut command = Command::new(once_binary());
    command.args(args).current_dir(dir.join(cwd));
    isolate(&mut command, dir);
    command.output().expect("runs once")
}

fn json(output: &Output) -> Value {
    assert_eq!(output.status.code(), Some(0), "{}", text(output));
    serde_json::from_slice(&output.stdout).expect("stdout is JSON")
}

fn text(output: &Output) -> String {
    format!(
        "exit {:?}\n{}{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn paths(value: &Value) -> Vec<&str> {
    value["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["path"].as_str().expect("a path"))
        .collect()
}

fn actions(value: &Value) -> Vec<&str> {
    value["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .map(|a| a["action"].as_str().expect("an action"))
        .collect()
}

#[test]
fn uncommitted_and_untracked_changes_count_and_committed_ones_with_since() {
    let dir = repository();
    let root = dir.path();
    let clean = json(&once(root, ".", &["query", "affected", "--json"]));
    assert_eq!(clean["files_total"], 0, "{clean}");
    assert_eq!(clean["actions_total"], 0, "{clean}");

    write(root, "lib/src/a.rs", "fn a() { 1; }\n");
    write(root, "docs/new.md", "new\n");
    write(root, "notes.txt", "mine\n");
    let changed = json(&once(
        root,
        ".",
        &["query", "affected", "--ownership", "all", "--json"],
    ));
    assert_eq!(
        paths(&changed),
        vec!["docs/new.md", "lib/src/a.rs", "notes.txt"]
    );
    assert_eq!(changed["unowned_total"], 1, "{changed}");
    assert_eq!(
        actions(&changed),
        vec![
            "docs:test",
            "lib:build",
            "lib:test",
            "app:build",
            "app:test"
        ],
        "{changed}"
    );
    assert_eq!(
        changed["actions"][3]["reason"], "depends on `lib:build`",
        "{changed}"
    );

    let tests = json(&once(
        root,
        ".",
        &["query", "affected", "--capability", "test", "--json"],
    ));
    assert_eq!(actions(&tests), vec!["docs:test", "lib:test", "app:test"]);

    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "second"]);
    let none = json(&once(root, ".", &["query", "affected", "--json"]));
    assert_eq!(none["files_total"], 0, "{none}");
    let since = json(&once(
        root,
        ".",
        &[
            "query",
            "affected",
            "--since",
            "HEAD~1",
            "--ownership",
            "all",
            "--json",
        ],
    ));
    assert_eq!(
        paths(&since),
        vec!["docs/new.md", "lib/src/a.rs", "notes.txt"]
    );

    // A root glob reaches from the workspace root.
    write(root, "style.toml", "changed\n");
    let style = json(&once(
        root,
        ".",
        &["query", "affected", "--ownership=all", "--json"],
    ));
    assert_eq!(actions(&style), vec!["docs:test"], "{style}");
    assert_eq!(
        style["files"][0]["owners"][0]["reasons"][0],
        "root input of `docs:test`"
    );
}

#[test]
fn the_text_answer_lists_actions_then_owners() {
    let dir = repository();
    let root = dir.path();
    write(root, "lib/tests/t.rs", "changed\n");
    let output = once(root, ".", &["query", "affected"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "2 affected actions\n  \
         lib:test  `lib/tests/t.rs` is an input\n  \
         app:test  depends on `lib:test`\n\
         1 changed file, 0 owned by no target\n  \
         owned by lib (1)\n"
    );
    let every = once(root, ".", &["query", "affected", "--ownership", "all"]);
    assert_eq!(
        String::from_utf8_lossy(&every.stdout),
        "2 affected actions\n  \
         lib:test  `lib/tests/t.rs` is an input\n  \
         app:test  depends on `lib:test`\n\
         1 changed file, 0 owned by no target\n  \
         lib/tests/t.rs: lib (inside folder `lib`; input of `lib:test`)\n",
        "{}",
        text(&every)
    );
    // One name for the filter, as the MCP tool spells it; the short one still works.
    let short = once(root, ".", &["query", "affected", "--cap", "test", "--json"]);
    let long = once(
        root,
        ".",
        &["query", "affected", "--capability", "test", "--json"],
    );
    assert_eq!(json(&short), json(&long));
}

#[test]
fn files_are_taken_from_here_or_from_the_root_and_never_from_outside() {
    let dir = repository();
    let root = dir.path();
    let here = json(&once(
        root,
        "lib",
        &[
            "query",
            "affected",
            "--files",
            "src/a.rs",
            "--ownership=all",
            "--json",
        ],
    ));
    assert_eq!(paths(&here), vec!["lib/src/a.rs"]);
    assert_eq!(actions(&here)[..2], ["lib:build", "lib:test"]);

    let from_root = json(&once(
        root,
        "lib",
        &[
            "query",
            "affected",
            "--files",
            "docs/index.md",
            "--ownership=all",
            "--json",
        ],
    ));
    assert_eq!(paths(&from_root), vec!["docs/index.md"]);

    // An absolute path, also through a link to the workspace folder.
    let elsewhere = TempDir::new();
    let link = elsewhere.path().join("link");
    std::os::unix::fs::symlink(root, &link).expect("links the workspace");
    for absolute in [root.join("lib/src/a.rs"), link.join("lib/src/a.rs")] {
        let absolute = absolute.display().to_string();
        let value = json(&once(
            root,
            "app",
            &[
                "query",
                "affected",
                "--ownership=all",
                "--files",
                &absolute,
                "--json",
            ],
        ));
        assert_eq!(paths(&value), vec!["lib/src/a.rs"], "{absolute}");
    }

    for outside in ["../../elsewhere.txt", "/etc/passwd"] {
        let refused = once(root, "lib", &["query", "affected", "--files", outside]);
        assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(stderr.contains("is outside the workspace"), "{stderr}");
        assert!(refused.stdout.is_empty());
    }
}

#[test]
fn without_a_repository_or_a_known_revision_it_says_what_to_do() {
    let dir = TempDir::new();
    write(dir.path(), "once.toml", MANIFEST);
    let output = once(dir.path(), ".", &["query", "affected"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("is not inside a git repository") && stderr.contains("`git init`"),
        "{stderr}"
    );
    // Named files need no repository.
    let named = json(&once(
        dir.path(),
        ".",
        &["query", "affected", "--files", "app/main.rs", "--json"],
    ));
    assert_eq!(actions(&named), vec!["app:build", "app:test"]);

    let repo = repository();
    for revision in ["no-such-branch", "-p"] {
        let output = once(
            repo.path(),
            ".",
            &["query", "affected", &format!("--since={revision}")],
        );
        assert_eq!(output.status.code(), Some(2), "{}", text(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(&format!("`{revision}`")), "{stderr}");
    }
}

#[test]
fn owner_names_the_targets_of_a_path() {
    let dir = repository();
    let root = dir.path();
    let output = once(root, ".", &["query", "owner", "lib/src/a.rs"]);
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "lib/src/a.rs: lib (inside folder `lib`; input of `lib:build`, `lib:test`)\n",
        "{}",
        text(&output)
    );
    let value = json(&once(root, "app", &["query", "owner", "main.rs", "--json"]));
    assert_eq!(
        value,
        json!({
            "path": "app/main.rs",
            "owners": [{
                "target": "app",
                "reasons": ["inside folder `app`", "input of `app:build`, `app:test`"]
            }],
            "owners_total": 1
        })
    );
    let nobody = once(root, ".", &["query", "owner", "README.md"]);
    assert_eq!(
        String::from_utf8_lossy(&nobody.stdout),
        "README.md: owned by no target\n"
    );
    let outside = once(root, ".", &["query", "owner", "../x"]);
    assert_eq!(outside.status.code(), Some(2), "{}", text(&outside));
}

#[test]
fn run_affected_runs_the_capability_of_the_affected_targets_only() {
    let dir = repository();
    let root = dir.path();
    let nothing = once(root, ".", &["run", "--affected", "test"]);
    assert_eq!(nothing.status.code(), Some(0), "{}", text(&nothing));
    assert!(
        String::from_utf8_lossy(&nothing.stderr).contains("nothing to run"),
        "{}",
        text(&nothing)
    );

    write(root, "lib/src/a.rs", "fn a() { 2; }\n");
    let ran = once(root, ".", &["run", "--affected", "test"]);
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran));
    let stderr = String::from_utf8_lossy(&ran.stderr);
    for action in ["lib:test", "app:test"] {
        assert!(stderr.contains(&format!("ok {action}")), "{stderr}");
    }
    assert!(!stderr.contains("docs:test"), "{stderr}");

    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "lib"]);
    let since = once(root, ".", &["run", "--affected", "HEAD~1", "build"]);
    let stderr = String::from_utf8_lossy(&since.stderr);
    assert_eq!(since.status.code(), Some(0), "{stderr}");
    for action in ["lib:build", "app:build"] {
        assert!(stderr.contains(action), "{stderr}");
    }
    assert!(!stderr.contains(":test"), "{stderr}");
}

#[test]
fn the_mcp_tool_answers_the_same_value() {
    let dir = repository();
    let root = dir.path();
    write(root, "lib/src/a.rs", "fn a() { 3; }\n");
    let mut command = Command::new(once_binary());
    command.arg("--workspace").arg(root).arg("mcp");
    isolate(&mut command, root);
    let mut server = Mcp::from_command(command);
    server.initialize();
    let tools = server.tools(1);
    let tool = tools
        .iter()
        .find(|t| t["name"] == "once_query_affected")
        .expect("the tool is listed without any gate");
    assert_eq!(tool["annotations"]["readOnlyHint"], true);

    let reply = server.call(2, "once_query_affected", json!({"capability": "test"}));
    let value = reply["result"]["structuredContent"]["result"].clone();
    assert_eq!(actions(&value), vec!["lib:test", "app:test"], "{reply}");
    let cli = json(&once(
        root,
        ".",
        &["query", "affected", "--capability", "test", "--json"],
    ));
    assert_eq!(value, cli);

    let named = server.call(
        3,
        "once_query_affected",
        json!({"files": ["docs/index.md"]}),
    );
    let value = &named["result"]["structuredContent"]["result"];
    assert_eq!(actions(value), vec!["docs:test"], "{named}");

    let refused = server.call(4, "once_query_affected", json!({"files": ["../x"]}));
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let both = server.call(
        5,
        "once_query_affected",
        json!({"files": ["a"], "since": "HEAD"}),
    );
    assert_eq!(both["result"]["isError"], true, "{both}");
    let unknown = server.call(6, "once_query_affected", json!({"since": "nope"}));
    assert_eq!(unknown["result"]["isError"], true, "{unknown}");
    let message = unknown["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(message.contains("`nope`"), "{message}");
}

/// Nested folders, a target at the root, `!` exclusions, `//` globs, outputs, and a dependent
/// with a capability its dependency lacks.
const AGREEMENT: &str = r#"
[targets.root]
kind = "command"
[targets.root.capabilities.check]
command = "true"

[targets.lib]
kind = "command"
path = "lib"
[targets.lib.capabilities.build]
command = "true"
inputs = ["src/**", "!src/gen/**", "//shared.lock"]
outputs = ["out/**"]
[targets.lib.capabilities.test]
command = "true"
inputs = ["src/**", "tests/**"]
deps = [":build"]

[targets.inner]
kind = "command"
path = "lib/inner"
[targets.inner.capabilities.build]
command = "true"

[targets.app]
kind = "command"
path = "app"
deps = ["lib"]
[targets.app.capabilities.build]
command = "true"
outputs = ["dist/**"]
[targets.app.capabilities.test]
command = "true"
[targets.app.capabilities.lint]
command = "true"

[targets.e2e]
kind = "command"
path = "e2e"
[targets.e2e.capabilities.test]
command = "true"
deps = ["app:build"]
"#;

/// The actions a run ran (not replayed from the cache), from its progress lines.
fn ran(output: &Output) -> Vec<String> {
    assert_eq!(output.status.code(), Some(0), "{}", text(output));
    let mut ran: Vec<String> = String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter_map(
            |line| match line.split_whitespace().collect::<Vec<_>>()[..] {
                ["ok", action] => Some(action.to_owned()),
                _ => None,
            },
        )
        .collect();
    ran.sort();
    ran
}

#[test]
fn the_affected_actions_are_exactly_those_whose_cache_key_changed() {
    let dir = TempDir::new();
    let root = dir.path();
    write(root, "once.toml", AGREEMENT);
    for file in [
        "lib/src/a.rs",
        "lib/src/gen/g.rs",
        "lib/tests/t.rs",
        "lib/out/built.txt",
        "lib/inner/x.txt",
        "app/main.rs",
        "app/dist/app.js",
        "e2e/spec.txt",
        "shared.lock",
        "README.md",
    ] {
        write(root, file, "first\n");
    }
    let all = [
        "run",
        "root:check",
        "lib:build",
        "lib:test",
        "inner:build",
        "app:build",
        "app:test",
        "app:lint",
        "e2e:test",
    ];
    assert_eq!(ran(&once(root, ".", &all)).len(), 8);
    let mut sizes: Vec<(&str, usize)> = Vec::new();
    for file in [
        "lib/src/a.rs",
        "lib/src/gen/g.rs",
        "lib/tests/t.rs",
        "lib/out/built.txt",
        "lib/inner/x.txt",
        "app/main.rs",
        "app/dist/app.js",
        "e2e/spec.txt",
        "shared.lock",
        "README.md",
    ] {
        write(root, file, &format!("changed {file}\n"));
        let answer = json(&once(
            root,
            ".",
            &[
                "query", "affected", "--files", file, "--limit", "200", "--json",
            ],
        ));
        let mut affected: Vec<String> = actions(&answer).into_iter().map(String::from).collect();
        affected.sort();
        assert_eq!(
            affected,
            ran(&once(root, ".", &all)),
            "after changing `{file}`"
        );
        sizes.push((file, affected.len()));
    }
    // The comparison is not between two empty sets.
    assert_eq!(
        sizes,
        [
            ("lib/src/a.rs", 7),
            ("lib/src/gen/g.rs", 4),
            ("lib/tests/t.rs", 4),
            ("lib/out/built.txt", 0),
            ("lib/inner/x.txt", 2),
            ("app/main.rs", 5),
            ("app/dist/app.js", 0),
            ("e2e/spec.txt", 2),
            ("shared.lock", 7),
            ("README.md", 1),
        ]
    );
}

/// A branch like dagger/dagger's: thousands of changed files (committed, edited and untracked)
/// under a few targets, a handful of affected actions. The first page, through the MCP server
/// and through the command line, carries every action and stays far under 40 KB.
#[test]
fn the_first_page_names_every_action_when_thousands_of_files_changed() {
    let dir = repository();
    let root = dir.path();
    // Long, deep paths, as a generated SDK has them: 2,500 under `lib`, 400 under `docs`,
    // 300 nobody owns.
    for i in 0..2_500 {
        write(
            root,
            &format!(
                "lib/src/generated/engine/schema/v{}/resolvers/type_{i:05}_resolver.rs",
                i % 7
            ),
            "\n",
        );
    }
    for i in 0..400 {
        write(root, &format!("docs/versioned/page_{i:04}.md"), "\n");
    }
    for i in 0..300 {
        write(root, &format!("vendor/module_{i:03}/file.c"), "\n");
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "generated"]);
    write(root, "lib/tests/t.rs", "edited\n");
    write(root, "untracked/new_file.txt", "\n");

    let mut command = Command::new(once_binary());
    command.arg("--workspace").arg(root).arg("mcp");
    isolate(&mut command, root);
    let mut server = Mcp::from_command(command);
    server.initialize();
    server.send(
        &json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "once_query_affected", "arguments": {"since": "HEAD~1"}}
        })
        .to_string(),
    );
    let line = server.recv_line_within(std::time::Duration::from_secs(60));
    assert!(line.len() < 40 * 1024, "{} bytes", line.len());
    let reply: Value = serde_json::from_str(&line).expect("a JSON line");
    let value = &reply["result"]["structuredContent"]["result"];
    assert_eq!(value["files_total"], 3_202, "{value}");
    assert_eq!(value["unowned_total"], 301, "{value}");
    assert_eq!(
        actions(value),
        vec![
            "docs:test",
            "lib:build",
            "lib:test",
            "app:build",
            "app:test"
        ],
        "{value}"
    );
    assert_eq!(value["actions_total"], 5, "{value}");
    assert_eq!(value["next_cursor"], Value::Null, "{value}");
    assert_eq!(
        value["owners"],
        json!([{"target": "lib", "files": 2_501}, {"target": "docs", "files": 400}])
    );
    assert_eq!(value["files"], json!([]));

    // The command line prints the same value, and its text leads with the actions.
    let cli = json(&once(
        root,
        ".",
        &["query", "affected", "--since", "HEAD~1", "--json"],
    ));
    assert_eq!(&cli, value);
    let text = once(root, ".", &["query", "affected", "--since", "HEAD~1"]);
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(stdout.starts_with("5 affected actions\n"), "{stdout}");
    assert!(
        stdout.ends_with(
            "3202 changed files, 301 owned by no target\n  owned by lib (2501), docs (400)\n"
        ),
        "{stdout}"
    );

    // Every file with its owners comes on request, after the actions, a page at a time.
    let mut cursor = Value::Null;
    let (mut rows, mut pages) = (0, 0);
    loop {
        let mut arguments = json!({"since": "HEAD~1", "ownership": "all", "limit": 200});
        if !cursor.is_null() {
            arguments["cursor"] = cursor.clone();
        }
        let reply = server.call(10 + pages, "once_query_affected", arguments);
        let page = &reply["result"]["structuredContent"]["result"];
        if pages == 0 {
            assert_eq!(actions(page).len(), 5, "{page}");
        }
        rows += page["files"].as_array().expect("files").len();
        pages += 1;
        cursor = page["next_cursor"].clone();
        if cursor.is_null() || pages > 100 {
            break;
        }
    }
    assert_eq!(rows, 3_202);
}
