//! Cheap change detection for manifest files, the way git detects a changed work tree.
//!
//! A [`Stamp`] records a file's size, inode, modification and status-change times, and when we
//! read it. If all of these are unchanged, the content is unchanged — with one exception: a write
//! that lands within the file system's timestamp granularity of our read can leave the times
//! equal. Such a file is "racily clean" (git's term), and for it the caller must compare content.
//! The status-change time (`ctime`) matters because no user tool can set it back, unlike `mtime`.
//! This module never reads file contents.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// Any file touched this close to our read may have changed without its times showing it.
/// Generous: coarse kernel clocks tick in milliseconds, some file systems in seconds.
const RACY_WINDOW: Duration = Duration::from_secs(2);

/// What a file looked like when it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stamp {
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
    pub(crate) fn new(metadata: &Metadata, read_at: SystemTime) -> Stamp {
        let ctime = (metadata.ctime(), metadata.ctime_nsec());
        let mtime = (metadata.mtime(), metadata.mtime_nsec());
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
            dev: metadata.dev(),
            ino: metadata.ino(),
            mtime,
            ctime,
            racy: newest >= window_start,
        }
    }

    /// Whether `path` provably still has the content it had when this stamp was taken. `false`
    /// means "compare the content", not "changed".
    pub(crate) fn proves_unchanged(&self, path: &Path) -> bool {
        if self.racy {
            return false;
        }
        let Ok(now) = std::fs::metadata(path) else {
            return false;
        };
        let current = Stamp::new(&now, SystemTime::now());
        current.len == self.len
            && current.dev == self.dev
            && current.ino == self.ino
            && current.mtime == self.mtime
            && current.ctime == self.ctime
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("once-stamp-{}-{name}", std::process::id()));
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
    fn a_vanished_file_proves_nothing() {
        let path = temp_file("gone", "a");
        let read_at = SystemTime::now() + RACY_WINDOW * 2;
        let stamp = Stamp::new(&std::fs::metadata(&path).expect("stat"), read_at);
        std::fs::remove_file(&path).expect("removes");
        assert!(!stamp.proves_unchanged(&path));
    }
}
