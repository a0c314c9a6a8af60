//! The rebuildable index cache at `.once/cache/memory-index`: every entry already parsed, with
//! its search terms, so a search does not parse thousands of files.
//!
//! Theory of operation. The entry files are the truth; the cache is only ever a shortcut and is
//! safe to delete. Each cached entry remembers its file's stamp (modification time in
//! nanoseconds, size and inode). A scan lists the memory folder and stats each `*.md` file: a file
//! whose stamp matches is taken from the cache, any other file is parsed again, and files that
//! are gone are dropped. File systems record modification times coarsely, so a file changed
//! twice within one tick, with the same size, could keep its stamp: a stamp newer than
//! [`RACY_NS`] before the cache was built is never trusted (git's "racily clean" rule). When the
//! scan found anything new, the cache is rewritten atomically; two processes doing so at once
//! both write a valid cache, and the loser's is merely re-checked next time.
//!
//! Must never be needed for correctness: a missing, corrupt or foreign cache is rebuilt silently.

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::front_matter;
use crate::model::{Entry, Kind, PathLink};
use crate::search::{Dictionary, Terms};
use crate::{Broken, Error};
use once_fs::{self as fsio, Mode};

const MAGIC: &[u8; 8] = b"oncemem1";
/// How recent a stamp must be, relative to the cache, to be checked again anyway.
const RACY_NS: i64 = 2_000_000_000;

/// What a file looked like when it was parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    mtime_ns: i64,
    size: u64,
    inode: u64,
}

impl Stamp {
    fn of(meta: &fs::Metadata) -> Stamp {
        Stamp {
            mtime_ns: meta.mtime().saturating_mul(1_000_000_000) + meta.mtime_nsec(),
            size: meta.size(),
            inode: meta.ino(),
        }
    }
}

/// One file of the memory folder, parsed.
#[derive(Debug, Clone)]
pub(crate) struct Doc {
    /// File name, `<id>.md`.
    pub(crate) file: String,
    stamp: Stamp,
    pub(crate) parsed: Parsed,
}

#[derive(Debug, Clone)]
pub(crate) enum Parsed {
    Entry(Box<Entry>, Terms),
    Broken { line: u32, message: String },
}

/// Every file of the memory folder, parsed, with a shared term dictionary.
#[derive(Debug, Default)]
pub(crate) struct Corpus {
    pub(crate) docs: Vec<Doc>,
    pub(crate) dictionary: Dictionary,
}

impl Corpus {
    /// Scans `dir` through the cache at `cache`, rewriting the cache when it was out of date.
    pub(crate) fn scan(dir: &Path, cache: &Path) -> Result<Corpus, Error> {
        let started = now_ns();
        let (built, mut corpus) = read_cache(cache).unwrap_or_default();
        let mut cached: HashMap<String, Doc> = corpus
            .docs
            .drain(..)
            .map(|doc| (doc.file.clone(), doc))
            .collect();
        let listing = match fs::read_dir(dir) {
            Ok(listing) => listing,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Corpus::default());
            }
            Err(error) => return Err(Error::io("list", dir)(error)),
        };
        let mut changed = false;
        let mut racy = false;
        for item in listing {
            let item = item.map_err(Error::io("list", dir))?;
            let name = item.file_name();
            let Some(name) = name.to_str() else { continue };
            let Some(id) = name.strip_suffix(".md") else {
                continue;
            };
            if name.starts_with('.') || !once_fs::clock::is_valid_id(id) {
                continue;
            }
            let Ok(meta) = item.metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            let stamp = Stamp::of(&meta);
            let trusted = stamp.mtime_ns.saturating_add(RACY_NS) < built;
            racy |= !trusted;
            if let Some(doc) = cached.remove(name)
                && doc.stamp == stamp
                && trusted
            {
                corpus.docs.push(doc);
                continue;
            }
            let path = dir.join(name);
            let text = match fs::read(&path) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                // Removed between the listing and the read: it is simply not there.
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                Err(error) => return Err(Error::io("read", path)(error)),
            };
            let parsed = match front_matter::parse(&text, id) {
                Ok(entry) => {
                    let terms = corpus.dictionary.terms(&entry);
                    Parsed::Entry(Box::new(entry), terms)
                }
                Err(problem) => Parsed::Broken {
                    line: problem.line,
                    message: problem.message,
                },
            };
            changed = true;
            corpus.docs.push(Doc {
                file: name.to_string(),
                stamp,
                parsed,
            });
        }
        changed |= !cached.is_empty();
        // Racy stamps are re-read until a cache is written late enough to trust them.
        let settled = racy
            && corpus
                .docs
                .iter()
                .all(|d| d.stamp.mtime_ns + RACY_NS < started);
        if changed || settled {
            // The cache is a shortcut: failing to write it (a read-only checkout) is not an error.
            let _ = write_cache(cache, started, &corpus);
        }
        // Newest first, then by id, so listings and score ties are stable.
        corpus.docs.sort_by(|a, b| b.file.cmp(&a.file));
        Ok(corpus)
    }

    /// The broken files, in file order.
    pub(crate) fn broken(&self, dir: &Path) -> Vec<Broken> {
        let mut broken: Vec<Broken> = self
            .docs
            .iter()
            .filter_map(|doc| match &doc.parsed {
                Parsed::Broken { line, message } => Some(Broken {
                    file: dir.join(&doc.file),
                    line: *line,
                    message: message.clone(),
                }),
                Parsed::Entry(..) => None,
            })
            .collect();
        broken.sort_by(|a, b| a.file.cmp(&b.file));
        broken
    }
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}

// ------------------------------------------------------------------ encoding

fn write_cache(path: &Path, built: i64, corpus: &Corpus) -> Result<(), std::io::Error> {
    // Only the words still used are written, renumbered densely.
    let mut remap: HashMap<u32, u32> = HashMap::new();
    let mut words: Vec<&str> = Vec::new();
    for doc in &corpus.docs {
        if let Parsed::Entry(_, terms) = &doc.parsed {
            for (term, _) in &terms.freqs {
                remap.entry(*term).or_insert_with(|| {
                    words.push(corpus.dictionary.words[*term as usize].as_str());
                    u32::try_from(words.len() - 1).unwrap_or(u32::MAX)
                });
            }
        }
    }
    let mut out = Writer(Vec::with_capacity(1 << 20));
    out.0.extend_from_slice(MAGIC);
    out.u64(built as u64);
    out.len(words.len());
    for word in &words {
        out.str(word);
    }
    out.len(corpus.docs.len());
    for doc in &corpus.docs {
        out.str(&doc.file);
        out.u64(doc.stamp.mtime_ns as u64);
        out.u64(doc.stamp.size);
        out.u64(doc.stamp.inode);
        match &doc.parsed {
            Parsed::Entry(entry, terms) => {
                out.0.push(0);
                out.str(&entry.id);
                out.str(&entry.title);
                out.0.push(entry.kind as u8);
                out.strs(&entry.tags);
                out.strs(&entry.targets);
                out.len(entry.paths.len());
                for link in &entry.paths {
                    out.str(&link.path);
                    out.str(&link.blake3);
                }
                out.str(&entry.created);
                out.str(&entry.updated);
                out.u64(entry.revision);
                out.str(&entry.body);
                out.u32(terms.length);
                let mut freqs: Vec<(u32, u32)> = terms
                    .freqs
                    .iter()
                    .map(|(t, f)| (remap.get(t).copied().unwrap_or(u32::MAX), *f))
                    .collect();
                freqs.sort_unstable();
                out.len(freqs.len());
                for (term, freq) in freqs {
                    out.u32(term);
                    out.u32(freq);
                }
            }
            Parsed::Broken { line, message } => {
                out.0.push(1);
                out.u32(*line);
                out.str(message);
            }
        }
    }
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    fsio::write_atomic(path, &out.0, Mode::Replace)
}

fn read_cache(path: &Path) -> Option<(i64, Corpus)> {
    let bytes = fs::read(path).ok()?;
    let mut r = Reader {
        bytes: &bytes,
        at: 0,
    };
    if r.take(MAGIC.len())? != MAGIC {
        return None;
    }
    let built = r.u64()? as i64;
    let word_count = r.len()?;
    let mut words = Vec::with_capacity(word_count);
    for _ in 0..word_count {
        words.push(r.str()?.to_string());
    }
    let doc_count = r.len()?;
    let mut docs = Vec::with_capacity(doc_count);
    for _ in 0..doc_count {
        let file = r.str()?.to_string();
        let stamp = Stamp {
            mtime_ns: r.u64()? as i64,
            size: r.u64()?,
            inode: r.u64()?,
        };
        let parsed = match r.take(1)?[0] {
            0 => {
                let id = r.str()?.to_string();
                let title = r.str()?.to_string();
                let kind = *Kind::ALL.get(usize::from(r.take(1)?[0]))?;
                let tags = r.strs()?;
                let targets = r.strs()?;
                let path_count = r.len()?;
                let mut paths = Vec::with_capacity(path_count);
                for _ in 0..path_count {
                    paths.push(PathLink {
                        path: r.str()?.to_string(),
                        blake3: r.str()?.to_string(),
                    });
                }
                let entry = Entry {
                    id,
                    title,
                    kind,
                    tags,
                    targets,
                    paths,
                    created: r.str()?.to_string(),
                    updated: r.str()?.to_string(),
                    revision: r.u64()?,
                    body: r.str()?.to_string(),
                };
                let length = r.u32()?;
                let freq_count = r.len()?;
                let mut freqs = Vec::with_capacity(freq_count);
                for _ in 0..freq_count {
                    let term = r.u32()?;
                    if term as usize >= word_count {
                        return None;
                    }
                    freqs.push((term, r.u32()?));
                }
                Parsed::Entry(Box::new(entry), Terms { freqs, length })
            }
            1 => Parsed::Broken {
                line: r.u32()?,
                message: r.str()?.to_string(),
            },
            _ => return None,
        };
        docs.push(Doc {
            file,
            stamp,
            parsed,
        });
    }
    (r.at == bytes.len()).then(|| {
        (
            built,
            Corpus {
                docs,
                dictionary: Dictionary::from_words(words),
            },
        )
    })
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
        self.u32(u32::try_from(n).unwrap_or(u32::MAX));
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
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
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
        (n <= self.bytes.len() - self.at).then_some(n)
    }
    fn str(&mut self) -> Option<&'a str> {
        let n = self.len()?;
        std::str::from_utf8(self.take(n)?).ok()
    }
    fn strs(&mut self) -> Option<Vec<String>> {
        let n = self.len()?;
        (0..n).map(|_| self.str().map(str::to_string)).collect()
    }
}

/// Where the cache of the memory folder of `root` lives.
pub(crate) fn cache_path(root: &Path) -> PathBuf {
    root.join(".once").join("cache").join("memory-index")
}
