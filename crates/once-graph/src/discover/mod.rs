//! Discovery: the targets a workspace's own manifests already describe.
//!
//! Each ecosystem module reads its manifests (`Cargo.toml`, `package.json` and
//! `pnpm-workspace.yaml`, `pyproject.toml`, `go.work` and `go.mod`) through a
//! [`Reader`] and answers with [`Inferred`] targets: kind, folder, fields,
//! capabilities, and edges to the other targets of the same ecosystem. The
//! workspace then lays the `once.toml` overlay on top. An ecosystem with nothing at the root
//! is looked for in the folders near it ([`nested`]), each workspace found there read by the
//! same code as if it were the root.
//!
//! Discovery is offline and fast: it reads files, never runs a tool. It must
//! never fail: a manifest it cannot understand becomes a warning and its
//! targets are left out, never the whole workspace.

mod cargo;
mod go;
mod javascript;
mod names;
mod nested;
mod python;
mod reader;
mod root;
#[cfg(test)]
pub(crate) mod scratch;
mod targets;

use std::collections::BTreeMap;

pub use crate::ecosystem::{Ecosystem, EdgeKind};

pub(crate) use javascript::trim_missing_scripts;
pub(crate) use names::give_names;
pub(crate) use reader::{Listing, Reader};
pub(crate) use targets::{exclude, to_target, unordered_edges};

/// An edge from an inferred target to another package of its ecosystem.
///
/// It names the package by its folder, never by its name: the package is the one of the same
/// ecosystem in that folder (the ecosystem's own rules found it), so no name given later, by
/// discovery or by an overlay, can bind the edge to anything else.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Edge {
    /// The folder of the package it depends on, relative to the workspace root, as in
    /// [`Inferred::path`].
    pub folder: String,
    /// What for.
    pub kind: EdgeKind,
}

/// A capability an ecosystem infers, replacing the kind's default set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InferredCapability {
    /// Name (`build`, `test`, or a script's name).
    pub name: String,
    /// `sh -c` command run in the target folder, already concrete (no placeholders needed).
    pub command: String,
    /// What it does, for `once query target` ("the `dev` script: `vite`").
    pub description: String,
    /// A server or watcher: runs until stopped, never cached.
    pub persistent: bool,
    /// Input globs in place of the kind's (relative to the target folder); `None`: the kind's
    /// default inputs for a default's name, else every input the kind's defaults share.
    pub inputs: Option<Vec<String>>,
    /// The ecosystem whose every package's capability of this name it does at once
    /// ([`Capability::stands_for`](crate::model::Capability::stands_for)).
    pub stands_for: Option<Ecosystem>,
    /// How several packages' actions of this capability run as one command
    /// ([`Capability::batch`](crate::model::Capability::batch)).
    pub batch: Option<crate::model::Batch>,
}

/// A target inferred from an ecosystem manifest.
#[derive(Debug, Clone)]
pub(crate) struct Inferred {
    /// Target name: the package's own name, made a valid target name.
    pub name: String,
    /// Built-in kind (`cargo-package`, `npm-package`, `python-project`, `go-module`).
    pub kind: &'static str,
    /// Folder relative to the workspace root, `/`-separated, `.` for the root.
    pub path: String,
    /// Kind fields (`package`, `module`, …); the kind's defaults fill the rest.
    pub fields: BTreeMap<String, serde_json::Value>,
    /// `None`: the kind's default capabilities. `Some`: exactly these (a package's scripts).
    pub capabilities: Option<Vec<InferredCapability>>,
    /// Edges to other packages of the same ecosystem, sorted, without duplicates.
    pub edges: Vec<Edge>,
    /// The manifest it comes from: an index into the reader's files.
    pub file: usize,
    /// Byte offset in that manifest of what names it (the `[package]` table, `"name"`, …).
    pub offset: usize,
    /// Which ecosystem inferred it.
    pub ecosystem: Ecosystem,
}

/// Files whose presence marks a folder as (part of) a workspace, when it has no `once.toml`.
pub const MARKERS: &[&str] = &[
    "Cargo.toml",
    "package.json",
    "pnpm-workspace.yaml",
    "pyproject.toml",
    "go.work",
    "go.mod",
];

/// The targets every ecosystem in `ecosystems` infers, in that order.
pub(crate) fn infer(reader: &mut Reader, ecosystems: &[Ecosystem]) -> Vec<Inferred> {
    type Discover = fn(&mut Reader) -> Vec<Inferred>;
    // Each ecosystem at the root first; then one survey below it for those that found nothing,
    // begun on another core while the root's are read (it lists what it can without knowing
    // the root's packages, which are most of what it lists).
    let ahead = reader
        .at_root()
        .and_then(|root| nested::Ahead::start(root, ecosystems));
    let mut at_root: Vec<(Ecosystem, Discover, Vec<Inferred>)> = Vec::new();
    for &ecosystem in ecosystems {
        let discover: Discover = match ecosystem {
            Ecosystem::Cargo => cargo::discover,
            Ecosystem::JavaScript => javascript::discover,
            Ecosystem::Python => python::discover,
            Ecosystem::Go => go::discover,
            // It reads what the others found: last, whatever the order asked.
            Ecosystem::Workspace => continue,
        };
        let found = discover(reader);
        at_root.push((ecosystem, discover, found));
    }
    let missing: Vec<Ecosystem> = at_root
        .iter()
        .filter(|(_, _, found)| found.is_empty())
        .map(|(ecosystem, _, _)| *ecosystem)
        .collect();
    let surveyed = if missing.is_empty() {
        if let Some(ahead) = ahead {
            ahead.cancel();
        }
        Vec::new()
    } else {
        let packages: std::collections::HashSet<String> = at_root
            .iter()
            .flat_map(|(_, _, found)| found.iter())
            .filter(|p| p.path != ".")
            .map(|p| p.path.clone())
            .collect();
        nested::survey(reader, &missing, &packages, ahead)
    };
    let mut all = Vec::new();
    for (ecosystem, discover, mut found) in at_root {
        if found.is_empty() {
            found = nested::discover(reader, ecosystem, discover, &surveyed);
        }
        all.extend(found);
    }
    if ecosystems.contains(&Ecosystem::Workspace)
        && let Some(root) = root::discover(reader, &all)
    {
        all.push(root);
    }
    all
}

/// The name of the package of `found` in `folder`, for tests that read edges by name.
#[cfg(test)]
pub(crate) fn name_at<'a>(found: &'a [Inferred], folder: &str) -> &'a str {
    found
        .iter()
        .find(|t| t.path == folder)
        .map_or_else(|| panic!("no package in `{folder}`"), |t| t.name.as_str())
}

/// Makes `raw` (a package name like `@scope/web` or `my_crate`) a valid target name:
/// a leading `@` is dropped, `/` becomes `-`, any other character outside
/// `[A-Za-z0-9._-]` becomes `_`, and a name starting with neither letter nor digit gets `x`.
pub(crate) fn target_name(raw: &str) -> String {
    let trimmed = raw.strip_prefix('@').unwrap_or(raw);
    let mut out: String = trimmed
        .chars()
        .map(|c| match c {
            '/' => '-',
            c if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') => c,
            _ => '_',
        })
        .collect();
    if !out.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        out.insert(0, 'x');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::valid_name;

    #[test]
    fn target_names_are_valid() {
        assert_eq!(target_name("@scope/web"), "scope-web");
        assert_eq!(target_name("my_crate"), "my_crate");
        assert_eq!(target_name("a b+c"), "a_b_c");
        assert_eq!(target_name("_private"), "x_private");
        assert_eq!(target_name(""), "x");
        for raw in ["@a/b", "x y", "-z", ".hidden", "ünï"] {
            assert!(valid_name(&target_name(raw)), "{raw}");
        }
    }
}
