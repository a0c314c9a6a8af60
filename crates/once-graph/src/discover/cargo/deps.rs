//! The dependencies a `Cargo.toml` declares, as far as discovery needs them: where each one
//! comes from (a path, the workspace's own table, or a registry), and what it is for.
//!
//! It only reads the parsed manifest; resolving a dependency to a member is the caller's.
//! It must never fail: a dependency it cannot read is left out.

use toml::de::{DeTable, DeValue};

use super::super::EdgeKind;

/// The dependency tables Cargo reads, with the kind of edge each gives. The underscore
/// spellings are older aliases that Cargo still accepts before edition 2024.
const TABLES: &[(&str, EdgeKind)] = &[
    ("dependencies", EdgeKind::Normal),
    ("dev-dependencies", EdgeKind::Dev),
    ("dev_dependencies", EdgeKind::Dev),
    ("build-dependencies", EdgeKind::Build),
    ("build_dependencies", EdgeKind::Build),
];

/// Where a dependency comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Source {
    /// `path = "…"`, as written (relative to the manifest's folder).
    Path(String),
    /// `workspace = true`: the root's `[workspace.dependencies]` entry of the same key says.
    Workspace,
    /// A registry (`None`: crates.io), by the package's real name; `[patch]` may redirect it.
    Registry {
        name: String,
        registry: Option<String>,
    },
    /// A git repository or anything else discovery does not follow.
    Other,
}

/// One dependency entry.
#[derive(Debug, Clone)]
pub(super) struct Dep {
    /// The key it is declared under (the name the code uses).
    pub key: String,
    /// Where it comes from.
    pub source: Source,
    /// What it is for.
    pub kind: EdgeKind,
    /// Byte offset of its key in the manifest.
    pub offset: usize,
}

/// Every dependency of `doc` (a package manifest): its own tables and the
/// `[target.'cfg(…)'.…]` variants, in the order they are written.
pub(super) fn dependencies(doc: &DeTable<'_>) -> Vec<Dep> {
    let mut out = Vec::new();
    collect(doc, &mut out);
    if let Some(targets) = doc.get("target").and_then(|t| t.get_ref().as_table()) {
        for (_, platform) in targets.iter() {
            if let Some(platform) = platform.get_ref().as_table() {
                collect(platform, &mut out);
            }
        }
    }
    // The table types above are visited in a fixed order, not as written.
    out.sort_by_key(|d| d.offset);
    out
}

fn collect(table: &DeTable<'_>, out: &mut Vec<Dep>) {
    for (name, kind) in TABLES {
        let Some(deps) = table.get(*name).and_then(|t| t.get_ref().as_table()) else {
            continue;
        };
        for (key, value) in deps.iter() {
            out.push(Dep {
                key: key.get_ref().to_string(),
                source: source(key.get_ref(), value.get_ref()),
                kind: *kind,
                offset: key.span().start,
            });
        }
    }
}

/// Where the dependency declared as `key = value` comes from. Also reads the root's
/// `[workspace.dependencies]` and `[patch.*]` entries, which have the same shape.
pub(super) fn source(key: &str, value: &DeValue<'_>) -> Source {
    let table = match value {
        DeValue::String(_) => {
            return Source::Registry {
                name: key.to_string(),
                registry: None,
            };
        }
        DeValue::Table(t) => t,
        _ => return Source::Other,
    };
    let text = |k: &str| table.get(k).and_then(|v| v.get_ref().as_str());
    if let Some(path) = text("path") {
        return Source::Path(path.to_string());
    }
    if table.get("workspace").and_then(|v| v.get_ref().as_bool()) == Some(true) {
        return Source::Workspace;
    }
    if table.get("git").is_some() {
        return Source::Other;
    }
    Source::Registry {
        name: text("package").unwrap_or(key).to_string(),
        registry: text("registry").map(str::to_string),
    }
}
