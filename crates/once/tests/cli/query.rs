//! `once query …` end to end: whole outputs, exit codes, root discovery.

use insta::assert_snapshot;

use crate::support::Test;

const SHOP: &str = r#"
[workspace]
name = "shop"

[targets.proto]
kind = "command"
[targets.proto.capabilities.build]
command = "true"

[targets.core]
kind = "cargo-package"
path = "core"
deps = ["proto"]
tags = ["backend"]

[targets.web]
kind = "npm-package"
path = "web"
deps = ["core"]
"#;

fn shop() -> Test {
    Test::new().manifest(SHOP)
}

#[test]
fn workspace_overview() {
    let run = shop().args(["query", "workspace"]).run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    let value = run.json();
    assert_eq!(value["name"], "shop");
    assert_eq!(value["counts"]["targets"], 3);
    assert_eq!(value["root"], run.json()["root"]);
    assert!(value["diagnostics"].as_array().expect("a list").is_empty());
}

#[test]
fn one_target() {
    let run = shop().args(["query", "target", "core"]).run();
    assert_snapshot!(run.transcript());
}

#[test]
fn unknown_target_names_the_near_match_and_exits_1() {
    let run = shop().args(["query", "target", "wbe"]).run();
    assert_snapshot!(run.transcript());
}

#[test]
fn targets_filtered_by_kind() {
    let run = shop()
        .args(["query", "targets", "--kind", "cargo-package"])
        .run();
    assert_snapshot!(run.transcript());
}

#[test]
fn paging_through_targets_with_the_cursor() {
    let first = shop().args(["query", "targets", "--limit", "2"]).run();
    let page = first.json();
    assert_eq!(page["targets"].as_array().expect("a list").len(), 2);
    let cursor = page["next_cursor"]
        .as_str()
        .expect("a cursor to the second page");
    let second = shop()
        .args(["query", "targets", "--limit", "2", "--cursor", cursor])
        .run();
    assert_eq!(second.code(), 0, "{}", second.transcript());
    let names: Vec<_> = second.json()["targets"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|row| row["name"].as_str().expect("a name").to_string())
        .collect();
    assert_eq!(names, ["web"]);
}

#[test]
fn the_whole_graph_as_json_dot_and_mermaid() {
    let json = shop().args(["query", "graph"]).run();
    assert_eq!(json.code(), 0, "{}", json.transcript());
    let value = json.json();
    assert_eq!(
        value["targets"].as_array().map(Vec::len),
        Some(3),
        "{value}"
    );
    assert_eq!(
        value["edges"],
        serde_json::json!([
            {"from": "core", "to": "proto", "kinds": ["declared"], "orders": true},
            {"from": "web", "to": "core", "kinds": ["declared"], "orders": true},
        ])
    );
    assert_snapshot!(
        "graph_dot",
        shop()
            .args(["query", "graph", "--format", "dot"])
            .run()
            .transcript()
    );
    assert_snapshot!(
        "graph_mermaid",
        shop()
            .args(["query", "graph", "--format", "mermaid"])
            .run()
            .transcript()
    );
    // A walk answers JSON pages; a format with it is a wrong command line.
    let both = shop()
        .args(["query", "graph", "--format", "dot", "deps", "web"])
        .run();
    assert_eq!(both.code(), 2, "{}", both.transcript());
}

#[test]
fn graph_order() {
    let run = shop().args(["query", "graph", "order", "web:build"]).run();
    assert_snapshot!(run.transcript());
}

#[test]
fn graph_path_and_order_are_paged_and_all_joins_the_pages() {
    let names = |value: &serde_json::Value| -> Vec<String> {
        value["nodes"]
            .as_array()
            .expect("nodes")
            .iter()
            .map(|n| n["name"].as_str().expect("a name").to_string())
            .collect()
    };
    for args in [
        &["query", "graph", "path", "web", "proto"][..],
        &["query", "graph", "order", "web:build"],
    ] {
        let first = shop()
            .args(args.iter().copied().chain(["--limit", "1"]))
            .run();
        assert_eq!(first.code(), 0, "{}", first.transcript());
        let first = first.json();
        assert_eq!(first["total"], 3, "{first}");
        let cursor = first["next_cursor"].as_str().expect("a next page");
        let second = shop()
            .args(
                args.iter()
                    .copied()
                    .chain(["--limit", "1", "--cursor", cursor]),
            )
            .run()
            .json();
        let all = shop()
            .args(args.iter().copied().chain(["--all", "--limit", "1"]))
            .run()
            .json();
        assert!(all.get("next_cursor").is_none(), "{all}");
        let joined = names(&all);
        assert_eq!(joined.len(), 3, "{all}");
        assert_eq!(joined[..2], [names(&first), names(&second)].concat()[..]);
    }
}

#[test]
fn graph_dependents_transitive() {
    let run = shop()
        .args(["query", "graph", "dependents", "proto", "--transitive"])
        .run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    let text = run.stdout();
    assert!(
        text.contains("\"core\"") && text.contains("\"web\""),
        "{text}"
    );
}

#[test]
fn schema_of_one_kind() {
    let run = shop().args(["query", "schema", "go-module"]).run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    assert!(run.stdout().contains("\"module\""), "{}", run.stdout());
}

#[test]
fn root_is_found_from_a_subfolder() {
    let run = shop()
        .current_dir("core/src")
        .args(["query", "workspace"])
        .run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    assert_eq!(run.json()["name"], "shop");
}

#[test]
fn workspace_flag_after_the_subcommand() {
    let test = shop();
    let root = test.root().display().to_string();
    let run = Test::new()
        .args(["query", "target", "web", "--workspace", root.as_str()])
        .run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    assert_eq!(run.json()["name"], "web");
}

#[test]
fn no_root_is_a_clear_error() {
    let run = Test::new().args(["query", "workspace"]).run();
    assert_eq!(run.code(), 1);
    let stderr = run.stderr();
    assert!(
        stderr.contains("no `once.toml` and no `Cargo.toml`"),
        "{stderr}"
    );
    assert!(stderr.contains("once init"), "{stderr}");
    assert!(stderr.contains("--workspace"), "{stderr}");
}

#[test]
fn a_broken_manifest_refuses_queries_with_exit_2() {
    let run = Test::new()
        .manifest("[targets.a]\nkind = \"comand\"\n")
        .args(["query", "targets"])
        .run();
    assert_snapshot!(run.transcript());
}

#[test]
fn help_teaches_with_examples() {
    for args in [
        &["--help"][..],
        &["query", "--help"],
        &["query", "targets", "--help"],
        &["query", "graph", "order", "--help"],
        &["mcp", "--help"],
        &["check", "--help"],
    ] {
        let run = Test::new().args(args.iter().copied()).run();
        assert_eq!(run.code(), 0, "{args:?}");
        assert!(
            run.stdout().contains("Example"),
            "{args:?} has no examples:\n{}",
            run.stdout()
        );
    }
}

#[test]
fn all_targets_in_one_answer_for_scripts() {
    let run = shop()
        .args(["query", "targets", "--all", "--limit", "1"])
        .run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    let page = run.json();
    let names: Vec<_> = page["targets"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|row| row["name"].as_str().expect("a name").to_string())
        .collect();
    assert_eq!(names, ["core", "proto", "web"]);
    assert_eq!(page["total"], 3);
    assert_eq!(page["next_cursor"], serde_json::Value::Null);
}

/// One rule for every `once query` subcommand: `--json` prints the JSON value its MCP tool
/// returns. Those that print text by default switch to JSON; the rest are JSON either way.
#[test]
fn every_query_subcommand_takes_json() {
    for args in [
        &["query", "workspace", "--json"][..],
        &["query", "targets", "--json"],
        &["query", "targets", "--all", "--json"],
        &["query", "target", "core", "--json"],
        &["query", "schema", "command", "--json"],
        &["query", "schema", "--manifest", "--json"],
        &["query", "graph", "--json"],
        &["query", "graph", "deps", "web", "--json"],
        &["query", "graph", "order", "web:build", "--json"],
        &["query", "affected", "--files", "core/src/lib.rs", "--json"],
        &["query", "owner", "core/src/lib.rs", "--json"],
        &["query", "memory", "--json"],
        &["query", "hashes", "core/src/lib.rs", "--json"],
        &["query", "key", "proto:build", "--json"],
        &["query", "tools", "--json"],
        &["query", "runs", "--json"],
    ] {
        let run = shop()
            .file("core/src/lib.rs", "\n")
            .args(args.iter().copied())
            .run();
        assert_eq!(run.code(), 0, "{args:?}: {}", run.transcript());
        let stdout = run.stdout();
        assert!(
            serde_json::from_str::<serde_json::Value>(&stdout).is_ok(),
            "{args:?} printed no JSON: {stdout}"
        );
    }
    // `--json` says how to print, so a picture format other than JSON refuses it.
    let run = shop()
        .args(["query", "graph", "--format", "dot", "--json"])
        .run();
    assert_eq!(run.code(), 2, "{}", run.transcript());
}

/// Two npm packages that depend on each other: `b`'s dev dependency back on `a` would close a
/// cycle, so it orders nothing, and still every answer about edges shows it.
fn mutual() -> Test {
    Test::new()
        .file(
            "package.json",
            r#"{"name": "w", "private": true, "workspaces": ["pkgs/*"]}"#,
        )
        .file(
            "pkgs/a/package.json",
            r#"{"name": "a", "dependencies": {"b": "*"}, "optionalDependencies": {"c": "*"}}"#,
        )
        .file("pkgs/c/package.json", r#"{"name": "c"}"#)
        .file(
            "pkgs/b/package.json",
            r#"{"name": "b", "devDependencies": {"a": "*"}}"#,
        )
}

#[test]
fn a_targets_edges_page_on_from_their_cursor() {
    let first = mutual()
        .args(["query", "target", "a", "--limit", "1"])
        .run();
    assert_eq!(first.code(), 0, "{}", first.transcript());
    let inferred = &first.json()["inferred"];
    assert_eq!(inferred["edges_total"], 2, "{}", first.stdout());
    assert_eq!(inferred["edges"].as_array().map(Vec::len), Some(1));
    let cursor = inferred["next_cursor"]
        .as_str()
        .expect("a cursor")
        .to_owned();
    let second = mutual()
        .args(["query", "target", "a", "--limit", "1", "--cursor", &cursor])
        .run();
    assert_eq!(second.code(), 0, "{}", second.transcript());
    let kinds: Vec<serde_json::Value> = [&first, &second]
        .iter()
        .map(|run| run.json()["inferred"]["edges"][0]["kind"].clone())
        .collect();
    assert_eq!(kinds, vec!["normal", "optional"]);
    assert!(second.json()["inferred"]["next_cursor"].is_null());
    // A cursor of another target's edges is a wrong argument, not an offset.
    let refused = mutual()
        .args(["query", "target", "b", "--cursor", &cursor])
        .run();
    assert_eq!(refused.code(), 2, "{}", refused.transcript());
}

#[test]
fn the_graph_shows_every_edge_with_its_kinds() {
    let run = mutual().args(["query", "graph"]).run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    assert_eq!(
        run.json()["edges"],
        serde_json::json!([
            {"from": "a", "to": "b", "kinds": ["normal"], "orders": true},
            {"from": "a", "to": "c", "kinds": ["optional"], "orders": true},
            {"from": "b", "to": "a", "kinds": ["dev"], "orders": false},
        ]),
        "{}",
        run.stdout()
    );
    let dot = mutual().args(["query", "graph", "--format", "dot"]).run();
    assert!(
        dot.stdout().contains("\"b\" -> \"a\" [style=dashed];"),
        "{}",
        dot.stdout()
    );
    let overview = mutual().args(["query", "workspace"]).run();
    assert_eq!(
        overview.json()["counts"]["edges"],
        3,
        "{}",
        overview.stdout()
    );
}
