//! The crates stand on floors, and no dependency climbs: a crate may depend only on crates of a
//! lower floor. The floors are written once, in ARCHITECTURE.md between the `floors` markers
//! (the top floor first); this test reads them there and every edge from `cargo metadata`, so a
//! new edge that climbs, or a crate the floors forget, fails the build. It must never learn the
//! floors from anywhere else: moving a crate is a decision made in ARCHITECTURE.md.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

const START: &str = "<!-- floors -->";
const END: &str = "<!-- /floors -->";

/// Each crate's floor, 0 the lowest, from the list between the markers: one line per floor,
/// the top first, crate names in backticks.
fn floors(architecture: &str) -> BTreeMap<String, usize> {
    let start = architecture
        .find(START)
        .expect("ARCHITECTURE.md marks its floors")
        + START.len();
    let end = start + architecture[start..].find(END).expect("the floors end");
    let lines: Vec<&str> = architecture[start..end]
        .lines()
        .filter(|line| line.contains('`'))
        .collect();
    let mut floor_of = BTreeMap::new();
    for (from_top, line) in lines.iter().enumerate() {
        for name in line.split('`').skip(1).step_by(2) {
            floor_of.insert(name.to_owned(), lines.len() - 1 - from_top);
        }
    }
    floor_of
}

/// Every workspace crate with the workspace crates it depends on (normal, build or dev).
fn edges(root: &Path) -> BTreeMap<String, Vec<String>> {
    let output = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--offline",
            "--format-version",
            "1",
            "--no-deps",
        ])
        .current_dir(root)
        .output()
        .expect("cargo metadata runs");
    assert!(output.status.success(), "{output:?}");
    let metadata: Value = serde_json::from_slice(&output.stdout).unwrap();
    let packages = metadata["packages"].as_array().unwrap();
    let names: Vec<&str> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    packages
        .iter()
        .map(|package| {
            let deps = package["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .map(|dep| dep["name"].as_str().unwrap())
                .filter(|dep| names.contains(dep))
                .map(str::to_owned)
                .collect();
            (package["name"].as_str().unwrap().to_owned(), deps)
        })
        .collect()
}

#[test]
fn no_crate_depends_on_a_crate_of_its_own_floor_or_above() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let floor_of = floors(&architecture);
    let edges = edges(&root);
    let mut wrong = Vec::new();
    for (krate, deps) in &edges {
        let Some(&floor) = floor_of.get(krate) else {
            wrong.push(format!(
                "`{krate}` stands on no floor: add it to ARCHITECTURE.md's floors"
            ));
            continue;
        };
        for dep in deps {
            let dep_floor = floor_of.get(dep).copied().unwrap_or(usize::MAX);
            if dep_floor >= floor {
                wrong.push(format!(
                    "`{krate}` (floor {floor}) depends on `{dep}` (floor {dep_floor}): a crate may \
                     depend only on lower floors; move the code down or the crate up in \
                     ARCHITECTURE.md's floors"
                ));
            }
        }
    }
    for krate in floor_of.keys() {
        if !edges.contains_key(krate) {
            wrong.push(format!(
                "ARCHITECTURE.md's floors name `{krate}`, which is no crate"
            ));
        }
    }
    assert!(edges.len() >= 13, "{edges:?}");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
