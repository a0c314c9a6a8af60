//! Why a query could not answer. Messages are written for an AI agent: they
//! say what exists and what to call next. Must never include absolute paths,
//! nor echo more than the start of what the caller sent: a message stays short
//! whatever the size of the argument it quotes.

use serde::Serialize;

/// A query failure an agent can act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "error", rename_all = "snake_case")]
pub enum QueryError {
    /// No target has this name.
    #[error(
        "no target named `{}`{}",
        clip(name),
        next_step(near, "call once_query_targets to list targets")
    )]
    NoSuchTarget {
        /// The name asked for.
        name: String,
        /// Close names.
        near: Vec<String>,
    },
    /// The target exists but lacks the capability.
    #[error(
        "target `{target}` has no capability `{}`{}",
        clip(capability),
        next_step(near, &format!("call once_query_target with name `{target}` to see its capabilities"))
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
        "unknown kind `{}`{}",
        clip(kind),
        next_step(near, "call once_query_schema without `kind` to see every kind")
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

/// How much of a caller's text a message quotes.
const QUOTED: usize = 80;

/// The start of `text`, cut at a character boundary with `…` when longer than [`QUOTED`].
pub(crate) fn clip(text: &str) -> String {
    clip_to(text, QUOTED)
}

/// [`clip`] to `chars` characters.
pub(crate) fn clip_to(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// `; did you mean `x`? Call …` with a suggestion, else `; call …`: a question
/// ends its sentence, so the next one starts with a capital.
fn next_step(near: &[String], next: &str) -> String {
    let mut call = next.chars();
    let capitalized = match call.next() {
        Some(c) => c.to_uppercase().chain(call).collect::<String>(),
        None => String::new(),
    };
    match near {
        [] => format!("; {next}"),
        [one] => format!("; did you mean `{one}`? {capitalized}"),
        many => format!(
            "; did you mean one of {}? {capitalized}",
            many.iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_quote_only_the_start_of_long_arguments() {
        let error = QueryError::NoSuchTarget {
            name: "é".repeat(10_000),
            near: Vec::new(),
        };
        let text = error.to_string();
        assert!(text.len() < 400, "{text}");
        assert!(
            text.contains(&format!("`{}…`", "é".repeat(QUOTED))),
            "{text}"
        );
        assert_eq!(clip("web"), "web");
    }
}
