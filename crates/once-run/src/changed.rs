//! The files git says changed in a workspace since a revision: `git diff --name-only REV` (the
//! working tree against REV, so uncommitted edits count) plus the untracked files git does not
//! ignore, relative to the workspace root.
//!
//! git runs through `once_exec::run` like every process we start: under the caller's registry,
//! with a deadline. The revision reaches it as a variable, never as text spliced into the
//! command. This module must never change the repository: `GIT_OPTIONAL_LOCKS=0` keeps git from
//! refreshing the index, and no command it runs writes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use once_exec::{Cancel, CommandSpec, Registry, Status};

use crate::error::Error;

/// How long git may take to answer.
pub const GIT_DEADLINE: Duration = Duration::from_secs(30);

/// The longest revision accepted, in bytes.
const MAX_REVISION: usize = 256;

/// Checks the repository, then the revision, then lists the changes: the exit status says which
/// step failed, and git's own messages go to a file of their own, apart from the names.
const SCRIPT: &str = r#"command -v git >/dev/null || exit 89
git rev-parse --is-inside-work-tree >/dev/null 2>"$ONCE_GIT_ERRORS" || exit 90
git rev-parse --verify --quiet "$ONCE_GIT_REVISION^{commit}" >/dev/null 2>>"$ONCE_GIT_ERRORS" || exit 91
git diff --name-only -z --no-renames --relative "$ONCE_GIT_REVISION" -- 2>>"$ONCE_GIT_ERRORS" || exit 92
git ls-files -z --others --exclude-standard 2>>"$ONCE_GIT_ERRORS" || exit 93
"#;

/// The files changed in the workspace at `root` since `revision`, sorted, relative to `root`.
pub fn changed_files(
    root: &Path,
    revision: &str,
    registry: &Registry,
) -> Result<Vec<String>, Error> {
    if revision.is_empty()
        || revision.starts_with('-')
        || revision.len() > MAX_REVISION
        || revision.chars().any(char::is_control)
    {
        return Err(Error::BadRevision {
            revision: clip(revision),
        });
    }
    let scratch = Scratch::new()?;
    let errors = scratch.0.join("errors");
    let mut spec = CommandSpec::new(SCRIPT, root, scratch.0.join("names"));
    spec.deadline = GIT_DEADLINE;
    spec.label = String::from("git: changed files");
    spec.env.insert("ONCE_GIT_REVISION".into(), revision.into());
    spec.env
        .insert("ONCE_GIT_ERRORS".into(), errors.to_string_lossy().into());
    spec.env.insert("GIT_OPTIONAL_LOCKS".into(), "0".into());
    spec.env.insert("GIT_TERMINAL_PROMPT".into(), "0".into());
    let outcome = once_exec::run(&spec, registry, &Cancel::new()).map_err(|error| Error::Git {
        message: format!("cannot start git: {error}"),
    })?;
    let said = || {
        let text = std::fs::read_to_string(&errors).unwrap_or_default();
        let text = text.trim();
        clip_to(if text.is_empty() { "no message" } else { text }, 500)
    };
    match outcome.status {
        Status::Exited { code: 0 } => {}
        Status::Exited { code: 90 } => {
            return Err(Error::NotARepository {
                root: root.to_path_buf(),
            });
        }
        Status::Exited { code: 91 } => {
            return Err(Error::UnknownRevision {
                revision: clip(revision),
            });
        }
        Status::Exited { code: 89 } => {
            return Err(Error::Git {
                message: String::from("`git` is not installed or not on `PATH`"),
            });
        }
        Status::TimedOut => {
            return Err(Error::Git {
                message: format!("git did not answer within {} s", GIT_DEADLINE.as_secs()),
            });
        }
        _ => return Err(Error::Git { message: said() }),
    }
    // git printed nothing (no change): it left no log file.
    let names = match std::fs::read(&spec.log_path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        read => read.map_err(Error::io(&spec.log_path))?,
    };
    let mut files: Vec<String> = names
        .split(|&b| b == 0)
        .filter(|name| !name.is_empty())
        // A name that is not UTF-8 is never an input (the key's walk skips it too).
        .filter_map(|name| std::str::from_utf8(name).ok().map(str::to_owned))
        // `once`'s own state is never a change to the workspace.
        .filter(|name| !once_graph::inputs::is_reserved(name))
        .collect();
    files.sort_unstable();
    files.dedup();
    if files.len() > once_graph::query::MAX_FILES {
        return Err(Error::Git {
            message: format!(
                "git lists {} changed files, more than {}; name the files instead",
                files.len(),
                once_graph::query::MAX_FILES
            ),
        });
    }
    Ok(files)
}

/// A private folder for git's answer, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch, Error> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!(
            "once-git-{}-{}-{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        // `create_dir` fails on an existing path, so nothing planted there is ever used.
        std::fs::create_dir(&path).map_err(Error::io(&path))?;
        Ok(Scratch(path))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn clip(text: &str) -> String {
    clip_to(text, 80)
}

fn clip_to(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revision_git_would_read_as_an_option_is_refused_before_git_runs() {
        let registry = Registry::new();
        let nowhere = Path::new("/nonexistent-folder-of-once-tests");
        for bad in ["", "-p", "--output=/tmp/x", "a\nb", &"x".repeat(300)] {
            let error = changed_files(nowhere, bad, &registry).unwrap_err();
            assert!(
                matches!(error, Error::BadRevision { .. }),
                "{bad:?}: {error}"
            );
            assert!(error.to_string().len() < 300, "{error}");
        }
    }
}
