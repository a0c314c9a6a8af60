//! Cheap change detection for files, the way git detects a changed work tree: manifests in
//! `once-graph`, input and output files in `once-run`.
//!
//! A [`Stamp`] records a file's size, inode, modification and status-change times, and when we
//! read it. If all of these are unchanged, the content is unchanged — with one exception: a write
//! that lands within the file system's timestamp granularity of our read can leave the times
//! equal. Such a file is "racily clean" (git's term), and for it the caller must compare content.
//! The status-change time (`ctime`) matters because no user tool can set it back, unlike `mtime`.
//! This module never reads file contents.
//!
//! On Windows, std gives no inode and no status-change time (both are unstable there), so a stamp
//! is the size, the last-write time and the creation time (in the status-change slot). It misses
//! what those miss: a same-size rewrite whose last-write time is then set back (copy tools that
//! keep times do this), and a file replaced by another of the same size and times (Windows carries
//! a deleted file's creation time over to a file made under its name within 15 s).
//!
//! A stamp is also stored between processes (see [`Stamp::to_bytes`]), so a run can skip hashing
//! a file whose stamp it recorded earlier; only a stamp that was not racy when taken proves
//! anything.

use std::fs::Metadata;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// Any file touched this close to our read may have changed without its times showing it.
/// Generous: coarse kernel clocks tick in milliseconds, some file systems in seconds.
pub const RACY_WINDOW: Duration = Duration::from_secs(2);

/// How many bytes [`Stamp::to_bytes`] takes.
pub const STAMP_BYTES: usize = 57;

/// What a file looked like when it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    len: u64,
    dev: u64,
    ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    /// Whether the file was changed so shortly before we read it that its times prove nothing.
    racy: bool,
}

impl Stamp {
    /// The stamp of `metadata`, taken just before the file's bytes were read at `read_at`.
    pub fn new(metadata: &Metadata, read_at: SystemTime) -> Stamp {
        let Fields {
            dev,
            ino,
            mtime,
            ctime,
        } = Fields::of(metadata);
        let newest = ctime.max(mtime);
        let window_start = read_at
            .checked_sub(RACY_WINDOW)
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map_or((0, 0), |d| {
                (
                    i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
                    i64::from(d.subsec_nanos()),
                )
            });
        Stamp {
            len: metadata.len(),
            dev,
            ino,
            mtime,
            ctime,
            racy: newest >= window_start,
        }
    }

    /// Whether `path` provably still has the content it had when this stamp was taken. `false`
    /// means "compare the content", not "changed".
    pub fn proves_unchanged(&self, path: &Path) -> bool {
        std::fs::metadata(path).is_ok_and(|now| self.proves_unchanged_by(&now))
    }

    /// Like [`Stamp::proves_unchanged`], given the file's metadata as it is now.
    pub fn proves_unchanged_by(&self, now: &Metadata) -> bool {
        self.proves_unchanged_by_status(&Status::of(now))
    }

    /// Like [`Stamp::proves_unchanged_by`], given what a [`Lookup`] found at the path now.
    pub fn proves_unchanged_by_status(&self, now: &Status) -> bool {
        !self.racy
            && now.len == self.len
            && now.fields.dev == self.dev
            && now.fields.ino == self.ino
            && now.fields.mtime == self.mtime
            && now.fields.ctime == self.ctime
    }

    /// Whether the file changed so shortly before it was read that this stamp proves nothing.
    pub fn is_racy(&self) -> bool {
        self.racy
    }

    /// The stamp as bytes, for a store of stamps; [`Stamp::from_bytes`] reads them back.
    pub fn to_bytes(&self) -> [u8; STAMP_BYTES] {
        let mut out = [0u8; STAMP_BYTES];
        let fields = [
            self.len,
            self.dev,
            self.ino,
            self.mtime.0 as u64,
            self.mtime.1 as u64,
            self.ctime.0 as u64,
            self.ctime.1 as u64,
        ];
        let (words, _racy) = out.as_chunks_mut::<8>();
        for (word, field) in words.iter_mut().zip(fields) {
            *word = field.to_le_bytes();
        }
        out[STAMP_BYTES - 1] = u8::from(self.racy);
        out
    }

    /// The stamp that [`Stamp::to_bytes`] wrote.
    pub fn from_bytes(bytes: &[u8; STAMP_BYTES]) -> Stamp {
        let field = |i: usize| {
            let mut word = [0u8; 8];
            word.copy_from_slice(&bytes[i * 8..i * 8 + 8]);
            u64::from_le_bytes(word)
        };
        Stamp {
            len: field(0),
            dev: field(1),
            ino: field(2),
            mtime: (field(3) as i64, field(4) as i64),
            ctime: (field(5) as i64, field(6) as i64),
            racy: bytes[STAMP_BYTES - 1] != 0,
        }
    }
}

/// What a [`Lookup`] finds at a path: what a stamp compares, and the kind of file.
#[derive(Debug, Clone)]
pub struct Status {
    len: u64,
    fields: Fields,
    kind: FileKind,
}

/// The kind of what is at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    File,
    Folder,
    Link,
    Other,
}

impl Status {
    pub fn kind(&self) -> FileKind {
        self.kind
    }

    fn of(metadata: &Metadata) -> Status {
        let kind = metadata.file_type();
        Status {
            len: metadata.len(),
            fields: Fields::of(metadata),
            kind: if kind.is_symlink() {
                FileKind::Link
            } else if kind.is_dir() {
                FileKind::Folder
            } else if kind.is_file() {
                FileKind::File
            } else {
                FileKind::Other
            },
        }
    }
}

/// Looks paths up relative to an opened folder, for a caller that checks thousands of stamps
/// under one root: on Linux each look-up is one `statx` from the folder's descriptor, so the
/// kernel walks only the path below it, not the root's own path again each time. Elsewhere it
/// asks `std` by the whole path.
#[derive(Debug)]
pub struct Lookup {
    root: std::path::PathBuf,
    #[cfg(target_os = "linux")]
    folder: std::os::fd::OwnedFd,
}

impl Lookup {
    /// Opens `root` for look-ups (only to name paths from: `O_PATH`, it reads nothing).
    pub fn new(root: &Path) -> std::io::Result<Lookup> {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::FromRawFd;
            use std::os::unix::ffi::OsStrExt;
            let name = std::ffi::CString::new(root.as_os_str().as_bytes())
                .map_err(std::io::Error::other)?;
            // SAFETY: `name` is a valid C string; the descriptor returned is ours alone.
            let fd = unsafe {
                libc::open(
                    name.as_ptr(),
                    libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
                )
            };
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(Lookup {
                root: root.to_path_buf(),
                // SAFETY: `fd` was just opened and is owned by nothing else.
                folder: unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) },
            })
        }
        #[cfg(not(target_os = "linux"))]
        {
            Ok(Lookup {
                root: root.to_path_buf(),
            })
        }
    }

    /// What is at `path` (relative to the root, or absolute) now: following a final link when
    /// `follow`, as `stat` does, else as `lstat` does.
    pub fn status(&self, path: &Path, follow: bool) -> std::io::Result<Status> {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            use std::os::unix::ffi::OsStrExt;
            let bytes = path.as_os_str().as_bytes();
            let name = std::ffi::CString::new(if bytes.is_empty() { b"." } else { bytes })
                .map_err(std::io::Error::other)?;
            let flags =
                libc::AT_STATX_SYNC_AS_STAT | if follow { 0 } else { libc::AT_SYMLINK_NOFOLLOW };
            // SAFETY: zeroes are a valid `statx`, which the kernel fills on success.
            let mut found: libc::statx = unsafe { std::mem::zeroed() };
            // SAFETY: the descriptor is open for our lifetime, `name` is a valid C string and
            // `found` is writable.
            let result = unsafe {
                libc::statx(
                    self.folder.as_raw_fd(),
                    name.as_ptr(),
                    flags,
                    libc::STATX_BASIC_STATS,
                    &raw mut found,
                )
            };
            if result != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let kind = match u32::from(found.stx_mode) & libc::S_IFMT {
                libc::S_IFREG => FileKind::File,
                libc::S_IFDIR => FileKind::Folder,
                libc::S_IFLNK => FileKind::Link,
                _ => FileKind::Other,
            };
            // As `std` fills its metadata from `statx`, so that a stamp taken from one compares
            // equal to a status taken from the other.
            Ok(Status {
                len: found.stx_size,
                fields: Fields {
                    dev: libc::makedev(found.stx_dev_major, found.stx_dev_minor),
                    ino: found.stx_ino,
                    mtime: (found.stx_mtime.tv_sec, i64::from(found.stx_mtime.tv_nsec)),
                    ctime: (found.stx_ctime.tv_sec, i64::from(found.stx_ctime.tv_nsec)),
                },
                kind,
            })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let path = self.root.join(path);
            let metadata = if follow {
                std::fs::metadata(&path)
            } else {
                std::fs::symlink_metadata(&path)
            }?;
            Ok(Status::of(&metadata))
        }
    }

    /// The root paths are looked up from.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

/// The parts of a stamp that the platform reports differently.
#[derive(Debug, Clone)]
struct Fields {
    dev: u64,
    ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Fields {
    #[cfg(unix)]
    fn of(metadata: &Metadata) -> Fields {
        use std::os::unix::fs::MetadataExt;
        Fields {
            dev: metadata.dev(),
            ino: metadata.ino(),
            mtime: (metadata.mtime(), metadata.mtime_nsec()),
            ctime: (metadata.ctime(), metadata.ctime_nsec()),
        }
    }

    /// No identity (0 for both) and the creation time where Unix has the status-change time.
    #[cfg(windows)]
    fn of(metadata: &Metadata) -> Fields {
        use std::os::windows::fs::MetadataExt;
        Fields {
            dev: 0,
            ino: 0,
            mtime: unix_time(metadata.last_write_time()),
            ctime: unix_time(metadata.creation_time()),
        }
    }
}

/// A Windows `FILETIME` (100 ns ticks since 1601) as seconds and nanoseconds since 1970, the
/// shape Unix gives, so that the racy window compares the same way.
#[cfg(any(windows, test))]
fn unix_time(ticks: u64) -> (i64, i64) {
    const TICKS_PER_SECOND: u64 = 10_000_000;
    const SECONDS_1601_TO_1970: i64 = 11_644_473_600;
    let seconds = i64::try_from(ticks / TICKS_PER_SECOND).unwrap_or(i64::MAX);
    let nanos = ((ticks % TICKS_PER_SECOND) * 100) as i64;
    (seconds - SECONDS_1601_TO_1970, nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("once-fs-stamp-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let path = dir.join("once.toml");
        std::fs::write(&path, text).expect("writes");
        path
    }

    #[test]
    fn a_freshly_written_file_is_racy_and_proves_nothing() {
        let path = temp_file("fresh", "a");
        let stamp = Stamp::new(&std::fs::metadata(&path).expect("stat"), SystemTime::now());
        assert!(!stamp.proves_unchanged(&path));
    }

    #[test]
    fn a_lookup_from_the_folder_sees_what_a_stat_by_the_whole_path_sees() {
        let path = temp_file("lookup", "abc");
        let folder = path.parent().expect("a folder");
        let lookup = Lookup::new(folder).expect("opens the folder");
        let metadata = std::fs::symlink_metadata(&path).expect("stat");
        let stamp = Stamp::new(&metadata, SystemTime::now() + RACY_WINDOW * 2);
        let relative = lookup.status(Path::new("once.toml"), false).expect("found");
        assert_eq!(relative.kind(), FileKind::File);
        assert!(stamp.proves_unchanged_by_status(&relative));
        // Field for field what `std` reports, by a relative or an absolute path.
        let by_std = Status::of(&metadata);
        assert_eq!((relative.len, relative.kind), (by_std.len, by_std.kind));
        assert_eq!(relative.fields.dev, by_std.fields.dev);
        assert_eq!(relative.fields.mtime, by_std.fields.mtime);
        let absolute = lookup.status(&path, false).expect("found");
        assert!(stamp.proves_unchanged_by_status(&absolute));
        // The folder itself, by the empty path.
        let own = lookup.status(Path::new(""), false).expect("found");
        assert_eq!(own.kind(), FileKind::Folder);
        // A link: itself without following, its target with.
        let link = folder.join("link.toml");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink("once.toml", &link).expect("links");
        let name = Path::new("link.toml");
        assert_eq!(
            lookup.status(name, false).expect("found").kind(),
            FileKind::Link
        );
        assert!(stamp.proves_unchanged_by_status(&lookup.status(name, true).expect("found")));
        // A write shows; a missing path is an error that says so.
        std::fs::write(&path, "abcd").expect("writes");
        let after = lookup.status(Path::new("once.toml"), false).expect("found");
        assert!(!stamp.proves_unchanged_by_status(&after));
        let missing = lookup.status(Path::new("gone"), false).expect_err("absent");
        assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn an_old_file_is_proven_unchanged_until_it_is_written() {
        let path = temp_file("old", "a");
        // Read "later": as if the file had been written well before the load.
        let read_at = SystemTime::now() + RACY_WINDOW * 2;
        let stamp = Stamp::new(&std::fs::metadata(&path).expect("stat"), read_at);
        assert!(stamp.proves_unchanged(&path));
        // Same size, new content: the status-change time moves even if mtime is set back.
        let mtime = std::fs::metadata(&path)
            .expect("stat")
            .modified()
            .expect("mtime");
        std::fs::write(&path, "b").expect("writes");
        std::fs::File::options()
            .write(true)
            .open(&path)
            .expect("opens")
            .set_modified(mtime)
            .expect("sets mtime back");
        assert!(!stamp.proves_unchanged(&path));
    }

    #[test]
    fn stamps_survive_a_round_trip_through_bytes() {
        let path = temp_file("bytes", "a");
        let metadata = std::fs::metadata(&path).expect("stat");
        for read_at in [SystemTime::now(), SystemTime::now() + RACY_WINDOW * 2] {
            let stamp = Stamp::new(&metadata, read_at);
            assert_eq!(Stamp::from_bytes(&stamp.to_bytes()), stamp);
        }
    }

    #[test]
    fn windows_file_times_count_from_the_unix_epoch() {
        const EPOCH: u64 = 116_444_736_000_000_000;
        assert_eq!(unix_time(EPOCH), (0, 0));
        assert_eq!(unix_time(EPOCH + 15_000_001), (1, 500_000_100));
        assert_eq!(unix_time(0), (-11_644_473_600, 0));
    }

    #[test]
    fn a_vanished_file_proves_nothing() {
        let path = temp_file("gone", "a");
        let read_at = SystemTime::now() + RACY_WINDOW * 2;
        let stamp = Stamp::new(&std::fs::metadata(&path).expect("stat"), read_at);
        std::fs::remove_file(&path).expect("removes");
        assert!(!stamp.proves_unchanged(&path));
    }
}
