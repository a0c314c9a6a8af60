//! The query tools: read-only views of the graph, always enabled.
//!
//! Each query tool deserializes its arguments into the query type of `once-graph`, calls the one
//! function that computes the value, and returns that value unchanged: the CLI prints the very
//! same JSON. This module must never reshape a value or compute one itself.

use std::sync::Arc;

use once_graph::Workspace;
use once_graph::query::{self, QueryName, WorkspaceInfo};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::LiveWorkspace;
use crate::tool::{Annotations, CallContext, Gate, Handler, Tool, ToolResult};

/// The function that computes the workspace overview. The binary injects it, because the value
/// joins the graph with project memory and must be the one `once query workspace` prints.
pub type Overview = Arc<dyn Fn(&Workspace) -> WorkspaceInfo + Send + Sync>;

/// Every query tool. They are read-only and always enabled.
pub fn query_tools(live: &Arc<LiveWorkspace>, overview: Overview) -> Vec<Tool> {
    vec![
        query_tool(
            live,
            QueryName::Workspace,
            "once_query_workspace",
            "Workspace overview",
            "Start here. The workspace root, its first manifests with content hashes, counts of \
             targets, capabilities and edges, the kinds in use, the first manifest diagnostics \
             (file, line, column, what was expected; errors first, with the total), the first \
             page of targets, and project memory counts (entries, stale, broken). When \
             `next_cursor` is set, call once_query_targets with that cursor for more.",
            move |workspace, _: query::WorkspaceQuery| Ok(overview(workspace)),
        ),
        query_tool(
            live,
            QueryName::Targets,
            "once_query_targets",
            "List targets",
            "List targets as compact rows (name, kind, path, capabilities), filtered by `name` \
             (a glob such as `api-*`), `kind`, `tag` or `capability`, and paged: pass \
             `next_cursor` back as `cursor`, with the same filters, for the next page. Use \
             once_query_target for one target's details.",
            |workspace, q| query::targets(workspace, &q),
        ),
        query_tool(
            live,
            QueryName::Target,
            "once_query_target",
            "One target in full",
            "One target by name: its kind and typed fields, every capability with its command, \
             parameter schema, dependencies, inputs, outputs, environment and deadline, and its \
             direct dependencies and dependents. Lists of neighbours show the first 20 with \
             their total (`deps_total`, `dependents_total`); once_query_graph pages the rest. \
             An inferred target's `inferred.edges` are every edge its manifest states, with its \
             kind and whether it orders actions, a page at a time: pass \
             `inferred.next_cursor` back as `cursor`, with the same `name`, for more.",
            |workspace, q| query::target(workspace, &q),
        ),
        query_tool(
            live,
            QueryName::Schema,
            "once_query_schema",
            "Manifest and kind schemas",
            "JSON Schema (2020-12) of the manifest `once.toml`, of each kind's fields and of each \
             capability's parameters; with `kind`, just that kind. Read it before writing or \
             editing a manifest.",
            |workspace, q| query::schema(workspace, &q),
        ),
        query_tool(
            live,
            QueryName::Graph,
            "once_query_graph",
            "Walk the dependency graph",
            "Walk the graph from `target` (a name, or `name:capability`). `mode` is `deps` (what \
             it needs) or `dependents` (what needs it), one step or with `transitive: true`; \
             `path` (the shortest dependency path from `target` to `to`); or `order` (the \
             actions that `target:capability` needs, each with the `wave` it can run in, \
             parallel within a wave). Every mode answers a page of `nodes` with the `total`: \
             pass `next_cursor` back as `cursor`, with the same arguments, for more. In \
             `deps` and `dependents` of a target, each direct node says what its edge is for \
             (`kinds`) and whether it orders actions (`orders`; false for an edge that would \
             close a cycle, listed but not followed).",
            |workspace, q| query::graph(workspace, &q),
        ),
    ]
}

/// One query tool: arguments → query type → value.
fn query_tool<Q, V>(
    live: &Arc<LiveWorkspace>,
    name: QueryName,
    tool: &'static str,
    title: &'static str,
    description: &str,
    answer: impl Fn(&Workspace, Q) -> Result<V, query::QueryError> + Send + Sync + 'static,
) -> Tool
where
    Q: DeserializeOwned + 'static,
    V: Serialize + 'static,
{
    let live = Arc::clone(live);
    let needs_valid_graph = name != QueryName::Workspace;
    Tool {
        name: tool,
        title,
        description: description.to_string(),
        input_schema: query::input_schema(name),
        output_schema: query::output_schema(name),
        annotations: Annotations::READ_ONLY,
        gate: Gate::Always,
        handler: Handler::query(move |_: &CallContext, arguments: Map<String, Value>| {
            let q: Q = match serde_json::from_value(Value::Object(arguments)) {
                Ok(q) => q,
                Err(error) => {
                    return ToolResult::Error(format!(
                        "invalid arguments for {tool}: {}; its input schema lists the \
                         arguments it accepts",
                        crate::message::excerpt_to(&error.to_string(), 300)
                    ));
                }
            };
            let workspace = live.read();
            if needs_valid_graph && workspace.has_errors() {
                return ToolResult::Error(broken_manifest(&workspace));
            }
            match answer(&workspace, q).map(|value| serde_json::to_value(value)) {
                Ok(Ok(value)) => ToolResult::Value(value),
                Ok(Err(error)) => ToolResult::Error(format!("cannot encode the answer: {error}")),
                Err(error) => ToolResult::Error(error.to_string()),
            }
        }),
    }
}

/// What an agent should do when the manifests do not validate.
pub(super) fn broken_manifest(workspace: &Workspace) -> String {
    let errors: Vec<_> = workspace
        .diagnostics()
        .iter()
        .filter(|d| d.severity == once_graph::Severity::Error)
        .collect();
    let first = errors
        .first()
        .map(|d| format!(" The first: {d}."))
        .unwrap_or_default();
    format!(
        "the workspace's manifests have {} error(s), so the graph cannot be queried.{first} \
         Call once_query_workspace to see every diagnostic, fix the manifest, then call again: \
         the graph reloads by itself when a manifest changes.",
        errors.len()
    )
}
