//! The change-set tools, both always available: `once_query_hashes` tells the hashes an agent
//! names its bases by, and `once_change_set_propose` proposes edits for a person to decide.
//!
//! Both are safe to leave open. `once_query_hashes` only reads, through the same path checks a
//! change set passes (`once_changes::hashes`, the value `once query hashes --json` prints).
//! Proposing applies nothing: `once_changes::ChangeStore::propose` checks the paths and base
//! hashes and saves the proposal under `.once/changes/<id>/`, and only a person applies it, with
//! `once changes apply`. The author recorded is the client's own `clientInfo`. A proposal with
//! problems is `refused` (all of them in one message), an empty one `none`. This module must
//! never apply or reject a change set.

use std::sync::Arc;

use once_changes::{Action, ChangeDraft, ChangeStore, Draft, Error};
use serde_json::{Map, Value, json};

use super::LiveWorkspace;
use crate::tool::{
    Annotations, Answer, CallContext, Gate, Handler, Tool, ToolResult, required_str,
};

/// The change-set tools.
pub fn change_tools(live: &Arc<LiveWorkspace>) -> Vec<Tool> {
    vec![query_hashes(live), propose(live)]
}

fn query_hashes(live: &Arc<LiveWorkspace>) -> Tool {
    let live = Arc::clone(live);
    Tool {
        name: "once_query_hashes",
        title: "Hashes of files",
        description: format!(
            "The size, SHA-256 and BLAKE3 of up to {} files (paths relative to the workspace \
             root), read exactly as a change set reaches them. Call it on the files you read \
             before proposing a change set: pass `sha256:<sha256>` (or `blake3:<blake3>`) as \
             each replacement's or deletion's `base`. `sha256sum FILE` computes the same SHA-256 \
             in any shell. A path a change set cannot name (outside the workspace, through a \
             symbolic link, inside `.git/` or `.once/`, a folder) gets an `error` instead; a \
             missing file `exists: false`. Rows stop at 16 KB: `omitted` counts the paths at \
             the end left for another call.",
            once_changes::MAX_PATHS
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "paths": {
                    "type": "array",
                    "description": "Files, relative to the workspace root",
                    "items": {"type": "string", "maxLength": once_changes::MAX_PATH_CHARS},
                    "minItems": 1,
                    "maxItems": once_changes::MAX_PATHS,
                },
            },
            "required": ["paths"],
            "additionalProperties": false,
        }),
        output_schema: json!({
            "type": "object",
            "description": "One row per path, in the order asked",
            "properties": {
                "files": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "path": {"type": "string", "description": "The path, normalized when valid"},
                            "exists": {"type": "boolean", "description": "Whether a regular file is there"},
                            "size": {"type": "integer", "description": "Bytes"},
                            "sha256": {"type": "string", "description": "Lowercase hex, as `sha256sum` prints it; a base is `sha256:<it>`"},
                            "blake3": {"type": "string", "description": "Lowercase hex; a base is `blake3:<it>`"},
                            "error": {"type": "string", "description": "Why a change set cannot name this path"},
                        },
                        "required": ["path"],
                        "additionalProperties": false,
                    },
                },
                "omitted": {"type": "integer", "description": "Paths at the end of the question that did not fit in this answer: ask about them again"},
            },
            "required": ["files"],
            "additionalProperties": false,
        }),
        annotations: Annotations::READ_ONLY,
        gate: Gate::Always,
        handler: Handler::query(move |_: &CallContext, args: Map<String, Value>| {
            let paths: Vec<String> = match args.get("paths") {
                Some(Value::Array(items)) => items
                    .iter()
                    .filter_map(|item| item.as_str().map(str::to_string))
                    .collect(),
                _ => Vec::new(),
            };
            let root = live.read().root().to_path_buf();
            match once_changes::hashes(&root, &paths).map(serde_json::to_value) {
                Ok(Ok(value)) => ToolResult::Value(value),
                Ok(Err(error)) => ToolResult::Error(format!("cannot encode the answer: {error}")),
                Err(error) => ToolResult::Error(error.to_string()),
            }
        }),
    }
}

fn propose(live: &Arc<LiveWorkspace>) -> Tool {
    let live = Arc::clone(live);
    Tool {
        name: "once_change_set_propose",
        title: "Propose a change set",
        description: "Propose edits for the person to review: files to create, replace or delete. \
                      Nothing is applied; the proposal is saved and the person reads it as a diff \
                      and applies or rejects it with `once changes`. For `replace` and `delete`, \
                      pass `base`, the hash of the file as you read it, so the change is refused \
                      if the file moves on: `sha256:<hex>` (what `sha256sum FILE` prints) or \
                      `blake3:<hex>`; once_query_hashes gives both for any file. `create` needs \
                      a path that does not exist. Paths are relative to the workspace root and \
                      cannot leave it or touch `.once/` or `.git/`. Every problem is reported at \
                      once and nothing is saved until all are fixed. Returns the change set's id \
                      and a summary."
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
                            "base": {"type": "string", "description": "Hash of the content you read (replace and delete): `sha256:<hex>` (`sha256sum FILE`) or `blake3:<hex>`, as once_query_hashes gives them"},
                            "base_blake3": {"type": "string", "description": "Older spelling of `base` with the BLAKE3 hex alone; give one of the two"},
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
            "missing argument `changes` (an array of {action, path, content, base}): call the \
             tool again with it"
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
                base: match (text("base")?, text("base_blake3")?) {
                    (Some(_), Some(_)) => {
                        return Err(format!(
                            "changes[{index}]: give `base` or `base_blake3`, not both"
                        ));
                    }
                    (base, older) => base.or(older),
                },
            })
        })
        .collect()
}
