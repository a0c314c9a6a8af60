//! Paths that cannot leave the workspace.
//!
//! A [`WorkspacePath`] is checked by its text when parsed: relative, `/`-separated, no `..`
//! component, no NUL byte, no component longer than a file name can be (255 bytes); `.` and empty
//! components are dropped, so `./web/` is `web`. On Windows a name also may not hold what Windows
//! reads as structure (`\`, `:`) or be a device (`NUL`, `COM1`, ...). What it leads to on disk is checked only at the
//! moment of use, relative to directory descriptors ([`Root`](crate::Root)), because a check made
//! earlier proves nothing about the tree a moment later. [`open_inside`] is the one door for files
//! that are only read (project memory's linked files): it opens, then checks where the opened
//! file really is.
//!
//! Must never create, change or remove anything: it only looks.

use std::fmt;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::reserved::is_reserved;

/// The longest file name (one component) Linux file systems take, in bytes.
pub const NAME_MAX: usize = 255;

/// Why a path was refused.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// Nothing left after dropping `.` and empty components.
    #[error("the path is empty")]
    Empty,
    /// An absolute path.
    #[error("`{path}` is absolute; give a path relative to the workspace root")]
    Absolute {
        /// The path given.
        path: String,
    },
    /// A `..` component.
    #[error("`{path}` has a `..` component; paths must stay inside the workspace")]
    Parent {
        /// The path given.
        path: String,
    },
    /// A NUL byte, which no file name can hold.
    #[error("the path {path:?} has a NUL byte")]
    Nul {
        /// The path given.
        path: String,
    },
    /// A component longer than a file name can be.
    #[error("`{path}` has a name of {length} bytes; a file name can have at most {limit} bytes")]
    NameTooLong {
        /// The path given.
        path: String,
        /// The length of the longest component.
        length: usize,
        /// The limit.
        limit: usize,
    },
    /// The whole path, under the root, is longer than tools can open.
    #[error(
        "the path is {length} bytes long with the workspace root's; a path can have at most {limit} bytes"
    )]
    PathTooLong {
        /// The path given.
        path: String,
        /// Its length, the root's path and a separator included.
        length: usize,
        /// The limit, the root's path included.
        limit: usize,
    },
    /// A component is `.git` or `.once`.
    #[error("`{path}` is inside `{part}/`, which once never writes for anyone")]
    Reserved {
        /// The path given.
        path: String,
        /// The reserved component.
        part: String,
    },
    /// A name Windows reads as more than a file's name: a folder separator, a drive or a
    /// stream, or a device.
    #[error("`{path}` has the name `{part}`, which Windows reads as {meaning}, not as a file")]
    NotPortable {
        /// The path given.
        path: String,
        /// The name.
        part: String,
        /// What Windows reads it as.
        meaning: &'static str,
    },
    /// Part of the path is a symbolic link: once writes only through real folders.
    #[error(
        "`{path}` passes through the symbolic link `{link}`; once never writes through or over a link"
    )]
    Link {
        /// The path given.
        path: String,
        /// The link, relative to the root.
        link: String,
    },
    /// The file's real location is outside the root, or inside `.git` or `.once`.
    #[error("`{path}` leads to `{}`, outside the workspace or inside `.git` or `.once`", real.display())]
    Escapes {
        /// The path given.
        path: String,
        /// Where it really is.
        real: PathBuf,
    },
    /// A part of the path that must be a folder is a file.
    #[error("`{path}` cannot be created: `{file}` is a file, not a folder")]
    NotAFolder {
        /// The path given.
        path: String,
        /// The file in the way, relative to the root.
        file: String,
    },
    /// The file system could not be asked.
    #[error("cannot inspect `{}`: {source}", path.display())]
    Io {
        /// What we were looking at.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
}

/// A path relative to a workspace root, normalized and checked by its text.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkspacePath {
    parts: Vec<String>,
}

impl WorkspacePath {
    /// Checks `text` and normalizes it (`./a//b/` is `a/b`).
    pub fn parse(text: &str) -> Result<WorkspacePath, PathError> {
        let path = || text.to_string();
        if text.contains('\0') {
            return Err(PathError::Nul { path: path() });
        }
        if text.starts_with('/') {
            return Err(PathError::Absolute { path: path() });
        }
        let mut parts = Vec::new();
        for part in text.split('/') {
            match part {
                "" | "." => {}
                ".." => return Err(PathError::Parent { path: path() }),
                _ if part.len() > NAME_MAX => {
                    return Err(PathError::NameTooLong {
                        path: path(),
                        length: part.len(),
                        limit: NAME_MAX,
                    });
                }
                _ => {
                    #[cfg(windows)]
                    if let Some(meaning) = windows_meaning(part) {
                        return Err(PathError::NotPortable {
                            path: path(),
                            part: part.to_string(),
                            meaning,
                        });
                    }
                    parts.push(part.to_string());
                }
            }
        }
        if parts.is_empty() {
            return Err(PathError::Empty);
        }
        Ok(WorkspacePath { parts })
    }

    /// `self` followed by `other`.
    pub fn join(&self, other: &WorkspacePath) -> WorkspacePath {
        let mut parts = self.parts.clone();
        parts.extend(other.parts.iter().cloned());
        WorkspacePath { parts }
    }

    /// The first component (`.once` for `.once/memory/x.md`).
    pub fn first(&self) -> &str {
        &self.parts[0]
    }

    /// The last component, the file's own name.
    pub fn name(&self) -> &str {
        &self.parts[self.parts.len() - 1]
    }

    /// The folder that holds it, `None` for a name at the root.
    pub fn parent(&self) -> Option<WorkspacePath> {
        (self.parts.len() > 1).then(|| self.prefix(self.parts.len() - 1))
    }

    /// The reserved component (`.git`, `.once`) it passes through, if any.
    pub fn reserved(&self) -> Option<&str> {
        self.parts
            .iter()
            .find(|p| is_reserved(p))
            .map(String::as_str)
    }

    pub(crate) fn parts(&self) -> &[String] {
        &self.parts
    }

    /// The first `n` components (`n` ≥ 1).
    pub(crate) fn prefix(&self, n: usize) -> WorkspacePath {
        WorkspacePath {
            parts: self.parts[..n].to_vec(),
        }
    }
}

impl fmt::Display for WorkspacePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.parts.join("/"))
    }
}

/// Opens the regular file at `relative` under `root` for reading, following links, and refuses it
/// when the file it opened really lives outside `root` or inside `.git` or `.once`. On Linux the
/// check asks the kernel where the open descriptor points (`/proc/self/fd`), so no change to the
/// tree after the open can fool it; elsewhere it resolves the path just before opening, which a
/// concurrent change could race. Project memory hashes linked files through this function alone,
/// whichever door (CLI or MCP) named them.
pub fn open_inside(root: &Path, relative: &str) -> Result<File, PathError> {
    let path = WorkspacePath::parse(relative)?;
    if let Some(part) = path.reserved() {
        return Err(PathError::Reserved {
            path: path.to_string(),
            part: part.to_string(),
        });
    }
    let io_error = |at: &Path| {
        let at = at.to_path_buf();
        move |source| PathError::Io { path: at, source }
    };
    let canonical_root = root.canonicalize().map_err(io_error(root))?;
    // Name by name: on Windows the canonical root is a `\\?\` path, in which `/` separates
    // nothing.
    let full = path
        .parts()
        .iter()
        .fold(canonical_root.clone(), |full, part| full.join(part));
    #[cfg(not(target_os = "linux"))]
    let before = full.canonicalize().map_err(io_error(&full))?;
    let file = open_nonblocking(&full).map_err(io_error(&full))?;
    #[cfg(target_os = "linux")]
    let real = {
        use std::os::fd::AsRawFd;
        let link = format!("/proc/self/fd/{}", file.as_raw_fd());
        std::fs::read_link(&link).map_err(io_error(Path::new(&link)))?
    };
    #[cfg(not(target_os = "linux"))]
    let real = before;
    let inside = real.strip_prefix(&canonical_root).is_ok_and(|rest| {
        !rest
            .components()
            .any(|c| c.as_os_str().to_str().is_some_and(is_reserved))
    });
    if !inside {
        return Err(PathError::Escapes {
            path: path.to_string(),
            real,
        });
    }
    let meta = file.metadata().map_err(io_error(&full))?;
    if !meta.is_file() {
        return Err(PathError::Io {
            path: full,
            source: io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"),
        });
    }
    Ok(file)
}

/// Opens for reading without blocking on a pipe or a device that waits for a writer.
#[cfg(unix)]
fn open_nonblocking(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

/// Opens for reading. Windows has no FIFO in a folder to block on (its pipes live under
/// `\\.\pipe\`, which a path beneath the root cannot reach), and devices are refused by name
/// when the path is parsed.
#[cfg(windows)]
fn open_nonblocking(path: &Path) -> io::Result<File> {
    File::open(path)
}

/// What Windows reads `part` (one `/`-separated name) as, when that is more than a file's name:
/// `\` separates folders, `:` names a drive (`C:x`) or a file's stream (`a:b`), a name of dots
/// and spaces alone loses them all (`...` is the folder itself), and the device names (`CON`,
/// `PRN`, `AUX`, `NUL`, `COM0`–`COM9`, `LPT0`–`LPT9`) stand for devices in any folder and with
/// any extension (`nul.txt` is `NUL`).
#[cfg(any(windows, test))]
pub(crate) fn windows_meaning(part: &str) -> Option<&'static str> {
    if part.contains('\\') {
        return Some("a folder separator");
    }
    if part.contains(':') {
        return Some("a drive or a stream");
    }
    if part.trim_end_matches(['.', ' ']).is_empty() {
        return Some("the folder itself or its parent");
    }
    let stem = part.split('.').next().unwrap_or(part).trim_end_matches(' ');
    let device = ["CON", "PRN", "AUX", "NUL"]
        .iter()
        .any(|name| stem.eq_ignore_ascii_case(name))
        || ["COM", "LPT"].iter().any(|prefix| {
            stem.len() == 4
                && stem.is_char_boundary(3)
                && stem[..3].eq_ignore_ascii_case(prefix)
                && stem.as_bytes()[3].is_ascii_digit()
        });
    device.then_some("a device")
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::symlink;

    use super::*;

    fn parse(text: &str) -> Result<String, String> {
        WorkspacePath::parse(text)
            .map(|p| p.to_string())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn text_checks() {
        assert_eq!(parse("./web//src/"), Ok("web/src".into()));
        assert!(parse("/etc/passwd").unwrap_err().contains("absolute"));
        assert!(parse("a/../../b").unwrap_err().contains("`..`"));
        assert!(parse("..").unwrap_err().contains("`..`"));
        assert!(parse("a\0b").unwrap_err().contains("NUL"));
        assert!(parse("./").unwrap_err().contains("empty"));
        assert!(parse("").unwrap_err().contains("empty"));
    }

    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir =
                std::env::temp_dir().join(format!("once-fs-path-{name}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(dir.join("root/inside")).unwrap();
            fs::create_dir_all(dir.join("outside")).unwrap();
            Scratch(dir)
        }
        fn root(&self) -> PathBuf {
            self.0.join("root")
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn on_windows_names_that_are_structure_or_devices_are_refused() {
        for (name, meaning) in [
            ("a\\b", "a folder separator"),
            ("..\\..\\x", "a folder separator"),
            ("C:", "a drive or a stream"),
            ("file.txt:hidden", "a drive or a stream"),
            ("nul", "a device"),
            ("NUL.txt", "a device"),
            ("con .log", "a device"),
            ("Com1", "a device"),
            ("lpt9.tar.gz", "a device"),
            ("COM0", "a device"),
            ("...", "the folder itself or its parent"),
            (". .", "the folder itself or its parent"),
            (".. ", "the folder itself or its parent"),
        ] {
            assert_eq!(windows_meaning(name), Some(meaning), "{name}");
        }
        for name in [
            "console",
            "nullable",
            "com10",
            "lpt",
            "a.nul",
            "aux-notes",
            "x.con",
            ".git",
            "a.",
        ] {
            assert_eq!(windows_meaning(name), None, "{name}");
        }
    }

    #[test]
    fn long_names_are_refused_by_their_text() {
        assert!(parse(&"n".repeat(255)).is_ok());
        let error = parse(&format!("a/{}", "n".repeat(256))).unwrap_err();
        assert!(error.contains("at most 255 bytes"), "{error}");
    }

    #[test]
    fn reading_refuses_a_file_whose_real_location_leaves_the_root() {
        let s = Scratch::new("inside");
        let root = s.root();
        fs::write(s.0.join("outside/secret"), "s").unwrap();
        fs::write(root.join("inside/mine"), "m").unwrap();
        fs::create_dir_all(root.join(".git")).unwrap();
        fs::write(root.join(".git/config"), "c").unwrap();
        symlink(s.0.join("outside"), root.join("out")).unwrap();
        symlink(s.0.join("outside/secret"), root.join("secret")).unwrap();
        symlink(".git", root.join("gitdir")).unwrap();
        symlink("inside/mine", root.join("alias")).unwrap();
        assert!(open_inside(&root, "inside/mine").is_ok());
        assert!(open_inside(&root, "alias").is_ok());
        for text in ["out/secret", "secret", "gitdir/config"] {
            let error = open_inside(&root, text).unwrap_err();
            assert!(
                matches!(error, PathError::Escapes { .. }),
                "{text}: {error}"
            );
        }
        assert!(matches!(
            open_inside(&root, ".git/config"),
            Err(PathError::Reserved { .. })
        ));
        assert!(matches!(
            open_inside(&root, "../outside/secret"),
            Err(PathError::Parent { .. })
        ));
    }
}
