//! A located problem in a manifest, and the line index that locates it.
//!
//! Diagnostics are the only way manifest problems are reported; this module
//! must never print. The line index is built lazily, only when the first
//! diagnostic of a file needs a position, so a valid manifest pays nothing.

use std::fmt;
use std::sync::OnceLock;

use serde::Serialize;

/// How bad a diagnostic is. Only errors make [`crate::Workspace::has_errors`] true.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The manifest is wrong; the affected target may be dropped from the graph.
    Error,
    /// Suspicious but usable.
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}

/// One problem, located at `file:line:column` (1-based; columns count chars).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Manifest path relative to the workspace root, `/`-separated.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in chars.
    pub column: u32,
    /// Error or warning.
    pub severity: Severity,
    /// Stable kebab-case identifier, e.g. `unknown-key`.
    pub code: &'static str,
    /// One-line description of the problem.
    pub message: String,
    /// What would have been valid here.
    pub expected: Option<String>,
    /// What was found instead.
    pub found: Option<String>,
    /// A concrete next step, e.g. `did you mean `command`?`.
    pub help: Option<String>,
}

impl Diagnostic {
    /// Sets `expected`.
    pub fn expected(mut self, text: impl Into<String>) -> Self {
        self.expected = Some(text.into());
        self
    }
    /// Sets `found`.
    pub fn found(mut self, text: impl Into<String>) -> Self {
        self.found = Some(text.into());
        self
    }
    /// Sets `help`.
    pub fn help(mut self, text: impl Into<String>) -> Self {
        self.help = Some(text.into());
        self
    }
    /// Sets `help` to `did you mean `x`?` when there is a suggestion.
    pub fn did_you_mean(self, suggestion: Option<String>) -> Self {
        match suggestion {
            Some(s) => self.help(format!("did you mean `{s}`?")),
            None => self,
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}[{}]: {}",
            self.file, self.line, self.column, self.severity, self.code, self.message
        )?;
        if let Some(e) = &self.expected {
            write!(f, "\n  expected: {e}")?;
        }
        if let Some(e) = &self.found {
            write!(f, "\n  found: {e}")?;
        }
        if let Some(e) = &self.help {
            write!(f, "\n  help: {e}")?;
        }
        Ok(())
    }
}

/// Maps byte offsets of one text to 1-based line/column (columns in chars).
#[derive(Debug, Clone)]
pub struct LineIndex {
    /// Byte offset where each line starts.
    starts: Vec<usize>,
}

impl LineIndex {
    /// Indexes `text`'s line starts.
    pub fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| i + 1),
        );
        LineIndex { starts }
    }

    /// Line and column of `offset` in `text` (the text this index was built from).
    /// Offsets past the end or inside a char are clamped, never panic.
    pub fn locate(&self, text: &str, offset: usize) -> (u32, u32) {
        let offset = offset.min(text.len());
        let line = match self.starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        let start = self.starts.get(line).copied().unwrap_or(0);
        let mut end = offset;
        while end > start && !text.is_char_boundary(end) {
            end -= 1;
        }
        let col = text.get(start..end).map_or(0, |s| s.chars().count());
        (to_u32(line + 1), to_u32(col + 1))
    }
}

fn to_u32(v: usize) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// A manifest's text plus its lazily built line index: the thing diagnostics
/// are created from.
#[derive(Debug)]
pub(crate) struct SourceFile {
    /// Path relative to the workspace root, `/`-separated.
    pub rel: String,
    pub text: String,
    index: OnceLock<LineIndex>,
}

impl SourceFile {
    pub fn new(rel: String, text: String) -> Self {
        SourceFile {
            rel,
            text,
            index: OnceLock::new(),
        }
    }

    /// Line/column of a byte offset (builds the index on first use).
    pub fn locate(&self, offset: usize) -> (u32, u32) {
        self.index
            .get_or_init(|| LineIndex::new(&self.text))
            .locate(&self.text, offset)
    }

    /// A diagnostic at byte `offset` of this file.
    pub fn diag(
        &self,
        offset: usize,
        severity: Severity,
        code: &'static str,
        message: impl Into<String>,
    ) -> Diagnostic {
        let (line, column) = self.locate(offset);
        Diagnostic {
            file: self.rel.clone(),
            line,
            column,
            severity,
            code,
            message: message.into(),
            expected: None,
            found: None,
            help: None,
        }
    }

    pub fn error(
        &self,
        offset: usize,
        code: &'static str,
        message: impl Into<String>,
    ) -> Diagnostic {
        self.diag(offset, Severity::Error, code, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_index() {
        let text = "ab\nçd\n\nx";
        let idx = LineIndex::new(text);
        assert_eq!(idx.locate(text, 0), (1, 1));
        assert_eq!(idx.locate(text, 2), (1, 3));
        assert_eq!(idx.locate(text, 3), (2, 1));
        assert_eq!(idx.locate(text, 5), (2, 2)); // after the 2-byte `ç`
        assert_eq!(idx.locate(text, 4), (2, 1)); // inside `ç`: clamped back
        assert_eq!(idx.locate(text, 8), (4, 1));
        assert_eq!(idx.locate(text, 999), (4, 2));
    }

    #[test]
    fn display() {
        let d = SourceFile::new("once.toml".into(), "\n\n  comand = 1".into())
            .error(4, "unknown-key", "unknown key `comand`")
            .expected("one of `command`")
            .found("`comand`")
            .did_you_mean(Some("command".into()));
        assert_eq!(
            d.to_string(),
            "once.toml:3:3: error[unknown-key]: unknown key `comand`\n  expected: one of `command`\n  found: `comand`\n  help: did you mean `command`?"
        );
    }
}
