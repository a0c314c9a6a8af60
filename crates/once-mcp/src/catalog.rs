//! The tools `once mcp` offers, built over a live workspace.
//!
//! Each query tool deserializes its arguments into the query type of `once-graph`, calls the one
//! function that computes the value, and returns that value unchanged: the CLI prints the very
//! same JSON. This module must never reshape a value or compute one itself.

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use once_graph::Workspace;
use once_graph::query::{self, QueryName};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::tool::{Annotations, CallContext, Gate, Gates, Tool, ToolResult};

/// A workspace that reloads itself when a manifest's content changes.
#[derive(Debug)]
pub struct LiveWorkspace {
    workspace: RwLock<Workspace>,
}

impl LiveWorkspace {
    pub fn new(workspace: Workspace) -> Self {
        LiveWorkspace {
            workspace: RwLock::new(workspace),
        }
    }

    /// Reloads the workspace if any manifest changed since it was read. Called before each
    /// request, so no answer is ever computed from a stale graph.
    pub fn refresh(&self) {
        if !self.read().is_stale() {
            return;
        }
        let mut workspace = self
            .workspace
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        match workspace.reload_if_stale() {
            Ok(true) => tracing::info!(
                "manifest changed: graph reloaded ({} diagnostics)",
                workspace.diagnostics().len()
            ),
            Ok(false) => {}
            // The old graph stays: a workspace that cannot be read now (a folder being
            // replaced, say) is better answered from the last good state than not at all.
            Err(error) => tracing::warn!("cannot reload the workspace: {error}"),
        }
    }

    /// The current workspace. A poisoned lock only means a query panicked while reading; the
    /// workspace itself was not being changed, so it is safe to go on.
    pub fn read(&self) -> RwLockReadGuard<'_, Workspace> {
        self.workspace
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// Every query tool. They are read-only and always enabled.
pub fn query_tools(live: &Arc<LiveWorkspace>) -> Vec<Tool> {
    vec![
        query_tool(
            live,
            QueryName::Workspace,
            "once_query_workspace",
            "Workspace overview",
            "Start here. The workspace root, its manifests with content hashes, counts of targets, \
             capabilities and edges, the kinds in use, every manifest diagnostic (file, line, \
             column, what was expected), and the first page of targets. When `next_cursor` is \
             set, call once_query_targets with that cursor for more.",
            |workspace, _: query::WorkspaceQuery| Ok(query::workspace(workspace)),
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
             direct dependencies and dependents.",
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
             it needs) or `dependents` (what needs it), one step or with `transitive: true`, \
             paged; `path` (the shortest dependency path from `target` to `to`); or `order` \
             (the actions that `target:capability` needs, in waves that can run in parallel).",
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
    answer: fn(&Workspace, Q) -> Result<V, query::QueryError>,
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
        handler: Arc::new(move |_: &CallContext, arguments: Map<String, Value>| {
            let q: Q = match serde_json::from_value(Value::Object(arguments)) {
                Ok(q) => q,
                Err(error) => {
                    return ToolResult::Error(format!(
                        "invalid arguments for {tool}: {error}; its input schema lists the \
                         arguments it accepts"
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
fn broken_manifest(workspace: &Workspace) -> String {
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

/// The server's instructions: how an agent should use the tools it actually has.
pub fn instructions(root: &str, gates: Gates) -> String {
    let mut text = format!(
        "once serves the typed build graph of the workspace at {root}. Targets are parts of the \
         workspace (a crate, a package, a folder); each has a kind, which types its fields and \
         gives it capabilities such as build, test and lint; an action is one capability of one \
         target, written `target:capability`.\n\
         \n\
         Workflow: call once_query_workspace first (counts, diagnostics, first targets). Narrow \
         down with once_query_targets (filters: name glob, kind, tag, capability), read one \
         target with once_query_target, and walk dependencies with once_query_graph (modes deps, \
         dependents, path, order). Before editing once.toml, read once_query_schema.\n\
         \n\
         Paging: lists come a page at a time; when an answer has `next_cursor`, pass it back as \
         `cursor` with the same filters. Ask for details only when you need them.\n\
         \n\
         Freshness: the graph reloads by itself when a manifest changes; there is nothing to \
         refresh.\n"
    );
    text.push_str(if gates.allow_run {
        "\nRunning capabilities is enabled.\n"
    } else {
        "\nRunning capabilities (once_run, once_cancel) is disabled: the person must add \
         --allow-run to the server's command line in the client configuration.\n"
    });
    text.push_str(if gates.allow_edit {
        "Editing project memory and materializing examples is enabled.\n"
    } else {
        "Editing project memory and materializing examples is disabled: it needs --allow-edit \
         on the server's command line.\n"
    });
    text
}
