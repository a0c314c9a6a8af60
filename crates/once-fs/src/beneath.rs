//! Writing beneath a workspace root, checked at the moment of writing: the one way `once` writes a
//! file for a person (change sets, examples, restored outputs).
//!
//! Theory of operation. A [`Root`] is the workspace root, opened. A path under it is never
//! handed to the operating system whole: the walk opens one component at a time and refuses a
//! symbolic link anywhere on the way. No component may be `.git` or `.once`, at any depth: git's
//! folder (of the workspace or of a nested repository) runs code from its config and hooks, and
//! `.once/` is our own state. The primitives are per platform, behind one `Dir` type:
//!
//! - Unix (`beneath/unix.rs`): the root is a directory descriptor, and each component is opened
//!   with `openat(folder, name, O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)`, so a symbolic link
//!   anywhere on the way makes that very call fail (`ELOOP`, or `ENOTDIR` for a link to a file),
//!   whatever happened to the tree a moment before. A missing folder is made with `mkdirat`
//!   relative to its parent's descriptor and then opened the same way. The last operation (create
//!   with `O_CREAT | O_EXCL | O_NOFOLLOW`, `renameat`, `linkat`, `unlinkat`) is relative to the
//!   last folder's descriptor, so it acts in the folder the walk checked, even if that folder is
//!   renamed meanwhile; there is no window between a check and a use. A name that only a
//!   folder which folds names would read as a reserved one (`.GIT`) is put to that folder
//!   (`reserved.rs`), so the answer is the file system's, folder by folder.
//! - Windows (`beneath/windows.rs`): there is no `openat`, so a folder is held as its path; each
//!   component is looked at without following it and refused if it is any reparse point
//!   (symbolic link, junction, mount point), then named by path. This is not race-free: a folder
//!   swapped for a junction between that look and the call that uses it redirects the call. The
//!   reserved names are compared as Windows compares names (`is_reserved`).
//!
//! Must never follow a symbolic link, never act on a path outside the folder it walked to, and
//! never write anything its caller did not name.

#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;

use crate::reserved::{self, is_reserved};

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

#[cfg(unix)]
use unix::{Dir, is_link_error};
#[cfg(windows)]
use windows::{Dir, is_link_error};

use crate::path::{PathError, WorkspacePath};

pub use crate::reserved::RESERVED;

/// The workspace root, open as a directory.
#[derive(Debug)]
pub struct Root {
    dir: Dir,
    path: PathBuf,
}

/// A folder beneath a [`Root`], reached without following any link.
#[derive(Debug)]
pub struct Folder {
    dir: Dir,
    /// Relative to the root, for messages; empty for the root itself.
    shown: String,
}

/// What a name in a folder is, looked at without following it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file of this many bytes.
    File(u64),
    /// A folder.
    Folder,
    /// A symbolic link.
    Link,
    /// Anything else (a socket, a device, a pipe).
    Other,
}

impl Root {
    /// Opens the folder at `path` (which may itself be reached through links: the root is the
    /// caller's choice, only what is beneath it is checked).
    pub fn open(path: &Path) -> io::Result<Root> {
        Ok(Root {
            dir: Dir::open_root(path)?,
            path: path.to_path_buf(),
        })
    }

    /// The path the root was opened by.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The folder that holds `path`, if every folder on the way exists. Refuses a link or a
    /// reserved name anywhere in `path`, its last component included, and a path too long for
    /// other tools to open.
    pub fn parent_of(&self, path: &WorkspacePath) -> Result<Option<Folder>, PathError> {
        self.check(path)?;
        self.walk(path, path.parts().len() - 1, false)
            .map(|found| found.map(|(folder, _)| folder))
    }

    /// The folder that holds `path`, making missing folders (each flushed into its parent).
    /// Returns the folders it made, outermost first, so a caller can undo them.
    pub fn make_parent_of(
        &self,
        path: &WorkspacePath,
    ) -> Result<(Folder, Vec<WorkspacePath>), PathError> {
        self.check(path)?;
        let found = self.walk(path, path.parts().len() - 1, true)?;
        found.ok_or_else(|| PathError::Io {
            path: self.path.join(path.to_string()),
            source: io::Error::from(io::ErrorKind::NotFound),
        })
    }

    /// The folder `path` itself, if it exists (same refusals as [`Root::parent_of`]).
    pub fn folder(&self, path: &WorkspacePath) -> Result<Option<Folder>, PathError> {
        self.check(path)?;
        self.walk(path, path.parts().len(), false)
            .map(|found| found.map(|(folder, _)| folder))
    }

    /// The root's own folder.
    pub fn top(&self) -> io::Result<Folder> {
        Ok(Folder {
            dir: self.dir.try_clone()?,
            shown: String::new(),
        })
    }

    /// What `path` is now, without following it; `None` when it (or a folder on the way) is
    /// missing. A link on the way is refused; a link at the end is reported as [`Kind::Link`].
    pub fn kind(&self, path: &WorkspacePath) -> Result<Option<Kind>, PathError> {
        // One system call where the kernel can refuse links on the way itself (a no-op run
        // asks this for every output); else, or when it meets one, the walk below.
        #[cfg(target_os = "linux")]
        if path.parts().len() > 1
            && !path
                .parts()
                .iter()
                .any(|p| reserved::resembles(p).is_some())
        {
            self.check(path)?;
            if let Some(found) = self.dir.kind_beneath(&path.to_string()) {
                return Ok(found);
            }
        }
        match self.parent_of(path)? {
            Some(folder) => folder.kind(path.name()).map_err(io_at(self, path)),
            None => Ok(None),
        }
    }

    /// The bytes of the regular file at `path`, or `None` when nothing is there. Anything but a
    /// regular file (a link included) is an error.
    pub fn read(&self, path: &WorkspacePath) -> Result<Option<Vec<u8>>, PathError> {
        let Some(folder) = self.parent_of(path)? else {
            return Ok(None);
        };
        match folder.read(path.name()) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) if is_link_error(&error) => Err(PathError::Link {
                path: path.to_string(),
                link: path.to_string(),
            }),
            Err(error) => Err(io_at(self, path)(error)),
        }
    }

    /// The checks by text that need the root: no reserved component, and the whole path short
    /// enough for every other tool to open (`PATH_MAX`, its NUL included), counting the file's
    /// name as at least [`STAGE_ROOM`] bytes, so that a file staged beside it fits too.
    fn check(&self, path: &WorkspacePath) -> Result<(), PathError> {
        if let Some(part) = path.parts().iter().find(|p| is_reserved(p)) {
            return Err(PathError::Reserved {
                path: path.to_string(),
                part: part.clone(),
            });
        }
        let name = path.name().len();
        let length =
            self.path.as_os_str().len() + 1 + path.to_string().len() - name + name.max(STAGE_ROOM);
        if length >= PATH_MAX {
            return Err(PathError::PathTooLong {
                path: path.to_string(),
                length,
                limit: PATH_MAX - 1,
            });
        }
        Ok(())
    }

    /// Opens the first `depth` components of `path`, one at a time, never following a link.
    /// `None` when one is missing and `create` is false.
    fn walk(
        &self,
        path: &WorkspacePath,
        depth: usize,
        create: bool,
    ) -> Result<Option<(Folder, Vec<WorkspacePath>)>, PathError> {
        let mut current = self.top().map_err(io_at(self, path))?;
        let mut made = Vec::new();
        for (index, part) in path.parts()[..depth].iter().enumerate() {
            let here = || path.prefix(index + 1);
            if current
                .reaches_reserved(part)
                .map_err(io_at(self, &here()))?
            {
                return Err(PathError::Reserved {
                    path: path.to_string(),
                    part: part.clone(),
                });
            }
            let opened = match current.dir.open_dir(part) {
                Err(error) if create && error.kind() == io::ErrorKind::NotFound => {
                    match current.dir.make_dir(part) {
                        Ok(()) => {
                            current.sync().map_err(io_at(self, path))?;
                            made.push(here());
                        }
                        // Made by someone else in between: it exists, which is all we need; the
                        // open below checks what it is.
                        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                        Err(error) => return Err(io_at(self, &here())(error)),
                    }
                    current.dir.open_dir(part)
                }
                other => other,
            };
            let dir = match opened {
                Ok(dir) => dir,
                Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(error) if is_link_error(&error) => {
                    return Err(match current.kind(part) {
                        Ok(Some(Kind::Link)) | Err(_) => PathError::Link {
                            path: path.to_string(),
                            link: here().to_string(),
                        },
                        _ => PathError::NotAFolder {
                            path: path.to_string(),
                            file: here().to_string(),
                        },
                    });
                }
                Err(error) => return Err(io_at(self, &here())(error)),
            };
            current = Folder {
                dir,
                shown: here().to_string(),
            };
        }
        Ok(Some((current, made)))
    }
}

impl Folder {
    /// `name` as [`checked`] checks it, and refused too when this folder would open a reserved
    /// name for it (see [`Folder::reaches_reserved`]).
    fn checked<'a>(&self, name: &'a str) -> io::Result<&'a str> {
        let name = checked(name)?;
        if self.reaches_reserved(name)? {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{name}` names a reserved folder on this file system, which folds names"),
            ));
        }
        Ok(name)
    }

    /// Whether this folder opens one of [`RESERVED`] for `name`, which is not one byte for byte:
    /// only for a name that [`reserved::resembles`] one, this asks the folder itself, by making a
    /// probe file whose name ends with the reserved name and looking for it under a name that
    /// ends with `name` instead. A folder where no probe can be made is taken to fold.
    pub fn reaches_reserved(&self, name: &str) -> io::Result<bool> {
        let Some(reserved) = reserved::resembles(name) else {
            return Ok(false);
        };
        let probe = format!(
            ".once-probe-{}-{:08x}",
            std::process::id(),
            crate::clock::random_u32()
        );
        let original = format!("{probe}{reserved}");
        if self.dir.create(&original, 0o600).is_err() {
            return Ok(true);
        }
        let seen = self.dir.kind(&format!("{probe}{name}"));
        let _ = self.dir.remove_file(&original);
        Ok(!matches!(seen, Ok(None)))
    }

    /// The folder, relative to the root (empty for the root).
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// What `name` is, without following it; `None` when nothing is there.
    pub fn kind(&self, name: &str) -> io::Result<Option<Kind>> {
        self.dir.kind(self.checked(name)?)
    }

    /// Opens the regular file `name` for reading, refusing a link and anything that is not a
    /// regular file (on Unix opened non-blocking, so a pipe cannot hang us).
    pub fn open(&self, name: &str) -> io::Result<File> {
        let file = self.dir.open_file(self.checked(name)?)?;
        if !file.metadata()?.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file",
            ));
        }
        Ok(file)
    }

    /// The bytes of the regular file `name`.
    pub fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.open(name)?.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// Creates the file `name`, which must not exist (not even as a dangling link), with the
    /// permission bits `mode` (less the umask; Windows has none), open for writing.
    pub fn create(&self, name: &str, mode: u32) -> io::Result<File> {
        self.dir.create(self.checked(name)?, mode)
    }

    /// Writes `bytes` to the new file `name` and flushes it to disk; fails if `name` exists.
    pub fn write_synced(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let mut file = self.create(name, 0o666)?;
        let written = file.write_all(bytes).and_then(|()| file.sync_all());
        if written.is_err() {
            let _ = self.remove_file(name);
        }
        written
    }

    /// Writes `bytes` to `name` atomically and durably: a hidden temporary file in this folder,
    /// flushed, then renamed over `name` ([`Mode::Replace`](crate::Mode)) or hard-linked to it so
    /// that an existing file is never clobbered ([`Mode::CreateNew`](crate::Mode)); then the
    /// folder is flushed.
    pub fn write_atomic(&self, name: &str, bytes: &[u8], mode: crate::Mode) -> io::Result<()> {
        let temp = stage_name();
        self.write_synced(&temp, bytes)?;
        let placed = match mode {
            crate::Mode::Replace => self.rename(&temp, name),
            crate::Mode::CreateNew => self.link(&temp, name),
        };
        let _ = self.remove_file(&temp);
        placed?;
        self.sync()
    }

    /// Renames `from` to `to`, both in this folder, replacing `to` (a link named `to` is
    /// replaced, never followed).
    pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        self.dir.rename(self.checked(from)?, self.checked(to)?)
    }

    /// Gives the file `from` the second name `to` in this folder; fails if `to` exists.
    pub fn link(&self, from: &str, to: &str) -> io::Result<()> {
        self.dir.link(self.checked(from)?, self.checked(to)?)
    }

    /// Removes the name `name` (a link is removed, not followed).
    pub fn remove_file(&self, name: &str) -> io::Result<()> {
        self.dir.remove_file(self.checked(name)?)
    }

    /// Removes the empty folder `name`.
    pub fn remove_dir(&self, name: &str) -> io::Result<()> {
        self.dir.remove_dir(self.checked(name)?)
    }

    /// Flushes the folder, making the names created, renamed or removed in it durable (Windows
    /// has no such flush: see `beneath/windows.rs`).
    pub fn sync(&self) -> io::Result<()> {
        self.dir.sync()
    }
}

/// Makes `once`'s own folder `dir` (a path through a workspace's `.once` folder, such as
/// `<root>/.once/changes`) if missing, and refuses it if any folder from the workspace root down
/// is a symbolic link (a folder outside any `.once` is simply made). Our state keeps its own writes by path (temporary files, locks, renames);
/// this check, made before them, keeps a link planted in advance (`.once` itself, or
/// `.once/memory`) from leading them out of the workspace. When this call makes `.once` itself,
/// it also writes `.once/.gitignore` (see `STATE_GITIGNORE`).
pub fn state_dir(dir: &Path) -> Result<(), PathError> {
    let parts: Vec<_> = dir.components().collect();
    let Some(at) = parts.iter().rposition(|c| c.as_os_str() == ".once") else {
        // Not under a workspace's `.once` (a store opened on a bare folder, as tests do): there
        // is no workspace root to check from.
        return std::fs::create_dir_all(dir).map_err(|source| PathError::Io {
            path: dir.to_path_buf(),
            source,
        });
    };
    let root: PathBuf = parts[..at].iter().collect();
    // Joined with `/` whatever the platform's separator: a workspace path's own.
    let relative: Vec<_> = parts[at..]
        .iter()
        .map(|part| part.as_os_str().to_string_lossy())
        .collect();
    let path = WorkspacePath::parse(&relative.join("/"))?;
    // The root is the caller's choice, like `Root::open`'s: made if missing, not checked.
    let opened = std::fs::create_dir_all(&root)
        .and_then(|()| Root::open(&root))
        .map_err(|source| PathError::Io {
            path: root.clone(),
            source,
        })?;
    // No reserved-name check here: `.once` is exactly where this folder is meant to be.
    let walked = opened.walk(&path, path.parts().len(), true)?;
    let made_state = walked.is_some_and(|(_, made)| made.iter().any(|p| p.parts().len() == 1));
    if made_state {
        write_state_gitignore(&root.join(".once"));
    }
    Ok(())
}

/// What `.once/.gitignore` says: everything in `.once` stays out of version control (caches, run
/// records, change sets, this file) except project memory, which is meant to be reviewed and
/// committed like code; memory's lock and half-written files stay out too.
const STATE_GITIGNORE: &str = "\
# Written by once when it made this folder. Caches, run records and change sets stay on this
# machine; project memory (memory/) is shared through version control.
/*
!/memory/
/memory/.lock
/memory/.*.tmp
";

/// Writes `.once/.gitignore` unless a file of that name exists, keeping a person's own. Best
/// effort: `.once` works without it, so a failure costs only a noisier `git status`, and must
/// not fail the write that made the folder. `create_new` never follows a link planted there.
fn write_state_gitignore(state: &Path) {
    use std::io::Write as _;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(state.join(".gitignore"));
    if let Ok(mut file) = file {
        let _ = file.write_all(STATE_GITIGNORE.as_bytes());
    }
}

/// A short hidden name for a file staged in the folder it will be renamed in. It never depends on
/// the destination's name, so staging a file never makes a name longer than the one asked for.
pub fn stage_name() -> String {
    format!(
        ".once-{}-{:08x}.tmp",
        std::process::id(),
        crate::clock::random_u32()
    )
}

/// Whether `name` is a file `once` stages beside a destination while it writes ([`stage_name`],
/// and a change set's `.once-stage-<id>-<N>`): there for an instant, renamed or removed, never a
/// file of the person's, so never an input.
pub fn is_stage_name(name: &str) -> bool {
    name.strip_prefix(".once-")
        .is_some_and(|rest| rest.starts_with("stage-") || rest.ends_with(".tmp"))
}

/// `PATH_MAX` on Linux, its terminating NUL included.
pub const PATH_MAX: usize = 4096;

/// Room kept for the name of a file staged beside a destination: the longest of [`stage_name`]
/// (29 bytes) and a change set's `.once-stage-<id>-<N>` (41 bytes), rounded up.
pub const STAGE_ROOM: usize = 48;

/// One component: never empty, `.`, `..`, a reserved name or anything with a `/` (nor, on
/// Windows, what Windows reads as more than a name: `\\`, `:`, a device), so an operation on a
/// [`Folder`] stays in that folder whatever its caller passes. A NUL byte is refused by the
/// primitive that converts the name.
fn checked(name: &str) -> io::Result<&str> {
    #[cfg(windows)]
    let separator = name.contains('/') || crate::path::windows_meaning(name).is_some();
    #[cfg(not(windows))]
    let separator = name.contains('/');
    if name.is_empty() || name == "." || name == ".." || separator || is_reserved(name) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{name}` is not a name once may write"),
        ));
    }
    Ok(name)
}

fn io_at(root: &Root, path: &WorkspacePath) -> impl FnOnce(io::Error) -> PathError {
    let path = root.path.join(path.to_string());
    move |source| PathError::Io { path, source }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::symlink;

    use super::*;

    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir =
                std::env::temp_dir().join(format!("once-fs-beneath-{name}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(dir.join("root/inside")).unwrap();
            fs::create_dir_all(dir.join("root/.git")).unwrap();
            fs::create_dir_all(dir.join("outside")).unwrap();
            Scratch(dir)
        }
        fn root(&self) -> Root {
            Root::open(&self.0.join("root")).unwrap()
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn path(text: &str) -> WorkspacePath {
        WorkspacePath::parse(text).unwrap()
    }

    #[test]
    fn every_link_and_reserved_name_on_the_way_is_refused() {
        let s = Scratch::new("refused");
        let dir = s.0.join("root");
        symlink(s.0.join("outside"), dir.join("out")).unwrap();
        symlink("inside", dir.join("in")).unwrap();
        symlink(".git", dir.join("gitdir")).unwrap();
        fs::write(dir.join("file"), "x").unwrap();
        let root = s.root();
        for text in ["out/a", "in/a", "gitdir/config", "out/deeper/a"] {
            let error = root.make_parent_of(&path(text)).unwrap_err();
            assert!(matches!(error, PathError::Link { .. }), "{text}: {error}");
        }
        for text in [".git/config", "inside/.git/config", "a/.once/x", ".once"] {
            let error = root.make_parent_of(&path(text)).unwrap_err();
            assert!(
                matches!(error, PathError::Reserved { .. }),
                "{text}: {error}"
            );
        }
        assert!(matches!(
            root.make_parent_of(&path("file/a")),
            Err(PathError::NotAFolder { .. })
        ));
        assert!(matches!(
            root.read(&path("in")),
            Err(PathError::Link { .. })
        ));
        assert_eq!(fs::read_dir(s.0.join("outside")).unwrap().count(), 0);
        assert!(!dir.join("a").exists(), "a refused walk made a folder");
    }

    /// `kind` answers in one system call on Linux and by the walk elsewhere (or when it meets a
    /// link); both must say the same of every path.
    #[test]
    fn kind_reports_what_is_there_and_refuses_links_on_the_way() {
        let s = Scratch::new("kind");
        let dir = s.0.join("root");
        fs::create_dir_all(dir.join("inside/deep")).unwrap();
        fs::write(dir.join("inside/deep/file"), "four").unwrap();
        fs::write(s.0.join("outside/file"), "outside").unwrap();
        symlink(s.0.join("outside"), dir.join("inside/out")).unwrap();
        symlink("deep", dir.join("inside/near")).unwrap();
        symlink("file", dir.join("inside/deep/alias")).unwrap();
        symlink("../../outside/file", dir.join("inside/deep/escape")).unwrap();
        let root = s.root();
        let kind = |text: &str| root.kind(&path(text));
        assert_eq!(kind("inside/deep/file").unwrap(), Some(Kind::File(4)));
        assert_eq!(kind("inside/deep").unwrap(), Some(Kind::Folder));
        assert_eq!(kind("inside/deep/missing").unwrap(), None);
        assert_eq!(kind("inside/missing/file").unwrap(), None);
        // A link at the end is reported, never followed, wherever it points.
        assert_eq!(kind("inside/deep/alias").unwrap(), Some(Kind::Link));
        assert_eq!(kind("inside/deep/escape").unwrap(), Some(Kind::Link));
        assert_eq!(kind("inside/out").unwrap(), Some(Kind::Link));
        // A link on the way is refused, inside the root or out of it.
        for text in ["inside/out/file", "inside/near/file"] {
            assert!(
                matches!(kind(text), Err(PathError::Link { .. })),
                "{text}: {:?}",
                kind(text)
            );
        }
        assert!(matches!(
            kind("inside/.git/config"),
            Err(PathError::Reserved { .. })
        ));
    }

    #[test]
    fn staged_names_are_recognised_and_nothing_else() {
        assert!(is_stage_name(&stage_name()));
        assert!(is_stage_name(".once-stage-20261201-1"));
        for name in [
            ".once",
            ".once-probe-1-ab.git",
            "a.tmp",
            ".oncex.tmp",
            "once-1.tmp",
        ] {
            assert!(!is_stage_name(name), "{name}");
        }
    }

    #[test]
    fn folders_are_made_and_files_written_relative_to_the_folder() {
        let s = Scratch::new("made");
        let root = s.root();
        let (folder, made) = root.make_parent_of(&path("new/deep/file.txt")).unwrap();
        assert_eq!(made, vec![path("new"), path("new/deep")]);
        assert_eq!(folder.shown(), "new/deep");
        folder
            .write_atomic("file.txt", b"one", crate::Mode::CreateNew)
            .unwrap();
        let again = folder.write_atomic("file.txt", b"two", crate::Mode::CreateNew);
        assert_eq!(again.unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        folder
            .write_atomic("file.txt", b"three", crate::Mode::Replace)
            .unwrap();
        assert_eq!(
            root.read(&path("new/deep/file.txt")).unwrap().unwrap(),
            b"three"
        );
        assert_eq!(
            root.kind(&path("new/deep/file.txt")).unwrap(),
            Some(Kind::File(5))
        );
        assert_eq!(root.read(&path("new/missing/x")).unwrap(), None);
        assert_eq!(fs::read_dir(s.0.join("root/new/deep")).unwrap().count(), 1);
        assert!(folder.create("..", 0o666).is_err());
        assert!(folder.create(".git", 0o666).is_err());
    }

    #[test]
    fn state_folders_are_made_but_never_through_a_link() {
        let s = Scratch::new("state");
        let dir = s.0.join("root");
        state_dir(&dir.join(".once/changes")).unwrap();
        assert!(dir.join(".once/changes").is_dir());
        symlink(s.0.join("outside"), dir.join(".once/memory")).unwrap();
        assert!(matches!(
            state_dir(&dir.join(".once/memory")),
            Err(PathError::Link { .. })
        ));
        fs::remove_dir_all(dir.join(".once")).unwrap();
        symlink(s.0.join("outside"), dir.join(".once")).unwrap();
        assert!(matches!(
            state_dir(&dir.join(".once/cache/cas")),
            Err(PathError::Link { .. })
        ));
        assert_eq!(fs::read_dir(s.0.join("outside")).unwrap().count(), 0);
        state_dir(&dir.join("src/a")).unwrap();
        assert!(dir.join("src/a").is_dir());
    }

    #[test]
    fn a_folder_replaced_by_a_link_after_the_walk_keeps_the_write_in_the_real_folder() {
        let s = Scratch::new("moved");
        let dir = s.0.join("root");
        let root = s.root();
        let (folder, _) = root.make_parent_of(&path("inside/x")).unwrap();
        fs::rename(dir.join("inside"), dir.join("real")).unwrap();
        symlink(s.0.join("outside"), dir.join("inside")).unwrap();
        folder
            .write_atomic("x", b"x", crate::Mode::CreateNew)
            .unwrap();
        assert_eq!(fs::read(dir.join("real/x")).unwrap(), b"x");
        assert_eq!(fs::read_dir(s.0.join("outside")).unwrap().count(), 0);
    }
}
