//! The file-hash cache, `.once/cache/files`: for each input or output file hashed before, its
//! [`Stamp`] (size, device, inode, modification and status-change times), its BLAKE3 digest (for
//! keys) and its SHA-256 digest and size (for the Remote Execution API), both taken in one read,
//! so a run proves most files unchanged with one `stat` instead of reading them, as git's index
//! does, and describing an action for a remote cache reads no file a run has hashed.
//!
//! Only a stamp that was not racily clean when taken is trusted: a file changed within
//! [`once_fs::RACY_WINDOW`] of its hashing may have changed again without its times showing it,
//! so it is hashed again next time (and trusted once it has been still for the window). The file
//! is loaded once per run and written back, atomically, only when the run learned something. It
//! is a cache and nothing else: a missing, torn or foreign file is an empty cache, never an error,
//! and this module must never return a digest that a stamp does not prove.

use std::collections::HashMap;
use std::fs::{self, Metadata};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use once_fs::{STAMP_BYTES, Stamp};

use once_fs::write_replacing;

use crate::witness::{OFF, Witness};
use sha2::{Digest as _, Sha256};

/// The first bytes of the file; a new layout gets a new magic, and old files read as empty.
const MAGIC: &[u8] = b"once file hashes v2\n";

/// What one read of a file learns: its digests and how many bytes it had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Digests {
    pub(crate) blake3: blake3::Hash,
    pub(crate) sha256: [u8; 32],
    pub(crate) size: u64,
}

/// `MAGIC`'s entry size beyond the path and the stamp: BLAKE3, SHA-256, size.
const DIGESTS_BYTES: usize = 32 + 32 + 8;

impl Digests {
    /// Both digests of the file at `path`, in one read through `buffer`.
    pub(crate) fn of_file(path: &Path, buffer: &mut [u8]) -> io::Result<Digests> {
        let mut file = fs::File::open(path)?;
        let mut blake3 = blake3::Hasher::new();
        let mut sha256 = Sha256::new();
        let mut size: u64 = 0;
        loop {
            let n = io::Read::read(&mut file, buffer)?;
            if n == 0 {
                break;
            }
            blake3.update(&buffer[..n]);
            sha256.update(&buffer[..n]);
            size += n as u64;
        }
        Ok(Digests {
            blake3: blake3.finalize(),
            sha256: sha256.finalize().into(),
            size,
        })
    }

    fn to_bytes(self) -> [u8; DIGESTS_BYTES] {
        let mut out = [0; DIGESTS_BYTES];
        out[..32].copy_from_slice(self.blake3.as_bytes());
        out[32..64].copy_from_slice(&self.sha256);
        out[64..].copy_from_slice(&self.size.to_le_bytes());
        out
    }

    fn from_bytes(bytes: &[u8; DIGESTS_BYTES]) -> Option<Digests> {
        Some(Digests {
            blake3: blake3::Hash::from_bytes(bytes[..32].try_into().ok()?),
            sha256: bytes[32..64].try_into().ok()?,
            size: u64::from_le_bytes(bytes[64..].try_into().ok()?),
        })
    }
}

/// Files hashed before, and those hashed during this run.
#[derive(Debug)]
pub(crate) struct FileHashes {
    path: PathBuf,
    known: HashMap<PathBuf, (Stamp, Digests)>,
    learned: Mutex<Vec<(PathBuf, Stamp, Digests)>>,
    /// Where every file this run hashes is recorded, for a later run's proof of a no-op.
    witness: Option<Arc<Witness>>,
}

impl FileHashes {
    /// The cache of the workspace whose cache folder is `cache_root` (`.once/cache`).
    pub(crate) fn load(cache_root: &Path) -> FileHashes {
        let path = cache_root.join("files");
        let known = fs::read(&path)
            .ok()
            .and_then(|bytes| decode(&bytes))
            .unwrap_or_default();
        FileHashes {
            path,
            known,
            learned: Mutex::new(Vec::new()),
            witness: None,
        }
    }

    /// The same cache, recording every file it is asked about in `witness`.
    pub(crate) fn witnessed_by(self, witness: Option<Arc<Witness>>) -> FileHashes {
        FileHashes { witness, ..self }
    }

    /// What this run's reads are recorded in (a witness that records nothing, when none).
    pub(crate) fn witness(&self) -> &Witness {
        self.witness.as_deref().unwrap_or(&OFF)
    }

    /// The BLAKE3 digest of the file at `path`, whose metadata (taken without following a
    /// symbolic link) is `metadata`: from the cache when a trusted stamp proves it, else by
    /// reading it.
    pub(crate) fn digest(
        &self,
        path: &Path,
        metadata: &Metadata,
        buffer: &mut [u8],
    ) -> io::Result<blake3::Hash> {
        self.digests(path, metadata, buffer)
            .map(|digests| digests.blake3)
    }

    /// Both digests of the file at `path`, as [`FileHashes::digest`] finds them.
    pub(crate) fn digests(
        &self,
        path: &Path,
        metadata: &Metadata,
        buffer: &mut [u8],
    ) -> io::Result<Digests> {
        if let Some((stamp, digests)) = self.known.get(path)
            && stamp.proves_unchanged_by(metadata)
        {
            self.witness().file(path, metadata, &digests.blake3);
            return Ok(*digests);
        }
        // Taken before reading: a write that lands during the read makes the stamp racy.
        let read_at = SystemTime::now();
        let digest = Digests::of_file(path, buffer)?;
        self.witness().file(path, metadata, &digest.blake3);
        let stamp = Stamp::new(metadata, read_at);
        if !stamp.is_racy() {
            self.learned
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((path.to_path_buf(), stamp, digest));
        }
        Ok(digest)
    }

    /// Writes what this run learned back, if anything, by renaming a complete file into place:
    /// a crash leaves the old file or the new one, and a lost update only costs a re-hash, so it
    /// is not synced. Two runs saving at once each write a consistent file; the last one wins.
    pub(crate) fn save(self) {
        let learned = self
            .learned
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        if learned.is_empty() {
            return;
        }
        let mut all = self.known;
        for (path, stamp, digest) in learned {
            all.insert(path, (stamp, digest));
        }
        // Entries of files that are gone would pile up; one stat each is cheap next to the hashing
        // that made this save necessary.
        all.retain(|path, _| fs::symlink_metadata(path).is_ok());
        // Never through a link planted in `.once/` (see `once_fs::state_dir`).
        if let Some(parent) = self.path.parent()
            && let Err(error) = once_fs::state_dir(parent)
        {
            tracing::debug!(path = %self.path.display(), %error, "cannot save the file-hash cache");
            return;
        }
        if let Err(error) = write_replacing(&self.path, &encode(&all)) {
            tracing::debug!(path = %self.path.display(), %error, "cannot save the file-hash cache");
        }
    }
}

/// `MAGIC`, then per entry: path length (u32 LE), path bytes, stamp, BLAKE3, SHA-256, size (u64
/// LE); then the BLAKE3 of
/// everything before it, so a torn or foreign file is recognised.
fn encode(entries: &HashMap<PathBuf, (Stamp, Digests)>) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAGIC.len() + entries.len() * 200 + 32);
    out.extend_from_slice(MAGIC);
    for (path, (stamp, digest)) in entries {
        let bytes = path.as_os_str().as_encoded_bytes();
        let Ok(len) = u32::try_from(bytes.len()) else {
            continue;
        };
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(bytes);
        out.extend_from_slice(&stamp.to_bytes());
        out.extend_from_slice(&digest.to_bytes());
    }
    let check = blake3::hash(&out);
    out.extend_from_slice(check.as_bytes());
    out
}

fn decode(bytes: &[u8]) -> Option<HashMap<PathBuf, (Stamp, Digests)>> {
    let (body, check) = bytes.split_at_checked(bytes.len().checked_sub(32)?)?;
    if blake3::hash(body).as_bytes() != check {
        return None;
    }
    let mut rest = body.strip_prefix(MAGIC)?;
    let mut take = |n: usize| -> Option<&[u8]> {
        let (head, tail) = rest.split_at_checked(n)?;
        rest = tail;
        Some(head)
    };
    let mut entries = HashMap::new();
    while let Some(len) = take(4) {
        let len = u32::from_le_bytes(len.try_into().ok()?) as usize;
        let path = path_from(take(len)?);
        let stamp = Stamp::from_bytes(take(STAMP_BYTES)?.try_into().ok()?);
        let digest = Digests::from_bytes(take(DIGESTS_BYTES)?.try_into().ok()?)?;
        if let Some(path) = path {
            entries.insert(path, (stamp, digest));
        }
    }
    Some(entries)
}

/// The path whose bytes [`encode`] wrote: any bytes on Unix.
#[cfg(unix)]
fn path_from(bytes: &[u8]) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
}

/// The path whose bytes [`encode`] wrote, when they are UTF-8. Windows' own encoding of the rare
/// name that is not valid Unicode cannot be trusted back from a file (std offers that only
/// unchecked), so such an entry is dropped and its file hashed again.
#[cfg(windows)]
fn path_from(bytes: &[u8]) -> Option<PathBuf> {
    std::str::from_utf8(bytes).ok().map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("once-run-hashes-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A cache whose only entry is `path` with `stamp`, as a previous run would have left it.
    fn cache_with(dir: &Path, path: &Path, stamp: Stamp, digest: blake3::Hash) -> FileHashes {
        let mut known = HashMap::new();
        let digests = Digests {
            blake3: digest,
            sha256: [7; 32],
            size: 4,
        };
        known.insert(path.to_path_buf(), (stamp, digests));
        fs::write(dir.join("files"), encode(&known)).unwrap();
        FileHashes::load(dir)
    }

    #[test]
    fn a_trusted_stamp_spares_the_read() {
        let dir = temp_dir("trusted");
        let file = dir.join("input.txt");
        fs::write(&file, "aaaa").unwrap();
        let metadata = fs::symlink_metadata(&file).unwrap();
        // Hashed "long after" it was written: not racy, so the stamp is trusted...
        let stamp = Stamp::new(&metadata, SystemTime::now() + Duration::from_secs(10));
        let recorded = blake3::hash(b"recorded");
        let cache = cache_with(&dir, &file, stamp, recorded);
        let mut buffer = vec![0; 1024];
        // ...so the recorded digest is returned without reading the file.
        assert_eq!(
            cache.digest(&file, &metadata, &mut buffer).unwrap(),
            recorded
        );
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_sha256_is_kept_under_the_same_stamp_and_taken_in_the_same_read() {
        let dir = temp_dir("sha256");
        let file = dir.join("input.txt");
        fs::write(&file, "aaaa").unwrap();
        let metadata = fs::symlink_metadata(&file).unwrap();
        let stamp = Stamp::new(&metadata, SystemTime::now() + Duration::from_secs(10));
        let cache = cache_with(&dir, &file, stamp, blake3::hash(b"recorded"));
        let mut buffer = vec![0; 3];
        // A trusted stamp stands for the SHA-256 too: the recorded one, not the file's.
        let cached = cache.digests(&file, &metadata, &mut buffer).unwrap();
        assert_eq!((cached.sha256, cached.size), ([7; 32], 4));
        // Read (here through a buffer smaller than the file), both digests are the content's.
        let read = Digests::of_file(&file, &mut buffer).unwrap();
        assert_eq!(read.blake3, blake3::hash(b"aaaa"));
        let expected: [u8; 32] = Sha256::digest(b"aaaa").into();
        assert_eq!((read.sha256, read.size), (expected, 4));
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_edit_in_the_racy_window_is_seen_even_when_the_stat_is_identical() {
        let dir = temp_dir("racy");
        let file = dir.join("input.txt");
        fs::write(&file, "aaaa").unwrap();
        let before = fs::symlink_metadata(&file).unwrap();
        // Hashed right after the write, within the file system's timestamp granularity.
        let stamp = Stamp::new(&before, SystemTime::now());
        assert!(stamp.is_racy());
        let cache = cache_with(&dir, &file, stamp, blake3::hash(b"aaaa"));
        // Same size, same times: on a coarse clock the edit leaves the stat as it was.
        fs::write(&file, "bbbb").unwrap();
        let mut buffer = vec![0; 1024];
        assert_eq!(
            cache.digest(&file, &before, &mut buffer).unwrap(),
            blake3::hash(b"bbbb")
        );
        // And nothing racy is learned for next time.
        assert!(cache.learned.lock().unwrap().is_empty());
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_changed_stat_is_read_again() {
        let dir = temp_dir("changed");
        let file = dir.join("input.txt");
        fs::write(&file, "aaaa").unwrap();
        let metadata = fs::symlink_metadata(&file).unwrap();
        let stamp = Stamp::new(&metadata, SystemTime::now() + Duration::from_secs(10));
        let cache = cache_with(&dir, &file, stamp, blake3::hash(b"aaaa"));
        fs::write(&file, "bbbbb").unwrap();
        let now = fs::symlink_metadata(&file).unwrap();
        let mut buffer = vec![0; 1024];
        assert_eq!(
            cache.digest(&file, &now, &mut buffer).unwrap(),
            blake3::hash(b"bbbbb")
        );
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn torn_or_foreign_files_are_an_empty_cache() {
        let mut known = HashMap::new();
        let metadata = fs::symlink_metadata(std::env::temp_dir()).unwrap();
        known.insert(
            PathBuf::from("/x/y"),
            (
                Stamp::new(&metadata, SystemTime::now()),
                Digests {
                    blake3: blake3::hash(b"y"),
                    sha256: [1; 32],
                    size: 1,
                },
            ),
        );
        let bytes = encode(&known);
        assert_eq!(decode(&bytes).unwrap().len(), 1);
        assert!(decode(&bytes[..bytes.len() - 1]).is_none());
        assert!(decode(b"").is_none());
        assert!(decode(&[b'x'; 100]).is_none());
    }
}
