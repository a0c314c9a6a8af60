//! The one error type of this crate. Variants carry data (every conflict, the unsafe path), so
//! the CLI and the MCP tool can each say it their way.

use serde::Serialize;

/// A destination that exists with other content than the example's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conflict {
    /// Relative to the workspace root.
    pub path: String,
    /// What is there instead.
    pub problem: String,
}

/// Why an example was not materialized. In every case nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No example has this name.
    #[error("no example named `{name}`; the examples are: {}", known.join(", "))]
    Unknown {
        /// The name asked for.
        name: String,
        /// Every example's name.
        known: Vec<&'static str>,
    },
    /// A destination or the target folder would leave the workspace.
    #[error(transparent)]
    Path(#[from] once_fs::PathError),
    /// Destinations that exist with different content: the whole operation was refused.
    #[error(
        "refused, nothing was written: {} file(s) already exist with different content: {}",
        conflicts.len(),
        conflicts.iter().map(|c| format!("`{}` ({})", c.path, c.problem)).collect::<Vec<_>>().join(", ")
    )]
    Conflicts {
        /// Every conflict, in path order.
        conflicts: Vec<Conflict>,
    },
    /// The file system failed while reading or writing.
    #[error("cannot {action} `{path}`: {source}")]
    Io {
        /// What we were doing.
        action: &'static str,
        /// Relative to the workspace root.
        path: String,
        /// The operating system's error.
        source: std::io::Error,
    },
}
