//! `once_materialize_example` (behind `--allow-edit`): write a built-in starter into the
//! workspace.
//!
//! The answer names the files created and the files already there, never their contents, which
//! would flood the model's context. The examples an agent can pick are in the input schema (an
//! enum, with a description per example), so no extra call is needed to discover them. This
//! module must never write a file itself: `once_examples::materialize` does, all or nothing.
//! Conflicting or unsafe destinations are `refused`, files all already there `none`.

use std::path::Path;
use std::sync::Arc;

use once_examples::Error;
use once_fs::WorkspacePath;
use serde_json::{Map, Value, json};

use super::LiveWorkspace;
use crate::tool::{
    Annotations, Answer, CallContext, Gate, Handler, Tool, optional_bool, optional_str,
};

/// The example tools; the server lists them only when `--allow-edit` was given.
pub fn example_tools(live: &Arc<LiveWorkspace>) -> Vec<Tool> {
    vec![materialize(live)]
}

fn materialize(live: &Arc<LiveWorkspace>) -> Tool {
    let live = Arc::clone(live);
    let names = once_examples::names();
    let catalog: Vec<String> = once_examples::all()
        .iter()
        .map(|e| format!("`{}` ({})", e.name, e.description))
        .collect();
    let strings = |d: &str| json!({"type": "array", "items": {"type": "string"}, "description": d});
    Tool {
        name: "once_materialize_example",
        title: "Create a starter from an example",
        description: format!(
            "Write one of the complete starters built into once (a once.toml plus source files \
             whose `test` capability passes) into the workspace, or into the folder `into` inside \
             it. Idempotent: files already there with the same content count as unchanged. If any \
             destination exists with different content, nothing at all is written and every \
             conflict is listed. Returns the paths created and unchanged, not the contents. With \
             `dry_run`, only says what would happen. Examples: {}.",
            catalog.join("; ")
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "example": {"type": "string", "enum": names, "description": "Which example"},
                "into": {"type": "string", "description": "A folder relative to the workspace root (default: the root itself)"},
                "dry_run": {"type": "boolean", "description": "Only report what would be written (default false)"},
            },
            "required": ["example"],
            "additionalProperties": false,
        }),
        output_schema: json!({
            "type": "object",
            "description": "What was written",
            "properties": {
                "example": {"type": "string", "description": "The example"},
                "into": {"type": "string", "description": "The folder, relative to the root (`.` for the root)"},
                "dry_run": {"type": "boolean", "description": "True when nothing was written"},
                "created": strings("Files written (or to be written), relative to the root"),
                "unchanged": strings("Files already there with the same content"),
            },
            "required": ["example", "into", "dry_run", "created", "unchanged"],
            "additionalProperties": false,
        }),
        annotations: Annotations {
            read_only: false,
            destructive: false,
            idempotent: true,
            open_world: false,
        },
        gate: Gate::Edit,
        handler: Handler::act(move |_: &CallContext, args: Map<String, Value>| {
            let root = live.read().root().to_path_buf();
            write_example(&root, &args).into()
        }),
    }
}

fn write_example(root: &Path, args: &Map<String, Value>) -> Result<Answer, Answer> {
    let name = crate::tool::required_str(args, "example").map_err(Answer::refused)?;
    let example = once_examples::find(name).map_err(|e| Answer::refused(e.to_string()))?;
    let into = optional_str(args, "into")
        .map_err(Answer::refused)?
        .filter(|text| !matches!(text.trim_matches('/'), "" | "."))
        .map(WorkspacePath::parse)
        .transpose()
        .map_err(|e| Answer::refused(format!("argument `into`: {e}")))?;
    let dry_run = optional_bool(args, "dry_run")
        .map_err(Answer::refused)?
        .unwrap_or(false);
    let done = match once_examples::materialize(root, example, into.as_ref(), dry_run) {
        Ok(done) => done,
        Err(error @ Error::Conflicts { .. }) => {
            return Err(Answer::refused(format!(
                "{error}; materialize into an empty folder with `into`, or ask the person what \
                 to do with these files"
            )));
        }
        Err(error @ (Error::Path(_) | Error::Unknown { .. })) => {
            return Err(Answer::refused(error.to_string()));
        }
        Err(error) => return Err(Answer::problem(error.to_string())),
    };
    let value = serde_json::to_value(&done)
        .map_err(|e| Answer::problem(format!("cannot encode the answer: {e}")))?;
    let (created, unchanged) = (done.created.len(), done.unchanged.len());
    let answer = if created == 0 {
        Answer::none(format!(
            "every file of `{name}` is already there with the same content ({unchanged} \
             unchanged): nothing to write"
        ))
    } else if dry_run {
        Answer::done(format!(
            "would create {created} files of `{name}` ({unchanged} unchanged); nothing was written"
        ))
    } else {
        Answer::done(format!(
            "created {created} files of `{name}` ({unchanged} unchanged)"
        ))
    };
    Ok(answer.with_result(value))
}
