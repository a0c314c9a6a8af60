//! Durable file writes and the advisory lock.
//!
//! A write never leaves a torn file: the bytes go to a hidden temporary file in the same folder
//! (so the final rename never crosses a file system), which is flushed to disk, then renamed over
//! the destination, or hard-linked to it when the destination must not exist yet (a link fails
//! instead of replacing). Then the folder itself is flushed, so the new name survives a crash.
//! The lock is the standard library's advisory file lock (`flock` on Unix, `LockFileEx` on
//! Windows) on a file of its own; the kernel releases it when the process dies, so a crashed
//! writer never wedges anyone.
//!
//! Must never write in place, and never hold the lock across anything that waits on a person.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// An exclusive lock, released when dropped (closing the file releases it).
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

/// Takes the exclusive lock on `path` (creating the file, never through a link), waiting for
/// other holders.
pub fn lock(path: &Path) -> io::Result<Lock> {
    let file = open_in_place(path, false)?;
    loop {
        // `File::lock` does not retry a wait that a signal interrupted.
        match file.lock() {
            Ok(()) => return Ok(Lock { _file: file }),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
}

/// Opens `path` for writing in place (appending, with `append`), creating it if missing, and
/// refusing a link at its name: one planted there would otherwise lead the write, or a new file,
/// wherever it points. For files of `once`'s own state that are written in place (locks, the
/// journal of keys' parts); the folders on the way are the caller's to check (`state_dir`).
pub fn open_in_place(path: &Path, append: bool) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options
        .create(true)
        .truncate(false)
        .write(true)
        .append(append);
    refuse_links(&mut options, false).open(path)
}

/// Makes `options` refuse a link at the path's last name (and, with `nonblocking` on Unix, not
/// wait on a pipe there).
fn refuse_links(options: &mut OpenOptions, nonblocking: bool) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let extra = if nonblocking { libc::O_NONBLOCK } else { 0 };
        options.custom_flags(libc::O_NOFOLLOW | extra);
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::OpenOptionsExt;
        let _ = nonblocking;
        // FILE_FLAG_OPEN_REPARSE_POINT: the link itself is opened, never what it names.
        options.custom_flags(0x0020_0000);
    }
    options
}

/// Opens `path` for reading without waiting: a pipe at the path opens at once instead of
/// waiting for a writer. For files that should be regular but may not be (a manifest a person
/// names); the caller checks the metadata of what was opened. Reads of a regular file behave as
/// usual.
pub fn open_nonblocking(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    options.open(path)
}

/// Opens `path` for reading, refusing a link at its name and without waiting on a pipe: for
/// files of `once`'s own state that are read in place (the cache's packs); the caller checks that
/// what it opened is a file.
pub fn open_own(path: &Path) -> io::Result<File> {
    refuse_links(OpenOptions::new().read(true), true).open(path)
}

/// How the temporary file becomes the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Replace whatever is there.
    Replace,
    /// Fail with `AlreadyExists` when the destination exists: never clobber a file that
    /// appeared after the caller looked.
    CreateNew,
}

/// Writes `bytes` to `dest` atomically and durably. The parent folder must exist.
pub fn write_atomic(dest: &Path, bytes: &[u8], mode: Mode) -> io::Result<()> {
    let dir = parent(dest);
    let temp = temp_path(dest);
    let result = write_synced(&temp, bytes).and_then(|()| match mode {
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

/// Replaces `dest` with `bytes` atomically but without flushing anything to disk, creating missing
/// folders. A reader never sees a torn file; after a crash the file may be the old one, or (on some
/// file systems) empty. For records that a crash may lose, such as a run's report or a cache of
/// file hashes, where an fsync would cost every command.
pub fn write_replacing(dest: &Path, bytes: &[u8]) -> io::Result<()> {
    let temp = temp_path(dest);
    let mut written = fs::write(&temp, bytes);
    // Folders are made only when missing: the action cache writes two files per action into
    // folders that exist, and a `mkdir` and a `stat` before each write were wasted.
    if matches!(&written, Err(error) if error.kind() == io::ErrorKind::NotFound) {
        fs::create_dir_all(parent(dest))?;
        written = fs::write(&temp, bytes);
    }
    let result = written.and_then(|()| fs::rename(&temp, dest));
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// Writes `bytes` to a new file at `path` and flushes it to disk; fails if `path` exists.
/// For callers that stage a file under a name of their own and rename it later.
pub fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new().write(true).create_new(true).open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Removes `path` and flushes its folder, so the removal survives a crash.
pub fn remove_durably(path: &Path) -> io::Result<()> {
    fs::remove_file(path)?;
    sync_dir(parent(path))
}

/// Creates `dir` and any missing ancestors, flushing each new folder's parent so the new names
/// survive a crash. Returns the folders it created, outermost first (a caller that must undo its
/// work removes them in reverse).
pub fn create_dirs(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut missing = Vec::new();
    let mut current = Some(dir);
    while let Some(path) = current {
        if path.as_os_str().is_empty() || path.is_dir() {
            break;
        }
        missing.push(path.to_path_buf());
        current = path.parent();
    }
    missing.reverse();
    for path in &missing {
        match fs::create_dir(path) {
            Ok(()) => {}
            // Someone else made it in between: it exists, which is all we need.
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists && path.is_dir() => {}
            Err(error) => return Err(error),
        }
        sync_dir(parent(path))?;
    }
    Ok(missing)
}

/// Flushes a folder, making the names created, renamed or removed in it durable.
#[cfg(unix)]
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Does nothing on Windows, which documents `FlushFileBuffers` for files and volumes, not for a
/// folder's names (and opens no folder with plain `File::open`). NTFS journals its names, so a
/// rename is whole after a crash, but one made just before the crash may be lost.
#[cfg(windows)]
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    let _ = dir;
    Ok(())
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// A hidden name next to `dest`, unique across threads and processes: where a caller stages a
/// file it will rename over `dest`.
pub fn temp_path(dest: &Path) -> PathBuf {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    parent(dest).join(format!(
        ".{name}.{}.{:08x}.tmp",
        std::process::id(),
        crate::clock::random_u32()
    ))
}

/// How long a staging file must have been left alone before [`is_abandoned_temp`] may call it
/// abandoned: far longer than any write takes, so a live writer the pid check cannot see (in
/// another pid namespace) keeps its file.
pub const ABANDONED_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

/// Whether `name` (a file name in `dir`) is a staging file that [`temp_path`] made for a writer
/// that is gone: its process no longer runs and the file is older than [`ABANDONED_AFTER`].
/// A writer killed between creating its staging file and renaming it leaves such a file; the
/// folder's owner removes them when it lists the folder anyway.
pub fn is_abandoned_temp(dir: &Path, name: &str) -> bool {
    let Some(pid) = temp_owner(name) else {
        return false;
    };
    process_is_gone(pid)
        && fs::symlink_metadata(dir.join(name))
            .and_then(|meta| meta.modified())
            .is_ok_and(|modified| modified.elapsed().is_ok_and(|age| age > ABANDONED_AFTER))
}

/// Whether no process `pid` runs: only a definite "no such process" counts, so a process we may
/// not signal is alive.
#[cfg(unix)]
fn process_is_gone(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill with signal 0 only asks whether the process exists; it sends nothing.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// Whether no process `pid` runs: `OpenProcess` refuses a pid that names no process
/// (`ERROR_INVALID_PARAMETER`), and a process that has ended but whose object someone still holds
/// answers an exit code other than `STILL_ACTIVE`. Anything else (access denied included) is
/// alive. A process that ended with the code 259, `STILL_ACTIVE`'s value, passes for alive,
/// which only keeps its staging file.
#[cfg(windows)]
fn process_is_gone(pid: u32) -> bool {
    use windows_sys::Win32::Foundation::{
        CloseHandle, ERROR_INVALID_PARAMETER, GetLastError, STILL_ACTIVE,
    };
    use windows_sys::Win32::System::Threading::{
        GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
    };
    // SAFETY: plain calls with a pid and no pointers; the handle is checked before use.
    let handle = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if handle.is_null() {
        // SAFETY: reads the calling thread's last error, set by the call above.
        return unsafe { GetLastError() } == ERROR_INVALID_PARAMETER;
    }
    let mut code = 0u32;
    // SAFETY: a valid process handle and a pointer to a live `u32`.
    let asked = unsafe { GetExitCodeProcess(handle, &mut code) } != 0;
    // SAFETY: the handle OpenProcess returned, closed once.
    unsafe { CloseHandle(handle) };
    asked && code != STILL_ACTIVE as u32
}

/// The pid in a name of [`temp_path`]'s shape, `.NAME.PID.XXXXXXXX.tmp`.
fn temp_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (rest, random) = rest.rsplit_once('.')?;
    let (_, pid) = rest.rsplit_once('.')?;
    let valid = random.len() == 8 && random.bytes().all(|b| b.is_ascii_hexdigit());
    let pid = pid.parse::<u32>().ok().filter(|&pid| pid > 0)?;
    valid.then_some(pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("once-fs-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_staging_file_is_abandoned_only_when_its_writer_is_gone_and_it_is_old() {
        let dir = scratch("abandoned");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let old = std::time::SystemTime::now() - ABANDONED_AFTER * 2;
        let make = |name: &str, modified| {
            let file = File::create(dir.join(name)).unwrap();
            file.set_modified(modified).unwrap();
            name.to_owned()
        };
        let abandoned = make(&format!(".a.md.{dead}.0badcafe.tmp"), old);
        let fresh = make(
            &format!(".b.md.{dead}.0badcafe.tmp"),
            std::time::SystemTime::now(),
        );
        let live = make(&format!(".c.md.{}.0badcafe.tmp", std::process::id()), old);
        let not_ours = make(&format!(".d.md.{dead}.tmp"), old);
        assert!(is_abandoned_temp(&dir, &abandoned));
        assert!(!is_abandoned_temp(&dir, &fresh), "too recent");
        assert!(!is_abandoned_temp(&dir, &live), "its writer runs");
        assert!(!is_abandoned_temp(&dir, &not_ours), "not a staging name");
        assert!(!is_abandoned_temp(&dir, "20250101-000000-00000000.md"));
        let staged = temp_path(&dir.join("e.md"));
        let name = staged.file_name().unwrap().to_str().unwrap();
        assert_eq!(temp_owner(name), Some(std::process::id()));
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_second_holder_waits_until_the_first_lock_drops() {
        use std::sync::mpsc;
        use std::time::Duration;
        let dir = scratch("lock");
        let path = dir.join("lock");
        let first = lock(&path).unwrap();
        let (taken, told) = mpsc::channel();
        let waiter = {
            let path = path.clone();
            // Its own open file, as another process would have: the lock is per open file.
            std::thread::spawn(move || {
                let second = lock(&path).unwrap();
                taken.send(()).unwrap();
                drop(second);
            })
        };
        // While the first is held the second cannot have it, however long this waits.
        assert_eq!(
            told.recv_timeout(Duration::from_millis(300)),
            Err(mpsc::RecvTimeoutError::Timeout)
        );
        drop(first);
        told.recv_timeout(Duration::from_secs(30))
            .expect("the second takes the lock once the first drops");
        waiter.join().unwrap();
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn replaces_whole_files_and_leaves_no_temporary() {
        let dir = scratch("replace");
        let path = dir.join("a.txt");
        write_atomic(&path, b"first, and longer", Mode::Replace).unwrap();
        write_atomic(&path, b"second", Mode::Replace).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn write_replacing_makes_folders_and_leaves_no_temporary() {
        let dir = scratch("replacing");
        let path = dir.join("a/b.json");
        write_replacing(&path, b"first, and longer").unwrap();
        write_replacing(&path, b"second").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second");
        assert_eq!(fs::read_dir(dir.join("a")).unwrap().count(), 1);
    }

    #[test]
    fn create_dirs_reports_what_it_made() {
        let dir = scratch("dirs");
        let made = create_dirs(&dir.join("a/b/c")).unwrap();
        assert_eq!(
            made,
            vec![dir.join("a"), dir.join("a/b"), dir.join("a/b/c")]
        );
        assert!(create_dirs(&dir.join("a/b")).unwrap().is_empty());
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn create_new_never_clobbers() {
        let dir = scratch("create");
        let path = dir.join("a.txt");
        write_atomic(&path, b"mine", Mode::CreateNew).unwrap();
        let error = write_atomic(&path, b"theirs", Mode::CreateNew).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&path).unwrap(), b"mine");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        remove_durably(&path).unwrap();
        assert!(!path.exists());
        fs::remove_dir_all(dir).unwrap();
    }
}
