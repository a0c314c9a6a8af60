//! The workspace overview, computed once for both doors: `once query workspace` prints it and
//! the MCP tool `once_query_workspace` returns it (the server gets this function injected). It
//! joins the graph's overview with project memory's and change sets' counts, which only this
//! crate can do: no library depends on another. Must never reshape the graph's value beyond
//! `memory` and `change_sets`.

use once_changes::ChangeStore;
use once_graph::Workspace;
use once_graph::query::{self, ChangeSetCounts, MemoryCounts, WorkspaceInfo};
use once_memory::Store;

/// The overview of `ws`, with memory and change-set counts; each is null when it cannot be read.
pub fn workspace_overview(ws: &Workspace) -> WorkspaceInfo {
    let mut info = query::workspace(ws);
    let target_exists = |name: &str| ws.target(name).is_some();
    info.memory = match once_memory::counts(&Store::new(ws.root()), &target_exists) {
        Ok(counts) => Some(MemoryCounts {
            entries: counts.entries,
            stale: counts.stale,
            broken: counts.broken,
        }),
        Err(error) => {
            tracing::warn!("cannot count project memory: {error}");
            None
        }
    };
    info.change_sets = match ChangeStore::new(ws.root()).counts() {
        Ok(counts) => Some(ChangeSetCounts {
            pending: counts.pending,
            applied: counts.applied,
            rejected: counts.rejected,
            failed: counts.failed,
        }),
        Err(error) => {
            tracing::warn!("cannot count change sets: {error}");
            None
        }
    };
    info
}
