//! Where a blob read from a server goes while it arrives, and what the caller gets once it is
//! whole and correct: up to [`IN_MEMORY`] bytes in memory, above that a file in a folder the
//! caller names (a staging name, `.blob.PID.RAND.tmp`, that the caller's own sweeping of abandoned
//! staging files recognises). The bytes are hashed as they arrive and the sink refuses the first
//! byte past the size the digest states, so neither memory nor disk ever holds more than the
//! digest promised. It must never hand out a blob whose size and SHA-256 it has not checked, nor
//! leave a file behind when the blob is refused or dropped.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use bytes::{Bytes, BytesMut};
use sha2::{Digest as _, Sha256};

use crate::digest::{hex, show};
use crate::reapi::Digest;

/// The largest blob kept in memory; a larger one is written to a file as it arrives.
pub const IN_MEMORY: u64 = 1024 * 1024;

/// A blob read from a server and checked against its digest.
#[derive(Debug)]
pub enum Blob {
    /// A blob of at most [`IN_MEMORY`] bytes (or one of a batch, which is as small).
    Memory(Bytes),
    /// A larger one, in a file of the folder the caller named.
    File(BlobFile),
}

impl Blob {
    /// The blob's size in bytes.
    pub fn len(&self) -> u64 {
        match self {
            Blob::Memory(bytes) => bytes.len() as u64,
            Blob::File(file) => file.size,
        }
    }

    /// Whether the blob is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A verified blob in a file of its own, deleted when dropped unless [`BlobFile::keep`] took it.
#[derive(Debug)]
pub struct BlobFile {
    path: PathBuf,
    size: u64,
}

impl BlobFile {
    /// Where the blob is, until this is dropped.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Moves the file to `dest` (in the same file system); the file is the caller's from then on.
    /// On failure the file stays where it was and is deleted with `self`.
    pub fn keep(self, dest: &Path) -> io::Result<()> {
        fs::rename(&self.path, dest)?;
        std::mem::forget(self);
        Ok(())
    }

    /// Writes `bytes` into a new staging file of `folder`, for a small blob the caller wants on
    /// disk rather than in memory.
    pub(crate) fn write(folder: &Path, bytes: &[u8]) -> io::Result<BlobFile> {
        let path = staging_name(folder);
        let blob = BlobFile {
            path,
            size: bytes.len() as u64,
        };
        let mut file = File::create_new(&blob.path)?;
        file.write_all(bytes)?;
        Ok(blob)
    }
}

impl Drop for BlobFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// Why a sink refused a blob.
#[derive(Debug)]
pub(crate) enum SinkError {
    /// The digest states a negative size.
    NegativeSize,
    /// More bytes arrived than the digest states.
    TooLong { expected: u64 },
    /// The bytes ended with another size or hash: the digest they have.
    Mismatch { actual: Digest },
    /// The staging file could not be written.
    Io(io::Error),
}

/// A blob being received: hashed and counted as it arrives, in memory or in a staging file.
pub(crate) struct BlobSink {
    expected: Digest,
    /// The size the digest states, already checked to be non-negative.
    size: u64,
    received: u64,
    hasher: Sha256,
    memory: BytesMut,
    file: Option<(BlobFile, File)>,
}

impl BlobSink {
    /// A sink for `expected`, spilling to a file of `folder` when the digest states more than
    /// [`IN_MEMORY`] bytes. Nothing is allocated from the stated size: memory grows with what
    /// arrives, up to [`IN_MEMORY`].
    pub(crate) fn new(expected: &Digest, folder: &Path) -> Result<BlobSink, SinkError> {
        let size = u64::try_from(expected.size_bytes).map_err(|_| SinkError::NegativeSize)?;
        let file = if size > IN_MEMORY {
            let blob = BlobFile {
                path: staging_name(folder),
                size,
            };
            let file = File::create_new(&blob.path).map_err(SinkError::Io)?;
            Some((blob, file))
        } else {
            None
        };
        Ok(BlobSink {
            expected: expected.clone(),
            size,
            received: 0,
            hasher: Sha256::new(),
            memory: BytesMut::new(),
            file,
        })
    }

    /// Takes the next bytes of the blob; refuses them the moment they go past the stated size.
    pub(crate) fn write(&mut self, data: &[u8]) -> Result<(), SinkError> {
        let after = self.received.saturating_add(data.len() as u64);
        if after > self.size {
            return Err(SinkError::TooLong {
                expected: self.size,
            });
        }
        self.received = after;
        self.hasher.update(data);
        match &mut self.file {
            Some((_, file)) => file.write_all(data).map_err(SinkError::Io),
            None => {
                self.memory.extend_from_slice(data);
                Ok(())
            }
        }
    }

    /// The blob, if what arrived has the digest's size and hash.
    pub(crate) fn finish(self) -> Result<Blob, SinkError> {
        let hash = hex(&self.hasher.finalize());
        if self.received != self.size || !hash.eq_ignore_ascii_case(&self.expected.hash) {
            return Err(SinkError::Mismatch {
                actual: Digest {
                    hash,
                    size_bytes: i64::try_from(self.received).unwrap_or(i64::MAX),
                },
            });
        }
        match self.file {
            Some((blob, file)) => {
                // Flushed before anyone reads it by name; a crash may still lose it (the caller
                // hashes it again before trusting it as a cache object).
                drop(file);
                Ok(Blob::File(blob))
            }
            None => Ok(Blob::Memory(self.memory.freeze())),
        }
    }

    /// `hash/size` of the blob this sink expects, for messages.
    pub(crate) fn expected(&self) -> String {
        show(&self.expected)
    }
}

/// A fresh staging name in `folder`: `.blob.PID.RAND.tmp`.
fn staging_name(folder: &Path) -> PathBuf {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    folder.join(format!(
        ".blob.{}.{:08x}.tmp",
        std::process::id(),
        h.finish() as u32
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest_of;

    fn folder() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "once-blob-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn staged(dir: &Path) -> usize {
        fs::read_dir(dir).unwrap().count()
    }

    #[test]
    fn a_small_blob_stays_in_memory_and_a_large_one_goes_to_a_file() {
        let dir = folder();
        let small = b"hello".to_vec();
        let mut sink = BlobSink::new(&digest_of(&small), &dir).unwrap();
        sink.write(&small[..2]).unwrap();
        sink.write(&small[2..]).unwrap();
        assert!(matches!(sink.finish().unwrap(), Blob::Memory(b) if b == small));
        let large = vec![7u8; IN_MEMORY as usize + 1];
        let mut sink = BlobSink::new(&digest_of(&large), &dir).unwrap();
        for chunk in large.chunks(4096) {
            sink.write(chunk).unwrap();
        }
        let Blob::File(file) = sink.finish().unwrap() else {
            panic!("a large blob in memory");
        };
        assert_eq!(fs::read(file.path()).unwrap(), large);
        let kept = dir.join("kept");
        file.keep(&kept).unwrap();
        assert_eq!(staged(&dir), 1, "only the kept file is left");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_byte_past_the_stated_size_is_refused_and_nothing_is_left() {
        let dir = folder();
        let data = vec![1u8; IN_MEMORY as usize + 10];
        let mut sink = BlobSink::new(&digest_of(&data), &dir).unwrap();
        sink.write(&data).unwrap();
        assert!(matches!(
            sink.write(b"x"),
            Err(SinkError::TooLong { expected }) if expected == data.len() as u64
        ));
        drop(sink);
        assert_eq!(staged(&dir), 0);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn wrong_bytes_of_the_right_length_and_short_blobs_are_refused() {
        let dir = folder();
        let data = vec![3u8; IN_MEMORY as usize * 2];
        let mut sink = BlobSink::new(&digest_of(&data), &dir).unwrap();
        sink.write(&vec![4u8; data.len()]).unwrap();
        assert!(matches!(sink.finish(), Err(SinkError::Mismatch { .. })));
        let mut sink = BlobSink::new(&digest_of(b"abc"), &dir).unwrap();
        sink.write(b"ab").unwrap();
        assert!(matches!(sink.finish(), Err(SinkError::Mismatch { .. })));
        assert_eq!(staged(&dir), 0);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_huge_stated_size_allocates_nothing() {
        let dir = folder();
        let huge = Digest {
            hash: "00".repeat(32),
            size_bytes: i64::MAX,
        };
        let mut sink = BlobSink::new(&huge, &dir).unwrap();
        sink.write(b"garbage").unwrap();
        assert!(matches!(sink.finish(), Err(SinkError::Mismatch { .. })));
        let negative = Digest {
            size_bytes: -1,
            ..huge
        };
        assert!(matches!(
            BlobSink::new(&negative, &dir),
            Err(SinkError::NegativeSize)
        ));
        assert_eq!(staged(&dir), 0);
        fs::remove_dir_all(&dir).unwrap();
    }
}
