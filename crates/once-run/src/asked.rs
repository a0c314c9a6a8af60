//! Who asked for a run and what they asked, in the words a person would type: `report:build`,
//! `--all test`, `--affected origin/main test`, asked by `terminal` or by an MCP client under the
//! name it gave. The run record keeps both, so every reader (`once query runs`,
//! `once_query_runs`, the window) names a run by what it ran rather than by its id.
//!
//! This is a label, never an identity: a client names itself, and nothing here may decide what
//! a run is allowed to do.

use serde::{Deserialize, Serialize};

/// Who asked when the run was started from a terminal (`once run`).
pub const TERMINAL: &str = "terminal";

/// What was asked and by whom.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Asked {
    /// The request as `once run` would be typed for it, without the `once run` itself.
    pub request: String,
    /// `terminal`, or the MCP client's name as it gave it at `initialize`.
    #[serde(rename = "asked_by")]
    pub by: String,
}

impl Asked {
    /// A request as its words, each quoted for the shell only when it needs to be, so the text
    /// can be pasted after `once run`.
    pub fn new<S: AsRef<str>>(words: &[S], by: &str) -> Asked {
        let request = words
            .iter()
            .map(|word| quoted(word.as_ref()))
            .collect::<Vec<_>>()
            .join(" ");
        Asked {
            request,
            by: by.to_owned(),
        }
    }
}

/// A word as a shell reads it back: bare when it is made of characters no shell treats
/// specially, in single quotes otherwise.
fn quoted(word: &str) -> String {
    let plain = !word.is_empty()
        && word.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '-' | '_' | ':' | '.' | '/' | '=' | '@' | ',' | '+')
        });
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reads_as_it_would_be_typed() {
        let asked = Asked::new(&["--affected", "origin/main", "test"], TERMINAL);
        assert_eq!(asked.request, "--affected origin/main test");
        assert_eq!(asked.by, "terminal");
        let asked = Asked::new(&["web:test", "--", "a b", "it's"], "claude-code");
        assert_eq!(asked.request, r"web:test -- 'a b' 'it'\''s'");
        assert_eq!(Asked::new(&[""], "x").request, "''");
    }
}
