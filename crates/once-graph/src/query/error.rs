//! Why a query could not answer. Messages are written for an AI agent: they
//! say what exists and what to call next. Must never include absolute paths.

use serde::Serialize;

/// A query failure an agent can act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "error", rename_all = "snake_case")]
pub enum QueryError {
    /// No target has this name.
    #[error(
        "no target named `{name}`{}; call once_query_targets to list targets",
        did_you_mean(near)
    )]
    NoSuchTarget {
        /// The name asked for.
        name: String,
        /// Close names.
        near: Vec<String>,
    },
    /// The target exists but lacks the capability.
    #[error(
        "target `{target}` has no capability `{capability}`{}; call once_query_target with name `{target}` to see its capabilities",
        did_you_mean(near)
    )]
    NoSuchCapability {
        /// The target.
        target: String,
        /// The capability asked for.
        capability: String,
        /// Close capability names.
        near: Vec<String>,
    },
    /// Not a built-in kind.
    #[error(
        "unknown kind `{kind}`{}; call once_query_schema without `kind` to see every kind",
        did_you_mean(near)
    )]
    UnknownKind {
        /// The kind asked for.
        kind: String,
        /// Close kind names.
        near: Vec<String>,
    },
    /// The cursor is malformed or was made for other filters.
    #[error(
        "invalid cursor: pass `next_cursor` back unchanged with the same filters, or omit `cursor` to start from the first page"
    )]
    InvalidCursor,
    /// Some other argument is wrong.
    #[error("{message}")]
    InvalidArgument {
        /// What is wrong and how to fix it.
        message: String,
    },
}

fn did_you_mean(near: &[String]) -> String {
    match near {
        [] => String::new(),
        [one] => format!("; did you mean `{one}`?"),
        many => format!(
            "; did you mean one of {}?",
            many.iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
