//! Every edge is visible: a target with more edges than a preview holds, of every kind, some of
//! which order nothing (they would close a cycle), is seen whole through the target answer's
//! cursor, the graph walks and the picture.

use std::collections::BTreeSet;

use once_graph::query::{self, GraphMode, GraphQuery, TargetQuery};

use crate::util::TempWs;

/// `hub` states 23 edges to 22 crates: 12 normal (`l02` is also a dev one), 6 dev, 4 build. Two
/// close cycles and order nothing: `hub → d01` (d01 depends on hub) and `l01 → hub` (dev).
fn hub_workspace() -> TempWs {
    let mut files: Vec<(String, String)> = vec![(
        "Cargo.toml".into(),
        "[workspace]\nmembers = [\"crates/*\"]\nresolver = \"2\"\n".into(),
    )];
    let crate_toml = |name: &str, sections: &str| {
        format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n{sections}")
    };
    let path_deps = |names: &[String]| -> String {
        names
            .iter()
            .map(|n| format!("{n} = {{ path = \"../{n}\" }}\n"))
            .collect()
    };
    let normal: Vec<String> = (1..=12).map(|i| format!("l{i:02}")).collect();
    let dev: Vec<String> = (1..=6).map(|i| format!("d{i:02}")).collect();
    let build: Vec<String> = (1..=4).map(|i| format!("b{i:02}")).collect();
    let mut dev_of_hub = dev.clone();
    dev_of_hub.push("l02".into());
    files.push((
        "crates/hub/Cargo.toml".into(),
        crate_toml(
            "hub",
            &format!(
                "[dependencies]\n{}[dev-dependencies]\n{}[build-dependencies]\n{}",
                path_deps(&normal),
                path_deps(&dev_of_hub),
                path_deps(&build)
            ),
        ),
    ));
    for name in normal.iter().chain(&dev).chain(&build) {
        let sections = match name.as_str() {
            "l01" => "[dev-dependencies]\nhub = { path = \"../hub\" }\n",
            "d01" => "[dependencies]\nhub = { path = \"../hub\" }\n",
            _ => "",
        };
        files.push((
            format!("crates/{name}/Cargo.toml"),
            crate_toml(name, sections),
        ));
        files.push((format!("crates/{name}/src/lib.rs"), String::new()));
    }
    files.push(("crates/hub/src/lib.rs".into(), String::new()));
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    TempWs::new(&borrowed)
}

fn target_query(name: &str, cursor: Option<String>, limit: Option<u32>) -> TargetQuery {
    TargetQuery {
        name: name.into(),
        cursor,
        limit,
    }
}

#[test]
fn every_edge_of_a_target_is_reached_by_paging_its_answer() {
    let tmp = hub_workspace();
    let ws = tmp.load();
    assert!(ws.diagnostics().is_empty(), "{:?}", ws.diagnostics());
    let mut seen = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let answer = query::target(&ws, &target_query("hub", cursor, Some(7))).unwrap();
        let inferred = answer.inferred.expect("hub is inferred");
        assert_eq!(inferred.edges_total, 23);
        assert!(inferred.edges.len() <= 7);
        seen.extend(
            inferred
                .edges
                .into_iter()
                .map(|e| (e.target, e.kind, e.orders)),
        );
        pages += 1;
        match inferred.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(pages, 4);
    assert_eq!(seen.len(), 23, "{seen:?}");
    let distinct: BTreeSet<_> = seen.iter().cloned().collect();
    assert_eq!(distinct.len(), 23, "no edge twice: {seen:?}");
    let kinds: BTreeSet<&str> = seen.iter().map(|e| e.1.as_str()).collect();
    assert_eq!(kinds, BTreeSet::from(["build", "dev", "normal"]));
    assert!(
        seen.contains(&("d01".into(), "dev".into(), false)),
        "the edge closing a cycle is listed and orders nothing: {seen:?}"
    );
    // The first page by default is the preview it always was: 20 edges.
    let first = query::target(&ws, &target_query("hub", None, None)).unwrap();
    assert_eq!(first.inferred.unwrap().edges.len(), 20);
    // A cursor of another target is refused, not read as an offset.
    let other = query::target(&ws, &target_query("hub", None, Some(5)))
        .unwrap()
        .inferred
        .unwrap()
        .next_cursor;
    assert!(query::target(&ws, &target_query("l01", other, None)).is_err());
}

#[test]
fn graph_walks_list_edges_that_order_nothing_with_their_kinds() {
    let tmp = hub_workspace();
    let ws = tmp.load();
    let deps = query::graph(
        &ws,
        &GraphQuery {
            mode: GraphMode::Deps,
            target: "hub".into(),
            limit: Some(200),
            ..GraphQuery::default()
        },
    )
    .unwrap();
    assert_eq!(deps.total, 22, "{deps:?}");
    let d01 = deps.nodes.iter().find(|n| n.name == "d01").expect("d01");
    assert_eq!(d01.orders, Some(false));
    assert_eq!(d01.kinds.as_deref(), Some(&["dev".to_string()][..]));
    let l02 = deps.nodes.iter().find(|n| n.name == "l02").expect("l02");
    assert_eq!(l02.orders, Some(true));
    assert_eq!(
        l02.kinds.as_deref(),
        Some(&["normal".to_string(), "dev".to_string()][..])
    );
    let b01 = deps.nodes.iter().find(|n| n.name == "b01").expect("b01");
    assert_eq!(b01.kinds.as_deref(), Some(&["build".to_string()][..]));

    let dependents = query::graph(
        &ws,
        &GraphQuery {
            mode: GraphMode::Dependents,
            target: "hub".into(),
            ..GraphQuery::default()
        },
    )
    .unwrap();
    let names: Vec<(&str, Option<bool>)> = dependents
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.orders))
        .collect();
    assert_eq!(names, vec![("d01", Some(true)), ("l01", Some(false))]);
}

#[test]
fn the_picture_and_the_counts_have_every_edge() {
    let tmp = hub_workspace();
    let ws = tmp.load();
    let picture = query::picture(&ws);
    assert_eq!(picture.edges.len(), 22 + 2, "{:?}", picture.edges);
    let unordered: Vec<(&str, &str)> = picture
        .edges
        .iter()
        .filter(|e| !e.orders)
        .map(|e| (e.from.as_str(), e.to.as_str()))
        .collect();
    assert_eq!(unordered, vec![("hub", "d01"), ("l01", "hub")]);
    assert!(
        picture
            .to_dot()
            .contains("\"hub\" -> \"d01\" [style=dashed];")
    );
    let overview = query::workspace(&ws);
    assert_eq!(overview.counts.edges, 24);
    // Cargo builds a crate's dependencies itself, so no action waits on another: counting
    // action edges here would say this graph has none.
    assert_eq!(overview.counts.action_edges, 0);
}
