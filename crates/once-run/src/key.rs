//! The cache key of an action: BLAKE3 over its name, rendered command, folder, parameters, the
//! keyed part of its environment and the program it starts (see [`crate::environ`]), the content
//! of its input files and the keys of its dependencies.
//!
//! Inputs are the files under the target's folder that match its input globs (all files when
//! it declares none), minus `!` exclusions and declared outputs, minus what `.gitignore` files
//! ignore; `.git` and `.once` are never inputs. Anything that could change what the command
//! produces must be in the key; this module must never leave out a part to save time.

use std::fs::{self, File, Metadata};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use globset::{Glob, GlobSet, GlobSetBuilder};
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::environ::Environ;
use crate::error::Error;
use crate::hashes::FileHashes;
use crate::plan::Step;

/// Bumped whenever what goes into a key changes, so old entries stop matching.
const KEY_VERSION: &[u8] = b"once-run key v2\0";

/// An action's cache key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key(blake3::Hash);

impl Key {
    pub fn to_hex(&self) -> String {
        self.0.to_hex().to_string()
    }
}

/// Which files of a folder are an action's inputs.
#[derive(Debug, Clone)]
pub(crate) struct Inputs {
    include: Option<GlobSet>,
    exclude: GlobSet,
}

impl Inputs {
    pub(crate) fn new(step: &Step) -> Result<Inputs, Error> {
        let glob = |text: &str| {
            Glob::new(text).map_err(|error| Error::Glob {
                action: step.action.clone(),
                glob: text.to_owned(),
                message: error.kind().to_string(),
            })
        };
        let mut include = GlobSetBuilder::new();
        let mut includes = 0;
        let mut exclude = GlobSetBuilder::new();
        for text in step.inputs.iter() {
            match text.strip_prefix('!') {
                Some(negated) => {
                    exclude.add(glob(negated)?);
                }
                None => {
                    include.add(glob(text)?);
                    includes += 1;
                }
            }
        }
        // A command's own outputs are never its inputs, or its key would change with each run.
        for text in step.outputs.iter() {
            exclude.add(glob(text)?);
        }
        let build = |builder: GlobSetBuilder, text: String| {
            builder.build().map_err(|error| Error::Glob {
                action: step.action.clone(),
                glob: text,
                message: error.to_string(),
            })
        };
        Ok(Inputs {
            include: if includes == 0 {
                None
            } else {
                Some(build(include, step.inputs.join(", "))?)
            },
            exclude: build(exclude, step.outputs.join(", "))?,
        })
    }

    fn matches(&self, relative: &str) -> bool {
        self.include
            .as_ref()
            .is_none_or(|include| include.is_match(relative))
            && !self.exclude.is_match(relative)
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
    pub(crate) fn files(&self, dir: &Path, above: &[Arc<Gitignore>]) -> Vec<(String, Metadata)> {
        let mut files = Vec::new();
        let mut levels = Vec::new();
        self.walk(dir, String::new(), above, &mut levels, &mut files);
        files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        files
    }

    fn walk(
        &self,
        folder: &Path,
        prefix: String,
        above: &[Arc<Gitignore>],
        levels: &mut Vec<Level>,
        files: &mut Vec<(String, Metadata)>,
    ) {
        let Ok(listing) = fs::read_dir(folder) else {
            return;
        };
        let mut entries = Vec::new();
        for entry in listing.filter_map(Result::ok) {
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                // Not representable in a key as text; the walker of the `ignore` crate skipped
                // these too (a relative path that is not UTF-8 was never an input).
                continue;
            };
            entries.push((name.to_owned(), file_type, entry));
        }
        levels.push(Level::read(
            folder,
            entries.iter().map(|(name, ..)| name.as_str()),
        ));
        for (name, file_type, entry) in entries {
            if name == ".git" || name == ".once" {
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
                self.walk(&path, relative, above, levels, files);
            } else if self.matches(&relative)
                && let Ok(metadata) = entry.metadata()
            {
                files.push((relative, metadata));
            }
        }
        levels.pop();
    }
}

/// The ignore files of one folder inside a target's folder.
struct Level {
    ignore: Option<Gitignore>,
    gitignore: Option<Gitignore>,
    exclude: Option<Gitignore>,
    has_git: bool,
}

impl Level {
    fn read<'a>(folder: &Path, names: impl Iterator<Item = &'a str>) -> Level {
        let mut level = Level {
            ignore: None,
            gitignore: None,
            exclude: None,
            has_git: false,
        };
        for name in names {
            match name {
                ".ignore" => level.ignore = Some(matcher(folder, &folder.join(name))),
                ".gitignore" => level.gitignore = Some(matcher(folder, &folder.join(name))),
                ".git" => {
                    level.has_git = true;
                    let exclude = folder.join(".git/info/exclude");
                    if exclude.is_file() {
                        level.exclude = Some(matcher(folder, &exclude));
                    }
                }
                _ => {}
            }
        }
        level
    }
}

/// A matcher for the ignore file `file`, whose patterns are relative to `folder`.
fn matcher(folder: &Path, file: &Path) -> Gitignore {
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

/// The BLAKE3 digest of a file's content, read through `buffer`.
pub fn hash_file(path: &Path, buffer: &mut [u8]) -> io::Result<blake3::Hash> {
    let mut file = File::open(path)?;
    let mut hasher = blake3::Hasher::new();
    loop {
        let n = file.read(buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(hasher.finalize())
}

/// The key of `step`, given its inputs and its dependencies' keys (in `step.deps` order).
#[allow(clippy::too_many_arguments)]
pub(crate) fn action_key(
    step: &Step,
    inputs: &Inputs,
    above: &[Arc<Gitignore>],
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
    for (relative, metadata) in inputs.files(&step.dir, above) {
        let path = step.dir.join(&relative);
        let digest = hashes
            .digest(&path, &metadata, buffer)
            .map_err(Error::io(&path))?;
        field(relative.as_bytes());
        field(digest.as_bytes());
    }
    field(b"deps");
    for key in dep_keys {
        field(key.0.as_bytes());
    }
    Ok(Key(hasher.finalize()))
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
pub(crate) fn gitignore(folder: &Path) -> Gitignore {
    let (gitignore, error) = Gitignore::new(folder.join(".gitignore"));
    if let Some(error) = error.filter(|_| folder.join(".gitignore").exists()) {
        tracing::warn!(folder = %folder.display(), %error, "a .gitignore could not be read in full");
    }
    gitignore
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(dir: &Path, inputs: &[&str], outputs: &[&str]) -> Step {
        Step {
            action: "t:build".into(),
            command: "true".into(),
            dir: dir.to_path_buf(),
            path: "t".into(),
            env: Default::default(),
            strict: false,
            pass_env: Arc::new([]),
            cache: true,
            persistent: false,
            deadline: std::time::Duration::from_secs(1),
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            outputs: outputs.iter().map(|s| s.to_string()).collect(),
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
                inputs.matches(&relative).then_some(relative)
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
            let inputs = Inputs::new(&step(&dir, inputs, outputs)).unwrap();
            let walked: Vec<String> = inputs
                .files(&dir, &[])
                .into_iter()
                .map(|(p, _)| p)
                .collect();
            assert_eq!(walked, reference(&inputs, &dir));
            assert!(!walked.is_empty());
        }
        fs::remove_dir_all(dir).unwrap();
    }
}
