//! Every structured answer of every tool matches that tool's own output schema, in every outcome
//! it can have, checked by a real JSON Schema 2020-12 validator (`boon`).
//!
//! The official SDKs check `structuredContent` against the `outputSchema` a tool lists (the
//! TypeScript SDK whenever it is present, `isError` or not) and throw when it does not match, so
//! one answer that breaks its schema makes a tool unusable in every host built on them. The
//! cases are real calls against a real workspace: runs that succeed, fail, wait and are
//! cancelled, a Python evaluator, memory, examples and change sets, every gate open, and the
//! window tool of `once serve`. The test walks the catalog the server lists: a tool without a
//! case, or one whose outcomes were not all seen, fails it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Instant;

use serde_json::{Value, json};

use crate::support::{Mcp, PATIENCE, Serve, TempDir, Test};
use crate::window::{Events, Page};

const MANIFEST: &str = r#"
[targets.ok]
kind = "command"
tags = ["fine"]
[targets.ok.capabilities.build]
command = "echo built"

[targets.bad]
kind = "command"
[targets.bad.capabilities.build]
command = "echo about to fail; exit 3"

[targets.slow]
kind = "command"
[targets.slow.capabilities.build]
command = "echo waiting; while [ ! -e release ]; do sleep 0.05; done"
deadline = "2m"
cache = false

[targets.py]
kind = "command"
[targets.py.evaluator]
language = "python"
"#;

/// What each tool can answer: an acting tool's outcome words, and for a query tool `value` (a
/// `structuredContent.result`) or `error` (a tool error). Every tool the server lists must be
/// here, and the test must see each of these.
const OUTCOMES: &[(&str, &[&str])] = &[
    ("once_query_workspace", &["value", "error"]),
    ("once_query_targets", &["value", "error"]),
    ("once_query_target", &["value", "error"]),
    ("once_query_schema", &["value", "error"]),
    ("once_query_graph", &["value", "error"]),
    ("once_query_affected", &["value", "error"]),
    ("once_query_memory", &["value", "error"]),
    ("once_query_runs", &["value", "error"]),
    ("once_query_hashes", &["value", "error"]),
    ("once_change_set_propose", &["done", "refused", "none"]),
    ("once_remember", &["done", "refused"]),
    ("once_forget", &["done", "refused", "none"]),
    ("once_materialize_example", &["done", "refused", "none"]),
    ("once_run", &["done", "refused", "problem", "none"]),
    ("once_cancel", &["done", "refused", "none"]),
    ("once_eval", &["done", "refused", "busy", "problem", "none"]),
    ("once_eval_reset", &["done", "refused", "none"]),
    ("once_window_show", &["done", "refused", "none"]),
];

/// The output schemas of the listed tools, compiled, and the outcomes seen of each.
struct Answers {
    schemas: boon::Schemas,
    compiled: BTreeMap<String, boon::SchemaIndex>,
    seen: BTreeMap<String, BTreeSet<String>>,
}

impl Answers {
    fn new() -> Answers {
        Answers {
            schemas: boon::Schemas::new(),
            compiled: BTreeMap::new(),
            seen: BTreeMap::new(),
        }
    }

    /// Compiles the `outputSchema` of every tool in `tools`, as a 2020-12 schema (the MCP
    /// default); a tool listed without one fails the test.
    fn learn(&mut self, tools: &[Value]) {
        let mut compiler = boon::Compiler::new();
        compiler.set_default_draft(boon::Draft::V2020_12);
        let mut added = Vec::new();
        for tool in tools {
            let name = tool["name"].as_str().expect("a tool name").to_owned();
            if self.compiled.contains_key(&name) {
                continue;
            }
            let schema = tool["outputSchema"].clone();
            assert!(schema.is_object(), "{name} lists no outputSchema");
            let url = format!("https://once.invalid/tools/{name}.json");
            compiler
                .add_resource(&url, schema)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            added.push((name, url));
        }
        for (name, url) in added {
            let index = compiler
                .compile(&url, &mut self.schemas)
                .unwrap_or_else(|e| {
                    panic!("the outputSchema of {name} is not a valid schema: {e:#}")
                });
            self.compiled.insert(name, index);
        }
    }

    /// Checks the reply to a call of `tool` the way an SDK client does, records its outcome, and
    /// returns its `structuredContent` (`null` for a tool error without one).
    fn check(&mut self, tool: &str, reply: &Value) -> Value {
        assert!(
            reply["error"].is_null(),
            "{tool}: a protocol error: {reply}"
        );
        let result = &reply["result"];
        let is_error = result["isError"] == true;
        let structured = result["structuredContent"].clone();
        let word = if structured.is_null() {
            // The SDKs reject a success without structured content from a tool with a schema.
            assert!(
                is_error,
                "{tool}: a success without structuredContent: {reply}"
            );
            "error".to_owned()
        } else {
            let index = *self
                .compiled
                .get(tool)
                .unwrap_or_else(|| panic!("{tool} is not listed"));
            if let Err(error) = self.schemas.validate(&structured, index) {
                panic!(
                    "{tool}: structuredContent does not match its outputSchema: {error:#}\n{structured:#}"
                );
            }
            match structured["outcome"].as_str() {
                Some(word) => word.to_owned(),
                None if is_error => "error".to_owned(),
                None => "value".to_owned(),
            }
        };
        self.seen.entry(tool.to_owned()).or_default().insert(word);
        structured
    }

    /// Calls `tool` and checks the answer; returns its `structuredContent`.
    fn call(&mut self, server: &mut Mcp, id: u64, tool: &str, arguments: Value) -> Value {
        let reply = server.call(id, tool, arguments);
        self.check(tool, &reply)
    }

    /// Every listed tool has a row in [`OUTCOMES`], and each outcome of the row was seen.
    fn assert_complete(&self, listed: &[String]) {
        let expected: BTreeMap<&str, &[&str]> = OUTCOMES.iter().copied().collect();
        for name in listed {
            let Some(words) = expected.get(name.as_str()) else {
                panic!("{name} has no row in OUTCOMES: add its outcomes and a case for each");
            };
            let seen = self.seen.get(name).cloned().unwrap_or_default();
            let wanted: BTreeSet<String> = words.iter().map(|w| (*w).to_owned()).collect();
            assert_eq!(seen, wanted, "the outcomes of {name} that were exercised");
        }
        for (name, _) in OUTCOMES {
            assert!(
                listed.iter().any(|l| l == name),
                "{name} is in OUTCOMES but not listed"
            );
        }
    }
}

fn names(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .map(|t| t["name"].as_str().expect("a name").to_owned())
        .collect()
}

/// The reply with `id`, skipping notifications and other replies.
fn reply_to(server: &mut Mcp, id: u64) -> Value {
    let end = Instant::now() + PATIENCE;
    loop {
        assert!(Instant::now() < end, "no reply to {id} in time");
        let message = server.recv();
        if message["id"] == id {
            return message;
        }
    }
}

fn send_call(server: &mut Mcp, id: u64, tool: &str, arguments: Value) {
    server.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}})
        .to_string(),
    );
}

/// Polls for `path`, bounded by [`PATIENCE`].
fn wait_for_file(path: &Path) {
    let end = Instant::now() + PATIENCE;
    while !path.exists() {
        assert!(Instant::now() < end, "`{}` never appeared", path.display());
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The cases of the query tools: a value from each, and a tool error from each (an argument its
/// input schema does not have).
fn query_cases(answers: &mut Answers, server: &mut Mcp, listed: &[String], run_id: &str) {
    let values = [
        ("once_query_workspace", json!({})),
        ("once_query_targets", json!({})),
        ("once_query_targets", json!({"limit": 1})),
        ("once_query_target", json!({"name": "ok"})),
        ("once_query_schema", json!({})),
        ("once_query_schema", json!({"kind": "command"})),
        ("once_query_graph", json!({"mode": "deps", "target": "ok"})),
        ("once_query_target", json!({"name": "a", "limit": 1})),
        ("once_query_graph", json!({"mode": "deps", "target": "b"})),
        (
            "once_query_graph",
            json!({"mode": "dependents", "target": "a"}),
        ),
        (
            "once_query_graph",
            json!({"mode": "order", "target": "ok:build"}),
        ),
        ("once_query_affected", json!({"files": ["once.toml"]})),
        ("once_query_memory", json!({})),
        ("once_query_memory", json!({"query": "schema"})),
        ("once_query_runs", json!({})),
        ("once_query_runs", json!({"run_id": run_id})),
        (
            "once_query_runs",
            json!({"run_id": run_id, "action": "bad:build"}),
        ),
        (
            "once_query_hashes",
            json!({"paths": ["once.toml", "missing.txt"]}),
        ),
    ];
    let mut id = 500;
    for (tool, arguments) in values {
        id += 1;
        let structured = answers.call(server, id, tool, arguments.clone());
        assert!(
            structured.get("result").is_some(),
            "{tool} {arguments}: {structured}"
        );
    }
    for tool in listed.iter().filter(|t| t.starts_with("once_query_")) {
        id += 1;
        answers.call(server, id, tool, json!({"no_such_argument": 1}));
    }
    id += 1;
    answers.call(server, id, "once_query_target", json!({"name": "nope"}));
    // The edges that order nothing are in the answers, with their kinds, and a target's edges
    // page on from its cursor.
    id += 1;
    let first = answers.call(
        server,
        id,
        "once_query_target",
        json!({"name": "a", "limit": 1}),
    );
    let inferred = &first["result"]["inferred"];
    assert_eq!(inferred["edges_total"], 2, "{first}");
    let cursor = inferred["next_cursor"].clone();
    assert!(cursor.is_string(), "{first}");
    id += 1;
    let second = answers.call(
        server,
        id,
        "once_query_target",
        json!({"name": "a", "limit": 1, "cursor": cursor}),
    );
    let mut kinds: Vec<Value> = [&first, &second]
        .iter()
        .map(|answer| answer["result"]["inferred"]["edges"][0]["kind"].clone())
        .collect();
    kinds.sort_by_key(Value::to_string);
    assert_eq!(kinds, vec![json!("normal"), json!("optional")], "{second}");
    assert!(
        second["result"]["inferred"]["next_cursor"].is_null(),
        "{second}"
    );
    id += 1;
    let deps = answers.call(
        server,
        id,
        "once_query_graph",
        json!({"mode": "deps", "target": "b"}),
    );
    assert_eq!(
        deps["result"]["nodes"],
        json!([{"name": "a", "depth": 1, "kinds": ["dev"], "orders": false}]),
        "{deps}"
    );
    id += 1;
    answers.call(server, id, "once_query_runs", json!({"run_id": "nope"}));
}

fn word(structured: &Value) -> &str {
    structured["outcome"].as_str().unwrap_or("")
}

fn run_cases(answers: &mut Answers, server: &mut Mcp, root: &Path) -> String {
    let done = answers.call(server, 10, "once_run", json!({"target": "ok:build"}));
    assert_eq!(word(&done), "done", "{done}");
    let cached = answers.call(server, 11, "once_run", json!({"target": "ok:build"}));
    assert_eq!(cached["result"]["counts"]["cached"], 1, "{cached}");
    let failed = answers.call(server, 12, "once_run", json!({"target": "bad:build"}));
    assert_eq!(word(&failed), "problem", "{failed}");
    let failed_id = failed["result"]["run_id"]
        .as_str()
        .expect("a run id")
        .to_owned();
    let refused = answers.call(server, 13, "once_run", json!({"target": "nope:build"}));
    assert_eq!(word(&refused), "refused", "{refused}");
    let none = answers.call(
        server,
        14,
        "once_run",
        json!({"capability": "test", "tag": "fine"}),
    );
    assert_eq!(word(&none), "none", "{none}");

    // A run that outlasts its call, then is cancelled; cancelling it again finds nothing to do.
    let going = answers.call(
        server,
        15,
        "once_run",
        json!({"target": "slow:build", "wait_seconds": 0}),
    );
    assert_eq!(going["result"]["status"], "running", "{going}");
    let slow_id = going["result"]["run_id"]
        .as_str()
        .expect("a run id")
        .to_owned();
    let cancelled = answers.call(server, 16, "once_cancel", json!({"run_id": slow_id}));
    assert_eq!(word(&cancelled), "done", "{cancelled}");
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    let again = answers.call(server, 17, "once_cancel", json!({"run_id": slow_id}));
    assert_eq!(word(&again), "none", "{again}");
    answers.call(server, 18, "once_cancel", json!({"run_id": "nope"}));

    // A run cut short by its deadline, and one the agent released: both still match.
    let released = root.join("release");
    std::fs::write(&released, "").expect("writes the release file");
    let ended = answers.call(server, 19, "once_run", json!({"target": "slow:build"}));
    assert_eq!(word(&ended), "done", "{ended}");
    std::fs::remove_file(&released).expect("removes the release file");
    let timed_out = answers.call(
        server,
        20,
        "once_run",
        json!({"target": "slow:build", "deadline": "1s"}),
    );
    assert_eq!(timed_out["result"]["status"], "timed_out", "{timed_out}");
    failed_id
}

fn eval_cases(answers: &mut Answers, server: &mut Mcp, root: &Path) {
    let done = answers.call(
        server,
        30,
        "once_eval",
        json!({"target": "py", "code": "6 * 7"}),
    );
    assert_eq!(done["result"]["value"], "42", "{done}");
    let raised = answers.call(
        server,
        31,
        "once_eval",
        json!({"target": "py", "code": "1/0"}),
    );
    assert_eq!(word(&raised), "problem", "{raised}");
    answers.call(
        server,
        32,
        "once_eval",
        json!({"target": "ok", "code": "1"}),
    );
    let blank = answers.call(
        server,
        33,
        "once_eval",
        json!({"target": "py", "code": "  "}),
    );
    assert_eq!(word(&blank), "none", "{blank}");

    // A second call while the first evaluates is `busy`.
    let started = root.join("evaluating");
    let go_on = root.join("go-on");
    let code = format!(
        "import os, time\nopen({:?}, 'w').close()\nwhile not os.path.exists({:?}): time.sleep(0.02)\n'finished'",
        started.display().to_string(),
        go_on.display().to_string()
    );
    send_call(
        server,
        34,
        "once_eval",
        json!({"target": "py", "code": code}),
    );
    wait_for_file(&started);
    let busy = answers.call(
        server,
        35,
        "once_eval",
        json!({"target": "py", "code": "1"}),
    );
    assert_eq!(word(&busy), "busy", "{busy}");
    std::fs::write(&go_on, "").expect("writes");
    let finished = reply_to(server, 34);
    answers.check("once_eval", &finished);

    let reset = answers.call(server, 36, "once_eval_reset", json!({"target": "py"}));
    assert_eq!(word(&reset), "done", "{reset}");
    let nothing = answers.call(server, 37, "once_eval_reset", json!({"target": "py"}));
    assert_eq!(word(&nothing), "none", "{nothing}");
    answers.call(server, 38, "once_eval_reset", json!({"target": "nope"}));
}

fn edit_cases(answers: &mut Answers, server: &mut Mcp) {
    let created = answers.call(
        server,
        40,
        "once_remember",
        json!({"title": "Schemas", "body": "Answers match their schemas", "kind": "convention"}),
    );
    assert_eq!(word(&created), "done", "{created}");
    let id = created["result"]["id"].as_str().expect("an id").to_owned();
    let revision = created["result"]["revision"].as_u64().expect("a revision");
    let updated = answers.call(
        server,
        41,
        "once_remember",
        json!({"id": id, "revision": revision, "body": "Every answer matches"}),
    );
    assert_eq!(word(&updated), "done", "{updated}");
    let stale = answers.call(
        server,
        42,
        "once_remember",
        json!({"id": id, "revision": revision, "body": "A stale edit"}),
    );
    assert_eq!(word(&stale), "refused", "{stale}");
    answers.call(server, 43, "once_query_memory", json!({"id": id}));
    let wrong = answers.call(
        server,
        44,
        "once_forget",
        json!({"id": id, "revision": revision}),
    );
    assert_eq!(word(&wrong), "refused", "{wrong}");
    let forgot = answers.call(
        server,
        45,
        "once_forget",
        json!({"id": id, "revision": revision + 1}),
    );
    assert_eq!(word(&forgot), "done", "{forgot}");
    let gone = answers.call(
        server,
        46,
        "once_forget",
        json!({"id": id, "revision": revision + 1}),
    );
    assert_eq!(word(&gone), "none", "{gone}");

    let arguments = json!({"example": "python-project", "into": "starter"});
    let written = answers.call(server, 47, "once_materialize_example", arguments.clone());
    assert_eq!(word(&written), "done", "{written}");
    let same = answers.call(server, 48, "once_materialize_example", arguments);
    assert_eq!(word(&same), "none", "{same}");
    answers.call(
        server,
        49,
        "once_materialize_example",
        json!({"example": "nope"}),
    );

    let proposed = answers.call(
        server,
        50,
        "once_change_set_propose",
        json!({"title": "A note", "rationale": "To show a change set",
            "changes": [{"action": "create", "path": "NOTE.md", "content": "note\n"}]}),
    );
    assert_eq!(word(&proposed), "done", "{proposed}");
    let empty = answers.call(
        server,
        51,
        "once_change_set_propose",
        json!({"title": "Nothing", "rationale": "Empty", "changes": []}),
    );
    assert_eq!(word(&empty), "none", "{empty}");
    answers.call(
        server,
        52,
        "once_change_set_propose",
        json!({"title": "Escape", "rationale": "Outside",
            "changes": [{"action": "create", "path": "../outside.txt", "content": "x\n"}]}),
    );
}

/// Every gated tool, called on a server started without its flag: a refusal that matches the
/// schema the open server lists for it.
fn closed_gate_cases(answers: &mut Answers, root: &Path, open: &[String]) {
    let mut server = Mcp::spawn(root, &[]);
    server.initialize();
    let listed = names(&server.tools(1));
    let mut id = 900;
    for tool in open.iter().filter(|t| !listed.contains(t)) {
        id += 1;
        let refused = answers.call(&mut server, id, tool, json!({}));
        assert_eq!(word(&refused), "refused", "{tool}: {refused}");
    }
    assert!(id > 900, "no tool is gated");
}

#[test]
fn every_answer_of_every_tool_matches_its_output_schema() {
    // Beside the declared targets, an npm workspace whose two packages depend on each other:
    // one of the edges would close a cycle and orders nothing, as the graph answers must say.
    let test = Test::new()
        .manifest(MANIFEST)
        .file(
            "package.json",
            r#"{"name": "w", "private": true, "workspaces": ["pkgs/*"]}"#,
        )
        .file(
            "pkgs/a/package.json",
            r#"{"name": "a", "dependencies": {"b": "*"}, "optionalDependencies": {"c": "*"}}"#,
        )
        .file(
            "pkgs/b/package.json",
            r#"{"name": "b", "devDependencies": {"a": "*"}}"#,
        )
        .file("pkgs/c/package.json", r#"{"name": "c"}"#);
    let root = test.root().to_path_buf();
    let mut answers = Answers::new();

    let mut server = Mcp::spawn(&root, &["--allow-edit", "--allow-run"]);
    server.initialize();
    let first = server.request(1, "tools/list", json!({}));
    assert!(
        first["result"]["nextCursor"].is_null(),
        "`once mcp` lists its tools on more than one page"
    );
    let tools = server.tools(1);
    answers.learn(&tools);
    let listed = names(&tools);
    let failed_run = run_cases(&mut answers, &mut server, &root);
    eval_cases(&mut answers, &mut server, &root);
    edit_cases(&mut answers, &mut server);
    query_cases(&mut answers, &mut server, &listed, &failed_run);
    // Every acting tool refuses an argument its input schema does not have, in its schema too.
    for (offset, tool) in listed
        .iter()
        .filter(|t| !t.starts_with("once_query_"))
        .enumerate()
    {
        let refused = answers.call(
            &mut server,
            700 + offset as u64,
            tool,
            json!({"no_such_argument": 1}),
        );
        assert_eq!(word(&refused), "refused", "{tool}: {refused}");
    }
    closed_gate_cases(&mut answers, &root, &listed);
    server.close_stdin();
    assert_eq!(server.wait(PATIENCE).0, Some(0));

    // `once serve` lists the same tools, with the same schemas, and its window tool.
    let state = TempDir::new();
    let serve = Serve::start(&root, state.path(), &["--allow-edit", "--allow-run"]);
    let mut client = Mcp::attach(state.path(), Some(&root));
    client.initialize();
    // Many hosts read only the first page: it must hold every tool, the window's too.
    let first = client.request(1, "tools/list", json!({}));
    assert!(
        first["result"]["nextCursor"].is_null(),
        "`once serve` lists its tools on more than one page"
    );
    let session_tools = client.tools(1);
    for tool in &tools {
        assert!(
            session_tools.contains(tool),
            "`once serve` lists {} differently",
            tool["name"]
        );
    }
    answers.learn(&session_tools);
    let all = names(&session_tools);
    let unseen = answers.call(
        &mut client,
        2,
        "once_window_show",
        json!({"kind": "target", "id": "ok"}),
    );
    assert_eq!(word(&unseen), "none", "{unseen}");
    answers.call(
        &mut client,
        3,
        "once_window_show",
        json!({"kind": "run", "id": "nope"}),
    );
    let page = Page::login(&serve);
    let _events = Events::open(&page);
    let shown = answers.call(
        &mut client,
        4,
        "once_window_show",
        json!({"kind": "target", "id": "ok"}),
    );
    assert_eq!(word(&shown), "done", "{shown}");

    answers.assert_complete(&all);
}
