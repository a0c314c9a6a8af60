//! I/O-level failures of discovering or loading a workspace, and a glob that cannot compile.
//!
//! Problems *inside* manifests are never errors here: they are `Diagnostic`s, so
//! that a user sees every problem at once. This type must only carry failures
//! that make loading impossible (no root, unreadable root manifest), and the
//! compile error of a glob given to [`crate::inputs::InputGlobs`] directly.

use std::path::PathBuf;

/// Why a workspace could not be discovered or loaded at all.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or inspecting `path` failed.
    #[error("cannot read `{}`: {source}", path.display())]
    Io {
        /// The file or folder that could not be read.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// No folder from `start` upwards holds a `once.toml`.
    #[error(
        "no `once.toml` and no `Cargo.toml`, `package.json`, `pyproject.toml`, `go.work` or `go.mod` in `{}` or a parent folder of the repository; run `once init` here, or pass `--workspace DIR`",
        start.display()
    )]
    NoRoot {
        /// Where the search started.
        start: PathBuf,
    },
    /// Outside any repository, the root found belongs to another user: whoever can write there
    /// would decide what `once` runs.
    #[error(
        "`{}` belongs to another user (uid {owner}), so `once` does not take `{}` as the workspace; if you trust it, pass `--workspace {}` or add it to `ONCE_SAFE_DIRECTORIES`; for a project below it, pass the project's folder with `--workspace`",
        path.display(),
        root.display(),
        root.display()
    )]
    ForeignRoot {
        /// The folder or manifest another user owns.
        path: PathBuf,
        /// The folder that would have been the root.
        root: PathBuf,
        /// Its owner's uid.
        owner: u32,
    },
    /// An `inputs` or `outputs` glob does not compile.
    #[error("invalid glob `{glob}`: {message}")]
    Glob {
        /// The glob, or the list it belongs to.
        glob: String,
        /// What is wrong with it.
        message: String,
    },
    /// The given workspace root exists but is not a folder.
    #[error("`{}` is not a folder; pass the folder that holds `once.toml`", path.display())]
    NotADirectory {
        /// The offending path.
        path: PathBuf,
    },
}
