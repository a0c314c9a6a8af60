//! `once_query_affected`: which targets own the changed files and which actions must run again,
//! the value `once query affected --json` prints. Read-only and always enabled.
//!
//! The changed files are the `files` given (relative to the workspace root), or what git lists
//! since `since` (default `HEAD`: uncommitted and untracked files count), read by
//! `once_run::changed_files` under the server's process registry. This module must never compute
//! ownership itself: `once_graph::query::affected` answers.

use std::sync::Arc;

use once_exec::Registry;
use once_graph::query::{self, AffectedQuery, QueryName};
use serde_json::{Map, Value, json};

use super::LiveWorkspace;
use crate::tool::{Annotations, CallContext, Gate, Handler, Tool};

/// Most files one call may name; more come from `since`.
const MAX_NAMED_FILES: u64 = 1_000;

/// The tool, running git under `registry`.
pub fn affected_tools(live: &Arc<LiveWorkspace>, registry: &Registry) -> Vec<Tool> {
    let live = Arc::clone(live);
    let registry = registry.clone();
    vec![Tool {
        name: "once_query_affected",
        title: "What a change affects",
        description: "Which tests (or builds, lints…) must run after a change, in one call: \
                      pass `capability: \"test\"` and either `files` (changed paths relative to \
                      the workspace root) or nothing, which asks git for every change since \
                      `since` (default `HEAD`; uncommitted and untracked files count). Answers \
                      the affected actions first, each with why (`depends on lib:build`): those \
                      a file is an input of, then every dependent; an action is listed exactly \
                      when its cache key changes. Then who owns the files: the targets owning \
                      the most (`ownership: \"summary\"`), every file with its owners after the \
                      actions (`\"all\"`), or only totals (`\"none\"`). Pass `next_cursor` back \
                      as `cursor` with the same arguments."
            .into(),
        input_schema: input_schema(),
        output_schema: query::output_schema(QueryName::Affected),
        annotations: Annotations::READ_ONLY,
        gate: Gate::Always,
        handler: Handler::query(move |_: &CallContext, args: Map<String, Value>| {
            answer(&live, &registry, args).into()
        }),
    }]
}

fn answer(
    live: &LiveWorkspace,
    registry: &Registry,
    mut args: Map<String, Value>,
) -> Result<Value, String> {
    let since = match args.remove("since") {
        None | Some(Value::Null) => None,
        Some(Value::String(since)) => Some(since),
        Some(_) => return Err("`since` must be a string such as `HEAD` or `main`".into()),
    };
    let named = args.get("files").is_some_and(|f| !f.is_null());
    if named && since.is_some() {
        return Err(
            "pass either `files` or `since`, not both: `files` names the changes, `since` asks \
             git for them"
                .into(),
        );
    }
    let mut q: AffectedQuery = serde_json::from_value(Value::Object(args)).map_err(|error| {
        format!(
            "invalid arguments for once_query_affected: {}; its input schema lists the \
             arguments it accepts",
            crate::message::excerpt_to(&error.to_string(), 300)
        )
    })?;
    if !named {
        // git may take a while: the workspace stays free for reloads meanwhile.
        let root = live.read().root().to_path_buf();
        q.files = once_run::changed_files(&root, since.as_deref().unwrap_or("HEAD"), registry)
            .map_err(|error| error.to_string())?;
    }
    let workspace = live.read();
    if workspace.has_errors() {
        return Err(super::query::broken_manifest(&workspace));
    }
    let value = query::affected(&workspace, &q).map_err(|error| error.to_string())?;
    serde_json::to_value(value).map_err(|error| format!("cannot encode the answer: {error}"))
}

/// The query's arguments plus `since`, with the bounds the server enforces.
fn input_schema() -> Value {
    let mut schema = query::input_schema(QueryName::Affected);
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        properties.insert(
            "since".into(),
            json!({
                "type": "string",
                "maxLength": 256,
                "description": "Without `files`: ask git for every change since this revision (default `HEAD`), uncommitted and untracked files included"
            }),
        );
        if let Some(files) = properties.get_mut("files").and_then(Value::as_object_mut) {
            files.insert("maxItems".into(), json!(MAX_NAMED_FILES));
            files.insert("items".into(), json!({"type": "string", "maxLength": 4096}));
        }
        for (name, max) in [("capability", 200), ("cursor", 100)] {
            if let Some(p) = properties.get_mut(name).and_then(Value::as_object_mut) {
                p.insert("maxLength".into(), json!(max));
            }
        }
        if let Some(limit) = properties.get_mut("limit").and_then(Value::as_object_mut) {
            limit.insert("minimum".into(), json!(1));
            limit.insert("maximum".into(), json!(query::MAX_PAGE_LIMIT));
        }
    }
    schema
}
