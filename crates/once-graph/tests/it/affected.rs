//! Which targets own a changed file, and which actions it makes run again.

use once_graph::query::{self, AffectedAnswer, AffectedQuery, OwnerQuery, Ownership, QueryError};

use crate::util::TempWs;

const MANIFEST: &str = r#"
[workspace]
name = "affected"

[targets.lib]
kind = "command"
path = "crates/lib"
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
path = "crates/lib/inner"
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

[targets.rs]
kind = "cargo-package"
path = "rs"
"#;

/// A target and its reasons.
type OwnerReasons<'a> = (&'a str, Vec<&'a str>);

fn ws() -> (TempWs, once_graph::Workspace) {
    let tmp = TempWs::new(&[("once.toml", MANIFEST)]);
    let ws = tmp.load();
    assert!(!ws.has_errors(), "{:?}", ws.diagnostics());
    (tmp, ws)
}

fn ask(ws: &once_graph::Workspace, files: &[&str]) -> AffectedAnswer {
    query::affected(
        ws,
        &AffectedQuery {
            files: files.iter().map(|f| f.to_string()).collect(),
            ownership: Ownership::All,
            limit: Some(200),
            ..Default::default()
        },
    )
    .unwrap()
}

/// `action → reason` of an answer, in its order.
fn actions(answer: &AffectedAnswer) -> Vec<(String, String)> {
    answer
        .actions
        .iter()
        .map(|a| (a.action.clone(), a.reason.clone()))
        .collect()
}

fn names(answer: &AffectedAnswer) -> Vec<&str> {
    answer.actions.iter().map(|a| a.action.as_str()).collect()
}

#[test]
fn a_source_file_affects_its_actions_and_every_dependent() {
    let (_tmp, ws) = ws();
    let answer = ask(&ws, &["crates/lib/src/a.rs"]);
    assert_eq!(answer.files_total, 1);
    let file = &answer.files[0];
    assert_eq!(file.path, "crates/lib/src/a.rs");
    assert_eq!(file.owners.len(), 1);
    assert_eq!(file.owners[0].target, "lib");
    assert_eq!(
        file.owners[0].reasons,
        vec![
            "inside folder `crates/lib`".to_string(),
            "input of `lib:build`, `lib:test`".to_string()
        ]
    );
    assert_eq!(
        actions(&answer),
        vec![
            (
                "lib:build".into(),
                "`crates/lib/src/a.rs` is an input".into()
            ),
            (
                "lib:test".into(),
                "`crates/lib/src/a.rs` is an input".into()
            ),
            ("app:build".into(), "depends on `lib:build`".into()),
            // No `lint` in `lib`: its key still holds `lib`'s sources.
            (
                "app:lint".into(),
                "depends on target `lib`, whose sources changed".into()
            ),
            ("app:test".into(), "depends on `lib:test`".into()),
            ("e2e:test".into(), "depends on `app:build`".into()),
        ]
    );
    assert_eq!(answer.actions_total, 6);
    assert_eq!(answer.next_cursor, None);
}

#[test]
fn the_deepest_folder_owns_and_exclusions_hold() {
    let (_tmp, ws) = ws();
    let answer = ask(
        &ws,
        &[
            "crates/lib/inner/x.txt",
            "crates/lib/src/gen/g.rs",
            "./app/dist/app.js",
        ],
    );
    let owners: Vec<(&str, Vec<OwnerReasons>)> = answer
        .files
        .iter()
        .map(|f| {
            (
                f.path.as_str(),
                f.owners
                    .iter()
                    .map(|o| {
                        (
                            o.target.as_str(),
                            o.reasons.iter().map(String::as_str).collect(),
                        )
                    })
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        owners,
        vec![
            // An output of `app:build` is an input of none of `app`'s capabilities.
            (
                "app/dist/app.js",
                vec![("app", vec!["inside folder `app`"])]
            ),
            (
                "crates/lib/inner/x.txt",
                vec![(
                    "inner",
                    vec!["inside folder `crates/lib/inner`", "input of `inner:build`"]
                )]
            ),
            // `!src/gen/**` takes it out of `lib:build` only.
            (
                "crates/lib/src/gen/g.rs",
                vec![(
                    "lib",
                    vec!["inside folder `crates/lib`", "input of `lib:test`"]
                )]
            ),
        ]
    );
    assert_eq!(
        names(&answer),
        // `e2e` depends on `app`, which depends on `lib`: `lib`'s sources are in its key.
        vec!["inner:build", "lib:test", "app:test", "e2e:test"],
        "{:#?}",
        answer.actions
    );
    assert_eq!(answer.unowned_total, 0);
}

#[test]
fn root_globs_reach_from_the_workspace_root() {
    let (_tmp, ws) = ws();
    let answer = ask(&ws, &["shared.lock", "Cargo.lock"]);
    let owner = |path: &str| {
        answer
            .files
            .iter()
            .find(|f| f.path == path)
            .map(|f| {
                f.owners
                    .iter()
                    .map(|o| (o.target.clone(), o.reasons.join("; ")))
                    .collect::<Vec<_>>()
            })
            .unwrap()
    };
    assert_eq!(
        owner("Cargo.lock"),
        vec![(
            "rs".into(),
            "root input of `rs:build`, `rs:check`, `rs:fmt`, `rs:lint`, `rs:test`".into()
        )]
    );
    assert_eq!(
        owner("shared.lock"),
        vec![("lib".into(), "root input of `lib:build`".into())]
    );
    assert_eq!(
        actions(&answer),
        vec![
            ("lib:build".into(), "`shared.lock` is an input".into()),
            ("rs:build".into(), "`Cargo.lock` is an input".into()),
            ("rs:check".into(), "`Cargo.lock` is an input".into()),
            ("rs:fmt".into(), "`Cargo.lock` is an input".into()),
            ("rs:lint".into(), "`Cargo.lock` is an input".into()),
            ("rs:test".into(), "`Cargo.lock` is an input".into()),
            ("app:build".into(), "depends on `lib:build`".into()),
            (
                "app:lint".into(),
                "depends on target `lib`, whose sources changed".into()
            ),
            ("lib:test".into(), "depends on `lib:build`".into()),
            ("app:test".into(), "depends on `lib:test`".into()),
            ("e2e:test".into(), "depends on `app:build`".into()),
        ]
    );
}

#[test]
fn a_file_nobody_owns_is_listed_as_such() {
    let (_tmp, ws) = ws();
    let answer = ask(&ws, &["README.md", "docs/guide.md"]);
    assert_eq!(answer.files_total, 2);
    assert_eq!(answer.unowned_total, 2);
    assert!(answer.files.iter().all(|f| f.owners.is_empty()));
    assert_eq!(answer.actions_total, 0);
    assert!(answer.actions.is_empty());
    let owner = query::owner(
        &ws,
        &OwnerQuery {
            path: "README.md".into(),
        },
    )
    .unwrap();
    assert!(owner.owners.is_empty());
    assert_eq!(owner.owners_total, 0);
}

#[test]
fn owner_says_which_target_owns_a_path_and_why() {
    let (_tmp, ws) = ws();
    let owner = query::owner(
        &ws,
        &OwnerQuery {
            path: "crates/lib/tests/t.rs".into(),
        },
    )
    .unwrap();
    assert_eq!(owner.path, "crates/lib/tests/t.rs");
    assert_eq!(owner.owners_total, 1);
    assert_eq!(owner.owners[0].target, "lib");
    assert_eq!(
        owner.owners[0].reasons,
        vec!["inside folder `crates/lib`", "input of `lib:test`"]
    );
}

#[test]
fn a_capability_narrows_the_actions() {
    let (_tmp, ws) = ws();
    let answer = query::affected(
        &ws,
        &AffectedQuery {
            files: vec!["crates/lib/src/a.rs".into()],
            capability: Some("test".into()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(names(&answer), vec!["lib:test", "app:test", "e2e:test"]);
    assert_eq!(answer.actions_total, 3);
    let error = query::affected(
        &ws,
        &AffectedQuery {
            files: vec!["x".into()],
            capability: Some("tset".into()),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(error.to_string().contains("`test`"), "{error}");
}

#[test]
fn pages_cover_actions_then_files_with_one_cursor() {
    let (_tmp, ws) = ws();
    let files = ["crates/lib/src/a.rs", "README.md", "Cargo.lock"];
    let whole = ask(&ws, &files);
    assert_eq!(whole.files_total, 3);
    assert_eq!(whole.actions_total, 11);
    let mut q = AffectedQuery {
        files: files.iter().map(|f| f.to_string()).collect(),
        ownership: Ownership::All,
        limit: Some(2),
        ..Default::default()
    };
    let (mut paths, mut acts, mut pages) = (Vec::new(), Vec::new(), 0);
    loop {
        let page = query::affected(&ws, &q).unwrap();
        assert!(page.files.len() + page.actions.len() <= 2);
        assert_eq!((page.files_total, page.actions_total), (3, 11));
        paths.extend(page.files.iter().map(|f| f.path.clone()));
        acts.extend(page.actions.iter().map(|a| a.action.clone()));
        pages += 1;
        match page.next_cursor {
            Some(cursor) => q.cursor = Some(cursor),
            None => break,
        }
    }
    assert_eq!(pages, 7);
    assert_eq!(
        paths,
        whole
            .files
            .iter()
            .map(|f| f.path.clone())
            .collect::<Vec<_>>()
    );
    assert_eq!(
        acts,
        names(&whole)
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>()
    );
    // A cursor belongs to its question.
    q.files.pop();
    assert_eq!(
        query::affected(&ws, &q).unwrap_err(),
        QueryError::InvalidCursor
    );
}

#[test]
fn paths_must_stay_inside_the_workspace() {
    let (_tmp, ws) = ws();
    for bad in ["../x", "/etc/passwd", "a/../../b", ""] {
        let error = query::affected(
            &ws,
            &AffectedQuery {
                files: vec![bad.into()],
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(
            matches!(error, QueryError::InvalidArgument { .. }),
            "{bad}: {error}"
        );
    }
    assert!(
        query::owner(
            &ws,
            &OwnerQuery {
                path: "../x".into()
            }
        )
        .is_err()
    );
}

/// A branch like dagger/dagger's: thousands of changed files under a few targets, a handful of
/// affected actions. The first page must answer "which actions must run" whole, and small.
#[test]
fn the_first_page_carries_every_action_however_many_files_changed() {
    let mut manifest = String::from("[workspace]\nname = \"big\"\n");
    for (name, deps) in [
        ("core", ""),
        ("sdk", "deps = [\"core\"]\n"),
        ("cli", "deps = [\"sdk\"]\n"),
        ("docs", ""),
        ("quiet", ""),
    ] {
        manifest.push_str(&format!(
            "[targets.{name}]\nkind = \"command\"\npath = \"{name}\"\n{deps}\
             [targets.{name}.capabilities.build]\ncommand = \"true\"\n\
             [targets.{name}.capabilities.test]\ncommand = \"true\"\ndeps = [\":build\"]\n\
             [targets.{name}.capabilities.lint]\ncommand = \"true\"\n"
        ));
    }
    let tmp = TempWs::new(&[("once.toml", &manifest)]);
    let ws = tmp.load();
    assert!(!ws.has_errors(), "{:?}", ws.diagnostics());
    // Long, deep paths, as a generated SDK has them.
    let mut files: Vec<String> = (0..3_000)
        .map(|i| {
            format!(
                "core/internal/generated/engine/schema/v{}/resolvers/type_{i:05}_resolver_test.go",
                i % 7
            )
        })
        .collect();
    files.extend((0..500).map(|i| format!("docs/site/versioned_docs/page_{i:04}.md")));
    files.extend((0..300).map(|i| format!("vendor/third_party/module_{i:03}/file.c")));
    let answer = query::affected(
        &ws,
        &AffectedQuery {
            files,
            ..Default::default()
        },
    )
    .unwrap();
    let bytes = serde_json::to_string(&answer).unwrap().len();
    // An MCP reply holds the value twice; both must fit in 40 KB.
    assert!(bytes * 2 < 40 * 1024, "{bytes} bytes");
    assert_eq!(answer.files_total, 3_800);
    assert_eq!(answer.unowned_total, 300);
    // core's and docs' three each, and sdk's and cli's through the edges.
    assert_eq!(answer.actions_total, 12, "{:#?}", answer.actions);
    assert_eq!(answer.actions.len(), 12, "{:#?}", answer.actions);
    assert!(!names(&answer).iter().any(|a| a.starts_with("quiet:")));
    // Ownership comes as a summary: who owns how many of the changed files.
    let owners: Vec<(&str, u32)> = answer
        .owners
        .iter()
        .map(|o| (o.target.as_str(), o.files))
        .collect();
    assert_eq!(owners, vec![("core", 3_000), ("docs", 500)]);
    assert_eq!(answer.owners_total, 2);
    assert!(answer.files.is_empty(), "{} file rows", answer.files.len());
    assert_eq!(answer.next_cursor, None);
}

#[test]
fn file_rows_come_after_the_actions_on_request() {
    let (_tmp, ws) = ws();
    let files = ["crates/lib/src/a.rs", "README.md", "Cargo.lock"];
    let ask_for = |ownership: Ownership, limit: u32, cursor: Option<String>| {
        query::affected(
            &ws,
            &AffectedQuery {
                files: files.iter().map(|f| f.to_string()).collect(),
                ownership,
                limit: Some(limit),
                cursor,
                ..Default::default()
            },
        )
        .unwrap()
    };
    let none = ask_for(Ownership::None, 200, None);
    assert_eq!(none.actions.len(), 11);
    assert!(none.files.is_empty() && none.owners.is_empty());
    assert_eq!((none.files_total, none.unowned_total), (3, 1));

    // With every file: the actions first, then the files, one cursor across both.
    let first = ask_for(Ownership::All, 12, None);
    assert_eq!(first.actions.len(), 11);
    assert_eq!(first.files.len(), 1);
    let second = ask_for(Ownership::All, 12, first.next_cursor.clone());
    assert!(second.actions.is_empty());
    let paths: Vec<&str> = first
        .files
        .iter()
        .chain(&second.files)
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(
        paths,
        vec!["Cargo.lock", "README.md", "crates/lib/src/a.rs"]
    );
    assert_eq!(second.next_cursor, None);
    // A cursor belongs to its level of detail too.
    let error = query::affected(
        &ws,
        &AffectedQuery {
            files: files.iter().map(|f| f.to_string()).collect(),
            limit: Some(12),
            cursor: first.next_cursor,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(error, QueryError::InvalidCursor);
}
