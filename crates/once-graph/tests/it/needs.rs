//! What a capability needs from its dependencies: a `test` waits for its dependencies' `build`
//! (or for nothing, where the ecosystem's own tool builds them), never for their tests; the key
//! still reaches every dependency; an overlay's `needs` changes it per capability.

use once_graph::Workspace;
use once_graph::query::{self, GraphMode, GraphQuery};

use crate::util::TempWs;

/// The direct action dependencies of `action` (`target:capability`), sorted.
fn action_deps(ws: &Workspace, action: &str) -> Vec<String> {
    let answer = query::graph(
        ws,
        &GraphQuery {
            mode: GraphMode::Deps,
            target: action.into(),
            to: None,
            transitive: None,
            capability: None,
            cursor: None,
            limit: None,
        },
    )
    .unwrap();
    let value = serde_json::to_value(answer).unwrap();
    let mut names: Vec<String> = value["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

/// The names of the targets whose sources reach `name`'s keys.
fn keyed_by(ws: &Workspace, name: &str) -> Vec<String> {
    let targets = ws.targets();
    let at = targets.iter().position(|t| t.name == name).unwrap();
    let mut names: Vec<String> = ws.source_edges()[at]
        .iter()
        .map(|&d| targets[d as usize].name.clone())
        .collect();
    names.sort();
    names
}

const NPM_X_Y: &[(&str, &str)] = &[
    (
        "package.json",
        r#"{ "name": "root", "private": true, "workspaces": ["x", "y"] }"#,
    ),
    (
        "x/package.json",
        r#"{ "name": "x", "scripts": { "build": "tsc", "test": "vitest run", "fmt": "prettier -w ." },
            "dependencies": { "y": "*" } }"#,
    ),
    (
        "y/package.json",
        r#"{ "name": "y", "scripts": { "build": "tsc", "test": "vitest run", "fmt": "prettier -w ." } }"#,
    ),
];

#[test]
fn an_npm_test_needs_its_dependencies_built_not_tested() {
    let ws = TempWs::new(NPM_X_Y);
    let ws = ws.load();
    assert_eq!(action_deps(&ws, "x:test"), ["y:build"]);
    assert_eq!(action_deps(&ws, "x:build"), ["y:build"]);
    // Formatting reads only the package's own files.
    assert!(action_deps(&ws, "x:fmt").is_empty());
    assert_eq!(keyed_by(&ws, "x"), ["y"]);
}

const CARGO_X_Y: &[(&str, &str)] = &[
    ("Cargo.toml", "[workspace]\nmembers = [\"x\", \"y\"]\n"),
    (
        "x/Cargo.toml",
        "[package]\nname = \"x\"\nversion = \"0.1.0\"\n\n[dependencies]\ny = { path = \"../y\" }\n",
    ),
    ("x/src/lib.rs", ""),
    (
        "y/Cargo.toml",
        "[package]\nname = \"y\"\nversion = \"0.1.0\"\n",
    ),
    ("y/src/lib.rs", ""),
];

#[test]
fn a_cargo_test_needs_nothing_first_and_is_still_keyed_by_its_dependencies() {
    let ws = TempWs::new(CARGO_X_Y);
    let ws = ws.load();
    // `cargo test -p x` builds `y` itself: waiting for `y`'s tests would only make one failing
    // foundation test skip every dependent's.
    assert!(
        action_deps(&ws, "x:test").is_empty(),
        "{:?}",
        action_deps(&ws, "x:test")
    );
    assert!(action_deps(&ws, "x:build").is_empty());
    assert_eq!(keyed_by(&ws, "x"), ["y"]);
}

#[test]
fn an_overlay_says_what_one_capability_needs() {
    let mut files = CARGO_X_Y.to_vec();
    files.push((
        "once.toml",
        "[targets.x.capabilities.test]\nneeds = [\"test\", \"build\"]\n\n\
         [targets.x.capabilities.build]\nneeds = [\"build\"]\n",
    ));
    let ws = TempWs::new(&files);
    let ws = ws.load();
    assert!(!ws.has_errors(), "{:?}", ws.diagnostics());
    assert_eq!(action_deps(&ws, "x:test"), ["y:build", "y:test"]);
    assert_eq!(action_deps(&ws, "x:build"), ["y:build"]);
    // A capability the overlay does not touch keeps the ecosystem's rule.
    assert!(action_deps(&ws, "x:check").is_empty());
}

#[test]
fn an_overlay_can_say_a_capability_needs_nothing() {
    let mut files = NPM_X_Y.to_vec();
    files.push(("once.toml", "[targets.x.capabilities.test]\nneeds = []\n"));
    let ws = TempWs::new(&files);
    let ws = ws.load();
    assert!(!ws.has_errors(), "{:?}", ws.diagnostics());
    assert!(action_deps(&ws, "x:test").is_empty());
    assert_eq!(action_deps(&ws, "x:build"), ["y:build"]);
    assert_eq!(keyed_by(&ws, "x"), ["y"]);
}

#[test]
fn a_need_is_a_capability_name() {
    let mut files = NPM_X_Y.to_vec();
    files.push((
        "once.toml",
        "[targets.x.capabilities.test]\nneeds = [\"y:build\"]\n",
    ));
    let ws = TempWs::new(&files);
    let ws = ws.load();
    let bad: Vec<_> = ws
        .diagnostics()
        .iter()
        .filter(|d| d.code == "bad-needs")
        .collect();
    assert_eq!(bad.len(), 1, "{:?}", ws.diagnostics());
}
