//! The memory tools: `once_query_memory` (always), `once_remember` and `once_forget` (behind
//! `--allow-edit`).
//!
//! Reads return the value of `once_memory::query`, the very one `once memory … --json` prints.
//! Writes go through `once_memory::Store`, which makes them atomic and refuses an update made
//! from an old revision; the refusal carries the current text, so the agent can merge instead of
//! losing either version. This module must never write an entry file itself.

use std::sync::Arc;

use once_memory::{Change, Draft, Kind, MemoryQuery, Store};
use serde_json::{Map, Value, json};

use super::LiveWorkspace;
use crate::tool::{Annotations, CallContext, Gate, Tool, ToolResult, optional_str, optional_u64};

/// The memory tools; the server lists only those whose gate is open.
pub fn memory_tools(live: &Arc<LiveWorkspace>) -> Vec<Tool> {
    vec![query_memory(live), remember(live), forget(live)]
}

fn store(live: &LiveWorkspace) -> Store {
    Store::new(live.read().root())
}

fn query_memory(live: &Arc<LiveWorkspace>) -> Tool {
    let live = Arc::clone(live);
    Tool {
        name: "once_query_memory",
        title: "Search project memory",
        description: "Project memory: notes about this workspace (decisions, conventions, gotchas, \
                      how-tos) that people and agents wrote. With `query`, ranked full-text search \
                      over titles, tags and bodies; without it, entries newest first. Filter by \
                      `kind`, `tag`, `target` or `path`; page with `next_cursor` → `cursor`. Rows \
                      carry id, title, a snippet, `revision` and `stale` (why the note may no longer \
                      be true: a linked file changed or vanished, a linked target is gone); bodies \
                      come with `body: true`, or read one entry in full with `id`. Search here \
                      before you write a new note."
            .into(),
        input_schema: once_memory::input_schema(),
        output_schema: once_memory::output_schema(),
        annotations: Annotations::READ_ONLY,
        gate: Gate::Always,
        handler: Arc::new(move |_: &CallContext, arguments: Map<String, Value>| {
            let q: MemoryQuery = match serde_json::from_value(Value::Object(arguments)) {
                Ok(q) => q,
                Err(error) => {
                    return ToolResult::Error(format!(
                        "invalid arguments for once_query_memory: {}; its input schema lists \
                         the arguments it accepts",
                        crate::message::excerpt_to(&error.to_string(), 300)
                    ));
                }
            };
            let workspace = live.read();
            let target_exists = |name: &str| workspace.target(name).is_some();
            let store = Store::new(workspace.root());
            match once_memory::query(&store, &q, &target_exists) {
                Ok(page) => match serde_json::to_value(page) {
                    Ok(value) => ToolResult::Value(value),
                    Err(error) => ToolResult::Error(format!("cannot encode the answer: {error}")),
                },
                Err(once_memory::Error::NotFound { id }) => ToolResult::Error(format!(
                    "no memory entry with id `{id}`; call once_query_memory with `query` to find \
                     entries"
                )),
                Err(error) => ToolResult::Error(error.to_string()),
            }
        }),
    }
}

fn strings(args: &Map<String, Value>, name: &str) -> Result<Option<Vec<String>>, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str().map(str::to_string).ok_or_else(|| {
                    format!("Argument {name:?} must be an array of strings. Call the tool again.")
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(format!(
            "Argument {name:?} must be an array of strings. Call the tool again."
        )),
    }
}

fn kind(args: &Map<String, Value>) -> Result<Option<Kind>, String> {
    optional_str(args, "kind")?
        .map(|name| {
            Kind::parse(name).ok_or_else(|| {
                format!("unknown kind {name:?}: use decision, convention, gotcha, howto or note")
            })
        })
        .transpose()
}

/// What the agent must do when its revision is old: the current entry in full, so it can merge.
fn stale_revision(expected: u64, current: &once_memory::Entry) -> String {
    format!(
        "refused: entry `{}` is at revision {}, not {expected} — someone changed it since you \
         read it, and nothing was written. Merge your change into the current entry below, then \
         call again with revision {}.\n\n{}",
        current.id,
        current.revision,
        current.revision,
        once_memory::front_matter::render(current)
    )
}

fn remember(live: &Arc<LiveWorkspace>) -> Tool {
    let live = Arc::clone(live);
    let kinds: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
    let list = |d: &str| json!({"type": "array", "items": {"type": "string"}, "description": d});
    Tool {
        name: "once_remember",
        title: "Write a memory entry",
        description: "Write a note to project memory, shared with the people on this project \
                      through version control. Without `id`: create an entry (`title` required; \
                      `kind` defaults to note). With `id`: update it, passing the `revision` you \
                      last read (from once_query_memory); only the fields given change. If \
                      someone changed the entry since, the call is refused with the current text: \
                      merge and call again. Link the `paths` (relative to the workspace root) and \
                      `targets` the note is about, so it is reported stale when they change. \
                      Search with once_query_memory first, and update an existing entry rather \
                      than writing a duplicate."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The entry to update; omit to create one"},
                "revision": {"type": "integer", "description": "Required with `id`: the revision you last read"},
                "title": {"type": "string", "description": "One line that says what the note is about"},
                "kind": {"type": "string", "enum": kinds, "description": "What sort of note (default note)"},
                "tags": list("Labels; replaces the old ones"),
                "targets": list("Targets the note is about; replaces the old ones"),
                "paths": list("Files the note is about, relative to the workspace root; replaces the old ones"),
                "body": {"type": "string", "description": "Markdown text"},
            },
            "required": [],
            "additionalProperties": false,
        }),
        output_schema: json!({
            "type": "object",
            "description": "The entry as written",
            "properties": {
                "id": {"type": "string", "description": "Stable id"},
                "revision": {"type": "integer", "description": "Pass it back for the next update"},
                "created": {"type": "boolean", "description": "True when a new entry was created"},
                "file": {"type": "string", "description": "The entry file, relative to the root"},
            },
            "required": ["id", "revision", "created", "file"],
            "additionalProperties": false,
        }),
        annotations: Annotations {
            read_only: false,
            destructive: false,
            idempotent: false,
            open_world: false,
        },
        gate: Gate::Edit,
        handler: Arc::new(move |_: &CallContext, args: Map<String, Value>| {
            let run = || -> Result<Value, String> {
                let store = store(&live);
                let id = optional_str(&args, "id")?;
                let title = optional_str(&args, "title")?.map(str::to_string);
                let body = optional_str(&args, "body")?.map(str::to_string);
                let (tags, targets, paths) = (
                    strings(&args, "tags")?,
                    strings(&args, "targets")?,
                    strings(&args, "paths")?,
                );
                let kind = kind(&args)?;
                let (entry, created) = match id {
                    None => {
                        let title = title.ok_or_else(|| {
                            "Missing argument \"title\": a new entry needs one. To update an \
                             entry instead, pass its `id` and `revision`."
                                .to_string()
                        })?;
                        let draft = Draft {
                            title,
                            kind: kind.unwrap_or(Kind::Note),
                            tags: tags.unwrap_or_default(),
                            targets: targets.unwrap_or_default(),
                            paths: paths.unwrap_or_default(),
                            body: body.unwrap_or_default(),
                        };
                        (store.create(draft).map_err(|e| e.to_string())?, true)
                    }
                    Some(id) => {
                        let revision = optional_u64(&args, "revision")?.ok_or_else(|| {
                            "Missing argument \"revision\": pass the revision you last read \
                             (once_query_memory with this `id` shows it), so a concurrent change \
                             is never overwritten."
                                .to_string()
                        })?;
                        let change = Change {
                            title,
                            kind,
                            tags,
                            targets,
                            paths,
                            body,
                        };
                        match store.update(id, Some(revision), change) {
                            Ok(entry) => (entry, false),
                            Err(once_memory::Error::StaleRevision { expected, current }) => {
                                return Err(stale_revision(expected, &current));
                            }
                            Err(error) => return Err(error.to_string()),
                        }
                    }
                };
                Ok(json!({
                    "id": entry.id,
                    "revision": entry.revision,
                    "created": created,
                    "file": format!(".once/memory/{}.md", entry.id),
                }))
            };
            ToolResult::from(run())
        }),
    }
}

fn forget(live: &Arc<LiveWorkspace>) -> Tool {
    let live = Arc::clone(live);
    Tool {
        name: "once_forget",
        title: "Delete a memory entry",
        description: "Delete an entry from project memory, passing the `revision` you last read; \
                      refused with the current text if it changed since. Prefer updating an entry \
                      (once_remember) when it is only out of date."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The entry to delete"},
                "revision": {"type": "integer", "description": "The revision you last read"},
            },
            "required": ["id", "revision"],
            "additionalProperties": false,
        }),
        output_schema: json!({
            "type": "object",
            "description": "What was deleted",
            "properties": {
                "id": {"type": "string", "description": "The deleted entry's id"},
                "title": {"type": "string", "description": "Its title"},
            },
            "required": ["id", "title"],
            "additionalProperties": false,
        }),
        annotations: Annotations {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: false,
        },
        gate: Gate::Edit,
        handler: Arc::new(move |_: &CallContext, args: Map<String, Value>| {
            let run = || -> Result<Value, String> {
                let id = crate::tool::required_str(&args, "id")?;
                let revision = optional_u64(&args, "revision")?
                    .ok_or_else(|| "Missing argument \"revision\" (an integer).".to_string())?;
                match store(&live).forget(id, Some(revision)) {
                    Ok(entry) => Ok(json!({
                        "id": id,
                        "title": entry.map(|e| e.title).unwrap_or_default(),
                    })),
                    Err(once_memory::Error::StaleRevision { expected, current }) => {
                        Err(stale_revision(expected, &current))
                    }
                    Err(error) => Err(error.to_string()),
                }
            };
            ToolResult::from(run())
        }),
    }
}
