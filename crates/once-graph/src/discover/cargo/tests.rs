use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use super::super::scratch::Scratch;
use super::super::{EdgeKind, Inferred, Reader};
use super::discover;
use crate::discover::name_at;

/// (target name, folder, edges as `to/kind`): the shape both discovery and Cargo answer in.
type Graph = Vec<(String, String, Vec<String>)>;

fn run(root: &Path) -> (Vec<Inferred>, Reader) {
    let mut reader = Reader::new(root);
    let found = discover(&mut reader);
    (found, reader)
}

fn graph(found: &[Inferred]) -> Graph {
    found
        .iter()
        .map(|t| {
            let mut edges: Vec<String> = t
                .edges
                .iter()
                .map(|e| format!("{}/{}", name_at(found, &e.folder), e.kind.name()))
                .collect();
            edges.sort();
            (t.name.clone(), t.path.clone(), edges)
        })
        .collect()
}

fn codes(reader: &Reader) -> Vec<(&'static str, String)> {
    reader
        .diagnostics
        .iter()
        .map(|d| (d.code, format!("{}:{}", d.file, d.line)))
        .collect()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/discover")
        .join(name)
}

/// The graph an `expected.json` records.
fn expected(dir: &Path) -> Graph {
    let text = std::fs::read_to_string(dir.join("expected.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let mut edges: Vec<String> = t["edges"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    format!(
                        "{}/{}",
                        e["to"].as_str().unwrap(),
                        e["kind"].as_str().unwrap()
                    )
                })
                .collect();
            edges.sort();
            let s = |k: &str| t[k].as_str().unwrap().to_string();
            (s("name"), s("path"), edges)
        })
        .collect()
}

/// Cargo's own answer for the workspace at `dir`, computed live: every member of
/// `cargo metadata --no-deps --offline`, with its dependencies whose `path` is a member's
/// folder, and its registry dependencies that the root's `[patch.REGISTRY]` redirects to one.
fn cargo_answer(dir: &Path) -> Graph {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let real = |p: &str| Path::new(p).canonicalize().unwrap();
    let root = real(meta["workspace_root"].as_str().unwrap());
    let members: BTreeSet<&str> = meta["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    let packages: Vec<&serde_json::Value> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| members.contains(p["id"].as_str().unwrap()))
        .collect();
    let folder_of = |p: &serde_json::Value| {
        real(p["manifest_path"].as_str().unwrap())
            .parent()
            .unwrap()
            .to_path_buf()
    };
    let by_folder: BTreeMap<PathBuf, &str> = packages
        .iter()
        .map(|p| (folder_of(p), p["name"].as_str().unwrap()))
        .collect();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let doc: serde_json::Value = toml::from_str(&manifest).unwrap();
    let mut patched = BTreeMap::new();
    if let Some(patch) = doc["patch"].as_object() {
        for (registry, entries) in patch {
            for (key, value) in entries.as_object().unwrap() {
                if let Some(path) = value["path"].as_str() {
                    let name = value["package"].as_str().unwrap_or(key);
                    let folder = root.join(path).canonicalize().ok();
                    patched.insert((registry.clone(), name.to_string()), folder);
                }
            }
        }
    }
    let mut graph: Graph = packages
        .iter()
        .map(|p| {
            let folder = folder_of(p);
            let rel = folder.strip_prefix(&root).unwrap().to_str().unwrap();
            let rel = if rel.is_empty() { "." } else { rel };
            let mut edges = BTreeSet::new();
            for d in p["dependencies"].as_array().unwrap() {
                let to = if let Some(path) = d["path"].as_str() {
                    Some(real(path))
                } else if d["source"]
                    .as_str()
                    .is_some_and(|s| s.starts_with("registry+"))
                {
                    let registry = d["registry"].as_str().unwrap_or("crates-io").to_string();
                    let name = d["name"].as_str().unwrap().to_string();
                    patched.get(&(registry, name)).cloned().flatten()
                } else {
                    None
                };
                let kind = d["kind"].as_str().unwrap_or("normal");
                if let Some(to) = to.and_then(|t| by_folder.get(&t))
                    && *to != p["name"].as_str().unwrap()
                {
                    edges.insert(format!("{to}/{kind}"));
                }
            }
            let name = p["name"].as_str().unwrap().to_string();
            (name, rel.to_string(), edges.into_iter().collect())
        })
        .collect();
    graph.sort();
    graph
}

fn assert_fixture(name: &str) {
    let dir = fixture(name);
    let start = Instant::now();
    let (found, reader) = run(&dir);
    let took = start.elapsed();
    let got = graph(&found);
    let edges: usize = got.iter().map(|t| t.2.len()).sum();
    eprintln!(
        "{name}: {} targets, {edges} edges, discovery {took:?}",
        got.len()
    );
    assert_eq!(
        got,
        expected(&dir),
        "{name}: discovery against expected.json"
    );
    assert_eq!(
        got,
        cargo_answer(&dir),
        "{name}: discovery against live cargo metadata"
    );
    let warnings: Vec<_> = codes(&reader);
    assert!(warnings.is_empty(), "{name}: {warnings:?}");
}

#[test]
fn tokio_matches_cargo() {
    assert_fixture("cargo-tokio");
}

#[test]
fn rust_analyzer_matches_cargo() {
    assert_fixture("cargo-rust-analyzer");
}

#[test]
fn just_matches_cargo() {
    assert_fixture("cargo-just");
}

#[test]
fn moon_matches_cargo() {
    assert_fixture("cargo-moon");
}

#[test]
fn this_workspace_matches_cargo() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap();
    let (found, reader) = run(&root);
    assert_eq!(graph(&found), cargo_answer(&root));
    assert!(found.len() >= 10, "{}", found.len());
    assert!(codes(&reader).is_empty(), "{:?}", codes(&reader));
}

const PKG: &str = "[package]\nname = \"NAME\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";

fn pkg(name: &str, rest: &str) -> String {
    format!("{}{rest}", PKG.replace("NAME", name))
}

#[test]
fn every_dependency_form_that_reaches_a_member_is_an_edge() {
    let t = Scratch::new(&[
        (
            "Cargo.toml",
            "[workspace]\nmembers = [\"crates/*\", \"./tools/x/\"]\n\
             [workspace.dependencies]\nb = { path = \"crates/b\" }\nrenamed-c = { package = \"c\", path = \"crates/c\" }\n\
             d = \"1\"\n[patch.crates-io]\nd = { path = \"crates/d\" }\n\
             [patch.\"https://github.com/rust-lang/crates.io-index\"]\nreal-f = { path = \"crates/f\" }\n",
        ),
        (
            "crates/a/Cargo.toml",
            &pkg(
                "a",
                "[dependencies]\nb.workspace = true\nrenamed-c = { workspace = true }\n\
                 [target.'cfg(unix)'.build-dependencies]\nx = { package = \"tool-x\", path = \"../../tools/x\" }\n\
                 [dev-dependencies]\nd = \"1\"\ne = { git = \"https://example.invalid/e\" }\n",
            ),
        ),
        (
            "crates/b/Cargo.toml",
            &pkg("b", "[dev-dependencies]\na = { path = \"../a\" }\n"),
        ),
        (
            "crates/c/Cargo.toml",
            &pkg(
                "c",
                "[dependencies]\nf = { package = \"real-f\", version = \"1\" }\n",
            ),
        ),
        ("crates/d/Cargo.toml", &pkg("d", "")),
        ("crates/f/Cargo.toml", &pkg("real-f", "")),
        (
            "tools/x/Cargo.toml",
            &pkg("tool-x", "[dependencies]\nd = { workspace = true }\n"),
        ),
    ]);
    let (found, reader) = run(&t.0);
    assert_eq!(
        graph(&found),
        vec![
            (
                "a".into(),
                "crates/a".into(),
                vec![
                    "b/normal".into(),
                    "c/normal".into(),
                    "d/dev".into(),
                    "tool-x/build".into()
                ]
            ),
            ("b".into(), "crates/b".into(), vec!["a/dev".into()]),
            ("c".into(), "crates/c".into(), vec!["real-f/normal".into()]),
            ("d".into(), "crates/d".into(), vec![]),
            ("real-f".into(), "crates/f".into(), vec![]),
            ("tool-x".into(), "tools/x".into(), vec!["d/normal".into()]),
        ]
    );
    assert!(codes(&reader).is_empty(), "{:?}", codes(&reader));
    let a = &found[0];
    assert_eq!(a.fields["package"], "a");
    assert_eq!(a.ecosystem, super::super::Ecosystem::Cargo);
    assert_eq!(&reader.text(a.file)[a.offset..a.offset + 4], "name");
    assert!(a.edges.iter().any(|e| e.kind == EdgeKind::Build));
}

#[test]
fn path_dependencies_inside_the_root_are_members_and_outside_ones_are_warned() {
    let t = Scratch::new(&[
        (
            "ws/Cargo.toml",
            "[workspace]\nmembers = [\"crates/*\"]\nexclude = [\"crates/ex\", \"vendor\"]\n",
        ),
        (
            "ws/crates/a/Cargo.toml",
            &pkg(
                "a",
                "[dependencies]\ninner = { path = \"../../inner\" }\nex = { path = \"../ex\" }\n\
                 v = { path = \"../../vendor/v\" }\nout = { path = \"../../../outside\" }\n",
            ),
        ),
        ("ws/crates/ex/Cargo.toml", &pkg("ex", "")),
        (
            "ws/inner/Cargo.toml",
            &pkg(
                "inner",
                "[dev-dependencies]\ndeep = { path = \"../deep/x\" }\n",
            ),
        ),
        ("ws/deep/x/Cargo.toml", &pkg("deep", "")),
        ("ws/vendor/v/Cargo.toml", &pkg("v", "")),
        ("outside/Cargo.toml", &pkg("outside", "")),
    ]);
    let root = t.0.join("ws");
    let (found, reader) = run(&root);
    let got = graph(&found);
    assert_eq!(
        got,
        vec![
            ("a".into(), "crates/a".into(), vec!["inner/normal".into()]),
            ("deep".into(), "deep/x".into(), vec![]),
            ("inner".into(), "inner".into(), vec!["deep/dev".into()]),
        ]
    );
    let warned: Vec<_> = codes(&reader);
    assert_eq!(
        warned,
        vec![
            ("path-dependency-not-member", "crates/a/Cargo.toml:7".into()),
            ("path-dependency-not-member", "crates/a/Cargo.toml:8".into()),
            ("path-dependency-not-member", "crates/a/Cargo.toml:9".into()),
        ]
    );
    assert_eq!(got, cargo_answer(&stubbed(&root)));
}

/// Gives every manifest below `root` an empty `src/lib.rs` (Cargo refuses a package without a
/// target) and returns `root`.
fn stubbed(root: &Path) -> PathBuf {
    fn walk(dir: &Path) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p);
            } else if p.file_name().is_some_and(|n| n == "Cargo.toml") {
                let src = p.parent().unwrap().join("src");
                std::fs::create_dir_all(&src).unwrap();
                std::fs::write(src.join("lib.rs"), "").unwrap();
            }
        }
    }
    walk(root.parent().unwrap());
    root.to_path_buf()
}

#[test]
fn a_root_package_of_its_workspace_names_itself_only_where_cargo_needs_it() {
    let root_pkg = |ws: &str| {
        format!(
            "[package]\nname = \"top\"\nversion.workspace = true\n[workspace]\nmembers = [\"m\"]\n{ws}\
             [workspace.package]\nversion = \"1.2.3\"\n"
        )
    };
    let commands = |found: &[Inferred], name: &str| -> Vec<String> {
        let t = found.iter().find(|t| t.name == name).unwrap();
        t.capabilities
            .as_ref()
            .unwrap()
            .iter()
            .map(|c| format!("{}: {}", c.name, c.command))
            .collect()
    };
    let t = Scratch::new(&[
        ("Cargo.toml", &root_pkg("")),
        ("m/Cargo.toml", &pkg("m", "")),
    ]);
    let (found, _) = run(&t.0);
    assert_eq!(
        commands(&found, "top"),
        [
            "build: cargo build {release}",
            "check: cargo check",
            "fmt: cargo fmt -p top",
            "lint: cargo clippy --no-deps -- -D warnings",
            "test: cargo test {filter}",
        ]
    );
    assert_eq!(
        commands(&found, "m"),
        [
            "build: cargo build {release}",
            "check: cargo check",
            "fmt: cargo fmt",
            "lint: cargo clippy --no-deps -- -D warnings",
            "test: cargo test {filter}",
        ]
    );
    let t = Scratch::new(&[
        ("Cargo.toml", &root_pkg("default-members = [\"m\"]\n")),
        ("m/Cargo.toml", &pkg("m", "")),
    ]);
    let (found, _) = run(&t.0);
    assert_eq!(
        commands(&found, "top"),
        [
            "build: cargo build -p top@1.2.3 {release}",
            "check: cargo check -p top@1.2.3",
            "fmt: cargo fmt -p top",
            "lint: cargo clippy -p top@1.2.3 --no-deps -- -D warnings",
            "test: cargo test -p top@1.2.3 {filter}",
        ]
    );
    assert_eq!(commands(&found, "m")[0], "build: cargo build {release}");
    // A lone package is the only one its folder's cargo sees.
    let t = Scratch::new(&[("Cargo.toml", &pkg("solo", ""))]);
    let (found, _) = run(&t.0);
    assert_eq!(commands(&found, "solo")[2], "fmt: cargo fmt");
    assert_eq!(found[0].path, ".");
}

#[test]
fn broken_manifests_are_warnings_and_the_rest_is_inferred() {
    let t = Scratch::new(&[
        ("Cargo.toml", "[workspace]\nmembers = [\"*\"]\n"),
        ("bad/Cargo.toml", "[package\nname = \"bad\"\n"),
        ("noname/Cargo.toml", "[package]\nname.workspace = true\n"),
        ("virt/Cargo.toml", "[dependencies]\n"),
        (
            "nested/Cargo.toml",
            &format!("{}[workspace]\n", pkg("nested", "")),
        ),
        ("one/Cargo.toml", &pkg("same", "")),
        (
            "two/Cargo.toml",
            &pkg("same", "[dependencies]\nx = { path = \"../one\" }\n"),
        ),
    ]);
    let (found, reader) = run(&t.0);
    assert_eq!(
        graph(&found),
        vec![
            ("same".into(), "one".into(), vec![]),
            ("same-2".into(), "two".into(), vec!["same/normal".into()]),
        ]
    );
    let mut warned: Vec<&str> = codes(&reader).into_iter().map(|c| c.0).collect();
    warned.sort();
    assert_eq!(
        warned,
        [
            "cargo-manifest-invalid",
            "cargo-nested-workspace",
            "cargo-no-package",
            "cargo-package-name",
            "duplicate-package-name",
        ]
    );
    let t = Scratch::new(&[("Cargo.toml", "[workspace\n")]);
    let (found, reader) = run(&t.0);
    assert!(found.is_empty());
    assert_eq!(
        codes(&reader),
        [("cargo-manifest-invalid", "Cargo.toml:1".into())]
    );
    let t = Scratch::new(&[("rust/Cargo.toml", &pkg("deeper", ""))]);
    let (found, reader) = run(&t.0);
    assert!(found.is_empty());
    assert_eq!(reader.absent, ["Cargo.toml"]);
}

/// Discovery of a 1,000-package workspace, each depending on the one before it: a few
/// milliseconds (`cargo test -p once-graph --lib -- thousand --nocapture` prints the time).
#[test]
fn thousand_packages() {
    let mut files = vec![(
        "Cargo.toml".to_string(),
        "[workspace]\nmembers = [\"crates/*\"]\n[workspace.dependencies]\nc0000 = { path = \"crates/c0000\" }\n"
            .to_string(),
    )];
    for i in 0..1000 {
        let deps = match i {
            0 => String::new(),
            1 => "[dependencies]\nc0000 = { path = \"../c0000\" }\n".to_string(),
            _ => format!(
                "[dependencies]\nc{:04} = {{ path = \"../c{:04}\" }}\nc0000.workspace = true\n",
                i - 1,
                i - 1
            ),
        };
        files.push((
            format!("crates/c{i:04}/Cargo.toml"),
            pkg(&format!("c{i:04}"), &deps),
        ));
    }
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let t = Scratch::new(&refs);
    let mut best = std::time::Duration::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        let (found, reader) = run(&t.0);
        best = best.min(start.elapsed());
        assert_eq!(found.len(), 1000, "{:?}", codes(&reader));
        let edges: usize = found.iter().map(|t| t.edges.len()).sum();
        assert_eq!(edges, 999 + 998);
        assert!(reader.diagnostics.is_empty());
    }
    eprintln!("cargo discovery of 1,000 packages: {best:?} (best of 3)");
}

/// Runs the inferred `check` and `fmt` commands of every target with the real cargo, as once
/// runs them (`sh -c` in the target's folder), in a workspace whose root is a package too and
/// whose `default-members` is another member: each must act on its own package only.
#[test]
fn commands_select_their_own_package_with_real_cargo() {
    let unformatted = "pub fn f()  {}\n";
    let t = Scratch::new(&[
        (
            "Cargo.toml",
            "[package]\nname = \"top\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
             [dependencies]\nm = { path = \"m\" }\n\
             [workspace]\nmembers = [\"m\", \"n\"]\ndefault-members = [\"n\"]\n",
        ),
        ("src/lib.rs", unformatted),
        ("m/Cargo.toml", &pkg("m", "")),
        ("m/src/lib.rs", unformatted),
        ("n/Cargo.toml", &pkg("n", "")),
        ("n/src/lib.rs", unformatted),
    ]);
    let (found, _) = run(&t.0);
    let sources = ["src/lib.rs", "m/src/lib.rs", "n/src/lib.rs"];
    for target in &found {
        for cap in ["check", "fmt"] {
            for rel in sources {
                t.write(rel, unformatted);
            }
            let command = &target
                .capabilities
                .as_ref()
                .unwrap()
                .iter()
                .find(|c| c.name == cap)
                .unwrap()
                .command;
            let out = Command::new("sh")
                .args(["-c", command])
                .current_dir(t.0.join(&target.path))
                .env("CARGO_TARGET_DIR", t.0.join("target"))
                .env("CARGO_NET_OFFLINE", "true")
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{command}: {stderr}");
            let acted: Vec<&str> = match cap {
                // What cargo checked, minus the path dependency `top` needs.
                "check" => stderr
                    .lines()
                    .filter_map(|l| l.trim().strip_prefix("Checking "))
                    .filter_map(|l| l.split(' ').next())
                    .filter(|p| !(target.name == "top" && *p == "m"))
                    .collect(),
                _ => sources
                    .iter()
                    .zip(["top", "m", "n"])
                    .filter(|(rel, _)| {
                        std::fs::read_to_string(t.0.join(rel)).unwrap() != unformatted
                    })
                    .map(|(_, name)| name)
                    .collect(),
            };
            assert_eq!(
                acted,
                [target.name.as_str()],
                "`{command}` in `{}`",
                target.path
            );
        }
    }
}

#[test]
fn a_member_test_declares_how_it_joins_a_batch_and_the_root_package_does_not() {
    let t = Scratch::new(&[
        (
            "Cargo.toml",
            "[package]\nname = \"top\"\nversion.workspace = true\n[workspace]\nmembers = [\"m\", \"v\"]\n\
             [workspace.package]\nversion = \"1.2.3\"\n",
        ),
        ("m/Cargo.toml", &pkg("m", "")),
        // No plain version to name it by: it never joins a batch.
        (
            "v/Cargo.toml",
            "[package]\nname = \"v\"\nversion = \"1 2\"\n",
        ),
    ]);
    let (found, _) = run(&t.0);
    let batch = |name: &str| {
        let t = found.iter().find(|t| t.name == name).unwrap();
        let caps = t.capabilities.as_ref().unwrap();
        caps.iter()
            .map(|c| (c.name.clone(), c.batch.clone()))
            .filter(|(_, b)| b.is_some())
            .map(|(n, b)| {
                let b = b.unwrap();
                format!(
                    "{n}: {} [{}] {} in {} alone `{}` on={}",
                    b.command, b.member, b.tail, b.dir, b.alone, b.on
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        batch("m"),
        ["test: cargo test [-p m@0.1.0]  in . alone `cargo test {filter}` on=false"]
    );
    assert!(batch("top").is_empty(), "{:?}", batch("top"));
    assert!(batch("v").is_empty(), "{:?}", batch("v"));
}
