//! Paths that cannot leave the workspace.
//!
//! A [`WorkspacePath`] is checked twice. When parsed, by its text alone: relative, `/`-separated,
//! no `..` component, no NUL byte (`.` and empty components are dropped, so `./web/` is `web`).
//! When resolved against a root, by the file system: each part of it that already exists is looked
//! at without following links, and a symbolic link is accepted only if everything it leads to is
//! inside the root; the destination itself must not be a link at all, since we would replace the
//! link or write through it depending on the call.
//!
//! Must never create, change or remove anything: it only looks.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

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
    /// Part of the path is a symbolic link that leads outside the root (or nowhere).
    #[error(
        "`{path}` passes through the symbolic link `{link}`, which leads outside the workspace"
    )]
    Escapes {
        /// The path given.
        path: String,
        /// The link, relative to the root.
        link: String,
    },
    /// The destination itself is a symbolic link.
    #[error("`{path}` is a symbolic link; refusing to write through or over it")]
    Link {
        /// The path given.
        path: String,
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
                _ => parts.push(part.to_string()),
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

    /// The absolute path under `root`, after checking on disk that it does not leave `root`:
    /// every existing ancestor is inspected without following links, and a link is accepted only
    /// when its canonical target is inside the canonical root. The destination may be missing;
    /// if it exists it must not be a link.
    pub fn resolve(&self, root: &Path) -> Result<PathBuf, PathError> {
        let io_error = |path: &Path| {
            let path = path.to_path_buf();
            move |source| PathError::Io { path, source }
        };
        let root = root.canonicalize().map_err(io_error(root))?;
        let mut current = root.clone();
        let last = self.parts.len() - 1;
        for (index, part) in self.parts.iter().enumerate() {
            current.push(part);
            let meta = match std::fs::symlink_metadata(&current) {
                Ok(meta) => meta,
                // Nothing below a missing folder exists either: no link can hide there.
                Err(error) if error.kind() == io::ErrorKind::NotFound => break,
                Err(error) => return Err(io_error(&current)(error)),
            };
            let relative = || self.parts[..=index].join("/");
            if meta.file_type().is_symlink() {
                if index == last {
                    return Err(PathError::Link {
                        path: self.to_string(),
                    });
                }
                // A dangling link fails to canonicalize: where it would lead is unknown, so it
                // counts as leading outside.
                let inside = current
                    .canonicalize()
                    .is_ok_and(|target| target.starts_with(&root));
                if !inside {
                    return Err(PathError::Escapes {
                        path: self.to_string(),
                        link: relative(),
                    });
                }
            } else if index < last && !meta.is_dir() {
                return Err(PathError::NotAFolder {
                    path: self.to_string(),
                    file: relative(),
                });
            }
        }
        Ok(self.parts.iter().fold(root, |path, part| path.join(part)))
    }
}

impl fmt::Display for WorkspacePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.parts.join("/"))
    }
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

    fn resolve(root: &Path, text: &str) -> Result<PathBuf, PathError> {
        WorkspacePath::parse(text).unwrap().resolve(root)
    }

    #[test]
    fn links_that_lead_outside_are_refused() {
        let s = Scratch::new("links");
        let root = s.root();
        symlink(s.0.join("outside"), root.join("out")).unwrap();
        symlink(root.join("inside"), root.join("in")).unwrap();
        symlink(s.0.join("nowhere"), root.join("dangling")).unwrap();
        symlink("../outside", root.join("inside/up")).unwrap();
        fs::write(root.join("file"), "x").unwrap();

        let canonical = root.canonicalize().unwrap();
        assert_eq!(
            resolve(&root, "new/dir/file.txt").unwrap(),
            canonical.join("new/dir/file.txt")
        );
        assert_eq!(
            resolve(&root, "in/a.txt").unwrap(),
            canonical.join("in/a.txt")
        );
        for escaping in [
            "out/a.txt",
            "dangling/a.txt",
            "inside/up/a.txt",
            "out/deeper/a.txt",
        ] {
            let error = resolve(&root, escaping).unwrap_err();
            assert!(
                matches!(error, PathError::Escapes { .. }),
                "{escaping}: {error}"
            );
        }
        assert!(matches!(resolve(&root, "out"), Err(PathError::Link { .. })));
        assert!(matches!(
            resolve(&root, "file/a.txt"),
            Err(PathError::NotAFolder { .. })
        ));
    }
}
