//! The confined primitives on Windows, which has no `openat` family: a folder is held as its
//! path, and each step of the walk looks at the next component with `symlink_metadata` and
//! refuses any reparse point (symbolic link, junction, mount point, or any other kind) before
//! the path-based `std::fs` call that uses it. The file at the end is opened and created with
//! `FILE_FLAG_OPEN_REPARSE_POINT`, so a link there is opened as itself, seen and refused, never
//! followed.
//!
//! Weaker than Unix, and not race-free: the folders on the way are checked, then named again by
//! path, so a process that swaps a folder for a junction between the check and the use can
//! redirect that one call. Nor is a folder flushed ([`Dir::sync`]).
//!
//! Must never follow a reparse point that it looked at, and never act on a path that is not its
//! folder's path joined with one checked name.

use std::fs::{self, File, Metadata, OpenOptions};
use std::io;
use std::os::windows::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use windows_sys::Win32::Foundation::{ERROR_DIRECTORY, ERROR_STOPPED_ON_SYMLINK};
use windows_sys::Win32::Storage::FileSystem::{
    FILE_ATTRIBUTE_REPARSE_POINT, FILE_FLAG_OPEN_REPARSE_POINT,
};

use super::Kind;

/// An open folder: its path, each component of it below the root checked when it was reached.
#[derive(Debug)]
pub(super) struct Dir(PathBuf);

impl Dir {
    /// The folder at `path`, which may be reached through links (the root is the caller's choice).
    pub(super) fn open_root(path: &Path) -> io::Result<Dir> {
        if fs::metadata(path)?.is_dir() {
            Ok(Dir(path.to_path_buf()))
        } else {
            Err(not_a_folder())
        }
    }

    pub(super) fn try_clone(&self) -> io::Result<Dir> {
        Ok(Dir(self.0.clone()))
    }

    /// The folder `name`, refused when it is a reparse point or not a folder ([`is_link_error`]).
    pub(super) fn open_dir(&self, name: &str) -> io::Result<Dir> {
        let path = self.0.join(name);
        let meta = fs::symlink_metadata(&path)?;
        if is_reparse_point(&meta) {
            Err(link())
        } else if meta.is_dir() {
            Ok(Dir(path))
        } else {
            Err(not_a_folder())
        }
    }

    pub(super) fn make_dir(&self, name: &str) -> io::Result<()> {
        fs::create_dir(self.0.join(name))
    }

    pub(super) fn kind(&self, name: &str) -> io::Result<Option<Kind>> {
        let meta = match fs::symlink_metadata(self.0.join(name)) {
            Ok(meta) => meta,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(error),
        };
        Ok(Some(if is_reparse_point(&meta) {
            Kind::Link
        } else if meta.is_file() {
            Kind::File(meta.len())
        } else if meta.is_dir() {
            Kind::Folder
        } else {
            Kind::Other
        }))
    }

    /// Opens `name` for reading; a reparse point is opened as itself and refused. The caller
    /// checks that it is a regular file.
    pub(super) fn open_file(&self, name: &str) -> io::Result<File> {
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
            .open(self.0.join(name))?;
        if is_reparse_point(&file.metadata()?) {
            return Err(link());
        }
        Ok(file)
    }

    /// Creates `name`, which must not exist: `CREATE_NEW` on the name itself, so a link already
    /// there makes it fail rather than creating the link's target. Windows has no permission bits
    /// to give the file: `mode` is not used.
    pub(super) fn create(&self, name: &str, mode: u32) -> io::Result<File> {
        let _ = mode;
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
            .open(self.0.join(name))
    }

    /// `MoveFileEx` replaces a link named `to` rather than following it.
    pub(super) fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        fs::rename(self.0.join(from), self.0.join(to))
    }

    pub(super) fn link(&self, from: &str, to: &str) -> io::Result<()> {
        fs::hard_link(self.0.join(from), self.0.join(to))
    }

    pub(super) fn remove_file(&self, name: &str) -> io::Result<()> {
        fs::remove_file(self.0.join(name))
    }

    pub(super) fn remove_dir(&self, name: &str) -> io::Result<()> {
        fs::remove_dir(self.0.join(name))
    }

    /// Does nothing: Windows documents `FlushFileBuffers` for files and volumes, not for a
    /// folder's names. NTFS journals its names, so a rename is whole after a crash, but one made
    /// just before the crash may be lost, where Unix would have flushed it.
    pub(super) fn sync(&self) -> io::Result<()> {
        Ok(())
    }
}

/// The errors [`Dir::open_dir`] and [`Dir::open_file`] answer for a reparse point and for a file
/// where a folder must be, the way `ELOOP` and `ENOTDIR` do on Unix.
pub(super) fn is_link_error(error: &io::Error) -> bool {
    error.raw_os_error().is_some_and(|code| {
        code == ERROR_STOPPED_ON_SYMLINK as i32 || code == ERROR_DIRECTORY as i32
    })
}

fn is_reparse_point(meta: &Metadata) -> bool {
    meta.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0
}

fn link() -> io::Error {
    io::Error::from_raw_os_error(ERROR_STOPPED_ON_SYMLINK as i32)
}

fn not_a_folder() -> io::Error {
    io::Error::from_raw_os_error(ERROR_DIRECTORY as i32)
}
