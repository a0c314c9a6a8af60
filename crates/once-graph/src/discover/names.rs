//! Target names for the packages discovery found: the one place they are given.
//!
//! A package is its ecosystem and its folder; its name is for people. Each ecosystem hands its
//! packages names unique among its own, and this module makes them unique across ecosystems:
//! the first ecosystem in discovery order ([`Ecosystem::ALL`]) keeps a shared name, each later
//! one becomes `NAME-ECOSYSTEM`, or `NAME-ECOSYSTEM-2`, `-3`… when that is a name in use too.
//! It must never rename an edge: edges name packages by folder ([`super::Edge`]), so they bind
//! to the same package whatever names are given here.

use std::collections::{HashMap, HashSet};

use super::{Ecosystem, Inferred, Reader};

/// Gives every package of `found` a target name no other package has. A package whose name its
/// own ecosystem repeats (that ecosystem's bug) is left out, its name cleared; a package whose
/// name another ecosystem holds gets a fresh one, with one warning at its manifest.
pub(crate) fn give_names(found: &mut [Inferred], reader: &mut Reader) {
    // Every plain name is reserved for its first claimant first, so no fresh name can take a
    // name a later package brings along.
    let mut first_of: HashMap<String, usize> = HashMap::with_capacity(found.len());
    for (i, package) in found.iter().enumerate() {
        first_of.entry(package.name.clone()).or_insert(i);
    }
    let mut in_use: HashSet<String> = first_of.keys().cloned().collect();
    for i in 0..found.len() {
        let name = found[i].name.clone();
        let first = first_of[&name];
        if first == i {
            continue;
        }
        let (file, offset) = (found[i].file, found[i].offset);
        if found[first].ecosystem == found[i].ecosystem {
            let first_path = found[first].path.clone();
            reader.warn(
                file,
                offset,
                "duplicate-inferred-target",
                format!(
                    "a second package named `{name}` was left out; the one in `{first_path}` is \
                     target `{name}`"
                ),
            );
            found[i].name.clear();
            continue;
        }
        let fresh = fresh_name(&name, found[i].ecosystem, &in_use);
        let first_rel = reader.rel(found[first].file).to_string();
        let ecosystem = found[i].ecosystem.name();
        reader.warn(
            file,
            offset,
            "inferred-name-taken",
            format!(
                "target `{name}` is already inferred from `{first_rel}`; this {ecosystem} package \
                 is named `{fresh}`; to name it yourself, declare a target with its kind and \
                 folder under a name no other target has"
            ),
        );
        in_use.insert(fresh.clone());
        found[i].name = fresh;
    }
}

/// `NAME-ECOSYSTEM`, or the first `NAME-ECOSYSTEM-N` (from 2) that is not in use.
fn fresh_name(name: &str, ecosystem: Ecosystem, in_use: &HashSet<String>) -> String {
    let base = format!("{name}-{}", ecosystem.name());
    if !in_use.contains(&base) {
        return base;
    }
    (2..)
        .map(|n| format!("{base}-{n}"))
        .find(|candidate| !in_use.contains(candidate))
        .unwrap_or(base)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::discover::{Edge, EdgeKind};

    fn package(name: &str, ecosystem: Ecosystem, path: &str, edges: &[&str]) -> Inferred {
        Inferred {
            name: name.into(),
            kind: "command",
            path: path.into(),
            fields: BTreeMap::new(),
            capabilities: None,
            edges: edges
                .iter()
                .map(|folder| Edge {
                    folder: folder.to_string(),
                    kind: EdgeKind::Normal,
                })
                .collect(),
            file: 0,
            offset: 0,
            ecosystem,
        }
    }

    fn names(found: &[Inferred]) -> Vec<&str> {
        found.iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn a_name_another_ecosystem_holds_gets_the_ecosystems_suffix() {
        let mut reader = Reader::new(&std::env::temp_dir());
        let mut found = vec![
            package("web", Ecosystem::Cargo, "crates/web", &[]),
            package("web", Ecosystem::JavaScript, "web", &[]),
            package("app", Ecosystem::JavaScript, "app", &["web"]),
        ];
        give_names(&mut found, &mut reader);
        assert_eq!(names(&found), ["web", "web-javascript", "app"]);
        // The edge still names the JavaScript package's folder: nothing was rebound.
        assert_eq!(found[2].edges[0].folder, "web");
        assert_eq!(reader.diagnostics.len(), 1);
    }

    #[test]
    fn a_suffixed_name_never_takes_a_name_in_use() {
        // uv's layout: crates `uv` and `uv-python`, and a Python project `uv`.
        let mut reader = Reader::new(&std::env::temp_dir());
        let mut found = vec![
            package("uv", Ecosystem::Cargo, "crates/uv", &["crates/uv-python"]),
            package("uv-python", Ecosystem::Cargo, "crates/uv-python", &[]),
            package("uv", Ecosystem::Python, ".", &[]),
            package("uv-python-2", Ecosystem::Go, "go", &[]),
        ];
        give_names(&mut found, &mut reader);
        assert_eq!(
            names(&found),
            ["uv", "uv-python", "uv-python-3", "uv-python-2"]
        );
        let unique: HashSet<&str> = names(&found).into_iter().collect();
        assert_eq!(unique.len(), found.len());
        assert_eq!(found[0].edges[0].folder, "crates/uv-python");
        assert_eq!(reader.diagnostics.len(), 1);
    }

    #[test]
    fn a_repeat_within_an_ecosystem_is_left_out() {
        let mut reader = Reader::new(&std::env::temp_dir());
        let mut found = vec![
            package("a", Ecosystem::Go, "a", &[]),
            package("a", Ecosystem::Go, "b", &[]),
        ];
        give_names(&mut found, &mut reader);
        assert_eq!(names(&found), ["a", ""]);
        assert_eq!(reader.diagnostics[0].code, "duplicate-inferred-target");
    }
}
