//! Change sets: edits an agent proposes and a person decides on.
//!
//! An agent describes files to create, replace or delete, each replacement and deletion with the
//! hash of the base it saw: SHA-256 (`sha256sum`) or BLAKE3, which [`hashes`] tells for any file. [`ChangeStore::propose`] checks every path and hash, saves the
//! proposal under `.once/changes/<id>/` (`proposal.json` plus the new contents under `files/`)
//! and applies nothing. A person then lists, reads (a unified diff against the files as they are
//! now), applies or rejects it. Applying refuses the whole set if any base moved on, and is all or
//! nothing even if the process dies half way (see [`apply`](ChangeStore::apply) for the journal
//! and how the next start recovers). A rejected set keeps its record, with the decision.
//!
//! This crate never prints, never writes outside the workspace root (nor through a symbolic link,
//! nor into a `.git` or `.once` folder: every write goes through `once_fs::Root`), and never
//! applies anything from a proposal call.

mod apply;
mod diff;
mod error;
mod fault;
mod hashes;
mod model;
mod store;

pub use error::Error;
pub use fault::{FAULT_ENV, Fault};
pub use hashes::{FileHashes, Hashes, MAX_PATH_CHARS, MAX_PATHS, hashes};
pub use model::{
    Action, Change, ChangeDraft, ChangeSetCounts, ChangeSetList, ChangeSetRow, Decider, Draft,
    Proposal, Status,
};
pub use store::ChangeStore;

#[cfg(test)]
mod tests;
