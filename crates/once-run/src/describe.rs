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
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

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
    /// The input files, by the hex SHA-256 of their content: the size and where to read each
    /// one's bytes (not held here, so describing a large tree costs no memory for its content).
    pub files: BTreeMap<String, (i64, PathBuf)>,
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
    Describer::new(plan, &environ, &hashes).describe(step, dep_actions, true)
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
    /// `Directory` messages encoded so far: each shared folder once (see `Folder::encoded`).
    encodings: AtomicUsize,
}

/// What describing an action for an engine adds to its lookup's description.
struct Execution {
    /// The steps it depends on, transitively: their outputs go into its input tree.
    upstream: Vec<usize>,
    platform: reapi::Platform,
}

/// A folder, its input globs and the globs they exclude.
type WalkId = (PathBuf, Vec<String>, Vec<String>);

/// The files a walk found, as a tree from the workspace root. Shared, never changed: an input
/// tree takes it in whole (see `merge`), and a folder only one walk fills stays the walk's own,
/// encoded once however many input trees hold it.
type Listing = Arc<Folder>;

/// A file of the input tree.
#[derive(Clone)]
struct Entry {
    digest: reapi::Digest,
    executable: bool,
    path: PathBuf,
}

/// A folder of the input tree, by name. Subfolders are shared between trees; a folder is
/// changed only through `open`, which copies a shared one first and forgets its encoding.
#[derive(Default, Clone)]
struct Folder {
    files: BTreeMap<String, Entry>,
    folders: BTreeMap<String, Arc<Folder>>,
    /// Its `Directory` message and that message's digest, once asked for.
    encoded: OnceLock<(reapi::Digest, Arc<Vec<u8>>)>,
}

/// `folder`, to change: copied first when another tree shares it, and its encoding forgotten.
fn open(folder: &mut Arc<Folder>) -> &mut Folder {
    let folder = Arc::make_mut(folder);
    folder.encoded = OnceLock::new();
    folder
}

/// Puts `entry` at the root-relative path `rooted` of `root`, making the folders on the way.
fn insert(root: &mut Arc<Folder>, rooted: &str, entry: Entry) {
    let mut parts: Vec<&str> = rooted.split('/').collect();
    let Some(name) = parts.pop() else {
        return;
    };
    let mut folder = open(root);
    for part in parts {
        folder = open(folder.folders.entry(part.to_owned()).or_default());
    }
    folder.files.insert(name.to_owned(), entry);
}

/// Adds every file of `from` to `into`, as inserting them one by one would, but takes in whole
/// (shared, not copied) each folder of `from` that `into` does not have: merging the listings
/// of a thousand packages touches the folders they share, not their files.
fn merge(into: &mut Arc<Folder>, from: &Arc<Folder>) {
    if Arc::ptr_eq(into, from) {
        return;
    }
    let folder = open(into);
    for (name, entry) in &from.files {
        folder.files.insert(name.clone(), entry.clone());
    }
    for (name, inner) in &from.folders {
        match folder.folders.get_mut(name) {
            Some(mine) => merge(mine, inner),
            None => {
                folder.folders.insert(name.clone(), Arc::clone(inner));
            }
        }
    }
}

/// Takes the file at the root-relative path `rooted` out of `root`, if it is there; folders
/// that do not hold it stay shared.
fn remove(root: &mut Arc<Folder>, rooted: &str) {
    let (parent, name) = match rooted.rsplit_once('/') {
        Some((parent, name)) => (Some(parent), name),
        None => (None, rooted),
    };
    let Some(parent) = parent else {
        if root.files.contains_key(name) {
            open(root).files.remove(name);
        }
        return;
    };
    let (first, rest) = parent.split_once('/').unwrap_or((parent, ""));
    let Some(inner) = root.folders.get(first) else {
        return;
    };
    let inner_path = if rest.is_empty() {
        name.to_owned()
    } else {
        format!("{rest}/{name}")
    };
    if !holds(inner, &inner_path) {
        return;
    }
    if let Some(inner) = open(root).folders.get_mut(first) {
        remove(inner, &inner_path);
    }
}

/// Whether `folder` has a file at the relative path `rooted`.
fn holds(folder: &Folder, rooted: &str) -> bool {
    match rooted.split_once('/') {
        Some((first, rest)) => folder
            .folders
            .get(first)
            .is_some_and(|inner| holds(inner, rest)),
        None => folder.files.contains_key(rooted),
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
            encodings: AtomicUsize::new(0),
        }
    }

    /// Describes step `i` of the plan. Its salt needs its dependencies' `Action` digests: those
    /// not described yet are described first (their indices are smaller: the plan lists
    /// dependencies first), each once per describer.
    pub(crate) fn describe_step(&self, i: usize) -> Result<Described, Error> {
        self.describe_with_deps(i, true)
    }

    /// The `Action` digest of step `i`: what a lookup needs, without the messages and files an
    /// upload needs (collecting those costs as much as the input tree has folders and files).
    pub(crate) fn action_digest_of_step(&self, i: usize) -> Result<reapi::Digest, Error> {
        if let Some(digest) = self.action_of(i) {
            return Ok(digest);
        }
        Ok(self.describe_with_deps(i, false)?.action_digest)
    }

    /// Step `i` described for an engine to run it: the lookup's description, with the outputs
    /// of every action it depends on (transitively, as they lie in the workspace now) added to
    /// its input tree, its deadline as the `Action`'s timeout, and `platform`. Its `Action`
    /// differs from the lookup's, which a lookup can describe before its dependencies' outputs
    /// exist; the scheduler records the result under the lookup's too.
    pub(crate) fn describe_for_execution(
        &self,
        i: usize,
        platform: reapi::Platform,
    ) -> Result<Described, Error> {
        self.action_digest_of_step(i)?;
        let step = &self.plan.steps[i];
        let deps: Vec<reapi::Digest> = step
            .deps
            .iter()
            .filter_map(|&d| self.action_of(d))
            .collect();
        let execution = Execution {
            upstream: self.upstream_steps(i),
            platform,
        };
        self.describe_as(step, &deps, true, Some(&execution))
    }

    /// The steps step `i` depends on, transitively, in plan order.
    fn upstream_steps(&self, i: usize) -> Vec<usize> {
        let steps = &self.plan.steps;
        let mut seen = vec![false; steps.len()];
        let mut stack: Vec<usize> = steps[i].deps.clone();
        while let Some(d) = stack.pop() {
            if !std::mem::replace(&mut seen[d], true) {
                stack.extend(steps[d].deps.iter().copied());
            }
        }
        (0..steps.len()).filter(|&d| seen[d]).collect()
    }

    /// Describes step `i`, and first those of its dependencies not described yet.
    fn describe_with_deps(&self, i: usize, full: bool) -> Result<Described, Error> {
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
            self.describe_known(d, false)?;
        }
        self.describe_known(i, full)
    }

    /// Describes step `i`, whose dependencies are all described.
    fn describe_known(&self, i: usize, full: bool) -> Result<Described, Error> {
        let step = &self.plan.steps[i];
        let deps: Vec<reapi::Digest> = step
            .deps
            .iter()
            .filter_map(|&d| self.action_of(d))
            .collect();
        let described = self.describe(step, &deps, full)?;
        lock(&self.actions).insert(i, described.action_digest.clone());
        Ok(described)
    }

    fn action_of(&self, i: usize) -> Option<reapi::Digest> {
        lock(&self.actions).get(&i).cloned()
    }

    /// `step` described; `full` adds the `Directory` messages and input files an upload needs,
    /// which a lookup does not.
    fn describe(
        &self,
        step: &Step,
        dep_actions: &[reapi::Digest],
        full: bool,
    ) -> Result<Described, Error> {
        self.describe_as(step, dep_actions, full, None)
    }

    /// `step` described, for a lookup or (with `execution`) for an engine to run.
    fn describe_as(
        &self,
        step: &Step,
        dep_actions: &[reapi::Digest],
        full: bool,
        execution: Option<&Execution>,
    ) -> Result<Described, Error> {
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

        let mut tree = self.input_tree(step, &mut buffer)?;
        if let Some(execution) = execution {
            self.add_upstream_outputs(&mut tree, &execution.upstream, &mut buffer)?;
        }
        let mut files = BTreeMap::new();
        let input_root_digest = encoded(&tree, &self.encodings).0.clone();

        let action = reapi::Action {
            command_digest: Some(command_digest),
            input_root_digest: Some(input_root_digest),
            timeout: execution.map(|_| prost_types::Duration {
                seconds: i64::try_from(step.deadline.as_secs()).unwrap_or(i64::MAX),
                nanos: i32::try_from(step.deadline.subsec_nanos()).unwrap_or(0),
            }),
            do_not_cache: false,
            salt: salt.finish(),
            platform: execution.map(|e| e.platform.clone()),
        };
        let action_digest = store(action.encode_to_vec());
        if full {
            collect(&tree, &mut blobs, &mut files);
        }
        Ok(Described {
            action,
            action_digest,
            blobs,
            files,
        })
    }

    /// Adds the outputs of the `upstream` steps, as they lie in the workspace, to `tree`: what
    /// an action reads of its dependencies' work, which a worker has nowhere else.
    fn add_upstream_outputs(
        &self,
        tree: &mut Arc<Folder>,
        upstream: &[usize],
        buffer: &mut [u8],
    ) -> Result<(), Error> {
        for &d in upstream {
            let dep = &self.plan.steps[d];
            let folder = relative_folder(&dep.path);
            for relative in crate::cache::output_files(&dep.action, &dep.dir, &dep.outputs)? {
                let path = dep.dir.join(&relative);
                let metadata = std::fs::symlink_metadata(&path).map_err(Error::io(&path))?;
                if !metadata.is_file() {
                    continue;
                }
                let rooted = if folder.is_empty() {
                    relative
                } else {
                    format!("{folder}/{relative}")
                };
                let (rooted, entry) = self.entry(rooted, &metadata, buffer)?;
                insert(tree, &rooted, entry);
            }
        }
        Ok(())
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
    fn input_tree(&self, step: &Step, buffer: &mut [u8]) -> Result<Arc<Folder>, Error> {
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
        let mut tree = Arc::new(Folder::default());
        for list in &lists {
            merge(&mut tree, list);
        }
        // Never the env-file: its values are secrets, keyed by hash in the salt.
        if let Some(env_file) = step.env_file.as_deref() {
            remove(&mut tree, env_file);
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
        let mut tree = Arc::new(Folder::default());
        for (rooted, entry) in files {
            insert(&mut tree, &rooted, entry);
        }
        lock(&self.walked).insert(id, Arc::clone(&tree));
        Ok(tree)
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

/// The `Directory` message of `folder` and its digest, encoded (with everything below it) the
/// first time it is asked for and kept in the folder: a folder shared by many input trees is
/// encoded once. Names come out sorted (by `BTreeMap`, bytewise, which is code point order for
/// UTF-8), as REAPI requires of a canonical `Directory`.
fn encoded<'f>(folder: &'f Folder, encodings: &AtomicUsize) -> &'f (reapi::Digest, Arc<Vec<u8>>) {
    folder.encoded.get_or_init(|| {
        encodings.fetch_add(1, Ordering::Relaxed);
        let directories = folder
            .folders
            .iter()
            .map(|(name, inner)| reapi::DirectoryNode {
                name: name.clone(),
                digest: Some(encoded(inner, encodings).0.clone()),
            })
            .collect();
        let file_nodes = folder
            .files
            .iter()
            .map(|(name, entry)| reapi::FileNode {
                name: name.clone(),
                digest: Some(entry.digest.clone()),
                is_executable: entry.executable,
                node_properties: None,
            })
            .collect();
        let bytes = reapi::Directory {
            files: file_nodes,
            directories,
            ..reapi::Directory::default()
        }
        .encode_to_vec();
        (digest_of(&bytes), Arc::new(bytes))
    })
}

/// Every `Directory` message of the encoded `folder` and below into `blobs`, and every input
/// file into `files` (by content digest, the first path found with it).
fn collect(
    folder: &Folder,
    blobs: &mut BTreeMap<String, Vec<u8>>,
    files: &mut BTreeMap<String, (i64, PathBuf)>,
) {
    for inner in folder.folders.values() {
        collect(inner, blobs, files);
    }
    for entry in folder.files.values() {
        files
            .entry(entry.digest.hash.clone())
            .or_insert_with(|| (entry.digest.size_bytes, entry.path.clone()));
    }
    if let Some((digest, bytes)) = folder.encoded.get() {
        blobs
            .entry(digest.hash.clone())
            .or_insert_with(|| bytes.to_vec());
    }
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

    /// A chain of packages, each depending on the one before, so that the input tree of the
    /// last action holds the sources of every package: encoding each tree anew would cost the
    /// square of the chain's length in `Directory` messages.
    #[test]
    fn a_folder_shared_by_many_input_trees_is_encoded_once() {
        const CHAIN: usize = 40;
        let root = std::env::temp_dir().join(format!("once-describe-chain-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let mut manifest = String::new();
        for i in 0..CHAIN {
            manifest += &format!(
                "[targets.p{i}]\nkind = \"command\"\npath = \"packages/p{i}\"\n{deps}\
                 [targets.p{i}.capabilities.build]\ncommand = \"true\"\ninputs = [\"src/**\"]\n{build_deps}\n",
                deps = if i == 0 {
                    String::new()
                } else {
                    format!("deps = [\"p{}\"]\n", i - 1)
                },
                build_deps = if i == 0 {
                    String::new()
                } else {
                    format!("deps = [\"p{}:build\"]\n", i - 1)
                },
            );
            let src = root.join(format!("packages/p{i}/src"));
            std::fs::create_dir_all(&src).unwrap();
            std::fs::write(src.join("a.txt"), format!("{i}\n")).unwrap();
        }
        std::fs::write(root.join("once.toml"), manifest).unwrap();
        let workspace = once_graph::Workspace::load(&root).unwrap();
        assert!(!workspace.has_errors(), "{:?}", workspace.diagnostics());
        let request = crate::Request {
            actions: vec![format!("p{}:build", CHAIN - 1)],
            ..crate::Request::default()
        };
        let plan = crate::plan(&workspace, &request).unwrap();
        assert_eq!(plan.steps.len(), CHAIN);
        let environ = Environ::new();
        let hashes = FileHashes::load(&root.join(".once/cache"));
        let describer = Describer::new(&plan, &environ, &hashes);
        let mut looked_up = Vec::new();
        for i in 0..CHAIN {
            looked_up.push(describer.action_digest_of_step(i).unwrap());
        }
        let encoded = describer.encodings.load(Ordering::Relaxed);
        // Two folders per package (`packages/pN`, its `src`), encoded once each, and the few
        // folders every tree merges anew (the root, `packages`) per action.
        assert!(
            encoded <= 4 * CHAIN,
            "{encoded} `Directory` messages encoded for {CHAIN} actions"
        );
        // The full description (for an upload) names the same action and every folder's message.
        let full = Describer::new(&plan, &environ, &hashes);
        let last = full.describe_step(CHAIN - 1).unwrap();
        assert_eq!(last.action_digest, looked_up[CHAIN - 1]);
        // Action, Command, the root, `packages`, and two folders per package.
        assert_eq!(last.blobs.len(), 4 + 2 * CHAIN);
        assert_eq!(last.files.len(), CHAIN);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn the_root_folder_is_empty() {
        assert_eq!(relative_folder("."), "");
        assert_eq!(relative_folder("a/b"), "a/b");
    }
}
