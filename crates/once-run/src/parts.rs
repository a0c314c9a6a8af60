//! The parts of one action's key as they are recorded beside its cache entry (the journal's
//! lines, see `journal.rs`) and compared by `explain.rs`: plain data, so that the journal and
//! the explanation both stand on it and neither on the other. A part never holds a variable's
//! value, only a hash of it.

use serde::{Deserialize, Serialize};

/// Most files a manifest lists by path; the rest are counted and digested together.
pub const FILES_CAP: usize = 1000;

/// The parts of one action's key, as far as they can be named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyParts {
    pub action: String,
    /// The key these parts make (hex).
    pub key: String,
    /// What goes into every key; a new version changes every key.
    pub version: String,
    pub command: String,
    /// The target's folder, relative to the workspace root.
    pub folder: String,
    /// The parameters, as JSON text.
    pub params: String,
    /// The keyed variables, sorted by name.
    pub env: Vec<EnvPart>,
    /// The program the command starts: its path, or `PATH` when the key takes the whole `PATH`.
    pub program: String,
    /// The program's content digest, or the `PATH` value's hash.
    pub program_digest: String,
    pub outputs: Vec<String>,
    /// The action's own input files (root-relative ones spelled `//…`), at most [`FILES_CAP`].
    pub files: Vec<FilePart>,
    /// The files past the first [`FILES_CAP`], if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files_rest: Option<Rest>,
    /// The sources of the targets its target depends on, one digest per source set.
    pub upstream: Vec<UpstreamPart>,
    /// Its dependencies' keys.
    pub deps: Vec<DepPart>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvPart {
    pub name: String,
    /// The key takes a hash of the value, not the value (a secret-looking name, or a value from
    /// the env-file).
    pub secret: bool,
    /// A hash of the value (never the value).
    pub digest: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilePart {
    pub path: String,
    /// BLAKE3 of the content (hex).
    pub digest: String,
}

/// Files past the cap: how many, and one digest over their paths and digests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rest {
    pub count: usize,
    pub digest: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpstreamPart {
    /// The folders of the targets in the set, relative to the root.
    pub targets: Vec<String>,
    pub digest: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DepPart {
    pub action: String,
    pub key: String,
}
