//! Loading a workspace: finding manifests, parsing them, resolving
//! dependencies across them, and detecting staleness.
//!
//! The stages are one file each: `load.rs` reads files and expands folder globs, `overlay.rs`
//! lays the once.toml declarations over what discovery inferred and names its edges,
//! `resolve.rs` turns the targets into the graph. This module is the pipeline that runs them
//! and the `Workspace` it answers. It is the only module that reads files; it must never fail
//! on a bad manifest (problems become diagnostics) and never print.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crate::diagnostic::{Diagnostic, Severity, SourceFile};
use crate::discover::{self, Reader};
use crate::freshness::{Freshness, Lists};
use crate::graph::Graph;
use crate::manifest::{
    self, Bases, CacheSettings, ExecutionSettings, Overlay, PendingTarget, Settings, Shared,
};
use crate::model::{EnvMode, Target};
use crate::root::{self, SafeDirectories};
use crate::{Error, MANIFEST_FILE};

pub(crate) mod load;
mod overlay;
mod resolve;

use crate::discover::trim_missing_scripts;
use load::{Expanded, ManifestRecord, decode, expand_members, glob_too_deep, read_limited};
use overlay::overlay_inferred;
use resolve::resolve;

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
    execution: ExecutionSettings,
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
        let mut cargo = Reader::new(&root);
        diags.extend(crate::features::unknown(&targets, &files, &mut cargo));
        // Read for the feature check only: recorded for staleness, but a manifest the reader
        // could not use is cargo's to report, not a second warning of ours.
        files.extend(cargo.files);
        manifests.extend(cargo.records);
        absent.extend(cargo.absent);

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
            execution: settings.execution.clone(),
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

    /// The root manifest's `[execution]` table; every key empty when it has none.
    pub fn execution_settings(&self) -> &ExecutionSettings {
        &self.execution
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

/// Appends `more` to `all`, taking it whole when `all` is empty (no copy).
fn append<T>(all: &mut Vec<T>, mut more: Vec<T>) {
    if all.is_empty() {
        *all = more;
    } else {
        all.append(&mut more);
    }
}
