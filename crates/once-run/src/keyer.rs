//! The keys of a plan's actions, computed the one way both a run and a preview of one
//! (`once run --dry-run`) compute them: a folder's sources walked and hashed once per set of
//! globs, each source set's digest taken once, the `.gitignore` files above a target read once,
//! all shared by the threads that ask.
//!
//! It reads files and the file-hash cache it is given, and must never write anything: whether
//! what it learned is saved is the caller's choice (a run saves it, a preview does not).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use ignore::gitignore::Gitignore;

use crate::environ::Environ;
use crate::error::Error;
use crate::hashes::FileHashes;
use crate::key::{
    Inputs, Key, Source, action_key, folders_above, gitignore, source_digest, source_files,
};
use crate::plan::{Plan, Step};

/// Input globs and the output globs they exclude, which together decide an [`Inputs`].
type GlobLists = (Vec<String>, Vec<String>);

/// Computes the keys of one plan's actions, once per run.
pub(crate) struct Keyer<'a> {
    plan: &'a Plan,
    /// Digests of files hashed before, proven current by a `stat`.
    hashes: &'a FileHashes,
    /// Our environment, read once, and the programs commands start.
    environ: &'a Environ,
    /// Compiled input globs, shared by the many actions that declare the same ones.
    inputs: Mutex<HashMap<GlobLists, Arc<Inputs>>>,
    /// The `.gitignore` of each folder above a target, read once per run.
    ignores: Mutex<HashMap<PathBuf, Arc<Gitignore>>>,
    /// The digest of each dependency's sources, by folder and globs: taken once per run, as
    /// each of its dependents' keys needs it (a workspace of a thousand targets would otherwise
    /// walk the same folders a thousand times).
    sources: Mutex<HashMap<(PathBuf, GlobLists), blake3::Hash>>,
    /// The digest of each of the plan's source sets (by index in `Plan::sources`): its members'
    /// sources and the digests of the sets it depends on, taken once per run.
    sets: Mutex<HashMap<usize, blake3::Hash>>,
}

impl<'a> Keyer<'a> {
    /// Whether `step` asks for a secret: a secret-looking variable it declares in `env` or
    /// names in `pass-env`, or one of its env-file. Such an action never leaves this machine,
    /// where an engine's worker would run it without the value. A build tool's variable that
    /// only looks secret (inherited, keyed by hash) is not asked for: it stays home unsent.
    pub(crate) fn holds_secrets(&self, step: &crate::plan::Step) -> bool {
        self.environ.keyed(step).keys().any(|name| {
            crate::environ::hidden(step, name)
                && (step.env.contains_key(name)
                    || step.env_file_vars.iter().any(|v| v == name)
                    || step
                        .pass_env
                        .iter()
                        .any(|glob| once_exec::env_glob_matches(glob, name)))
        })
    }

    pub(crate) fn new(plan: &'a Plan, hashes: &'a FileHashes, environ: &'a Environ) -> Keyer<'a> {
        Keyer {
            plan,
            hashes,
            environ,
            inputs: Mutex::new(HashMap::new()),
            ignores: Mutex::new(HashMap::new()),
            sources: Mutex::new(HashMap::new()),
            sets: Mutex::new(HashMap::new()),
        }
    }

    /// The compiled inputs of `globs` minus `excluded`, shared by every action with the same.
    fn inputs(
        &self,
        action: &str,
        globs: &[String],
        excluded: &[&[String]],
    ) -> Result<Arc<Inputs>, Error> {
        let id = (globs.to_vec(), excluded.concat());
        let mut compiled = self.inputs.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(inputs) = compiled.get(&id) {
            return Ok(Arc::clone(inputs));
        }
        let inputs = Arc::new(Inputs::new(action, globs, id.1.iter())?);
        compiled.insert(id, Arc::clone(&inputs));
        Ok(inputs)
    }

    /// The key of `step`: its own sources, the sources of the targets it depends on, and its
    /// dependencies' keys.
    pub(crate) fn key(
        &self,
        step: &Step,
        dep_keys: &[Key],
        buffer: &mut [u8],
    ) -> Result<Key, Error> {
        let own = self.source(
            &step.action,
            &step.dir,
            &step.inputs,
            &[&step.outputs, &step.written],
            buffer,
        )?;
        let upstream: Vec<blake3::Hash> = step
            .upstream
            .iter()
            .map(|&set| self.set_digest(&step.action, set, buffer))
            .collect::<Result<_, Error>>()?;
        action_key(
            step,
            own,
            &upstream,
            dep_keys,
            self.environ,
            self.hashes,
            buffer,
        )
    }

    /// The digest of source set `set`: each member's folder and sources, then the digests of the
    /// sets it depends on, so it covers everything the members depend on, transitively. Taken
    /// once per run, after those of the sets it depends on (with an explicit stack: their indices
    /// are smaller, and a long chain must not overflow ours).
    pub(crate) fn set_digest(
        &self,
        action: &str,
        set: usize,
        buffer: &mut [u8],
    ) -> Result<blake3::Hash, Error> {
        let known = |i: usize| {
            self.sets
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&i)
                .copied()
        };
        let mut stack = vec![set];
        while let Some(&i) = stack.last() {
            if known(i).is_some() {
                stack.pop();
                continue;
            }
            let Some(source_set) = self.plan.sources.get(i) else {
                stack.pop();
                continue;
            };
            let missing: Vec<usize> = source_set
                .next
                .iter()
                .copied()
                .filter(|&n| known(n).is_none())
                .collect();
            if !missing.is_empty() {
                stack.extend(missing);
                continue;
            }
            let mut hasher = blake3::Hasher::new();
            let mut field = |bytes: &[u8]| {
                hasher.update(&(bytes.len() as u64).to_le_bytes());
                hasher.update(bytes);
            };
            field(b"members");
            for member in &source_set.members {
                let digest = self.source(
                    action,
                    &member.dir,
                    &member.inputs,
                    &[&member.outputs],
                    buffer,
                )?;
                field(member.path.as_bytes());
                field(digest.as_bytes());
            }
            field(b"next");
            for &n in &source_set.next {
                field(
                    known(n)
                        .unwrap_or(blake3::Hash::from_bytes([0; 32]))
                        .as_bytes(),
                );
            }
            let digest = hasher.finalize();
            self.sets
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(i, digest);
            stack.pop();
        }
        Ok(known(set).unwrap_or(blake3::Hash::from_bytes([0; 32])))
    }

    /// The digest of the files of `dir` that `globs` minus `excluded` name, taken once per run:
    /// an action's own sources are the sources its dependents' keys need too (both exclude
    /// every output written inside the folder), so a folder is walked once per set of globs.
    fn source(
        &self,
        action: &str,
        dir: &Path,
        globs: &[String],
        excluded: &[&[String]],
        buffer: &mut [u8],
    ) -> Result<blake3::Hash, Error> {
        let mut excluded = excluded.concat();
        excluded.sort_unstable();
        excluded.dedup();
        let id = (dir.to_path_buf(), (globs.to_vec(), excluded));
        if let Some(digest) = self
            .sources
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&id)
        {
            return Ok(*digest);
        }
        let inputs = self.inputs(action, globs, &[&id.1.1])?;
        let digest = source_digest(
            &Source {
                dir,
                inputs: &inputs,
                above: &self.above(dir),
            },
            &self.plan.root,
            self.hashes,
            buffer,
        )?;
        self.sources
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, digest);
        Ok(digest)
    }

    /// The files of `step`'s own sources with their digests, walked as [`Keyer::key`] walks
    /// them (the same globs minus the same outputs): what its key's manifest lists. Walked
    /// afresh, not remembered: a run would otherwise hold every folder's listing.
    pub(crate) fn own_files(
        &self,
        step: &Step,
        buffer: &mut [u8],
    ) -> Result<Vec<(String, blake3::Hash)>, Error> {
        let mut excluded = [&step.outputs[..], &step.written[..]].concat();
        excluded.sort_unstable();
        excluded.dedup();
        let inputs = self.inputs(&step.action, &step.inputs, &[&excluded])?;
        source_files(
            &Source {
                dir: &step.dir,
                inputs: &inputs,
                above: &self.above(&step.dir),
            },
            &self.plan.root,
            self.hashes,
            buffer,
        )
    }

    /// The environment and file hashes keys are computed with.
    pub(crate) fn environ(&self) -> (&'a Environ, &'a FileHashes) {
        (self.environ, self.hashes)
    }

    fn above(&self, dir: &Path) -> Vec<Arc<Gitignore>> {
        folders_above(&self.plan.root, dir)
            .into_iter()
            .map(|folder| {
                let mut ignores = self.ignores.lock().unwrap_or_else(PoisonError::into_inner);
                Arc::clone(ignores.entry(folder).or_insert_with_key(|folder| {
                    Arc::new(gitignore(folder, self.hashes.witness()))
                }))
            })
            .collect()
    }
}
