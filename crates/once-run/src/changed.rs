//! The files git says changed in a workspace since a revision: `git diff --name-only REV` (the
//! working tree against REV, so uncommitted edits count) plus the untracked files git does not
//! ignore, relative to the workspace root.
//!
//! git starts only through [`crate::git::run`], which turns off everything in the repository's
//! configuration that could start a program; the revision reaches git as a variable, never as
//! text spliced into a command. Nothing here asks git to write: at most git refreshes the stat
//! cache in its own index, as `git status` does.

use std::path::Path;

use once_exec::Registry;

use crate::error::Error;
use crate::git::{self, Answer};

/// The longest revision accepted, in bytes.
const MAX_REVISION: usize = 256;

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
    // First whether this is a work tree, and which driver-like keys its configuration defines
    // (with what it includes), so the second run can turn each of them off.
    let probe = git::run(
        root,
        &[
            &["rev-parse", "--is-inside-work-tree"],
            &["config", "--list", "--name-only", "-z"],
        ],
        &[],
        "git: the repository's settings",
        registry,
    )?;
    let keys = match probe {
        Answer::Printed(printed) if printed[0].trim_ascii() == b"true" => printed[1].clone(),
        // Inside `.git` itself git answers `false`; that is no work tree either.
        Answer::Printed(_) => {
            return Err(Error::NotARepository {
                root: root.to_path_buf(),
            });
        }
        Answer::Failed { step: 0, said } if said.contains("not a git repository") => {
            return Err(Error::NotARepository {
                root: root.to_path_buf(),
            });
        }
        // Anything else (another user's repository, a broken config) is git's own words.
        Answer::Failed { said, .. } => return Err(git_said(&said)),
    };
    let overrides = git::neutralise(&keys)?;
    let revision_arg = format!("{revision}^{{commit}}");
    let answer = git::run(
        root,
        &[
            &["rev-parse", "--verify", "--quiet", &revision_arg],
            &[
                "diff",
                "--name-only",
                "-z",
                "--no-renames",
                "--relative",
                "--no-ext-diff",
                "--no-textconv",
                "--ignore-submodules=all",
                revision,
                "--",
            ],
            &["ls-files", "-z", "--others", "--exclude-standard"],
        ],
        &overrides,
        "git: changed files",
        registry,
    )?;
    let printed = match answer {
        Answer::Printed(printed) => printed,
        Answer::Failed { step: 0, .. } => {
            return Err(Error::UnknownRevision {
                revision: clip(revision),
            });
        }
        Answer::Failed { said, .. } => return Err(git_said(&said)),
    };
    let names = printed[1].iter().chain([&0]).chain(&printed[2]);
    let names: Vec<u8> = names.copied().collect();
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

/// git's own message as an error, clipped.
fn git_said(said: &str) -> Error {
    Error::Git {
        message: clip_to(if said.is_empty() { "no message" } else { said }, 500),
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
