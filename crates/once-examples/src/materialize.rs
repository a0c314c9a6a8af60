//! Writing an example into a workspace, all or nothing.
//!
//! Two passes. The first only looks: it walks to every destination through `once_fs::Root`
//! (refusing `..`, any symbolic link on the way, and any `.git` or `.once` folder) and compares
//! what is there with the example's bytes. Any difference refuses the whole operation, listing
//! every conflict, before a single byte is written. The second pass walks again, making missing
//! folders, and writes the missing files relative to their folder's descriptor, each atomically
//! and never over a file that appeared since the first pass looked (a no-clobber link, not a
//! rename): the check that counts is the one made at the moment of writing. Identical files are
//! left alone, so materializing twice is the same as once.
//!
//! Into a folder of a workspace that has a `once.toml` of its own, the example's `once.toml` is
//! written as a member manifest: without its `[workspace]` table, which only the root's may have,
//! so the root can list the folder under `members`.
//!
//! Must never write outside the root, never through a link or into `.git`/`.once`, and never
//! replace an existing file.

use std::borrow::Cow;
use std::path::Path;

use once_fs::{Kind, Mode, Root, WorkspacePath};
use serde::Serialize;

use crate::{Conflict, Error, Example};

/// What [`materialize`] did (or, with `dry_run`, would do). Paths only, never contents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Materialized {
    /// The example's name.
    pub example: &'static str,
    /// The folder it went into, relative to the root (`.` for the root itself).
    pub into: String,
    /// True when nothing was written because only a plan was asked for.
    pub dry_run: bool,
    /// Files written (or to be written), relative to the root.
    pub created: Vec<String>,
    /// Files that were already there with the same content.
    pub unchanged: Vec<String>,
}

/// Writes `example` into `root/into` (`into` `None` means the root itself).
pub fn materialize(
    root: &Path,
    example: &Example,
    into: Option<&WorkspacePath>,
    dry_run: bool,
) -> Result<Materialized, Error> {
    let member = into.is_some() && root.join(MANIFEST).is_file();
    let root = Root::open(root).map_err(|source| Error::Io {
        action: "open",
        path: root.display().to_string(),
        source,
    })?;
    let mut plan = Vec::new();
    let mut unchanged = Vec::new();
    let mut conflicts = Vec::new();
    for file in example.files() {
        let relative = WorkspacePath::parse(file.path)?;
        let relative = match into {
            Some(into) => into.join(&relative),
            None => relative,
        };
        let shown = relative.to_string();
        let bytes = if member && file.path == MANIFEST {
            member_manifest(file.bytes)
        } else {
            Cow::Borrowed(file.bytes)
        };
        match compare(&root, &relative, &bytes) {
            Ok(State::Missing) => plan.push((shown, relative, bytes)),
            Ok(State::Same) => unchanged.push(shown),
            Ok(State::Differs(problem)) => conflicts.push(Conflict {
                path: shown,
                problem,
            }),
            Err(error) => return Err(error),
        }
    }
    if !conflicts.is_empty() {
        return Err(Error::Conflicts { conflicts });
    }
    if !dry_run {
        for (shown, dest, bytes) in &plan {
            let (folder, _) = root.make_parent_of(dest)?;
            folder
                .write_atomic(dest.name(), bytes, Mode::CreateNew)
                .map_err(|source| Error::Io {
                    action: "write",
                    path: shown.clone(),
                    source,
                })?;
        }
    }
    Ok(Materialized {
        example: example.name,
        into: into.map_or_else(|| ".".to_string(), ToString::to_string),
        dry_run,
        created: plan.into_iter().map(|(shown, _, _)| shown).collect(),
        unchanged,
    })
}

const MANIFEST: &str = "once.toml";

/// An example's `once.toml` without its `[workspace]` table: the header and its keys, up to the
/// next table. The examples are ours and their manifests plain, so lines are enough.
fn member_manifest(bytes: &[u8]) -> Cow<'static, [u8]> {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len());
    let mut skipping = false;
    for line in text.split_inclusive('\n') {
        let header = line.trim_start().starts_with('[');
        if line.trim() == "[workspace]" {
            skipping = true;
            out.push_str(
                "# A member of the workspace above: the root once.toml holds the workspace table.\n",
            );
            continue;
        }
        if skipping && header {
            skipping = false;
            out.push('\n');
        }
        if !skipping {
            out.push_str(line);
        }
    }
    Cow::Owned(out.into_bytes())
}

enum State {
    Missing,
    Same,
    Differs(String),
}

fn compare(root: &Root, dest: &WorkspacePath, bytes: &[u8]) -> Result<State, Error> {
    let size = match root.kind(dest)? {
        None => return Ok(State::Missing),
        Some(Kind::File(size)) => size,
        Some(Kind::Link) => {
            return Err(Error::Path(once_fs::PathError::Link {
                path: dest.to_string(),
                link: dest.to_string(),
            }));
        }
        Some(_) => return Ok(State::Differs("not a regular file".into())),
    };
    if size != bytes.len() as u64 {
        return Ok(State::Differs("different content".into()));
    }
    let now = root.read(dest)?;
    Ok(if now.as_deref() == Some(bytes) {
        State::Same
    } else if now.is_none() {
        State::Missing
    } else {
        State::Differs("different content".into())
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::fs;
    use std::os::unix::fs::symlink;
    use std::path::PathBuf;

    use super::*;
    use crate::find;

    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!("once-ex-{name}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(dir.join("root")).unwrap();
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

    /// Every file and folder under `dir` with its bytes (folders as `None`), links as their
    /// target: a picture to compare before and after.
    fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
        let mut out = BTreeMap::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(folder) = stack.pop() {
            for entry in fs::read_dir(&folder).unwrap() {
                let path = entry.unwrap().path();
                let meta = fs::symlink_metadata(&path).unwrap();
                let key = path.strip_prefix(dir).unwrap().to_path_buf();
                if meta.is_symlink() {
                    let target = fs::read_link(&path).unwrap();
                    out.insert(key, Some(target.into_os_string().into_encoded_bytes()));
                } else if meta.is_dir() {
                    out.insert(key, None);
                    stack.push(path);
                } else {
                    out.insert(key, Some(fs::read(&path).unwrap()));
                }
            }
        }
        out
    }

    fn into(text: &str) -> WorkspacePath {
        WorkspacePath::parse(text).unwrap()
    }

    #[test]
    fn materializing_twice_is_the_same_as_once() {
        let s = Scratch::new("twice");
        let example = find("rust-workspace").unwrap();
        let first = materialize(&s.root(), example, None, false).unwrap();
        assert_eq!(first.created.len(), example.files().count());
        assert!(first.unchanged.is_empty());
        let after_first = snapshot(&s.root());
        let second = materialize(&s.root(), example, None, false).unwrap();
        assert!(second.created.is_empty());
        assert_eq!(second.unchanged, first.created);
        assert_eq!(snapshot(&s.root()), after_first);
        for file in example.files() {
            assert_eq!(fs::read(s.root().join(file.path)).unwrap(), file.bytes);
        }
    }

    #[test]
    fn one_conflict_refuses_everything_and_names_each_conflict() {
        let s = Scratch::new("conflict");
        let root = s.root();
        fs::create_dir_all(root.join("web/src")).unwrap();
        fs::write(root.join("web/once.toml"), "# mine\n").unwrap();
        fs::create_dir_all(root.join("web/package.json")).unwrap();
        let before = snapshot(&root);
        let example = find("node-package").unwrap();
        let error = materialize(&root, example, Some(&into("web")), false).unwrap_err();
        let Error::Conflicts { conflicts } = &error else {
            panic!("{error}");
        };
        let paths: Vec<_> = conflicts.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["web/once.toml", "web/package.json"]);
        assert_eq!(snapshot(&root), before, "the tree changed");
    }

    #[test]
    fn a_dry_run_plans_without_writing() {
        let s = Scratch::new("dry");
        let before = snapshot(&s.root());
        let example = find("polyglot").unwrap();
        let plan = materialize(&s.root(), example, Some(&into("shop")), true).unwrap();
        assert!(plan.dry_run);
        assert!(plan.created.contains(&"shop/core/src/lib.rs".to_string()));
        assert_eq!(snapshot(&s.root()), before);
    }

    #[test]
    fn a_link_that_leads_outside_is_refused_before_anything_is_written() {
        let s = Scratch::new("link");
        let root = s.root();
        symlink(s.0.join("outside"), root.join("escape")).unwrap();
        let before = snapshot(&root);
        let example = find("python-project").unwrap();
        let error = materialize(&root, example, Some(&into("escape")), false).unwrap_err();
        assert!(
            matches!(error, Error::Path(once_fs::PathError::Link { .. })),
            "{error}"
        );
        assert_eq!(snapshot(&root), before);
        assert_eq!(fs::read_dir(s.0.join("outside")).unwrap().count(), 0);
    }

    #[test]
    fn git_and_once_folders_are_refused_directly_or_through_a_link() {
        let s = Scratch::new("reserved");
        let root = s.root();
        fs::create_dir_all(root.join(".git")).unwrap();
        fs::create_dir_all(root.join(".once")).unwrap();
        fs::create_dir_all(root.join("vendor/lib/.git")).unwrap();
        symlink(".git", root.join("gitdir")).unwrap();
        symlink(".once", root.join("oncedir")).unwrap();
        let before = snapshot(&root);
        let example = find("node-package").unwrap();
        for target in [
            ".git",
            ".once",
            "gitdir",
            "oncedir",
            "vendor/lib/.git",
            "a/.once/b",
        ] {
            let error = materialize(&root, example, Some(&into(target)), false).unwrap_err();
            assert!(matches!(error, Error::Path(_)), "{target}: {error}");
            let error = materialize(&root, example, Some(&into(target)), true).unwrap_err();
            assert!(matches!(error, Error::Path(_)), "{target}: {error}");
        }
        assert_eq!(snapshot(&root), before, "the tree changed");
    }
}
