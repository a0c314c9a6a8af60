//! An action as the Remote Execution API describes it: a `Command`, a Merkle tree of `Directory`
//! messages over its input files, and an `Action` naming both, each addressed by the SHA-256 of
//! its serialized bytes.
//!
//! Everything here is relative to the workspace root (the working directory, the input tree, the
//! program when it lives inside the workspace), so two clones in different folders describe an
//! action with the same bytes and share its results. What the local key covers and neither the
//! `Command` nor the files carry (the key's version, the action's name, its parameters, the
//! hashes of secret values, the program's identity, the dependencies' `Action` digests) goes into
//! the `Action`'s salt. This module must never put a secret value (a secret-looking variable, a
//! variable of an env-file, the env-file itself) into a message or the input tree, must never
//! follow a symbolic link, and must never write anything.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::fs::Metadata;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use ignore::gitignore::Gitignore;
use once_remote::{digest_of, reapi};
use prost::Message;
use sha2::{Digest as _, Sha256};

use crate::environ::{Environ, Program, hidden, secret_hash};
use crate::error::Error;
use crate::hashes::FileHashes;
use crate::key::{Inputs, KEY_VERSION, folders_above, gitignore};
use crate::plan::{Plan, Step};
use crate::witness::OFF;
use once_graph::inputs::literal_base;

/// Bumped whenever what goes into a description changes, with the key's own version beside it.
const DESCRIBE_VERSION: &[u8] = b"once-run describe v1\0";

/// An action described for a REAPI server.
#[derive(Debug, Clone)]
pub struct Described {
    pub action: reapi::Action,
    /// The SHA-256 digest of `action`'s serialized bytes: its key in the ActionCache.
    pub action_digest: reapi::Digest,
    /// The serialized `Action`, `Command` and `Directory` messages, by the hex SHA-256 of their
    /// bytes.
    pub blobs: BTreeMap<String, Vec<u8>>,
    /// The input files, by the hex SHA-256 of their content: where to read each one's bytes
    /// (not held here, so describing a large tree costs no memory for its content).
    pub files: BTreeMap<String, PathBuf>,
}

/// Describes every action of `plan`, in plan order (dependencies first, so each dependent's salt
/// can take in its dependencies' `Action` digests).
///
/// A file's SHA-256 comes from the file-hash cache when a stamp proves the file unchanged (a run
/// takes it in the same read as BLAKE3), so describing a workspace a run has hashed reads no
/// input file; the others are read once per call, and what is learned is not saved.
pub fn describe_all(plan: &Plan) -> Result<Vec<Described>, Error> {
    let environ = Environ::new();
    let hashes = FileHashes::load(&plan.root.join(".once/cache"));
    let describer = Describer::new(plan, &environ, &hashes);
    (0..plan.steps.len())
        .map(|i| describer.describe_step(i))
        .collect()
}

/// Describes `step` of `plan`, given its dependencies' `Action` digests in `step.deps` order.
pub fn describe(
    plan: &Plan,
    step: &Step,
    dep_actions: &[reapi::Digest],
) -> Result<Described, Error> {
    let environ = Environ::new();
    let hashes = FileHashes::load(&plan.root.join(".once/cache"));
    Describer::new(plan, &environ, &hashes).describe(step, dep_actions)
}

/// What describing the actions of one plan shares: the environment, the file-hash cache for the
/// files' and programs' digests (a run's own, or one loaded for the call and never saved), the
/// files hashed so far, and the `Action` digest of each step described so far. Shared by a run's
/// workers, which describe an action only when they ask the remote cache for it.
pub(crate) struct Describer<'a> {
    plan: &'a Plan,
    environ: &'a Environ,
    hashes: &'a FileHashes,
    ignores: Mutex<HashMap<PathBuf, Arc<Gitignore>>>,
    files: Mutex<HashMap<PathBuf, reapi::Digest>>,
    actions: Mutex<HashMap<usize, reapi::Digest>>,
    /// The files of each folder and set of globs walked so far (see `files_of`).
    walked: Mutex<HashMap<WalkId, Listing>>,
}

/// A folder, its input globs and the globs they exclude.
type WalkId = (PathBuf, Vec<String>, Vec<String>);

/// The files a walk found, by root-relative path.
type Listing = Arc<Vec<(String, Entry)>>;

/// A file of the input tree.
#[derive(Clone)]
struct Entry {
    digest: reapi::Digest,
    executable: bool,
    path: PathBuf,
}

/// A folder of the input tree, by name.
#[derive(Default)]
struct Folder {
    files: BTreeMap<String, Entry>,
    folders: BTreeMap<String, Folder>,
}

impl Folder {
    /// Puts `entry` at the root-relative path `rooted`, making the folders on the way.
    fn insert(&mut self, rooted: &str, entry: Entry) {
        let mut parts: Vec<&str> = rooted.split('/').collect();
        let Some(name) = parts.pop() else {
            return;
        };
        let mut folder = self;
        for part in parts {
            folder = folder.folders.entry(part.to_owned()).or_default();
        }
        folder.files.insert(name.to_owned(), entry);
    }
}

impl<'a> Describer<'a> {
    pub(crate) fn new(
        plan: &'a Plan,
        environ: &'a Environ,
        hashes: &'a FileHashes,
    ) -> Describer<'a> {
        Describer {
            plan,
            environ,
            hashes,
            ignores: Mutex::new(HashMap::new()),
            files: Mutex::new(HashMap::new()),
            actions: Mutex::new(HashMap::new()),
            walked: Mutex::new(HashMap::new()),
        }
    }

    /// Describes step `i` of the plan. Its salt needs its dependencies' `Action` digests: those
    /// not described yet are described first (their indices are smaller: the plan lists
    /// dependencies first), each once per describer.
    pub(crate) fn describe_step(&self, i: usize) -> Result<Described, Error> {
        let steps = &self.plan.steps;
        let mut needed: Vec<usize> = Vec::new();
        let mut stack: Vec<usize> = steps.get(i).map(|s| s.deps.clone()).unwrap_or_default();
        while let Some(d) = stack.pop() {
            if needed.contains(&d) || self.action_of(d).is_some() {
                continue;
            }
            needed.push(d);
            stack.extend(
                steps
                    .get(d)
                    .map(|s| s.deps.iter().copied())
                    .into_iter()
                    .flatten(),
            );
        }
        needed.sort_unstable();
        for d in needed {
            self.describe_known(d)?;
        }
        self.describe_known(i)
    }

    /// Describes step `i`, whose dependencies are all described.
    fn describe_known(&self, i: usize) -> Result<Described, Error> {
        let step = &self.plan.steps[i];
        let deps: Vec<reapi::Digest> = step
            .deps
            .iter()
            .filter_map(|&d| self.action_of(d))
            .collect();
        let described = self.describe(step, &deps)?;
        lock(&self.actions).insert(i, described.action_digest.clone());
        Ok(described)
    }

    fn action_of(&self, i: usize) -> Option<reapi::Digest> {
        lock(&self.actions).get(&i).cloned()
    }

    fn describe(&self, step: &Step, dep_actions: &[reapi::Digest]) -> Result<Described, Error> {
        let mut blobs = BTreeMap::new();
        let mut store = |bytes: Vec<u8>| {
            let digest = digest_of(&bytes);
            blobs.insert(digest.hash.clone(), bytes);
            digest
        };
        let mut buffer = vec![0; 64 * 1024];
        let folder = relative_folder(&step.path);

        let mut salt = Salt::default();
        salt.field(DESCRIBE_VERSION);
        salt.field(KEY_VERSION);
        salt.field(step.action.as_bytes());
        salt.field(
            serde_json::Value::from(serde_json::Map::from_iter(step.params.clone()))
                .to_string()
                .as_bytes(),
        );
        let mut environment = Vec::new();
        salt.field(b"secrets");
        for (name, value) in self.environ.keyed(step) {
            match value.to_str() {
                Some(text) if !hidden(step, &name) => {
                    environment.push(reapi::command::EnvironmentVariable {
                        name,
                        value: text.to_owned(),
                    });
                }
                // Secrets, and values a `Command` cannot spell (not UTF-8), by hash only.
                _ => {
                    salt.field(name.as_bytes());
                    salt.field(secret_hash(&value).as_bytes());
                }
            }
        }
        salt.field(b"program");
        let (program, path) = self.environ.identity(step, self.hashes, &mut buffer);
        match program {
            Program::Found { path, digest } => {
                salt.field(self.rooted(path.as_os_str()).as_bytes());
                salt.field(digest.as_bytes());
            }
            Program::Path => {
                salt.field(b"PATH");
                for entry in std::env::split_paths(&path) {
                    salt.field(self.rooted(entry.as_os_str()).as_bytes());
                }
            }
        }
        salt.field(b"deps");
        for dep in dep_actions {
            salt.field(dep.hash.as_bytes());
            salt.field(&dep.size_bytes.to_le_bytes());
        }

        let mut output_paths: Vec<String> = step
            .outputs
            .iter()
            .filter(|glob| !glob.starts_with('!'))
            .map(|glob| literal_base(glob).base)
            .collect();
        output_paths.sort_unstable();
        output_paths.dedup();
        let command = reapi::Command {
            arguments: vec!["sh".to_owned(), "-c".to_owned(), step.command.clone()],
            environment_variables: environment,
            output_paths,
            working_directory: folder.to_owned(),
            ..reapi::Command::default()
        };
        let command_digest = store(command.encode_to_vec());

        let tree = self.input_tree(step, &mut buffer)?;
        let mut files = BTreeMap::new();
        let input_root_digest = encode_folder(&tree, &mut store, &mut files);

        let action = reapi::Action {
            command_digest: Some(command_digest),
            input_root_digest: Some(input_root_digest),
            timeout: None,
            do_not_cache: false,
            salt: salt.finish(),
            platform: None,
        };
        let action_digest = store(action.encode_to_vec());
        Ok(Described {
            action,
            action_digest,
            blobs,
            files,
        })
    }

    /// `text` with the workspace root spelled `//`, so a path inside a clone names the same in
    /// every clone.
    fn rooted(&self, text: &OsStr) -> String {
        let path = Path::new(text);
        match path.strip_prefix(&self.plan.root) {
            Ok(inside) => format!("//{}", inside.to_string_lossy()),
            Err(_) => path.to_string_lossy().into_owned(),
        }
    }

    /// The files the local key hashes for `step`, by root-relative path: its own inputs, the
    /// root-relative ones, and the sources of every target it depends on, transitively; never
    /// its env-file.
    fn input_tree(&self, step: &Step, buffer: &mut [u8]) -> Result<Folder, Error> {
        let mut excluded: Vec<String> = step
            .outputs
            .iter()
            .chain(step.written.iter())
            .cloned()
            .collect();
        excluded.sort_unstable();
        excluded.dedup();
        let mut lists = vec![self.files_of(
            step,
            (&step.dir, &step.path),
            &step.inputs,
            &excluded,
            buffer,
        )?];
        let mut seen = vec![false; self.plan.sources.len()];
        let mut stack: Vec<usize> = step.upstream.clone();
        while let Some(set) = stack.pop() {
            let Some(source_set) = self.plan.sources.get(set) else {
                continue;
            };
            if std::mem::replace(&mut seen[set], true) {
                continue;
            }
            stack.extend(source_set.next.iter().copied());
            for member in &source_set.members {
                lists.push(self.files_of(
                    step,
                    (&member.dir, &member.path),
                    &member.inputs,
                    &member.outputs,
                    buffer,
                )?);
            }
        }
        let mut tree = Folder::default();
        for list in &lists {
            for (rooted, entry) in list.iter() {
                // Never the env-file: its values are secrets, keyed by hash in the salt.
                if step.env_file.as_deref() == Some(rooted.as_str()) {
                    continue;
                }
                tree.insert(rooted, entry.clone());
            }
        }
        Ok(tree)
    }

    /// The files that `globs` minus `excluded` name in the folder `dir` (`path` from the root),
    /// and the root-relative ones, by root-relative path with their digests: walked, and their
    /// globs compiled, once per describer, since a source folder is an input of every action
    /// that depends on its target (a thousand actions would otherwise walk it a thousand times).
    fn files_of(
        &self,
        step: &Step,
        (dir, path): (&Path, &str),
        globs: &[String],
        excluded: &[String],
        buffer: &mut [u8],
    ) -> Result<Listing, Error> {
        let id = (dir.to_path_buf(), globs.to_vec(), excluded.to_vec());
        if let Some(found) = lock(&self.walked).get(&id) {
            return Ok(Arc::clone(found));
        }
        let inputs = Inputs::new(&step.action, globs, excluded.iter())?;
        let folder = relative_folder(path);
        let mut files = Vec::new();
        for (relative, metadata) in inputs.files(dir, &self.above(dir), &OFF) {
            let rooted = if folder.is_empty() {
                relative
            } else {
                format!("{folder}/{relative}")
            };
            files.push(self.entry(rooted, &metadata, buffer)?);
        }
        for (rooted, metadata) in inputs.rooted_files(&self.plan.root, &OFF) {
            files.push(self.entry(rooted, &metadata, buffer)?);
        }
        let files = Arc::new(files);
        lock(&self.walked).insert(id, Arc::clone(&files));
        Ok(files)
    }

    fn entry(
        &self,
        rooted: String,
        metadata: &Metadata,
        buffer: &mut [u8],
    ) -> Result<(String, Entry), Error> {
        let path = self.plan.root.join(&rooted);
        let digest = self.sha256(&path, metadata, buffer)?;
        Ok((
            rooted,
            Entry {
                digest,
                executable: crate::file_facts::has_exec_bit(metadata),
                path,
            },
        ))
    }

    /// The SHA-256 digest of the file at `path`: from the file-hash cache when a stamp proves it,
    /// else read once per description of a plan.
    fn sha256(
        &self,
        path: &Path,
        metadata: &Metadata,
        buffer: &mut [u8],
    ) -> Result<reapi::Digest, Error> {
        if let Some(digest) = lock(&self.files).get(path) {
            return Ok(digest.clone());
        }
        let digests = self
            .hashes
            .digests(path, metadata, buffer)
            .map_err(Error::io(path))?;
        let digest = reapi::Digest {
            hash: hex(&digests.sha256),
            size_bytes: i64::try_from(digests.size).unwrap_or(i64::MAX),
        };
        lock(&self.files).insert(path.to_path_buf(), digest.clone());
        Ok(digest)
    }

    fn above(&self, dir: &Path) -> Vec<Arc<Gitignore>> {
        folders_above(&self.plan.root, dir)
            .into_iter()
            .map(|folder| {
                let mut ignores = lock(&self.ignores);
                Arc::clone(
                    ignores
                        .entry(folder)
                        .or_insert_with_key(|folder| Arc::new(gitignore(folder, &OFF))),
                )
            })
            .collect()
    }
}

/// Every update of these maps is one insert, which leaves them whole even if another thread
/// panicked while holding the lock.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A target's folder as REAPI spells it: `""` for the workspace root.
fn relative_folder(path: &str) -> &str {
    if path == "." { "" } else { path }
}

/// Serializes `folder` and everything below it, deepest first, and returns its digest. Names
/// come out sorted (by `BTreeMap`, bytewise, which is code point order for UTF-8), as REAPI
/// requires of a canonical `Directory`.
fn encode_folder(
    folder: &Folder,
    store: &mut impl FnMut(Vec<u8>) -> reapi::Digest,
    files: &mut BTreeMap<String, PathBuf>,
) -> reapi::Digest {
    let directories = folder
        .folders
        .iter()
        .map(|(name, inner)| reapi::DirectoryNode {
            name: name.clone(),
            digest: Some(encode_folder(inner, store, files)),
        })
        .collect();
    let file_nodes = folder
        .files
        .iter()
        .map(|(name, entry)| {
            files
                .entry(entry.digest.hash.clone())
                .or_insert_with(|| entry.path.clone());
            reapi::FileNode {
                name: name.clone(),
                digest: Some(entry.digest.clone()),
                is_executable: entry.executable,
                node_properties: None,
            }
        })
        .collect();
    store(
        reapi::Directory {
            files: file_nodes,
            directories,
            ..reapi::Directory::default()
        }
        .encode_to_vec(),
    )
}

/// The salt's bytes: a SHA-256 over length-prefixed fields, so no two different salts can be
/// spelled into the same byte stream.
#[derive(Default)]
struct Salt(Sha256);

impl Salt {
    fn field(&mut self, bytes: &[u8]) {
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
    }

    fn finish(self) -> Vec<u8> {
        self.0.finalize().to_vec()
    }
}

fn hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_lowercase_and_padded() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
    }

    #[test]
    fn the_root_folder_is_empty() {
        assert_eq!(relative_folder("."), "");
        assert_eq!(relative_folder("a/b"), "a/b");
    }
}
