//! npm, pnpm, yarn and bun workspaces, from `package.json` and `pnpm-workspace.yaml`.
//!
//! The layout is the package manager's own: pnpm's members are the folders the
//! `packages:` globs of `pnpm-workspace.yaml` match, every other manager's the
//! `workspaces` of the root `package.json` (a list, or `{ "packages": [...] }`).
//! A workspace's root `package.json` is never a package target: its scripts
//! drive the members (`turbo run build`, `pnpm -r build`, vue's `vitest`) and are
//! the root target's capabilities ([`root_scripts`], read by `discover::root`).
//! Without workspaces the root package is the one target, at `.`.
//! Each package's capabilities are exactly its scripts ([`scripts`]); its
//! edges are the entries of its dependency tables that name another member.
//!
//! This module reads files only through the [`Reader`] and never runs the
//! package manager: which one a workspace uses is read from `packageManager`
//! or inferred from its lockfile.

mod package_json;
mod pnpm_workspace;
mod scripts;

pub(crate) use scripts::trim_missing_scripts;

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value};

use super::{Ecosystem, Edge, EdgeKind, Inferred, Reader, target_name};
use crate::relpath::join_path;

/// The package manager whose `run` the capabilities call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PackageManager {
    Npm,
    Pnpm,
    Yarn,
    Bun,
}

impl PackageManager {
    fn name(self) -> &'static str {
        match self {
            PackageManager::Npm => "npm",
            PackageManager::Pnpm => "pnpm",
            PackageManager::Yarn => "yarn",
            PackageManager::Bun => "bun",
        }
    }

    /// What a `peerDependencies` entry naming another member means: pnpm (with its default
    /// `auto-install-peers`), npm 7+ and bun install a package's missing peers, and pnpm's
    /// lockfile lists such a peer among the importer's `dependencies`, so to pnpm it is a
    /// normal edge; yarn never installs a package's peers (its lockfile keeps them apart from
    /// the workspace's `dependencies`), so to yarn it is no edge. npm and bun keep the weaker
    /// optional edge: their peers are installed, but only where no other version is.
    fn peer_edge(self) -> Option<EdgeKind> {
        match self {
            PackageManager::Pnpm => Some(EdgeKind::Normal),
            PackageManager::Yarn => None,
            PackageManager::Npm | PackageManager::Bun => Some(EdgeKind::Optional),
        }
    }

    fn parse(name: &str) -> Option<PackageManager> {
        match name {
            "npm" => Some(PackageManager::Npm),
            "pnpm" => Some(PackageManager::Pnpm),
            "yarn" => Some(PackageManager::Yarn),
            "bun" => Some(PackageManager::Bun),
            _ => None,
        }
    }
}

/// Lockfiles in the order their presence decides the package manager.
const LOCKFILES: [(&str, PackageManager); 6] = [
    ("pnpm-lock.yaml", PackageManager::Pnpm),
    ("yarn.lock", PackageManager::Yarn),
    ("bun.lock", PackageManager::Bun),
    ("package-lock.json", PackageManager::Npm),
    ("npm-shrinkwrap.json", PackageManager::Npm),
    ("bun.lockb", PackageManager::Bun),
];

/// Where the packages are, as the workspace's own files say.
enum Layout {
    /// No workspace: the root `package.json`, if any, is the one package.
    Single,
    /// Member folder globs, and the file (reader index) and offset naming them.
    Members(Vec<String>, usize, usize),
    /// The workspace file could not be read (warned): no targets, rather than the root's
    /// recursive scripts as one.
    Unreadable,
}

/// A member `package.json` read and parsed.
struct Member {
    path: String,
    file: usize,
    map: Map<String, Value>,
}

/// The targets the workspace's JavaScript manifests describe.
pub(crate) fn discover(reader: &mut Reader) -> Vec<Inferred> {
    let root = reader
        .read("package.json")
        .map(|file| (file, package_json::object(reader, file)));
    if let Some((_, None)) = root {
        return Vec::new();
    }
    let root = root.and_then(|(file, map)| map.map(|map| (file, map)));
    let pnpm_yaml = reader.read("pnpm-workspace.yaml");
    if root.is_none() && pnpm_yaml.is_none() {
        return Vec::new();
    }
    let pm = package_manager(reader, root.as_ref().map(|(_, map)| map), pnpm_yaml);

    let members: Vec<Member> = match (layout(reader, root.as_ref(), pnpm_yaml, pm), root) {
        (Layout::Unreadable, _) => return Vec::new(),
        (Layout::Members(globs, file, offset), _) => reader
            .folders(&globs, "package.json", file, offset)
            .into_iter()
            .filter_map(|path| {
                let file = reader.read(&format!("{path}/package.json"))?;
                let map = package_json::object(reader, file)?;
                Some(Member { path, file, map })
            })
            .collect(),
        (Layout::Single, Some((file, map))) => vec![Member {
            path: ".".into(),
            file,
            map,
        }],
        (Layout::Single, None) => Vec::new(),
    };
    infer(reader, members, pm)
}

/// The scripts of the root `package.json` of a workspace as capabilities, run with the
/// workspace's package manager from the root, with the file read.
pub(crate) fn root_scripts(reader: &mut Reader) -> Option<(usize, Vec<super::InferredCapability>)> {
    let file = reader.read("package.json")?;
    let map = package_json::object(reader, file)?;
    let pnpm_yaml = reader.read("pnpm-workspace.yaml");
    let pm = package_manager(reader, Some(&map), pnpm_yaml);
    Some((file, scripts::capabilities(reader, file, &map, pm)))
}

/// `packageManager` (`pnpm@9.1.0`), else the first lockfile present, else pnpm when
/// `pnpm-workspace.yaml` exists, else npm.
fn package_manager(
    reader: &mut Reader,
    root: Option<&Map<String, Value>>,
    pnpm_yaml: Option<usize>,
) -> PackageManager {
    let declared = root
        .and_then(|map| package_json::string(map, "packageManager"))
        .and_then(|field| PackageManager::parse(field.split('@').next().unwrap_or_default()));
    if let Some(pm) = declared {
        return pm;
    }
    for (lockfile, pm) in LOCKFILES {
        if reader.exists(lockfile) {
            return pm;
        }
    }
    if pnpm_yaml.is_some() {
        PackageManager::Pnpm
    } else {
        PackageManager::Npm
    }
}

/// pnpm's `pnpm-workspace.yaml` `packages:`, else the root `package.json` `workspaces`.
fn layout(
    reader: &mut Reader,
    root: Option<&(usize, Map<String, Value>)>,
    pnpm_yaml: Option<usize>,
    pm: PackageManager,
) -> Layout {
    if let (Some(file), PackageManager::Pnpm) = (pnpm_yaml, pm) {
        return match pnpm_workspace::packages(reader.text(file)) {
            Ok(Some((globs, offset))) if !globs.is_empty() => {
                Layout::Members(clean_globs(globs), file, offset)
            }
            Ok(Some(_)) => Layout::Single,
            // A settings-only `pnpm-workspace.yaml`: the members, if any, are `workspaces`.
            Ok(None) => package_json_globs(reader, root),
            Err(e) => {
                reader.warn(
                    file,
                    e.offset,
                    "bad-pnpm-workspace",
                    format!(
                        "{} in `pnpm-workspace.yaml`; its packages were not inferred",
                        e.message
                    ),
                );
                Layout::Unreadable
            }
        };
    }
    package_json_globs(reader, root)
}

/// The `workspaces` of the root `package.json` (a list, or `{ "packages": [...] }`).
fn package_json_globs(reader: &mut Reader, root: Option<&(usize, Map<String, Value>)>) -> Layout {
    let Some((file, map)) = root else {
        return Layout::Single;
    };
    let Some(value) = map.get("workspaces") else {
        return Layout::Single;
    };
    let offset = package_json::key_offset(reader.text(*file), "workspaces");
    let list = match value {
        Value::Array(list) => Some(list),
        Value::Object(object) => match object.get("packages") {
            Some(Value::Array(list)) => Some(list),
            _ => None,
        },
        _ => None,
    };
    let globs: Option<Vec<String>> = list.and_then(|list| {
        list.iter()
            .map(|g| g.as_str().map(str::to_string))
            .collect()
    });
    match globs {
        Some(globs) if globs.is_empty() => Layout::Single,
        Some(globs) => Layout::Members(clean_globs(globs), *file, offset),
        None => {
            reader.warn(
                *file,
                offset,
                "bad-workspaces",
                "`workspaces` in `package.json` must be a list of folder globs or \
                 `{ \"packages\": [...] }`; its packages were not inferred"
                    .into(),
            );
            Layout::Unreadable
        }
    }
}

/// Globs as the reader matches them. `./packages/*` is `packages/*`; and since the package
/// managers match `<glob>/package.json`, where a trailing `/**` also matches no folder at all,
/// `apps/**` (or `!**/test/**`) also matches the folder `apps` (or `x/test`) itself.
fn clean_globs(globs: Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(globs.len());
    for glob in globs {
        let (bang, body) = match glob.strip_prefix('!') {
            Some(rest) => ("!", rest),
            None => ("", glob.as_str()),
        };
        let body = body.trim_start_matches("./").trim_end_matches('/');
        let Some(parent) = body.strip_suffix("/**") else {
            out.push(format!("{bang}{body}"));
            continue;
        };
        // `a/**/t/**` as `a/**/{t,t/**}`: one walk of `a` instead of two.
        match parent.rsplit_once('/') {
            Some((dir, last))
                if bang.is_empty()
                    && dir.split('/').any(|c| c == "**")
                    && !last.contains(['{', '}'])
                    && !last.contains("**") =>
            {
                out.push(format!("{dir}/{{{last},{last}/**}}"));
            }
            _ => {
                out.push(format!("{bang}{parent}"));
                out.push(format!("{bang}{body}"));
            }
        }
    }
    out
}

/// Names, capabilities and edges of the members (sorted by path).
fn infer(reader: &mut Reader, mut members: Vec<Member>, pm: PackageManager) -> Vec<Inferred> {
    members.sort_by(|a, b| a.path.cmp(&b.path));
    // Target names, unique: a later package (by path) whose name is taken gets `-2`, `-3`, ….
    let mut taken: HashMap<String, usize> = HashMap::new();
    let mut names = Vec::with_capacity(members.len());
    for (i, m) in members.iter().enumerate() {
        let package = package_json::string(&m.map, "name");
        let base = match package {
            Some(package) => target_name(package),
            None => target_name(&folder_name(reader, &m.path)),
        };
        let mut name = base.clone();
        let mut n = 1;
        while taken.contains_key(&name) {
            n += 1;
            name = format!("{base}-{n}");
        }
        if n > 1 {
            let first = &members[taken[&base]].path;
            let rel = reader.rel(m.file).to_string();
            let offset = package_json::key_offset(reader.text(m.file), "name");
            reader.warn(
                m.file,
                offset,
                "duplicate-target",
                format!(
                    "the package in `{rel}` would be target `{base}` like the one in \
                     `{first}/package.json`; it became target `{name}`"
                ),
            );
        }
        taken.insert(name.clone(), i);
        names.push(name);
    }
    // Package name and folder → target, the first by path winning for a name.
    let mut by_package: HashMap<&str, usize> = HashMap::new();
    let mut by_path: HashMap<&str, usize> = HashMap::new();
    for (i, m) in members.iter().enumerate() {
        if let Some(package) = package_json::string(&m.map, "name") {
            by_package.entry(package).or_insert(i);
        }
        by_path.insert(m.path.as_str(), i);
    }

    let mut out = Vec::with_capacity(members.len());
    for (i, m) in members.iter().enumerate() {
        // One edge per dependency target, of the strongest kind it is listed with.
        let mut to: BTreeMap<usize, EdgeKind> = BTreeMap::new();
        for (dep, spec, kind) in package_json::dependencies(&m.map, pm.peer_edge()) {
            let Some(j) = resolve(dep, spec, &m.path, &by_package, &by_path) else {
                continue;
            };
            if j != i {
                let slot = to.entry(j).or_insert(kind);
                *slot = strongest(*slot, kind);
            }
        }
        let mut edges: Vec<Edge> = to
            .into_iter()
            .map(|(j, kind)| Edge {
                folder: members[j].path.clone(),
                kind,
            })
            .collect();
        edges.sort();
        let mut fields = BTreeMap::new();
        if let Some(package) = package_json::string(&m.map, "name") {
            fields.insert("package".to_string(), Value::String(package.to_string()));
        }
        out.push(Inferred {
            name: names[i].clone(),
            kind: "npm-package",
            path: m.path.clone(),
            fields,
            capabilities: Some(scripts::capabilities(reader, m.file, &m.map, pm)),
            edges,
            file: m.file,
            offset: package_json::key_offset(reader.text(m.file), "name"),
            ecosystem: Ecosystem::JavaScript,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// What names a package without a name: its folder, or the workspace folder's own name.
fn folder_name(reader: &Reader, path: &str) -> String {
    if path != "." {
        return path.to_string();
    }
    reader
        .root()
        .file_name()
        .map_or_else(|| "root".to_string(), |n| n.to_string_lossy().into_owned())
}

/// The member a dependency `dep` with version `spec` of the package at `from` names:
/// a `link:`/`file:`/`workspace:` path by its folder, an `npm:` alias by the aliased name,
/// anything else by `dep` itself, whatever its range.
fn resolve(
    dep: &str,
    spec: &str,
    from: &str,
    by_package: &HashMap<&str, usize>,
    by_path: &HashMap<&str, usize>,
) -> Option<usize> {
    let path = spec
        .strip_prefix("link:")
        .or_else(|| spec.strip_prefix("file:"))
        .or_else(|| {
            spec.strip_prefix("workspace:")
                .filter(|rest| rest.starts_with(['.', '/']))
        });
    if let Some(path) = path {
        let dir = if from == "." { "" } else { from };
        let target = join_path(dir, path.trim_end_matches('/')).ok()?;
        return by_path.get(target.as_str()).copied();
    }
    let name = spec.strip_prefix("npm:").map_or(dep, alias_name);
    by_package.get(name).copied()
}

/// `@scope/pkg` of `@scope/pkg@^1.0.0`, `pkg` of `pkg@2`.
fn alias_name(aliased: &str) -> &str {
    let at = if let Some(rest) = aliased.strip_prefix('@') {
        rest.find('@').map(|i| i + 1)
    } else {
        aliased.find('@')
    };
    at.map_or(aliased, |i| &aliased[..i])
}

/// The kind that matters most when a package lists a dependency in several tables.
fn strongest(a: EdgeKind, b: EdgeKind) -> EdgeKind {
    let rank = |k: EdgeKind| match k {
        EdgeKind::Normal | EdgeKind::Build => 0,
        EdgeKind::Dev => 1,
        EdgeKind::Optional => 2,
    };
    if rank(b) < rank(a) { b } else { a }
}

#[cfg(test)]
mod tests;

/// The script names of the `package.json` in `folder` (relative to the root), for a target a
/// `once.toml` declares there by hand: `None` when it has no readable `package.json`.
fn scripts_of(reader: &mut Reader, folder: &str) -> Option<Vec<String>> {
    let rel = if folder == "." {
        "package.json".to_string()
    } else {
        format!("{folder}/package.json")
    };
    let file = reader.read(&rel)?;
    let map = package_json::object(reader, file)?;
    let scripts = match map.get("scripts") {
        Some(Value::Object(scripts)) => scripts.keys().cloned().collect(),
        _ => Vec::new(),
    };
    Some(scripts)
}
