//! Durable file writes and the store's lock.
//!
//! A write never leaves a torn file: the bytes go to a hidden temporary file in the same folder,
//! which is flushed to disk, then renamed over the destination (or hard-linked to a new name,
//! which fails instead of replacing when that name exists), and the folder itself is flushed so
//! the new name survives a crash. The lock is an advisory `flock` on a file of its own; the
//! kernel releases it when the process dies, so a crashed writer never wedges the store.
//!
//! Must never hold the lock across anything that waits on a person (an editor, a prompt).

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use crate::Error;

/// An exclusive lock, released when dropped (closing the file releases a `flock`).
#[derive(Debug)]
pub(crate) struct Lock {
    _file: File,
}

/// Takes the exclusive lock on `path`, waiting for other holders.
pub(crate) fn lock(path: &Path) -> Result<Lock, Error> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(Error::io("open the lock file", path))?;
    loop {
        // SAFETY: the descriptor is open for the lifetime of `file`.
        let status = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        if status == 0 {
            return Ok(Lock { _file: file });
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(Error::io("lock", path)(error));
        }
    }
}

/// How the temporary file becomes the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Replace whatever is there.
    Replace,
    /// Fail with `AlreadyExists` when the destination exists.
    CreateNew,
}

/// Writes `bytes` to `dest` atomically and durably.
pub(crate) fn write_atomic(dest: &Path, bytes: &[u8], mode: Mode) -> Result<(), std::io::Error> {
    let dir = dest.parent().unwrap_or(Path::new("."));
    let temp = temp_path(dir, dest);
    let result = write_temp(&temp, bytes).and_then(|()| match mode {
        Mode::Replace => fs::rename(&temp, dest),
        Mode::CreateNew => {
            let linked = fs::hard_link(&temp, dest);
            let _ = fs::remove_file(&temp);
            linked
        }
    });
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result?;
    sync_dir(dir)
}

/// Removes `path` and flushes its folder, so the removal survives a crash.
pub(crate) fn remove_durably(path: &Path) -> Result<(), std::io::Error> {
    fs::remove_file(path)?;
    sync_dir(path.parent().unwrap_or(Path::new(".")))
}

fn temp_path(dir: &Path, dest: &Path) -> PathBuf {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dir.join(format!(
        ".{name}.{}.{:08x}.tmp",
        std::process::id(),
        crate::clock::random_u32()
    ))
}

fn write_temp(temp: &Path, bytes: &[u8]) -> Result<(), std::io::Error> {
    let mut file = OpenOptions::new().write(true).create_new(true).open(temp)?;
    file.write_all(bytes)?;
    file.sync_all()
}

fn sync_dir(dir: &Path) -> Result<(), std::io::Error> {
    File::open(dir)?.sync_all()
}
