//! The memory tools: `once_query_memory` (always), `once_remember` and `once_forget` (behind
//! `--allow-edit`).
//!
//! Reads return the value of `once_memory::query`, the very one `once memory … --json` prints.
//! Writes go through `once_memory::Store`, which makes them atomic and refuses an update made
//! from an old revision; the `refused` answer carries the current text (`result.current`), so the
//! agent can merge instead of losing either version. Forgetting an entry that is not there is
//! `none`. This module must never write an entry file itself.

use std::sync::Arc;

use once_memory::{Change, Draft, Kind, MemoryQuery, Store};
use serde_json::{Map, Value, json};

use super::LiveWorkspace;
use crate::tool::{
    Annotations, Answer, CallContext, Gate, Handler, Tool, ToolResult, optional_str, optional_u64,
};

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
        handler: Handler::query(move |_: &CallContext, arguments: Map<String, Value>| {
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

/// The refusal of a write made from an old revision. The answer carries the current entry (its
/// revision, and its whole text under `current`), so the agent can merge instead of losing
/// either version. `written` is the tool's own value shape for that entry.
fn stale_revision(expected: u64, current: &once_memory::Entry, written: Value) -> Answer {
    let mut result = written;
    if let Value::Object(map) = &mut result {
        map.insert(
            "current".into(),
            json!(once_memory::front_matter::render(current)),
        );
    }
    Answer::refused(format!(
        "entry `{}` is at revision {}, not {expected}: someone changed it since you read it, and \
         nothing was written; merge your change into `current` (the entry as it is now) and call \
         again with revision {}",
        current.id, current.revision, current.revision
    ))
    .with_result(result)
}

/// What a failed memory write answers: a mistake of the caller is `refused`, a broken store or
/// file system a `problem`.
fn failed(error: &once_memory::Error) -> Answer {
    match error {
        once_memory::Error::Io { .. } | once_memory::Error::Broken { .. } => {
            Answer::problem(error.to_string())
        }
        once_memory::Error::NotFound { id } => Answer::refused(format!(
            "no memory entry with id `{id}`; call once_query_memory with `query` to find entries"
        )),
        _ => Answer::refused(error.to_string()),
    }
}

/// The value `once_remember` answers for `entry`.
fn written(entry: &once_memory::Entry, created: bool) -> Value {
    json!({
        "id": entry.id,
        "revision": entry.revision,
        "created": created,
        "file": format!(".once/memory/{}.md", entry.id),
    })
}

/// The `current` property of a refused write's value.
fn current_schema() -> Value {
    json!({"type": "string", "description": "Only when refused for an old revision: the entry as it is now (front matter and body), to merge your change into"})
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
                "current": current_schema(),
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
        handler: Handler::act(move |_: &CallContext, args: Map<String, Value>| {
            remember_entry(&store(&live), &args).into()
        }),
    }
}

fn remember_entry(store: &Store, args: &Map<String, Value>) -> Result<Answer, Answer> {
    let id = optional_str(args, "id").map_err(Answer::refused)?;
    let title = optional_str(args, "title")
        .map_err(Answer::refused)?
        .map(str::to_string);
    let body = optional_str(args, "body")
        .map_err(Answer::refused)?
        .map(str::to_string);
    let tags = strings(args, "tags").map_err(Answer::refused)?;
    let targets = strings(args, "targets").map_err(Answer::refused)?;
    let paths = strings(args, "paths").map_err(Answer::refused)?;
    let kind = kind(args).map_err(Answer::refused)?;
    let Some(id) = id else {
        let title = title.ok_or_else(|| {
            Answer::refused(
                "missing argument `title`: a new entry needs one; to update an entry instead, \
                 pass its `id` and `revision`",
            )
        })?;
        let draft = Draft {
            title,
            kind: kind.unwrap_or(Kind::Note),
            tags: tags.unwrap_or_default(),
            targets: targets.unwrap_or_default(),
            paths: paths.unwrap_or_default(),
            body: body.unwrap_or_default(),
        };
        let entry = store.create(draft).map_err(|e| failed(&e))?;
        return Ok(Answer::done(format!(
            "created entry `{}` at revision {}",
            entry.id, entry.revision
        ))
        .with_result(written(&entry, true)));
    };
    let revision = optional_u64(args, "revision")
        .map_err(Answer::refused)?
        .ok_or_else(|| {
            Answer::refused(
                "missing argument `revision`: pass the revision you last read (once_query_memory \
                 with this `id` shows it), so a concurrent change is never overwritten",
            )
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
        Ok(entry) => Ok(Answer::done(format!(
            "updated entry `{}` to revision {}",
            entry.id, entry.revision
        ))
        .with_result(written(&entry, false))),
        Err(once_memory::Error::StaleRevision { expected, current }) => {
            Err(stale_revision(expected, &current, written(&current, false)))
        }
        Err(error) => Err(failed(&error)),
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
                "current": current_schema(),
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
        handler: Handler::act(move |_: &CallContext, args: Map<String, Value>| {
            forget_entry(&store(&live), &args).into()
        }),
    }
}

fn forget_entry(store: &Store, args: &Map<String, Value>) -> Result<Answer, Answer> {
    let id = crate::tool::required_str(args, "id").map_err(Answer::refused)?;
    let revision = optional_u64(args, "revision")
        .map_err(Answer::refused)?
        .ok_or_else(|| Answer::refused("missing argument `revision` (an integer)"))?;
    match store.forget(id, Some(revision)) {
        Ok(entry) => Ok(Answer::done(format!("forgot entry `{id}`"))
            .with_result(json!({"id": id, "title": entry.map(|e| e.title).unwrap_or_default()}))),
        Err(once_memory::Error::NotFound { .. }) => Ok(Answer::none(format!(
            "no memory entry with id `{id}`: nothing to forget"
        ))),
        Err(once_memory::Error::StaleRevision { expected, current }) => {
            let value = json!({"id": current.id, "title": current.title});
            Err(stale_revision(expected, &current, value))
        }
        Err(error) => Err(failed(&error)),
    }
}
