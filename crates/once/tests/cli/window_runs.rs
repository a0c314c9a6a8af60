//! What the window says about runs, read through its own API as the page reads it: each run
//! named by what was asked and who asked, and a target that never started shown as skipped
//! with the reason, not as "not run yet".

use serde_json::{Value, json};

use crate::support::{Mcp, Serve, TempDir, Test};
use crate::window::Page;

const MANIFEST: &str = "[targets.core]\nkind = \"command\"\n\n[targets.core.capabilities.build]\ncommand = \"echo broken; exit 3\"\n\n[targets.web]\nkind = \"command\"\ndeps = [\"core\"]\n\n[targets.web.capabilities.build]\ncommand = \"true\"\n\n[targets.docs]\nkind = \"command\"\n\n[targets.docs.capabilities.build]\ncommand = \"true\"\n";

fn target<'a>(graph: &'a Value, name: &str) -> &'a Value {
    graph["targets"]
        .as_array()
        .and_then(|targets| targets.iter().find(|t| t["name"] == name))
        .unwrap_or_else(|| panic!("no target {name} in {graph}"))
}

#[test]
fn runs_are_named_by_their_request_and_asker_and_skipped_targets_say_why() {
    let test = Test::new().manifest(MANIFEST);
    let state = TempDir::new();
    let serve = Serve::start(test.root(), state.path(), &["--allow-run"]);
    let page = Page::login(&serve);

    // From a terminal: `web` never starts, as `core` fails first.
    let terminal = Test::new()
        .args(["-C", &test.root().display().to_string(), "run", "web"])
        .run();
    assert_eq!(terminal.code(), 1, "{}", terminal.stderr());
    // From an agent.
    let mut client = Mcp::attach(state.path(), Some(test.root()));
    client.initialize();
    let ran = client.call(
        1,
        "once_run",
        json!({"target": "docs", "capability": "build"}),
    );
    assert!(ran["result"].is_object(), "{ran}");

    let graph = page.get("/api/graph").json();
    let web = target(&graph, "web");
    assert_eq!(web["status"], "skipped", "{web}");
    assert_eq!(web["reason"], "`core:build` failed", "{web}");
    assert_eq!(target(&graph, "core")["status"], "failed");
    assert_eq!(target(&graph, "docs")["status"], "succeeded");

    let list = page.post("/api/tool/once_query_runs", &json!({}));
    assert_eq!(list.status, 200, "{}", list.body);
    let runs = list.json()["result"]["runs"].clone();
    let asked: Vec<(&str, &str)> = runs
        .as_array()
        .expect("runs")
        .iter()
        .map(|run| {
            (
                run["request"].as_str().unwrap_or("?"),
                run["asked_by"].as_str().unwrap_or("?"),
            )
        })
        .collect();
    assert_eq!(
        asked,
        [("docs:build", "cli-test/0"), ("web", "terminal")],
        "{runs}"
    );
    let id = runs[1]["run_id"].as_str().expect("an id");
    let page_of = page.post("/api/tool/once_query_runs", &json!({"run_id": id}));
    let answer = page_of.json()["result"].clone();
    assert_eq!(answer["request"], "web", "{answer}");
    let skipped = answer["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .find(|a| a["action"] == "web:build")
        .expect("web:build");
    assert_eq!(skipped["skipped_because"], "`core:build` failed");
}
