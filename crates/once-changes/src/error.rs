//! The one error type of this crate; variants carry every problem found, so an agent or a person
//! can fix them all in one go.

/// What can go wrong with change sets. Unless a variant says otherwise, nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The proposal is not acceptable as given.
    #[error("the change set was not saved: {}", problems.join("; "))]
    Invalid {
        /// Every problem, each naming its path.
        problems: Vec<String>,
    },
    /// No change set has this id.
    #[error("no change set with id `{id}`")]
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// The change set was already applied or rejected.
    #[error("change set `{id}` was already {status}")]
    Decided {
        /// Its id.
        id: String,
        /// `applied` or `rejected`.
        status: &'static str,
    },
    /// Files changed since the proposal was made; the whole set was refused.
    #[error(
        "refused, nothing was applied: {} file(s) changed since the change set was proposed: {}",
        moved.len(),
        moved.join("; ")
    )]
    Moved {
        /// Each file that moved on, with how.
        moved: Vec<String>,
    },
    /// A stored change set is damaged (a file missing, unparsable or with another hash).
    #[error("change set `{id}` is damaged: {message}")]
    Damaged {
        /// Its id.
        id: String,
        /// What is wrong.
        message: String,
    },
    /// The file system failed. During an apply, the journal decides what the next start does.
    #[error("cannot {action} `{path}`: {source}")]
    Io {
        /// What we were doing.
        action: &'static str,
        /// The file or folder.
        path: String,
        /// The operating system's error.
        source: std::io::Error,
    },
}

impl Error {
    pub(crate) fn io(
        action: &'static str,
        path: impl std::fmt::Display,
    ) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.to_string();
        move |source| Error::Io {
            action,
            path,
            source,
        }
    }
}
