//! Queries over a loaded workspace. Every value returned here is the public
//! JSON contract shared by `once query …` and the MCP server, so the shapes
//! (and their output/input JSON Schemas) are defined only in this module.
//!
//! Queries must never do I/O, never print, and stay cheap (indexes, no
//! re-validation): an agent may call them in a loop.

mod affected;
mod edges;
mod error;
mod graph;
mod page;
mod picture;
mod schema;
mod schema_util;
mod target;
mod targets;
mod workspace;

use serde::{Deserialize, Serialize};

pub use affected::{
    AffectedAction, AffectedAnswer, AffectedQuery, ChangedFile, MAX_FILES, Owner, OwnerCount,
    OwnerQuery, Ownership, affected, owner,
};
pub use error::QueryError;
pub use graph::{GraphAnswer, GraphMode, GraphNode, GraphQuery, graph};
/// The largest page any list query returns.
pub use page::MAX_LIMIT as MAX_PAGE_LIMIT;
pub use picture::{Picture, PictureEdge, PictureNode, picture};
pub use schema::{SchemaQuery, manifest_schema, schema};
pub use target::{CapabilityDetail, ManifestLocation, TargetDetail, TargetQuery, target};
pub use targets::{TargetRow, TargetsPage, TargetsQuery, targets};
pub use workspace::{
    ChangeSetCounts, Counts, KindUse, ManifestInfo, MemoryCounts, WorkspaceInfo, WorkspaceQuery,
    workspace,
};

/// The queries, for asking their schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueryName {
    /// [`workspace`]
    Workspace,
    /// [`targets`]
    Targets,
    /// [`target`]
    Target,
    /// [`schema`]
    Schema,
    /// [`graph`]
    Graph,
    /// [`affected`]
    Affected,
    /// [`owner`]
    Owner,
}

impl QueryName {
    /// Every query.
    pub const ALL: [QueryName; 7] = [
        QueryName::Workspace,
        QueryName::Targets,
        QueryName::Target,
        QueryName::Schema,
        QueryName::Graph,
        QueryName::Affected,
        QueryName::Owner,
    ];

    /// Lowercase name (`targets`).
    pub fn as_str(self) -> &'static str {
        match self {
            QueryName::Workspace => "workspace",
            QueryName::Targets => "targets",
            QueryName::Target => "target",
            QueryName::Schema => "schema",
            QueryName::Graph => "graph",
            QueryName::Affected => "affected",
            QueryName::Owner => "owner",
        }
    }
}

/// JSON Schema of a query's result value. Uses only `type` (one string),
/// `properties`, `required`, `items`, `additionalProperties`, `enum`,
/// `description` and `anyOf` (for nullable values).
pub fn output_schema(name: QueryName) -> serde_json::Value {
    match name {
        QueryName::Workspace => workspace::output_schema(),
        QueryName::Targets => targets::output_schema(),
        QueryName::Target => target::output_schema(),
        QueryName::Schema => schema::output_schema(),
        QueryName::Graph => graph::output_schema(),
        QueryName::Affected => affected::output_schema(),
        QueryName::Owner => affected::owner_output_schema(),
    }
}

/// JSON Schema of a query's arguments (root: object, no additional properties).
pub fn input_schema(name: QueryName) -> serde_json::Value {
    match name {
        QueryName::Workspace => workspace::input_schema(),
        QueryName::Targets => targets::input_schema(),
        QueryName::Target => target::input_schema(),
        QueryName::Schema => schema::input_schema(),
        QueryName::Graph => graph::input_schema(),
        QueryName::Affected => affected::input_schema(),
        QueryName::Owner => affected::owner_input_schema(),
    }
}

/// Index of the target named `name`, or `NoSuchTarget` with near names.
pub(crate) fn find_target(ws: &crate::Workspace, name: &str) -> Result<usize, QueryError> {
    ws.target_index(name)
        .ok_or_else(|| QueryError::NoSuchTarget {
            name: name.to_string(),
            near: crate::suggest::targets(&ws.targets, name),
        })
}

/// `target:capability` of an action.
pub(crate) fn action_name(ws: &crate::Workspace, a: crate::graph::ActionId) -> String {
    let (t, c) = ws.graph.split(a);
    match ws.targets.get(t) {
        Some(t) => format!(
            "{}:{}",
            t.name,
            t.capabilities.get(c).map_or("?", |c| &*c.name)
        ),
        None => String::from("?"),
    }
}
