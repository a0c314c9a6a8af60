//! Benchmarks of the graph on a generated 10,000-target workspace: load + validate, the first page
//! of `targets`, one `target` lookup, the transitive dependents of a leaf, and what a change to
//! a leaf's source or to the root lockfile affects.
//!
//! Run with `cargo bench -p once-graph --bench graph`. The workspace comes from
//! `bench/gen_workspace.py` (the same generator the other benchmarks use), written once into a
//! temporary folder before timing starts.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use once_graph::Workspace;
use once_graph::query::{self, GraphMode, GraphQuery, TargetQuery, TargetsQuery};

const TARGETS: usize = 10_000;

fn main() {
    divan::main();
}

/// The generated workspace, shared by every benchmark.
fn workspace_root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let root = std::env::temp_dir().join(format!("once-bench-graph-{TARGETS}"));
        let generator = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/gen_workspace.py");
        let status = Command::new("python3")
            .arg(&generator)
            .arg(&root)
            .args(["--targets", &TARGETS.to_string()])
            .status()
            .expect("python3 runs the workspace generator");
        assert!(status.success(), "the generator failed");
        root
    })
}

fn loaded() -> &'static Workspace {
    static LOADED: OnceLock<Workspace> = OnceLock::new();
    LOADED.get_or_init(|| {
        wait_until_settled(&workspace_root().join("once.toml"));
        let workspace = Workspace::load(workspace_root()).expect("the generated workspace loads");
        assert!(!workspace.has_errors(), "{:?}", workspace.diagnostics());
        workspace
    })
}

/// A manifest written a moment ago is "racily clean": its times cannot prove it unchanged, so
/// every freshness check hashes it. That lasts two seconds after a write; the steady state, which
/// these benchmarks measure, starts after it. (A benchmark may wait; a test may not.)
fn wait_until_settled(manifest: &Path) {
    let written = std::fs::metadata(manifest)
        .and_then(|m| m.modified())
        .expect("the manifest exists");
    let settled = written + std::time::Duration::from_millis(2_100);
    if let Ok(left) = settled.duration_since(std::time::SystemTime::now()) {
        std::thread::sleep(left);
    }
}

#[divan::bench(sample_count = 20)]
fn load_and_validate_10k() -> Workspace {
    Workspace::load(divan::black_box(workspace_root())).expect("loads")
}

#[divan::bench]
fn is_stale_10k() -> bool {
    loaded().is_stale()
}

#[divan::bench]
fn targets_first_page() -> query::TargetsPage {
    query::targets(loaded(), &TargetsQuery::default()).expect("answers")
}

#[divan::bench]
fn target_lookup() -> query::TargetDetail {
    let q = TargetQuery {
        name: "pkg-05000".into(),
        ..Default::default()
    };
    query::target(loaded(), divan::black_box(&q)).expect("answers")
}

#[divan::bench]
fn transitive_dependents_of_a_leaf() -> query::GraphAnswer {
    // `pkg-00000` depends on nothing: a leaf, and the one with the most dependents.
    let q = GraphQuery {
        mode: GraphMode::Dependents,
        target: "pkg-00000".into(),
        to: None,
        transitive: Some(true),
        capability: None,
        cursor: None,
        limit: None,
    };
    query::graph(loaded(), divan::black_box(&q)).expect("answers")
}

#[divan::bench]
fn workspace_overview() -> query::WorkspaceInfo {
    query::workspace(loaded())
}

#[divan::bench]
fn affected_by_the_leaf_source() -> query::AffectedAnswer {
    // `pkg-00000` is the leaf every other target is most likely to depend on.
    let q = query::AffectedQuery {
        files: vec!["packages/pkg-00000/src/lib.rs".into()],
        ..Default::default()
    };
    query::affected(loaded(), divan::black_box(&q)).expect("answers")
}

#[divan::bench]
fn affected_by_the_root_lockfile() -> query::AffectedAnswer {
    // `//Cargo.lock` is an input of every cargo target's every capability.
    let q = query::AffectedQuery {
        files: vec!["Cargo.lock".into()],
        ..Default::default()
    };
    query::affected(loaded(), divan::black_box(&q)).expect("answers")
}
