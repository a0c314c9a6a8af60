//! The examples built into `once`: complete starters (a `once.toml` plus source files) for common
//! stacks, and how to write one into a workspace.
//!
//! The files live under `examples/<name>/` in this crate and are embedded at build time (see
//! `build.rs`), so the binary needs nothing else at run time. [`catalog`] names and describes
//! them; [`materialize()`] writes one: it plans every file first, refuses the whole operation
//! before writing a byte when any destination differs or any path would leave the workspace,
//! treats identical files as unchanged, and writes each new file atomically.
//!
//! This crate never prints and never writes outside the root its caller gives.

mod catalog;
mod error;
mod materialize;

pub use catalog::{Example, ExampleDetail, ExampleFile, ExampleList, ExampleRow, all, find, names};
pub use error::{Conflict, Error};
pub use materialize::{Materialized, materialize};
