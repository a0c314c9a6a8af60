//! Many independent exclusive locks in one file: one per 63-bit *slot*, so a lock per cache key
//! costs no file of its own.
//!
//! On Linux a slot is one byte of the file, locked with an open-file-description lock
//! (`F_OFD_SETLKW`): like `flock`, it belongs to the open file, so two threads of one process
//! exclude each other, and the kernel drops it when the file closes or its process dies. Nothing
//! is ever written to the file; a lock past its end is fine. Elsewhere each slot is a file of its
//! own beside the shared one, locked with [`crate::lock`], which is what every platform had before.
//!
//! Must never be used for a lock held across anything that waits on a person: a waiter blocks
//! until the holder's file closes.

use std::io;
use std::path::Path;

/// An exclusive lock on one slot, released when dropped.
#[derive(Debug)]
pub struct SlotLock {
    _held: imp::Held,
}

/// Takes the exclusive lock on `slot` of the lock file `path` (created if missing), waiting for
/// any other holder, in this process or another.
pub fn lock_slot(path: &Path, slot: u64) -> io::Result<SlotLock> {
    imp::lock_slot(path, slot & (i64::MAX as u64))
}

#[cfg(target_os = "linux")]
mod imp {
    use std::fs::File;
    use std::io;
    use std::os::fd::AsRawFd;
    use std::path::Path;

    use super::SlotLock;

    /// The open file whose description holds the lock.
    pub(super) type Held = File;

    pub(super) fn lock_slot(path: &Path, slot: u64) -> io::Result<SlotLock> {
        let file = crate::open_in_place(path, false)?;
        lock_byte(&file, slot)?;
        Ok(SlotLock { _held: file })
    }

    fn lock_byte(file: &File, slot: u64) -> io::Result<()> {
        // SAFETY: `flock` is a plain C struct; all zeroes is a valid value of it.
        let mut range: libc::flock = unsafe { std::mem::zeroed() };
        range.l_type = libc::F_WRLCK as libc::c_short;
        range.l_whence = libc::SEEK_SET as libc::c_short;
        range.l_start = slot as libc::off_t;
        range.l_len = 1;
        loop {
            // SAFETY: the descriptor is open for writing for the whole call, and `range` is a
            // valid `flock` that the kernel only reads (`l_pid` must be 0 for OFD locks).
            let done = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLKW, &range) };
            if done == 0 {
                return Ok(());
            }
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(error);
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::io;
    use std::path::Path;

    use super::SlotLock;

    pub(super) type Held = crate::Lock;

    /// Without open-file-description locks (a POSIX record lock belongs to the process, so two
    /// threads would not exclude each other), each slot is a file named after it.
    pub(super) fn lock_slot(path: &Path, slot: u64) -> io::Result<SlotLock> {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".{slot:016x}"));
        Ok(SlotLock {
            _held: crate::lock(Path::new(&name))?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("once-slot-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_second_holder_of_one_slot_waits_and_other_slots_do_not() {
        let dir = scratch("wait");
        let path = dir.join("keys");
        let first = lock_slot(&path, 7).unwrap();
        // Another slot of the same file is free, in this very thread.
        let other = lock_slot(&path, 8).unwrap();
        let (tx, rx) = mpsc::channel();
        let waiter = std::thread::spawn({
            let path = path.clone();
            move || {
                let held = lock_slot(&path, 7).unwrap();
                tx.send(()).unwrap();
                drop(held);
            }
        });
        // The waiter cannot have the slot while `first` holds it.
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err());
        drop(first);
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        waiter.join().unwrap();
        drop(other);
        // Slots past any sensible file size, and the top bit masked off, lock too.
        drop(lock_slot(&path, u64::MAX).unwrap());
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
