//! The cache key of an action: BLAKE3 over its name, rendered command, folder, parameters, the
//! keyed part of its environment and the program it starts (see [`crate::environ`]), the content
//! of its input files, the sources of the targets it depends on and the keys of its
//! dependencies.
//!
//! Inputs are the files under the target's folder that match its input globs (all files when
//! it declares none), minus `!` exclusions, minus the declared outputs of every capability of
//! the target (what one capability writes must never change another's key), minus what
//! `.gitignore` files ignore; `.git` and `.once` are never inputs. A glob starting with `//`
//! names files from the workspace root (a lockfile beside the manifest). The sources of each
//! target the action's target depends on are walked the same way, so a change in a dependency
//! reaches its dependents' keys even when no action edge leads there. Anything that could
//! change what the command produces must be in the key; this module must never leave out a
//! part to save time.

use std::fs::{self, Metadata};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use once_graph::inputs::{InputGlobs, Matcher, literal_base};

use crate::environ::Environ;
use crate::error::Error;
pub use crate::file_facts::hash_file;
use crate::hashes::FileHashes;
use crate::plan::Step;
use crate::witness::Witness;

/// Bumped whenever what goes into a key changes, so old entries stop matching.
pub(crate) const KEY_VERSION: &[u8] = b"once-run key v4\0";

/// An action's cache key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key(blake3::Hash);

impl Key {
    pub fn to_hex(&self) -> String {
        self.0.to_hex().to_string()
    }

    /// The key's bytes: its name in the cache's packs.
    pub(crate) fn as_bytes(&self) -> &[u8; 32] {
        self.0.as_bytes()
    }

    /// The key's first 8 bytes: a name for it among a few (a lock slot), not a unique one.
    pub(crate) fn prefix(&self) -> [u8; 8] {
        let mut prefix = [0; 8];
        prefix.copy_from_slice(&self.0.as_bytes()[..8]);
        prefix
    }
}

/// Which files are an action's inputs: those of its folder, and those named from the workspace
/// root by globs that start with `//`. The globs are read by `once_graph::inputs`, the reading
/// the affected query shares, so what a change re-runs and what it re-keys cannot disagree.
#[derive(Debug, Clone)]
pub(crate) struct Inputs {
    globs: InputGlobs,
    /// Where the `//` globs can match: the longest literal folder (or file) of each, relative to
    /// the root, and whether the rest of the pattern reaches below that folder's own files
    /// (`//tsconfig*.json` lists one folder; `//conf/**` walks it).
    bases: Vec<(String, bool)>,
}

impl Inputs {
    /// The inputs of `action` given its globs, minus `excluded` (output globs, relative to the
    /// target's folder).
    pub(crate) fn new<'a>(
        action: &str,
        globs: &[String],
        excluded: impl IntoIterator<Item = &'a String>,
    ) -> Result<Inputs, Error> {
        // A command's own outputs, and those of its target's other capabilities, are never its
        // inputs, or its key would change with each run.
        let compiled = InputGlobs::new(globs, excluded).map_err(|error| match error {
            once_graph::Error::Glob { glob, message } => Error::Glob {
                action: action.to_owned(),
                glob,
                message,
            },
            other => Error::Glob {
                action: action.to_owned(),
                glob: globs.join(", "),
                message: other.to_string(),
            },
        })?;
        let mut bases: Vec<(String, bool)> = globs
            .iter()
            .filter_map(|text| text.strip_prefix("//"))
            .map(|pattern| {
                let base = literal_base(pattern);
                (base.base, base.deep)
            })
            .collect();
        // A base inside one walked in depth is walked with it.
        bases.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut outer: Vec<(String, bool)> = Vec::new();
        for (base, deep) in bases {
            let inside = |(o, o_deep): &(String, bool)| {
                base == *o || (*o_deep && (o.is_empty() || base.starts_with(&format!("{o}/"))))
            };
            if !outer.iter().any(inside) {
                outer.push((base, deep));
            }
        }
        Ok(Inputs {
            globs: compiled,
            bases: outer,
        })
    }

    /// The files the `//` globs name under `root`, by root-relative path. A file named in full
    /// is taken whatever ignore files say of it; a pattern is walked like a target's folder
    /// (from its literal base folder down).
    pub(crate) fn rooted_files(&self, root: &Path, witness: &Witness) -> Vec<(String, Metadata)> {
        let mut files = Vec::new();
        for (base, deep) in &self.bases {
            let path = root.join(base);
            let found = fs::symlink_metadata(&path);
            // A folder is recorded by its listing and a file named by the globs by its
            // content (both below); anything else by what this look found.
            let covered = found.as_ref().is_ok_and(|metadata| {
                metadata.is_dir() || (metadata.is_file() && self.globs.rooted().matches(base))
            });
            if !covered {
                witness.looked(&path, &found);
            }
            let Ok(metadata) = found else {
                continue;
            };
            if metadata.is_file() {
                if self.globs.rooted().matches(base) {
                    files.push((base.clone(), metadata));
                }
            } else if metadata.is_dir() && !*deep {
                let before = witness.before_listing(&path);
                let Ok(listing) = fs::read_dir(&path) else {
                    witness.listed(&path, before, None::<std::iter::Empty<_>>);
                    continue;
                };
                let entries = named_entries(listing);
                witness.listed(
                    &path,
                    before,
                    Some(entries.iter().map(|(name, kind, _)| (name.as_str(), *kind))),
                );
                for (name, kind, entry) in entries {
                    let relative = if base.is_empty() {
                        name
                    } else {
                        format!("{base}/{name}")
                    };
                    if kind.is_file()
                        && self.globs.rooted().matches(&relative)
                        && let Ok(metadata) = entry.metadata()
                    {
                        files.push((relative, metadata));
                    }
                }
            } else if metadata.is_dir() {
                let mut levels = Vec::new();
                walk(
                    self.globs.rooted(),
                    &path,
                    base.clone(),
                    &[],
                    &mut levels,
                    &mut files,
                    witness,
                );
            }
        }
        files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        files.dedup_by(|a, b| a.0 == b.0);
        files
    }

    /// The input files of `dir`, sorted by their `/`-separated relative paths, each with its
    /// metadata (not following symbolic links, which are never inputs). `above` are the
    /// `.gitignore` files of the folders between the workspace root and `dir`, read once per run
    /// by the caller; anything one of them ignores is not an input.
    ///
    /// Inside `dir` the rules of the `ignore` crate (and git) apply, level by level from the
    /// deepest: `.ignore` before `.gitignore` before `.git/info/exclude`, and a folder holding
    /// `.git` ends the `.gitignore` look-up upwards. The walk reads each folder once and looks
    /// for ignore files in the listing itself, so a folder without them costs no extra `stat`.
    /// What cannot be read (a folder without permission, a file that vanished meanwhile) is no
    /// input, as with the `ignore` crate's walker.
    pub(crate) fn files(
        &self,
        dir: &Path,
        above: &[Arc<Gitignore>],
        witness: &Witness,
    ) -> Vec<(String, Metadata)> {
        let mut files = Vec::new();
        let mut levels = Vec::new();
        walk(
            self.globs.local(),
            dir,
            String::new(),
            above,
            &mut levels,
            &mut files,
            witness,
        );
        files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        files
    }
}

#[allow(clippy::too_many_arguments)]
fn walk(
    matcher: &Matcher,
    folder: &Path,
    prefix: String,
    above: &[Arc<Gitignore>],
    levels: &mut Vec<Level>,
    files: &mut Vec<(String, Metadata)>,
    witness: &Witness,
) {
    let before = witness.before_listing(folder);
    let Ok(listing) = fs::read_dir(folder) else {
        witness.listed(folder, before, None::<std::iter::Empty<_>>);
        return;
    };
    let entries = named_entries(listing);
    witness.listed(
        folder,
        before,
        Some(entries.iter().map(|(name, kind, _)| (name.as_str(), *kind))),
    );
    levels.push(Level::read(
        folder,
        entries.iter().map(|(name, ..)| name.as_str()),
        witness,
    ));
    for (name, file_type, entry) in entries {
        // A file `once` stages while it restores an output or applies a change set is there
        // for an instant: listed, then renamed away before it could be hashed.
        if name == ".git" || name == ".once" || once_fs::is_stage_name(&name) {
            continue;
        }
        let is_dir = file_type.is_dir();
        if !is_dir && !file_type.is_file() {
            continue;
        }
        let path = entry.path();
        if ignored(&path, is_dir, above, levels) {
            continue;
        }
        let relative = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        if is_dir {
            if matcher.may_hold(&relative) {
                walk(matcher, &path, relative, above, levels, files, witness);
            }
        } else if matcher.matches(&relative)
            && let Ok(metadata) = entry.metadata()
        {
            files.push((relative, metadata));
        }
    }
    levels.pop();
}

/// The entries of a listing that a walk can use: those whose kind could be read and whose name
/// is UTF-8 (a name that is not cannot be spelled in a key as text; the walker of the `ignore`
/// crate skipped these too, so such a file was never an input).
fn named_entries(listing: fs::ReadDir) -> Vec<(String, fs::FileType, fs::DirEntry)> {
    let mut entries = Vec::new();
    for entry in listing.filter_map(Result::ok) {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if let Ok(name) = entry.file_name().into_string() {
            entries.push((name, kind, entry));
        }
    }
    entries
}

/// The ignore files of one folder inside a target's folder.
struct Level {
    ignore: Option<Gitignore>,
    gitignore: Option<Gitignore>,
    exclude: Option<Gitignore>,
    has_git: bool,
}

impl Level {
    fn read<'a>(folder: &Path, names: impl Iterator<Item = &'a str>, witness: &Witness) -> Level {
        let mut level = Level {
            ignore: None,
            gitignore: None,
            exclude: None,
            has_git: false,
        };
        for name in names {
            match name {
                ".ignore" => level.ignore = Some(matcher(folder, &folder.join(name), witness)),
                ".gitignore" => {
                    level.gitignore = Some(matcher(folder, &folder.join(name), witness));
                }
                ".git" => {
                    level.has_git = true;
                    let exclude = folder.join(".git/info/exclude");
                    witness.read(&exclude);
                    if exclude.is_file() {
                        level.exclude = Some(matcher(folder, &exclude, witness));
                    }
                }
                _ => {}
            }
        }
        level
    }
}

/// A matcher for the ignore file `file`, whose patterns are relative to `folder`.
fn matcher(folder: &Path, file: &Path, witness: &Witness) -> Gitignore {
    // Recorded with its content just before the ignore crate reads it (following a link).
    witness.read(file);
    let mut builder = GitignoreBuilder::new(folder);
    if let Some(error) = builder.add(file) {
        tracing::warn!(file = %file.display(), %error, "an ignore file could not be read in full");
    }
    builder.build().unwrap_or_else(|error| {
        tracing::warn!(file = %file.display(), %error, "an ignore file could not be compiled");
        Gitignore::empty()
    })
}

/// Whether `path` is ignored: by any `.gitignore` above the target's folder, or else by the
/// deepest ignore file inside it that has something to say about it.
fn ignored(path: &Path, is_dir: bool, above: &[Arc<Gitignore>], levels: &[Level]) -> bool {
    if above
        .iter()
        .any(|gitignore| gitignore.matched(path, is_dir).is_ignore())
    {
        return true;
    }
    let first = |pick: &dyn Fn(&Level) -> Option<&Gitignore>, stop_at_git: bool| {
        for level in levels.iter().rev() {
            if let Some(gitignore) = pick(level) {
                let found = gitignore.matched(path, is_dir);
                if !found.is_none() {
                    return found;
                }
            }
            if stop_at_git && level.has_git {
                break;
            }
        }
        ignore::Match::None
    };
    let found = first(&|l| l.ignore.as_ref(), false);
    let found = if found.is_none() {
        first(&|l| l.gitignore.as_ref(), true)
    } else {
        found
    };
    let found = if found.is_none() {
        first(&|l| l.exclude.as_ref(), true)
    } else {
        found
    };
    found.is_ignore()
}

/// Files an action's key covers: a folder's inputs and the root-relative ones.
pub(crate) struct Source<'a> {
    /// The folder (a target's).
    pub(crate) dir: &'a Path,
    pub(crate) inputs: &'a Inputs,
    /// The `.gitignore` files between the workspace root and `dir`.
    pub(crate) above: &'a [Arc<Gitignore>],
}

/// The digest of a folder's sources: an action's own, or a dependency's for its dependents.
pub(crate) fn source_digest(
    of: &Source<'_>,
    root: &Path,
    hashes: &FileHashes,
    buffer: &mut [u8],
) -> Result<blake3::Hash, Error> {
    let mut hasher = blake3::Hasher::new();
    let mut field = |bytes: &[u8]| {
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    source(of, root, hashes, buffer, &mut |path, digest| {
        field(path.as_bytes());
        field(digest.as_bytes());
    })?;
    Ok(hasher.finalize())
}

/// The files of `of` and their digests, as [`source_digest`] covers them (root-relative ones
/// spelled with their leading `//`): what a key's manifest lists.
pub(crate) fn source_files(
    of: &Source<'_>,
    root: &Path,
    hashes: &FileHashes,
    buffer: &mut [u8],
) -> Result<Vec<(String, blake3::Hash)>, Error> {
    let mut files = Vec::new();
    source(of, root, hashes, buffer, &mut |path, digest| {
        files.push((path.to_owned(), digest));
    })?;
    Ok(files)
}

/// The key of `step`, given the digest of its own sources, those of the targets it depends on
/// (in `step.upstream` order, see [`source_digest`]) and its dependencies' keys (in `step.deps`
/// order).
#[allow(clippy::too_many_arguments)]
pub(crate) fn action_key(
    step: &Step,
    own: blake3::Hash,
    upstream: &[blake3::Hash],
    dep_keys: &[Key],
    environ: &Environ,
    hashes: &FileHashes,
    buffer: &mut [u8],
) -> Result<Key, Error> {
    let mut hasher = blake3::Hasher::new();
    hasher.update(KEY_VERSION);
    // Every variable-length part is length-prefixed, so no two different actions can be
    // spelled into the same byte stream.
    let mut field = |bytes: &[u8]| {
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    // The action itself: two targets running the same command in the same folder are two
    // actions, and each must run and be recorded on its own.
    field(step.action.as_bytes());
    field(step.command.as_bytes());
    field(step.path.as_bytes());
    field(
        serde_json::Value::from(serde_json::Map::from_iter(step.params.clone()))
            .to_string()
            .as_bytes(),
    );
    environ.key(step, hashes, buffer, &mut field);
    field(b"outputs");
    for output in step.outputs.iter() {
        field(output.as_bytes());
    }
    field(b"inputs");
    field(own.as_bytes());
    field(b"upstream");
    for digest in upstream {
        field(digest.as_bytes());
    }
    field(b"deps");
    for key in dep_keys {
        field(key.0.as_bytes());
    }
    Ok(Key(hasher.finalize()))
}

/// Hands each file of `source` to `file`, as its relative path and its digest: first those of
/// its folder, then the root-relative ones (marked by their leading `//`).
fn source(
    source: &Source<'_>,
    root: &Path,
    hashes: &FileHashes,
    buffer: &mut [u8],
    file: &mut dyn FnMut(&str, blake3::Hash),
) -> Result<(), Error> {
    for (relative, metadata) in source
        .inputs
        .files(source.dir, source.above, hashes.witness())
    {
        let path = source.dir.join(&relative);
        let digest = hashes
            .digest(&path, &metadata, buffer)
            .map_err(Error::io(&path))?;
        file(&relative, digest);
    }
    for (relative, metadata) in source.inputs.rooted_files(root, hashes.witness()) {
        let path = root.join(&relative);
        let digest = hashes
            .digest(&path, &metadata, buffer)
            .map_err(Error::io(&path))?;
        file(&format!("//{relative}"), digest);
    }
    Ok(())
}

/// The folders from `root` (included) down to `dir` (excluded), outermost first.
pub(crate) fn folders_above(root: &Path, dir: &Path) -> Vec<PathBuf> {
    let Ok(relative) = dir.strip_prefix(root) else {
        return Vec::new();
    };
    let mut folders = vec![root.to_path_buf()];
    let mut current = root.to_path_buf();
    let parts: Vec<_> = relative.components().collect();
    for part in parts.iter().take(parts.len().saturating_sub(1)) {
        current.push(part);
        folders.push(current.clone());
    }
    if parts.is_empty() {
        folders.clear();
    }
    folders
}

/// The `.gitignore` of `folder` (an empty matcher when it has none).
pub(crate) fn gitignore(folder: &Path, witness: &Witness) -> Gitignore {
    witness.read(&folder.join(".gitignore"));
    let (gitignore, error) = Gitignore::new(folder.join(".gitignore"));
    if let Some(error) = error.filter(|_| folder.join(".gitignore").exists()) {
        tracing::warn!(folder = %folder.display(), %error, "a .gitignore could not be read in full");
    }
    gitignore
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn step(dir: &Path, inputs: &[&str], outputs: &[&str]) -> Step {
        Step {
            batch: None,
            action: "t:build".into(),
            command: "true".into(),
            dir: dir.to_path_buf(),
            path: "t".into(),
            env: Default::default(),
            strict: false,
            pass_env: Arc::new([]),
            env_file_vars: Vec::new(),
            env_file: None,
            cache: true,
            persistent: false,
            placement: once_graph::Placement::default(),
            retries: 0,
            mutex: None,
            deadline: std::time::Duration::from_secs(1),
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            outputs: outputs.iter().map(|s| s.to_string()).collect(),
            written: Arc::new([]),
            upstream: Vec::new(),
            params: Default::default(),
            deps: Vec::new(),
            requested: true,
        }
    }

    /// What the `ignore` crate's walker, configured as this module used it before it walked
    /// folders itself, finds under `dir`.
    fn reference(inputs: &Inputs, dir: &Path) -> Vec<String> {
        let walker = ignore::WalkBuilder::new(dir)
            .hidden(false)
            .require_git(false)
            .git_global(false)
            .parents(false)
            .filter_entry(|entry| {
                let name = entry.file_name();
                !(entry.depth() > 0 && (name == ".git" || name == ".once"))
            })
            .build();
        let mut files: Vec<String> = walker
            .filter_map(Result::ok)
            .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
            .filter_map(|entry| {
                let relative = entry.path().strip_prefix(dir).ok()?.to_str()?.to_owned();
                inputs.globs.local().matches(&relative).then_some(relative)
            })
            .collect();
        files.sort_unstable();
        files
    }

    #[test]
    fn the_walk_finds_what_the_ignore_crate_finds() {
        let dir = std::env::temp_dir().join(format!("once-run-walk-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let files = [
            ("a.txt", "a"),
            (".hidden", "h"),
            (".gitignore", "*.log\nbuild/\n!keep.log\n/top-only.txt\n"),
            (".ignore", "secret*\n"),
            ("keep.log", "k"),
            ("drop.log", "d"),
            ("top-only.txt", "t"),
            ("secret.txt", "s"),
            ("build/x.txt", "x"),
            ("src/top-only.txt", "t"),
            ("src/.gitignore", "!drop-too.log\ngen/\n"),
            ("src/drop-too.log", "d"),
            ("src/gen/g.txt", "g"),
            ("src/deep/more/m.rs", "m"),
            ("src/deep/.ignore", "!secret-ok.txt\n"),
            ("src/deep/secret-ok.txt", "s"),
            ("nested/.git/info/exclude", "excluded.txt\n"),
            ("nested/excluded.txt", "e"),
            ("nested/kept.txt", "k"),
            (".once/cache/x", "x"),
            ("out/bundle.txt", "o"),
        ];
        for (path, text) in files {
            let path = dir.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        std::os::unix::fs::symlink(dir.join("a.txt"), dir.join("link.txt")).unwrap();
        for (inputs, outputs) in [
            (&[][..], &["out/**"][..]),
            (&["src/**", "*.txt"][..], &[][..]),
            (&["**/*.txt", "!nested/**"][..], &["out/bundle.txt"][..]),
        ] {
            let step = step(&dir, inputs, outputs);
            let inputs = Inputs::new(&step.action, &step.inputs, step.outputs.iter()).unwrap();
            let walked: Vec<String> = inputs
                .files(&dir, &[], &crate::witness::OFF)
                .into_iter()
                .map(|(p, _)| p)
                .collect();
            assert_eq!(walked, reference(&inputs, &dir));
            assert!(!walked.is_empty());
        }
        fs::remove_dir_all(dir).unwrap();
    }
}
