//! Atomic file writes: a temporary file in the destination's folder, then renamed.
//!
//! A reader sees the old file or the whole new one, never a torn one, and two writers of the
//! same path each rename a complete file. [`write_atomic`] also syncs the file before the rename,
//! for what must survive a crash (cache entries); [`write_replacing`] does not, for records a
//! crash may lose (a run's report, the file-hash cache), which keeps fsyncs off a no-op run.
//! This module must never write in place.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A temporary path next to `path`, unique in this process and across processes.
pub(crate) fn temp_path(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Writes `bytes` to `path` atomically and durably, creating the parent folders.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write(path, bytes, true)
}

/// Writes `bytes` to `path` atomically but without syncing: after a crash the file may be the
/// old one, or (on some file systems) empty, never a mix. Readers must accept either.
pub(crate) fn write_replacing(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write(path, bytes, false)
}

fn write(path: &Path, bytes: &[u8], sync: bool) -> io::Result<()> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    let temp = temp_path(path);
    let result = (|| {
        let mut file = File::create(&temp)?;
        file.write_all(bytes)?;
        if sync {
            file.sync_all()?;
        }
        fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_whole_file_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("once-run-fsio-{}", std::process::id()));
        let path = dir.join("a/b.json");
        write_atomic(&path, b"first, and longer").unwrap();
        write_atomic(&path, b"second").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second");
        assert_eq!(fs::read_dir(dir.join("a")).unwrap().count(), 1);
        fs::remove_dir_all(dir).unwrap();
    }
}
