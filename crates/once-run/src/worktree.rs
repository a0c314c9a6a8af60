//! Where a workspace's results are kept: its own `.once/cache/`, or, in a linked git worktree,
//! the main worktree's, so that `git worktree add` then `once run` replays what the main worktree
//! built (parallel agents each work in a worktree of their own).
//!
//! The worktree's links are read as files, without starting git: the worktree's `.git` file
//! names its git folder (`gitdir: PATH`), whose `commondir` names the repository's common folder,
//! the main worktree's `.git`. A checkout is untrusted, and its `.git` file could name any
//! folder on the machine, so a link is believed only when git's own back-link agrees: the git
//! folder's `gitdir` file names this very `.git` file (as `git worktree add` writes it), and the
//! common folder is a real `.git` folder of a main worktree. Otherwise the workspace keeps its
//! own cache. This module must never start a process, follow what it reads anywhere but to
//! compare it, or name a folder outside a worktree the person made.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The largest `.git`, `commondir` or `gitdir` file read: git writes one line.
const LINK_CAP: u64 = 4096;

/// The folder that holds the shared results of the workspace at `workspace_root` (its folder
/// under the main worktree, then `.once/cache`), when the workspace is inside a linked git
/// worktree whose links hold both ways and that folder exists in the main worktree.
pub(crate) fn main_worktree_cache(workspace_root: &Path) -> Option<PathBuf> {
    let (top, dot_git) = enclosing_git(workspace_root)?;
    // A folder: this is a main worktree (or a plain clone), and its cache is its own.
    let dot_git_meta = fs::symlink_metadata(&dot_git).ok()?;
    if !dot_git_meta.is_file() {
        return None;
    }
    let git_dir = resolve(&top, read_link(&dot_git, "gitdir: ")?)?;
    // A submodule's `.git` file names a git folder with no `commondir`: not a worktree.
    let common = resolve(&git_dir, read_link(&git_dir.join("commondir"), "")?)?;
    // git's back-link: the git folder names the `.git` file that named it.
    let back = resolve(&git_dir, read_link(&git_dir.join("gitdir"), "")?)?;
    if back != fs::canonicalize(&dot_git).ok()? {
        return None;
    }
    if common.file_name()? != ".git" || !fs::symlink_metadata(&common).ok()?.is_dir() {
        return None;
    }
    let main = common.parent()?;
    if main == fs::canonicalize(&top).ok()? {
        return None;
    }
    let inside = workspace_root.strip_prefix(&top).ok()?;
    let folder = main.join(inside);
    // Only a real folder of the main worktree: never one this would have to make.
    fs::symlink_metadata(&folder)
        .ok()?
        .is_dir()
        .then(|| folder.join(".once").join("cache"))
}

/// The nearest folder at or above `start` that holds a `.git`, and that `.git`.
fn enclosing_git(start: &Path) -> Option<(PathBuf, PathBuf)> {
    let mut folder = Some(start);
    while let Some(here) = folder {
        let dot_git = here.join(".git");
        if fs::symlink_metadata(&dot_git).is_ok() {
            return Some((here.to_path_buf(), dot_git));
        }
        folder = here.parent();
    }
    None
}

/// The one line of a small link file, after `prefix`, trimmed.
fn read_link(path: &Path, prefix: &str) -> Option<String> {
    let meta = fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > LINK_CAP {
        return None;
    }
    let mut text = String::new();
    fs::File::open(path)
        .ok()?
        .take(LINK_CAP)
        .read_to_string(&mut text)
        .ok()?;
    let line = text.lines().next()?.strip_prefix(prefix)?.trim();
    (!line.is_empty()).then(|| line.to_owned())
}

/// `link` read relative to `base` when it is not absolute, with every link resolved, so two
/// spellings of one folder compare equal; `None` when it names nothing.
fn resolve(base: &Path, link: String) -> Option<PathBuf> {
    let path = PathBuf::from(link);
    let path = if path.is_absolute() {
        path
    } else {
        base.join(path)
    };
    fs::canonicalize(path).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Repo {
        dir: PathBuf,
    }

    /// A main worktree `main/` and a linked one `linked/`, laid out as `git worktree add`
    /// lays them out (no git is run).
    fn repo(name: &str) -> Repo {
        let dir = std::env::temp_dir().join(format!("once-worktree-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let git_dir = dir.join("main/.git/worktrees/linked");
        fs::create_dir_all(&git_dir).unwrap();
        fs::create_dir_all(dir.join("linked/app")).unwrap();
        fs::create_dir_all(dir.join("main/app")).unwrap();
        fs::write(
            dir.join("linked/.git"),
            format!("gitdir: {}\n", git_dir.display()),
        )
        .unwrap();
        fs::write(git_dir.join("commondir"), "../..\n").unwrap();
        fs::write(
            git_dir.join("gitdir"),
            format!("{}\n", dir.join("linked/.git").display()),
        )
        .unwrap();
        Repo {
            dir: fs::canonicalize(&dir).unwrap(),
        }
    }

    #[test]
    fn a_linked_worktree_finds_the_main_worktrees_cache_for_the_same_folder() {
        let repo = repo("linked");
        assert_eq!(
            main_worktree_cache(&repo.dir.join("linked")),
            Some(repo.dir.join("main/.once/cache"))
        );
        assert_eq!(
            main_worktree_cache(&repo.dir.join("linked/app")),
            Some(repo.dir.join("main/app/.once/cache"))
        );
        // The main worktree, and a folder outside any repository, keep their own.
        assert_eq!(main_worktree_cache(&repo.dir.join("main")), None);
        assert_eq!(main_worktree_cache(&repo.dir), None);
    }

    #[test]
    fn a_git_file_that_names_another_repository_without_its_back_link_is_not_believed() {
        let repo = repo("forged");
        // A checkout that ships a `.git` file naming the person's other repository's worktree
        // folder: that folder's back-link names another worktree, so nothing is shared.
        let forged = repo.dir.join("forged");
        fs::create_dir_all(&forged).unwrap();
        fs::write(
            forged.join(".git"),
            format!(
                "gitdir: {}\n",
                repo.dir.join("main/.git/worktrees/linked").display()
            ),
        )
        .unwrap();
        assert_eq!(main_worktree_cache(&forged), None);
        // A git folder with no `commondir` (a submodule's) is no worktree either.
        fs::remove_file(repo.dir.join("main/.git/worktrees/linked/commondir")).unwrap();
        assert_eq!(main_worktree_cache(&repo.dir.join("linked")), None);
    }

    #[test]
    fn a_folder_missing_from_the_main_worktree_keeps_its_own_cache() {
        let repo = repo("missing");
        fs::create_dir_all(repo.dir.join("linked/only-here")).unwrap();
        assert_eq!(
            main_worktree_cache(&repo.dir.join("linked/only-here")),
            None
        );
    }
}
