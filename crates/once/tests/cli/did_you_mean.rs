//! "Did you mean": a name that is no target gets the targets it could mean, found by target
//! name, folder and package name, in every command's error and in the MCP tools' errors alike.
//! The workspace is the trimmed vuejs/core, whose targets are named `vue-runtime-core` after
//! the package `@vue/runtime-core` in `packages/runtime-core`.

use std::path::Path;

use serde_json::json;

use crate::support::{Mcp, PATIENCE, Test, copy_tree};

fn vue() -> Test {
    let test = Test::new();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../once-graph/testdata/discover/javascript-vue");
    copy_tree(&fixture, test.root());
    test
}

/// What a person or an agent types for `vue-runtime-core`, and the command lines that take it.
const MEANT: [&str; 4] = [
    "runtime-core",
    "packages/runtime-core",
    "./packages/runtime-core/",
    "@vue/runtime-core",
];

#[test]
fn a_name_folder_or_package_suggests_its_target_on_the_command_line() {
    for word in MEANT {
        for args in [
            vec!["query", "target", word],
            vec!["query", "graph", "deps", word],
        ] {
            let run = vue().args(args.clone()).run();
            assert_eq!(run.code(), 1, "{args:?}: {}", run.transcript());
            assert!(
                run.stderr().contains("did you mean `vue-runtime-core`?"),
                "{args:?}: {}",
                run.stderr()
            );
        }
        let action = format!("{word}:test");
        for args in [
            vec!["run", "--dry-run", action.as_str()],
            vec!["query", "key", action.as_str()],
        ] {
            let run = vue().args(args.clone()).run();
            assert_ne!(run.code(), 0, "{args:?}: {}", run.transcript());
            assert!(
                run.stderr().contains("`vue-runtime-core`"),
                "{args:?}: {}",
                run.stderr()
            );
        }
    }
}

#[test]
fn a_name_that_means_nothing_suggests_nothing() {
    let run = vue().args(["query", "target", "zzzzzzzz"]).run();
    assert_eq!(run.code(), 1, "{}", run.transcript());
    assert!(!run.stderr().contains("did you mean"), "{}", run.stderr());
}

#[test]
fn the_mcp_tools_suggest_the_same_targets() {
    let test = vue();
    let mut server = Mcp::spawn(test.root(), &["--allow-run"]);
    server.initialize();
    let calls = [
        (
            "once_query_target",
            json!({"name": "packages/runtime-core"}),
        ),
        (
            "once_query_graph",
            json!({"mode": "deps", "target": "runtime-core"}),
        ),
        ("once_run", json!({"target": "@vue/runtime-core:test"})),
    ];
    for (id, (tool, arguments)) in (10..).zip(calls) {
        let reply = server.call(id, tool, arguments.clone());
        let text = reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            text.contains("`vue-runtime-core`"),
            "{tool} {arguments}: {reply}"
        );
    }
    server.close_stdin();
    assert_eq!(server.wait(PATIENCE).0, Some(0));
}

#[test]
fn a_capability_that_does_not_exist_suggests_the_one_meant() {
    for args in [
        vec!["run", "--dry-run", "root:tset"],
        vec!["query", "key", "root:tset"],
        vec!["query", "graph", "order", "root:tset"],
    ] {
        let run = vue().args(args.clone()).run();
        assert_ne!(run.code(), 0, "{args:?}: {}", run.transcript());
        assert!(
            run.stderr().contains("did you mean `test`?"),
            "{args:?}: {}",
            run.stderr()
        );
    }
}
