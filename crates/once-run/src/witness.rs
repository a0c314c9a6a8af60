//! What a run looked at in the file system while it computed its keys and looked its results up,
//! each path recorded as it was when looked at, so that a later process can tell, mostly by one
//! `stat` per path, whether looking again would see the same (the no-op proof, `proof.rs`).
//!
//! The rule every caller keeps: a path is recorded *before or as* it is read, never after. A
//! record taken after the read could describe a change the run never saw, and the proof would
//! then stand for a result computed from other content. Recording first errs the other way: a
//! change between the record and the read makes the record fail later, which costs a normal run,
//! never a wrong one.
//!
//! A stamp can prove nothing when the path changed within [`once_fs::RACY_WINDOW`] of the record
//! (git's "racily clean"). Files read for their content therefore also carry the content's
//! digest, and listed folders a digest of their names, which a check compares when the stamp
//! cannot decide. A run that looked at something it cannot record (a read it cannot stamp) spoils
//! its witness, and no proof is written; so does a run in which an action misses the local cache,
//! which can prove no no-op, and its witness records nothing more (an incremental build of 1,000
//! packages stops pushing thousands of records it would throw away).

use std::fs::{self, FileType, Metadata};
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use once_fs::{FileKind, Lookup, Stamp};

/// One path as a run saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seen {
    /// Nothing there: `lstat` (or `stat`, when `follow`) found no such file.
    Absent { follow: bool },
    /// Something whose metadata alone decided what the run did (a `PATH` folder's file that is
    /// not the program, a link to a listed folder, a `//` input's base that is neither a folder
    /// nor a file it names): its stamp by `lstat` (or `stat`, when `follow`).
    Stat { follow: bool, stamp: Stamp },
    /// A file whose content the run read: its stamp by `lstat` (or `stat`, when `follow`), and
    /// the content's BLAKE3 for when the stamp cannot prove it unchanged.
    File {
        follow: bool,
        stamp: Stamp,
        digest: [u8; 32],
    },
    /// A folder whose names the run listed: its stamp by `lstat` (or by `stat` when `follow`:
    /// the path was a link, which a listing follows; the link itself is then a `Stat` of its
    /// own), and a digest of the names and kinds it held.
    Folder {
        follow: bool,
        stamp: Stamp,
        listing: [u8; 32],
    },
    /// A real folder (never a link) on the way to an output the run checked.
    Directory,
}

/// A folder's metadata taken before it was listed (see [`Witness::before_listing`]).
pub(crate) struct Before {
    follow: bool,
    found: io::Result<Metadata>,
}

/// The paths one run saw, gathered from every thread that computes keys.
#[derive(Debug)]
pub struct Witness {
    on: bool,
    seen: Mutex<Vec<(PathBuf, Seen)>>,
    spoiled: AtomicBool,
}

/// The witness of a run that keeps no record: every method returns at once.
pub(crate) static OFF: Witness = Witness::off();

impl Default for Witness {
    fn default() -> Self {
        Witness::new()
    }
}

impl Witness {
    /// A witness that records.
    pub fn new() -> Witness {
        Witness {
            on: true,
            seen: Mutex::new(Vec::new()),
            spoiled: AtomicBool::new(false),
        }
    }

    const fn off() -> Witness {
        Witness {
            on: false,
            seen: Mutex::new(Vec::new()),
            spoiled: AtomicBool::new(false),
        }
    }

    /// Whether it records: on, and not spoiled (a spoiled witness proves nothing, so whatever
    /// the run sees after that is not worth a record).
    pub(crate) fn is_on(&self) -> bool {
        self.on && !self.is_spoiled()
    }

    /// Whether the run looked at something it could not record: then nothing it saw proves
    /// anything.
    pub fn is_spoiled(&self) -> bool {
        self.spoiled.load(Ordering::Relaxed)
    }

    /// Says the run looked at something it cannot record.
    pub(crate) fn spoil(&self, why: &str) {
        if self.on && !self.spoiled.swap(true, Ordering::Relaxed) {
            tracing::debug!(why, "this run can prove no later no-op");
        }
    }

    fn push(&self, path: &Path, seen: Seen) {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((path.to_path_buf(), seen));
    }

    /// Records what is at `path` now, by `lstat` (or `stat`, when `follow`): call it just
    /// before the read it stands for.
    pub(crate) fn look(&self, path: &Path, follow: bool) {
        if self.is_on() {
            self.found(path, follow, &metadata(path, follow));
        }
    }

    /// Records what a look-up by `lstat` found at `path` (`found`, taken just before).
    pub(crate) fn looked(&self, path: &Path, found: &io::Result<Metadata>) {
        if self.is_on() {
            self.found(path, false, found);
        }
    }

    fn found(&self, path: &Path, follow: bool, found: &io::Result<Metadata>) {
        match found {
            Ok(metadata) => self.push(
                path,
                Seen::Stat {
                    follow,
                    stamp: Stamp::new(metadata, SystemTime::now()),
                },
            ),
            Err(error) if is_absence(error) => self.push(path, Seen::Absent { follow }),
            Err(_) => self.spoil("a path could not be looked at"),
        }
    }

    /// Records a file whose content had `digest`, given its metadata by `lstat` taken before the
    /// content was read.
    pub(crate) fn file(&self, path: &Path, metadata: &Metadata, digest: &blake3::Hash) {
        self.push_file(path, false, metadata, digest);
    }

    /// [`Witness::file`] for a path read through a link: `metadata` by `stat`.
    pub(crate) fn file_followed(&self, path: &Path, metadata: &Metadata, digest: &blake3::Hash) {
        self.push_file(path, true, metadata, digest);
    }

    fn push_file(&self, path: &Path, follow: bool, metadata: &Metadata, digest: &blake3::Hash) {
        if self.is_on() {
            let stamp = Stamp::new(metadata, SystemTime::now());
            self.push(
                path,
                Seen::File {
                    follow,
                    stamp,
                    digest: *digest.as_bytes(),
                },
            );
        }
    }

    /// Records the file at `path` (following a link) with its content, read here: call it
    /// just before something else reads it (an ignore file, which the `ignore` crate reads).
    /// Absent, or not a file, is recorded as such.
    pub(crate) fn read(&self, path: &Path) {
        if !self.is_on() {
            return;
        }
        match fs::metadata(path) {
            Ok(metadata) if metadata.is_file() => {
                let stamp = Stamp::new(&metadata, SystemTime::now());
                match fs::read(path) {
                    Ok(bytes) => self.push(
                        path,
                        Seen::File {
                            follow: true,
                            stamp,
                            digest: *blake3::hash(&bytes).as_bytes(),
                        },
                    ),
                    Err(_) => self.spoil("a file could not be read"),
                }
            }
            other => self.found(path, true, &other),
        }
    }

    /// The metadata of a folder about to be listed, to hand to [`Witness::listed`] once it is:
    /// by `lstat`, unless the path is a link (then the link is recorded, and the metadata is
    /// that of the folder it leads to).
    pub(crate) fn before_listing(&self, folder: &Path) -> Option<Before> {
        if !self.is_on() {
            return None;
        }
        let own = fs::symlink_metadata(folder);
        Some(match own {
            Ok(link) if link.file_type().is_symlink() => {
                self.looked(folder, &Ok(link));
                Before {
                    follow: true,
                    found: fs::metadata(folder),
                }
            }
            own => Before {
                follow: false,
                found: own,
            },
        })
    }

    /// Records the listing of `folder`: `before` from [`Witness::before_listing`], and the names
    /// (those that are UTF-8, the only ones a walk keeps) with their kinds; `None` when the
    /// folder could not be listed.
    pub(crate) fn listed<'n>(
        &self,
        folder: &Path,
        before: Option<Before>,
        names: Option<impl Iterator<Item = (&'n str, FileType)>>,
    ) {
        let Some(Before { follow, found }) = before else {
            return;
        };
        match (found, names) {
            (Ok(metadata), Some(names)) => self.push(
                folder,
                Seen::Folder {
                    follow,
                    stamp: Stamp::new(&metadata, SystemTime::now()),
                    listing: listing_digest(names),
                },
            ),
            (Err(error), None) if is_absence(&error) => {
                self.push(folder, Seen::Absent { follow });
            }
            // Unreadable (permissions) or gone meanwhile: a later check could not tell what
            // listing it would see.
            _ => self.spoil("a folder could not be listed"),
        }
    }

    /// Records a folder on the way to an output, which the run found to be a real folder.
    pub(crate) fn directory(&self, path: &Path) {
        if self.is_on() {
            self.push(path, Seen::Directory);
        }
    }

    /// Everything seen, sorted by path, each distinct record once; `None` when spoiled.
    pub(crate) fn into_records(self) -> Option<Vec<(PathBuf, Seen)>> {
        if self.is_spoiled() {
            return None;
        }
        let mut seen = self
            .seen
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        seen.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        seen.dedup();
        // A folder listed with its kinds proves its entries' kinds: a real folder inside it that
        // became a link changes its stamp and its listing. And a folder listed by `lstat` is
        // itself no link. Either way it needs no `Directory` check of its own.
        let listed: std::collections::HashMap<PathBuf, bool> = seen
            .iter()
            .filter_map(|(path, seen)| match seen {
                Seen::Folder { follow, .. } => Some((path.clone(), *follow)),
                _ => None,
            })
            .collect();
        seen.retain(|(path, seen)| {
            !matches!(seen, Seen::Directory)
                || !(listed.get(path) == Some(&false)
                    || path.parent().is_some_and(|p| listed.contains_key(p)))
        });
        Some(seen)
    }
}

/// Whether a failed look-up means nothing is there (rather than that it could not be looked at).
fn is_absence(error: &io::Error) -> bool {
    matches!(error.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory)
}

/// A digest of a folder's names and kinds, in name order: what a walk's decisions depend on
/// besides the files' own content.
pub(crate) fn listing_digest<'n>(names: impl Iterator<Item = (&'n str, FileType)>) -> [u8; 32] {
    let mut names: Vec<(&str, u8)> = names.map(|(name, kind)| (name, kind_byte(kind))).collect();
    names.sort_unstable();
    let mut hasher = blake3::Hasher::new();
    for (name, kind) in names {
        hasher.update(&(name.len() as u64).to_le_bytes());
        hasher.update(name.as_bytes());
        hasher.update(&[kind]);
    }
    *hasher.finalize().as_bytes()
}

fn kind_byte(kind: FileType) -> u8 {
    if kind.is_symlink() {
        b'l'
    } else if kind.is_dir() {
        b'd'
    } else if kind.is_file() {
        b'f'
    } else {
        b'o'
    }
}

impl Seen {
    /// Whether `path` (relative to the lookup's root, or absolute) would be seen the same now.
    /// `false` means "look again", never a guess: anything that cannot be checked is a change.
    pub(crate) fn holds(&self, lookup: &Lookup, path: &Path, buffer: &mut [u8]) -> bool {
        match self {
            Seen::Absent { follow } => lookup
                .status(path, *follow)
                .is_err_and(|error| is_absence(&error)),
            Seen::Stat { follow, stamp } => lookup
                .status(path, *follow)
                .is_ok_and(|now| stamp.proves_unchanged_by_status(&now)),
            Seen::File {
                follow,
                stamp,
                digest,
            } => match lookup.status(path, *follow) {
                Ok(now) if stamp.proves_unchanged_by_status(&now) => true,
                Ok(now) if now.kind() == FileKind::File => {
                    crate::file_facts::hash_file(&lookup.root().join(path), buffer)
                        .is_ok_and(|found| found.as_bytes() == digest)
                }
                _ => false,
            },
            Seen::Folder {
                follow,
                stamp,
                listing,
            } => match lookup.status(path, *follow) {
                Ok(now) if stamp.proves_unchanged_by_status(&now) => true,
                Ok(now) if now.kind() == FileKind::Folder => {
                    list(&lookup.root().join(path)).is_some_and(|found| found == *listing)
                }
                _ => false,
            },
            Seen::Directory => lookup
                .status(path, false)
                .is_ok_and(|now| now.kind() == FileKind::Folder),
        }
    }
}

fn metadata(path: &Path, follow: bool) -> io::Result<Metadata> {
    if follow {
        fs::metadata(path)
    } else {
        fs::symlink_metadata(path)
    }
}

/// The listing digest of `folder` as it is now.
fn list(folder: &Path) -> Option<[u8; 32]> {
    let mut names = Vec::new();
    for entry in fs::read_dir(folder).ok()? {
        let entry = entry.ok()?;
        let kind = entry.file_type().ok()?;
        if let Ok(name) = entry.file_name().into_string() {
            names.push((name, kind));
        }
    }
    Some(listing_digest(
        names.iter().map(|(name, kind)| (name.as_str(), *kind)),
    ))
}
