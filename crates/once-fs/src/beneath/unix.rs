//! The confined primitives on Unix: every call names one component relative to a directory
//! descriptor (`openat`, `mkdirat`, `fstatat`, `renameat`, `linkat`, `unlinkat`), with
//! `O_NOFOLLOW` where a link could be followed, so each acts in the folder the walk opened even if
//! the tree around it changes meanwhile.
//!
//! Must never hand the kernel a path of more than one component below the root, and never follow
//! a symbolic link.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::Kind;

/// An open folder: a directory descriptor.
#[derive(Debug)]
pub(super) struct Dir(OwnedFd);

impl Dir {
    /// Opens the folder at `path`, following links on the way (the root is the caller's choice).
    pub(super) fn open_root(path: &Path) -> io::Result<Dir> {
        let c = c_path(path.as_os_str().as_bytes())?;
        // SAFETY: a valid C string; the result is checked before use.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        owned(fd).map(Dir)
    }

    pub(super) fn try_clone(&self) -> io::Result<Dir> {
        self.0.try_clone().map(Dir)
    }

    /// Opens the folder `name`, failing on a link ([`is_link_error`]).
    pub(super) fn open_dir(&self, name: &str) -> io::Result<Dir> {
        let c = c_path(name.as_bytes())?;
        // SAFETY: a valid descriptor and C string; the result is checked before use.
        let fd = unsafe {
            libc::openat(
                self.0.as_raw_fd(),
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        owned(fd).map(Dir)
    }

    pub(super) fn make_dir(&self, name: &str) -> io::Result<()> {
        let c = c_path(name.as_bytes())?;
        // SAFETY: a valid descriptor and C string.
        check(unsafe { libc::mkdirat(self.0.as_raw_fd(), c.as_ptr(), 0o777) })
    }

    pub(super) fn kind(&self, name: &str) -> io::Result<Option<Kind>> {
        let c = c_path(name.as_bytes())?;
        // SAFETY: `stat` is plain data; zeroed is a valid value to be overwritten.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a valid descriptor and C string, and a pointer to a live `stat`.
        let rc = unsafe {
            libc::fstatat(
                self.0.as_raw_fd(),
                c.as_ptr(),
                &mut stat,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if rc != 0 {
            let error = io::Error::last_os_error();
            return if error.kind() == io::ErrorKind::NotFound {
                Ok(None)
            } else {
                Err(error)
            };
        }
        Ok(Some(match stat.st_mode & libc::S_IFMT {
            libc::S_IFREG => Kind::File(u64::try_from(stat.st_size).unwrap_or(0)),
            libc::S_IFDIR => Kind::Folder,
            libc::S_IFLNK => Kind::Link,
            _ => Kind::Other,
        }))
    }

    /// The kind of what `relative` (names joined by `/`) is under this folder, found with one
    /// `openat2` that refuses a link anywhere on the way and any step outside the folder. `None`
    /// when the kernel cannot answer that way (no `openat2`, a seccomp filter) or the path meets
    /// a link: the caller then walks it name by name, which says what was refused.
    #[cfg(target_os = "linux")]
    pub(super) fn kind_beneath(&self, relative: &str) -> Option<Option<Kind>> {
        let c = c_path(relative.as_bytes()).ok()?;
        // SAFETY: `open_how` is plain data; all zeroes is valid (and what unused fields need).
        let mut how: libc::open_how = unsafe { std::mem::zeroed() };
        how.flags = (libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC) as u64;
        how.resolve =
            libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
        // SAFETY: a valid descriptor, C string and `open_how` of the size passed; the result is
        // checked before use.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                self.0.as_raw_fd(),
                c.as_ptr(),
                &raw const how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        let fd = match libc::c_int::try_from(fd).map(owned) {
            Ok(Ok(fd)) => fd,
            Ok(Err(error)) if error.kind() == io::ErrorKind::NotFound => return Some(None),
            _ => return None,
        };
        let metadata = File::from(fd).metadata().ok()?;
        let kind = metadata.file_type();
        Some(Some(if kind.is_file() {
            Kind::File(metadata.len())
        } else if kind.is_dir() {
            Kind::Folder
        } else if kind.is_symlink() {
            Kind::Link
        } else {
            Kind::Other
        }))
    }

    /// Opens `name` for reading: a link fails (`ELOOP`), and it is opened non-blocking so that a
    /// pipe cannot hang us; the caller checks that it is a regular file.
    pub(super) fn open_file(&self, name: &str) -> io::Result<File> {
        let c = c_path(name.as_bytes())?;
        // SAFETY: a valid descriptor and C string; the result is checked before use.
        let fd = unsafe {
            libc::openat(
                self.0.as_raw_fd(),
                c.as_ptr(),
                libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        owned(fd).map(File::from)
    }

    pub(super) fn create(&self, name: &str, mode: u32) -> io::Result<File> {
        let c = c_path(name.as_bytes())?;
        // SAFETY: a valid descriptor and C string; the result is checked before use.
        let fd = unsafe {
            libc::openat(
                self.0.as_raw_fd(),
                c.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                mode as libc::c_uint,
            )
        };
        owned(fd).map(File::from)
    }

    pub(super) fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let (from, to) = (c_path(from.as_bytes())?, c_path(to.as_bytes())?);
        let fd = self.0.as_raw_fd();
        // SAFETY: a valid descriptor and C strings.
        check(unsafe { libc::renameat(fd, from.as_ptr(), fd, to.as_ptr()) })
    }

    pub(super) fn link(&self, from: &str, to: &str) -> io::Result<()> {
        let (from, to) = (c_path(from.as_bytes())?, c_path(to.as_bytes())?);
        let fd = self.0.as_raw_fd();
        // SAFETY: a valid descriptor and C strings; flags 0 never follow `from` if it is a link.
        check(unsafe { libc::linkat(fd, from.as_ptr(), fd, to.as_ptr(), 0) })
    }

    pub(super) fn remove_file(&self, name: &str) -> io::Result<()> {
        let c = c_path(name.as_bytes())?;
        // SAFETY: a valid descriptor and C string.
        check(unsafe { libc::unlinkat(self.0.as_raw_fd(), c.as_ptr(), 0) })
    }

    pub(super) fn remove_dir(&self, name: &str) -> io::Result<()> {
        let c = c_path(name.as_bytes())?;
        // SAFETY: a valid descriptor and C string.
        check(unsafe { libc::unlinkat(self.0.as_raw_fd(), c.as_ptr(), libc::AT_REMOVEDIR) })
    }

    pub(super) fn sync(&self) -> io::Result<()> {
        // SAFETY: a valid descriptor.
        check(unsafe { libc::fsync(self.0.as_raw_fd()) })
    }
}

/// `O_NOFOLLOW` on a link fails with `ELOOP`; `O_DIRECTORY` on a link to a file, or on a file,
/// with `ENOTDIR`.
pub(super) fn is_link_error(error: &io::Error) -> bool {
    matches!(error.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR))
}

fn owned(fd: libc::c_int) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn c_path(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte"))
}
