//! Cargo workspaces and packages, from the root `Cargo.toml` and its members' manifests.
//!
//! The members are those Cargo itself counts: the root's own `[package]`, the folders its
//! `[workspace] members` globs match (minus `exclude`, which removes a folder and everything
//! below it unless a member names it literally), and, transitively, every path dependency of a
//! member that lies inside the workspace root and is not excluded. Edges follow `path`
//! dependencies, `workspace = true` ones through `[workspace.dependencies]`, and registry
//! dependencies that the root's `[patch]` table redirects to a member, in every dependency
//! table and its `[target.'cfg(…)'.…]` variant.
//!
//! Only the root manifest starts discovery: a Cargo workspace in a subfolder of a root that has
//! no `Cargo.toml` is not looked for. It never runs cargo and never fails: a manifest it cannot
//! read becomes a warning and its package is left out.

mod commands;
mod deps;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use toml::de::DeTable;

use self::commands::{Selection, capabilities, plain_word};
use self::deps::{Dep, Source, dependencies, source};
use super::{Ecosystem, Edge, Inferred, Reader, target_name};
use crate::relpath::join;

/// The addresses of crates.io's index, which a `[patch]` table may use instead of its name.
const CRATES_IO_GIT: &str = "https://github.com/rust-lang/crates.io-index";
const CRATES_IO_SPARSE: &str = "sparse+https://index.crates.io/";

/// What the root manifest says about the whole workspace.
#[derive(Debug, Default)]
struct Root {
    file: usize,
    /// The root has a `[workspace]` table.
    workspace: bool,
    /// `[workspace] default-members` is set.
    default_members: bool,
    /// `exclude` entries, normalized.
    exclude: Vec<String>,
    /// `members` entries without glob characters, normalized: these win over `exclude`.
    literal_members: Vec<String>,
    /// `[workspace.dependencies]`: key to source, paths made relative to the root
    /// (`None`: outside it).
    dependencies: HashMap<String, Resolved>,
    /// `[patch.REGISTRY]` entries with a path: (registry, package name) to folder.
    patches: HashMap<(String, String), Option<String>>,
    /// `[workspace.package] version`, for packages that inherit it.
    version: Option<String>,
}

/// A dependency's source with any path made relative to the workspace root.
#[derive(Debug, Clone)]
enum Resolved {
    /// A folder (relative to the root, `.` for the root), or `None` outside the root.
    Path(Option<String>),
    /// A registry package, by name and registry (`crates-io` when unnamed).
    Registry(String, String),
    /// Git and the like: never a member.
    Other,
}

/// A member package, read.
#[derive(Debug)]
struct Package {
    folder: String,
    file: usize,
    name: String,
    offset: usize,
    version: Option<String>,
    deps: Vec<Dep>,
}

/// The targets the workspace's Cargo manifests describe.
pub(crate) fn discover(reader: &mut Reader) -> Vec<Inferred> {
    let Some(file) = reader.read("Cargo.toml") else {
        return Vec::new();
    };
    let text = reader.text(file).to_string();
    let Some(doc) = parse(reader, file, &text) else {
        return Vec::new();
    };
    let root = read_root(file, &doc);
    let packages = members(reader, &root, &doc);
    inferred(reader, &root, packages)
}

/// The workspace-wide commands of the Cargo workspace whose packages are among `found`, with the
/// root manifest's file: `None` unless it has more than its root package. Each stands for the
/// members' capability of its name and reads what theirs read: every member's folder (but
/// `target/`), the root's Cargo files and toolchain files, and nextest's configuration; a
/// change elsewhere (a README) re-runs none of them.
pub(crate) fn workspace_commands(
    reader: &mut Reader,
    found: &[Inferred],
) -> Option<(usize, Vec<super::InferredCapability>)> {
    let members: Vec<&str> = found
        .iter()
        .filter(|t| t.ecosystem == Ecosystem::Cargo)
        .map(|t| t.path.as_str())
        .collect();
    if members.len() < 2 && !members.iter().any(|path| *path != ".") {
        return None;
    }
    let file = reader.read("Cargo.toml")?;
    let nextest = reader.exists(NEXTEST_CONFIG);
    let mut inputs: Vec<String> = members
        .iter()
        .map(|path| match *path {
            "." => "**".to_string(),
            path => format!("{path}/**"),
        })
        .collect();
    inputs.extend(
        [
            "!target/**",
            "Cargo.toml",
            "Cargo.lock",
            "rust-toolchain",
            "rust-toolchain.toml",
            ".cargo/config",
            ".cargo/config.toml",
            NEXTEST_CONFIG,
        ]
        .map(str::to_string),
    );
    let mut commands = commands::workspace(nextest);
    for command in &mut commands {
        command.inputs = Some(inputs.clone());
        command.stands_for = Some(Ecosystem::Cargo);
    }
    Some((file, commands))
}

/// Where a repository configures cargo-nextest.
const NEXTEST_CONFIG: &str = ".config/nextest.toml";

/// The manifest `text` of `file` parsed, or `None` (with a warning) when it is not valid TOML.
fn parse<'i>(reader: &mut Reader, file: usize, text: &'i str) -> Option<DeTable<'i>> {
    let (doc, errors) = DeTable::parse_recoverable(text);
    if let Some(e) = errors.first() {
        let rel = reader.rel(file).to_string();
        reader.warn(
            file,
            e.span().map_or(0, |s| s.start),
            "cargo-manifest-invalid",
            format!(
                "invalid TOML in `{rel}`: {}; its packages were not inferred",
                e.message().trim()
            ),
        );
        return None;
    }
    Some(doc.into_inner())
}

fn read_root(file: usize, doc: &DeTable<'_>) -> Root {
    let mut root = Root {
        file,
        ..Root::default()
    };
    let Some(ws) = doc.get("workspace").and_then(|w| w.get_ref().as_table()) else {
        return root;
    };
    root.workspace = true;
    root.default_members = ws.contains_key("default-members");
    for entry in strings(ws, "exclude") {
        root.exclude.push(normalize(&entry));
    }
    for entry in strings(ws, "members") {
        if !entry.contains(['*', '?', '[', '{']) {
            root.literal_members.push(normalize(&entry));
        }
    }
    if let Some(deps) = ws.get("dependencies").and_then(|d| d.get_ref().as_table()) {
        for (key, value) in deps.iter() {
            let resolved = resolve(".", &source(key.get_ref(), value.get_ref()));
            root.dependencies
                .insert(key.get_ref().to_string(), resolved);
        }
    }
    root.version = ws
        .get("package")
        .and_then(|p| p.get_ref().as_table())
        .and_then(|p| p.get("version"))
        .and_then(|v| v.get_ref().as_str())
        .map(str::to_string);
    if let Some(patch) = doc.get("patch").and_then(|p| p.get_ref().as_table()) {
        for (registry, entries) in patch.iter() {
            let Some(entries) = entries.get_ref().as_table() else {
                continue;
            };
            for (key, value) in entries.iter() {
                let Source::Path(path) = source(key.get_ref(), value.get_ref()) else {
                    continue;
                };
                let name = name_of(key.get_ref(), value.get_ref());
                let registry = match registry.get_ref().as_ref() {
                    // crates.io may be named by its index's address too.
                    CRATES_IO_GIT | CRATES_IO_SPARSE => "crates-io",
                    other => other,
                };
                root.patches
                    .insert((registry.to_string(), name), join(".", &path));
            }
        }
    }
    root
}

/// The package a `[patch]` entry replaces: its key, or `package = …` when renamed.
fn name_of(key: &str, value: &toml::de::DeValue<'_>) -> String {
    value
        .as_table()
        .and_then(|t| t.get("package"))
        .and_then(|v| v.get_ref().as_str())
        .unwrap_or(key)
        .to_string()
}

/// The string items of the array at `key` in `table` (others are ignored, as Cargo rejects them).
fn strings(table: &DeTable<'_>, key: &str) -> Vec<String> {
    table
        .get(key)
        .and_then(|v| v.get_ref().as_array())
        .map(|a| {
            a.iter()
                .filter_map(|v| v.get_ref().as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The member packages, read, in the order found: the root package, the folders the member
/// globs match, then the path dependencies inside the root that Cargo adds as members.
fn members(reader: &mut Reader, root: &Root, doc: &DeTable<'_>) -> Vec<Package> {
    let mut queue: VecDeque<String> = VecDeque::new();
    if doc.contains_key("package") {
        queue.push_back(".".to_string());
    }
    if let Some(ws) = doc.get("workspace").and_then(|w| w.get_ref().as_table()) {
        let offset = ws
            .get_key_value("members")
            .map_or(0, |(k, _)| k.span().start);
        let globs: Vec<String> = strings(ws, "members")
            .iter()
            .map(|g| normalize(g))
            .filter(|g| g != ".")
            .collect();
        for folder in reader.folders(&globs, "Cargo.toml", root.file, offset) {
            if !excluded(root, &folder) {
                queue.push_back(folder);
            }
        }
    }
    let mut seen: BTreeSet<String> = queue.iter().cloned().collect();
    let mut packages = Vec::new();
    while let Some(folder) = queue.pop_front() {
        let Some(package) = read_package(reader, root, doc, &folder) else {
            continue;
        };
        if root.workspace {
            for dep in &package.deps {
                let Resolved::Path(Some(path)) = resolve_dep(root, &package.folder, dep) else {
                    continue;
                };
                if !excluded(root, &path) && seen.insert(path.clone()) {
                    queue.push_back(path);
                }
            }
        }
        packages.push(package);
    }
    packages
}

/// The package whose manifest is in `folder`; `None` (with a warning when the manifest
/// exists) when it has none Cargo could use.
fn read_package(
    reader: &mut Reader,
    root: &Root,
    root_doc: &DeTable<'_>,
    folder: &str,
) -> Option<Package> {
    if folder == "." {
        return package_of(reader, root, root.file, root_doc, folder);
    }
    let file = reader.read(&format!("{folder}/Cargo.toml"))?;
    let text = reader.text(file).to_string();
    let doc = parse(reader, file, &text)?;
    if let Some((key, _)) = doc.get_key_value("workspace") {
        reader.warn(
            file,
            key.span().start,
            "cargo-nested-workspace",
            format!(
                "`{folder}/Cargo.toml` is a workspace of its own inside the root workspace; \
                 its packages were not inferred"
            ),
        );
        return None;
    }
    package_of(reader, root, file, &doc, folder)
}

fn package_of(
    reader: &mut Reader,
    root: &Root,
    file: usize,
    doc: &DeTable<'_>,
    folder: &str,
) -> Option<Package> {
    let rel = reader.rel(file).to_string();
    let Some(package) = doc.get("package").and_then(|p| p.get_ref().as_table()) else {
        reader.warn(
            file,
            0,
            "cargo-no-package",
            format!("`{rel}` has no `[package]` table; it was not inferred"),
        );
        return None;
    };
    let name = package.get_key_value("name");
    let Some((key, name)) = name.and_then(|(k, v)| v.get_ref().as_str().map(|s| (k, s))) else {
        let at = name.map_or(0, |(k, _)| k.span().start);
        reader.warn(
            file,
            at,
            "cargo-package-name",
            format!("`{rel}` has no `package.name` string; it was not inferred"),
        );
        return None;
    };
    let version = match package.get("version").map(|v| v.get_ref()) {
        // Cargo's default since `version` became optional.
        None => Some("0.0.0".to_string()),
        Some(v) => v.as_str().map(str::to_string).or_else(|| {
            let inherited = v.as_table()?.get("workspace")?.get_ref().as_bool()?;
            inherited.then(|| root.version.clone()).flatten()
        }),
    };
    Some(Package {
        folder: folder.to_string(),
        file,
        name: name.to_string(),
        offset: key.span().start,
        version,
        deps: dependencies(doc),
    })
}

/// Turns the members into targets: unique names, edges between members, commands.
fn inferred(reader: &mut Reader, root: &Root, mut packages: Vec<Package>) -> Vec<Inferred> {
    packages.sort_by(|a, b| a.folder.cmp(&b.folder));
    let names = unique_names(reader, &packages);
    // An edge names the package it reaches by its folder, so members are known by folder.
    let members: HashSet<&str> = packages.iter().map(|p| p.folder.as_str()).collect();
    let mut out = Vec::with_capacity(packages.len());
    for (package, name) in packages.iter().zip(&names) {
        let mut edges = BTreeSet::new();
        for dep in &package.deps {
            let to = match resolve_dep(root, &package.folder, dep) {
                Resolved::Path(path) => {
                    let member = path.as_deref().and_then(|p| members.get(p).copied());
                    if member.is_none() {
                        not_member(reader, package, dep, path.as_deref());
                    }
                    member
                }
                Resolved::Registry(name, registry) => root
                    .patches
                    .get(&(registry, name))
                    .and_then(|p| p.as_deref())
                    .and_then(|p| members.get(p).copied()),
                Resolved::Other => None,
            };
            if let Some(to) = to.filter(|to| *to != package.folder) {
                edges.insert(Edge {
                    folder: to.to_string(),
                    kind: dep.kind,
                });
            }
        }
        let mut fields = BTreeMap::new();
        fields.insert(
            "package".to_string(),
            serde_json::Value::String(package.name.clone()),
        );
        out.push(Inferred {
            name: name.clone(),
            kind: "cargo-package",
            path: package.folder.clone(),
            fields,
            capabilities: Some(capabilities(
                &selection(root, package),
                batch_spec(package).as_deref(),
            )),
            edges: edges.into_iter().collect(),
            file: package.file,
            offset: package.offset,
            ecosystem: Ecosystem::Cargo,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// `package` as `-p` names it from the workspace root in a batch: `NAME@VERSION`, which a
/// registry package of the same name cannot also match unless it has the same version; `None`
/// (the package never joins a batch) when either is not a plain word.
fn batch_spec(package: &Package) -> Option<String> {
    let version = package.version.as_deref()?;
    (plain_word(&package.name) && plain_word(version))
        .then(|| format!("{}@{version}", package.name))
}

/// How the commands of `package` select it (see [`commands`]).
fn selection(root: &Root, package: &Package) -> Selection {
    if package.folder != "." || !root.workspace || !plain_word(&package.name) {
        return Selection::Folder;
    }
    let spec = root.default_members.then(|| match &package.version {
        Some(v) if plain_word(v) => format!("{}@{v}", package.name),
        _ => package.name.clone(),
    });
    Selection::Root {
        name: package.name.clone(),
        spec,
    }
}

/// Target names for `packages` (sorted by folder): the package name, and for a name taken
/// already (Cargo itself refuses two members of one name) the name with `-2`, `-3`, ….
fn unique_names(reader: &mut Reader, packages: &[Package]) -> Vec<String> {
    let mut taken: BTreeSet<String> = BTreeSet::new();
    let mut names = Vec::with_capacity(packages.len());
    for p in packages {
        let base = target_name(&p.name);
        let mut name = base.clone();
        let mut n = 2;
        while taken.contains(&name) {
            name = format!("{base}-{n}");
            n += 1;
        }
        if name != base {
            reader.warn(
                p.file,
                p.offset,
                "duplicate-package-name",
                format!(
                    "another member is also named `{}`; the package in `{}` is the target `{name}`",
                    p.name, p.folder
                ),
            );
        }
        taken.insert(name.clone());
        names.push(name);
    }
    names
}

/// Warns that `dep` of `package` is a path dependency outside the workspace's members: its
/// sources change what the package builds to, but once cannot hash them as a target.
fn not_member(reader: &mut Reader, package: &Package, dep: &Dep, path: Option<&str>) {
    let at = path.map_or_else(
        || "outside the workspace root".to_string(),
        |p| format!("`{p}`"),
    );
    reader.warn(
        package.file,
        dep.offset,
        "path-dependency-not-member",
        format!(
            "`{}` depends on `{}` at {at}, which is not a member of the workspace; \
             changes there do not reach its cache key",
            package.name, dep.key
        ),
    );
}

/// Where `dep`, declared in the manifest in `folder`, comes from.
fn resolve_dep(root: &Root, folder: &str, dep: &Dep) -> Resolved {
    match &dep.source {
        Source::Workspace => root
            .dependencies
            .get(&dep.key)
            .cloned()
            .unwrap_or(Resolved::Other),
        other => resolve(folder, other),
    }
}

fn resolve(folder: &str, source: &Source) -> Resolved {
    match source {
        Source::Path(p) => Resolved::Path(join(folder, p)),
        Source::Registry { name, registry } => Resolved::Registry(
            name.clone(),
            registry.clone().unwrap_or_else(|| "crates-io".to_string()),
        ),
        Source::Workspace | Source::Other => Resolved::Other,
    }
}

/// Whether `exclude` removes `folder`: an entry excludes itself and everything below it,
/// unless a literal `members` entry names the folder or one above it.
fn excluded(root: &Root, folder: &str) -> bool {
    let under = |prefix: &String| {
        prefix == "." || folder == prefix || folder.starts_with(&format!("{prefix}/"))
    };
    root.exclude.iter().any(under) && !root.literal_members.iter().any(under)
}

/// A manifest path as a root-relative folder: `./a/b/` is `a/b`, and the root is `.`.
fn normalize(path: &str) -> String {
    join(".", path).unwrap_or_else(|| path.to_string())
}
