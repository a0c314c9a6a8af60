//! The tools only the window mode (`once serve`) offers: `once_window_show`, with which an agent
//! points the person at something on the page.
//!
//! The tool checks that what it names exists (a target of the graph, a run, a change set, a
//! memory entry), then sends a `focus` event to every open page, which navigates there and marks
//! it. It never changes a file, and it says `none` when no page is open, so the agent knows the
//! person saw nothing.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use once_mcp::{Annotations, Gate, LiveWorkspace, Tool, ToolResult, required_str};
use serde_json::{Value, json};

use crate::events::{Event, Hub};

/// The window-mode tools, publishing to `hub`.
pub fn window_tools(root: &Path, live: &Arc<LiveWorkspace>, hub: &Arc<Hub>) -> Vec<Tool> {
    vec![show(root.to_path_buf(), Arc::clone(live), Arc::clone(hub))]
}

const KINDS: [&str; 4] = ["target", "run", "change_set", "memory"];

fn show(root: PathBuf, live: Arc<LiveWorkspace>, hub: Arc<Hub>) -> Tool {
    Tool {
        name: "once_window_show",
        title: "Show something to the person",
        description: "Point the person at something in the window (the page of `once serve`): a \
                      target, a run, a change set or a memory entry. The page goes there and \
                      marks it. Use it after proposing a change set or when a run failed, so the \
                      person looks at the right thing. The outcome is `none` when no page is open \
                      (the person saw nothing; say it in your reply instead)."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "kind": {"type": "string", "enum": KINDS, "description": "What to show"},
                "id": {"type": "string", "description": "The target's name, the run's id, the change set's id or the memory entry's id"},
            },
            "required": ["kind", "id"],
            "additionalProperties": false,
        }),
        output_schema: json!({
            "type": "object",
            "properties": {
                "outcome": {"type": "string", "enum": ["done", "refused", "none"]},
                "message": {"type": "string"},
                "pages": {"type": "integer", "description": "How many open pages were told"},
            },
            "required": ["outcome", "message", "pages"],
            "additionalProperties": false,
        }),
        annotations: Annotations {
            read_only: false,
            destructive: false,
            idempotent: true,
            open_world: false,
        },
        gate: Gate::Always,
        handler: Arc::new(move |_context, arguments| {
            let kind = match required_str(&arguments, "kind") {
                Ok(kind) => kind,
                Err(text) => return ToolResult::Error(text),
            };
            let id = match required_str(&arguments, "id") {
                Ok(id) => id,
                Err(text) => return ToolResult::Error(text),
            };
            ToolResult::Value(focus(&root, &live, &hub, kind, id))
        }),
    }
}

fn focus(root: &Path, live: &LiveWorkspace, hub: &Hub, kind: &str, id: &str) -> Value {
    let exists = match kind {
        "target" => live.read().target(id).is_some(),
        "run" => listed(&root.join(".once").join("runs"), id),
        "change_set" => listed(&root.join(".once").join("changes"), id),
        "memory" => listed(&root.join(".once").join("memory"), &format!("{id}.md")),
        _ => false,
    };
    if !exists {
        let what = kind.replace('_', " ");
        return json!({
            "outcome": "refused",
            "message": format!("there is no {what} `{id}`; check the id (the once_query_* tools list them)"),
            "pages": 0,
        });
    }
    let event = Event {
        name: "focus",
        data: json!({ "kind": kind, "id": id }).to_string(),
    };
    let pages = hub.publish(&event);
    if pages == 0 {
        json!({
            "outcome": "none",
            "message": "no page is open: the person did not see it; tell them in your reply",
            "pages": 0,
        })
    } else {
        json!({
            "outcome": "done",
            "message": format!("shown on {pages} open page{}", if pages == 1 { "" } else { "s" }),
            "pages": pages,
        })
    }
}

/// Whether `name` is an entry of `folder`, compared with the listing, so no id can name a path.
fn listed(folder: &Path, name: &str) -> bool {
    fs::read_dir(folder)
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok())
        .any(|entry| entry.file_name().to_str() == Some(name))
}
