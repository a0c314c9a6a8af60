//! Go modules and workspaces, from `go.work` and `go.mod`.
//!
//! With a `go.work` at the root, its `use` folders are the modules; without one, every `go.mod`
//! below the root is (outside `testdata` and `vendor`, which Go ignores). A module's edges are
//! its `require`s that Go builds from a folder of the workspace: the folder a local `replace`
//! names (`go.work`'s replaces override the module's own, as in Go), else, with a `go.work`, the
//! `use`d module of that path (every `use`d module is a main module). Without a `go.work` each
//! module builds alone, so a `require` without a local `replace` is fetched from the module proxy
//! even when a module of that path sits in the tree: it must never become an edge, or a change to
//! that folder would invalidate a build that never reads it. A `replace` alone adds no edge: Go
//! applies it only to modules the build requires.
//!
//! Every `go` command it offers runs with `GOTOOLCHAIN=local`: Go 1.21+ would otherwise download
//! the toolchain a `go` or `toolchain` line names, and a run must never change the machine.

mod syntax;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};

use super::{Ecosystem, Edge, EdgeKind, Inferred, InferredCapability, Reader, target_name};
use crate::relpath::join;
use syntax::Replace;

/// A module read from its `go.mod`.
struct Module {
    folder: String,
    path: String,
    file: usize,
    offset: usize,
    requires: Vec<String>,
    replaces: Vec<Replace>,
}

/// Where a `replace` sends a module path.
enum Target {
    /// A folder relative to the root (`None` when it leaves the workspace).
    Folder(Option<String>),
    /// Another module, fetched: not the workspace's.
    Remote,
}

/// The targets the workspace's Go manifests describe.
pub(crate) fn discover(reader: &mut Reader) -> Vec<Inferred> {
    let mut work_replaces = HashMap::new();
    let work = reader.read("go.work");
    let folders = match work {
        Some(file) => {
            let work = syntax::go_work(reader.text(file));
            for r in &work.replaces {
                work_replaces.insert(r.from.clone(), target(".", r));
            }
            used_folders(reader, file, &work.uses)
        }
        None => module_folders(reader),
    };
    let modules = read_modules(reader, folders);
    let resolve = if work.is_some() {
        Unreplaced::UsedModule
    } else {
        Unreplaced::Fetched
    };
    infer(reader, &modules, &work_replaces, resolve)
}

/// Every Go module below each of `roots` (folders below the root, none holding a `go.work`),
/// each module building alone: as [`discover`] does below a root `go.mod`, with the folders
/// named from the root, so that a `replace` from one of them to another (`../router`) is an edge.
pub(crate) fn modules_below(reader: &mut Reader, roots: &[String]) -> Vec<Inferred> {
    let mut folders: Vec<(String, Option<(usize, usize)>)> = Vec::new();
    for root in roots {
        folders.push((root.clone(), None));
        let file = reader.read(&format!("{root}/go.mod")).unwrap_or(usize::MAX);
        for folder in reader.folders(&[format!("{root}/**")], "go.mod", file, 0) {
            if !ignored_by_go(&folder) {
                folders.push((folder, None));
            }
        }
    }
    folders.sort();
    folders.dedup();
    let modules = read_modules(reader, folders);
    infer(reader, &modules, &HashMap::new(), Unreplaced::Fetched)
}

/// Whether Go leaves the folder out of `./...` and module walks (`testdata`, `vendor`).
fn ignored_by_go(folder: &str) -> bool {
    folder.split('/').any(|c| c == "testdata" || c == "vendor")
}

/// The modules of `folders` read from their `go.mod`s; a folder `go.work` uses without one, or a
/// `go.mod` without a `module` line, is a warning.
fn read_modules(
    reader: &mut Reader,
    folders: Vec<(String, Option<(usize, usize)>)>,
) -> Vec<Module> {
    let mut modules = Vec::new();
    for (folder, used_at) in folders {
        let rel = if folder == "." {
            "go.mod".to_string()
        } else {
            format!("{folder}/go.mod")
        };
        let Some(file) = reader.read(&rel) else {
            if let Some((work, offset)) = used_at {
                reader.warn(
                    work,
                    offset,
                    "missing-module",
                    format!("`go.work` uses `{folder}`, which has no `go.mod`; it was skipped"),
                );
            }
            continue;
        };
        let parsed = syntax::go_mod(reader.text(file));
        let Some(module) = parsed.module.filter(|m| !m.text.is_empty()) else {
            reader.warn(
                file,
                0,
                "no-module-path",
                format!("`{rel}` has no `module` line; it was skipped"),
            );
            continue;
        };
        modules.push(Module {
            folder,
            path: module.text,
            file,
            offset: module.offset,
            requires: parsed.requires,
            replaces: parsed.replaces,
        });
    }
    modules
}

/// Where Go takes a required module from when no `replace` names it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unreplaced {
    /// A `go.work` is in force: the `use`d module of that path, if any.
    UsedModule,
    /// Each module builds alone: the module proxy, never a folder.
    Fetched,
}

/// The folders `go.work` uses, normalised, each with where it is named.
fn used_folders(
    reader: &mut Reader,
    file: usize,
    uses: &[syntax::Arg],
) -> Vec<(String, Option<(usize, usize)>)> {
    let mut out: Vec<(String, Option<(usize, usize)>)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for u in uses {
        match join(".", &u.text).filter(|_| !u.text.starts_with('/')) {
            Some(folder) => {
                if seen.insert(folder.clone()) {
                    out.push((folder, Some((file, u.offset))));
                }
            }
            None => reader.warn(
                file,
                u.offset,
                "outside-workspace",
                format!(
                    "`go.work` uses `{}`, outside the workspace; it was skipped",
                    u.text
                ),
            ),
        }
    }
    out.sort();
    out
}

/// With a `go.mod` at the root, every folder holding a `go.mod`, the root included, outside
/// `testdata` and `vendor`. Without one, none: the modules of a repository whose root is not a
/// Go module are looked for by `discover::nested`, at most three folders down, and read with
/// [`modules_below`].
fn module_folders(reader: &mut Reader) -> Vec<(String, Option<(usize, usize)>)> {
    let mut out = Vec::new();
    if !reader.exists("go.mod") {
        return out;
    }
    out.push((".".to_string(), None));
    // The root `go.mod` is where a walk cut short is reported.
    let root_file = reader.read("go.mod").unwrap_or(usize::MAX);
    for folder in reader.folders(&["**".into()], "go.mod", root_file, 0) {
        if !ignored_by_go(&folder) {
            out.push((folder, None));
        }
    }
    out
}

/// Turns the modules into targets: names, edges, capabilities.
fn infer(
    reader: &mut Reader,
    modules: &[Module],
    work_replaces: &HashMap<String, Target>,
    unreplaced: Unreplaced,
) -> Vec<Inferred> {
    let names = names(reader, modules);
    let mut by_path: HashMap<&str, usize> = HashMap::new();
    let mut by_folder: HashMap<&str, usize> = HashMap::new();
    for (i, m) in modules.iter().enumerate() {
        by_path.entry(m.path.as_str()).or_insert(i);
        by_folder.insert(m.folder.as_str(), i);
    }
    let mut out = Vec::with_capacity(modules.len());
    for (i, m) in modules.iter().enumerate() {
        let own: HashMap<&str, Target> = m
            .replaces
            .iter()
            .map(|r| (r.from.as_str(), target(&m.folder, r)))
            .collect();
        let mut edges = Vec::new();
        for req in &m.requires {
            let to = match work_replaces.get(req).or_else(|| own.get(req.as_str())) {
                Some(Target::Folder(folder)) => {
                    folder.as_deref().and_then(|f| by_folder.get(f)).copied()
                }
                Some(Target::Remote) => None,
                None if unreplaced == Unreplaced::UsedModule => by_path.get(req.as_str()).copied(),
                None => None,
            };
            if let Some(to) = to.filter(|&to| to != i) {
                edges.push(Edge {
                    folder: modules[to].folder.clone(),
                    kind: EdgeKind::Normal,
                });
            }
        }
        edges.sort();
        edges.dedup();
        let mut fields = BTreeMap::new();
        fields.insert("module".into(), serde_json::Value::String(m.path.clone()));
        out.push(Inferred {
            name: names[i].clone(),
            kind: "go-module",
            path: m.folder.clone(),
            fields,
            capabilities: Some(capabilities()),
            edges,
            file: m.file,
            offset: m.offset,
            ecosystem: Ecosystem::Go,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn target(folder: &str, r: &Replace) -> Target {
    if r.local() {
        Target::Folder(join(folder, &r.to))
    } else {
        Target::Remote
    }
}

/// Target names: a module path's last element (`bar/v2` counting as one, `bar-v2`), with more
/// elements from the end for the modules that would share a name, until none do. Two modules
/// of the same path cannot be told apart that way: they get `-2`, `-3`… in folder order, and a
/// warning.
fn names(reader: &mut Reader, modules: &[Module]) -> Vec<String> {
    let elements: Vec<Vec<String>> = modules.iter().map(|m| elements(&m.path)).collect();
    let name = |i: usize, k: usize| {
        let e = &elements[i];
        target_name(&e[e.len().saturating_sub(k)..].join("-"))
    };
    let mut k = vec![1; modules.len()];
    loop {
        let mut groups: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, &ki) in k.iter().enumerate() {
            groups.entry(name(i, ki)).or_default().push(i);
        }
        let mut grew = false;
        for group in groups.values().filter(|g| g.len() > 1) {
            for &i in group {
                // Only a different path can be told apart by more of it.
                let alike = group.iter().all(|&j| modules[j].path == modules[i].path);
                if !alike && k[i] < elements[i].len() {
                    k[i] += 1;
                    grew = true;
                }
            }
        }
        if !grew {
            break;
        }
    }
    let mut out: Vec<String> = (0..modules.len()).map(|i| name(i, k[i])).collect();
    let mut order: Vec<usize> = (0..modules.len()).collect();
    order.sort_by(|&a, &b| modules[a].folder.cmp(&modules[b].folder));
    let mut seen: HashMap<String, usize> = HashMap::new();
    for i in order {
        let base = out[i].clone();
        let count = seen.entry(base.clone()).or_insert(0);
        *count += 1;
        if *count > 1 {
            let mut n = *count;
            while out.contains(&format!("{base}-{n}")) {
                n += 1;
            }
            out[i] = format!("{base}-{n}");
            let m = &modules[i];
            reader.warn(
                m.file,
                m.offset,
                "duplicate-module",
                format!(
                    "module `{}` is declared again in `{}`; its target is named `{}`",
                    m.path, m.folder, out[i]
                ),
            );
        }
    }
    out
}

/// A module path's elements, a major version suffix (`/v2`) joined to the element before it.
fn elements(path: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in path.split('/').filter(|e| !e.is_empty()) {
        let major = e.len() > 1 && e.starts_with('v') && e[1..].bytes().all(|b| b.is_ascii_digit());
        match out.last_mut() {
            Some(last) if major => {
                last.push('-');
                last.push_str(e);
            }
            _ => out.push(e.to_string()),
        }
    }
    out
}

/// The kind's capabilities, sorted by name, each `go` command pinned to the installed toolchain.
fn capabilities() -> Vec<InferredCapability> {
    const LOCAL: &str = "with the installed Go (`GOTOOLCHAIN=local`: never a downloaded toolchain)";
    [
        (
            "build",
            "Compile all packages",
            "GOTOOLCHAIN=local go build ./...",
        ),
        (
            "check",
            "Vet all packages",
            "GOTOOLCHAIN=local go vet ./...",
        ),
        ("fmt", "Format the sources", "gofmt -w ."),
        ("lint", "Vet all packages", "GOTOOLCHAIN=local go vet ./..."),
        ("test", "Run all tests", "GOTOOLCHAIN=local go test ./..."),
    ]
    .into_iter()
    .map(|(name, what, command)| InferredCapability {
        name: name.into(),
        command: command.into(),
        // `gofmt` is a plain binary: it never switches toolchains.
        description: if command.starts_with("GOTOOLCHAIN") {
            format!("{what} {LOCAL}")
        } else {
            format!("{what} with `gofmt`")
        },
        persistent: false,
        inputs: None,
        stands_for: None,
        batch: None,
    })
    .collect()
}
