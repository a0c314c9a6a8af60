//! Root tasks: the commands contributors run from the repository's root are capabilities of one
//! target at `.` (ecosystem `workspace`): the root `package.json`'s scripts of a JavaScript
//! workspace, a Cargo workspace's workspace-wide commands (nextest where the repository
//! configures it), and the recipes of a `justfile` or a `Makefile`.

use once_graph::Workspace;
use once_graph::discover::Ecosystem;
use once_graph::model::Target;

use crate::util::TempWs;

fn root(ws: &Workspace) -> &Target {
    ws.targets()
        .iter()
        .find(|t| {
            t.path == "." && t.inference.as_ref().map(|i| i.ecosystem) == Some(Ecosystem::Workspace)
        })
        .unwrap_or_else(|| {
            let names: Vec<_> = ws.targets().iter().map(|t| (&t.name, &t.path)).collect();
            panic!("no root target among {names:?}")
        })
}

fn command<'a>(t: &'a Target, capability: &str) -> &'a str {
    &t.capability(capability)
        .unwrap_or_else(|| {
            let names: Vec<_> = t.capabilities.iter().map(|c| &*c.name).collect();
            panic!("`{}` has no `{capability}` among {names:?}", t.name)
        })
        .command
}

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/discover")
        .join(name)
}

/// vuejs/core: the packages have no scripts; `pnpm test` and the rest live in the root.
#[test]
fn vues_root_scripts_are_the_root_targets_capabilities() {
    let ws = Workspace::load(&fixture("javascript-vue")).expect("loads");
    assert!(!ws.has_errors(), "{:?}", ws.diagnostics());
    let root = root(&ws);
    assert_eq!(root.name, "root");
    assert_eq!(command(root, "test"), "pnpm run test");
    assert_eq!(command(root, "lint"), "pnpm run lint");
    assert_eq!(command(root, "check"), "pnpm run check");
    assert!(root.capability("dev").unwrap().persistent);
    // Its key reads the whole repository: vitest runs every package's tests.
    assert!(root.capability("test").unwrap().inputs.is_empty());
    // The packages keep their own (empty) script lists: no capability is invented for them.
    let reactivity = ws.target("vue-reactivity").expect("a package");
    assert!(reactivity.capability("test").is_none());
}

/// babel/babel: yarn 4 scripts at the root that call `make`, and the Makefile's own targets.
#[test]
fn babels_root_scripts_and_makefile_are_the_root_targets_capabilities() {
    let ws = Workspace::load(&fixture("javascript-babel")).expect("loads");
    assert!(!ws.has_errors(), "{:?}", ws.diagnostics());
    let root = root(&ws);
    assert_eq!(command(root, "test"), "yarn run test");
    // A Makefile target named like a script keeps the script's name for the script.
    assert_eq!(command(root, "make-test"), "make test");
    assert_eq!(command(root, "test-only"), "yarn run test-only");
    assert_eq!(command(root, "tscheck"), "make tscheck");
    assert!(root.capability("watch").unwrap().persistent);
    // A file target and a variable are no capability.
    assert!(root.capabilities.iter().all(|c| !c.name.contains('.')));
    assert!(root.capability("COMMA").is_none());
}

/// astral-sh/uv: contributors run `cargo nextest run --workspace` (`.config/nextest.toml`).
#[test]
fn a_cargo_workspace_with_nextest_tests_the_workspace_with_nextest() {
    let ws = Workspace::load(&fixture("cargo-uv")).expect("loads");
    assert!(!ws.has_errors(), "{:?}", ws.diagnostics());
    let root = root(&ws);
    assert_eq!(command(root, "test"), "cargo nextest run --workspace");
    assert_eq!(
        command(root, "check"),
        "cargo check --workspace --all-targets"
    );
    assert_eq!(
        command(root, "lint"),
        "cargo clippy --workspace --all-targets -- -D warnings"
    );
    assert_eq!(command(root, "fmt"), "cargo fmt --all");
    // It stands for every crate's `test`, and reads what they read, not the README.
    let test = root.capability("test").unwrap();
    assert_eq!(test.stands_for, Some(Ecosystem::Cargo));
    for input in ["crates/uv-python/**", "Cargo.lock", ".config/nextest.toml"] {
        assert!(
            test.inputs.iter().any(|i| i == input),
            "{input} in {:?}",
            test.inputs
        );
    }
    assert!(!test.inputs.iter().any(|i| i == "**"), "{:?}", test.inputs);
}

#[test]
fn a_cargo_workspace_without_nextest_tests_the_workspace_with_cargo_test() {
    let tmp = TempWs::new(&[
        ("Cargo.toml", "[workspace]\nmembers = [\"a\"]\n"),
        (
            "a/Cargo.toml",
            "[package]\nname = \"a\"\nversion = \"0.1.0\"\n",
        ),
        ("a/src/lib.rs", ""),
    ]);
    let ws = tmp.load();
    assert_eq!(command(root(&ws), "test"), "cargo test --workspace");
}

/// casey/just: a Cargo workspace with a `justfile`; recipes that need an argument, private ones
/// and aliases are no capability, and a recipe that runs a watcher is persistent.
#[test]
fn justfile_recipes_are_the_root_targets_capabilities() {
    let ws = Workspace::load(&fixture("cargo-just")).expect("loads");
    assert!(!ws.has_errors(), "{:?}", ws.diagnostics());
    let root = root(&ws);
    // Cargo's workspace-wide `test` keeps the name; the recipe of that name is `just-test`.
    assert_eq!(command(root, "test"), "cargo test --workspace");
    assert_eq!(command(root, "just-test"), "just test");
    assert_eq!(command(root, "ci"), "just ci");
    assert_eq!(command(root, "shellcheck"), "just shellcheck");
    assert!(root.capability("watch").unwrap().persistent);
    // `test` waits on `watch`, a watcher: it never ends either.
    assert!(root.capability("just-test").unwrap().persistent);
    assert!(root.capability("filter").is_none(), "needs `PATTERN`");
    assert!(root.capability("t").is_none(), "an alias");
}

#[test]
fn a_lone_package_has_no_root_target() {
    let tmp = TempWs::new(&[(
        "package.json",
        r#"{ "name": "solo", "scripts": { "test": "node t.js" } }"#,
    )]);
    let ws = tmp.load();
    assert!(
        ws.targets()
            .iter()
            .all(|t| t.inference.as_ref().map(|i| i.ecosystem) != Some(Ecosystem::Workspace)),
        "the root package's scripts are its own"
    );
    assert_eq!(
        ws.target("solo")
            .unwrap()
            .capability("test")
            .unwrap()
            .command
            .as_ref(),
        "npm run test"
    );
}

/// A root script reads every package: a change in one re-runs it, as its key says.
#[test]
fn a_change_in_any_package_affects_the_root_script() {
    let ws = Workspace::load(&fixture("javascript-vue")).expect("loads");
    let answer = once_graph::query::affected(
        &ws,
        &once_graph::query::AffectedQuery {
            files: vec!["packages/reactivity/src/effect.ts".into()],
            capability: Some("test".into()),
            ..Default::default()
        },
    )
    .expect("answers");
    let actions: Vec<&str> = answer.actions.iter().map(|a| a.action.as_str()).collect();
    assert_eq!(actions, ["root:test"]);
}
