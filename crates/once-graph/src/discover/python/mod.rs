//! Python projects and uv workspaces, from `pyproject.toml`.
//!
//! The root `pyproject.toml` decides: with `[tool.uv.workspace]`, its `members` globs (less
//! `exclude`) are the projects, the root too when it has a `[project]`; else a root
//! `[project]` is the only one. A project's edges are its dependencies (`[project]`
//! dependencies, optional ones, `[dependency-groups]`, uv's `dev-dependencies`) that a
//! `[tool.uv.sources]` entry, the project's own or else the root's, takes from a member
//! (`workspace = true`, or a `path` to a member's folder), as uv resolves them.
//!
//! With a `uv.lock` at the root, a member's edges are also those the lock records (see
//! [`lock`]): uv's own resolved answer, the only place that names what a build hook fills in
//! (`dynamic = ["dependencies"]`). The two are joined, never one replacing the other: an edge
//! too many costs a re-run, an edge too few a false green. A lock that disagrees with a
//! `pyproject.toml` (a member missing, an edge the lock lacks) is stale, and says so; one that
//! cannot be read is a warning and the manifests alone answer.
//!
//! It reads manifests only through the [`Reader`] and never runs Python or uv.

mod ini;
mod lock;
mod pyproject;
#[cfg(test)]
mod tests;
mod tools;
mod workspace;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::{Ecosystem, Edge, EdgeKind, Inferred, Reader, target_name};
use crate::relpath::join;
use pyproject::{Pyproject, Source, normalize, valid_name};
use tools::Runner;
pub(crate) use workspace::workspace_commands;

/// A member project, parsed.
struct Member {
    folder: String,
    file: usize,
    name: String,
    offset: usize,
    manifest: Pyproject,
}

/// The targets the workspace's Python manifests describe.
pub(crate) fn discover(reader: &mut Reader) -> Vec<Inferred> {
    let Some(root_file) = reader.read("pyproject.toml") else {
        return Vec::new();
    };
    let Some(root) = parse(reader, root_file) else {
        return Vec::new();
    };
    let mut folders = Vec::new();
    match (&root.name, root.project_offset) {
        (Some(_), _) => folders.push(".".to_string()),
        (None, Some(at)) => no_name(reader, root_file, at),
        (None, None) => {}
    }
    if let Some(ws) = &root.workspace {
        // `.` names the root, already a member when it is a project.
        let mut globs: Vec<String> = ws
            .members
            .iter()
            .filter(|g| !matches!(g.trim_end_matches('/'), "." | ""))
            .cloned()
            .collect();
        globs.extend(ws.exclude.iter().map(|g| format!("!{g}")));
        folders.extend(reader.folders(&globs, "pyproject.toml", root_file, ws.offset));
    }
    let runner = if reader.exists("uv.lock") {
        Runner::Uv
    } else {
        Runner::Python
    };
    let mut members = Vec::new();
    for folder in folders {
        let (file, manifest) = if folder == "." {
            (root_file, root.clone())
        } else {
            let Some(file) = reader.read(&format!("{folder}/pyproject.toml")) else {
                continue;
            };
            let Some(manifest) = parse(reader, file) else {
                continue;
            };
            (file, manifest)
        };
        let Some((name, offset)) = manifest.name.clone() else {
            no_name(reader, file, manifest.project_offset.unwrap_or(0));
            continue;
        };
        if !valid_name(&name) {
            reader.warn(
                file,
                offset,
                "invalid-project-name",
                format!(
                    "`{name}` in `{}` is not a valid project name; it was skipped",
                    reader.rel(file)
                ),
            );
            continue;
        }
        members.push(Member {
            folder,
            file,
            name,
            offset,
            manifest,
        });
    }
    let locked = if runner == Runner::Uv && members.len() > 1 {
        read_lock(reader)
    } else {
        None
    };
    // With a lock that cannot be read, its own warning has already said what to do.
    if runner == Runner::Python {
        for m in members.iter().filter(|m| m.manifest.dynamic_deps) {
            let rel = reader.rel(m.file).to_string();
            reader.warn(
                m.file,
                m.offset,
                "dynamic-dependencies",
                format!(
                    "the dependencies of `{}` are `dynamic` in `{rel}`, so its edges to other \
                     members are unknown; run `uv lock` to write a `uv.lock` they are read from",
                    m.name
                ),
            );
        }
    }
    infer(reader, runner, &root, &members, locked.as_ref())
}

/// What a lock says, by member folder: the file it was read from and each member's edges.
struct Locked {
    file: usize,
    deps: HashMap<String, Vec<(String, EdgeKind)>>,
}

/// The root `uv.lock`, when it can be read (else a warning, and `None`: the manifests alone
/// answer). The [`Reader`] bounds its size as it bounds every manifest's.
fn read_lock(reader: &mut Reader) -> Option<Locked> {
    let file = reader.read("uv.lock")?;
    match lock::parse(reader.text(file)) {
        Ok(members) => Some(Locked {
            file,
            deps: members.into_iter().map(|m| (m.folder, m.deps)).collect(),
        }),
        Err((at, message)) => {
            reader.warn(
                file,
                at,
                "invalid-uv-lock",
                format!(
                    "cannot parse `uv.lock`: {message}; edges come from `pyproject.toml` alone; \
                     run `uv lock` to write it again"
                ),
            );
            None
        }
    }
}

fn parse(reader: &mut Reader, file: usize) -> Option<Pyproject> {
    match pyproject::parse(reader.text(file)) {
        Ok(p) => Some(p),
        Err((at, message)) => {
            let rel = reader.rel(file).to_string();
            reader.warn(
                file,
                at,
                "invalid-pyproject",
                format!("cannot parse `{rel}`: {message}; its Python projects were not inferred"),
            );
            None
        }
    }
}

fn no_name(reader: &mut Reader, file: usize, at: usize) {
    let rel = reader.rel(file).to_string();
    reader.warn(
        file,
        at,
        "no-project-name",
        format!("`{rel}` has no `[project] name`; it was skipped"),
    );
}

/// Names, edges and capabilities of the members.
fn infer(
    reader: &mut Reader,
    runner: Runner,
    root: &Pyproject,
    members: &[Member],
    locked: Option<&Locked>,
) -> Vec<Inferred> {
    let names = names(reader, members);
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut by_folder: HashMap<&str, usize> = HashMap::new();
    for (i, m) in members.iter().enumerate() {
        by_name.entry(normalize(&m.name)).or_insert(i);
        by_folder.insert(m.folder.as_str(), i);
    }
    let root_sources = sources(root);
    // Members whose `pyproject.toml` says what the lock does not: named in one warning.
    let mut stale: Vec<&str> = Vec::new();
    let mut out = Vec::with_capacity(members.len());
    for (i, m) in members.iter().enumerate() {
        let own = sources(&m.manifest);
        let mut edges = Vec::new();
        for (dep, kind) in &m.manifest.deps {
            // A member's own entry for a name replaces the root's, as in uv.
            let (entries, from) = match own.get(dep.as_str()) {
                Some(e) => (e.as_slice(), m.folder.as_str()),
                None => (
                    root_sources
                        .get(dep.as_str())
                        .map_or(&[][..], Vec::as_slice),
                    ".",
                ),
            };
            // Several entries (each with a marker) may apply: any from the workspace counts.
            for source in entries {
                let to = match source {
                    Source::Workspace => by_name.get(dep).copied(),
                    Source::Path(p) => {
                        join(from, p).and_then(|f| by_folder.get(f.as_str()).copied())
                    }
                    Source::Elsewhere => None,
                };
                if let Some(to) = to.filter(|&to| to != i) {
                    edges.push(Edge {
                        folder: members[to].folder.clone(),
                        kind: *kind,
                    });
                }
            }
        }
        edges.sort();
        edges.dedup();
        if let Some(locked) = locked {
            let from_lock: BTreeSet<(&str, EdgeKind)> = locked
                .deps
                .get(m.folder.as_str())
                .into_iter()
                .flatten()
                .filter(|(to, _)| to != &m.folder && by_folder.contains_key(to.as_str()))
                .map(|(to, kind)| (to.as_str(), *kind))
                .collect();
            let agrees = locked.deps.contains_key(m.folder.as_str())
                && edges
                    .iter()
                    .all(|e| from_lock.contains(&(e.folder.as_str(), e.kind)));
            if !agrees {
                stale.push(&m.name);
            }
            edges.extend(from_lock.into_iter().map(|(to, kind)| Edge {
                folder: to.to_string(),
                kind,
            }));
            edges.sort();
            edges.dedup();
        }
        let capabilities = tools::capabilities(
            reader,
            runner,
            &m.folder,
            tools::Scope::Package(&m.name),
            &m.manifest,
        );
        let mut fields = BTreeMap::new();
        fields.insert("package".into(), serde_json::Value::String(m.name.clone()));
        out.push(Inferred {
            name: names[i].clone(),
            kind: "python-project",
            path: m.folder.clone(),
            fields,
            capabilities: Some(capabilities),
            edges,
            file: m.file,
            offset: m.offset,
            ecosystem: Ecosystem::Python,
        });
    }
    if let Some(locked) = locked
        && !stale.is_empty()
    {
        let names: Vec<String> = stale.iter().map(|n| format!("`{n}`")).collect();
        reader.warn(
            locked.file,
            0,
            "stale-uv-lock",
            format!(
                "`uv.lock` does not match the `pyproject.toml` of {}; their edges come from both; \
                 run `uv lock` to update it",
                names.join(", ")
            ),
        );
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// A manifest's `[tool.uv.sources]` entries by normalised name.
fn sources(p: &Pyproject) -> HashMap<&str, Vec<&Source>> {
    let mut out: HashMap<&str, Vec<&Source>> = HashMap::new();
    for (name, source) in &p.sources {
        out.entry(name.as_str()).or_default().push(source);
    }
    out
}

/// Target names from project names; two members of one normalised name (uv refuses that
/// workspace) get `-2`, `-3`… in folder order, and a warning.
fn names(reader: &mut Reader, members: &[Member]) -> Vec<String> {
    let mut out: Vec<String> = members.iter().map(|m| target_name(&m.name)).collect();
    let mut order: Vec<usize> = (0..members.len()).collect();
    order.sort_by(|&a, &b| members[a].folder.cmp(&members[b].folder));
    let mut seen: HashMap<String, usize> = HashMap::new();
    for i in order {
        let count = seen.entry(normalize(&members[i].name)).or_insert(0);
        *count += 1;
        if *count > 1 {
            let base = out[i].clone();
            let mut n = *count;
            while out.contains(&format!("{base}-{n}")) {
                n += 1;
            }
            out[i] = format!("{base}-{n}");
            let m = &members[i];
            reader.warn(
                m.file,
                m.offset,
                "duplicate-project",
                format!(
                    "project `{}` is declared again in `{}`; its target is named `{}`",
                    m.name, m.folder, out[i]
                ),
            );
        }
    }
    out
}
