//! What discovery needs from a `uv.lock`: the workspace's own members (the `[[package]]`
//! entries whose source is `editable` or `virtual`), each with the members it depends on by
//! kind, as uv resolved them.
//!
//! The lock is uv's own answer to "what does this member need": it holds the dependencies a
//! build hook computes (`dynamic = ["dependencies"]`), which no reading of `pyproject.toml` can
//! know. Pure: it reads text and answers; it must never touch the file system, and an entry it
//! cannot read is skipped rather than failing the whole lock.

use std::collections::HashMap;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::pyproject::normalize;
use crate::discover::EdgeKind;

/// A workspace member as `uv.lock` records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LockedMember {
    /// Its folder relative to the workspace root (`.` for the root), as the lock writes it.
    pub folder: String,
    /// The members it depends on: folder and kind.
    pub deps: Vec<(String, EdgeKind)>,
}

/// Parses `text`; `Err` holds the offset and message of the first syntax error.
pub(super) fn parse(text: &str) -> Result<Vec<LockedMember>, (usize, String)> {
    let doc = DeTable::parse(text).map_err(|e| {
        (
            e.span().map_or(0, |s| s.start),
            e.message().trim().to_string(),
        )
    })?;
    let packages: Vec<&DeTable<'_>> = doc
        .get_ref()
        .get("package")
        .and_then(|p| p.get_ref().as_array())
        .into_iter()
        .flat_map(|a| a.iter())
        .filter_map(|p| p.get_ref().as_table())
        .collect();
    // Members first, by normalised name: a dependency names its package, not its folder.
    let mut folders: HashMap<String, String> = HashMap::new();
    let mut members: Vec<(&DeTable<'_>, String)> = Vec::new();
    for package in &packages {
        let (Some(name), Some(folder)) = (string(package.get("name")), member_folder(package))
        else {
            continue;
        };
        folders.insert(normalize(name), folder.clone());
        members.push((package, folder));
    }
    let mut out = Vec::with_capacity(members.len());
    for (package, folder) in members {
        let mut deps = Vec::new();
        let mut push = |list: Option<&Spanned<DeValue<'_>>>, kind: EdgeKind| {
            for dep in list
                .and_then(|l| l.get_ref().as_array())
                .into_iter()
                .flat_map(|a| a.iter())
                .filter_map(|d| d.get_ref().as_table())
            {
                // A dependency that names its source (two packages of one name in the lock)
                // is the member only when that source is the member's.
                if dep.get("source").is_some() && member_folder(dep).is_none() {
                    continue;
                }
                if let Some(to) = string(dep.get("name")).and_then(|n| folders.get(&normalize(n))) {
                    deps.push((to.clone(), kind));
                }
            }
        };
        push(package.get("dependencies"), EdgeKind::Normal);
        for (kind, key) in [
            (EdgeKind::Optional, "optional-dependencies"),
            (EdgeKind::Dev, "dev-dependencies"),
        ] {
            if let Some(groups) = package.get(key).and_then(|g| g.get_ref().as_table()) {
                for (_, list) in groups.iter() {
                    push(Some(list), kind);
                }
            }
        }
        deps.sort();
        deps.dedup();
        out.push(LockedMember { folder, deps });
    }
    Ok(out)
}

/// The folder of a package whose `source` is `{ editable = "…" }` or `{ virtual = "…" }`: a
/// member of the workspace, as `uv-lock-edges.py` counts them.
fn member_folder(package: &DeTable<'_>) -> Option<String> {
    let source = package.get("source")?.get_ref().as_table()?;
    let folder = string(source.get("editable")).or_else(|| string(source.get("virtual")))?;
    // uv writes `.` for the root and plain relative paths; `./x` is the same folder.
    let trimmed = folder.trim_start_matches("./").trim_end_matches('/');
    Some(if trimmed.is_empty() { "." } else { trimmed }.to_string())
}

fn string<'a>(v: Option<&'a Spanned<DeValue<'_>>>) -> Option<&'a str> {
    v.and_then(|v| v.get_ref().as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_and_their_edges_by_kind() {
        let text = r#"
version = 1
[[package]]
name = "App"
source = { virtual = "." }
dependencies = [{ name = "core" }, { name = "requests" }, { name = "core", marker = "os_name == 'nt'" }]
[package.optional-dependencies]
fast = [{ name = "util", extra = ["x"] }]
[package.dev-dependencies]
dev = [{ name = "pytest" }, { name = "util" }]

[[package]]
name = "core"
source = { editable = "./libs/core" }
dependencies = [{ name = "util", source = { registry = "https://pypi.org/simple" } }]

[[package]]
name = "util"
source = { editable = "libs/util" }

[[package]]
name = "requests"
version = "2.0"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "nameless"
"#;
        let lock = parse(text).unwrap();
        assert_eq!(
            lock,
            [
                LockedMember {
                    folder: ".".into(),
                    deps: vec![
                        ("libs/core".into(), EdgeKind::Normal),
                        ("libs/util".into(), EdgeKind::Dev),
                        ("libs/util".into(), EdgeKind::Optional),
                    ],
                },
                LockedMember {
                    folder: "libs/core".into(),
                    deps: vec![],
                },
                LockedMember {
                    folder: "libs/util".into(),
                    deps: vec![],
                },
            ]
        );
    }

    #[test]
    fn a_syntax_error_has_an_offset_and_odd_shapes_are_no_members() {
        let (at, message) = parse("version = 1\n[[package]]\nname = \n").unwrap_err();
        assert!(at > 0 && !message.is_empty(), "{at} {message}");
        for odd in [
            "package = 3\n",
            "package = [1, \"x\"]\n",
            "[[package]]\nname = \"a\"\nsource = \"editable\"\n",
            "[[package]]\nname = 1\nsource = { editable = \"a\" }\n",
        ] {
            assert!(parse(odd).unwrap().is_empty(), "{odd}");
        }
    }

    #[test]
    fn a_lock_nested_past_the_parsers_depth_is_an_error_not_a_crash() {
        let n = 100_000;
        let text = format!("x = {}{}\n", "[".repeat(n), "]".repeat(n));
        let (_, message) = parse(&text).unwrap_err();
        assert!(message.contains("recursion"), "{message}");
    }
}
