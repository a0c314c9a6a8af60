//! A target's identity is its ecosystem and its folder: for every ordered pair of ecosystems,
//! one with packages `x` → `y` and one with a package `y` of its own, no discovered edge changes
//! ecosystem under any overlay, and the dependency edge always reaches the package in `y`'s
//! folder of the dependent's own ecosystem, whatever the names.

use once_graph::discover::Ecosystem;
use once_graph::model::Target;
use once_graph::{Severity, Workspace};

use crate::util::TempWs;

/// Where an ecosystem's packages live, its kind, and the files of `x` → `y` (or `y` alone).
struct Layout {
    ecosystem: Ecosystem,
    kind: &'static str,
    folder: &'static str,
}

const LAYOUTS: [Layout; 4] = [
    Layout {
        ecosystem: Ecosystem::Cargo,
        kind: "cargo-package",
        folder: "rust",
    },
    Layout {
        ecosystem: Ecosystem::JavaScript,
        kind: "npm-package",
        folder: "js",
    },
    Layout {
        ecosystem: Ecosystem::Python,
        kind: "python-project",
        folder: "py",
    },
    Layout {
        ecosystem: Ecosystem::Go,
        kind: "go-module",
        folder: "go",
    },
];

/// The files of `layout`'s workspace: `y`, and `x` depending on it when `with_x`.
fn files(layout: &Layout, with_x: bool) -> Vec<(String, String)> {
    let dir = layout.folder;
    let mut out = Vec::new();
    let mut add = |path: String, text: String| out.push((path, text));
    match layout.ecosystem {
        Ecosystem::Cargo => {
            let members = if with_x {
                "\"rust/x\", \"rust/y\""
            } else {
                "\"rust/y\""
            };
            add(
                "Cargo.toml".into(),
                format!("[workspace]\nmembers = [{members}]\n"),
            );
            add(
                "rust/y/Cargo.toml".into(),
                "[package]\nname = \"y\"\nversion = \"0.1.0\"\n".into(),
            );
            if with_x {
                add(
                    "rust/x/Cargo.toml".into(),
                    "[package]\nname = \"x\"\nversion = \"0.1.0\"\n\n[dependencies]\ny = { path = \"../y\" }\n".into(),
                );
            }
        }
        Ecosystem::JavaScript => {
            add(
                "package.json".into(),
                format!("{{\"private\": true, \"workspaces\": [\"{dir}/*\"]}}\n"),
            );
            add(
                format!("{dir}/y/package.json"),
                "{\"name\": \"y\", \"version\": \"1.0.0\"}\n".into(),
            );
            if with_x {
                add(
                    format!("{dir}/x/package.json"),
                    "{\"name\": \"x\", \"version\": \"1.0.0\", \"dependencies\": {\"y\": \"1.0.0\"}}\n"
                        .into(),
                );
            }
        }
        Ecosystem::Python => {
            add(
                "pyproject.toml".into(),
                format!("[tool.uv.workspace]\nmembers = [\"{dir}/*\"]\n"),
            );
            add(
                format!("{dir}/y/pyproject.toml"),
                "[project]\nname = \"y\"\nversion = \"0.1.0\"\n".into(),
            );
            if with_x {
                add(
                    format!("{dir}/x/pyproject.toml"),
                    "[project]\nname = \"x\"\nversion = \"0.1.0\"\ndependencies = [\"y\"]\n\n[tool.uv.sources]\ny = { workspace = true }\n".into(),
                );
            }
        }
        Ecosystem::Go => {
            let uses = if with_x { "./go/x\n\t./go/y" } else { "./go/y" };
            add("go.work".into(), format!("go 1.22\n\nuse (\n\t{uses}\n)\n"));
            add(
                "go/y/go.mod".into(),
                "module example.com/y\n\ngo 1.22\n".into(),
            );
            if with_x {
                add(
                    "go/x/go.mod".into(),
                    "module example.com/x\n\ngo 1.22\n\nrequire example.com/y v0.0.0\n".into(),
                );
            }
        }
        // The root target has no packages and no edges: no layout names it.
        Ecosystem::Workspace => unreachable!("LAYOUTS holds no root target"),
    }
    out
}

/// The target standing for the package of `ecosystem` in `folder`.
fn at<'w>(ws: &'w Workspace, ecosystem: Ecosystem, folder: &str) -> &'w Target {
    ws.targets()
        .iter()
        .find(|t| {
            t.path == folder
                && t.inference
                    .as_ref()
                    .is_some_and(|i| i.ecosystem == ecosystem)
        })
        .unwrap_or_else(|| panic!("no {} package in `{folder}`", ecosystem.name()))
}

#[test]
fn no_edge_changes_ecosystem_under_any_overlay() {
    let mut checked = 0;
    for dependent in &LAYOUTS {
        for other in LAYOUTS
            .iter()
            .filter(|o| o.ecosystem != dependent.ecosystem)
        {
            let x_folder = format!("{}/x", dependent.folder);
            let y_folder = format!("{}/y", dependent.folder);
            let other_y = format!("{}/y", other.folder);
            // The first ecosystem in discovery order keeps the shared name `y`.
            let y_name = if dependent.ecosystem < other.ecosystem {
                "y".to_string()
            } else {
                format!("y-{}", dependent.ecosystem.name())
            };
            let overlays = [
                String::new(),
                // The usual fix for a clash: the other package renamed to a free name.
                format!(
                    "[targets.z]\nkind = \"{}\"\npath = \"{other_y}\"\n",
                    other.kind
                ),
                // A rename onto the name the dependency holds: refused, never rebound.
                format!(
                    "[targets.{y_name}]\nkind = \"{}\"\npath = \"{other_y}\"\n",
                    other.kind
                ),
                // The dependency itself renamed: its dependent's edge follows it.
                format!(
                    "[targets.w]\nkind = \"{}\"\npath = \"{y_folder}\"\n",
                    dependent.kind
                ),
                // An overlay by name, the kind left out.
                format!("[targets.{y_name}]\ntags = [\"core\"]\n"),
            ];
            for (case, overlay) in overlays.iter().enumerate() {
                let mut all = files(dependent, true);
                all.extend(files(other, false));
                all.push(("once.toml".into(), overlay.clone()));
                let refs: Vec<(&str, &str)> =
                    all.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
                let ws = TempWs::new(&refs).load();
                let context = format!(
                    "{} → {} with `{overlay}`: {:?}",
                    dependent.ecosystem.name(),
                    other.ecosystem.name(),
                    ws.diagnostics()
                );
                assert!(!ws.has_errors(), "{context}");
                for target in ws.targets() {
                    let Some(inference) = &target.inference else {
                        continue;
                    };
                    for (to, _) in &inference.edges {
                        let reached = ws.target(to).expect("an edge reaches a target");
                        let ecosystem = reached.inference.as_ref().map(|i| i.ecosystem);
                        assert_eq!(ecosystem, Some(inference.ecosystem), "{context}");
                    }
                }
                let x = at(&ws, dependent.ecosystem, &x_folder);
                let y = at(&ws, dependent.ecosystem, &y_folder);
                let edges: Vec<&str> = x
                    .inference
                    .as_ref()
                    .map(|i| i.edges.iter().map(|(to, _)| to.as_str()).collect())
                    .unwrap_or_default();
                assert_eq!(edges, [y.name.as_str()], "{context}");
                // The other ecosystem's `y` is still there, under some name.
                at(&ws, other.ecosystem, &other_y);
                let refused = ws.diagnostics().iter().any(|d| d.code == "name-taken");
                assert_eq!(refused, case == 2, "{context}");
                if refused {
                    assert!(
                        ws.diagnostics()
                            .iter()
                            .all(|d| d.severity == Severity::Warning),
                        "{context}"
                    );
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 4 * 3 * 5);
}

/// uv's own layout (`testdata/discover/cargo-uv`, trimmed from astral-sh/uv): with no
/// configuration the workspace loads without error, the root maturin project is a Python
/// target of its own, and every crate's edges are exactly Cargo's (`expected.json`, from
/// `cargo metadata`), each reaching the crate, never the Python project.
#[test]
fn uvs_layout_works_with_zero_configuration() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/discover/cargo-uv");
    let ws = Workspace::load(&dir).expect("loads");
    assert!(!ws.has_errors(), "{:?}", ws.diagnostics());
    let python = at(&ws, Ecosystem::Python, ".");
    assert_eq!(python.kind, "python-project");
    assert_eq!(python.fields["package"], "uv");
    let expected: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("expected.json")).expect("reads expected.json"),
    )
    .expect("json");
    let folder_of = |name: &str| -> String {
        expected["targets"]
            .as_array()
            .expect("targets")
            .iter()
            .find(|t| t["name"] == name)
            .and_then(|t| t["path"].as_str())
            .unwrap_or_else(|| panic!("no crate `{name}` in expected.json"))
            .to_string()
    };
    let mut crates = 0;
    for want in expected["targets"].as_array().expect("targets") {
        let path = want["path"].as_str().expect("path");
        let target = at(&ws, Ecosystem::Cargo, path);
        let mut wanted: Vec<(String, String)> = want["edges"]
            .as_array()
            .expect("edges")
            .iter()
            .map(|e| {
                let to = e["to"].as_str().expect("to");
                (folder_of(to), e["kind"].as_str().expect("kind").to_string())
            })
            .collect();
        wanted.sort();
        let inference = target.inference.as_ref().expect("inferred");
        let mut got: Vec<(String, String)> = inference
            .edges
            .iter()
            .map(|(to, kind)| {
                let reached = ws.target(to).expect("an edge reaches a target");
                assert_eq!(reached.kind, "cargo-package", "{path} → {to}");
                (reached.path.clone(), kind.name().to_string())
            })
            .collect();
        got.sort();
        assert_eq!(got, wanted, "{path}");
        crates += 1;
    }
    assert_eq!(crates, 5);
    // The crate named like the Python package keeps its name; the Python project gets another.
    assert_eq!(
        at(&ws, Ecosystem::Cargo, "crates/uv-python").name,
        "uv-python"
    );
    assert_ne!(python.name, "uv-python");
}
