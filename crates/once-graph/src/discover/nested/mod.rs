//! Workspaces below the root: an ecosystem that has nothing at the root, looked for in the
//! folders near it (a Cargo workspace in `rust/`, a uv project in `sdk/python/`, a JS app beside
//! a Go root).
//!
//! The rule, in the order it is applied:
//! 1. Only an ecosystem that found no package at the root is looked for below it: a root
//!    workspace's own rules (members, `go.mod` walks) already say which folders are its packages,
//!    and a manifest they leave out is one its tool leaves out too.
//! 2. A folder one to [`MAX_DEPTH`] levels below the root that holds the ecosystem's root
//!    manifest is a candidate, unless it or a folder above it is hidden, `node_modules`, `target`
//!    (never entered), or one of [`NOT_WORKSPACES`] (test data, fixtures, examples and vendored
//!    code: what the ecosystems' tools build only when a workspace lists it), or it lies below a
//!    package another ecosystem found at the root (a package's folder is looked at, its insides
//!    are its own: a 1,000-package workspace costs one listing per package, not a walk of each).
//!    One walk serves every ecosystem missing at the root ([`survey`]), telling manifests by the
//!    names each listing holds, and its trace is the folders it listed. On more than one core it
//!    runs ahead ([`ahead`]): begun before the root's discovery on a thread of its own, it lists
//!    the package folders while the root's ecosystems read their manifests, and gives the same
//!    answer as the walk after them would.
//! 3. Candidates are taken shallowest first, and one below a nested workspace already taken (one
//!    that yielded packages) is left to it: that workspace's own rules decide its members, as its
//!    tool does (`rust/examples/demo` is not a member of `rust/`, so it is no package at all).
//! 4. Each taken workspace is read by the ecosystem's own discovery, as if its folder were the
//!    root ([`Reader::within`]). Go modules without a `go.work` are the exception: each builds
//!    alone, yet a `replace` may name a sibling's folder (`../router`), so they are read together
//!    from the root, with every `go.mod` below them, as below a root `go.mod`. The packages'
//!    folders and edges are then named from the root, and every input the kind names from the
//!    workspace root (`//Cargo.lock`) is named from the nested workspace's folder as well
//!    (`//rust/Cargo.lock`): a nested workspace's lockfile is an input of its own members' keys,
//!    never of another nested workspace's.
//!
//! Each workspace's names are unique within it; a name an earlier nested workspace of the same
//! ecosystem holds gets `-2` with a `duplicate-nested-package` warning, so neither is lost.
//!
//! It must never read a manifest outside the reader, walk deeper than [`MAX_DEPTH`], or let a
//! nested workspace's lockfile into another nested workspace's keys.

mod ahead;
#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::path::Path;

pub(crate) use ahead::Ahead;

use super::{Ecosystem, Inferred, MARKERS, Reader};
use crate::kind::find_kind;
use crate::workspace::load::{Listed, Trace};

/// How many folders below the root a nested workspace's manifest may be (`a/b/c/Cargo.toml`).
pub(crate) const MAX_DEPTH: usize = 3;

/// Folder names below which no nested workspace is looked for: Go's ignored folders
/// (`testdata`, `vendor`), vendored code, and the test data and examples a repository keeps
/// beside its packages.
pub(crate) const NOT_WORKSPACES: &[&str] = &[
    "testdata",
    "vendor",
    "third_party",
    "fixtures",
    "__fixtures__",
    "examples",
    "example",
];

/// The manifests that make a folder the root of a workspace of `ecosystem`.
fn markers(ecosystem: Ecosystem) -> &'static [&'static str] {
    match ecosystem {
        Ecosystem::Cargo => &["Cargo.toml"],
        Ecosystem::JavaScript => &["package.json", "pnpm-workspace.yaml"],
        Ecosystem::Python => &["pyproject.toml"],
        Ecosystem::Go => &["go.work", "go.mod"],
        Ecosystem::Workspace => &[],
    }
}

/// The folders (below the root, sorted so that a folder comes before those below it) holding a
/// root manifest of one of `ecosystems`, each with the manifest's name: one walk of the folders
/// 1 to [`MAX_DEPTH`] levels down, entering none that is hidden, `node_modules`, `target`, one of
/// [`NOT_WORKSPACES`] or one of `packages` (the folders of packages found at the root, which
/// are listed but not entered). Recorded in `reader` with the folders it listed as its trace, so
/// a manifest that appears in one of them makes the workspace stale. The walk is `ahead`'s when
/// it ran ahead of the root's discovery and kept it ([`Ahead`]), else made now.
pub(crate) fn survey(
    reader: &mut Reader,
    ecosystems: &[Ecosystem],
    packages: &HashSet<String>,
    ahead: Option<Ahead>,
) -> Vec<(String, &'static str)> {
    let Some(root) = reader.at_root().map(Path::to_path_buf) else {
        if let Some(ahead) = ahead {
            ahead.cancel();
        }
        return Vec::new();
    };
    let wanted: Vec<&'static str> = ecosystems
        .iter()
        .flat_map(|e| markers(*e).iter().copied())
        .collect();
    // The survey ran ahead for every ecosystem that might be missing; these are.
    let walked = ahead
        .and_then(|ahead| ahead.finish(packages))
        .map(|(mut found, trace)| {
            found.retain(|(_, marker)| wanted.contains(marker));
            (found, trace)
        });
    let (found, trace) = walked.unwrap_or_else(|| walk(&root, &wanted, packages));
    let folders = found.iter().map(|(f, _)| f.clone()).collect();
    let mut packages: Vec<String> = packages.iter().cloned().collect();
    packages.sort();
    reader.record_survey(wanted.join("|"), packages, folders, trace);
    found
}

/// The walk of [`survey`] from `root`: the folders holding one of `wanted`, each with its name,
/// and what it listed.
pub(crate) fn walk<'a>(
    root: &Path,
    wanted: &[&'a str],
    packages: &HashSet<String>,
) -> (Vec<(String, &'a str)>, Trace) {
    let mut found: Vec<(String, &'a str)> = Vec::new();
    let mut trace = Trace::default();
    let mut stack = vec![(String::new(), 0usize)];
    while let Some((rel, depth)) = stack.pop() {
        let held = list(root, &rel, &mut trace);
        held.found_in(&rel, wanted, &mut found);
        if depth < MAX_DEPTH && !packages.contains(&rel) {
            held.enter(&rel, depth, &mut stack);
        }
    }
    found.sort();
    found.dedup();
    (found, trace)
}

/// What one folder's listing held that the survey needs.
struct Held {
    /// The folders in it the survey may enter: not hidden, `node_modules`, `target` or one of
    /// [`NOT_WORKSPACES`], and no link (a link to a folder is never followed).
    folders: Vec<String>,
    /// The manifests ([`MARKERS`]) in it, files or links to them alike: the reader decides when
    /// it reads one.
    manifests: Vec<&'static str>,
}

/// Lists the folder `rel` below `root` (stamped before the listing, in `trace`).
fn list(root: &Path, rel: &str, trace: &mut Trace) -> Held {
    let abs = if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(rel)
    };
    let before = std::fs::metadata(&abs);
    let entries = std::fs::read_dir(&abs);
    trace
        .listed
        .push((rel.to_string(), Listed::of(before, entries.is_ok())));
    let mut held = Held {
        folders: Vec::new(),
        manifests: Vec::new(),
    };
    let Ok(entries) = entries else {
        return held;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if kind.is_dir() {
            let skipped = name.starts_with('.')
                || name == "node_modules"
                || name == "target"
                || NOT_WORKSPACES.contains(&name.as_ref());
            if !skipped {
                held.folders.push(name.into_owned());
            }
        } else if let Some(manifest) = MARKERS.iter().find(|m| **m == name) {
            held.manifests.push(manifest);
        }
    }
    held
}

impl Held {
    /// Adds to `found` each of `wanted` this listing of `rel` holds (the root's own are the
    /// root's ecosystems' business).
    fn found_in<'a>(&self, rel: &str, wanted: &[&'a str], found: &mut Vec<(String, &'a str)>) {
        if rel.is_empty() {
            return;
        }
        for manifest in &self.manifests {
            if let Some(marker) = wanted.iter().find(|m| *m == manifest) {
                found.push((rel.to_string(), *marker));
            }
        }
    }

    /// Whether the folder may be a package's: every package discovery finds at the root is a
    /// folder holding its ecosystem's manifest.
    fn may_be_a_package(&self) -> bool {
        !self.manifests.is_empty() || self.folders.iter().any(|f| MARKERS.contains(&f.as_str()))
    }

    /// Pushes the folders in `rel` (at `depth`) onto `stack`, to be listed in turn.
    fn enter(self, rel: &str, depth: usize, stack: &mut Vec<(String, usize)>) {
        for name in self.folders {
            let child = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            stack.push((child, depth + 1));
        }
    }
}

/// The packages of every nested workspace of `ecosystem`, read with `discover` (the
/// ecosystem's own discovery) from each workspace's folder among `surveyed` ([`survey`]).
pub(crate) fn discover(
    reader: &mut Reader,
    ecosystem: Ecosystem,
    discover: impl Fn(&mut Reader) -> Vec<Inferred>,
    surveyed: &[(String, &'static str)],
) -> Vec<Inferred> {
    let mut found = Vec::new();
    let mut taken: Vec<String> = Vec::new();
    let mut go_modules: Vec<String> = Vec::new();
    let mut candidates: Vec<&String> = surveyed
        .iter()
        .filter(|(_, marker)| markers(ecosystem).contains(marker))
        .map(|(folder, _)| folder)
        .collect();
    candidates.dedup();
    for folder in candidates.into_iter().cloned() {
        if taken.iter().any(|t| folder.starts_with(&format!("{t}/"))) {
            continue;
        }
        if ecosystem == Ecosystem::Go && !reader.exists(&format!("{folder}/go.work")) {
            // Go modules without a `go.work` each build alone, but a `replace` may name a
            // sibling's folder (`../router`): they are read together, from the root.
            go_modules.push(folder.clone());
            taken.push(folder);
            continue;
        }
        let mut packages = reader.within(&folder, &discover);
        if packages.is_empty() {
            continue;
        }
        for package in &mut packages {
            rebase(package, &folder);
        }
        name_apart(reader, &found, &mut packages);
        found.extend(packages);
        taken.push(folder);
    }
    if !go_modules.is_empty() {
        let mut modules = super::go::modules_below(reader, &go_modules);
        name_apart(reader, &found, &mut modules);
        found.extend(modules);
    }
    found
}

/// Gives each of `packages` (one nested workspace's) whose name a package of an earlier nested
/// workspace of the ecosystem has the first free `NAME-2`, `NAME-3`…, with a warning: each
/// workspace's names are unique within it only, and two apps may both be `ui`. Left alone, the
/// second would be taken for its ecosystem's repeat and left out.
fn name_apart(reader: &mut Reader, earlier: &[Inferred], packages: &mut [Inferred]) {
    let mut taken: std::collections::HashSet<String> = earlier
        .iter()
        .chain(packages.iter())
        .map(|p| p.name.clone())
        .collect();
    for package in packages.iter_mut() {
        let Some(first) = earlier.iter().find(|e| e.name == package.name) else {
            continue;
        };
        let fresh = (2..)
            .map(|n| format!("{}-{n}", package.name))
            .find(|name| !taken.contains(name))
            .unwrap_or_else(|| package.name.clone());
        reader.warn(
            package.file,
            package.offset,
            "duplicate-nested-package",
            format!(
                "a package named `{}` is in `{}` too; this one is target `{fresh}`; to name it \
                 yourself, declare a target with its kind and folder",
                package.name, first.path
            ),
        );
        taken.insert(fresh.clone());
        package.name = fresh;
    }
}

/// Names `package` (read with `folder` as its root) from the root: its folder, its edges, and
/// the inputs its kind names from the workspace root.
fn rebase(package: &mut Inferred, folder: &str) {
    let from_root = |path: &str| match path {
        "." => folder.to_string(),
        path => format!("{folder}/{path}"),
    };
    package.path = from_root(&package.path);
    for edge in &mut package.edges {
        edge.folder = from_root(&edge.folder);
    }
    let kind = find_kind(package.kind);
    for capability in package.capabilities.iter_mut().flatten() {
        let inputs = match capability.inputs.take() {
            Some(inputs) => inputs,
            // What `to_target` would give it: the kind's inputs for a default's name, else those
            // every default of the kind shares (the first's).
            None => kind
                .and_then(|k| {
                    k.defaults
                        .iter()
                        .find(|c| *c.name == *capability.name)
                        .or_else(|| k.defaults.first())
                })
                .map_or_else(Vec::new, |c| c.inputs.to_vec()),
        };
        // The root's own file of each name stays an input too: nothing at the root is of this
        // ecosystem, so it is rarely there, and when it is (a `tsconfig.base.json` a nested app
        // extends, a stray `uv.lock`) a tool may still read it. Keying it costs a re-run at most.
        let mut rebased = Vec::with_capacity(inputs.len() * 2);
        for input in inputs {
            let nested = rooted_in(&input, folder);
            if nested != input {
                rebased.push(nested);
            }
            rebased.push(input);
        }
        capability.inputs = Some(rebased);
    }
}

/// `input` with a path from the workspace root (`//X`, `!//X`) made a path from `folder`
/// (`//folder/X`); any other input is relative to the package and stays as it is.
fn rooted_in(input: &str, folder: &str) -> String {
    let (not, pattern) = match input.strip_prefix('!') {
        Some(rest) => ("!", rest),
        None => ("", input),
    };
    match pattern.strip_prefix("//") {
        Some(rest) => format!("{not}//{folder}/{rest}"),
        None => input.to_string(),
    }
}
