//! Project memory of `once`: durable notes about a workspace (decisions, conventions, gotchas,
//! how-tos), written by people and agents, read by both.
//!
//! Each entry is a Markdown file with TOML front matter under `<root>/.once/memory/<id>.md`, so
//! entries are reviewed and shared through version control like code (see [`front_matter`] for
//! the format and why it is TOML between `+++` lines). The [`Store`] writes atomically and never
//! loses an update; [`query()`] searches (BM25), lists and reads entries for both the CLI and the
//! MCP server; [`Checker`] tells which entries are stale because a linked file changed, vanished,
//! or a linked target left the build graph.
//!
//! This is a pure library: it never prints, never panics on any file's content, and does not
//! depend on the build graph (a caller passes `target_exists`).

mod error;
pub mod front_matter;
mod index;
mod model;
mod query;
mod search;
mod stale;
mod store;

pub use error::Error;
pub use model::{Change, Draft, Entry, Kind, PathLink};
pub use once_fs::clock::is_valid_id;
pub use query::{
    CheckReport, DEFAULT_LIMIT, EntryRow, MAX_LIMIT, MemoryCounts, MemoryPage, MemoryQuery,
    StaleEntry, check, counts, input_schema, output_schema, query,
};
pub use search::tokenize;
pub use stale::{Checker, Stale};
pub use store::{Broken, Store};
