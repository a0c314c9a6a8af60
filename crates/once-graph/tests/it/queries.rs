//! Every query on a small realistic workspace, pinned with JSON snapshots.

use once_graph::query::{
    self, GraphMode, GraphQuery, QueryError, SchemaQuery, TargetQuery, TargetsQuery,
};

use crate::util::{TempWs, redact};

pub const ROOT: &str = r#"
[workspace]
name = "shop"
members = ["services/*"]
default-deadline = "10m"

[targets.proto]
kind = "cargo-package"
path = "crates/proto"
tags = ["backend"]

[targets.core]
kind = "cargo-package"
path = "crates/core"
description = "Domain types"
tags = ["backend"]
deps = ["proto"]
package = "shop-core"
[targets.core.evaluator]
language = "python"
command = ".venv/bin/python"

[targets.web]
kind = "npm-package"
path = "web"
deps = ["core"]
tags = ["frontend"]
[targets.web.capabilities.test]
deadline = "5m"

[targets.docs]
kind = "command"
[targets.docs.capabilities.build]
command = "mdbook build --dest-dir {out} {verbose} --level {level}"
description = "Render the book"
inputs = ["book/**/*.md", "!book/drafts/**"]
outputs = ["out/**"]
env = { MDBOOK_THEME = "light" }
deadline = "2m"
deps = ["core:build", ":lint", "web"]
[targets.docs.capabilities.build.params.out]
type = "string"
default = "book-out"
description = "Output folder"
[targets.docs.capabilities.build.params.verbose]
type = "boolean"
default = false
flag = "--verbose"
[targets.docs.capabilities.build.params.level]
type = "enum"
values = ["fast", "full"]
default = "fast"
[targets.docs.capabilities.lint]
command = "markdownlint book"
"#;

pub const API: &str = r#"
[targets.api]
kind = "go-module"
path = "."
deps = ["core"]
tags = ["backend"]
"#;

pub fn fixture() -> TempWs {
    TempWs::new(&[("once.toml", ROOT), ("services/api/once.toml", API)])
}

fn gq(mode: GraphMode, target: &str) -> GraphQuery {
    GraphQuery {
        mode,
        target: target.into(),
        ..GraphQuery::default()
    }
}

#[test]
fn workspace_query() {
    let tmp = fixture();
    let ws = tmp.load();
    assert!(ws.diagnostics().is_empty(), "{:?}", ws.diagnostics());
    insta::assert_json_snapshot!("workspace", redact(&query::workspace(&ws), &ws));
}

/// A diagnostic that quotes a huge key is cut in the overview (`once check` shows it whole), so
/// the answer stays small.
#[test]
fn the_overview_cuts_a_diagnostic_that_quotes_a_huge_key() {
    let key = "a".repeat(40_000);
    let tmp = TempWs::new(&[("once.toml", &format!("{key} = 1\n"))]);
    let ws = tmp.load();
    assert_eq!(ws.diagnostics().len(), 1, "{:?}", ws.diagnostics());
    let overview = query::workspace(&ws);
    assert_eq!(overview.diagnostics_total, 1);
    assert_eq!(overview.diagnostics.len(), 1);
    let size = serde_json::to_string(&overview).unwrap().len();
    assert!(size < 8 * 1024, "an overview of {size} bytes");
}

#[test]
fn targets_query_filters() {
    let tmp = fixture();
    let ws = tmp.load();
    let all = query::targets(&ws, &TargetsQuery::default()).unwrap();
    insta::assert_json_snapshot!("targets_all", all);
    let names = |q: TargetsQuery| -> Vec<String> {
        query::targets(&ws, &q)
            .unwrap()
            .targets
            .into_iter()
            .map(|r| r.name)
            .collect()
    };
    assert_eq!(
        names(TargetsQuery {
            name: Some("*o*".into()),
            ..Default::default()
        }),
        ["core", "docs", "proto"]
    );
    assert_eq!(
        names(TargetsQuery {
            kind: Some("cargo-package".into()),
            ..Default::default()
        }),
        ["core", "proto"]
    );
    assert_eq!(
        names(TargetsQuery {
            tag: Some("backend".into()),
            ..Default::default()
        }),
        ["api", "core", "proto"]
    );
    assert_eq!(
        names(TargetsQuery {
            capability: Some("lint".into()),
            ..Default::default()
        }),
        ["api", "core", "docs", "proto", "web"]
    );
    assert_eq!(
        names(TargetsQuery {
            capability: Some("fmt".into()),
            tag: Some("frontend".into()),
            ..Default::default()
        }),
        ["web"]
    );
    let err = query::targets(
        &ws,
        &TargetsQuery {
            kind: Some("cargo".into()),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(
        matches!(&err, QueryError::UnknownKind { near, .. } if near.contains(&"cargo-package".to_string())),
        "{err}"
    );
}

#[test]
fn targets_paging() {
    let tmp = fixture();
    let ws = tmp.load();
    let mut pages = Vec::new();
    let mut cursor = None;
    loop {
        let q = TargetsQuery {
            limit: Some(2),
            cursor: cursor.clone(),
            tag: None,
            ..Default::default()
        };
        let p = query::targets(&ws, &q).unwrap();
        assert_eq!(p.total, 5);
        cursor = p.next_cursor.clone();
        pages.push(p);
        if cursor.is_none() {
            break;
        }
        assert!(pages.len() < 10);
    }
    insta::assert_json_snapshot!("targets_pages", pages);
    let flat: Vec<String> = pages
        .iter()
        .flat_map(|p| p.targets.iter().map(|r| r.name.clone()))
        .collect();
    assert_eq!(flat, ["api", "core", "docs", "proto", "web"]);

    // A cursor reused with other filters, a garbled one, and one past the end are rejected.
    let c = pages[0].next_cursor.clone();
    let other = TargetsQuery {
        cursor: c,
        tag: Some("backend".into()),
        ..Default::default()
    };
    assert_eq!(query::targets(&ws, &other), Err(QueryError::InvalidCursor));
    for bad in ["nonsense", "00000000-1", ""] {
        let q = TargetsQuery {
            cursor: Some(bad.into()),
            ..Default::default()
        };
        assert_eq!(
            query::targets(&ws, &q),
            Err(QueryError::InvalidCursor),
            "{bad}"
        );
    }
    assert!(
        QueryError::InvalidCursor
            .to_string()
            .contains("next_cursor")
    );
    let q: Result<TargetsQuery, _> = serde_json::from_str(r#"{"nme":"x"}"#);
    assert!(q.is_err(), "unknown fields are rejected");
}

#[test]
fn target_query() {
    let tmp = fixture();
    let ws = tmp.load();
    let d = query::target(
        &ws,
        &TargetQuery {
            name: "docs".into(),
            ..TargetQuery::default()
        },
    )
    .unwrap();
    insta::assert_json_snapshot!("target_docs", d);
    let c = query::target(
        &ws,
        &TargetQuery {
            name: "core".into(),
            ..TargetQuery::default()
        },
    )
    .unwrap();
    insta::assert_json_snapshot!("target_core", c);
    let api = query::target(
        &ws,
        &TargetQuery {
            name: "api".into(),
            ..TargetQuery::default()
        },
    )
    .unwrap();
    assert_eq!(api.manifest.file, "services/api/once.toml");
    assert_eq!(api.manifest.line, 2);
    assert_eq!(api.path, "services/api");
    let err = query::target(
        &ws,
        &TargetQuery {
            name: "webb".into(),
            ..TargetQuery::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err,
        QueryError::NoSuchTarget {
            name: "webb".into(),
            near: vec!["web".into()]
        }
    );
    assert_eq!(
        err.to_string(),
        "no target named `webb`; did you mean `web`? Call once_query_targets to list targets"
    );
}

#[test]
fn schema_query() {
    let tmp = fixture();
    let ws = tmp.load();
    let all = query::schema(&ws, &SchemaQuery::default()).unwrap();
    insta::assert_json_snapshot!("schema_all", all);
    let cargo = query::schema(
        &ws,
        &SchemaQuery {
            kind: Some("cargo-package".into()),
        },
    )
    .unwrap();
    assert_eq!(cargo, all["kinds"]["cargo-package"]);
    insta::assert_json_snapshot!("schema_cargo", cargo);
    let err = query::schema(
        &ws,
        &SchemaQuery {
            kind: Some("npm".into()),
        },
    )
    .unwrap_err();
    assert!(
        matches!(&err, QueryError::UnknownKind { near, .. } if near == &["npm-package".to_string()]),
        "{err:?}"
    );
}

#[test]
fn graph_queries() {
    let tmp = fixture();
    let ws = tmp.load();
    let g = |q: GraphQuery| query::graph(&ws, &q).unwrap();
    let deps = g(gq(GraphMode::Deps, "docs"));
    let deps_t = g(GraphQuery {
        transitive: Some(true),
        ..gq(GraphMode::Deps, "docs")
    });
    let dependents = g(gq(GraphMode::Dependents, "core"));
    let dependents_t = g(GraphQuery {
        transitive: Some(true),
        ..gq(GraphMode::Dependents, "proto")
    });
    let action_deps = g(GraphQuery {
        transitive: Some(true),
        ..gq(GraphMode::Deps, "docs:build")
    });
    let path = g(GraphQuery {
        to: Some("proto".into()),
        ..gq(GraphMode::Path, "docs")
    });
    let no_path = g(GraphQuery {
        to: Some("docs".into()),
        ..gq(GraphMode::Path, "proto")
    });
    let order = g(gq(GraphMode::Order, "docs:build"));
    insta::assert_json_snapshot!(
        "graph",
        serde_json::json!({
            "deps": deps, "deps_transitive": deps_t, "dependents": dependents, "dependents_transitive": dependents_t,
            "action_deps": action_deps, "path": path, "no_path": no_path, "order": order,
        })
    );
    let names = |a: &query::GraphAnswer| a.nodes.iter().map(|n| n.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&path), ["docs", "core", "proto"]);
    assert_eq!(path.total, 3);
    assert!(no_path.nodes.is_empty() && no_path.total == 0 && no_path.reason.is_some());
    let first_wave: Vec<String> = order
        .nodes
        .iter()
        .filter(|n| n.wave == Some(1))
        .map(|n| n.name.clone())
        .collect();
    assert_eq!(first_wave, ["docs:lint", "proto:build"]);
    assert_eq!(order.total as usize, order.nodes.len());

    // Paging a path and a run order: the pages join into the whole, each node once.
    for (mode, to) in [(GraphMode::Path, Some("proto")), (GraphMode::Order, None)] {
        let target = if to.is_some() { "docs" } else { "docs:build" };
        let whole = g(GraphQuery {
            to: to.map(String::from),
            ..gq(mode, target)
        });
        let mut joined = Vec::new();
        let mut cursor = None;
        loop {
            let page = g(GraphQuery {
                to: to.map(String::from),
                limit: Some(1),
                cursor: cursor.take(),
                ..gq(mode, target)
            });
            assert_eq!(page.nodes.len(), 1);
            assert_eq!(page.total, whole.total);
            joined.extend(page.nodes);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(joined, whole.nodes, "{mode:?}");
    }
    // A cursor is bound to its question.
    let e = query::graph(
        &ws,
        &GraphQuery {
            limit: Some(1),
            cursor: g(GraphQuery {
                limit: Some(1),
                ..gq(GraphMode::Order, "docs:build")
            })
            .next_cursor,
            ..gq(GraphMode::Order, "web:build")
        },
    )
    .unwrap_err();
    assert_eq!(e, QueryError::InvalidCursor);

    // Paging over dependents.
    let p1 = g(GraphQuery {
        transitive: Some(true),
        limit: Some(2),
        ..gq(GraphMode::Dependents, "proto")
    });
    assert_eq!(p1.total, 4);
    let p2 = g(GraphQuery {
        transitive: Some(true),
        limit: Some(2),
        cursor: p1.next_cursor.clone(),
        ..gq(GraphMode::Dependents, "proto")
    });
    assert!(p2.next_cursor.is_none());
    let both: Vec<String> = p1
        .nodes
        .into_iter()
        .chain(p2.nodes)
        .map(|n| n.name)
        .collect();
    assert_eq!(both, ["core", "api", "docs", "web"]);

    // Errors an agent can act on.
    let e = query::graph(&ws, &gq(GraphMode::Order, "docs")).unwrap_err();
    assert!(e.to_string().contains("docs:CAP"), "{e}");
    let e = query::graph(&ws, &gq(GraphMode::Deps, "docs:biuld")).unwrap_err();
    assert!(
        matches!(&e, QueryError::NoSuchCapability { near, .. } if near == &["build".to_string()]),
        "{e:?}"
    );
    let e = query::graph(&ws, &gq(GraphMode::Path, "docs")).unwrap_err();
    assert!(matches!(e, QueryError::InvalidArgument { .. }));
    let q: GraphQuery = serde_json::from_str(r#"{"mode":"dependents","target":"core"}"#).unwrap();
    assert_eq!(q.mode, GraphMode::Dependents);
}
