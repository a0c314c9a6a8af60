//! The rebuildable index cache at `.once/cache/memory-index`: every entry's metadata and an
//! inverted index of its search terms, so a search neither parses thousands of files nor decodes
//! thousands of bodies.
//!
//! Theory of operation. The entry files are the truth; the cache is only ever a shortcut and is
//! safe to delete. Each cached entry remembers its file's stamp (modification time in
//! nanoseconds, size and inode). A scan lists the memory folder once and stats each `*.md` file
//! relative to the folder's descriptor (`DirEntry::metadata`, one `statx` per file with no path
//! walk), on two threads that start while the folder is still being read: a file whose stamp matches is taken from the cache,
//! any other file is parsed again, and files that are gone are dropped. One stat per file is the
//! price of exactness: an edit in place keeps the inode and may keep the size, and nothing but
//! the file's own stamp (not the folder's) records it. File systems record modification times
//! coarsely, so a file changed twice within one tick, with the same size, could keep its stamp:
//! a stamp newer than [`RACY_NS`] before the cache was built is never trusted (git's "racily
//! clean" rule). When the scan found anything new, the cache is rewritten atomically; two
//! processes doing so at once both write a valid cache, and the loser's is merely re-checked
//! next time.
//!
//! The cache is one flat little-endian file that a search uses in place (see [`Corpus`]). Its
//! head is what every scan needs: a fixed-size record per file (stamp, weighted length, kind,
//! where its name and metadata start), the file names, the dictionary sorted so a query word is
//! found by binary search, and where each word's postings start. Its tail is what only some
//! answers need: the postings (varint deltas of file numbers, then weighted frequencies), read
//! per query word, and the metadata as length-prefixed strings, read whole and checked when
//! filters, broken files, counts or a rebuild need it. Bodies are not in it at all: the rows of
//! a page read their own files for snippets.
//!
//! On Windows, std gives no inode: the stamp there is the last-write time and the size, so a file
//! replaced by another of the same size and write time is taken from the cache (a person's edit
//! moves the write time; a tool that copies times over can hide one).
//!
//! Must never be needed for correctness: a missing, corrupt or foreign cache is rebuilt silently.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, mpsc};

use crate::front_matter;
use crate::model::{Entry, Kind, PathLink};
use crate::search;
use crate::{Broken, Error};
use once_fs::{self as fsio, Mode};

const MAGIC: &[u8; 8] = b"oncemem2";
/// How recent a stamp must be, relative to the cache, to be checked again anyway.
const RACY_NS: i64 = 2_000_000_000;
/// Magic, build time, then seven counts.
const HEADER: usize = 8 + 8 + 7 * 4;
/// Per file: mtime, size, inode, weighted length, kind (or [`BROKEN`]), name and metadata
/// offsets.
const RECORD: usize = 8 + 8 + 8 + 4 + 4 + 4 + 4;
const BROKEN: u32 = u32::MAX;
/// Files are statted in batches of this many; a folder of fewer is statted without a helper
/// thread.
const BATCH: usize = 256;

/// What a file looked like when it was parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    mtime_ns: i64,
    size: u64,
    inode: u64,
}

impl Stamp {
    #[cfg(unix)]
    fn of(meta: &fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp {
            mtime_ns: meta.mtime().saturating_mul(1_000_000_000) + meta.mtime_nsec(),
            size: meta.size(),
            inode: meta.ino(),
        }
    }

    /// The last-write time (100 ns ticks since 1601) in nanoseconds since 1970, and no inode.
    #[cfg(windows)]
    fn of(meta: &fs::Metadata) -> Stamp {
        use std::os::windows::fs::MetadataExt;
        const TICKS_1601_TO_1970: i64 = 116_444_736_000_000_000;
        let ticks = i64::try_from(meta.last_write_time()).unwrap_or(i64::MAX);
        Stamp {
            mtime_ns: (ticks - TICKS_1601_TO_1970).saturating_mul(100),
            size: meta.file_size(),
            inode: 0,
        }
    }
}

/// Fills `buffer` from `file` at `offset`, without moving a cursor other readers depend on.
#[cfg(unix)]
fn read_exact_at(file: &fs::File, buffer: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buffer, offset)
}

/// Fills `buffer` from `file` at `offset`. `seek_read` may read less than asked and moves the
/// cursor, which no reader here uses: every read names its offset.
#[cfg(windows)]
fn read_exact_at(file: &fs::File, mut buffer: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buffer.is_empty() {
        match file.seek_read(buffer, offset) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buffer = &mut buffer[n..];
                offset += n as u64;
            }
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// Every file of the memory folder, newest first (by file name, descending), as the encoded
/// cache: files are numbered by that order, and ties in search scores go to the lower number.
///
/// Invariant: the head was checked when it was read (every offset, names in order), and the
/// tail is checked whole (every record's metadata) before any of its metadata is used. Postings
/// read one word at a time are checked as they are decoded.
#[derive(Debug)]
pub(crate) struct Corpus {
    head: Vec<u8>,
    /// Postings and metadata, once read and checked; `None` inside when unreadable or corrupt.
    tail: OnceCell<Option<Vec<u8>>>,
    /// The cache file the head came from, for reading the tail; `None` when built in memory.
    file: Option<fs::File>,
    built: i64,
    docs: usize,
    words: usize,
    broken: usize,
    names: usize,
    word_table: usize,
    word_blob: usize,
    posting_table: usize,
    /// Where the tail starts: postings, then metadata from `meta`, to `end`.
    posting_blob: usize,
    meta: usize,
    end: usize,
}

/// Where a file was cached from, when a scan builds the next cache.
enum Source {
    Cached(usize),
    Parsed(Result<Entry, (u32, String)>),
}

/// The files of the next cache, in file order: name, stamp, and where its fields come from.
type Plan = Vec<(String, Stamp, Source)>;

/// What a caller will ask of a [`Corpus`] beyond search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    /// Ranking and ids only (rows read their own files).
    Postings,
    /// Every entry's cached fields too (filters, counts, staleness).
    Metadata,
}

impl Corpus {
    /// Scans `dir` through the cache at `cache`, rewriting the cache when it was out of date.
    pub(crate) fn scan(dir: &Path, cache: &Path, need: Need) -> Result<Corpus, Error> {
        let started = now_ns();
        let mut old = Corpus::read(cache).unwrap_or_else(Corpus::empty);
        // A tail that turns out corrupt is the same as no cache: every file is parsed again.
        if (need == Need::Metadata || old.broken > 0) && old.tail().is_none() {
            old = Corpus::empty();
        }
        let listed = match list(dir) {
            Ok(listed) => listed,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Corpus::empty());
            }
            Err(error) => return Err(Error::io("list", dir)(error)),
        };
        loop {
            let Some(files) = merge(dir, &old, &listed)? else {
                return Ok(old);
            };
            if files.iter().any(|f| matches!(f.2, Source::Cached(_))) && old.tail().is_none() {
                old = Corpus::empty();
                continue;
            }
            // Racy stamps were re-read; this cache, built at `started`, trusts them once they
            // are old enough.
            let bytes = encode(started, &old, &files);
            // The cache is a shortcut: failing to write it (a read-only checkout) is not an
            // error.
            // Never through a link planted in `.once/` (see `once_fs::state_dir`).
            if cache.parent().is_some_and(|p| fsio::state_dir(p).is_ok()) {
                let _ = fsio::write_atomic(cache, &bytes, Mode::Replace);
            }
            // Freshly encoded, so it opens; if it ever did not, an empty answer would be wrong.
            return Corpus::open(bytes, None).ok_or_else(|| Error::Invalid {
                message: "the memory index could not be built".into(),
            });
        }
    }

    fn empty() -> Corpus {
        Corpus {
            head: Vec::new(),
            tail: OnceCell::from(Some(Vec::new())),
            file: None,
            built: 0,
            docs: 0,
            words: 0,
            broken: 0,
            names: HEADER,
            word_table: HEADER,
            word_blob: HEADER,
            posting_table: HEADER,
            posting_blob: HEADER,
            meta: HEADER,
            end: HEADER,
        }
    }

    /// The head of the cache at `path`; the tail stays on disk until needed.
    fn read(path: &Path) -> Option<Corpus> {
        let file = fs::File::open(path).ok()?;
        let mut header = vec![0; HEADER];
        read_exact_at(&file, &mut header, 0).ok()?;
        let layout = Corpus::layout(&header, None)?;
        let mut head = vec![0; layout.posting_blob];
        read_exact_at(&file, &mut head, 0).ok()?;
        if file.metadata().ok()?.len() != layout.end as u64 {
            return None;
        }
        Corpus::open(head, Some(file))
    }

    /// The layout a cache header in `bytes` describes, with nothing loaded yet.
    fn layout(bytes: &[u8], file: Option<fs::File>) -> Option<Corpus> {
        let mut r = Reader::new(bytes, 0);
        if r.take(MAGIC.len())? != MAGIC {
            return None;
        }
        let built = r.u64()? as i64;
        let mut count = || r.u32().map(|n| n as usize);
        let (docs, words, broken) = (count()?, count()?, count()?);
        let (names_len, word_len, posting_len, meta_len) = (count()?, count()?, count()?, count()?);
        let table = |n: usize| n.checked_add(1)?.checked_mul(4);
        let names = HEADER.checked_add(docs.checked_mul(RECORD)?)?;
        let word_table = names.checked_add(names_len)?;
        let word_blob = word_table.checked_add(table(words)?)?;
        let posting_table = word_blob.checked_add(word_len)?;
        let posting_blob = posting_table.checked_add(table(words)?)?;
        let meta = posting_blob.checked_add(posting_len)?;
        let end = meta.checked_add(meta_len)?;
        Some(Corpus {
            head: Vec::new(),
            tail: OnceCell::new(),
            file,
            built,
            docs,
            words,
            broken,
            names,
            word_table,
            word_blob,
            posting_table,
            posting_blob,
            meta,
            end,
        })
    }

    /// The cache in `bytes`: the whole of it (`file` is `None`), or its head (the tail stays in
    /// `file`). `None` unless this version wrote it and every offset in it holds.
    fn open(mut bytes: Vec<u8>, file: Option<fs::File>) -> Option<Corpus> {
        let whole = file.is_none();
        let mut corpus = Corpus::layout(&bytes, file)?;
        if whole && bytes.len() == corpus.end {
            let tail = bytes.split_off(corpus.posting_blob);
            corpus.tail = OnceCell::from(Some(tail));
        } else if whole || bytes.len() != corpus.posting_blob {
            return None;
        }
        corpus.head = bytes;
        corpus.check_head()?;
        if let Some(Some(tail)) = corpus.tail.get()
            && !corpus.check_tail(tail)
        {
            return None;
        }
        Some(corpus)
    }

    fn check_head(&self) -> Option<()> {
        let ascending = |table: usize, count: usize, end: usize| {
            (0..count).all(|i| {
                let (a, b) = (self.u32_at(table + 4 * i), self.u32_at(table + 4 * i + 4));
                a <= b && b as usize <= end
            }) && self.u32_at(table) == 0
                && self.u32_at(table + 4 * count) as usize == end
        };
        let word_len = self.posting_table - self.word_blob;
        let posting_len = self.meta - self.posting_blob;
        if !ascending(self.word_table, self.words, word_len)
            || !ascending(self.posting_table, self.words, posting_len)
        {
            return None;
        }
        // Sorted and distinct, so a lookup may bisect.
        if !(1..self.words).all(|i| self.word(i - 1) < self.word(i)) {
            return None;
        }
        let mut broken = 0;
        let mut previous = (0, 0);
        for doc in 0..self.docs {
            let at = self.record(doc);
            let (name, meta) = (self.u32_at(at + 32), self.u32_at(at + 36));
            if name < previous.0 || meta < previous.1 || meta as usize > self.end - self.meta {
                return None;
            }
            previous = (name, meta);
            let file = self.try_file(doc)?;
            file.strip_suffix(".md")?;
            if doc > 0 && self.try_file(doc - 1)? <= file {
                return None;
            }
            match self.u32_at(at + 28) {
                BROKEN => broken += 1,
                kind => {
                    Kind::ALL.get(kind as usize)?;
                }
            }
        }
        (broken == self.broken).then_some(())
    }

    /// Whether every record's metadata in `tail` decodes.
    fn check_tail(&self, tail: &[u8]) -> bool {
        (0..self.docs).all(|doc| {
            let Some(mut r) = self.meta_reader_in(tail, doc) else {
                return false;
            };
            let walked = if self.kind(doc).is_some() {
                walk_entry(&mut r)
            } else {
                r.u32().and(r.str()).map(|_| ())
            };
            walked.is_some() && r.done()
        })
    }

    /// The postings and metadata, read and checked the first time they are needed.
    fn tail(&self) -> Option<&[u8]> {
        self.tail
            .get_or_init(|| {
                let file = self.file.as_ref()?;
                let mut tail = vec![0; self.end - self.posting_blob];
                read_exact_at(file, &mut tail, self.posting_blob as u64).ok()?;
                self.check_tail(&tail).then_some(tail)
            })
            .as_deref()
    }

    /// How many files, broken ones included.
    pub(crate) fn len(&self) -> usize {
        self.docs
    }

    fn u32_at(&self, at: usize) -> u32 {
        Reader::new(&self.head, at).u32().unwrap_or_default()
    }

    fn u64_at(&self, at: usize) -> u64 {
        Reader::new(&self.head, at).u64().unwrap_or_default()
    }

    fn record(&self, doc: usize) -> usize {
        HEADER + doc * RECORD
    }

    fn stamp(&self, doc: usize) -> Stamp {
        let at = self.record(doc);
        Stamp {
            mtime_ns: self.u64_at(at) as i64,
            size: self.u64_at(at + 8),
            inode: self.u64_at(at + 16),
        }
    }

    /// The weighted number of terms of file `doc` (0 for a broken file).
    pub(crate) fn length(&self, doc: usize) -> u32 {
        self.u32_at(self.record(doc) + 24)
    }

    /// The kind of entry `doc`; `None` when its file is broken.
    pub(crate) fn kind(&self, doc: usize) -> Option<Kind> {
        Kind::ALL
            .get(self.u32_at(self.record(doc) + 28) as usize)
            .copied()
    }

    /// Offsets of `doc`'s span in a section, from the record field at `field`.
    fn span(&self, doc: usize, field: usize, section_len: usize) -> (usize, usize) {
        let start = self.u32_at(self.record(doc) + field) as usize;
        let end = if doc + 1 < self.docs {
            self.u32_at(self.record(doc + 1) + field) as usize
        } else {
            section_len
        };
        (start, end)
    }

    fn try_file(&self, doc: usize) -> Option<&str> {
        let (start, end) = self.span(doc, 32, self.word_table - self.names);
        let bytes = self.head.get(self.names + start..self.names + end)?;
        std::str::from_utf8(bytes).ok()
    }

    /// The file name of `doc`, `<id>.md`.
    pub(crate) fn file(&self, doc: usize) -> &str {
        self.try_file(doc).unwrap_or_default()
    }

    /// The id of `doc`.
    pub(crate) fn id(&self, doc: usize) -> &str {
        self.file(doc).strip_suffix(".md").unwrap_or_default()
    }

    fn meta_reader_in<'a>(&self, tail: &'a [u8], doc: usize) -> Option<Reader<'a>> {
        let (start, end) = self.span(doc, 36, self.end - self.meta);
        let base = self.meta - self.posting_blob;
        let bytes = tail.get(base + start..base + end)?;
        Some(Reader::new(bytes, 0))
    }

    fn meta_bytes(&self, doc: usize) -> Option<&[u8]> {
        Some(self.meta_reader_in(self.tail()?, doc)?.bytes)
    }

    /// Entry `doc` as cached: every field but the body, which stays empty. `None` when broken,
    /// or when the cache's tail cannot be read.
    pub(crate) fn entry(&self, doc: usize) -> Option<Entry> {
        let kind = self.kind(doc)?;
        let mut r = self.meta_reader_in(self.tail()?, doc)?;
        let mut entry = Entry {
            id: self.id(doc).to_string(),
            title: r.str()?.to_string(),
            kind,
            tags: r.strs()?,
            targets: r.strs()?,
            paths: Vec::new(),
            created: String::new(),
            updated: String::new(),
            revision: 0,
            body: String::new(),
        };
        for _ in 0..r.len()? {
            entry.paths.push(PathLink {
                path: r.str()?.to_string(),
                blake3: r.str()?.to_string(),
            });
        }
        entry.created = r.str()?.to_string();
        entry.updated = r.str()?.to_string();
        entry.revision = r.u64()?;
        r.done().then_some(entry)
    }

    fn broken_at(&self, doc: usize) -> Option<(u32, &str)> {
        let mut r = self.meta_reader_in(self.tail()?, doc)?;
        let line = r.u32()?;
        let message = r.str()?;
        r.done().then_some((line, message))
    }

    /// The broken files, in file order.
    pub(crate) fn broken(&self, dir: &Path) -> Vec<Broken> {
        if self.broken == 0 {
            return Vec::new();
        }
        let mut broken: Vec<Broken> = (0..self.docs)
            .filter(|&doc| self.kind(doc).is_none())
            .filter_map(|doc| {
                let (line, message) = self.broken_at(doc)?;
                Some(Broken {
                    file: dir.join(self.file(doc)),
                    line,
                    message: message.to_string(),
                })
            })
            .collect();
        broken.sort_by(|a, b| a.file.cmp(&b.file));
        broken
    }

    fn word(&self, term: usize) -> &[u8] {
        let start = self.u32_at(self.word_table + 4 * term) as usize;
        let end = self.u32_at(self.word_table + 4 * term + 4) as usize;
        self.head
            .get(self.word_blob + start..self.word_blob + end)
            .unwrap_or_default()
    }

    /// The term number of `word`, if any entry uses it.
    pub(crate) fn lookup(&self, word: &str) -> Option<usize> {
        let (mut low, mut high) = (0, self.words);
        while low < high {
            let middle = low + (high - low) / 2;
            match self.word(middle).cmp(word.as_bytes()) {
                std::cmp::Ordering::Less => low = middle + 1,
                std::cmp::Ordering::Greater => high = middle,
                std::cmp::Ordering::Equal => return Some(middle),
            }
        }
        None
    }

    /// The files that use `term`, ascending, each with the term's weighted frequency; read from
    /// disk when the tail is not loaded. A corrupt or unreadable list ends early rather than
    /// naming a file that is not there.
    pub(crate) fn postings(&self, term: usize) -> Vec<(usize, u32)> {
        let start = self.u32_at(self.posting_table + 4 * term) as usize;
        let end = self.u32_at(self.posting_table + 4 * term + 4) as usize;
        let read;
        let bytes: &[u8] = match (self.tail.get(), &self.file) {
            (Some(Some(tail)), _) => tail.get(start..end).unwrap_or_default(),
            (None, Some(file)) => {
                let mut buffer = vec![0; end.saturating_sub(start)];
                read = read_exact_at(file, &mut buffer, (self.posting_blob + start) as u64)
                    .map(|()| buffer)
                    .unwrap_or_default();
                &read
            }
            _ => &[],
        };
        let mut r = Reader::new(bytes, 0);
        let mut out = Vec::new();
        let mut doc = 0usize;
        let mut first = true;
        while !r.done() {
            let (Some(delta), Some(freq)) = (r.varint(), r.varint()) else {
                break;
            };
            doc = if first {
                delta as usize
            } else {
                doc + delta as usize + 1
            };
            first = false;
            if doc >= self.docs {
                break;
            }
            out.push((doc, freq));
        }
        out
    }
}

/// Walks an entry's metadata without copying it: what [`Corpus::entry`] decodes.
fn walk_entry(r: &mut Reader) -> Option<()> {
    r.str()?;
    for _ in 0..2 {
        for _ in 0..r.len()? {
            r.str()?;
        }
    }
    for _ in 0..r.len()? {
        r.str()?;
        r.str()?;
    }
    r.str()?;
    r.str()?;
    r.u64()?;
    Some(())
}

/// Pairs the listed files with the cache (both sorted by file name, descending): `None` when
/// every file is cached with a stamp it can trust and nothing is gone, else every file with
/// where it comes from.
fn merge(dir: &Path, old: &Corpus, listed: &[(String, Stamp)]) -> Result<Option<Plan>, Error> {
    let mut changed = false;
    let mut files: Plan = Vec::with_capacity(listed.len());
    let mut at = 0;
    for (name, stamp) in listed {
        while at < old.docs && old.file(at) > name.as_str() {
            at += 1;
            changed = true;
        }
        let trusted = stamp.mtime_ns.saturating_add(RACY_NS) < old.built;
        if at < old.docs && old.file(at) == name {
            at += 1;
            if trusted && old.stamp(at - 1) == *stamp {
                files.push((name.clone(), *stamp, Source::Cached(at - 1)));
                continue;
            }
        }
        changed = true;
        let path = dir.join(name);
        let text = match fs::read(&path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            // Removed between the listing and the read: it is simply not there.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(error) => return Err(Error::io("read", path)(error)),
        };
        let id = name.strip_suffix(".md").unwrap_or_default();
        let parsed = front_matter::parse(&text, id).map_err(|p| (p.line, p.message));
        files.push((name.clone(), *stamp, Source::Parsed(parsed)));
    }
    changed |= at < old.docs;
    Ok(changed.then_some(files))
}

/// The `*.md` files of `dir` named like entries, with their stamps, by name descending.
///
/// Listing and statting overlap: this thread reads the folder and hands each [`BATCH`] of names
/// to a helper thread that stats them; once the listing ends, both threads stat what is left.
/// Staging files of writers that were killed mid-write are removed on the way (see
/// `once_fs::is_abandoned_temp`): the listing is the one pass that sees them, so they cost
/// nothing when there are none.
fn list(dir: &Path) -> std::io::Result<Vec<(String, Stamp)>> {
    type Batch = Vec<(String, fs::DirEntry)>;
    let (send, receive) = mpsc::channel::<Batch>();
    let receive = Mutex::new(receive);
    let stat = || {
        let mut stamped = Vec::new();
        // The lock is held only to take a batch, never while statting it.
        while let Ok(batch) = receive.lock().map_or(Err(mpsc::RecvError), |r| r.recv()) {
            stamped.extend(batch.into_iter().filter_map(|(name, item)| {
                // Gone since the listing, or not a regular file: not an entry.
                let meta = item.metadata().ok()?;
                meta.is_file().then(|| (name, Stamp::of(&meta)))
            }));
        }
        stamped
    };
    std::thread::scope(|scope| {
        let mut helper = None;
        let mut batch: Batch = Vec::with_capacity(BATCH);
        let mut staging = Vec::new();
        for item in fs::read_dir(dir)? {
            let item = item?;
            let Ok(name) = item.file_name().into_string() else {
                continue;
            };
            if name.starts_with('.') && name.ends_with(".tmp") {
                staging.push(name);
                continue;
            }
            let Some(id) = name.strip_suffix(".md") else {
                continue;
            };
            if name.starts_with('.') || !once_fs::clock::is_valid_id(id) {
                continue;
            }
            batch.push((name, item));
            if batch.len() == BATCH {
                if helper.is_none() {
                    // Without a helper (none could start), this thread stats everything.
                    helper = std::thread::Builder::new().spawn_scoped(scope, stat).ok();
                }
                let _ = send.send(std::mem::replace(&mut batch, Vec::with_capacity(BATCH)));
            }
        }
        let _ = send.send(batch);
        drop(send);
        for name in staging {
            if once_fs::is_abandoned_temp(dir, &name) {
                // Best effort: another lister may have removed it first.
                let _ = fs::remove_file(dir.join(&name));
            }
        }
        let mut listed = stat();
        if let Some(helper) = helper {
            match helper.join() {
                Ok(part) => listed.extend(part),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        listed.sort_unstable_by(|a, b| b.0.cmp(&a.0));
        Ok(listed)
    })
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}

// ------------------------------------------------------------------ encoding

/// The cache of `files` (in file order), taking cached files' metadata and terms from `old`,
/// whose tail the caller has loaded.
fn encode(built: i64, old: &Corpus, files: &[(String, Stamp, Source)]) -> Vec<u8> {
    // Postings by word, gathered per file number.
    let mut postings: HashMap<&str, Vec<(u32, u32)>> = HashMap::new();
    let mut new_of_old: Vec<Option<u32>> = vec![None; old.docs];
    let mut counted: Vec<(HashMap<String, u32>, u32)> = Vec::new();
    let mut lengths = vec![0u32; files.len()];
    for (doc, (_, _, source)) in files.iter().enumerate() {
        match source {
            Source::Cached(from) => {
                new_of_old[*from] = Some(n32(doc));
                lengths[doc] = old.length(*from);
            }
            Source::Parsed(Ok(entry)) => {
                let (freqs, length) = search::terms(entry);
                lengths[doc] = length;
                counted.push((freqs, n32(doc)));
            }
            Source::Parsed(Err(_)) => {}
        }
    }
    if new_of_old.iter().any(Option::is_some) {
        for term in 0..old.words {
            let Ok(word) = std::str::from_utf8(old.word(term)) else {
                continue;
            };
            for (from, freq) in old.postings(term) {
                if let Some(doc) = new_of_old[from] {
                    postings.entry(word).or_default().push((doc, freq));
                }
            }
        }
    }
    for (freqs, doc) in &counted {
        for (word, freq) in freqs {
            postings.entry(word).or_default().push((*doc, *freq));
        }
    }
    let mut words: Vec<(&str, Vec<(u32, u32)>)> = postings.into_iter().collect();
    words.sort_unstable_by(|a, b| a.0.cmp(b.0));

    let mut records = Writer(Vec::with_capacity(files.len() * RECORD));
    let mut names = Writer(Vec::new());
    let mut meta = Writer(Vec::new());
    let mut broken = 0;
    for (doc, (name, stamp, source)) in files.iter().enumerate() {
        records.u64(stamp.mtime_ns as u64);
        records.u64(stamp.size);
        records.u64(stamp.inode);
        records.u32(lengths[doc]);
        let start = meta.0.len();
        let kind = match source {
            Source::Cached(from) => {
                // Cached metadata is copied as it was written.
                meta.0
                    .extend_from_slice(old.meta_bytes(*from).unwrap_or_default());
                old.kind(*from).map_or(BROKEN, |k| k as u32)
            }
            Source::Parsed(Ok(entry)) => {
                meta.str(&entry.title);
                meta.strs(&entry.tags);
                meta.strs(&entry.targets);
                meta.len(entry.paths.len());
                for link in &entry.paths {
                    meta.str(&link.path);
                    meta.str(&link.blake3);
                }
                meta.str(&entry.created);
                meta.str(&entry.updated);
                meta.u64(entry.revision);
                entry.kind as u32
            }
            Source::Parsed(Err((line, message))) => {
                meta.u32(*line);
                meta.str(message);
                BROKEN
            }
        };
        broken += usize::from(kind == BROKEN);
        records.u32(kind);
        records.len(names.0.len());
        records.len(start);
        names.0.extend_from_slice(name.as_bytes());
    }
    let mut word_table = Writer(Vec::with_capacity(4 * (words.len() + 1)));
    let mut word_blob = Writer(Vec::new());
    let mut posting_table = Writer(Vec::with_capacity(4 * (words.len() + 1)));
    let mut posting_blob = Writer(Vec::new());
    word_table.u32(0);
    posting_table.u32(0);
    for (word, mut list) in words {
        word_blob.0.extend_from_slice(word.as_bytes());
        word_table.len(word_blob.0.len());
        list.sort_unstable();
        let mut previous: Option<u32> = None;
        for (doc, freq) in list {
            posting_blob.varint(previous.map_or(doc, |p| doc - p - 1));
            posting_blob.varint(freq);
            previous = Some(doc);
        }
        posting_table.len(posting_blob.0.len());
    }
    let parts = [
        records,
        names,
        word_table,
        word_blob,
        posting_table,
        posting_blob,
        meta,
    ];
    let mut out = Writer(Vec::with_capacity(
        HEADER + parts.iter().map(|p| p.0.len()).sum::<usize>(),
    ));
    out.0.extend_from_slice(MAGIC);
    out.u64(built as u64);
    out.len(files.len());
    out.len(parts[2].0.len() / 4 - 1);
    out.len(broken);
    for part in [1, 3, 5, 6] {
        out.len(parts[part].0.len());
    }
    for part in parts {
        out.0.extend_from_slice(&part.0);
    }
    out.0
}

fn n32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

struct Writer(Vec<u8>);

impl Writer {
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn len(&mut self, n: usize) {
        self.u32(n32(n));
    }
    fn str(&mut self, s: &str) {
        self.len(s.len());
        self.0.extend_from_slice(s.as_bytes());
    }
    fn strs(&mut self, items: &[String]) {
        self.len(items.len());
        for item in items {
            self.str(item);
        }
    }
    fn varint(&mut self, mut v: u32) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8], at: usize) -> Reader<'a> {
        Reader { bytes, at }
    }
    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let slice = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(slice)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn len(&mut self) -> Option<usize> {
        let n = self.u32()? as usize;
        // A length larger than what is left is corruption, not a reason to allocate.
        (n <= self.bytes.len().saturating_sub(self.at)).then_some(n)
    }
    fn str(&mut self) -> Option<&'a str> {
        let n = self.len()?;
        std::str::from_utf8(self.take(n)?).ok()
    }
    fn strs(&mut self) -> Option<Vec<String>> {
        let n = self.len()?;
        (0..n).map(|_| self.str().map(str::to_string)).collect()
    }
    fn varint(&mut self) -> Option<u32> {
        let mut value = 0u32;
        for shift in [0, 7, 14, 21, 28] {
            let byte = self.take(1)?[0];
            value |= u32::from(byte & 0x7f).checked_shl(shift)?;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }
}

/// Where the cache of the memory folder of `root` lives.
pub(crate) fn cache_path(root: &Path) -> PathBuf {
    root.join(".once").join("cache").join("memory-index")
}

#[cfg(test)]
mod tests {
    use super::*;

    struct TempDir(PathBuf);

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn temp(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("once-index-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn entry_file(id: &str, title: &str, body: &str) -> String {
        format!(
            "+++\nid = \"{id}\"\ntitle = \"{title}\"\nkind = \"gotcha\"\ntags = [\"t\"]\n\
             targets = [\"x\"]\ncreated = 2025-01-01T00:00:00Z\nupdated = 2025-01-01T00:00:00Z\n\
             revision = 3\n\n[[paths]]\npath = \"a.rs\"\nblake3 = \"00\"\n+++\n{body}"
        )
    }

    fn words(corpus: &Corpus, word: &str) -> Vec<String> {
        let Some(term) = corpus.lookup(word) else {
            return Vec::new();
        };
        corpus
            .postings(term)
            .into_iter()
            .map(|(doc, _)| corpus.id(doc).to_string())
            .collect()
    }

    #[test]
    fn the_cache_round_trips_and_is_reused_for_unchanged_files() {
        let dir = temp("round-trip");
        let memory = dir.0.join("memory");
        let cache = dir.0.join("cache/index");
        fs::create_dir_all(&memory).unwrap();
        fs::write(memory.join("a.md"), entry_file("a", "Alpha one", "shared")).unwrap();
        fs::write(memory.join("b.md"), entry_file("b", "Beta two", "shared\n")).unwrap();
        fs::write(memory.join("c.md"), "+++\nbroken").unwrap();
        // Older than the racy window, so the next scan takes them from the cache.
        let past = std::time::SystemTime::now() - std::time::Duration::from_secs(10);
        for name in ["a.md", "b.md", "c.md"] {
            let file = fs::File::options()
                .write(true)
                .open(memory.join(name))
                .unwrap();
            file.set_modified(past).unwrap();
        }
        let first = Corpus::scan(&memory, &cache, Need::Metadata).unwrap();
        assert_eq!(
            (0..first.len()).map(|d| first.file(d)).collect::<Vec<_>>(),
            ["c.md", "b.md", "a.md"]
        );
        assert_eq!(words(&first, "shared"), ["b", "a"]);
        assert_eq!(first.broken(&memory).len(), 1);
        let entry = first.entry(1).unwrap();
        assert_eq!(
            (entry.title.as_str(), entry.kind, entry.revision),
            ("Beta two", Kind::Gotcha, 3)
        );
        assert_eq!(entry.paths[0].path, "a.rs");
        // Reopened from disk, the same; a forgotten file and a new one are both seen, and the
        // cached file keeps its terms.
        let reopened = Corpus::open(fs::read(&cache).unwrap(), None).unwrap();
        assert_eq!(reopened.entry(1), first.entry(1));
        fs::remove_file(memory.join("a.md")).unwrap();
        fs::write(memory.join("d.md"), entry_file("d", "Delta", "shared")).unwrap();
        let next = Corpus::scan(&memory, &cache, Need::Metadata).unwrap();
        assert_eq!(words(&next, "shared"), ["d", "b"]);
        assert_eq!(words(&next, "beta"), ["b"]);
        assert!(words(&next, "alpha").is_empty());
    }

    #[test]
    fn a_folder_of_several_batches_is_statted_whole_and_edits_in_place_are_seen() {
        let dir = temp("batches");
        let memory = dir.0.join("memory");
        let cache = dir.0.join("index");
        fs::create_dir_all(&memory).unwrap();
        let count = 2 * BATCH + 7;
        for i in 0..count {
            let id = format!("e{i:04}");
            let body = format!("word{i:04}");
            fs::write(
                memory.join(format!("{id}.md")),
                entry_file(&id, "Many", &body),
            )
            .unwrap();
        }
        let first = Corpus::scan(&memory, &cache, Need::Postings).unwrap();
        assert_eq!(first.len(), count);
        assert!((1..count).all(|d| first.file(d - 1) > first.file(d)));
        // Same inode, same size, same second: only the racily-clean rule can see it.
        let edited = memory.join("e0500.md");
        let text = fs::read_to_string(&edited).unwrap();
        fs::write(&edited, text.replace("word0500", "edit0500")).unwrap();
        let next = Corpus::scan(&memory, &cache, Need::Postings).unwrap();
        assert_eq!(words(&next, "edit0500"), ["e0500"]);
        assert!(words(&next, "word0500").is_empty());
        assert_eq!(words(&next, "word0003"), ["e0003"]);
    }

    #[test]
    fn a_damaged_cache_is_refused() {
        let dir = temp("damaged");
        let memory = dir.0.join("memory");
        let cache = dir.0.join("index");
        fs::create_dir_all(&memory).unwrap();
        fs::write(memory.join("a.md"), entry_file("a", "Alpha", "body")).unwrap();
        Corpus::scan(&memory, &cache, Need::Metadata).unwrap();
        let bytes = fs::read(&cache).unwrap();
        assert!(Corpus::open(bytes.clone(), None).is_some());
        for cut in 0..bytes.len() {
            assert!(
                Corpus::open(bytes[..cut].to_vec(), None).is_none(),
                "cut at {cut}"
            );
        }
        for at in HEADER..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0xff;
            // Whatever opens must still answer without panicking.
            if let Some(corpus) = Corpus::open(flipped, None) {
                for doc in 0..corpus.len() {
                    let _ = (corpus.entry(doc), corpus.broken(&memory));
                }
                let _ = corpus.lookup("alpha").map(|t| corpus.postings(t));
            }
        }
    }
}
