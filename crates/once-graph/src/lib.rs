//! The typed build graph of a `once` workspace: manifest parsing, kinds and
//! their schemas, validation, the graph and its queries.
//!
//! Everything here is pure computation over manifest files: it must never
//! print, never run commands, and never panic on any input. Query values are
//! the public JSON contract shared by the CLI and the MCP server.

pub mod diagnostic;
pub mod discover;
pub mod duration;
mod ecosystem;
mod error;
mod features;
mod freshness;
pub mod graph;
mod hash;
pub mod inputs;
pub mod kind;
pub mod manifest;
pub mod model;
pub mod query;
mod relpath;
pub mod root;
mod shell;
pub mod size;
pub mod stand_in;
mod suggest;
pub mod template;
mod workspace;

pub use diagnostic::{Diagnostic, Severity};
pub use error::Error;
pub use freshness::Freshness;
pub use manifest::execution::MAX_JOBS as MAX_REMOTE_JOBS;
pub use manifest::{CacheSettings, ExecutionSettings};
pub use model::Placement;
pub use root::{SAFE_DIRECTORIES_VAR, SafeDirectories, repository_top};
pub use suggest::{near as near_names, targets as near_targets};
pub use workspace::Workspace;

/// File name of a manifest.
pub const MANIFEST_FILE: &str = "once.toml";
