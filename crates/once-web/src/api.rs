//! The page's JSON API: what each route reads or does, answered from the same libraries and
//! tools that the CLI and agents use, so the page can never show a value they would compute
//! differently.
//!
//! Reads go through the read-only MCP tools (`POST /api/tool/NAME`, called in-process by
//! `once_mcp::call_read_only`), the graph picture, the run store, the change store and the
//! evaluators. The only things the page can *do* are a person's decisions on change sets — apply
//! and reject — with exactly the rules of `once changes`. Every route here runs after the access
//! checks (`lib.rs`); this module must never act for an unauthenticated request nor offer a tool
//! that is not read-only.

use std::collections::HashMap;
use std::path::Path;

use once_changes::{ChangeStore, Decider};
use once_mcp::{DetachedCallError, ToolResult};
use once_run::{ActionStatus, RunStatus, RunStore};
use serde_json::{Map, Value, json};

use crate::Shared;
use crate::http::{Request, Response};

/// How many of the newest runs give the graph its colours.
const STATUS_RUNS: usize = 20;

/// `GET /api/session`.
pub fn session(shared: &Shared) -> Response {
    Response::json(
        200,
        &json!({
            "workspace": shared.root.display().to_string(),
            "csrf": shared.access.csrf_hex(),
            "version": env!("CARGO_PKG_VERSION"),
            "gates": {
                "allow_edit": shared.config.gates.allow_edit,
                "allow_run": shared.config.gates.allow_run,
            },
        }),
    )
}

/// `GET /api/graph`: every target and edge, each target coloured by its last run, with why it
/// was skipped when it was.
pub fn graph(shared: &Shared) -> Response {
    let picture = shared.picture();
    let statuses = last_statuses(&shared.root);
    let targets: Vec<Value> = picture
        .targets
        .iter()
        .map(|node| {
            let last = statuses.get(&node.name);
            json!({
                "name": node.name,
                "kind": node.kind,
                "folder": node.folder,
                "tags": node.tags,
                "capabilities": node.capabilities,
                "status": last.map(|last| last.word),
                "run": last.map(|last| &last.run),
                "reason": last.and_then(|last| last.reason.as_deref()),
            })
        })
        .collect();
    Response::json(200, &json!({ "targets": targets, "edges": picture.edges }))
}

/// A target's state in the newest run that has it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LastState {
    word: &'static str,
    run: String,
    /// Why its worst action never started, when it was skipped.
    reason: Option<String>,
}

/// The newest state of each target's actions, worst first, with the run it comes from.
fn last_statuses(root: &Path) -> HashMap<String, LastState> {
    let store = RunStore::new(root);
    let mut statuses: HashMap<String, LastState> = HashMap::new();
    for id in store.ids().into_iter().take(STATUS_RUNS) {
        let Ok(report) = store.read(&id) else {
            continue;
        };
        // Within one run, a target's worst action decides; a newer run hides an older one.
        let mut in_this_run: HashMap<&str, (&'static str, Option<&str>)> = HashMap::new();
        for action in &report.actions {
            let Some((target, _)) = action.action.split_once(':') else {
                continue;
            };
            if statuses.contains_key(target) {
                continue;
            }
            let word = status_word(action.status, action.cached, report.status);
            let reason = action.skipped_because.as_deref();
            let entry = in_this_run.entry(target).or_insert((word, reason));
            if severity(word) > severity(entry.0) {
                *entry = (word, reason);
            }
        }
        for (target, (word, reason)) in in_this_run {
            let state = LastState {
                word,
                run: id.clone(),
                reason: reason.map(str::to_owned),
            };
            statuses.insert(target.to_owned(), state);
        }
    }
    statuses
}

/// The word the graph colours by: what the run did with the action, or that it is waiting
/// (`queued`) or never started (`skipped`), never the absence of a word, which reads as "not
/// run yet".
fn status_word(status: ActionStatus, cached: bool, run: RunStatus) -> &'static str {
    match status {
        ActionStatus::Succeeded if cached => "cached",
        ActionStatus::Succeeded => "succeeded",
        ActionStatus::Failed | ActionStatus::TimedOut => "failed",
        ActionStatus::Cancelled | ActionStatus::Interrupted => "cancelled",
        ActionStatus::Running if run == RunStatus::Running => "running",
        ActionStatus::Running => "cancelled",
        ActionStatus::Pending if run == RunStatus::Running => "queued",
        ActionStatus::Pending | ActionStatus::Skipped => "skipped",
    }
}

fn severity(word: &str) -> u8 {
    match word {
        "failed" => 6,
        "cancelled" => 5,
        "skipped" => 4,
        "running" => 3,
        "queued" => 2,
        "succeeded" => 1,
        _ => 0,
    }
}

/// `POST /api/tool/NAME`: a read-only tool's answer, exactly as an agent gets it.
pub fn tool(shared: &Shared, name: &str, request: &Request) -> Response {
    let arguments = if request.body.is_empty() {
        Map::new()
    } else {
        match serde_json::from_slice::<Value>(&request.body) {
            Ok(Value::Object(arguments)) => arguments,
            Ok(_) => return Response::error(400, "the body must be a JSON object of arguments"),
            Err(error) => return Response::error(400, &format!("the body is not JSON: {error}")),
        }
    };
    match once_mcp::call_read_only(&shared.config, name, arguments) {
        Ok(ToolResult::Value(value)) => Response::json(200, &json!({ "result": value })),
        Ok(ToolResult::Error(text)) => Response::error(422, &text),
        Err(error @ DetachedCallError::Unknown(_)) => Response::error(404, &error.to_string()),
        Err(error @ DetachedCallError::NotReadOnly(_)) => Response::error(403, &error.to_string()),
        Err(error @ DetachedCallError::Arguments(_)) => Response::error(422, &error.to_string()),
        Err(error @ DetachedCallError::Internal { .. }) => Response::error(500, &error.to_string()),
    }
}

/// `GET /api/changes`: every change set, newest first.
pub fn changes(shared: &Shared) -> Response {
    let store = ChangeStore::new(&shared.root);
    match store.recover().and_then(|()| store.list(None)) {
        Ok(list) => to_json(&list),
        Err(error) => Response::error(500, &error.to_string()),
    }
}

/// `GET /api/changes/ID`: the set and its unified diff against the files as they are now.
pub fn change_set(shared: &Shared, id: &str) -> Response {
    let store = ChangeStore::new(&shared.root);
    let loaded = store
        .recover()
        .and_then(|()| store.load(id))
        .and_then(|set| Ok((set, store.show(id)?)));
    match loaded {
        Ok((set, diff)) => match serde_json::to_value(&set) {
            Ok(set) => Response::json(200, &json!({ "set": set, "diff": diff })),
            Err(error) => Response::error(500, &error.to_string()),
        },
        Err(error) => change_error(&error),
    }
}

/// `POST /api/changes/ID/apply` and `/reject`: the person's decision, all or nothing, with the
/// same refusals as `once changes apply` and `reject`.
pub fn decide(shared: &Shared, id: &str, decision: Decision, request: &Request) -> Response {
    let store = ChangeStore::new(&shared.root);
    let decided = match decision {
        Decision::Apply => store.apply(id, Decider::Window),
        Decision::Reject => {
            let reason = match serde_json::from_slice::<Value>(&request.body) {
                Ok(body) => body
                    .get("reason")
                    .and_then(Value::as_str)
                    .map(str::trim)
                    .filter(|reason| !reason.is_empty())
                    .map(str::to_owned),
                Err(_) => None,
            };
            store.reject(id, reason, Decider::Window)
        }
    };
    match decided {
        Ok(set) => {
            let message = match decision {
                Decision::Apply => format!("applied change set `{id}`"),
                Decision::Reject => format!("rejected change set `{id}`"),
            };
            Response::json(
                200,
                &json!({ "outcome": "done", "message": message, "set": set_json(&set) }),
            )
        }
        Err(error) => change_error(&error),
    }
}

/// What a person decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// `once changes apply`.
    Apply,
    /// `once changes reject`.
    Reject,
}

fn set_json(set: &once_changes::Proposal) -> Value {
    serde_json::to_value(set).unwrap_or(Value::Null)
}

fn change_error(error: &once_changes::Error) -> Response {
    let status = match error {
        once_changes::Error::NotFound { .. } => 404,
        once_changes::Error::Moved { .. }
        | once_changes::Error::Decided { .. }
        | once_changes::Error::Invalid { .. } => 409,
        _ => 500,
    };
    let outcome = if status == 500 { "problem" } else { "refused" };
    Response::json(
        status,
        &json!({ "outcome": outcome, "message": error.to_string(), "error": error.to_string() }),
    )
}

/// `GET /api/evaluators`.
pub fn evaluators(shared: &Shared) -> Response {
    Response::json(200, &json!({ "evaluators": (shared.evaluators)() }))
}

fn to_json(value: &impl serde::Serialize) -> Response {
    match serde_json::to_value(value) {
        Ok(value) => Response::json(200, &value),
        Err(error) => Response::error(500, &error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_state_wins_and_skipped_actions_say_so() {
        assert_eq!(
            status_word(ActionStatus::Succeeded, true, RunStatus::Succeeded),
            "cached"
        );
        assert_eq!(
            status_word(ActionStatus::Running, false, RunStatus::Interrupted),
            "cancelled",
            "a run that ended cannot still be running"
        );
        assert_eq!(
            status_word(ActionStatus::Skipped, false, RunStatus::Failed),
            "skipped"
        );
        assert_eq!(
            status_word(ActionStatus::Pending, false, RunStatus::Running),
            "queued"
        );
        assert!(severity("failed") > severity("skipped"));
        assert!(severity("skipped") > severity("running"));
        assert!(severity("running") > severity("succeeded"));
        assert!(severity("succeeded") > severity("cached"));
    }
}
