//! The action cache under `.once/cache/`, in the spirit of Bazel's remote cache: an action's
//! result is recorded under its key, and `cas/<digest>` holds the bytes of one output file,
//! named by its BLAKE3. The results are kept in packs (`packs/`, see `packs.rs`), one file per
//! run that records any, not one per result. An output of at most [`INLINE_CAP`] bytes of UTF-8
//! is kept in its result instead (as Bazel's results may inline small outputs), so most small
//! build steps cost no file of their own in the cache.
//!
//! Every object is renamed into place and named by a hash, so concurrent writers of one object
//! write identical bytes and readers never see a torn one. Nothing is synced: a crash of the
//! machine may leave an object empty or torn, or a pack's last records torn, so nothing is
//! trusted unread. Each record of a pack carries the BLAKE3 of its key and result, and one that
//! fails it is a miss; an object is hashed while it is copied back, and one that does not match
//! its name is deleted and the action runs. That costs a cold build no fsync, at the price of the
//! last results before a power loss, which run again. The only lock on a key, its slot in
//! `locks/keys` (`once_fs::lock_slot`), keeps two processes from running one action at once,
//! not the store consistent. A result that cannot be read, or whose outputs are missing from
//! `cas/`, is a miss, never an error. Outputs are put back through `once_fs::Root`, walked from
//! the workspace root without following a link and never into `.git` or `.once`, so a restore
//! never writes anywhere a person did not have a real folder. This module must never record a
//! failed run.
//!
//! A result keeps its log: the log of the recorded run is one more `cas/` object (up to
//! [`LOG_CAP`]), a hard link to the run's log file (nothing writes a finished log), and a replay
//! names that object as the cached action's log, so it reads like any other. A log is not checked
//! on replay (that would cost a no-op run a read per action): after a power loss a replayed log
//! may be garbled, a result never. Naming costs nothing; linking it into each run's folder cost a no-op run of 1,000
//! cached actions 1,000 links, and every pruned run as many unlinks (+15% measured).

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::fetched::Fetched;
use crate::file_facts::has_exec_bit;
use crate::hashes::FileHashes;
use crate::key::Key;
use crate::packs::{KeyBytes, Packs};
use crate::prune::{self, CacheStats, Hold, Pruned, Readers, Wait};
use crate::witness::{OFF, Witness};
use once_fs::{Kind, Root, WorkspacePath, stage_name, temp_path, write_replacing};
use once_remote::{Blob, BlobFile};

/// What is recorded under an action's key: enough to replay a run without running it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionResult {
    pub action: String,
    pub exit_code: i32,
    pub duration_ms: u64,
    /// The last lines the command printed.
    pub tail: Vec<String>,
    pub outputs: Vec<OutputFile>,
    /// The BLAKE3 of the run's whole log, its object in `cas/`; absent for a log over
    /// [`LOG_CAP`] and in results recorded before logs were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
}

/// The largest log a result keeps; the tail of a longer one is still in the result.
pub const LOG_CAP: u64 = 4 * 1024 * 1024;

/// One output file, relative to the target's folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputFile {
    pub path: String,
    /// BLAKE3 of the content, hex; the name of its object in `cas/` unless `text` holds it.
    pub digest: String,
    pub size: u64,
    pub executable: bool,
    /// The content itself, for a text output of at most [`INLINE_CAP`] bytes: kept in the entry,
    /// with no object in `cas/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// Outputs up to this size that are UTF-8 text are kept in their entry (`OutputFile::text`), not
/// as objects of `cas/`: most build steps leave a few small text files, and each object is one
/// more file to create when it is recorded and to delete when the cache is wiped (on ext4 without
/// a journal, creating a file just after many were deleted costs far more than writing it). Small,
/// because a no-op run reads every entry.
pub const INLINE_CAP: u64 = 4 * 1024;

/// A fetched result named a blob it does not hold: a bug, reported as the cache's error (the
/// action then runs).
fn missing_blob(root: &Path) -> Error {
    Error::Io {
        path: root.join("cas"),
        source: io::Error::other("a downloaded blob went missing"),
    }
}

/// An output's content as the cache keeps it.
#[derive(Clone)]
struct Kept {
    digest: String,
    size: u64,
    text: Option<String>,
}

/// What a successful run left besides its outputs: how long it took, its last lines and its log.
#[derive(Debug, Clone)]
pub struct Ran<'a> {
    pub duration_ms: u64,
    pub tail: Vec<String>,
    /// Kept with the result when it is at most [`LOG_CAP`] bytes.
    pub log: Option<&'a Path>,
}

/// An exclusive lock on one cache key, or on a mutex; the kernel releases it when its file
/// closes, even if the process dies.
#[derive(Debug)]
pub struct KeyLock {
    _held: Held,
}

#[derive(Debug)]
enum Held {
    /// A key's slot in `locks/keys`: no file per key.
    Slot { _lock: once_fs::SlotLock },
    /// A file of its own, `locks/NAME` (a mutex, the journal's compaction).
    File { _lock: once_fs::Lock },
}

/// The cache of one workspace.
#[derive(Debug, Clone)]
pub struct Cache {
    /// The results: packs, objects, key locks and recency. The main worktree's `.once/cache`
    /// in a linked git worktree that shares it, else `local`.
    root: PathBuf,
    /// This workspace's own `.once/cache`: what describes its files (the file-hash cache, the
    /// journal of keys' parts), never shared, since it names this worktree's files.
    local: PathBuf,
    workspace: PathBuf,
    /// Whether `root` is another worktree's.
    shared: bool,
    /// The bound a run that recorded something prunes to when it ends over it.
    max_size: u64,
    /// This process's hold on the cache against a prune (see `prune.rs`).
    readers: Arc<Readers>,
    /// The prune generation the packs were read in.
    generation: Arc<Mutex<Option<u64>>>,
    /// Keys replayed or recorded by this run, for the journal of recency.
    used: Arc<Mutex<Vec<KeyBytes>>>,
    /// Whether this run recorded a result (only then can it have grown the cache).
    recorded: Arc<AtomicBool>,
    /// The folders of the cache this cache (or a clone) has made and proven free of links: each
    /// is checked once, not before every write.
    ready: Arc<Mutex<Vec<&'static str>>>,
    /// The workspace's folder, opened by the first restore and kept for the next ones.
    opened: Arc<Mutex<Option<Arc<Root>>>>,
    /// The recorded results, read at the first lookup.
    packs: Arc<Mutex<Packs>>,
}

impl Cache {
    /// The file-hash cache that goes with this cache, as it is now; a run loads it once.
    pub(crate) fn file_hashes(&self) -> FileHashes {
        FileHashes::load(&self.local)
    }

    /// The cache of the workspace at `workspace_root`, in its own `.once/cache/`, bounded by
    /// [`prune::DEFAULT_MAX_SIZE`].
    pub fn new(workspace_root: &Path) -> Cache {
        let local = workspace_root.join(".once").join("cache");
        Cache::at(workspace_root, local, false, prune::DEFAULT_MAX_SIZE)
    }

    /// The cache of the workspace at `workspace_root` as its manifest's `[cache]` sets it: in
    /// a linked git worktree, the main worktree's results unless `share-worktrees = false`
    /// (see `worktree.rs`); bounded by `max-size`.
    pub fn configured(workspace_root: &Path, settings: &once_graph::CacheSettings) -> Cache {
        let local = workspace_root.join(".once").join("cache");
        let max_size = settings.max_size.unwrap_or(prune::DEFAULT_MAX_SIZE);
        let main = match settings.share_worktrees {
            Some(false) => None,
            _ => crate::worktree::main_worktree_cache(workspace_root),
        };
        match main {
            Some(main) => Cache::at(workspace_root, main, true, max_size),
            None => Cache::at(workspace_root, local, false, max_size),
        }
    }

    fn at(workspace_root: &Path, root: PathBuf, shared: bool, max_size: u64) -> Cache {
        Cache {
            packs: Arc::new(Mutex::new(Packs::new(root.join("packs")))),
            root,
            local: workspace_root.join(".once").join("cache"),
            workspace: workspace_root.to_path_buf(),
            shared,
            max_size,
            readers: Arc::default(),
            generation: Arc::default(),
            used: Arc::default(),
            recorded: Arc::default(),
            ready: Arc::default(),
            opened: Arc::default(),
        }
    }

    /// Holds the cache's bytes against a prune while a lookup is restored or a result recorded
    /// (see `prune.rs`); packs read before a prune that ran since are read again.
    pub(crate) fn hold(&self) -> Result<Hold<'_>, Error> {
        let lock = self.folder("locks")?.join(prune::LOCK);
        let (hold, generation) = self.readers.hold(&lock)?;
        let mut seen = self
            .generation
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if *seen != Some(generation) {
            self.packs().forget();
            *seen = Some(generation);
        }
        Ok(hold)
    }

    /// Notes that `key`'s result was replayed: it is used, and goes after those that were not.
    pub(crate) fn used(&self, key: &Key) {
        self.used
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(*key.as_bytes());
    }

    /// Ends a run's use of the cache: the keys it used go to the journal of recency, and a run
    /// that recorded something prunes the cache when it is over its bound, unless another run
    /// holds it (a later run then will). Never fails a run: a problem is logged.
    pub(crate) fn settle(&self) {
        let used = std::mem::take(&mut *self.used.lock().unwrap_or_else(PoisonError::into_inner));
        if !used.is_empty() {
            let noted = self.hold().and_then(|_hold| {
                let path = self.root.join(prune::USED);
                prune::note_used(&path, &used).map_err(Error::io(&path))
            });
            if let Err(error) = noted {
                tracing::debug!(%error, "cannot note which results were used");
            }
        }
        // This run appends no more: its own pack may be pruned like the others.
        self.packs().finish();
        if self.recorded.load(Ordering::Relaxed)
            && let Err(error) = prune::prune(&self.root, self.max_size, false, Wait::Skip)
        {
            tracing::warn!(%error, "cannot prune the cache");
        }
    }

    /// What the cache holds (`once cache stats`).
    pub fn stats(&self) -> CacheStats {
        prune::stats(&self.root, self.shared, self.max_size)
    }

    /// Removes the least recently used results until the cache is under 80% of `max_size`
    /// (the configured bound by default), and every object no result names; waits for the runs
    /// that hold the cache (`once cache prune`).
    pub fn prune(&self, max_size: Option<u64>) -> Result<Pruned, Error> {
        let max_size = max_size.unwrap_or(self.max_size);
        prune::prune(&self.root, max_size, true, Wait::Block)?.ok_or_else(|| Error::Io {
            path: self.root.clone(),
            source: io::Error::other("the prune was skipped"),
        })
    }

    /// The workspace's folder, through which outputs are restored.
    fn workspace_root(&self) -> io::Result<Arc<Root>> {
        let mut opened = self.opened.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(open) = opened.as_ref() {
            return Ok(Arc::clone(open));
        }
        let open = Arc::new(Root::open(&self.workspace)?);
        *opened = Some(Arc::clone(&open));
        Ok(open)
    }

    /// The folder `name` of the cache, made (never through a link, see [`state_dir`]) the first
    /// time this cache asks for it.
    fn folder(&self, name: &'static str) -> Result<PathBuf, Error> {
        let folder = match name {
            "" => self.root.clone(),
            name => self.root.join(name),
        };
        let mut ready = self.ready.lock().unwrap_or_else(PoisonError::into_inner);
        if !ready.contains(&name) {
            state_dir(&folder)?;
            ready.push(name);
        }
        Ok(folder)
    }

    fn packs(&self) -> std::sync::MutexGuard<'_, Packs> {
        // A panic while reading or appending leaves at worst a record unindexed: a miss.
        self.packs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reads the results other runs recorded since this one last looked: for the look-up made
    /// after taking a key's lock, which another run may have held to record that very key.
    pub(crate) fn look_again(&self) {
        self.packs().refresh();
    }

    fn cas(&self, digest: &str) -> PathBuf {
        self.root.join("cas").join(digest)
    }

    /// The journal of keys' parts (see `journal.rs`), its folder made if missing.
    pub(crate) fn journal_path(&self) -> Result<PathBuf, Error> {
        state_dir(&self.local)?;
        Ok(self.local.join(JOURNAL))
    }

    /// The journal of keys' parts, for reading.
    pub(crate) fn journal_file(&self) -> PathBuf {
        self.local.join(JOURNAL)
    }

    /// Where the object named `digest` (a BLAKE3, hex) is kept.
    pub(crate) fn object_path(&self, digest: &str) -> PathBuf {
        self.cas(digest)
    }

    /// Holds an exclusive lock on `key` until the guard drops, waiting for another process (or
    /// thread) that holds it. Two `once run` on one workspace thus never run the same action in
    /// the same folder at once: the second waits, then finds the first one's result.
    ///
    /// Every key shares the file `locks/keys`, each locking the slot its first 8 bytes name
    /// (`once_fs::lock_slot`), so a cold build makes one lock file, not one per action.
    pub fn lock(&self, key: &Key) -> Result<KeyLock, Error> {
        let path = self.folder("locks")?.join("keys");
        let slot = u64::from_le_bytes(key.prefix());
        match once_fs::lock_slot(&path, slot) {
            Ok(held) => Ok(KeyLock {
                _held: Held::Slot { _lock: held },
            }),
            Err(source) => Err(Error::Io { path, source }),
        }
    }

    /// Holds the workspace-wide lock of `mutex` (`locks/mutex-NAME`, beside the keys' locks)
    /// until the guard drops: actions naming it never run at once, whichever `once` runs them.
    pub(crate) fn lock_mutex(&self, mutex: &str) -> Result<KeyLock, Error> {
        self.exclusive(&format!("mutex-{mutex}"))
    }

    /// An exclusive lock on the file `locks/NAME`, waited for.
    pub(crate) fn exclusive(&self, name: &str) -> Result<KeyLock, Error> {
        let path = self.folder("locks")?.join(name);
        match once_fs::lock(&path) {
            Ok(lock) => Ok(KeyLock {
                _held: Held::File { _lock: lock },
            }),
            Err(source) => Err(Error::Io { path, source }),
        }
    }

    /// The recorded result of `key`, if any and readable.
    pub fn lookup(&self, key: &Key) -> Option<ActionResult> {
        self.lookup_seen(key, &OFF)
    }

    /// [`Cache::lookup`], the pack it came from recorded in `witness` as it was read.
    pub(crate) fn lookup_seen(&self, key: &Key, witness: &Witness) -> Option<ActionResult> {
        let json = self.packs().find(key.as_bytes(), witness)?;
        match serde_json::from_slice(&json) {
            Ok(result) => Some(result),
            Err(error) => {
                // Its checksum holds, so another version of `once` wrote it.
                tracing::warn!(key = %key.to_hex(), %error, "unreadable cache entry: treated as a miss");
                None
            }
        }
    }

    /// Puts every output of `result` back under `dir`, byte for byte; files already identical
    /// are left alone (most are proven so by a `stat` against the file-hash cache, without
    /// reading them). Fails (and the caller runs the action) when an object is missing, or when
    /// an output's path leads through a link or into `.git` or `.once`.
    pub(crate) fn restore(
        &self,
        dir: &Path,
        result: &ActionResult,
        hashes: &FileHashes,
        buffer: &mut [u8],
    ) -> Result<(), Error> {
        let root = self.workspace_root().map_err(Error::io(&self.workspace))?;
        let target = dir
            .strip_prefix(&self.workspace)
            .ok()
            .and_then(slashed)
            .ok_or_else(|| Error::Io {
                path: dir.to_path_buf(),
                source: io::Error::other("the target's folder is not inside the workspace"),
            })?;
        for output in &result.outputs {
            let dest = dir.join(&output.path);
            let refused = |error: once_fs::PathError| Error::Io {
                path: dest.clone(),
                source: io::Error::other(error),
            };
            // `parse` drops empty and `.` components, so a target at the root needs no case.
            let relative =
                WorkspacePath::parse(&format!("./{target}/{}", output.path)).map_err(refused)?;
            let same = match root.kind(&relative).map_err(refused)? {
                Some(Kind::File(size)) if size == output.size => fs::symlink_metadata(&dest)
                    .is_ok_and(|m| {
                        hashes
                            .digest(&dest, &m, buffer)
                            .is_ok_and(|d| d.to_hex().as_str() == output.digest)
                    }),
                _ => false,
            };
            // `kind` walked here from the root without meeting a link (and `make_parent_of`
            // below makes real folders): a later proof must find the same real folders.
            let mut folder = dest.parent();
            while let Some(path) = folder.filter(|path| *path != self.workspace) {
                hashes.witness().directory(path);
                folder = path.parent();
            }
            if same {
                continue;
            }
            let source = self.cas(&output.digest);
            let (folder, _) = root.make_parent_of(&relative).map_err(refused)?;
            let temp = stage_name();
            let mode = if output.executable { 0o755 } else { 0o644 };
            let copied = (|| {
                let mut to = folder.create(&temp, mode)?;
                let digest = match &output.text {
                    Some(text) => copy_hashing(&mut text.as_bytes(), &mut to, buffer)?,
                    None => copy_hashing(&mut File::open(&source)?, &mut to, buffer)?,
                };
                if digest.to_hex().as_str() != output.digest {
                    // Objects are not synced: a crash can leave one torn. Never restore it, and
                    // drop it so that the next success records it afresh. (A text kept in the
                    // entry is covered by the entry's checksum; this is the same check.)
                    if output.text.is_none() {
                        let _ = fs::remove_file(&source);
                    }
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "the cached object does not match its digest",
                    ));
                }
                // The umask may have cleared bits the output had.
                #[cfg(unix)]
                {
                    use std::os::unix::fs::PermissionsExt;
                    to.set_permissions(fs::Permissions::from_mode(mode))?;
                }
                let written = to.metadata()?;
                folder.rename(&temp, relative.name())?;
                Ok((written, digest))
            })();
            match copied {
                // What a later proof must find there: this content. Its stamp, taken just now,
                // is racy and proves nothing, so the check compares the content itself.
                Ok((written, digest)) => hashes.witness().file(&dest, &written, &digest),
                Err(error) => {
                    let _ = folder.remove_file(&temp);
                    return Err(Error::Io {
                        path: if output.text.is_some() { dest } else { source },
                        source: error,
                    });
                }
            }
        }
        Ok(())
    }

    /// Stores the outputs of a successful run of `action` in `dir` (the files matching the
    /// `outputs` globs, ignored files included) and its result under `key`.
    pub fn record(
        &self,
        key: &Key,
        action: &str,
        dir: &Path,
        outputs: &[String],
        ran: Ran<'_>,
    ) -> Result<ActionResult, Error> {
        let mut files = Vec::new();
        for relative in output_files(action, dir, outputs)? {
            let path = dir.join(&relative);
            let Kept { digest, size, text } = self.store_object(&path)?;
            let executable = fs::metadata(&path).is_ok_and(|m| has_exec_bit(&m));
            files.push(OutputFile {
                path: relative,
                digest,
                size,
                executable,
                text,
            });
        }
        // A log that cannot be kept costs its replay the log, never the result.
        let Ran {
            duration_ms,
            tail,
            log,
        } = ran;
        let log = log
            .and_then(|path| match fs::metadata(path) {
                Ok(meta) if meta.len() > LOG_CAP => None,
                Ok(_) => Some(self.store_log(path)),
                // A command that printed nothing left no log file: its log is empty.
                Err(error) if error.kind() == io::ErrorKind::NotFound => {
                    Some(self.store_bytes(b""))
                }
                Err(error) => Some(Err(Error::io(path)(error))),
            })
            .and_then(|stored| match stored {
                Ok(digest) => Some(digest),
                Err(error) => {
                    tracing::debug!(%error, "cannot keep the log with the result");
                    None
                }
            });
        let result = ActionResult {
            action: action.to_owned(),
            exit_code: 0,
            duration_ms,
            tail,
            outputs: files,
            log,
        };
        self.write_entry(key, result)
    }

    /// Stores a result downloaded from the remote cache under `key`: its outputs' and log's
    /// bytes (already verified against their digests) as objects, a staging file moved into
    /// place rather than copied, then the entry, so a later run replays it locally. Nothing is
    /// restored here.
    pub(crate) fn record_fetched(
        &self,
        key: &Key,
        action: &str,
        fetched: Fetched,
    ) -> Result<ActionResult, Error> {
        let Fetched {
            blobs,
            outputs: fetched_outputs,
            log: log_index,
            duration_ms,
        } = fetched;
        // A blob in memory is kept per use (`cas/` skips an object it has); a staging file is
        // moved into `cas/` at its first use, and later uses name that object.
        let mut blobs: Vec<Option<Blob>> = blobs.into_iter().map(Some).collect();
        let mut moved: Vec<Option<Kept>> = vec![None; blobs.len()];
        let mut keep = |index: usize, as_object: bool| -> Result<Kept, Error> {
            if let Some(Some(kept)) = moved.get(index) {
                return Ok(kept.clone());
            }
            match blobs.get_mut(index) {
                Some(Some(Blob::Memory(bytes))) if as_object => Ok(Kept {
                    digest: self.store_bytes(bytes)?,
                    size: bytes.len() as u64,
                    text: None,
                }),
                Some(Some(Blob::Memory(bytes))) => self.keep_bytes(bytes.to_vec()),
                Some(slot) => match slot.take() {
                    Some(Blob::File(file)) => {
                        let kept = self.keep_file(file)?;
                        moved[index] = Some(kept.clone());
                        Ok(kept)
                    }
                    _ => Err(missing_blob(&self.root)),
                },
                None => Err(missing_blob(&self.root)),
            }
        };
        let mut outputs = Vec::with_capacity(fetched_outputs.len());
        for (path, index, executable) in fetched_outputs {
            let Kept { digest, size, text } = keep(index, false)?;
            outputs.push(OutputFile {
                path,
                digest,
                size,
                executable,
                text,
            });
        }
        let log = match log_index {
            Some(index) => Some(keep(index, true)?.digest),
            None => None,
        };
        let result = ActionResult {
            action: action.to_owned(),
            exit_code: 0,
            duration_ms,
            tail: Vec::new(),
            outputs,
            log,
        };
        self.write_entry(key, result)
    }

    /// The folder where downloads stage their large blobs: `cas/` itself, so that a verified
    /// blob is renamed into place, and a staging file left by a crash is swept with the others.
    pub(crate) fn staging_folder(&self) -> Result<PathBuf, Error> {
        self.folder("cas")
    }

    /// Moves a verified download into `cas/` under its BLAKE3, read once to name it.
    fn keep_file(&self, file: BlobFile) -> Result<Kept, Error> {
        let failed = |source| Error::Io {
            path: file.path().to_path_buf(),
            source,
        };
        let mut source = File::open(file.path()).map_err(failed)?;
        let mut hasher = blake3::Hasher::new();
        let size = io::copy(&mut source, &mut hasher).map_err(failed)?;
        let digest = hasher.finalize().to_hex().to_string();
        let dest = self.cas(&digest);
        if !dest.exists() {
            file.keep(&dest).map_err(Error::io(&dest))?;
        }
        Ok(Kept {
            digest,
            size,
            text: None,
        })
    }

    fn write_entry(&self, key: &Key, result: ActionResult) -> Result<ActionResult, Error> {
        let folder = self.folder("packs")?;
        let json = serde_json::to_vec(&result).map_err(|e| Error::Io {
            path: folder.clone(),
            source: io::Error::other(e),
        })?;
        let locks = self.folder("locks")?;
        self.packs()
            .append(key.as_bytes(), &json, &locks)
            .map_err(Error::io(&folder))?;
        self.recorded.store(true, Ordering::Relaxed);
        self.used(key);
        Ok(result)
    }

    /// The log kept with `result`, if it kept one: its object in `cas/`, which nothing ever
    /// writes again (its name is its content's hash).
    pub(crate) fn replay_log(&self, result: &ActionResult) -> Option<PathBuf> {
        result.log.as_deref().map(|digest| self.cas(digest))
    }

    /// Stores `bytes` as an object of `cas/` and returns its name.
    fn store_bytes(&self, bytes: &[u8]) -> Result<String, Error> {
        let folder = self.folder("cas")?;
        let digest = blake3::hash(bytes).to_hex().to_string();
        let dest = folder.join(&digest);
        if !dest.exists() {
            write_replacing(&dest, bytes).map_err(Error::io(&dest))?;
        }
        Ok(digest)
    }

    /// Keeps `bytes` in the entry when they are short text, else as an object of `cas/`.
    fn keep_bytes(&self, bytes: Vec<u8>) -> Result<Kept, Error> {
        let size = bytes.len() as u64;
        let bytes = if size <= INLINE_CAP {
            match String::from_utf8(bytes) {
                Ok(text) => {
                    return Ok(Kept {
                        digest: blake3::hash(text.as_bytes()).to_hex().to_string(),
                        size,
                        text: Some(text),
                    });
                }
                Err(binary) => binary.into_bytes(),
            }
        } else {
            bytes
        };
        Ok(Kept {
            digest: self.store_bytes(&bytes)?,
            size,
            text: None,
        })
    }

    /// Keeps the output at `path` (see [`keep_bytes`](Self::keep_bytes)); a large one is copied
    /// into `cas/`, hashed while copying so the name matches the bytes stored even if the file
    /// changes meanwhile. A file up to [`SMALL_OBJECT`] is read whole first, so an object the
    /// cache already has costs no write.
    fn store_object(&self, path: &Path) -> Result<Kept, Error> {
        let failed = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut source = File::open(path).map_err(failed)?;
        let size = source.metadata().map_err(failed)?.len();
        if size <= SMALL_OBJECT {
            let mut bytes = Vec::with_capacity(size as usize + 1);
            source.read_to_end(&mut bytes).map_err(failed)?;
            return self.keep_bytes(bytes);
        }
        let folder = self.folder("cas")?;
        let temp = temp_path(&folder.join("object"));
        let mut copy = || -> io::Result<(String, u64)> {
            let mut sink = File::create(&temp)?;
            let mut buffer = vec![0u8; 64 * 1024];
            let mut size = 0u64;
            let mut hasher = blake3::Hasher::new();
            loop {
                let n = source.read(&mut buffer)?;
                if n == 0 {
                    break;
                }
                hasher.update(&buffer[..n]);
                sink.write_all(&buffer[..n])?;
                size += n as u64;
            }
            let digest = hasher.finalize().to_hex().to_string();
            let dest = folder.join(&digest);
            if dest.exists() {
                // Content-addressed: the object is already there, with these very bytes.
                drop(sink);
                fs::remove_file(&temp)?;
            } else {
                fs::rename(&temp, &dest)?;
            }
            Ok((digest, size))
        };
        let (digest, size) = copy().map_err(|source| {
            let _ = fs::remove_file(&temp);
            failed(source)
        })?;
        Ok(Kept {
            digest,
            size,
            text: None,
        })
    }

    /// Keeps a finished run's log (at most [`LOG_CAP`] bytes) as an object by linking it, not
    /// copying it: nothing writes a log once its command is over, and a replay checks nothing
    /// but that it can read it. Falls back to a copy where a link cannot be made.
    fn store_log(&self, path: &Path) -> Result<String, Error> {
        let bytes = fs::read(path).map_err(Error::io(path))?;
        let digest = blake3::hash(&bytes).to_hex().to_string();
        let dest = self.folder("cas")?.join(&digest);
        match fs::hard_link(path, &dest) {
            Ok(()) => Ok(digest),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(digest),
            Err(_) => self.store_bytes(&bytes),
        }
    }
}

/// The journal of keys' parts, in the cache's folder.
const JOURNAL: &str = "key-parts";

/// Objects up to this size are read into memory whole before they are stored.
const SMALL_OBJECT: u64 = 1024 * 1024;

/// Copies `from` into `to` through `buffer`, returning the BLAKE3 of what was copied.
fn copy_hashing(
    from: &mut impl Read,
    to: &mut File,
    buffer: &mut [u8],
) -> io::Result<blake3::Hash> {
    let mut hasher = blake3::Hasher::new();
    loop {
        let n = match from.read(buffer) {
            Ok(0) => return Ok(hasher.finalize()),
            Ok(n) => n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        hasher.update(&buffer[..n]);
        to.write_all(&buffer[..n])?;
    }
}

/// Makes a folder of the cache, never through a link (see `once_fs::state_dir`).
pub(crate) fn state_dir(folder: &Path) -> Result<(), Error> {
    once_fs::state_dir(folder).map_err(|e| Error::Io {
        path: folder.to_path_buf(),
        source: io::Error::other(e),
    })
}

/// The files under `dir` matching `outputs`, sorted; ignored files count (outputs usually are).
pub(crate) fn output_files(
    action: &str,
    dir: &Path,
    outputs: &[String],
) -> Result<Vec<String>, Error> {
    if outputs.is_empty() {
        return Ok(Vec::new());
    }
    let set = output_globs(action, outputs)?;
    let walker = ignore::WalkBuilder::new(dir)
        .standard_filters(false)
        .filter_entry(|entry| {
            let name = entry.file_name();
            !(entry.depth() > 0 && (name == ".git" || name == ".once"))
        })
        .build();
    let mut files: Vec<String> = walker
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|entry| {
            let relative = slashed(entry.path().strip_prefix(dir).ok()?)?;
            set.is_match(&relative).then_some(relative)
        })
        .collect();
    files.sort_unstable();
    Ok(files)
}

/// A relative path as text with `/` between its names, as the cache records it and
/// `WorkspacePath` reads it, whatever the platform's separator; `None` when it is not UTF-8.
fn slashed(relative: &Path) -> Option<String> {
    let names: Option<Vec<&str>> = relative.iter().map(|name| name.to_str()).collect();
    Some(names?.join("/"))
}

/// The output globs of `action` as one set.
pub(crate) fn output_globs(action: &str, outputs: &[String]) -> Result<GlobSet, Error> {
    let mut builder = GlobSetBuilder::new();
    for text in outputs {
        builder.add(Glob::new(text).map_err(|e| Error::Glob {
            action: action.to_owned(),
            glob: text.clone(),
            message: e.kind().to_string(),
        })?);
    }
    builder.build().map_err(|e| Error::Glob {
        action: action.to_owned(),
        glob: outputs.join(", "),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_path_is_recorded_with_slashes_between_its_names() {
        assert_eq!(
            slashed(Path::new("web/dist/app.js")).as_deref(),
            Some("web/dist/app.js")
        );
        assert_eq!(slashed(Path::new("")).as_deref(), Some(""));
        #[cfg(windows)]
        assert_eq!(
            slashed(Path::new(r"web\dist\app.js")).as_deref(),
            Some("web/dist/app.js")
        );
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let name = std::ffi::OsStr::from_bytes(b"web/\xff.js");
            assert_eq!(slashed(Path::new(name)), None);
        }
    }
}
