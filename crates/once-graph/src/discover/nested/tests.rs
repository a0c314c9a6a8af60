use std::collections::HashSet;

use super::ahead::{Packages, walk_ahead};
use super::walk;
use crate::discover::scratch::Scratch;
use crate::discover::{Ecosystem, Inferred, Reader, infer};
use crate::workspace::load::Trace;

fn run(ws: &Scratch) -> (Vec<Inferred>, Reader) {
    let mut reader = Reader::new(&ws.0);
    let found = infer(&mut reader, &Ecosystem::ALL);
    (found, reader)
}

/// `ecosystem path` per package, sorted.
fn packages(found: &[Inferred]) -> Vec<String> {
    let mut out: Vec<String> = found
        .iter()
        .map(|t| format!("{} {}", t.ecosystem.name(), t.path))
        .collect();
    out.sort();
    out
}

fn inputs<'a>(found: &'a [Inferred], path: &str, capability: &str) -> Vec<&'a str> {
    let t = found
        .iter()
        .find(|t| t.path == path)
        .unwrap_or_else(|| panic!("no package in `{path}`"));
    let cap = t
        .capabilities
        .iter()
        .flatten()
        .find(|c| c.name == capability)
        .unwrap_or_else(|| panic!("`{path}` has no `{capability}`"));
    cap.inputs
        .as_ref()
        .map_or_else(Vec::new, |i| i.iter().map(String::as_str).collect())
}

/// A Go root with a Cargo workspace in `rust/`, a uv project in `sdk/python/` and a JS app in
/// `web/`, and the folders an ecosystem's tool would not take for a workspace of its own.
fn polyglot() -> Scratch {
    Scratch::new(&[
        ("go.mod", "module example.com/m\n"),
        ("rust/Cargo.toml", "[workspace]\nmembers = [\"crates/*\"]\n"),
        ("rust/Cargo.lock", "version = 4\n"),
        (
            "rust/crates/core/Cargo.toml",
            "[package]\nname = \"core\"\nversion = \"0.1.0\"\n",
        ),
        (
            "rust/crates/cli/Cargo.toml",
            "[package]\nname = \"cli\"\nversion = \"0.1.0\"\n\n[dependencies]\ncore = { path = \"../core\" }\n",
        ),
        // Not a member, with a lockfile of its own: cargo builds it alone, never in `rust/`.
        (
            "rust/examples/demo/Cargo.toml",
            "[package]\nname = \"demo\"\nversion = \"0.1.0\"\n",
        ),
        (
            "sdk/python/pyproject.toml",
            "[project]\nname = \"sdk\"\nversion = \"0\"\n\n[tool.pytest.ini_options]\n",
        ),
        ("sdk/python/uv.lock", "version = 1\n"),
        (
            "sdk/python/tests/data/pyproject.toml",
            "[project]\nname = \"inner\"\nversion = \"0\"\n",
        ),
        (
            "web/package.json",
            "{\"name\": \"web\", \"scripts\": {\"test\": \"vitest run\"}}\n",
        ),
        ("web/package-lock.json", "{}\n"),
        // Test data and examples, however they look, are no workspace of their own.
        ("testdata/app/package.json", "{\"name\": \"fixture\"}\n"),
        (
            "pkg/fixtures/lib/Cargo.toml",
            "[package]\nname = \"fixture\"\n",
        ),
        (
            "examples/py/pyproject.toml",
            "[project]\nname = \"example\"\nversion = \"0\"\n",
        ),
        ("vendor/x/package.json", "{\"name\": \"vendored\"}\n"),
        // Deeper than a nested workspace is looked for.
        (
            "docs/a/b/c/package.json",
            "{\"name\": \"snippet\", \"scripts\": {\"test\": \"node t.js\"}}\n",
        ),
    ])
}

#[test]
fn workspaces_in_subfolders_join_the_graph_and_fixtures_do_not() {
    let ws = polyglot();
    let (found, reader) = run(&ws);
    assert_eq!(
        packages(&found),
        [
            "cargo rust/crates/cli",
            "cargo rust/crates/core",
            "go .",
            "javascript web",
            "python sdk/python",
        ]
    );
    assert!(reader.diagnostics.is_empty(), "{:?}", reader.diagnostics);
    let cli = found.iter().find(|t| t.path == "rust/crates/cli").unwrap();
    let edges: Vec<&str> = cli.edges.iter().map(|e| e.folder.as_str()).collect();
    assert_eq!(edges, ["rust/crates/core"]);
    // The manifests are named from the root, for warnings and staleness.
    assert_eq!(reader.rel(cli.file), "rust/crates/cli/Cargo.toml");
    // uv runs the project because its own workspace has a `uv.lock`.
    let py = found.iter().find(|t| t.path == "sdk/python").unwrap();
    let test = py.capabilities.iter().flatten().find(|c| c.name == "test");
    assert!(
        test.is_some_and(|c| c.command.contains("uv run")),
        "{test:?}"
    );
}

#[test]
fn each_nested_workspace_keys_its_own_lockfile_only() {
    let ws = polyglot();
    let (found, _) = run(&ws);
    let locks = [
        "//rust/Cargo.lock",
        "//web/package-lock.json",
        "//sdk/python/uv.lock",
    ];
    // The nested lockfiles a package's key names: its own workspace's, and no other.
    let keyed = |path: &str| -> Vec<&str> {
        let all = inputs(&found, path, "test");
        locks.iter().copied().filter(|l| all.contains(l)).collect()
    };
    assert_eq!(keyed("rust/crates/core"), ["//rust/Cargo.lock"]);
    assert_eq!(keyed("web"), ["//web/package-lock.json"]);
    assert_eq!(keyed("sdk/python"), ["//sdk/python/uv.lock"]);
    let cargo = inputs(&found, "rust/crates/core", "test");
    assert!(cargo.contains(&"!target/**"), "{cargo:?}");
    // The root's file of the name is kept too: a tool may read it, and it costs a re-run at most.
    let py = inputs(&found, "sdk/python", "test");
    assert!(py.contains(&"//uv.lock"), "{py:?}");
    // The root's own ecosystem keeps the root's files.
    let go = inputs(&found, ".", "test");
    assert!(go.is_empty() || go.contains(&"//go.work"), "{go:?}");
}

#[test]
fn a_new_nested_workspace_is_a_change_the_reader_saw_coming() {
    let ws = polyglot();
    let (_, reader) = run(&ws);
    ws.write("tools/gen/package.json", "{\"name\": \"gen\"}\n");
    assert!(
        reader.listings.iter().any(|l| l.changed(&ws.0)),
        "no listing notices `tools/gen/package.json`"
    );
}

#[test]
fn an_ecosystem_found_at_the_root_is_not_looked_for_below() {
    // Cargo reads members from the root's `[workspace]`; another `Cargo.toml` below is cargo's
    // business only if a member names it.
    let ws = Scratch::new(&[
        (
            "Cargo.toml",
            "[package]\nname = \"top\"\nversion = \"0.1.0\"\n",
        ),
        (
            "tools/other/Cargo.toml",
            "[package]\nname = \"other\"\nversion = \"0.1.0\"\n",
        ),
        ("ui/package.json", "{\"name\": \"ui\"}\n"),
        ("ui/sub/package.json", "{\"name\": \"ui-sub\"}\n"),
    ]);
    let (found, _) = run(&ws);
    assert_eq!(packages(&found), ["cargo .", "javascript ui"]);
}

#[test]
fn nested_go_modules_edge_only_through_local_replaces() {
    let ws = Scratch::new(&[
        ("package.json", "{\"name\": \"site\"}\n"),
        (
            "backend/go.mod",
            "module example.com/backend\nrequire (\n\texample.com/backend/api v0.1.0\n\texample.com/backend/db v0.1.0\n)\nreplace example.com/backend/db => ./db\n",
        ),
        ("backend/api/go.mod", "module example.com/backend/api\n"),
        ("backend/db/go.mod", "module example.com/backend/db\n"),
    ]);
    let (found, _) = run(&ws);
    assert_eq!(
        packages(&found),
        [
            "go backend",
            "go backend/api",
            "go backend/db",
            "javascript .",
        ]
    );
    let backend = found.iter().find(|t| t.path == "backend").unwrap();
    let edges: Vec<&str> = backend.edges.iter().map(|e| e.folder.as_str()).collect();
    assert_eq!(edges, ["backend/db"]);
}

/// `ecosystem folder -> edge folders` for every package, sorted.
fn graph(found: &[Inferred]) -> Vec<String> {
    let mut out: Vec<String> = found
        .iter()
        .map(|t| {
            let mut edges: Vec<&str> = t.edges.iter().map(|e| e.folder.as_str()).collect();
            edges.sort_unstable();
            format!("{} {} -> {}", t.ecosystem.name(), t.path, edges.join(", "))
        })
        .collect();
    out.sort();
    out
}

/// The same lines from a fixture's `expected.json`: Go's own reading of every `go.mod`
/// (`go mod edit -json`), cargo's (`cargo metadata`) and uv's (`uv.lock`) of the nested
/// workspaces, edges named by module path or package name and turned into folders here.
fn expected_graph(expected: &serde_json::Value) -> Vec<String> {
    let text = |v: &serde_json::Value| v.as_str().unwrap().to_string();
    let mut out = Vec::new();
    let go = expected["go"].as_array().unwrap();
    let folder_of = |module: &str| {
        let folders: Vec<String> = go
            .iter()
            .filter(|t| t["module"] == module)
            .map(|t| text(&t["path"]))
            .collect();
        assert_eq!(
            folders.len(),
            1,
            "edge to `{module}`, declared in {folders:?}"
        );
        folders[0].clone()
    };
    for t in go {
        let mut edges: Vec<String> = t["edges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| folder_of(e["to"].as_str().unwrap()))
            .collect();
        edges.sort();
        out.push(format!("go {} -> {}", text(&t["path"]), edges.join(", ")));
    }
    for ws in expected["workspaces"].as_array().unwrap() {
        let root = text(&ws["root"]);
        let from_root = |path: String| {
            if path == "." {
                root.clone()
            } else {
                format!("{root}/{path}")
            }
        };
        let targets = ws["targets"].as_array().unwrap();
        let folder_of = |name: &str| {
            let t = targets.iter().find(|t| t["name"] == name).unwrap();
            from_root(text(&t["path"]))
        };
        for t in targets {
            let mut edges: Vec<String> = t["edges"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| folder_of(e["to"].as_str().unwrap()))
                .collect();
            edges.sort();
            out.push(format!(
                "{} {} -> {}",
                text(&ws["ecosystem"]),
                from_root(text(&t["path"])),
                edges.join(", ")
            ));
        }
    }
    out.sort();
    out
}

#[test]
fn dagger_matches_what_go_cargo_and_uv_say() {
    // A Go root module; SDKs below `sdk/` in Rust, Python and TypeScript; a docs site; test
    // modules and snippets that no tool builds as part of a workspace.
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/discover/polyglot-dagger");
    let mut reader = Reader::new(&root);
    let found = infer(&mut reader, &Ecosystem::ALL);
    report("dagger", &root, &found);
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("expected.json")).unwrap())
            .unwrap();
    let found: Vec<Inferred> = found
        .into_iter()
        .filter(|t| t.ecosystem != Ecosystem::Workspace)
        .collect();
    assert_eq!(graph(&found), expected_graph(&expected));
    // Four module paths are declared twice (copies of a test or docs module); nothing else is
    // amiss.
    let codes: Vec<&str> = reader.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(codes, ["duplicate-module"; 4], "{:?}", reader.diagnostics);
    // The Rust SDK's crates key `sdk/rust/Cargo.lock`; the Go root keys no Rust lockfile.
    let sdk = inputs(&found, "sdk/rust/crates/dagger-sdk", "test");
    assert!(sdk.contains(&"//sdk/rust/Cargo.lock"), "{sdk:?}");
    let ts = inputs(&found, "sdk/typescript", "test");
    assert!(ts.contains(&"//sdk/typescript/yarn.lock"), "{ts:?}");
}

#[test]
fn go_modules_beside_a_js_root_edge_through_replaces_across_their_folders() {
    // wundergraph/cosmo's shape: a pnpm root, and Go modules in folders beside its packages,
    // one replacing another by a path that leaves its own folder.
    let ws = Scratch::new(&[
        ("package.json", "{\"name\": \"root\", \"private\": true}\n"),
        ("router/go.mod", "module example.com/router\n"),
        (
            "router-tests/go.mod",
            "module example.com/router-tests\nrequire example.com/router v0.0.0\n\
             replace example.com/router => ../router\n",
        ),
        (
            "router-tests/modules/custom/go.mod",
            "module example.com/custom\nrequire example.com/router v0.0.0\n\
             replace example.com/router => ../../../router\n",
        ),
        // A `go.work` of its own is a workspace apart: its `use`s, its replaces.
        ("tools/go.work", "go 1.22\nuse (\n\t./a\n\t./b\n)\n"),
        (
            "tools/a/go.mod",
            "module example.com/a\nrequire example.com/b v0.0.0\n",
        ),
        ("tools/b/go.mod", "module example.com/b\n"),
        ("tools/c/go.mod", "module example.com/c\n"),
    ]);
    let (found, reader) = run(&ws);
    assert_eq!(
        graph(&found),
        [
            "go router -> ",
            "go router-tests -> router",
            "go router-tests/modules/custom -> router",
            "go tools/a -> tools/b",
            "go tools/b -> ",
            "javascript . -> ",
        ]
    );
    assert!(reader.diagnostics.is_empty(), "{:?}", reader.diagnostics);
}

#[test]
fn cosmo_go_modules_beside_a_pnpm_root_match_go() {
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/discover/polyglot-cosmo");
    let mut reader = Reader::new(&root);
    let found = infer(&mut reader, &Ecosystem::ALL);
    report("cosmo", &root, &found);
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("expected.json")).unwrap())
            .unwrap();
    let go: Vec<Inferred> = found
        .iter()
        .filter(|t| t.ecosystem == Ecosystem::Go)
        .cloned()
        .collect();
    let want = serde_json::json!({"go": expected["go"], "workspaces": []});
    assert_eq!(graph(&go), expected_graph(&want));
    let mut js: Vec<&str> = found
        .iter()
        .filter(|t| t.ecosystem == Ecosystem::JavaScript)
        .map(|t| t.path.as_str())
        .collect();
    js.sort_unstable();
    let members: Vec<&str> = expected["javascript"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert_eq!(js, members);
    assert!(reader.diagnostics.is_empty(), "{:?}", reader.diagnostics);
}

/// Prints a fixture's packages and edges, and the fastest of five discoveries of it (the machine
/// is shared; the figure is discovery's own, for the README's table).
fn report(what: &str, root: &std::path::Path, found: &[Inferred]) {
    let packages: Vec<&Inferred> = found
        .iter()
        .filter(|t| t.ecosystem != Ecosystem::Workspace)
        .collect();
    let edges: usize = packages.iter().map(|t| t.edges.len()).sum();
    let fastest = (0..5)
        .map(|_| {
            let started = std::time::Instant::now();
            infer(&mut Reader::new(root), &Ecosystem::ALL);
            started.elapsed()
        })
        .min()
        .unwrap();
    eprintln!(
        "{what}: {} packages, {edges} edges, discovered in {fastest:?}",
        packages.len()
    );
}

#[test]
fn two_nested_workspaces_may_name_a_package_alike() {
    // Each workspace's names are unique in it, not across workspaces: both packages stay.
    let ws = Scratch::new(&[
        ("go.mod", "module example.com/m\n"),
        ("apps/a/package.json", "{\"name\": \"ui\"}\n"),
        ("apps/b/package.json", "{\"name\": \"ui\"}\n"),
    ]);
    let (found, reader) = run(&ws);
    let mut names: Vec<(&str, &str)> = found
        .iter()
        .filter(|t| t.ecosystem == Ecosystem::JavaScript)
        .map(|t| (t.name.as_str(), t.path.as_str()))
        .collect();
    names.sort_unstable();
    assert_eq!(names, [("ui", "apps/a"), ("ui-2", "apps/b")]);
    let codes: Vec<&str> = reader.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(codes, ["duplicate-nested-package"]);
    let warning = &reader.diagnostics[0];
    assert_eq!(warning.file, "apps/b/package.json");
    assert!(warning.message.contains("`apps/a`"), "{}", warning.message);
}

/// A package found at the root is looked at, not entered: its own folder may hold another
/// ecosystem's workspace (a napi-rs crate beside its `package.json`), but what lies below it is
/// the package's own, and the survey lists each package folder once instead of walking it.
#[test]
fn a_package_folder_is_looked_at_but_not_entered() {
    let ws = Scratch::new(&[
        (
            "package.json",
            "{\"name\": \"root\", \"private\": true, \"workspaces\": [\"packages/*\"]}\n",
        ),
        ("packages/a/package.json", "{\"name\": \"a\"}\n"),
        (
            "packages/a/Cargo.toml",
            "[package]\nname = \"a-native\"\nversion = \"0.1.0\"\n",
        ),
        ("packages/b/package.json", "{\"name\": \"b\"}\n"),
        (
            "packages/b/native/Cargo.toml",
            "[package]\nname = \"b-native\"\nversion = \"0.1.0\"\n",
        ),
        (
            "tools/py/pyproject.toml",
            "[project]\nname = \"py\"\nversion = \"0\"\n",
        ),
    ]);
    let (found, reader) = run(&ws);
    assert_eq!(
        packages(&found),
        [
            "cargo packages/a",
            "javascript packages/a",
            "javascript packages/b",
            "python tools/py",
        ]
    );
    // One survey for Cargo, Python and Go together, which listed no folder below a package.
    let surveys: Vec<_> = reader
        .listings
        .iter()
        .filter(|l| l.globs.first().is_some_and(|g| g.starts_with('\0')))
        .collect();
    assert_eq!(surveys.len(), 1, "{surveys:?}");
    let listed: Vec<&str> = surveys[0]
        .trace
        .listed
        .iter()
        .map(|(rel, _)| rel.as_str())
        .collect();
    assert!(!listed.contains(&"packages/b/native"), "{listed:?}");
    assert!(listed.contains(&"packages/b"), "{listed:?}");
}

/// The survey never follows a link to a folder: a repository's `rust -> /elsewhere` link cannot
/// bring a workspace outside it into the graph.
#[cfg(unix)]
#[test]
fn a_linked_folder_is_never_surveyed() {
    let outside = Scratch::new(&[(
        "Cargo.toml",
        "[package]\nname = \"outside\"\nversion = \"0.1.0\"\n",
    )]);
    let ws = Scratch::new(&[("go.mod", "module example.com/m\n")]);
    std::os::unix::fs::symlink(&outside.0, ws.0.join("rust")).expect("links");
    let (found, _) = run(&ws);
    assert_eq!(packages(&found), ["go ."]);
}

/// A manifest that appears inside a package folder after a load is seen by that load's record
/// (the next `once` notices the workspace changed) and found by the next load, with the survey
/// run ahead of the root's discovery as every load on more than one core runs it.
#[test]
fn a_manifest_added_in_a_package_folder_is_found_by_the_next_load() {
    let ws = Scratch::new(&[
        (
            "package.json",
            "{\"name\": \"root\", \"private\": true, \"workspaces\": [\"packages/*\"]}\n",
        ),
        ("packages/a/package.json", "{\"name\": \"a\"}\n"),
        ("packages/b/package.json", "{\"name\": \"b\"}\n"),
    ]);
    let (found, reader) = run(&ws);
    assert_eq!(
        packages(&found),
        ["javascript packages/a", "javascript packages/b"]
    );
    ws.write(
        "packages/a/Cargo.toml",
        "[package]\nname = \"a-native\"\nversion = \"0.1.0\"\n",
    );
    ws.write("packages/b/pyproject.toml", "[project]\nname = \"b-py\"\n");
    assert!(
        reader.listings.iter().any(|l| l.changed(&ws.0)),
        "no listing notices the manifests added in package folders"
    );
    let (found, _) = run(&ws);
    assert_eq!(
        packages(&found),
        [
            "cargo packages/a",
            "javascript packages/a",
            "javascript packages/b",
            "python packages/b",
        ]
    );
}

/// Every manifest name any ecosystem's survey looks for.
fn all_markers() -> Vec<&'static str> {
    Ecosystem::ALL
        .iter()
        .flat_map(|e| super::markers(*e).iter().copied())
        .collect()
}

/// Each ecosystem's manifest names, as the survey run ahead takes them.
fn all_groups() -> Vec<&'static [&'static str]> {
    Ecosystem::ALL
        .iter()
        .map(|e| super::markers(*e))
        .filter(|m| !m.is_empty())
        .collect()
}

/// What a survey saw: the manifests it found (`folder marker`) and the folders it listed, each
/// sorted.
type Seen = (Vec<String>, Vec<String>);

fn seen(found: &[(String, &str)], trace: &Trace) -> Seen {
    let found = found.iter().map(|(f, m)| format!("{f} {m}")).collect();
    let mut listed: Vec<String> = trace.listed.iter().map(|(rel, _)| rel.clone()).collect();
    listed.sort();
    (found, listed)
}

/// The survey run ahead, with the root's packages known after `arrival` listings (never, before
/// it has to wait for them, when `arrival` is `usize::MAX`); `None` when it threw its walk away.
/// Also how many listings it made before it needed the packages.
fn ahead(ws: &Scratch, packages: &HashSet<String>, arrival: usize) -> (Option<Seen>, usize) {
    let mut asked = 0;
    let mut listed_before_wait = 0;
    let walked = walk_ahead(&ws.0, &all_groups(), |wait| {
        if wait {
            return Packages::Known(packages.clone());
        }
        asked += 1;
        if asked > arrival {
            Packages::Known(packages.clone())
        } else {
            listed_before_wait += 1;
            Packages::NotYet
        }
    });
    (
        walked.map(|(found, trace)| seen(&found, &trace)),
        listed_before_wait,
    )
}

/// The survey run ahead answers as the walk does, whenever the root's packages come: before its
/// first listing, after a few, or only once it has listed all it could without them. A guess
/// proven wrong (a package whose folder holds no manifest, entered before the packages came)
/// throws the walk away, and the survey walks again.
#[test]
fn the_survey_run_ahead_sees_what_the_walk_sees_whenever_the_packages_come() {
    let js_root = (
        "package.json",
        "{\"name\": \"root\", \"private\": true, \"workspaces\": [\"packages/*\"]}\n",
    );
    let cargo = "[package]\nname = \"x\"\nversion = \"0.1.0\"\n";
    let cases: Vec<(&str, Scratch, Vec<&str>, bool)> = vec![
        ("polyglot", polyglot(), vec![], false),
        (
            "package folders",
            Scratch::new(&[
                js_root,
                ("packages/a/package.json", "{\"name\": \"a\"}\n"),
                ("packages/a/Cargo.toml", cargo),
                ("packages/b/package.json", "{\"name\": \"b\"}\n"),
                ("packages/b/native/Cargo.toml", cargo),
                ("tools/py/pyproject.toml", "[project]\nname = \"py\"\n"),
            ]),
            vec!["packages/a", "packages/b"],
            false,
        ),
        (
            "a manifest that is no package",
            Scratch::new(&[
                js_root,
                ("packages/a/package.json", "{\"name\": \"a\"}\n"),
                ("tools/gen/package.json", "{\"name\": \"gen\"}\n"),
                ("tools/gen/native/Cargo.toml", cargo),
            ]),
            vec!["packages/a"],
            false,
        ),
        (
            "a package without a manifest in its folder",
            Scratch::new(&[("lib/sub/Cargo.toml", cargo)]),
            vec!["lib"],
            true,
        ),
    ];
    for (what, ws, packages, guesses_wrong) in &cases {
        let packages: HashSet<String> = packages.iter().map(|p| (*p).to_string()).collect();
        let (found, trace) = walk(&ws.0, &all_markers(), &packages);
        let expected = seen(&found, &trace);
        for arrival in [0, 1, 2, 3, usize::MAX] {
            match ahead(ws, &packages, arrival) {
                (Some(walked), _) => assert_eq!(walked, expected, "{what}, arrival {arrival}"),
                (None, _) if *guesses_wrong && arrival > 0 => {}
                (None, _) => panic!("{what}: the walk was thrown away, arrival {arrival}"),
            }
        }
        let (walked, _) = ahead(ws, &packages, usize::MAX);
        assert_eq!(walked.is_none(), *guesses_wrong, "{what}");
    }
}

/// Why it runs ahead: in a workspace whose packages each hold their manifest, the survey lists
/// every folder it lists before it needs the root's packages, so a thousand package folders are
/// listed while the root's discovery reads their manifests, not after.
#[test]
fn the_survey_run_ahead_lists_every_folder_before_it_needs_the_root_packages() {
    let mut files = vec![(
        "package.json".to_string(),
        "{\"name\": \"root\", \"private\": true, \"workspaces\": [\"packages/*\"]}\n".to_string(),
    )];
    for i in 0..50 {
        files.push((
            format!("packages/pkg-{i}/package.json"),
            format!("{{\"name\": \"pkg-{i}\"}}\n"),
        ));
        files.push((format!("packages/pkg-{i}/src/index.js"), String::new()));
    }
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let ws = Scratch::new(&files);
    let packages: HashSet<String> = (0..50).map(|i| format!("packages/pkg-{i}")).collect();
    let (walked, listed_before_wait) = ahead(&ws, &packages, usize::MAX);
    let (_, listed) = walked.expect("the walk was kept");
    // The root, `packages/` and the fifty package folders, never their `src/`.
    assert_eq!(listed.len(), 52, "{listed:?}");
    assert_eq!(listed_before_wait, listed.len());
}

/// A root that holds every ecosystem's manifest may leave no ecosystem missing, and then no
/// survey follows: the survey lists the root alone before the packages come, so it never slows
/// a root's discovery down for nothing; and it still answers as the walk does.
#[test]
fn a_survey_run_ahead_waits_when_every_ecosystem_is_at_the_root() {
    let ws = Scratch::new(&[
        (
            "package.json",
            "{\"name\": \"root\", \"private\": true, \"workspaces\": [\"packages/*\"]}\n",
        ),
        ("Cargo.toml", "[workspace]\nmembers = [\"crates/*\"]\n"),
        ("pyproject.toml", "[project]\nname = \"root\"\n"),
        ("go.mod", "module example.com/m\n"),
        ("packages/a/package.json", "{\"name\": \"a\"}\n"),
        (
            "crates/b/Cargo.toml",
            "[package]\nname = \"b\"\nversion = \"0.1.0\"\n",
        ),
        ("tools/py/pyproject.toml", "[project]\nname = \"py\"\n"),
    ]);
    let packages: HashSet<String> = ["packages/a", "crates/b"]
        .iter()
        .map(|p| (*p).to_string())
        .collect();
    let (found, trace) = walk(&ws.0, &all_markers(), &packages);
    let (walked, listed_before_wait) = ahead(&ws, &packages, usize::MAX);
    assert_eq!(walked, Some(seen(&found, &trace)));
    assert_eq!(listed_before_wait, 1);
}

/// A survey whose packages never come (every ecosystem found packages at the root, so none is
/// looked for below) stops without an answer.
#[test]
fn a_survey_run_ahead_stops_when_its_packages_never_come() {
    let ws = polyglot();
    let walked = walk_ahead(&ws.0, &all_groups(), |_| Packages::Dropped);
    assert!(walked.is_none());
}

/// Every name a survey looks for is one the walk keeps from a listing.
#[test]
fn every_marker_is_a_manifest_name() {
    for marker in all_markers() {
        assert!(crate::discover::MARKERS.contains(&marker), "{marker}");
    }
}
