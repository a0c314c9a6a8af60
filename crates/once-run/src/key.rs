//! The cache key of an action: BLAKE3 over its rendered command, folder, parameters, declared
//! environment, the content of its input files and the keys of its dependencies.
//!
//! Inputs are the files under the target's folder that match its input globs (all files when
//! it declares none), minus `!` exclusions and declared outputs, minus what `.gitignore` files
//! ignore; `.git` and `.once` are never inputs. Anything that could change what the command
//! produces must be in the key; this module must never leave out a part to save time.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use globset::{Glob, GlobSet, GlobSetBuilder};
use ignore::gitignore::Gitignore;

use crate::error::Error;
use crate::plan::Step;

/// Bumped whenever what goes into a key changes, so old entries stop matching.
const KEY_VERSION: &[u8] = b"once-run key v1\0";

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

    /// The input files of `dir`, as sorted `/`-separated relative paths. `above` are the
    /// `.gitignore` files of the folders between the workspace root and `dir`; the walker reads
    /// those from `dir` down. (Letting the walker read every parent itself costs a dozen
    /// look-ups per target, up to `/`, and takes in ignore files from outside the workspace.)
    pub(crate) fn files(&self, dir: &Path, above: &[Arc<Gitignore>]) -> Vec<String> {
        let above = above.to_vec();
        let walker = ignore::WalkBuilder::new(dir)
            .hidden(false)
            .require_git(false)
            .git_global(false)
            .parents(false)
            .filter_entry(move |entry| {
                let name = entry.file_name();
                if entry.depth() > 0 && (name == ".git" || name == ".once") {
                    return false;
                }
                let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
                !above
                    .iter()
                    .any(|gitignore| gitignore.matched(entry.path(), is_dir).is_ignore())
            })
            .build();
        let mut files: Vec<String> = walker
            .filter_map(Result::ok)
            .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
            .filter_map(|entry| {
                let relative = entry.path().strip_prefix(dir).ok()?.to_str()?.to_owned();
                self.matches(&relative).then_some(relative)
            })
            .collect();
        files.sort_unstable();
        files
    }
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
pub(crate) fn action_key(
    step: &Step,
    inputs: &Inputs,
    above: &[Arc<Gitignore>],
    dep_keys: &[Key],
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
    field(step.command.as_bytes());
    field(step.path.as_bytes());
    field(
        serde_json::Value::from(serde_json::Map::from_iter(step.params.clone()))
            .to_string()
            .as_bytes(),
    );
    for (name, value) in &step.env {
        field(name.as_bytes());
        field(value.as_bytes());
    }
    field(b"outputs");
    for output in step.outputs.iter() {
        field(output.as_bytes());
    }
    field(b"inputs");
    for relative in inputs.files(&step.dir, above) {
        let path = step.dir.join(&relative);
        let digest = hash_file(&path, buffer).map_err(Error::io(&path))?;
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
