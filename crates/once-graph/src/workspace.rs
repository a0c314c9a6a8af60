//! Loading a workspace: finding manifests, parsing them, resolving
//! dependencies across them, and detecting staleness.
//!
//! This is the only module that reads files. It must never fail on a bad
//! manifest (problems become diagnostics) and never print.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::diagnostic::{Diagnostic, Severity, SourceFile};
use crate::graph::Graph;
use crate::manifest::{self, PendingTarget, Settings};
use crate::model::Target;
use crate::{Error, MANIFEST_FILE, suggest};

/// Manifests larger than this are rejected unparsed.
pub const MAX_MANIFEST_BYTES: u64 = 16 * 1024 * 1024;

/// A manifest that was read, for staleness checks and reporting.
#[derive(Debug, Clone)]
pub(crate) struct ManifestRecord {
    pub rel: String,
    pub abs: PathBuf,
    pub hash: blake3::Hash,
}

/// A loaded, validated workspace: targets, graph and diagnostics.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    pub(crate) name: String,
    pub(crate) files: Vec<SourceFile>,
    pub(crate) manifests: Vec<ManifestRecord>,
    member_globs: Vec<String>,
    member_dirs: Vec<String>,
    /// Sorted by name.
    pub(crate) targets: Vec<Target>,
    pub(crate) graph: Graph,
    diagnostics: Vec<Diagnostic>,
}

impl Workspace {
    /// Walks up from `start` to the first folder holding `once.toml` and
    /// returns it canonicalized.
    pub fn discover(start: &Path) -> Result<PathBuf, Error> {
        let start_abs = std::fs::canonicalize(start).map_err(|source| Error::Io {
            path: start.to_path_buf(),
            source,
        })?;
        let mut dir = Some(start_abs.as_path());
        while let Some(d) = dir {
            if d.join(MANIFEST_FILE).is_file() {
                return Ok(d.to_path_buf());
            }
            dir = d.parent();
        }
        Err(Error::NoRoot {
            start: start.to_path_buf(),
        })
    }

    /// Loads the workspace rooted at `root`. Fails only when the root or its
    /// manifest cannot be read; every manifest problem is a diagnostic.
    pub fn load(root: &Path) -> Result<Workspace, Error> {
        let root = std::fs::canonicalize(root).map_err(|source| Error::Io {
            path: root.to_path_buf(),
            source,
        })?;
        if !root.is_dir() {
            return Err(Error::NotADirectory { path: root });
        }
        let mut diags = Vec::new();
        let mut files = Vec::new();
        let mut manifests = Vec::new();
        let mut pending: Vec<PendingTarget> = Vec::new();
        let mut declared: Vec<String> = Vec::new();

        let root_manifest = root.join(MANIFEST_FILE);
        let bytes = read_limited(&root_manifest).map_err(|source| Error::Io {
            path: root_manifest.clone(),
            source,
        })?;
        manifests.push(ManifestRecord {
            rel: MANIFEST_FILE.into(),
            abs: root_manifest,
            hash: blake3::hash(&bytes),
        });
        let settings = match decode(MANIFEST_FILE, bytes, &mut diags) {
            Some(src) => {
                let (settings, targets, names) =
                    manifest::parse_file(&src, 0, "", None, &mut diags);
                pending.extend(targets);
                declared.extend(names);
                files.push(src);
                settings
            }
            None => {
                files.push(SourceFile::new(MANIFEST_FILE.into(), String::new()));
                Settings::default()
            }
        };

        let member_globs: Vec<String> = settings.members.iter().map(|(g, _)| g.clone()).collect();
        let (member_dirs, per_glob) = expand_members(&root, &member_globs);
        for ((glob, at), result) in settings.members.iter().zip(&per_glob) {
            let src = &files[0];
            match result {
                Err(e) => diags.push(
                    src.error(
                        *at,
                        "bad-glob",
                        format!("invalid member glob `{glob}`: {e}"),
                    )
                    .expected("a glob of folders like `services/*`"),
                ),
                Ok(0) => diags.push(
                    manifest::warning(
                        src,
                        *at,
                        "member-matches-nothing",
                        format!("member glob `{glob}` matches no folder holding a once.toml"),
                    )
                    .help("fix the glob, or add a once.toml to the member folders"),
                ),
                Ok(_) => {}
            }
        }
        for dir in &member_dirs {
            let rel = format!("{dir}/{MANIFEST_FILE}");
            let abs = root.join(&rel);
            let bytes = match read_limited(&abs) {
                Ok(b) => b,
                Err(e) => {
                    diags.push(files[0].error(
                        0,
                        "io",
                        format!("cannot read member manifest `{rel}`: {e}"),
                    ));
                    continue;
                }
            };
            manifests.push(ManifestRecord {
                rel: rel.clone(),
                abs,
                hash: blake3::hash(&bytes),
            });
            if let Some(src) = decode(&rel, bytes, &mut diags) {
                let (_, targets, names) =
                    manifest::parse_file(&src, files.len(), dir, Some(&settings), &mut diags);
                pending.extend(targets);
                declared.extend(names);
                files.push(src);
            }
        }

        let name = settings.name.clone().unwrap_or_else(|| {
            root.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        let (targets, graph) = resolve(pending, &declared, &files, &mut diags);

        // Deterministic order: by file (root first), then position.
        diags.sort_by(|a, b| {
            let fa = files.iter().position(|f| f.rel == a.file);
            let fb = files.iter().position(|f| f.rel == b.file);
            (fa, a.line, a.column, a.code).cmp(&(fb, b.line, b.column, b.code))
        });
        Ok(Workspace {
            root,
            name,
            files,
            manifests,
            member_globs,
            member_dirs,
            targets,
            graph,
            diagnostics: diags,
        })
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Every problem found, errors and warnings, ordered by file and position.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// Whether any diagnostic is an error (warnings don't count).
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }

    /// Whether a manifest changed, appeared or disappeared since loading.
    /// Cheap: hashes bytes and re-expands member globs; never parses.
    pub fn is_stale(&self) -> bool {
        let changed = self
            .manifests
            .iter()
            .any(|m| read_limited(&m.abs).map_or(true, |b| blake3::hash(&b) != m.hash));
        changed || expand_members(&self.root, &self.member_globs).0 != self.member_dirs
    }

    /// Reloads when stale; returns whether it did.
    pub fn reload_if_stale(&mut self) -> Result<bool, Error> {
        if !self.is_stale() {
            return Ok(false);
        }
        *self = Workspace::load(&self.root)?;
        Ok(true)
    }

    /// All targets, sorted by name.
    pub fn targets(&self) -> &[Target] {
        &self.targets
    }

    /// The target named `name`.
    pub fn target(&self, name: &str) -> Option<&Target> {
        self.target_index(name).and_then(|i| self.targets.get(i))
    }

    pub(crate) fn target_index(&self, name: &str) -> Option<usize> {
        self.targets
            .binary_search_by(|t| t.name.as_str().cmp(name))
            .ok()
    }

    /// `file` and 1-based `line` where a target is declared.
    pub(crate) fn target_location(&self, t: &Target) -> (String, u32) {
        match self.files.get(t.file) {
            Some(f) => (f.rel.clone(), f.locate(t.offset).0),
            None => (MANIFEST_FILE.into(), 1),
        }
    }
}

/// Reads at most `MAX_MANIFEST_BYTES + 1` bytes, so a huge file is detected
/// without reading all of it.
fn read_limited(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_MANIFEST_BYTES + 1)
        .read_to_end(&mut out)?;
    Ok(out)
}

/// Checks size and UTF-8; `None` (with a diagnostic) when the file can't be parsed.
fn decode(rel: &str, bytes: Vec<u8>, diags: &mut Vec<Diagnostic>) -> Option<SourceFile> {
    if bytes.len() as u64 > MAX_MANIFEST_BYTES {
        diags.push(
            SourceFile::new(rel.into(), String::new())
                .error(
                    0,
                    "file-too-large",
                    format!("`{rel}` is larger than 16 MiB; it was not parsed"),
                )
                .expected("a manifest of at most 16 MiB"),
        );
        return None;
    }
    match String::from_utf8(bytes) {
        Ok(text) => Some(SourceFile::new(rel.into(), text)),
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let prefix = String::from_utf8_lossy(&e.as_bytes()[..valid]).into_owned();
            let len = prefix.len();
            diags.push(
                SourceFile::new(rel.into(), prefix)
                    .error(
                        len,
                        "not-utf8",
                        format!("`{rel}` is not valid UTF-8 (first bad byte at offset {valid})"),
                    )
                    .expected("UTF-8 text"),
            );
            None
        }
    }
}

/// Folders (relative, `/`-separated, sorted, unique) matching the member
/// globs that hold a once.toml; plus per glob its match count or error.
fn expand_members(root: &Path, globs: &[String]) -> (Vec<String>, Vec<Result<usize, String>>) {
    let mut all = Vec::new();
    let mut per = Vec::with_capacity(globs.len());
    for g in globs {
        let clean = g.trim_end_matches('/');
        let matcher = match globset::GlobBuilder::new(clean)
            .literal_separator(true)
            .build()
        {
            Ok(m) => m.compile_matcher(),
            Err(e) => {
                per.push(Err(e.kind().to_string()));
                continue;
            }
        };
        // Walk only below the glob's literal prefix, and only as deep as it can match.
        let comps: Vec<&str> = clean
            .split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .collect();
        let literal = comps
            .iter()
            .take_while(|c| !c.contains(['*', '?', '[', '{']))
            .count();
        if comps[..literal].contains(&"..") {
            per.push(Err("member globs must stay inside the workspace".into()));
            continue;
        }
        let max_depth = if comps.contains(&"**") {
            32
        } else {
            comps.len() - literal
        };
        let prefix = comps[..literal].join("/");
        let mut found = 0;
        let mut stack = vec![(prefix, 0usize)];
        while let Some((rel, depth)) = stack.pop() {
            let abs = if rel.is_empty() {
                root.to_path_buf()
            } else {
                root.join(&rel)
            };
            if !rel.is_empty() && matcher.is_match(&rel) && abs.join(MANIFEST_FILE).is_file() {
                found += 1;
                all.push(rel.clone());
            }
            if depth >= max_depth {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(&abs) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') || name == "node_modules" || name == "target" {
                    continue;
                }
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    let child = if rel.is_empty() {
                        name
                    } else {
                        format!("{rel}/{name}")
                    };
                    stack.push((child, depth + 1));
                }
            }
        }
        per.push(Ok(found));
    }
    all.sort();
    all.dedup();
    (all, per)
}

/// Drops duplicates, sorts targets, resolves deps into the graph, finds cycles.
fn resolve(
    pending: Vec<PendingTarget>,
    declared: &[String],
    files: &[SourceFile],
    diags: &mut Vec<Diagnostic>,
) -> (Vec<Target>, Graph) {
    // Duplicates: the first declaration wins; point at the later one.
    let mut first: std::collections::HashMap<String, (usize, usize)> =
        std::collections::HashMap::with_capacity(pending.len());
    let mut kept: Vec<PendingTarget> = Vec::with_capacity(pending.len());
    for p in pending {
        let t = &p.target;
        if let Some(&(file, offset)) = first.get(&t.name) {
            let (Some(src), Some(first_src)) = (files.get(t.file), files.get(file)) else {
                continue;
            };
            let (line, _) = first_src.locate(offset);
            diags.push(
                src.error(
                    t.offset,
                    "duplicate-target",
                    format!(
                        "target `{}` is already declared at {}:{line}",
                        t.name, first_src.rel
                    ),
                )
                .help("target names are unique across all manifests; rename one"),
            );
            continue;
        }
        first.insert(t.name.clone(), (t.file, t.offset));
        kept.push(p);
    }
    drop(first);
    kept.sort_by(|a, b| a.target.name.cmp(&b.target.name));
    let counts: Vec<usize> = kept.iter().map(|p| p.target.capabilities.len()).collect();
    let mut graph = Graph::new(&counts);
    // A hash index: binary search over the big `PendingTarget`s costs a cache miss per probe.
    let index: std::collections::HashMap<&str, usize> = kept
        .iter()
        .enumerate()
        .map(|(i, p)| (p.target.name.as_str(), i))
        .collect();
    let find = |name: &str| index.get(name).copied();
    // Capability names interned to small ids so matching deps compares integers
    // in a small contiguous list instead of chasing strings.
    let mut intern: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
    let mut interned_names: Vec<&str> = Vec::new();
    let cap_ids: Vec<Vec<u32>> = kept
        .iter()
        .map(|p| {
            p.target
                .capabilities
                .iter()
                .map(|c| {
                    *intern.entry(c.name.as_str()).or_insert_with(|| {
                        interned_names.push(c.name.as_str());
                        u32::try_from(interned_names.len() - 1).unwrap_or(u32::MAX)
                    })
                })
                .collect()
        })
        .collect();
    // Edges with where they were declared, for cycle diagnostics.
    let mut origins: Vec<(u32, u32, usize, usize)> = Vec::new();
    let is_declared = |name: &str| declared.iter().any(|d| d == name);

    for (ti, p) in kept.iter().enumerate() {
        let t = &p.target;
        let Some(src) = files.get(t.file) else {
            continue;
        };
        for dep in &p.target_deps {
            match find(&dep.text) {
                Some(di) => {
                    graph.add_target_edge(ti, di);
                    // Both id lists follow capability-name order: a merge walk pairs them.
                    let (mine, theirs) = (&cap_ids[ti], &cap_ids[di]);
                    let (mut i, mut j) = (0, 0);
                    while let (Some(&x), Some(&y)) = (mine.get(i), theirs.get(j)) {
                        match interned_names[x as usize].cmp(interned_names[y as usize]) {
                            std::cmp::Ordering::Less => i += 1,
                            std::cmp::Ordering::Greater => j += 1,
                            std::cmp::Ordering::Equal => {
                                let (a, b) = (graph.action(ti, i), graph.action(di, j));
                                graph.add_edge(a, b);
                                origins.push((a, b, t.file, dep.offset));
                                i += 1;
                                j += 1;
                            }
                        }
                    }
                }
                None if is_declared(&dep.text) => {}
                None => diags.push(unknown_target(
                    src,
                    dep.offset,
                    &dep.text,
                    &format!("target `{}`", t.name),
                    &kept,
                )),
            }
        }
        for (ci, (c, deps)) in t.capabilities.iter().zip(&p.cap_deps).enumerate() {
            for dep in deps {
                let (tname, cname) = match dep.text.split_once(':') {
                    Some(("", c)) => (t.name.as_str(), c),
                    Some((tn, c)) => (tn, c),
                    None => (dep.text.as_str(), c.name.as_str()),
                };
                let ctx = format!("capability `{}` of target `{}`", c.name, t.name);
                let Some(di) = find(tname) else {
                    if !is_declared(tname) {
                        diags.push(unknown_target(src, dep.offset, tname, &ctx, &kept));
                    }
                    continue;
                };
                let dt = &kept[di].target;
                match dt.capabilities.iter().position(|x| x.name == cname) {
                    Some(dci) => {
                        let (a, b) = (graph.action(ti, ci), graph.action(di, dci));
                        graph.add_edge(a, b);
                        origins.push((a, b, t.file, dep.offset));
                    }
                    None => {
                        let names: Vec<&str> =
                            dt.capabilities.iter().map(|x| x.name.as_str()).collect();
                        diags.push(
                            src.error(dep.offset, "unknown-capability", format!("{ctx} depends on `{tname}:{cname}`, but target `{tname}` has no capability `{cname}`"))
                                .expected(format!("one of {}", names.iter().map(|n| format!("`{tname}:{n}`")).collect::<Vec<_>>().join(", ")))
                                .found(format!("`{}`", dep.text))
                                .did_you_mean(suggest::best(cname, names.iter().copied()).map(|s| format!("{tname}:{s}"))),
                        );
                    }
                }
            }
        }
    }
    graph.finish();
    drop(index);

    let targets: Vec<Target> = kept.into_iter().map(|p| p.target).collect();
    for cycle in graph.cycles() {
        let label = |a: u32| {
            let (t, c) = graph.split(a);
            let t = &targets[t];
            format!(
                "{}:{}",
                t.name,
                t.capabilities.get(c).map_or("?", |c| c.name.as_str())
            )
        };
        let text = cycle
            .iter()
            .map(|&a| label(a))
            .collect::<Vec<_>>()
            .join(" → ");
        let n = cycle.len();
        let (from, to) = (cycle[n.saturating_sub(2)], cycle[n - 1]);
        let (file, offset) = origins
            .iter()
            .find(|o| o.0 == from && o.1 == to)
            .map_or((0, 0), |o| (o.2, o.3));
        if let Some(src) = files.get(file) {
            diags.push(
                src.error(
                    offset,
                    "dependency-cycle",
                    format!("dependency cycle: {text}"),
                )
                .help(format!(
                    "remove one of these dependencies, e.g. this one ({} → {})",
                    label(from),
                    label(to)
                )),
            );
        }
    }
    (targets, graph)
}

fn unknown_target(
    src: &SourceFile,
    offset: usize,
    name: &str,
    ctx: &str,
    kept: &[PendingTarget],
) -> Diagnostic {
    src.error(
        offset,
        "unknown-target",
        format!("{ctx} depends on unknown target `{name}`"),
    )
    .expected("the name of a target declared in this workspace")
    .found(format!("`{name}`"))
    .did_you_mean(suggest::best(
        name,
        kept.iter().map(|p| p.target.name.as_str()),
    ))
}
