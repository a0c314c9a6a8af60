//! `once_change_set_propose` (always available): an agent proposes edits for a person to decide.
//!
//! It is safe to leave open because it applies nothing: `once_changes::ChangeStore::propose`
//! checks the paths and base hashes and saves the proposal under `.once/changes/<id>/`, and only a
//! person applies it, with `once changes apply`. The author recorded is the client's own
//! `clientInfo`. A proposal with problems is `refused` (all of them in one message), an empty one
//! `none`. This module must never apply or reject a change set.

use std::sync::Arc;

use once_changes::{Action, ChangeDraft, ChangeStore, Draft, Error};
use serde_json::{Map, Value, json};

use super::LiveWorkspace;
use crate::tool::{Annotations, Answer, CallContext, Gate, Handler, Tool, required_str};

/// The change-set tools.
pub fn change_tools(live: &Arc<LiveWorkspace>) -> Vec<Tool> {
    vec![propose(live)]
}

fn propose(live: &Arc<LiveWorkspace>) -> Tool {
    let live = Arc::clone(live);
    Tool {
        name: "once_change_set_propose",
        title: "Propose a change set",
        description: "Propose edits for the person to review: files to create, replace or delete. \
                      Nothing is applied; the proposal is saved and the person reads it as a diff \
                      and applies or rejects it with `once changes`. For `replace` and `delete`, \
                      pass `base_blake3`, the BLAKE3 hash (hex) of the file as you read it, so the \
                      change is refused if the file moves on; `create` needs a path that does not \
                      exist. Paths are relative to the workspace root and cannot leave it or touch \
                      `.once/` or `.git/`. Every problem is reported at once and nothing is saved \
                      until all are fixed. Returns the change set's id and a summary."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "One line: what the change set does"},
                "rationale": {"type": "string", "description": "Why, and what the person should check"},
                "changes": {
                    "type": "array",
                    "description": "The edits, in order",
                    "items": {
                        "type": "object",
                        "properties": {
                            "action": {"type": "string", "enum": ["create", "replace", "delete"], "description": "What to do to the file"},
                            "path": {"type": "string", "description": "Relative to the workspace root"},
                            "content": {"type": "string", "description": "The whole new content (create and replace)"},
                            "base_blake3": {"type": "string", "description": "BLAKE3 (hex) of the content you read (replace and delete)"},
                        },
                        "required": ["action", "path"],
                        "additionalProperties": false,
                    },
                },
            },
            "required": ["title", "rationale", "changes"],
            "additionalProperties": false,
        }),
        output_schema: json!({
            "type": "object",
            "description": "The saved proposal",
            "properties": {
                "id": {"type": "string", "description": "The change set's id"},
                "status": {"type": "string", "description": "Always `pending`: a person decides"},
                "create": {"type": "integer", "description": "Files it creates"},
                "replace": {"type": "integer", "description": "Files it replaces"},
                "delete": {"type": "integer", "description": "Files it deletes"},
                "review": {"type": "string", "description": "The command the person runs to read it"},
            },
            "required": ["id", "status", "create", "replace", "delete", "review"],
            "additionalProperties": false,
        }),
        annotations: Annotations {
            read_only: false,
            destructive: false,
            idempotent: false,
            open_world: false,
        },
        gate: Gate::Always,
        handler: Handler::act(move |context: &CallContext, args: Map<String, Value>| {
            let store = ChangeStore::new(live.read().root());
            propose_set(&store, context, &args).into()
        }),
    }
}

fn propose_set(
    store: &ChangeStore,
    context: &CallContext,
    args: &Map<String, Value>,
) -> Result<Answer, Answer> {
    let draft = Draft {
        title: required_str(args, "title")
            .map_err(Answer::refused)?
            .to_string(),
        rationale: required_str(args, "rationale")
            .map_err(Answer::refused)?
            .to_string(),
        author: context.client().map(str::to_string),
        changes: changes(args).map_err(Answer::refused)?,
    };
    if draft.changes.is_empty() {
        return Ok(Answer::none(
            "`changes` is empty: there is nothing to propose, and nothing was saved",
        ));
    }
    let proposal = store.propose(draft).map_err(|error| match error {
        Error::Invalid { problems } => Answer::refused(format!(
            "nothing was saved; fix each problem and call again: {}",
            problems.join("; ")
        )),
        other => Answer::problem(other.to_string()),
    })?;
    let row = once_changes::ChangeSetRow::new(&proposal);
    let review = format!("once changes show {}", row.id);
    Ok(Answer::done(format!(
        "proposed change set `{}` ({} to create, {} to replace, {} to delete); the person reviews \
         it with `{review}`",
        row.id, row.create, row.replace, row.delete
    ))
    .with_result(json!({
        "id": row.id,
        "status": row.status,
        "create": row.create,
        "replace": row.replace,
        "delete": row.delete,
        "review": review,
    })))
}

fn changes(args: &Map<String, Value>) -> Result<Vec<ChangeDraft>, String> {
    let Some(Value::Array(items)) = args.get("changes") else {
        return Err(
            "missing argument `changes` (an array of {action, path, content, base_blake3}): call \
             the tool again with it"
                .into(),
        );
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let Value::Object(item) = item else {
                return Err(format!("changes[{index}] must be an object"));
            };
            let text = |name: &str| -> Result<Option<String>, String> {
                crate::tool::optional_str(item, name)
                    .map(|v| v.map(str::to_string))
                    .map_err(|e| format!("changes[{index}]: {e}"))
            };
            let action = text("action")?.unwrap_or_default();
            let action = Action::parse(&action).ok_or_else(|| {
                format!("changes[{index}]: \"action\" must be create, replace or delete")
            })?;
            let path =
                text("path")?.ok_or_else(|| format!("changes[{index}]: missing \"path\""))?;
            Ok(ChangeDraft {
                action,
                path,
                content: text("content")?,
                base_blake3: text("base_blake3")?,
            })
        })
        .collect()
}
