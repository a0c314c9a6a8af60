//! Loading a workspace: finding manifests, parsing them, resolving
//! dependencies across them, and detecting staleness.
//!
//! This is the only module that reads files. It must never fail on a bad
//! manifest (problems become diagnostics) and never print.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use once_fs::Stamp;

use crate::diagnostic::{Diagnostic, Severity, SourceFile};
use crate::discover::{self, Ecosystem, Reader};
use crate::freshness::{Freshness, Listed, Lists, Trace};
use crate::graph::{ActionId, Graph};
use crate::manifest::{
    self, Bases, CacheSettings, DepRef, Overlay, PendingTarget, Settings, Shared,
};
use crate::model::{Capability, EnvMode, Origin, Target};
use crate::root::{self, SafeDirectories};
use crate::{Error, MANIFEST_FILE, suggest};

/// Manifests larger than this are rejected unparsed.
pub const MAX_MANIFEST_BYTES: u64 = 16 * 1024 * 1024;

/// A manifest that was read, for staleness checks and reporting.
#[derive(Debug)]
pub(crate) struct ManifestRecord {
    pub rel: String,
    pub abs: PathBuf,
    pub hash: blake3::Hash,
    /// Its metadata when last proven to hold `hash`; `None` when it could not be taken. Behind a
    /// lock because a check that hashes a racily clean file may replace it with a newer stamp.
    pub stamp: Mutex<Option<Stamp>>,
}

impl ManifestRecord {
    /// Whether the file no longer holds the content that was loaded.
    pub(crate) fn changed(&self) -> bool {
        let mut stamp = self.stamp.lock().unwrap_or_else(PoisonError::into_inner);
        if stamp
            .as_ref()
            .is_some_and(|s| s.proves_unchanged(&self.abs))
        {
            return false;
        }
        match read_limited(&self.abs) {
            Err(_) => true,
            Ok((bytes, _)) if blake3::hash(&bytes) != self.hash => true,
            Ok((_, fresh)) => {
                // Same content. A file that was racily clean at load keeps being hashed until a
                // stamp taken now, after it has aged, can prove it unchanged by a stat alone.
                *stamp = fresh;
                false
            }
        }
    }
}

/// A loaded, validated workspace: targets, graph and diagnostics.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    pub(crate) name: String,
    pub(crate) files: Vec<SourceFile>,
    pub(crate) manifests: Vec<ManifestRecord>,
    /// Member globs and what they matched; manifests looked for and not found (`once.toml` at
    /// the root, a lockfile…), one appearing makes the workspace stale; files whose presence
    /// alone discovery used (lockfiles), one vanishing makes it stale; folder globs discovery
    /// expanded, to expand again when checking staleness.
    lists: Lists,
    env_mode: EnvMode,
    pass_env: Arc<[String]>,
    cache: CacheSettings,
    /// Sorted by name.
    pub(crate) targets: Vec<Target>,
    pub(crate) graph: Graph,
    diagnostics: Vec<Diagnostic>,
}

impl Workspace {
    /// The workspace root for `start`, canonicalized: the nearest folder upwards holding
    /// `once.toml`, else the outermost one holding an ecosystem's manifest (`Cargo.toml`,
    /// `package.json`, `pyproject.toml`, `go.work`, `go.mod`…), never above the top of the
    /// repository that holds `start`; outside any repository, only a root that belongs to us or
    /// to root, or that `safe` names (see [`crate::root`]).
    pub fn discover(start: &Path, safe: &SafeDirectories) -> Result<PathBuf, Error> {
        root::find(start, safe)
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
        let mut shared = Shared::default();

        // Discovery runs once the root's settings are known (they may turn it off); its
        // manifests take the file slots right after the root's once.toml.
        let mut reader: Option<Reader> = None;
        let mut infer = |settings: &Settings, shared: &mut Shared, diags: &mut Vec<Diagnostic>| {
            let (bases, used) = infer_targets(&root, settings, shared, diags);
            reader = used;
            bases
        };

        let root_manifest = root.join(MANIFEST_FILE);
        let mut root_absent = false;
        let (settings, bases) = match read_limited(&root_manifest) {
            Ok((bytes, stamp)) => {
                manifests.push(ManifestRecord {
                    rel: MANIFEST_FILE.into(),
                    abs: root_manifest,
                    hash: blake3::hash(&bytes),
                    stamp: Mutex::new(stamp),
                });
                match decode(MANIFEST_FILE, bytes, &mut diags) {
                    Some(src) => {
                        let (settings, targets, names, bases) = manifest::parse_file(
                            &src,
                            0,
                            "",
                            None,
                            &mut shared,
                            &mut diags,
                            Overlay::Infer(&mut infer),
                        );
                        append(&mut pending, targets);
                        append(&mut declared, names);
                        files.push(src);
                        (settings, bases.unwrap_or_default())
                    }
                    None => {
                        files.push(SourceFile::new(MANIFEST_FILE.into(), String::new()));
                        let settings = Settings::default();
                        let bases = infer(&settings, &mut shared, &mut diags);
                        (settings, bases)
                    }
                }
            }
            // No once.toml: the workspace is what its ecosystems' manifests describe.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                root_absent = true;
                files.push(SourceFile::new(MANIFEST_FILE.into(), String::new()));
                let settings = Settings::default();
                let bases = infer(&settings, &mut shared, &mut diags);
                (settings, bases)
            }
            Err(source) => {
                return Err(Error::Io {
                    path: root_manifest,
                    source,
                });
            }
        };
        let (mut absent, present, listings) = match reader {
            Some(r) => {
                files.extend(r.files);
                manifests.extend(r.records);
                diags.extend(r.diagnostics);
                (r.absent, r.present, r.listings)
            }
            None => (Vec::new(), Vec::new(), Vec::new()),
        };
        if root_absent {
            absent.push(MANIFEST_FILE.to_string());
        }

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
                // The cut explains a glob that found nothing, or found only part of the members.
                Ok(Expanded {
                    cut_at: Some(folder),
                    ..
                }) => diags.push(glob_too_deep(
                    src,
                    *at,
                    glob,
                    folder,
                    &format!(
                        "name the deeper folder in a `members` glob of its own, like `{folder}/**`"
                    ),
                )),
                Ok(Expanded { found: 0, .. }) => diags.push(
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
            let (bytes, stamp) = match read_limited(&abs) {
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
                stamp: Mutex::new(stamp),
            });
            if let Some(src) = decode(&rel, bytes, &mut diags) {
                let (_, targets, names, _) = manifest::parse_file(
                    &src,
                    files.len(),
                    dir,
                    Some(&settings),
                    &mut shared,
                    &mut diags,
                    Overlay::Ready(&bases),
                );
                append(&mut pending, targets);
                append(&mut declared, names);
                files.push(src);
            }
        }

        let name = settings.name.clone().unwrap_or_else(|| {
            root.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        overlay_inferred(
            &mut pending,
            &declared,
            bases,
            &mut shared,
            &files,
            &mut diags,
        );
        // Declared npm packages offer the script-backed defaults their package.json has.
        let mut scripts = Reader::new(&root);
        for p in pending.iter_mut() {
            trim_missing_scripts(p, &mut scripts);
        }
        files.extend(scripts.files);
        manifests.extend(scripts.records);
        diags.extend(scripts.diagnostics);
        absent.extend(scripts.absent);
        let (targets, graph) = resolve(pending, &declared, &files, &shared, &mut diags);
        diags.extend(crate::features::unknown(&root, &targets, &files));

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
            lists: Lists {
                member_globs,
                member_dirs,
                absent,
                present,
                listings,
            },
            env_mode: settings.env_mode,
            pass_env: settings.pass_env.clone().into(),
            cache: settings.cache.clone(),
            targets,
            graph,
            diagnostics: diags,
        })
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// How commands get their environment (`[workspace] env-mode`).
    pub fn env_mode(&self) -> EnvMode {
        self.env_mode
    }

    /// The variable globs of `[workspace] pass-env`, needed by every command.
    pub fn pass_env(&self) -> &Arc<[String]> {
        &self.pass_env
    }

    /// The root manifest's `[cache]` table; every key `None` when it has none.
    pub fn cache_settings(&self) -> &CacheSettings {
        &self.cache
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
    /// Cheap: a `stat` per manifest proves most of them unchanged; the rest are hashed (never
    /// parsed); member globs are re-expanded to catch added or removed members.
    pub fn is_stale(&self) -> bool {
        // A folder glob's expansion is proven by the `stat`s of its trace when they can be.
        let lookup = once_fs::Lookup::new(&self.root).ok();
        let read = self.manifests.iter().map(|record| Path::new(&record.rel));
        self.manifests.iter().any(ManifestRecord::changed)
            || self.lists.changed_from(&self.root, lookup.as_ref(), read)
    }

    /// What loading read, as data another process can check with [`Freshness::is_stale`]: it
    /// answers as [`Workspace::is_stale`] does, without this workspace in memory.
    pub fn freshness(&self) -> Freshness {
        Freshness {
            root: self.root.clone(),
            manifests: self
                .manifests
                .iter()
                .map(|record| {
                    let stamp = record
                        .stamp
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .clone();
                    (PathBuf::from(&record.rel), *record.hash.as_bytes(), stamp)
                })
                .collect(),
            lists: self.lists.clone(),
        }
    }

    /// Reloads when stale; returns whether it did.
    pub fn reload_if_stale(&mut self) -> Result<bool, Error> {
        if !self.is_stale() {
            return Ok(false);
        }
        *self = Workspace::load(&self.root)?;
        Ok(true)
    }

    /// Target edges along which sources reach a dependent's cache key: the graph's, plus the
    /// inferred edges left unordered because they would close a cycle (a test-only dependency
    /// back on a dependent still changes what the dependent's tests see). Borrowed from the graph
    /// when there are none of those.
    pub fn source_edges(&self) -> std::borrow::Cow<'_, [Vec<u32>]> {
        let unordered = |t: &Target| {
            t.inference
                .as_ref()
                .is_some_and(|i| !i.unordered.is_empty())
        };
        if !self.targets.iter().any(unordered) {
            return std::borrow::Cow::Borrowed(self.graph.target_adjacency());
        }
        let mut adjacency = self.graph.target_adjacency().to_vec();
        for (from, target) in self.targets.iter().enumerate() {
            let Some(inference) = &target.inference else {
                continue;
            };
            for (to, _) in &inference.unordered {
                if let (Some(to), Some(edges)) = (self.target_index(to), adjacency.get_mut(from)) {
                    edges.push(u32::try_from(to).unwrap_or(u32::MAX));
                }
            }
        }
        std::borrow::Cow::Owned(adjacency)
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
        self.location(t.file, t.offset)
    }

    /// The path and 1-based line of byte `offset` in manifest `file`.
    pub(crate) fn location(&self, file: usize, offset: usize) -> (String, u32) {
        match self.files.get(file) {
            Some(f) => (f.rel.clone(), f.locate(offset).0),
            None => (MANIFEST_FILE.into(), 1),
        }
    }
}

/// Infers the targets of the workspace at `root` as `settings` allow; returns them (sorted by
/// name, their files numbered from 1, right after the root's once.toml) and the reader that
/// read their manifests, `None` when discovery is off.
fn infer_targets(
    root: &Path,
    settings: &Settings,
    shared: &mut Shared,
    diags: &mut Vec<Diagnostic>,
) -> (Bases, Option<Reader>) {
    if !settings.discover.enabled {
        return (Bases::default(), None);
    }
    let mut reader = Reader::new(root);
    let mut found = discover::infer(&mut reader, &settings.discover.ecosystems);
    discover::give_names(&mut found, &mut reader);
    discover::exclude(&mut found, &settings.discover.exclude);
    let mut targets = Vec::with_capacity(found.len());
    let mut problems = Vec::new();
    for inferred in found {
        let (file, offset) = (inferred.file, inferred.offset);
        match discover::to_target(inferred, file + 1, settings, shared, &mut problems) {
            Some(t) => targets.push(t),
            None => reader.warn(
                file,
                offset,
                "unknown-inferred-kind",
                "a package here was inferred with an unknown kind and left out".into(),
            ),
        }
        for p in problems.drain(..) {
            reader.warn(file, offset, "bad-inferred-command", p);
        }
    }
    let _ = diags;
    targets.sort_by(|a, b| a.name.cmp(&b.name));
    (Bases { targets }, Some(reader))
}

/// Adds the inferred targets no manifest declares (to overlay or to replace them) to `pending`,
/// names every inferred edge from the package it reaches, then decides which inferred edges
/// order actions (those closing a cycle do not).
///
/// A target a once.toml declares under a name of its own, with an inferred one's kind and
/// folder, is that package: it takes the inference, and edges to the package follow it. Its
/// name is checked against every inferred name first: one that another package holds is
/// refused with a warning (the declaration is left out, both packages keep the names discovery
/// gave them), so a rename can never take a package's dependents away from it.
fn overlay_inferred(
    pending: &mut Vec<PendingTarget>,
    declared: &[String],
    bases: Bases,
    shared: &mut Shared,
    files: &[SourceFile],
    diags: &mut Vec<Diagnostic>,
) {
    let inferred_at: HashMap<&str, &Target> =
        bases.targets.iter().map(|t| (t.name.as_str(), t)).collect();
    let mut by_place: HashMap<(String, String), usize> = HashMap::new();
    let mut refused: Vec<usize> = Vec::new();
    for (i, p) in pending.iter().enumerate() {
        if p.target.inference.is_some() {
            continue;
        }
        let place = (p.target.kind.clone(), p.target.path.clone());
        let Some(package) = bases
            .targets
            .iter()
            .find(|t| (&t.kind, &t.path) == (&place.0, &place.1))
        else {
            continue;
        };
        match inferred_at.get(p.target.name.as_str()) {
            Some(holder) if holder.name != package.name => {
                if let Some(src) = files.get(p.target.file) {
                    diags.push(rename_refused(src, &p.target, package, holder));
                }
                refused.push(i);
            }
            _ => {
                by_place.insert(place, i);
            }
        }
    }
    let refused_names: std::collections::HashSet<String> = refused
        .iter()
        .map(|&i| pending[i].target.name.clone())
        .collect();
    for &i in refused.iter().rev() {
        pending.remove(i);
    }
    let by_place: HashMap<(String, String), usize> = by_place
        .into_iter()
        .map(|(place, i)| (place, i - refused.iter().filter(|&&r| r < i).count()))
        .collect();
    let declared: std::collections::HashSet<&str> = declared
        .iter()
        .map(String::as_str)
        .filter(|name| !refused_names.contains(*name))
        .collect();
    // Each package's final name, by its ecosystem and folder: what its dependents' edges reach.
    let mut named: HashMap<(Ecosystem, String), String> = HashMap::new();
    for target in bases.targets {
        let Some(ecosystem) = target.inference.as_ref().map(|i| i.ecosystem) else {
            continue;
        };
        let key = (ecosystem, target.path.clone());
        if declared.contains(target.name.as_str()) {
            named.insert(key, target.name);
            continue;
        }
        let place = (target.kind.clone(), target.path.clone());
        if let Some(&i) = by_place.get(&place) {
            let declaration = &mut pending[i].target;
            named.insert(key, declaration.name.clone());
            if let Some(inference) = &target.inference {
                let mut inference = (**inference).clone();
                inference.overlay = Some((declaration.file, declaration.offset));
                declaration.inference = Some(Arc::new(inference));
            }
            continue;
        }
        named.insert(key, target.name.clone());
        let name_id = shared.text_id(&target.name).1;
        pending.push(PendingTarget {
            target,
            name_id,
            target_deps: Vec::new(),
            cap_deps: Vec::new(),
        });
    }
    for p in pending.iter_mut() {
        let Some(inference) = p.target.inference.as_mut() else {
            continue;
        };
        let inference = Arc::make_mut(inference);
        let ecosystem = inference.ecosystem;
        // A package left out (`[discover] exclude`) has no name: its edge goes with it.
        inference.edges = inference
            .folder_edges
            .iter()
            .filter_map(|(folder, kind)| {
                let name = named.get(&(ecosystem, folder.clone()))?;
                Some((name.clone(), *kind))
            })
            .collect();
        inference.edges.sort();
        inference.edges.dedup();
    }
    let unordered = {
        let view: Vec<(&Target, Vec<&str>)> = pending
            .iter()
            .map(|p| {
                let deps = p.target_deps.iter().map(|d| &*d.text).collect();
                (&p.target, deps)
            })
            .collect();
        if view.iter().all(|(t, _)| t.inference.is_none()) {
            return;
        }
        discover::unordered_edges(&view)
    };
    for (p, cut) in pending.iter_mut().zip(unordered) {
        if cut.is_empty() {
            continue;
        }
        if let Some(inference) = p.target.inference.as_mut() {
            Arc::make_mut(inference).unordered = cut;
        }
    }
}

/// The warning for a declaration that would name `package` with the name `holder` has.
fn rename_refused(
    src: &SourceFile,
    declaration: &Target,
    package: &Target,
    holder: &Target,
) -> Diagnostic {
    let ecosystem = |t: &Target| t.inference.as_ref().map_or("", |i| i.ecosystem.name());
    manifest::warning(
        src,
        declaration.offset,
        "name-taken",
        format!(
            "target `{}` was left out: it declares the {} package in `{}`, but `{}` is already \
             the {} package in `{}`",
            declaration.name,
            ecosystem(package),
            package.path,
            holder.name,
            ecosystem(holder),
            holder.path,
        ),
    )
    .help(format!(
        "rename the table to a name no other target has, or delete it to keep the name `{}`",
        package.name
    ))
}

/// The script each `npm-package` default capability runs.
const NPM_DEFAULT_SCRIPTS: &[(&str, &str)] = &[
    ("build", "build"),
    ("check", "typecheck"),
    ("fmt", "format"),
    ("lint", "lint"),
    ("test", "test"),
];

/// Drops the default capabilities of a declared `npm-package` target whose script its
/// `package.json` lacks (`once run --all lint` then skips it instead of failing with "Missing
/// script"). A capability the manifest declares or changes stays; a folder without a readable
/// `package.json` keeps every default. Inferred targets already have exactly their scripts.
fn trim_missing_scripts(p: &mut PendingTarget, reader: &mut Reader) {
    let t = &p.target;
    if t.kind != "npm-package" || t.inference.is_some() {
        return;
    }
    let missing = |c: &Capability, scripts: &[String]| {
        c.origin == Origin::Kind
            && NPM_DEFAULT_SCRIPTS
                .iter()
                .any(|(cap, script)| *c.name == **cap && !scripts.iter().any(|s| s == script))
    };
    let Some(scripts) = discover::scripts_of(reader, &t.path) else {
        return;
    };
    if !t.capabilities.iter().any(|c| missing(c, &scripts)) {
        return;
    }
    let keep: Vec<bool> = t
        .capabilities
        .iter()
        .map(|c| !missing(c, &scripts))
        .collect();
    let capabilities: Vec<Capability> = t
        .capabilities
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(c, _)| c.clone())
        .collect();
    if !p.cap_deps.is_empty() {
        let deps = std::mem::take(&mut p.cap_deps);
        p.cap_deps = deps
            .into_iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(d, _)| d)
            .collect();
    }
    p.target.capabilities = capabilities.into();
}

/// Appends `more` to `all`, taking it whole when `all` is empty (no copy).
fn append<T>(all: &mut Vec<T>, mut more: Vec<T>) {
    if all.is_empty() {
        *all = more;
    } else {
        all.append(&mut more);
    }
}

/// Reads at most `MAX_MANIFEST_BYTES + 1` bytes, so a huge file is detected
/// without reading all of it, with the file's stamp taken before the read.
pub(crate) fn read_limited(path: &Path) -> std::io::Result<(Vec<u8>, Option<Stamp>)> {
    let file = std::fs::File::open(path)?;
    let metadata = file.metadata().ok();
    read_opened(file, metadata)
}

/// [`read_limited`] for a file that may be missing or no regular file (a folder, a pipe):
/// `None` then, found with the open itself and the metadata of what it opened rather than a
/// `stat` before it (discovery asks this of every package's manifest). Opened non-blocking, so a
/// pipe at the path cannot hang us.
pub(crate) fn read_regular(path: &Path) -> std::io::Result<Option<(Vec<u8>, Option<Stamp>)>> {
    let file = match once_fs::open_nonblocking(path) {
        Ok(file) => file,
        Err(error)
            if matches!(
                error.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(None);
        }
        Err(error) => return Err(error),
    };
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Ok(None);
    }
    read_opened(file, Some(metadata)).map(Some)
}

fn read_opened(
    file: std::fs::File,
    metadata: Option<std::fs::Metadata>,
) -> std::io::Result<(Vec<u8>, Option<Stamp>)> {
    let stamp = metadata.as_ref().map(|m| Stamp::new(m, SystemTime::now()));
    // Sized up front: growing a megabytes-long buffer by doubling costs copies and page faults.
    let len = metadata.map_or(0, |m| m.len()).min(MAX_MANIFEST_BYTES + 1);
    let mut out = Vec::with_capacity(usize::try_from(len).unwrap_or(0).saturating_add(1));
    file.take(MAX_MANIFEST_BYTES + 1).read_to_end(&mut out)?;
    Ok((out, stamp))
}

/// Checks size and UTF-8; `None` (with a diagnostic) when the file can't be parsed.
pub(crate) fn decode(rel: &str, bytes: Vec<u8>, diags: &mut Vec<Diagnostic>) -> Option<SourceFile> {
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

/// How many folders deep a glob with `**` is followed below its literal prefix. A bound, so a
/// tree of links or a generated folder nobody meant to search cannot make a load endless; a walk
/// it cuts short is reported ([`Expanded::cut_at`]), never silently dropped.
pub(crate) const MAX_GLOB_DEPTH: usize = 32;

/// What one folder glob matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expanded {
    /// How many matching folders hold the file looked for.
    pub found: usize,
    /// The first folder (in sorted order) at [`MAX_GLOB_DEPTH`] that has folders of its own the
    /// walk did not enter: what lies below it was never searched.
    pub cut_at: Option<String>,
}

/// Folders (relative, `/`-separated, sorted, unique) matching the member
/// globs that hold a once.toml; plus per glob what it matched or its error.
pub(crate) fn expand_members(
    root: &Path,
    globs: &[String],
) -> (Vec<String>, Vec<Result<Expanded, String>>) {
    expand_folders(root, globs, MANIFEST_FILE)
}

/// Folders (relative, `/`-separated, sorted, unique) matching `globs` that hold a file named
/// `holding`; plus per glob what it matched or its error. Hidden folders, `node_modules` and
/// `target` are never entered.
pub(crate) fn expand_folders(
    root: &Path,
    globs: &[String],
    holding: &str,
) -> (Vec<String>, Vec<Result<Expanded, String>>) {
    expand_folders_traced(root, globs, holding, None)
}

/// The folders of `abs` a folder glob may enter, by name.
fn enterable(entries: std::fs::ReadDir) -> impl Iterator<Item = String> {
    entries.flatten().filter_map(|entry| {
        let name = entry.file_name().to_string_lossy().into_owned();
        let skipped = name.starts_with('.') || name == "node_modules" || name == "target";
        (!skipped && entry.file_type().is_ok_and(|t| t.is_dir())).then_some(name)
    })
}

/// [`expand_folders`], recording in `trace` each folder it listed (stamped before the listing)
/// and each file it looked for, so a later check can prove the same expansion by `stat`s.
pub(crate) fn expand_folders_traced(
    root: &Path,
    globs: &[String],
    holding: &str,
    mut trace: Option<&mut Trace>,
) -> (Vec<String>, Vec<Result<Expanded, String>>) {
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
        let unbounded = comps.contains(&"**");
        let max_depth = if unbounded {
            MAX_GLOB_DEPTH
        } else {
            comps.len() - literal
        };
        let prefix = comps[..literal].join("/");
        let mut found = 0;
        let mut cut_at: Option<String> = None;
        let mut stack = vec![(prefix, 0usize)];
        while let Some((rel, depth)) = stack.pop() {
            let abs = if rel.is_empty() {
                root.to_path_buf()
            } else {
                root.join(&rel)
            };
            if !rel.is_empty() && matcher.is_match(&rel) {
                let holds = abs.join(holding).is_file();
                if let Some(trace) = trace.as_deref_mut() {
                    trace.probed.push((format!("{rel}/{holding}"), holds));
                }
                if holds {
                    found += 1;
                    all.push(rel.clone());
                }
            }
            // A glob without `**` cannot match deeper, so stopping there loses nothing; only a
            // `**` walk is listed once more at the bound, to tell whether it was cut short.
            if depth >= max_depth && !unbounded {
                continue;
            }
            let before = trace.is_some().then(|| std::fs::metadata(&abs));
            let entries = std::fs::read_dir(&abs);
            if let (Some(trace), Some(before)) = (trace.as_deref_mut(), before) {
                trace
                    .listed
                    .push((rel.clone(), Listed::of(before, entries.is_ok())));
            }
            let Ok(entries) = entries else {
                continue;
            };
            let mut children = enterable(entries);
            if depth >= max_depth {
                if children.next().is_some() && cut_at.as_ref().is_none_or(|c| rel < *c) {
                    cut_at = Some(rel);
                }
                continue;
            }
            for name in children {
                let child = if rel.is_empty() {
                    name
                } else {
                    format!("{rel}/{name}")
                };
                stack.push((child, depth + 1));
            }
        }
        per.push(Ok(Expanded { found, cut_at }));
    }
    all.sort();
    all.dedup();
    (all, per)
}

/// The warning for a `**` walk that [`MAX_GLOB_DEPTH`] cut short at `folder`, at `offset` of
/// `src` (the glob, or the list it is in). `fix` says where to name the deeper folder instead.
pub(crate) fn glob_too_deep(
    src: &SourceFile,
    offset: usize,
    glob: &str,
    folder: &str,
    fix: &str,
) -> Diagnostic {
    src.diag(
        offset,
        Severity::Warning,
        "glob-too-deep",
        format!(
            "folder glob `{glob}` is searched only {MAX_GLOB_DEPTH} folders deep and stopped at \
             `{folder}`: nothing below it was found"
        ),
    )
    .help(fix.to_string())
}

/// Drops duplicates, sorts targets, resolves deps into the graph, finds cycles.
/// A dependency on a persistent capability, which never ends, so what depends on it never starts.
fn depends_on_persistent(
    src: &SourceFile,
    offset: usize,
    who: &str,
    target: &str,
    capability: &str,
) -> Diagnostic {
    src.error(
        offset,
        "depends-on-persistent",
        format!("{who} depends on `{target}:{capability}`, which is persistent and never ends"),
    )
    .help("an action starts when its dependencies succeed; run the server on its own instead")
}

fn resolve(
    pending: Vec<PendingTarget>,
    declared: &[String],
    files: &[SourceFile],
    shared: &Shared,
    diags: &mut Vec<Diagnostic>,
) -> (Vec<Target>, Graph) {
    // Sort indices, not the big records; ties keep declaration order, so among
    // duplicates (adjacent after sorting) the first declaration wins.
    let mut order: Vec<usize> = (0..pending.len()).collect();
    order.sort_unstable_by(|&a, &b| {
        pending[a]
            .target
            .name
            .cmp(&pending[b].target.name)
            .then(a.cmp(&b))
    });
    let mut keep: Vec<usize> = Vec::with_capacity(order.len());
    for &i in &order {
        let t = &pending[i].target;
        let Some(&first) = keep.last().filter(|&&k| pending[k].target.name == t.name) else {
            keep.push(i);
            continue;
        };
        let first = &pending[first].target;
        let (Some(src), Some(first_src)) = (files.get(t.file), files.get(first.file)) else {
            continue;
        };
        let (line, _) = first_src.locate(first.offset);
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
    }
    drop(order);
    let mut slots: Vec<Option<PendingTarget>> = pending.into_iter().map(Some).collect();
    let mut targets: Vec<Target> = Vec::with_capacity(keep.len());
    let mut deps: Vec<Deps> = Vec::with_capacity(keep.len());
    let mut name_ids: Vec<u32> = Vec::with_capacity(keep.len());
    for p in keep
        .iter()
        .filter_map(|&i| slots.get_mut(i).and_then(Option::take))
    {
        name_ids.push(p.name_id);
        targets.push(p.target);
        deps.push(Deps {
            target: p.target_deps,
            caps: p.cap_deps,
        });
    }
    drop(slots);
    drop(keep);

    let counts: Vec<usize> = targets.iter().map(|t| t.capabilities.len()).collect();
    let mut graph = Graph::new(&counts);
    // Names were interned while reading: a name's id leads to its target.
    let mut by_id: Vec<u32> = vec![u32::MAX; shared.len()];
    for (i, &id) in name_ids.iter().enumerate() {
        if let Some(slot) = by_id.get_mut(id as usize) {
            *slot = u32::try_from(i).unwrap_or(u32::MAX);
        }
    }
    let by_id = |id: u32| {
        by_id
            .get(id as usize)
            .copied()
            .filter(|&i| i != u32::MAX)
            .map(|i| i as usize)
    };
    let find = |name: &str| shared.id(name).and_then(by_id);
    let is_declared = |name: &str| declared.iter().any(|d| d == name);

    for (ti, (t, d)) in targets.iter().zip(&deps).enumerate() {
        let Some(src) = files.get(t.file) else {
            continue;
        };
        for dep in &d.target {
            match by_id(dep.id) {
                Some(di) => {
                    graph.add_target_edge(ti, di);
                    // Both lists are sorted by capability name: a merge walk pairs them.
                    let (mine, theirs) = (&t.capabilities, &targets[di].capabilities);
                    let (mut i, mut j) = (0, 0);
                    while let (Some(x), Some(y)) = (mine.get(i), theirs.get(j)) {
                        match cmp_names(&x.name, &y.name) {
                            std::cmp::Ordering::Less => i += 1,
                            std::cmp::Ordering::Greater => j += 1,
                            std::cmp::Ordering::Equal => {
                                if y.persistent {
                                    diags.push(depends_on_persistent(
                                        src,
                                        dep.offset,
                                        &format!("target `{}`", t.name),
                                        &targets[di].name,
                                        &y.name,
                                    ));
                                }
                                graph.add_edge(graph.action(ti, i), graph.action(di, j));
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
                    &targets,
                )),
            }
        }
        // Inferred edges order like target-level deps, but a server neither waits nor is waited
        // for, and an edge to a target left out is no error: the ecosystem's graph is legal.
        if let Some(inference) = &t.inference {
            for edge in inference
                .edges
                .iter()
                .filter(|e| !inference.unordered.contains(e))
            {
                let Some(di) = find(&edge.0) else { continue };
                graph.add_target_edge(ti, di);
                let (mine, theirs) = (&t.capabilities, &targets[di].capabilities);
                let (mut i, mut j) = (0, 0);
                while let (Some(x), Some(y)) = (mine.get(i), theirs.get(j)) {
                    match cmp_names(&x.name, &y.name) {
                        std::cmp::Ordering::Less => i += 1,
                        std::cmp::Ordering::Greater => j += 1,
                        std::cmp::Ordering::Equal => {
                            if !x.persistent && !y.persistent {
                                graph.add_edge(graph.action(ti, i), graph.action(di, j));
                            }
                            i += 1;
                            j += 1;
                        }
                    }
                }
            }
        }
        for (ci, (c, cdeps)) in t.capabilities.iter().zip(&d.caps).enumerate() {
            for dep in cdeps {
                let (tname, cname) = split_dep(&dep.text, t, c);
                let ctx = || format!("capability `{}` of target `{}`", c.name, t.name);
                let Some(di) = find(tname) else {
                    if !is_declared(tname) {
                        diags.push(unknown_target(src, dep.offset, tname, &ctx(), &targets));
                    }
                    continue;
                };
                let dt = &targets[di];
                match dt.capabilities.iter().position(|x| &*x.name == cname) {
                    Some(dci) => {
                        if dt.capabilities[dci].persistent {
                            diags.push(depends_on_persistent(
                                src,
                                dep.offset,
                                &ctx(),
                                tname,
                                cname,
                            ));
                        }
                        graph.add_edge(graph.action(ti, ci), graph.action(di, dci))
                    }
                    None => {
                        let ctx = ctx();
                        let names: Vec<&str> = dt.capabilities.iter().map(|x| &*x.name).collect();
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

    // Where an edge was declared: the first target-level dep that yields it,
    // else the first dep of the capability naming it. Looked up only for cycles.
    let origin = |from: ActionId, to: ActionId| -> Option<(usize, usize, bool)> {
        let ((tf, cf), (tt, ct)) = (graph.split(from), graph.split(to));
        let (t, d) = (targets.get(tf)?, deps.get(tf)?);
        let (c, dc) = (
            t.capabilities.get(cf)?,
            targets.get(tt)?.capabilities.get(ct)?,
        );
        if c.name == dc.name
            && let Some(dep) = d.target.iter().find(|dep| by_id(dep.id) == Some(tt))
        {
            return Some((t.file, dep.offset, true));
        }
        d.caps.get(cf)?.iter().find_map(|dep| {
            let (tname, cname) = split_dep(&dep.text, t, c);
            (find(tname) == Some(tt) && cname == &*dc.name).then_some((t.file, dep.offset, false))
        })
    };
    let label = |a: ActionId| {
        let (t, c) = graph.split(a);
        let t = &targets[t];
        format!(
            "{}:{}",
            t.name,
            t.capabilities.get(c).map_or("?", |c| &*c.name)
        )
    };
    // A cycle made only of target-level `deps` repeats for every capability the
    // targets share: report it once per target cycle.
    let mut target_cycles: Vec<(Vec<usize>, Vec<&str>, ActionId, ActionId)> = Vec::new();
    for cycle in graph.cycles() {
        let n = cycle.len();
        let (from, to) = (cycle[n.saturating_sub(2)], cycle[n - 1]);
        let target_level = cycle
            .windows(2)
            .all(|w| origin(w[0], w[1]).is_some_and(|o| o.2));
        if target_level {
            let tcycle: Vec<usize> = cycle.iter().map(|&a| graph.split(a).0).collect();
            let (t, c) = graph.split(cycle[0]);
            let cap = targets[t].capabilities.get(c).map_or("?", |c| &*c.name);
            match target_cycles.iter_mut().find(|g| g.0 == tcycle) {
                Some(g) => g.1.push(cap),
                None => target_cycles.push((tcycle, vec![cap], from, to)),
            }
            continue;
        }
        let text = cycle
            .iter()
            .map(|&a| label(a))
            .collect::<Vec<_>>()
            .join(" → ");
        let (file, offset, _) = origin(from, to).unwrap_or((0, 0, false));
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
    for (tcycle, mut caps, from, to) in target_cycles {
        caps.sort_unstable();
        caps.dedup();
        let name = |t: usize| targets[t].name.as_str();
        let text = tcycle
            .iter()
            .map(|&t| name(t))
            .collect::<Vec<_>>()
            .join(" → ");
        let (file, offset, _) = origin(from, to).unwrap_or((0, 0, false));
        if let Some(src) = files.get(file) {
            let (tf, tt) = (graph.split(from).0, graph.split(to).0);
            diags.push(
                src.error(
                    offset,
                    "dependency-cycle",
                    format!(
                        "dependency cycle: {text} (target-level `deps`; it holds for {} {})",
                        if caps.len() == 1 {
                            "capability"
                        } else {
                            "capabilities"
                        },
                        caps.join(", ")
                    ),
                )
                .help(format!(
                    "remove one of these dependencies, e.g. this one ({} → {})",
                    name(tf),
                    name(tt)
                )),
            );
        }
    }
    (targets, graph)
}

/// The `deps` of one target, parallel to the targets.
struct Deps {
    /// Target-level `deps`.
    target: Vec<DepRef>,
    /// Capability `deps`, parallel to the capabilities (empty when none declares any).
    caps: Vec<Vec<DepRef>>,
}

/// Capability names are shared, so equal names are usually the same pointer.
fn cmp_names(a: &Arc<str>, b: &Arc<str>) -> std::cmp::Ordering {
    if Arc::ptr_eq(a, b) {
        std::cmp::Ordering::Equal
    } else {
        (**a).cmp(&**b)
    }
}

/// `(target, capability)` named by a capability dep of `c` of `t`:
/// `t2:c2`, `:c2` (same target) or `t2` (same capability).
fn split_dep<'a>(text: &'a str, t: &'a Target, c: &'a Capability) -> (&'a str, &'a str) {
    match text.split_once(':') {
        Some(("", cn)) => (t.name.as_str(), cn),
        Some((tn, cn)) => (tn, cn),
        None => (text, &*c.name),
    }
}

fn unknown_target(
    src: &SourceFile,
    offset: usize,
    name: &str,
    ctx: &str,
    targets: &[Target],
) -> Diagnostic {
    src.error(
        offset,
        "unknown-target",
        format!("{ctx} depends on unknown target `{name}`"),
    )
    .expected("the name of a target declared in this workspace")
    .found(format!("`{name}`"))
    .did_you_mean(suggest::best(name, targets.iter().map(|t| t.name.as_str())))
}
