//! `once run --tag/--name`, the words after `--`, and the same through MCP `once_run`.

use serde_json::{Value, json};

use crate::run::{report, run};
use crate::support::{Mcp, PATIENCE, TempDir};

const TAGGED: &str = r#"
[targets.api-users]
kind = "command"
path = "api-users"
tags = ["backend"]
[targets.api-users.capabilities.test]
command = "echo api-users"

[targets.api-orders]
kind = "command"
path = "api-orders"
tags = ["backend", "db"]
[targets.api-orders.capabilities.test]
command = "echo api-orders"

[targets.web]
kind = "command"
path = "web"
tags = ["frontend"]
[targets.web.capabilities.test]
command = "printf '[%s]\n' > ../words"
"#;

fn workspace(manifest: &str) -> TempDir {
    let ws = crate::run::workspace(manifest);
    for folder in ["api-users", "api-orders", "web"] {
        std::fs::create_dir_all(ws.path().join(folder)).unwrap();
    }
    ws
}

fn actions(output: &std::process::Output) -> Vec<String> {
    let mut names: Vec<String> = report(output)["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .map(|a| a["action"].as_str().expect("a name").to_owned())
        .collect();
    names.sort();
    names
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn tag_and_name_select_and_a_typo_or_an_empty_selection_says_so() {
    let ws = workspace(TAGGED);
    let out = run(ws.path(), &["--json", "--tag", "backend", "test"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(actions(&out), ["api-orders:test", "api-users:test"]);
    let out = run(
        ws.path(),
        &["--json", "--tag", "backend", "--name", "*-users", "test"],
    );
    assert_eq!(actions(&out), ["api-users:test"]);
    // Named actions are added to the selection.
    let out = run(
        ws.path(),
        &["--json", "--name", "api-o*", "test", "web:test"],
    );
    assert_eq!(actions(&out), ["api-orders:test", "web:test"]);

    let out = run(ws.path(), &["--tag", "frontend", "--name", "api-*", "test"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stderr(&out),
        "nothing to run: no target with tag `frontend`, named like `api-*` has the capability `test`; \
         none has any capability; to add it, declare `[targets.NAME.capabilities.test]` with a \
         `command` in `once.toml`\n"
    );
    let out = run(ws.path(), &["--tag", "bakend", "test"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        "error: no target has the tag `bakend`; did you mean `backend`?\n"
    );
    let out = run(ws.path(), &["--tag", "backend"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("need the capability to run"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn words_after_the_double_dash_reach_the_last_named_action_quoted() {
    let ws = workspace(TAGGED);
    let words = ["--grep", "check out", "'; rm -rf /'", "$(x)"];
    let mut args = vec!["--json", "api-users:test", "web:test", "--"];
    args.extend(words);
    let out = run(ws.path(), &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let expected: String = words.iter().map(|w| format!("[{w}]\n")).collect();
    assert_eq!(
        std::fs::read_to_string(ws.path().join("words")).unwrap(),
        expected
    );
    // Other words, another key: it runs again rather than replaying.
    let out = run(ws.path(), &["--json", "web:test", "--", "--grep", "cart"]);
    assert_eq!(report(&out)["actions"][0]["cached"], false);
    assert_eq!(
        std::fs::read_to_string(ws.path().join("words")).unwrap(),
        "[--grep]\n[cart]\n"
    );
    for refused in [
        &["--all", "test", "--", "x"][..],
        &["--tag", "backend", "test", "--", "x"][..],
    ] {
        let out = run(ws.path(), refused);
        assert_eq!(out.status.code(), Some(2), "{refused:?}");
        assert!(stderr(&out).contains("the words after `--` go to the last named action"));
    }
}

fn outcome(reply: &Value) -> (String, String) {
    let structured = &reply["result"]["structuredContent"];
    (
        structured["outcome"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        structured["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

#[test]
fn mcp_once_run_selects_by_tag_and_passes_args() {
    let ws = workspace(TAGGED);
    let mut mcp = Mcp::spawn(ws.path(), &["--allow-run"]);
    mcp.initialize();
    let reply = mcp.call(1, "once_run", json!({"tag": "db", "capability": "test"}));
    assert_eq!(outcome(&reply).0, "done", "{reply}");
    let report = &reply["result"]["structuredContent"]["result"];
    assert_eq!(report["actions"][0]["action"], "api-orders:test", "{reply}");
    assert_eq!(report["counts"]["total"], 1);

    let reply = mcp.call(
        2,
        "once_run",
        json!({"name": "mobile-*", "capability": "test"}),
    );
    assert_eq!(
        outcome(&reply),
        (
            "none".to_owned(),
            "nothing to run: no target named like `mobile-*` has the capability `test`; none has any \
             capability; to add it, declare `[targets.NAME.capabilities.test]` with a `command` \
             in `once.toml`"
                .to_owned()
        )
    );
    let reply = mcp.call(
        3,
        "once_run",
        json!({"tag": "bakend", "capability": "test"}),
    );
    let (word, message) = outcome(&reply);
    assert_eq!(word, "refused");
    assert!(message.contains("did you mean `backend`?"), "{message}");
    let reply = mcp.call(4, "once_run", json!({"tag": "db"}));
    assert_eq!(outcome(&reply).0, "refused");

    let reply = mcp.call(
        5,
        "once_run",
        json!({"target": "web:test", "args": ["--grep", "a b", "$(x)"]}),
    );
    assert_eq!(outcome(&reply).0, "done", "{reply}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("words")).unwrap(),
        "[--grep]\n[a b]\n[$(x)]\n"
    );
    let reply = mcp.call(
        6,
        "once_run",
        json!({"tag": "db", "capability": "test", "args": ["x"]}),
    );
    let (word, message) = outcome(&reply);
    assert_eq!(word, "refused");
    assert!(message.contains("no `target` is named"), "{message}");
    mcp.close_stdin();
    assert_eq!(mcp.wait(PATIENCE).0, Some(0));
}

#[test]
fn a_retried_success_is_said_in_the_summary_line_and_the_report() {
    let ws = workspace(
        r#"
[targets.web]
kind = "command"
path = "web"
[targets.web.capabilities.e2e]
command = "n=$(cat ../count 2>/dev/null || echo 0); echo $((n + 1)) > ../count; [ $n -ge 1 ]"
retries = 1
"#,
    );
    let out = run(ws.path(), &["--json", "web:e2e"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("succeeded: 1 action (1 ran, 1 retried, 0 cached"),
        "{}",
        stderr(&out)
    );
    let report = report(&out);
    assert_eq!(report["actions"][0]["retried"], 1);
    assert_eq!(report["counts"]["retried"], 1);
}
