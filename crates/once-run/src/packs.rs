//! The action cache's entries, kept in packs: `.once/cache/packs/<name>.pack`, each holding the
//! entries one run recorded, appended one after another, instead of a file per entry.
//!
//! Why: creating a file is most of what recording a result cost the file system, and deleting
//! it most of what wiping the cache cost. At 5,000 actions, in alternating cold builds after the
//! file system had settled, a file per entry took 13.9 s (CPU 25.5 s) and a pack 13.0 s (CPU
//! 24.0 s), medians of three. (Right after a wipe, ext4 without a journal scans past every freed
//! inode each time it creates a file, and a file per entry cost more.) A run now creates one.
//!
//! # Layout
//!
//! A pack starts with [`MAGIC`]. Each record is the length of its JSON (4 bytes, little-endian),
//! the key (32 bytes), the JSON of the [`crate::cache::ActionResult`], and the BLAKE3 of those
//! three (32 bytes). Names begin with the time they were made, in fixed-width hex, so a name sort
//! is oldest first.
//!
//! # Invariants
//!
//! - One writer per pack: the run that made it, holding an exclusive `flock` on it for as long as
//!   it may append. A pack nobody holds is finished; only compaction writes one again, by
//!   replacing it whole.
//! - A record is appended with one `write`, and nothing is synced: after a crash a pack's tail
//!   may be torn or garbled. A record is believed only when its checksum holds, and a reader
//!   stops at the first that fails (nothing after it can be framed). A lost record is a miss
//!   and its action runs, never a wrong result; the key is under the checksum, so no result is
//!   ever read under another key.
//! - A run reads every pack whole at its first lookup. Its lookup after taking a key's lock
//!   (another run may have recorded the key meanwhile) first reads what was appended since, and
//!   the packs made since.
//! - Bounded: a run about to make a pack that finds [`COMPACT_AT`] or more merges every finished
//!   one into one, under `locks/packs` (skipped when another run holds it), keeping the newest
//!   [`KEEP_PER_ACTION`] keys of each action. The merged pack is renamed over the newest of those
//!   it merged, then the others are removed. A run reading meanwhile may miss what moved: a miss,
//!   never an error.
//!
//! On Windows a `flock` is a mandatory lock, so another run cannot read a pack while its writer
//! runs: those entries are misses for it until the writer ends.
//!
//! Must never return a record whose checksum fails, nor write to a pack it did not make.

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Deserialize;

use crate::witness::Witness;

/// The first bytes of every pack.
pub(crate) const MAGIC: &[u8; 8] = b"oncepk1\n";

/// A record's length and key, before its JSON.
pub(crate) const HEAD: usize = 4 + 32;

/// A record's checksum, after its JSON.
pub(crate) const CHECK: usize = 32;

/// The longest JSON a record may hold; a longer length is damage.
const MAX_ENTRY: usize = 64 << 20;

/// The largest pack read: a larger one is not `once`'s and is left alone.
pub(crate) const MAX_PACK: u64 = 1 << 30;

/// How many packs make a run that is about to add one merge them first.
pub(crate) const COMPACT_AT: usize = 16;

/// How many keys of one action a compaction keeps, newest first.
pub(crate) const KEEP_PER_ACTION: usize = 16;

const SUFFIX: &str = ".pack";

/// A key's bytes.
pub(crate) type KeyBytes = [u8; 32];

/// Where a record's JSON is.
#[derive(Debug, Clone)]
struct Slot {
    pack: usize,
    json: Range<usize>,
}

/// One pack, as far as it has been read.
#[derive(Debug)]
struct Pack {
    path: PathBuf,
    /// Open for reading; `None` for the pack this run writes, whose bytes are what it wrote.
    file: Option<File>,
    /// Everything read (or written) so far.
    bytes: Vec<u8>,
    /// How far records have been framed and checked.
    parsed: usize,
    /// A record failed its checksum: nothing after it is read.
    broken: bool,
    /// The metadata taken before the last read.
    stamp: Option<Metadata>,
    /// The BLAKE3 of `bytes`, once a witness asked for it.
    digest: Option<blake3::Hash>,
}

/// The pack this run appends to.
#[derive(Debug)]
struct Writer {
    /// Holds the pack's `flock`.
    file: File,
    pack: usize,
}

/// Every pack of one cache, read, and the key of every record in them.
#[derive(Debug)]
pub(crate) struct Packs {
    folder: PathBuf,
    loaded: bool,
    packs: Vec<Pack>,
    names: HashSet<OsString>,
    index: HashMap<KeyBytes, Slot>,
    writer: Option<Writer>,
}

/// Just the action a record is about.
#[derive(Deserialize)]
struct Head {
    action: String,
}

impl Packs {
    /// The packs in `folder`, read at the first lookup.
    pub(crate) fn new(folder: PathBuf) -> Packs {
        Packs {
            folder,
            loaded: false,
            packs: Vec::new(),
            names: HashSet::new(),
            index: HashMap::new(),
            writer: None,
        }
    }

    /// The JSON recorded under `key`, if any pack holds it. The pack it came from is recorded in
    /// `witness`, as it was read.
    pub(crate) fn find(&mut self, key: &KeyBytes, witness: &Witness) -> Option<Vec<u8>> {
        self.load();
        let slot = self.index.get(key)?.clone();
        let pack = &mut self.packs[slot.pack];
        if witness.is_on() {
            match (&pack.file, &pack.stamp) {
                (Some(_), Some(stamp)) => {
                    let digest = *pack.digest.get_or_insert_with(|| blake3::hash(&pack.bytes));
                    witness.file(&pack.path, stamp, &digest);
                }
                // A run that recorded something proves no no-op anyway.
                _ => witness.spoil("a cache entry this run recorded itself"),
            }
        }
        Some(pack.bytes[slot.json].to_vec())
    }

    /// Reads what other runs added since the last read: for a lookup made after taking a key's
    /// lock, which another run may have held to record that key.
    pub(crate) fn refresh(&mut self) {
        self.loaded = true;
        self.scan();
    }

    /// Forgets every pack read but this run's own, to read them afresh at the next lookup: a
    /// prune has rewritten them since (see `prune.rs`).
    pub(crate) fn forget(&mut self) {
        let own = self.writer.as_ref().map(|writer| writer.pack);
        let mut kept = None;
        for (i, pack) in self.packs.drain(..).enumerate() {
            if Some(i) == own {
                kept = Some(pack);
            }
        }
        self.names.clear();
        self.index.clear();
        self.loaded = false;
        if let (Some(pack), Some(writer)) = (kept, self.writer.as_mut()) {
            if let Some(name) = pack.path.file_name() {
                self.names.insert(name.to_os_string());
            }
            let (found, _, _) = records(&pack.bytes, 0);
            for (key, json) in found {
                self.index.insert(key, Slot { pack: 0, json });
            }
            writer.pack = 0;
            self.packs.push(pack);
        }
    }

    /// Stops appending: this run's pack is finished, and a prune may rewrite it.
    pub(crate) fn finish(&mut self) {
        self.writer = None;
    }

    /// Reads every pack, the first time only.
    fn load(&mut self) {
        if !self.loaded {
            self.refresh();
        }
    }

    /// Appends `json` under `key` to this run's pack, making the pack (and compacting, see the
    /// module's notes) the first time; `locks` is the cache's folder of locks.
    pub(crate) fn append(&mut self, key: &KeyBytes, json: &[u8], locks: &Path) -> io::Result<()> {
        if json.len() > MAX_ENTRY {
            return Err(io::Error::other("the result is too large to record"));
        }
        self.load();
        if self.writer.is_none() {
            self.start(locks)?;
        }
        let Some(writer) = self.writer.as_mut() else {
            return Err(io::Error::other("no pack to write to"));
        };
        let record = frame(key, json);
        if let Err(error) = writer.file.write_all(&record) {
            // The pack may end with a torn record now: nothing more goes after it.
            self.writer = None;
            return Err(error);
        }
        let pack = &mut self.packs[writer.pack];
        let start = pack.bytes.len();
        pack.bytes.extend_from_slice(&record);
        pack.parsed = pack.bytes.len();
        self.index.insert(
            *key,
            Slot {
                pack: writer.pack,
                json: start + HEAD..start + HEAD + json.len(),
            },
        );
        Ok(())
    }

    /// Makes this run's pack: staged under a hidden name, locked, then renamed into place, so
    /// no compaction ever sees it unlocked.
    fn start(&mut self, locks: &Path) -> io::Result<()> {
        if self.pack_names().len() >= COMPACT_AT && self.compact(locks) {
            // What moved is read again from where it is now.
            self.packs.clear();
            self.names.clear();
            self.index.clear();
            self.scan();
        }
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos());
        let name = format!(
            "{nanos:032x}-{:08x}-{:08x}{SUFFIX}",
            std::process::id(),
            once_fs::clock::random_u32()
        );
        let path = self.folder.join(&name);
        let staged = once_fs::temp_path(&path);
        let made = (|| {
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&staged)?;
            file.lock()?;
            file.write_all(MAGIC)?;
            fs::rename(&staged, &path)?;
            Ok(file)
        })();
        let file = match made {
            Ok(file) => file,
            Err(error) => {
                let _ = fs::remove_file(&staged);
                return Err(error);
            }
        };
        self.names.insert(OsString::from(&name));
        self.packs.push(Pack {
            path,
            file: None,
            bytes: MAGIC.to_vec(),
            parsed: MAGIC.len(),
            broken: false,
            stamp: None,
            digest: None,
        });
        self.writer = Some(Writer {
            file,
            pack: self.packs.len() - 1,
        });
        Ok(())
    }

    /// The names of the packs in the folder, oldest first.
    fn pack_names(&self) -> Vec<OsString> {
        let Ok(entries) = fs::read_dir(&self.folder) else {
            return Vec::new();
        };
        let mut names: Vec<OsString> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.file_name())
            .filter(|name| is_pack_name(name))
            .collect();
        names.sort();
        names
    }

    /// Reads what was appended to the packs already read, then the packs not read yet.
    fn scan(&mut self) {
        for i in 0..self.packs.len() {
            self.read_more(i);
        }
        for name in self.pack_names() {
            if self.names.contains(&name) {
                continue;
            }
            self.names.insert(name.clone());
            let path = self.folder.join(&name);
            // A pack removed by a compaction since the listing is simply not there.
            let Ok(file) = once_fs::open_own(&path) else {
                continue;
            };
            self.packs.push(Pack {
                path,
                file: Some(file),
                bytes: Vec::new(),
                parsed: 0,
                broken: false,
                stamp: None,
                digest: None,
            });
            self.read_more(self.packs.len() - 1);
        }
    }

    /// Reads what pack `i` gained since it was last read, and indexes its new records.
    fn read_more(&mut self, i: usize) {
        let pack = &mut self.packs[i];
        let Some(file) = pack.file.as_mut() else {
            return;
        };
        if pack.broken {
            return;
        }
        let Ok(metadata) = file.metadata() else {
            return;
        };
        if !metadata.is_file() || metadata.len() > MAX_PACK {
            pack.broken = true;
            return;
        }
        if metadata.len() <= pack.bytes.len() as u64 {
            return;
        }
        pack.stamp = Some(metadata);
        pack.digest = None;
        // Only this code reads this file, always to its end: its offset is `bytes.len()`.
        // A failed read keeps what it read; the records are checked either way.
        let _ = file.read_to_end(&mut pack.bytes);
        let (records, parsed, broken) = records(&pack.bytes, pack.parsed);
        pack.parsed = parsed;
        pack.broken = broken;
        for (key, json) in records {
            self.index.insert(key, Slot { pack: i, json });
        }
    }

    /// Merges every finished pack into one, keeping the newest [`KEEP_PER_ACTION`] keys of each
    /// action; whether it did. Skipped while another run compacts.
    fn compact(&mut self, locks: &Path) -> bool {
        let Ok(lock) = once_fs::open_in_place(&locks.join("packs"), false) else {
            return false;
        };
        if lock.try_lock().is_err() {
            return false;
        }
        // Staging files of writers that died before their rename.
        if let Ok(entries) = fs::read_dir(&self.folder) {
            for entry in entries.filter_map(Result::ok) {
                let name = entry.file_name();
                if once_fs::is_abandoned_temp(&self.folder, &name.to_string_lossy()) {
                    let _ = fs::remove_file(entry.path());
                }
            }
        }
        // Every finished pack, held locked while it is merged.
        let mut finished: Vec<(PathBuf, File, Vec<u8>)> = Vec::new();
        for name in self.pack_names() {
            let path = self.folder.join(&name);
            let Ok(mut file) = once_fs::open_own(&path) else {
                continue;
            };
            if file.try_lock().is_err() {
                continue;
            }
            let mut bytes = Vec::new();
            let fits = file
                .metadata()
                .is_ok_and(|m| m.is_file() && m.len() <= MAX_PACK);
            if fits && file.read_to_end(&mut bytes).is_ok() {
                finished.push((path, file, bytes));
            }
        }
        if finished.len() < 2 {
            return false;
        }
        let mut merged: Vec<(KeyBytes, &[u8])> = Vec::new();
        for (_, _, bytes) in &finished {
            let (found, _, _) = records(bytes, 0);
            merged.extend(found.into_iter().map(|(key, json)| (key, &bytes[json])));
        }
        let mut out = MAGIC.to_vec();
        for (key, json) in newest(&merged) {
            out.extend_from_slice(&frame(key, json));
        }
        let Some((dest, _, _)) = finished.last() else {
            return false;
        };
        if let Err(error) = once_fs::write_replacing(dest, &out) {
            tracing::debug!(%error, "cannot compact the cache's packs");
            return false;
        }
        for (path, _, _) in &finished[..finished.len() - 1] {
            let _ = fs::remove_file(path);
        }
        true
    }
}

/// Whether `name` is a pack's name (a staging file starts with a dot).
pub(crate) fn is_pack_name(name: &OsStr) -> bool {
    name.to_str().is_some_and(|name| {
        name.strip_suffix(SUFFIX).is_some_and(|stem| {
            !stem.is_empty() && stem.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
        })
    })
}

/// One record's bytes.
pub(crate) fn frame(key: &KeyBytes, json: &[u8]) -> Vec<u8> {
    let mut record = Vec::with_capacity(HEAD + json.len() + CHECK);
    // `json.len()` is at most MAX_ENTRY, far below u32::MAX.
    record.extend_from_slice(&(json.len() as u32).to_le_bytes());
    record.extend_from_slice(key);
    record.extend_from_slice(json);
    let check = blake3::hash(&record);
    record.extend_from_slice(check.as_bytes());
    record
}

/// The records of `bytes` from `from` on, each its key and the range of its JSON, with how far
/// they reach and whether a record failed its checksum there. A record cut short ends the
/// records without failing: its writer may still be writing it.
pub(crate) fn records(bytes: &[u8], from: usize) -> (Vec<(KeyBytes, Range<usize>)>, usize, bool) {
    let mut found = Vec::new();
    let mut at = from;
    if at == 0 {
        if bytes.len() < MAGIC.len() {
            return (found, 0, false);
        }
        if &bytes[..MAGIC.len()] != MAGIC {
            return (found, 0, true);
        }
        at = MAGIC.len();
    }
    loop {
        let rest = &bytes[at..];
        let Some(length) = rest.get(..4) else {
            return (found, at, false);
        };
        let length = u32::from_le_bytes([length[0], length[1], length[2], length[3]]) as usize;
        if length > MAX_ENTRY {
            return (found, at, true);
        }
        let Some(record) = rest.get(..HEAD + length + CHECK) else {
            return (found, at, false);
        };
        let (body, check) = record.split_at(HEAD + length);
        if blake3::hash(body).as_bytes() != check {
            return (found, at, true);
        }
        let mut key = [0u8; 32];
        key.copy_from_slice(&body[4..HEAD]);
        found.push((key, at + HEAD..at + HEAD + length));
        at += record.len();
    }
}

/// The records a compaction keeps, oldest first: for each key its newest record, and for each
/// action its newest [`KEEP_PER_ACTION`] keys. A record whose JSON names no action is another
/// version's, and goes.
fn newest<'a>(records: &'a [(KeyBytes, &'a [u8])]) -> Vec<&'a (KeyBytes, &'a [u8])> {
    let mut keys = HashSet::new();
    let mut per_action: HashMap<String, usize> = HashMap::new();
    let mut kept = Vec::new();
    for record in records.iter().rev() {
        if !keys.insert(record.0) {
            continue;
        }
        let Ok(head) = serde_json::from_slice::<Head>(record.1) else {
            continue;
        };
        let count = per_action.entry(head.action).or_insert(0);
        if *count < KEEP_PER_ACTION {
            *count += 1;
            kept.push(record);
        }
    }
    kept.reverse();
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::witness::OFF;

    fn scratch(name: &str) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("once-packs-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let (packs, locks) = (dir.join("packs"), dir.join("locks"));
        fs::create_dir_all(&packs).unwrap();
        fs::create_dir_all(&locks).unwrap();
        (packs, locks)
    }

    fn key(n: u8) -> KeyBytes {
        *blake3::hash(&[n]).as_bytes()
    }

    fn json(action: &str, n: u8) -> Vec<u8> {
        format!(r#"{{"action":"{action}","n":{n}}}"#).into_bytes()
    }

    fn pack_files(folder: &Path) -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = fs::read_dir(folder)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| is_pack_name(path.file_name().unwrap()))
            .collect();
        found.sort();
        found
    }

    /// One run's records: written by a writer that is gone when this returns.
    fn record(folder: &Path, locks: &Path, records: &[(u8, &str)]) {
        let mut packs = Packs::new(folder.to_path_buf());
        for (n, action) in records {
            packs.append(&key(*n), &json(action, *n), locks).unwrap();
        }
    }

    #[test]
    fn what_one_run_records_another_reads() {
        let (folder, locks) = scratch("read");
        record(&folder, &locks, &[(1, "a:build"), (2, "b:build")]);
        let mut packs = Packs::new(folder.clone());
        assert_eq!(packs.find(&key(1), &OFF), Some(json("a:build", 1)));
        assert_eq!(packs.find(&key(2), &OFF), Some(json("b:build", 2)));
        assert_eq!(packs.find(&key(3), &OFF), None);
        // The writer finds its own records, and a run that recorded none made no pack.
        let mut writer = Packs::new(folder.clone());
        writer.append(&key(3), &json("c:build", 3), &locks).unwrap();
        assert_eq!(writer.find(&key(3), &OFF), Some(json("c:build", 3)));
        assert_eq!(pack_files(&folder).len(), 2);
    }

    #[test]
    fn a_pack_cut_anywhere_gives_the_whole_records_before_the_cut_and_nothing_else() {
        let (folder, locks) = scratch("cut");
        record(&folder, &locks, &[(1, "a:build"), (2, "b:build")]);
        let path = pack_files(&folder).remove(0);
        let whole = fs::read(&path).unwrap();
        let first_ends = MAGIC.len() + HEAD + json("a:build", 1).len() + CHECK;
        for cut in 0..whole.len() {
            fs::write(&path, &whole[..cut]).unwrap();
            let mut packs = Packs::new(folder.clone());
            let first = packs.find(&key(1), &OFF);
            assert_eq!(first.is_some(), cut >= first_ends, "cut at {cut}");
            if let Some(found) = first {
                assert_eq!(found, json("a:build", 1), "cut at {cut}");
            }
            assert_eq!(packs.find(&key(2), &OFF), None, "cut at {cut}");
        }
    }

    #[test]
    fn a_changed_byte_anywhere_is_a_miss_from_its_record_on_never_another_result() {
        let (folder, locks) = scratch("flip");
        record(&folder, &locks, &[(1, "a:build"), (2, "b:build")]);
        let path = pack_files(&folder).remove(0);
        let whole = fs::read(&path).unwrap();
        let first_ends = MAGIC.len() + HEAD + json("a:build", 1).len() + CHECK;
        for at in 0..whole.len() {
            let mut changed = whole.clone();
            changed[at] ^= 0x20;
            fs::write(&path, &changed).unwrap();
            let mut packs = Packs::new(folder.clone());
            let first = packs.find(&key(1), &OFF);
            let second = packs.find(&key(2), &OFF);
            if at < first_ends {
                assert_eq!((first, second), (None, None), "byte {at}");
            } else {
                assert_eq!(first, Some(json("a:build", 1)), "byte {at}");
                assert_eq!(second, None, "byte {at}");
            }
            // A record never answers for a key it was not written under.
            for other in [0, 3, 4] {
                assert_eq!(packs.find(&key(other), &OFF), None, "byte {at}");
            }
        }
    }

    #[test]
    fn a_look_again_sees_what_another_run_recorded_since() {
        let (folder, locks) = scratch("again");
        let mut reader = Packs::new(folder.clone());
        assert_eq!(reader.find(&key(1), &OFF), None);
        let mut writer = Packs::new(folder.clone());
        writer.append(&key(1), &json("a:build", 1), &locks).unwrap();
        assert_eq!(
            reader.find(&key(1), &OFF),
            None,
            "read at the first lookup only"
        );
        reader.refresh();
        assert_eq!(reader.find(&key(1), &OFF), Some(json("a:build", 1)));
        // Appended to a pack already read: found by the next look again too.
        writer.append(&key(2), &json("b:build", 2), &locks).unwrap();
        reader.refresh();
        assert_eq!(reader.find(&key(2), &OFF), Some(json("b:build", 2)));
    }

    #[test]
    fn compaction_merges_finished_packs_and_keeps_the_newest_keys_of_each_action() {
        let (folder, locks) = scratch("compact");
        // A live writer's pack, which no compaction may touch.
        let mut live = Packs::new(folder.clone());
        live.append(&key(200), &json("live:build", 200), &locks)
            .unwrap();
        // Finished packs, oldest first (as runs that recorded less would leave them): one action
        // recorded under 20 keys, one key each, then another action.
        let records = (0..20u8).map(|n| (n, "a:build")).chain([(100, "b:build")]);
        for (at, (n, action)) in records.enumerate() {
            let mut bytes = MAGIC.to_vec();
            bytes.extend_from_slice(&frame(&key(n), &json(action, n)));
            fs::write(folder.join(format!("{at:032x}-0-0{SUFFIX}")), bytes).unwrap();
        }
        assert_eq!(pack_files(&folder).len(), 22);
        // The next run to record merges the 21 finished packs into one, then makes its own.
        record(&folder, &locks, &[(101, "c:build")]);
        assert_eq!(pack_files(&folder).len(), 3, "{:?}", pack_files(&folder));
        let mut packs = Packs::new(folder.clone());
        for n in 0..20u8 {
            let kept = usize::from(n) >= 20 - KEEP_PER_ACTION;
            assert_eq!(packs.find(&key(n), &OFF).is_some(), kept, "key {n}");
        }
        for (n, action) in [(100, "b:build"), (101, "c:build"), (200, "live:build")] {
            assert_eq!(packs.find(&key(n), &OFF), Some(json(action, n)));
        }
        // The live writer goes on appending to its own pack.
        live.append(&key(201), &json("live:build", 201), &locks)
            .unwrap();
        packs.refresh();
        assert_eq!(packs.find(&key(201), &OFF), Some(json("live:build", 201)));
    }

    #[test]
    fn a_huge_pack_or_record_length_is_refused_without_reading_it() {
        let (folder, locks) = scratch("huge");
        record(&folder, &locks, &[(1, "a:build")]);
        // A record claiming 4 GiB of JSON, after the good one: the good one still answers.
        let path = pack_files(&folder).remove(0);
        let mut bytes = fs::read(&path).unwrap();
        bytes.extend_from_slice(&u32::MAX.to_le_bytes());
        bytes.extend_from_slice(&key(2));
        fs::write(&path, &bytes).unwrap();
        // A sparse pack past the size read: never read into memory.
        let sparse = File::create(folder.join(format!("{:032x}-0-0{SUFFIX}", u128::MAX))).unwrap();
        sparse.set_len(MAX_PACK + 1).unwrap();
        let mut packs = Packs::new(folder.clone());
        assert_eq!(packs.find(&key(1), &OFF), Some(json("a:build", 1)));
        assert_eq!(packs.find(&key(2), &OFF), None);
        assert!(
            packs
                .packs
                .iter()
                .all(|pack| pack.bytes.len() as u64 <= MAX_PACK)
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_link_or_a_folder_named_like_a_pack_is_not_read() {
        let (folder, locks) = scratch("link");
        record(&folder, &locks, &[(1, "a:build")]);
        let real = pack_files(&folder).remove(0);
        let outside = folder.parent().unwrap().join("outside.pack");
        fs::rename(&real, &outside).unwrap();
        std::os::unix::fs::symlink(&outside, &real).unwrap();
        fs::create_dir(folder.join("0000-0000-0000.pack")).unwrap();
        let mut packs = Packs::new(folder.clone());
        assert_eq!(packs.find(&key(1), &OFF), None);
    }
}
