//! What an entry is: the fields every entry file holds, and the requests that create or change
//! one. Plain data with serde shapes; this module must never touch the file system.

use serde::{Deserialize, Serialize};

/// What sort of note an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A choice that was made, and why.
    Decision,
    /// How things are done here.
    Convention,
    /// A trap someone fell into.
    Gotcha,
    /// Steps to get something done.
    Howto,
    /// Anything else.
    Note,
}

impl Kind {
    /// Every kind, in the order they are documented.
    pub const ALL: [Kind; 5] = [
        Kind::Decision,
        Kind::Convention,
        Kind::Gotcha,
        Kind::Howto,
        Kind::Note,
    ];

    /// The name used in files, on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Decision => "decision",
            Kind::Convention => "convention",
            Kind::Gotcha => "gotcha",
            Kind::Howto => "howto",
            Kind::Note => "note",
        }
    }

    /// The kind with this name.
    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.as_str() == name)
    }
}

/// A file the entry is about, with the BLAKE3 hash its content had when the entry was written.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PathLink {
    /// Path relative to the workspace root, with `/` separators.
    pub path: String,
    /// BLAKE3 of the file's bytes, hex.
    pub blake3: String,
}

/// One note of project memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Stable id; also the file name (`<id>.md`).
    pub id: String,
    /// One line that says what the entry is about.
    pub title: String,
    /// What sort of note it is.
    pub kind: Kind,
    /// Free-form labels.
    pub tags: Vec<String>,
    /// Targets of the build graph the entry is about.
    pub targets: Vec<String>,
    /// Files the entry is about.
    pub paths: Vec<PathLink>,
    /// When it was created, RFC 3339 UTC (`2025-01-31T09:30:00Z`).
    pub created: String,
    /// When it was last written, RFC 3339 UTC.
    pub updated: String,
    /// 1 when created, plus one at each write through the store.
    pub revision: u64,
    /// Markdown text.
    pub body: String,
}

/// What a new entry says; the store adds the id, times, revision and path hashes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draft {
    /// One line.
    pub title: String,
    /// What sort of note.
    pub kind: Kind,
    /// Labels.
    pub tags: Vec<String>,
    /// Linked targets.
    pub targets: Vec<String>,
    /// Linked files, relative to the workspace root.
    pub paths: Vec<String>,
    /// Markdown text.
    pub body: String,
}

/// A change to an entry: each field given replaces the old value, the rest stay.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Change {
    /// New title.
    pub title: Option<String>,
    /// New kind.
    pub kind: Option<Kind>,
    /// New tags.
    pub tags: Option<Vec<String>>,
    /// New linked targets.
    pub targets: Option<Vec<String>>,
    /// New linked files (their hashes are taken again).
    pub paths: Option<Vec<String>>,
    /// New body.
    pub body: Option<String>,
}

impl Change {
    /// Whether the change would leave every field as it is.
    pub fn is_empty(&self) -> bool {
        *self == Change::default()
    }
}
