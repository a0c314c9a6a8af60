//! The one error type of this crate. Variants carry the data a caller needs to explain the
//! problem (a file, a line, the current entry); they never carry formatted prose alone.

use std::path::PathBuf;

use crate::model::Entry;

/// What can go wrong in the memory store.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or folder could not be read or written.
    #[error("cannot {action} `{}`: {source}", path.display())]
    Io {
        /// What we were doing ("read", "write", "lock", …).
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// An entry file does not parse.
    #[error("{}:{line}: {message}", file.display())]
    Broken {
        /// The entry file.
        file: PathBuf,
        /// 1-based line of the problem.
        line: u32,
        /// What is wrong.
        message: String,
    },
    /// No entry has this id.
    #[error("no memory entry with id `{id}`")]
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// An id that cannot name an entry file (empty, or with characters other than
    /// letters, digits, `-` and `_`).
    #[error("`{id}` is not a memory entry id")]
    BadId {
        /// The id given.
        id: String,
    },
    /// The caller's revision is not the entry's current one: someone wrote in between.
    #[error(
        "entry `{}` is at revision {}, not {expected}: it changed since you read it",
        current.id,
        current.revision
    )]
    StaleRevision {
        /// The revision the caller read.
        expected: u64,
        /// The entry as it is now, so the caller can merge instead of losing either text.
        current: Box<Entry>,
    },
    /// A field value that an entry cannot hold (an empty title, a path outside the workspace).
    #[error("{message}")]
    Invalid {
        /// What is wrong and how to fix it.
        message: String,
    },
}

impl Error {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io {
            action,
            path,
            source,
        }
    }
}
