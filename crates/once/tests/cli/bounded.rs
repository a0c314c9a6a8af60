//! Every answer stays under 40 KB, whatever the size of the workspace: every tool and every mode
//! of `once mcp` on a workspace of 100,000 targets, each reply line measured, and one long list
//! read page by page to prove its cursors return every element exactly once.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Mcp, TempDir};

/// The rule of the product: an answer must fit in about 10,000 tokens.
const LIMIT: usize = 40 * 1024;
/// The bound of the `tools/list` answer, which holds the whole catalog in one page: well under
/// the 96 KiB where a page would end, with room for a host's other servers.
const CATALOG_LIMIT: usize = 72 * 1024;
/// Targets in the root manifest's chain.
const CHAIN: usize = 100_000;
/// Every `FAN`-th chain target also depends on the first one, and `hub` depends on each of them.
const FAN: usize = 20;
/// Member folders, each with a manifest of one target, so the manifest list is long too.
const MEMBERS: usize = 100;
/// Member globs that match nothing: each is a warning, so the diagnostics are long too.
const EMPTY_GLOBS: usize = 40;
/// Loading 100,000 targets in a debug build on a busy machine takes seconds, not milliseconds.
const LOAD_PATIENCE: Duration = Duration::from_secs(60);

fn chain_name(i: usize) -> String {
    format!("t{i:06}")
}

/// A chain `t000000 ← t000001 ← … ← t099999` (long transitive deps, dependents, paths and run
/// orders), a fan (every 20th target depends on `t000000`, and `hub` on every 20th: thousands
/// of direct deps and dependents), member manifests and member globs that match nothing.
fn write_workspace(root: &Path) {
    let mut text = String::with_capacity(CHAIN * 90);
    text.push_str("[workspace]\nname = \"big\"\nmembers = [\"members/*\"");
    for i in 0..EMPTY_GLOBS {
        let _ = write!(text, ", \"nothing-{i:04}/*\"");
    }
    text.push_str("]\n\n");
    for i in 0..CHAIN {
        let mut deps = Vec::new();
        if i > 0 {
            deps.push(chain_name(i - 1));
        }
        if i > 1 && i % FAN == 0 {
            deps.push(chain_name(0));
        }
        let deps: Vec<String> = deps.iter().map(|d| format!("\"{d}\"")).collect();
        let _ = write!(
            text,
            "[targets.{}]\nkind = \"command\"\ndeps = [{}]\ncapabilities.build.command = \"true\"\n\n",
            chain_name(i),
            deps.join(", ")
        );
    }
    let hub: Vec<String> = (0..CHAIN)
        .step_by(FAN)
        .map(|i| format!("\"{}\"", chain_name(i)))
        .collect();
    let _ = write!(
        text,
        "[targets.hub]\nkind = \"command\"\ndeps = [{}]\ncapabilities.build.command = \"true\"\n",
        hub.join(", ")
    );
    std::fs::write(root.join("once.toml"), text).expect("writes the manifest");
    for m in 0..MEMBERS {
        let dir = root.join(format!("members/m{m:03}"));
        std::fs::create_dir_all(&dir).expect("creates a member folder");
        std::fs::write(
            dir.join("once.toml"),
            format!(
                "[targets.m{m:03}]\nkind = \"command\"\ncapabilities.build.command = \"true\"\n"
            ),
        )
        .expect("writes a member manifest");
    }
}

/// The server, with every reply's size recorded.
struct Sized {
    server: Mcp,
    next_id: u64,
    largest: (usize, String),
    /// The largest answer to a tool call.
    largest_call: (usize, String),
    /// Every answer over the limit, reported together at the end.
    oversized: Vec<String>,
}

impl Sized {
    fn request(&mut self, what: &str, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let message =
            json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        let started = std::time::Instant::now();
        self.server.send(&message.to_string());
        let line = self.server.recv_line_within(LOAD_PATIENCE);
        eprintln!("{what}: {} bytes in {:?}", line.len(), started.elapsed());
        // The tool catalog is one fixed-size page (it does not grow with the workspace, and a
        // host that reads only the first page must still see every tool the person enabled).
        let limit = if method == "tools/list" {
            CATALOG_LIMIT
        } else {
            LIMIT
        };
        if line.len() >= limit {
            self.oversized.push(format!("{what}: {} bytes", line.len()));
        }
        if line.len() > self.largest.0 {
            self.largest = (line.len(), what.to_string());
        }
        if method == "tools/call" && line.len() > self.largest_call.0 {
            self.largest_call = (line.len(), what.to_string());
        }
        let reply: Value = serde_json::from_str(&line).expect("a JSON line");
        assert_eq!(reply["id"], self.next_id, "{what}: {line}");
        reply
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let what = format!("{tool} {arguments}");
        let what = what.chars().take(120).collect::<String>();
        let reply = self.request(
            &what,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        );
        reply["result"].clone()
    }

    fn value(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self.call(tool, arguments.clone());
        let text = result.to_string();
        assert_ne!(
            result["isError"],
            true,
            "{tool} {arguments}: {}",
            &text[..text.len().min(600)]
        );
        result["structuredContent"]["result"].clone()
    }
}

#[test]
fn every_answer_stays_under_40_kb_at_100_000_targets() {
    let dir = TempDir::new();
    write_workspace(dir.path());
    let mut s = Sized {
        server: Mcp::spawn(dir.path(), &["--allow-run", "--allow-edit"]),
        next_id: 0,
        largest: (0, String::new()),
        largest_call: (0, String::new()),
        oversized: Vec::new(),
    };
    s.request(
        "initialize",
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "cli-test", "version": "0"}}),
    );
    s.server
        .send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);

    // Every page of the tool list.
    let mut tools = Vec::new();
    let mut pages = 0;
    let mut cursor = Value::Null;
    loop {
        let params = if cursor.is_null() {
            json!({})
        } else {
            json!({"cursor": cursor})
        };
        let page = s.request("tools/list", "tools/list", params);
        pages += 1;
        tools.extend(page["result"]["tools"].as_array().expect("tools").clone());
        cursor = page["result"]["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert!(tools.len() >= 14, "{tools:?}");
    assert_eq!(pages, 1, "the whole catalog is one page");

    let overview = s.value("once_query_workspace", json!({}));
    assert_eq!(
        overview["counts"]["targets"],
        CHAIN + 1 + MEMBERS,
        "{}",
        overview["counts"]
    );

    assert_eq!(overview["manifests_total"], MEMBERS + 1);
    assert_eq!(overview["diagnostics_total"], EMPTY_GLOBS);
    let hub = s.value("once_query_target", json!({"name": "hub"}));
    assert_eq!(hub["deps_total"], CHAIN / FAN, "{}", hub["deps_total"]);
    assert_eq!(hub["deps"].as_array().map(Vec::len), Some(20));
    assert_eq!(hub["capabilities"][0]["deps_total"], CHAIN / FAN);

    let huge = "x".repeat(100_000);
    let last = chain_name(CHAIN - 1);
    let last_build = format!("{last}:build");
    let first = chain_name(0);
    for (tool, arguments) in [
        ("once_query_targets", json!({})),
        ("once_query_targets", json!({"limit": 200})),
        ("once_query_targets", json!({"name": "t0*", "limit": 200})),
        ("once_query_targets", json!({"name": huge})),
        ("once_query_targets", json!({"name": format!("[{huge}")})),
        ("once_query_targets", json!({"kind": huge})),
        (
            "once_query_targets",
            json!({"tag": huge, "capability": huge}),
        ),
        ("once_query_targets", json!({"cursor": huge})),
        ("once_query_target", json!({"name": "hub"})),
        ("once_query_target", json!({"name": first})),
        ("once_query_target", json!({"name": last})),
        ("once_query_target", json!({"name": "t00000"})),
        ("once_query_target", json!({"name": huge})),
        ("once_query_schema", json!({})),
        ("once_query_schema", json!({"kind": "command"})),
        ("once_query_schema", json!({"kind": huge})),
        ("once_query_memory", json!({})),
        ("once_query_memory", json!({"query": huge})),
        ("once_query_memory", json!({"target": huge})),
        ("once_query_runs", json!({})),
        ("once_query_runs", json!({"run_id": huge})),
        ("once_query_workspace", json!({huge.clone(): 1})),
        (huge.as_str(), json!({})),
        ("once_query_graph", json!({"mode": huge, "target": first})),
        // Every target of the chain has the root for its folder: one file is everyone's input.
        ("once_query_affected", json!({"files": ["src/a.rs"]})),
        (
            "once_query_affected",
            json!({"files": ["src/a.rs", "members/m001/x"], "limit": 200}),
        ),
        (
            "once_query_affected",
            json!({"files": ["src/a.rs", "members/m001/x"], "ownership": "all", "limit": 200}),
        ),
        ("once_query_affected", json!({"files": [huge]})),
        (
            "once_query_affected",
            json!({"files": ["a"], "capability": huge}),
        ),
        ("once_query_affected", json!({"since": huge})),
        ("once_query_affected", json!({})),
        ("once_query_hashes", json!({"paths": [huge]})),
        (
            "once_query_hashes",
            json!({"paths": vec![huge.as_str(); 101]}),
        ),
        ("once_query_hashes", json!({"paths": vec!["../x"; 100]})),
        ("once_query_hashes", json!({"paths": vec!["once.toml"; 40]})),
    ] {
        s.call(tool, arguments);
    }
    let affected = s.value("once_query_affected", json!({"files": ["src/a.rs"]}));
    assert_eq!(affected["actions_total"], CHAIN + 1, "{affected}");
    assert_eq!(affected["actions"].as_array().map(Vec::len), Some(50));
    // The summary names the first owners and counts the rest.
    assert_eq!(affected["owners_total"], CHAIN + 1);
    assert_eq!(affected["owners"].as_array().map(Vec::len), Some(20));
    let many_keys: serde_json::Map<String, Value> =
        (0..5_000).map(|i| (format!("k{i:05}"), json!(1))).collect();
    s.call("once_query_targets", Value::Object(many_keys));

    // Every graph mode, from the ends of the chain, the hub and an action, at the largest page.
    for target in [
        "hub",
        "hub:build",
        first.as_str(),
        last.as_str(),
        &last_build,
    ] {
        for mode in ["deps", "dependents"] {
            for transitive in [false, true] {
                let answer = s.value(
                    "once_query_graph",
                    json!({"mode": mode, "target": target, "transitive": transitive, "limit": 200}),
                );
                assert!(answer["total"].is_u64(), "{}", answer["total"]);
            }
        }
    }
    let path = s.value(
        "once_query_graph",
        json!({"mode": "path", "target": last, "to": chain_name(1), "limit": 200}),
    );
    assert_eq!(path["total"], CHAIN - 1, "{}", path["total"]);
    assert!(path["next_cursor"].is_string(), "{}", path["next_cursor"]);
    let page2 = s.value(
        "once_query_graph",
        json!({"mode": "path", "target": last, "to": chain_name(1), "limit": 200,
               "cursor": path["next_cursor"]}),
    );
    let first_page = path["nodes"].as_array().expect("nodes").len();
    assert_eq!(
        page2["nodes"][0]["depth"], first_page,
        "{}",
        page2["nodes"][0]
    );
    s.value(
        "once_query_graph",
        json!({"mode": "path", "target": first, "to": last}),
    );
    let order = s.value(
        "once_query_graph",
        json!({"mode": "order", "target": last_build, "limit": 200}),
    );
    assert_eq!(order["total"], CHAIN, "{}", order["total"]);
    s.value(
        "once_query_graph",
        json!({"mode": "order", "target": "hub", "capability": "build", "limit": 200}),
    );
    s.call(
        "once_query_graph",
        json!({"mode": "order", "target": "hub"}),
    );
    s.call(
        "once_query_graph",
        json!({"mode": "deps", "target": format!("hub:{huge}")}),
    );

    // The tools that act, on the one action that has no dependencies.
    let run = s.value(
        "once_run",
        json!({"target": format!("{first}:build"), "wait_seconds": 60}),
    );
    let run_id = run["run_id"].as_str().expect("a run id").to_string();
    s.value("once_query_runs", json!({"run_id": run_id}));
    s.value(
        "once_query_runs",
        json!({"run_id": run_id, "action": format!("{first}:build")}),
    );
    s.call("once_run", json!({"target": huge}));
    s.call("once_cancel", json!({"run_id": huge}));
    s.call("once_eval", json!({"target": first, "code": "1"}));
    s.call("once_eval_reset", json!({"target": huge}));
    s.call(
        "once_remember",
        json!({"title": "t", "body": "b", "kind": huge}),
    );
    s.call("once_forget", json!({"id": huge}));
    s.call(
        "once_change_set_propose",
        json!({"title": "t", "changes": [{"path": huge, "content": "x"}]}),
    );
    s.call("once_materialize_example", json!({"name": huge}));

    // One long list, page by page: every direct dependent of the first target exactly once.
    let mut seen = BTreeSet::new();
    let mut cursor: Option<String> = None;
    let mut total = None;
    loop {
        let mut arguments = json!({"mode": "dependents", "target": first, "limit": 200});
        if let Some(c) = &cursor {
            arguments["cursor"] = json!(c);
        }
        let page = s.value("once_query_graph", arguments);
        total = total.or(page["total"].as_u64());
        for node in page["nodes"].as_array().expect("nodes") {
            let name = node["name"].as_str().expect("a name").to_string();
            assert!(seen.insert(name.clone()), "{name} came twice");
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    let mut expected: BTreeSet<String> = (FAN..CHAIN).step_by(FAN).map(chain_name).collect();
    expected.insert(chain_name(1));
    expected.insert("hub".into());
    assert_eq!(total, Some(expected.len() as u64));
    assert_eq!(seen, expected);

    assert!(
        s.oversized.is_empty(),
        "answers over {LIMIT} bytes:\n{}",
        s.oversized.join("\n")
    );
    println!(
        "largest answer at {} targets: {} bytes ({}); largest tool answer: {} bytes ({})",
        CHAIN + 1 + MEMBERS,
        s.largest.0,
        s.largest.1,
        s.largest_call.0,
        s.largest_call.1
    );
}
