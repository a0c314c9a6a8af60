//! The real-repository table: for each trimmed fixture of a real repository
//! (`crates/once-graph/testdata/discover/NAME`, with its `SOURCE`, license and `ci.txt`), what
//! `once query graph --json` infers against the ecosystem's own answer (`expected.json`, where the
//! fixture has one) and what `once run --dry-run --all test --json` plans, beside what the
//! repository's contributors run for tests (`ci.txt`, read from their CI files).
//!
//! Two files are generated from these runs and checked here, as `docs/tools.md` is: the plans of
//! every fixture (`snapshots/real_repositories_plans.txt`) and the Markdown table in docs/src/guides/discovery.md
//! between the `real repositories` markers. A test fails when either is stale; `ONCE_BLESS=1`
//! rewrites both. Run with `--nocapture` to print the table.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::{TempDir, copy_tree, once_binary, output_within};

const TABLE_START: &str = "<!-- real repositories -->";
const TABLE_END: &str = "<!-- /real repositories -->";
/// How many planned actions the table names before it counts the rest.
const PLAN_NAMED: usize = 2;

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../once-graph/testdata/discover");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("lists the fixtures")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.join("SOURCE").is_file())
        .collect();
    found.sort();
    assert!(found.len() >= 11, "{found:?}");
    found
}

/// What `once ARGS` printed as JSON, or the first line of its error when it refused.
fn once_answer(root: &Path, args: &[&str]) -> Result<Value, String> {
    let mut command = Command::new(once_binary());
    command
        .arg("--workspace")
        .arg(root)
        .args(args)
        .env_remove("ONCE_LOG")
        .stdin(Stdio::null());
    let output = output_within(command);
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(stderr.lines().next().unwrap_or_default().to_owned());
    }
    serde_json::from_slice(&output.stdout).map_err(|e| format!("{args:?}: {e}"))
}

fn once_json(root: &Path, args: &[&str]) -> Value {
    once_answer(root, args).unwrap_or_else(|e| panic!("{args:?} in {}: {e}", root.display()))
}

/// The "kind" of a polyglot fixture's targets: every kind but the root target's.
const POLYGLOT: &str = "*";

/// The target kind of the ecosystem a fixture is named after (`cargo-tokio` → Cargo).
fn ecosystem(name: &str) -> (&'static str, &'static str) {
    match name.split('-').next() {
        Some("cargo") => ("Cargo", "cargo-package"),
        Some("javascript") => ("JavaScript", "npm-package"),
        Some("python") => ("Python", "python-project"),
        Some("go") => ("Go", "go-module"),
        // Several ecosystems, each in its own folder: every target but the root's.
        Some("polyglot") => ("several", POLYGLOT),
        other => panic!("no ecosystem for a fixture named {other:?}"),
    }
}

/// An edge by folders: `(from, to, kind)`.
type Edge = (String, String, String);

/// The packages (by folder) and edges of `expected.json`, in any of its three shapes: edges
/// inside each target (Cargo, Python), the same by module path (Go), or one list of
/// `[from, to, kind]` by name (JavaScript).
fn theirs(expected: &Value) -> (BTreeSet<String>, BTreeSet<Edge>) {
    let targets = expected["targets"].as_array().expect("targets");
    let folder_of: BTreeMap<&str, &str> = targets
        .iter()
        .map(|t| {
            let name = t["name"].as_str().or(t["module"].as_str()).expect("a name");
            (name, t["path"].as_str().expect("a path"))
        })
        .collect();
    let folder = |name: &str| -> String {
        folder_of
            .get(name)
            .unwrap_or_else(|| panic!("`{name}` is no package of expected.json"))
            .to_string()
    };
    let mut edges = BTreeSet::new();
    for t in targets {
        let from = t["path"].as_str().expect("a path").to_owned();
        for e in t["edges"].as_array().into_iter().flatten() {
            let to = folder(e["to"].as_str().expect("to"));
            edges.insert((
                from.clone(),
                to,
                e["kind"].as_str().expect("kind").to_owned(),
            ));
        }
    }
    for e in expected["edges"].as_array().into_iter().flatten() {
        let part = |i: usize| e[i].as_str().expect("[from, to, kind]").to_owned();
        edges.insert((folder(&part(0)), folder(&part(1)), part(2)));
    }
    // Every target's folder: two modules may share a name (dagger's test modules do), so the
    // name map alone would count one.
    let packages = targets
        .iter()
        .map(|t| t["path"].as_str().expect("a path").to_owned())
        .collect();
    (packages, edges)
}

/// The same for a polyglot fixture's `expected.json`: `go` (modules by path, as above),
/// `workspaces` (each nested workspace's `root` and its targets by folder below it) and
/// `javascript` (member folders only). Also answers the folders whose edges the answer holds:
/// a section of folders alone says nothing of their edges.
fn theirs_polyglot(expected: &Value) -> (BTreeSet<String>, BTreeSet<Edge>, BTreeSet<String>) {
    let mut packages = BTreeSet::new();
    let mut edges = BTreeSet::new();
    let mut known = BTreeSet::new();
    let below = |root: &str, path: &str| match (root, path) {
        (".", p) => p.to_owned(),
        (r, ".") => r.to_owned(),
        (r, p) => format!("{r}/{p}"),
    };
    let mut section = |root: &str, targets: &[Value]| {
        let shifted: Vec<Value> = targets
            .iter()
            .map(|t| {
                let mut t = t.clone();
                t["path"] = Value::from(below(root, t["path"].as_str().expect("a path")));
                t
            })
            .collect();
        let (p, e) = theirs(&serde_json::json!({ "targets": shifted }));
        known.extend(p.iter().cloned());
        packages.extend(p);
        edges.extend(e);
    };
    if let Some(go) = expected["go"].as_array() {
        section(".", go);
    }
    for w in expected["workspaces"].as_array().into_iter().flatten() {
        let root = w["root"].as_str().expect("a root");
        section(root, w["targets"].as_array().expect("targets"));
    }
    for folder in expected["javascript"].as_array().into_iter().flatten() {
        packages.insert(folder.as_str().expect("a folder").to_owned());
    }
    (packages, edges, known)
}

/// The packages (by folder) and edges of our picture, among targets of `kind`.
fn ours(picture: &Value, kind: &str) -> (BTreeSet<String>, BTreeSet<Edge>) {
    let folder_of: BTreeMap<&str, &str> = picture["targets"]
        .as_array()
        .expect("targets")
        .iter()
        .filter(|t| {
            if kind == POLYGLOT {
                t["kind"] != "workspace"
            } else {
                t["kind"] == kind
            }
        })
        .map(|t| {
            (
                t["name"].as_str().expect("name"),
                t["folder"].as_str().expect("folder"),
            )
        })
        .collect();
    let mut edges = BTreeSet::new();
    for e in picture["edges"].as_array().expect("edges") {
        let (Some(from), Some(to)) = (
            folder_of.get(e["from"].as_str().expect("from")),
            folder_of.get(e["to"].as_str().expect("to")),
        ) else {
            continue;
        };
        for k in e["kinds"].as_array().expect("kinds") {
            edges.insert((
                from.to_string(),
                to.to_string(),
                k.as_str().expect("a kind").to_owned(),
            ));
        }
    }
    (folder_of.values().map(|f| f.to_string()).collect(), edges)
}

/// Ours against theirs when edges of one pair count once, at their strongest kind, as the
/// JavaScript lockfiles say (they do not keep a dev edge apart from a normal one).
fn strongest(edges: &BTreeSet<Edge>) -> BTreeSet<Edge> {
    let rank = |kind: &str| {
        ["normal", "dev", "optional", "build"]
            .iter()
            .position(|k| *k == kind)
    };
    let mut best: BTreeMap<(String, String), String> = BTreeMap::new();
    for (from, to, kind) in edges {
        let slot = best
            .entry((from.clone(), to.clone()))
            .or_insert_with(|| kind.clone());
        if rank(kind) < rank(slot) {
            *slot = kind.clone();
        }
    }
    best.into_iter().map(|((f, t), k)| (f, t, k)).collect()
}

/// One fixture's row of the table and its plan's lines.
struct Row {
    markdown: String,
    plan: String,
}

fn row(fixture: &Path) -> Row {
    let name = fixture
        .file_name()
        .and_then(|n| n.to_str())
        .expect("a name")
        .to_owned();
    let source = std::fs::read_to_string(fixture.join("SOURCE")).expect("reads SOURCE");
    let repository = source
        .lines()
        .find_map(|l| l.strip_prefix("repository: https://github.com/"))
        .unwrap_or_else(|| panic!("{name}: SOURCE names no GitHub repository"))
        .trim()
        .to_owned();
    let ci = std::fs::read_to_string(fixture.join("ci.txt"))
        .unwrap_or_else(|_| panic!("{name}: no ci.txt saying what contributors run for tests"));
    let contributors = ci
        .lines()
        .find(|l| !l.starts_with('#') && !l.trim().is_empty())
        .unwrap_or_else(|| panic!("{name}: ci.txt names no command"))
        .trim()
        .to_owned();

    let dir = TempDir::new();
    copy_tree(fixture, dir.path());
    // A repository none of whose packages has a `test` is refused with a message: that message
    // is its plan.
    let plan = once_answer(dir.path(), &["run", "--dry-run", "--all", "test", "--json"]);
    let picture = once_json(dir.path(), &["query", "graph", "--json"]);

    let (ecosystem, kind) = ecosystem(&name);
    let (our_packages, our_edges) = ours(&picture, kind);
    let (packages, edges) = match std::fs::read_to_string(fixture.join("expected.json")) {
        Ok(text) => {
            let expected: Value = serde_json::from_str(&text).expect("expected.json is JSON");
            let (their_packages, their_edges, mine) = if kind == POLYGLOT {
                let (packages, edges, known) = theirs_polyglot(&expected);
                let mine: BTreeSet<Edge> = our_edges
                    .iter()
                    .filter(|(from, _, _)| known.contains(from))
                    .cloned()
                    .collect();
                (packages, edges, mine)
            } else {
                let (packages, edges) = theirs(&expected);
                let mine = if expected["edges"].is_array() {
                    strongest(&our_edges)
                } else {
                    our_edges.clone()
                };
                (packages, edges, mine)
            };
            let mismatches = mine.symmetric_difference(&their_edges).count()
                + our_packages.symmetric_difference(&their_packages).count();
            (
                format!("{}/{}", our_packages.len(), their_packages.len()),
                format!(
                    "{}/{}, {mismatches} mismatches",
                    mine.len(),
                    their_edges.len()
                ),
            )
        }
        Err(_) => (
            format!("{}/–", our_packages.len()),
            format!("{}/– (no ecosystem answer kept)", our_edges.len()),
        ),
    };

    let (lines, planned) = match &plan {
        Ok(plan) => plan_text(&name, plan),
        Err(refused) => (
            format!("## {name}\nrefused: {refused}\n"),
            format!("refused: {}", refused.trim_start_matches("error: ")).replace('|', "\\|"),
        ),
    };
    Row {
        markdown: format!(
            "| {repository} | {ecosystem} | {packages} | {edges} | {planned} | `{}` |\n",
            contributors.replace('|', "\\|")
        ),
        plan: lines,
    }
}

/// The plan's lines for the snapshot, and its summary for the table.
fn plan_text(name: &str, plan: &Value) -> (String, String) {
    let actions = plan["actions"].as_array().expect("planned actions");
    let mut lines = format!("## {name}\n");
    for a in actions {
        lines.push_str(&format!(
            "{} {}: {}\n",
            a["verdict"].as_str().unwrap_or_default(),
            a["action"].as_str().unwrap_or_default(),
            a["command"].as_str().unwrap_or_default()
        ));
    }
    let mut summary = actions
        .iter()
        .take(PLAN_NAMED)
        .map(|a| {
            format!(
                "`{}` (`{}`)",
                a["action"].as_str().unwrap_or_default(),
                a["command"]
                    .as_str()
                    .unwrap_or_default()
                    .replace('|', "\\|")
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    if actions.len() > PLAN_NAMED {
        summary.push_str(&format!(" and {} more", actions.len() - PLAN_NAMED));
    }
    let planned = match actions.len() {
        0 => "nothing".to_owned(),
        1 => format!("1 action: {summary}"),
        n => format!("{n} actions: {summary}"),
    };
    (lines, planned)
}

/// Replaces what lies between the markers of `text` with `body`; `None` without markers.
fn between_markers(text: &str, body: &str) -> Option<String> {
    let start = text.find(TABLE_START)? + TABLE_START.len();
    let end = start + text[start..].find(TABLE_END)?;
    Some(format!("{}\n{body}{}", &text[..start], &text[end..]))
}

#[test]
fn the_real_repository_table_is_what_the_fixtures_answer() {
    let rows: Vec<Row> = fixtures().iter().map(|f| row(f)).collect();
    let mut table = String::from(
        "| repository | ecosystem | packages (ours/theirs) | edges (ours/theirs) | `once run --dry-run --all test` plans | contributors run |\n\
         | --- | --- | --- | --- | --- | --- |\n",
    );
    let mut plans = String::new();
    for row in &rows {
        table.push_str(&row.markdown);
        plans.push_str(&row.plan);
    }
    println!("{table}");

    let bless = std::env::var_os("ONCE_BLESS").is_some();
    let plans_path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/cli/snapshots/real_repositories_plans.txt");
    if bless {
        std::fs::write(&plans_path, &plans).expect("writes the plans");
    }
    let committed = std::fs::read_to_string(&plans_path).unwrap_or_default();
    assert!(
        committed == plans,
        "the plans of the real repositories changed: check them, then run this test with \
         ONCE_BLESS=1\n{plans}"
    );

    let guide_path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src/guides/discovery.md");
    let guide = std::fs::read_to_string(&guide_path).expect("reads docs/src/guides/discovery.md");
    let fresh = between_markers(&guide, &table)
        .expect("docs/src/guides/discovery.md has the table's markers");
    if bless && fresh != guide {
        std::fs::write(&guide_path, &fresh).expect("writes docs/src/guides/discovery.md");
        return;
    }
    assert!(
        fresh == guide,
        "the real-repository table in docs/src/guides/discovery.md is stale: run this test with ONCE_BLESS=1\n{table}"
    );
}

#[test]
fn every_fixture_says_what_its_contributors_run() {
    for fixture in fixtures() {
        let ci = std::fs::read_to_string(fixture.join("ci.txt")).unwrap_or_default();
        let mut lines = ci.lines();
        let source = lines.next().unwrap_or_default();
        assert!(
            source.starts_with("# what contributors run for tests: .github/"),
            "{}: ci.txt must open with where in the CI files it was read: {source:?}",
            fixture.display()
        );
        assert!(
            lines.any(|l| !l.trim().is_empty()),
            "{}: ci.txt names no command",
            fixture.display()
        );
    }
}
