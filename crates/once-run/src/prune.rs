//! The local cache's size bound: what it holds (`stats`), and least-recently-used eviction
//! (`prune`) that never removes what a running build uses.
//!
//! # Theory of operation
//!
//! Every run that reads or writes results holds a shared `flock` on `locks/prune` for as long as
//! it uses the cache's bytes: from a lookup until the outputs are restored, and from storing a
//! result's objects until its record is appended and uploaded ([`Readers::hold`]). One holder per
//! process takes the kernel's lock for all its threads (a count in memory), so a run costs two
//! system calls while its workers overlap, not two per action. A prune takes the same lock
//! exclusively, so it removes nothing between a reader's lookup and its restore, nor an object
//! whose record is not written yet; and it marks a new *generation* in the lock file (a byte more, a new time), which
//! every holder reads with an `fstat` whenever it takes the lock: a run whose packs were read before the prune reads
//! them again, so it never trusts a record the prune removed. Packs that a live run still
//! appends to (`flock`ed by their writer) are read, never rewritten.
//!
//! Recency: each run appends the keys it replayed or recorded to `used`, 40 bytes each (the key,
//! then the time in milliseconds), with one write at its end. A prune ranks records by that time
//! (a record no run named is the oldest), removes the oldest until the cache is under
//! [`LOW_WATER`] of its bound, then every object no kept record names, and rewrites `used` with
//! the kept keys only. `used` is a hint: a lost or garbled line costs a result its rank, never a
//! wrong result.
//!
//! Must never remove an object a kept record names, rewrite a pack another run holds, or run
//! while any run holds the lock.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::error::Error;
use crate::packs::{self, KeyBytes};

/// The bound of a cache whose manifest names none.
pub const DEFAULT_MAX_SIZE: u64 = 10 << 30;

/// A prune leaves the cache under this share of its bound (in percent), so that the runs after
/// it do not each prune again.
pub const LOW_WATER: u64 = 80;

/// One line of `used`: a key and the time it was used, in milliseconds.
const USED_LINE: usize = 32 + 8;

/// The lock file of the readers and the pruner, in `locks/`.
pub(crate) const LOCK: &str = "prune";

/// The journal of recency, in the cache's folder.
pub(crate) const USED: &str = "used";

/// This process's share of the readers' lock.
#[derive(Debug, Default)]
pub(crate) struct Readers {
    state: Mutex<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    /// The lock file, open while any thread holds it.
    file: Option<File>,
    holders: usize,
}

/// A thread's hold on the cache's bytes; the last one to drop releases the kernel's lock.
#[derive(Debug)]
pub(crate) struct Hold<'a> {
    readers: &'a Readers,
}

impl Readers {
    /// Holds the cache for reading or writing, waiting for a prune to end; returns the hold and
    /// the generation the lock file stands for (changed by every prune).
    pub(crate) fn hold(&self, lock: &Path) -> Result<(Hold<'_>, u64), Error> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.holders == 0 {
            let file = once_fs::open_in_place(lock, false).map_err(Error::io(lock))?;
            loop {
                match file.lock_shared() {
                    Ok(()) => break,
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                    Err(error) => return Err(Error::io(lock)(error)),
                }
            }
            state.file = Some(file);
        }
        let generation = match state.file.as_ref() {
            Some(file) => generation(file),
            None => 0,
        };
        state.holders += 1;
        Ok((Hold { readers: self }, generation))
    }
}

impl Drop for Hold<'_> {
    fn drop(&mut self) {
        let mut state = self
            .readers
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        state.holders = state.holders.saturating_sub(1);
        if state.holders == 0 {
            // Closing the file releases the lock.
            state.file = None;
        }
    }
}

/// The generation a lock file stands for: its length and modification time, both changed by
/// every prune (which appends a byte), read with one `fstat` (the file is open for writing only).
fn generation(file: &File) -> u64 {
    let Ok(meta) = file.metadata() else {
        return 0;
    };
    let modified = meta
        .modified()
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |since| since.as_nanos() as u64);
    modified ^ meta.len().rotate_left(48)
}

/// Marks a new generation in the lock file: a byte more, and a new modification time. The file
/// starts over past [`GENERATIONS`] bytes; its time still tells the generations apart.
fn next_generation(file: &mut File) -> io::Result<()> {
    if file.metadata()?.len() >= GENERATIONS {
        file.set_len(0)?;
    }
    file.seek(SeekFrom::End(0))?;
    file.write_all(b"g")
}

/// How long the lock file grows before it starts over.
const GENERATIONS: u64 = 4096;

/// Appends `keys`, used now, to the journal of recency at `path`, with one write.
pub(crate) fn note_used(path: &Path, keys: &[KeyBytes]) -> io::Result<()> {
    if keys.is_empty() {
        return Ok(());
    }
    let now = unix_millis().to_le_bytes();
    let mut lines = Vec::with_capacity(keys.len() * USED_LINE);
    for key in keys {
        lines.extend_from_slice(key);
        lines.extend_from_slice(&now);
    }
    once_fs::open_in_place(path, true)?.write_all(&lines)
}

fn unix_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

/// What a cache holds: the one value of `once cache stats`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CacheStats {
    /// The folder of the results (the main worktree's when shared).
    pub folder: PathBuf,
    /// Whether the folder is another worktree's (see `worktree.rs`).
    pub shared: bool,
    /// Results recorded, one per key.
    pub entries: u64,
    /// Files in `cas/`.
    pub objects: u64,
    /// Bytes of packs and objects together: what the bound counts.
    pub bytes: u64,
    pub max_size: u64,
}

/// What a prune removed: the one value of `once cache prune`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pruned {
    pub entries_removed: u64,
    pub objects_removed: u64,
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub max_size: u64,
}

/// One pack as a prune reads it.
struct PackFile {
    path: PathBuf,
    bytes: Vec<u8>,
    /// Held locked when no run appends to it: only such a pack is rewritten.
    finished: Option<File>,
}

/// A record, newest per key.
struct Record {
    pack: usize,
    json: std::ops::Range<usize>,
    objects: Vec<String>,
}

/// Everything in the cache's folder `root`, read for a prune or the stats.
struct Contents {
    packs: Vec<PackFile>,
    records: HashMap<KeyBytes, Record>,
    /// Objects of `cas/` by name, with their sizes.
    objects: HashMap<String, u64>,
    bytes: u64,
}

fn read_contents(root: &Path, lock_finished: bool) -> Contents {
    let folder = root.join("packs");
    let mut names: Vec<_> = fs::read_dir(&folder)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.file_name())
                .filter(|name| packs::is_pack_name(name))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let mut contents = Contents {
        packs: Vec::new(),
        records: HashMap::new(),
        objects: HashMap::new(),
        bytes: 0,
    };
    for name in names {
        let path = folder.join(&name);
        let Ok(mut file) = once_fs::open_own(&path) else {
            continue;
        };
        let mut bytes = Vec::new();
        let fits = file
            .metadata()
            .is_ok_and(|m| m.is_file() && m.len() <= packs::MAX_PACK);
        if !fits || file.read_to_end(&mut bytes).is_err() {
            continue;
        }
        let finished = (lock_finished && file.try_lock().is_ok()).then_some(file);
        contents.bytes += bytes.len() as u64;
        let index = contents.packs.len();
        let (found, _, _) = packs::records(&bytes, 0);
        for (key, json) in found {
            let objects = serde_json::from_slice::<Names>(&bytes[json.clone()])
                .map(Names::objects)
                .unwrap_or_default();
            // Later packs are newer: their record of a key wins.
            contents.records.insert(
                key,
                Record {
                    pack: index,
                    json,
                    objects,
                },
            );
        }
        contents.packs.push(PackFile {
            path,
            bytes,
            finished,
        });
    }
    if let Ok(entries) = fs::read_dir(root.join("cas")) {
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !is_object_name(&name) {
                continue;
            }
            if let Ok(meta) = entry.metadata()
                && meta.is_file()
            {
                contents.bytes += meta.len();
                contents.objects.insert(name, meta.len());
            }
        }
    }
    contents
}

/// The parts of a recorded result (`cache::ActionResult`) that name objects of `cas/`, read
/// without depending on the cache's types.
#[derive(serde::Deserialize)]
struct Names {
    #[serde(default)]
    outputs: Vec<OutputName>,
    #[serde(default)]
    log: Option<String>,
}

#[derive(serde::Deserialize)]
struct OutputName {
    digest: String,
    #[serde(default)]
    text: Option<String>,
}

impl Names {
    /// Its outputs not kept in the entry, and its log.
    fn objects(self) -> Vec<String> {
        self.outputs
            .into_iter()
            .filter(|output| output.text.is_none())
            .map(|output| output.digest)
            .chain(self.log)
            .collect()
    }
}

/// Whether `name` is an object's name: a BLAKE3 in hex (staging files start with a dot).
fn is_object_name(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// What the cache in `root` holds; reads, locks and writes nothing.
pub(crate) fn stats(root: &Path, shared: bool, max_size: u64) -> CacheStats {
    let contents = read_contents(root, false);
    CacheStats {
        folder: root.to_path_buf(),
        shared,
        entries: contents.records.len() as u64,
        objects: contents.objects.len() as u64,
        bytes: contents.bytes,
        max_size,
    }
}

/// How a prune waits for the runs that hold the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Until they let go (`once cache prune`).
    Block,
    /// Not at all: a run that ends over the bound leaves the prune to a later one when others
    /// still run.
    Skip,
}

/// Brings the cache in `root` under [`LOW_WATER`] of `max_size` when it is over `max_size`
/// (or `force`d), least recently used records first, then removes every object no record
/// names. `None` when skipped (another run holds the cache and `wait` is [`Wait::Skip`]).
pub(crate) fn prune(
    root: &Path,
    max_size: u64,
    force: bool,
    wait: Wait,
) -> Result<Option<Pruned>, Error> {
    let locks = root.join("locks");
    once_fs::state_dir(&locks).map_err(|error| Error::Io {
        path: locks.clone(),
        source: io::Error::other(error),
    })?;
    let lock_path = locks.join(LOCK);
    let mut lock = once_fs::open_in_place(&lock_path, false).map_err(Error::io(&lock_path))?;
    match wait {
        Wait::Block => loop {
            match lock.lock() {
                Ok(()) => break,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(Error::io(&lock_path)(error)),
            }
        },
        Wait::Skip => {
            if lock.try_lock().is_err() {
                return Ok(None);
            }
        }
    }
    let contents = read_contents(root, true);
    let before = contents.bytes;
    let mut pruned = Pruned {
        entries_removed: 0,
        objects_removed: 0,
        bytes_before: before,
        bytes_after: before,
        max_size,
    };
    if before <= max_size && !force {
        return Ok(Some(pruned));
    }
    let used = read_used(&root.join(USED));
    // How many kept records name each object: one goes when the last of them does.
    let mut names: HashMap<&str, usize> = HashMap::new();
    for record in contents.records.values() {
        for object in &record.objects {
            *names.entry(object.as_str()).or_insert(0) += 1;
        }
    }
    let mut size = before;
    // Objects no record names cost space and serve nothing.
    let mut doomed: HashSet<&str> = HashSet::new();
    for (name, bytes) in &contents.objects {
        if !names.contains_key(name.as_str()) {
            doomed.insert(name);
            size -= bytes;
        }
    }
    let target = max_size / 100 * LOW_WATER;
    let mut candidates: Vec<(&KeyBytes, &Record)> = contents
        .records
        .iter()
        .filter(|(_, record)| contents.packs[record.pack].finished.is_some())
        .collect();
    candidates.sort_by_key(|(key, _)| (used.get(*key).copied().unwrap_or(0), **key));
    let mut evicted: HashSet<KeyBytes> = HashSet::new();
    for (key, record) in candidates {
        if size <= target {
            break;
        }
        evicted.insert(*key);
        size = size.saturating_sub((packs::HEAD + record.json.len() + packs::CHECK) as u64);
        for object in &record.objects {
            if let Some(count) = names.get_mut(object.as_str()) {
                *count -= 1;
                if *count == 0
                    && let Some(bytes) = contents.objects.get(object)
                    && doomed.insert(object)
                {
                    size -= bytes;
                }
            }
        }
    }
    // The finished packs become one, holding what is kept; live ones stay as they are.
    let finished: Vec<usize> = (0..contents.packs.len())
        .filter(|&i| contents.packs[i].finished.is_some())
        .collect();
    if !evicted.is_empty() && !finished.is_empty() {
        let mut kept: Vec<(&KeyBytes, &Record)> = contents
            .records
            .iter()
            .filter(|(key, record)| {
                contents.packs[record.pack].finished.is_some() && !evicted.contains(*key)
            })
            .collect();
        kept.sort_by_key(|(_, record)| (record.pack, record.json.start));
        let mut out = packs::MAGIC.to_vec();
        for (key, record) in &kept {
            out.extend_from_slice(&packs::frame(
                key,
                &contents.packs[record.pack].bytes[record.json.clone()],
            ));
        }
        let newest = finished[finished.len() - 1];
        if kept.is_empty() {
            for &i in &finished {
                let _ = fs::remove_file(&contents.packs[i].path);
            }
        } else {
            let dest = &contents.packs[newest].path;
            once_fs::write_replacing(dest, &out).map_err(Error::io(dest))?;
            for &i in &finished[..finished.len() - 1] {
                let _ = fs::remove_file(&contents.packs[i].path);
            }
        }
        pruned.entries_removed = evicted.len() as u64;
    }
    let cas = root.join("cas");
    for name in &doomed {
        if fs::remove_file(cas.join(name)).is_ok() {
            pruned.objects_removed += 1;
        }
    }
    // Recency of what is kept only, so the journal stays as small as the cache.
    let mut lines = Vec::new();
    for (key, time) in &used {
        if contents.records.contains_key(key) && !evicted.contains(key) {
            lines.extend_from_slice(key);
            lines.extend_from_slice(&time.to_le_bytes());
        }
    }
    let used_path = root.join(USED);
    once_fs::write_replacing(&used_path, &lines).map_err(Error::io(&used_path))?;
    // Readers that read the packs before now read them again.
    next_generation(&mut lock).map_err(Error::io(&lock_path))?;
    pruned.bytes_after = size;
    Ok(Some(pruned))
}

/// The last time each key was used, from the journal at `path`; a torn last line is dropped.
fn read_used(path: &Path) -> HashMap<KeyBytes, u64> {
    let mut used = HashMap::new();
    let Ok(bytes) = fs::read(path) else {
        return used;
    };
    for line in bytes.chunks_exact(USED_LINE) {
        let mut key = [0u8; 32];
        key.copy_from_slice(&line[..32]);
        let mut time = [0u8; 8];
        time.copy_from_slice(&line[32..]);
        let time = u64::from_le_bytes(time);
        let last = used.entry(key).or_insert(0);
        *last = (*last).max(time);
    }
    used
}
