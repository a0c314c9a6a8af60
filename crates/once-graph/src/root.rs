//! Finding the workspace root from a folder: how far the walk upward may go, and whose
//! manifest may make a folder the root.
//!
//! A repository is untrusted input, and so is every folder above it: anyone can write a
//! `once.toml` into a shared `/tmp`, and a home folder holds whatever was unpacked there. So the
//! walk never climbs past the top of the repository that holds the start (the nearest folder
//! with `.git`, a folder in a clone, a file in a worktree or a submodule), for `once.toml` and for
//! the ecosystems' manifests alike. Outside any repository it may climb to `/`, but the folder it
//! settles on, and the manifests there that made it the root, must belong to the person running
//! `once` or to root, unless the person named that folder in [`SAFE_DIRECTORIES_VAR`], as git's
//! `safe.directory` does. `--workspace DIR` skips this search entirely: naming a folder is the
//! person's own choice.
//!
//! This module only looks at names and owners: it must never read a manifest's content, and
//! never settle on a folder another user controls that the person did not name.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use once_fs::{Owner, owner_of};

use crate::discover::MARKERS;
use crate::{Error, MANIFEST_FILE};

/// The environment variable that lists folders the person trusts as workspace roots even when
/// another user owns them: absolute paths separated like `PATH` (`:` on unix), or `*` for any.
pub const SAFE_DIRECTORIES_VAR: &str = "ONCE_SAFE_DIRECTORIES";

/// The folders the person allowed as roots whatever their owner ([`SAFE_DIRECTORIES_VAR`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SafeDirectories {
    /// `*`: every folder.
    any: bool,
    /// Canonical folders; one that does not exist is left out, as it can hold no manifest.
    folders: Vec<PathBuf>,
}

impl SafeDirectories {
    /// The list in [`SAFE_DIRECTORIES_VAR`]; none when it is unset.
    pub fn from_env() -> SafeDirectories {
        SafeDirectories::parse(std::env::var_os(SAFE_DIRECTORIES_VAR).as_deref())
    }

    /// Parses a value of [`SAFE_DIRECTORIES_VAR`]. Relative entries are ignored: which folder
    /// they meant would depend on where `once` happens to start.
    pub fn parse(value: Option<&OsStr>) -> SafeDirectories {
        let mut safe = SafeDirectories::default();
        for entry in value.map(std::env::split_paths).into_iter().flatten() {
            if entry.as_os_str() == "*" {
                safe.any = true;
            } else if entry.is_absolute()
                && let Ok(folder) = std::fs::canonicalize(&entry)
            {
                safe.folders.push(folder);
            }
        }
        safe
    }

    fn allows(&self, folder: &Path) -> bool {
        self.any || self.folders.iter().any(|f| f == folder)
    }
}

/// The top of the repository that holds `folder` (canonical): the nearest folder upwards, itself
/// included, that holds `.git` as a folder, a file (a worktree, a submodule) or even a link.
pub fn repository_top(folder: &Path) -> Option<PathBuf> {
    folder
        .ancestors()
        .find(|d| d.join(".git").symlink_metadata().is_ok())
        .map(Path::to_path_buf)
}

/// The workspace root for `start`, canonical: the nearest folder upwards holding `once.toml`,
/// else the outermost one holding one of the ecosystems' [`MARKERS`]; never above the top of the
/// repository that holds `start`. Outside any repository, a root whose folder or manifests
/// belong to another user (not root) is refused unless `safe` allows it.
pub(crate) fn find(start: &Path, safe: &SafeDirectories) -> Result<PathBuf, Error> {
    let start_abs = std::fs::canonicalize(start).map_err(|source| Error::Io {
        path: start.to_path_buf(),
        source,
    })?;
    let top = repository_top(&start_abs);
    let within = || {
        let stop = top.as_deref();
        // Each folder from the start up to the repository's top, both included.
        let mut past_top = false;
        start_abs.ancestors().take_while(move |d| {
            let take = !past_top;
            past_top = past_top || Some(*d) == stop;
            take
        })
    };
    let (root, manifests): (&Path, Vec<&str>) =
        match within().find(|d| d.join(MANIFEST_FILE).is_file()) {
            Some(d) => (d, vec![MANIFEST_FILE]),
            None => {
                let outermost = within()
                    .filter(|d| MARKERS.iter().any(|m| d.join(m).is_file()))
                    .last()
                    .ok_or_else(|| Error::NoRoot {
                        start: start.to_path_buf(),
                    })?;
                let present = MARKERS
                    .iter()
                    .copied()
                    .filter(|m| outermost.join(m).is_file())
                    .collect();
                (outermost, present)
            }
        };
    // Inside a repository the person chose to work in it; git guards its ownership itself.
    if top.is_none() && !safe.allows(root) {
        let paths =
            std::iter::once(root.to_path_buf()).chain(manifests.iter().map(|m| root.join(m)));
        for path in paths {
            if let Some(owner) = foreign_owner(&path)? {
                return Err(Error::ForeignRoot {
                    path,
                    root: root.to_path_buf(),
                    owner,
                });
            }
        }
    }
    Ok(root.to_path_buf())
}

/// The uid of `path`'s owner when that is neither us nor root.
fn foreign_owner(path: &Path) -> Result<Option<u32>, Error> {
    let metadata = std::fs::metadata(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(match owner_of(&metadata) {
        Owner::Other(uid) => Some(uid),
        Owner::Us | Owner::Root => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover::scratch::Scratch;

    fn root_of(s: &Scratch) -> PathBuf {
        s.0.canonicalize().unwrap()
    }

    fn safe(value: &str) -> SafeDirectories {
        SafeDirectories::parse(Some(OsStr::new(value)))
    }

    #[test]
    fn the_walk_for_once_toml_stops_at_the_repository_top() {
        let s = Scratch::new(&[
            ("once.toml", "[targets.planted]\nkind = \"command\"\n"),
            ("clone/.git/HEAD", "ref: refs/heads/main\n"),
            ("clone/Cargo.toml", "[package]\nname = \"victim\"\n"),
            ("clone/src/lib.rs", ""),
        ]);
        let clone = root_of(&s).join("clone");
        let none = SafeDirectories::default();
        assert_eq!(find(&clone.join("src"), &none).unwrap(), clone);
        assert_eq!(find(&clone, &none).unwrap(), clone);
        // Above the clone, outside any repository, the planted file is ours here: it is the root.
        assert_eq!(find(&root_of(&s), &none).unwrap(), root_of(&s));
    }

    #[test]
    fn a_git_file_is_a_repository_top_too() {
        let s = Scratch::new(&[
            ("once.toml", ""),
            ("worktree/.git", "gitdir: ../main/.git/worktrees/wt\n"),
            ("worktree/sub/x.txt", ""),
        ]);
        let worktree = root_of(&s).join("worktree");
        assert_eq!(
            repository_top(&worktree.join("sub")),
            Some(worktree.clone())
        );
        // No manifest in the worktree at all: no root, rather than the folder above.
        assert!(matches!(
            find(&worktree.join("sub"), &SafeDirectories::default()),
            Err(Error::NoRoot { .. })
        ));
    }

    #[test]
    fn safe_directories_take_absolute_folders_and_a_star() {
        let s = Scratch::new(&[("a/x.txt", "")]);
        let a = root_of(&s).join("a");
        let list =
            std::env::join_paths([a.as_path(), Path::new("relative"), Path::new("/no/such")])
                .unwrap();
        let parsed = SafeDirectories::parse(Some(&list));
        assert!(parsed.allows(&a));
        assert!(!parsed.allows(&root_of(&s)));
        assert!(!parsed.allows(Path::new("/no/such")));
        assert!(safe("*").allows(Path::new("/anything")));
        assert_eq!(SafeDirectories::parse(None), SafeDirectories::default());
        assert!(!safe("").allows(Path::new("/")));
    }
}
