//! Integration tests of once-graph: manifests written to temp folders, loaded,
//! validated and queried. One binary (modules below) to keep link time low.

mod affected;
mod bad;
mod batch;
mod cache;
mod deep_globs;
mod edges;
mod execution;
mod identity;
mod needs;
mod placeholders;
mod queries;
mod root_tasks;
mod stale;
mod util;
mod validate;
