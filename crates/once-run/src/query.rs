//! The value of `once query runs` and of the MCP tool `once_query_runs`, computed here once: the
//! recent runs, a page of one run's actions, or a page of one action's log.
//!
//! Every answer is bounded whatever the size of a run: a list names a few failed actions, and a
//! run's actions and an action's log are read a page at a time, with limits clamped here. This
//! module must never put a whole log, or every action of a run, into an answer.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::asked::Asked;
use crate::report::{
    ActionsPage, Counts, RunStatus, action_schema, counts_schema, run_status_schema,
};
use crate::store::{LogPage, RunStore};

/// How many failed actions each run of the list names.
const LISTED_FAILURES: usize = 5;

/// What to answer: with no `run_id` the recent runs; with `run_id` a page of its actions; with
/// `run_id` and `action` a page of that action's log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunsQuery {
    pub run_id: Option<String>,
    /// `target:capability`; needs `run_id`.
    pub action: Option<String>,
    /// First action or log line (0-based).
    pub offset: Option<u64>,
    /// How many runs (default 10, max 50), actions (default 50, max 200) or log lines (default
    /// 100, max 500).
    pub limit: Option<u64>,
}

/// One of three shapes, told apart by their fields (`runs`, `total_actions`, `total_lines`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum RunsAnswer {
    Runs(RunsList),
    Actions(ActionsPage),
    Log(LogPage),
}

/// The recent runs, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunsList {
    pub runs: Vec<RunRow>,
}

/// One run of the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunRow {
    pub run_id: String,
    pub status: RunStatus,
    /// Milliseconds since the Unix epoch.
    pub started_at: u64,
    pub duration_ms: u64,
    pub counts: Counts,
    /// The first few failed actions: bounded, as every action is one query away.
    pub failed_actions: Vec<String>,
    /// What was asked and by whom, when the record says.
    #[serde(skip_serializing_if = "Option::is_none", flatten)]
    pub asked: Option<Asked>,
}

/// Why there is no answer, said so that an agent knows which call to make instead.
#[derive(Debug, thiserror::Error)]
pub enum QueryRunsError {
    #[error("{0}; once_query_runs without arguments lists the recent runs")]
    Run(crate::Error),
    #[error("{0}; once_query_runs with only run_id lists its actions")]
    Log(crate::Error),
    #[error("`action` needs `run_id`: call once_query_runs without arguments to find the run")]
    ActionWithoutRun,
}

/// Answers `q` from the runs recorded in `store`.
pub fn query_runs(store: &RunStore, q: &RunsQuery) -> Result<RunsAnswer, QueryRunsError> {
    let offset = to_usize(q.offset.unwrap_or(0));
    match (q.run_id.as_deref(), q.action.as_deref()) {
        (Some(id), Some(action)) => {
            let limit = to_usize(q.limit.unwrap_or(100).clamp(1, 500));
            store
                .log_page(id, action, offset, limit)
                .map(RunsAnswer::Log)
                .map_err(QueryRunsError::Log)
        }
        (Some(id), None) => {
            let report = store.read(id).map_err(QueryRunsError::Run)?;
            let limit = to_usize(q.limit.unwrap_or(50).clamp(1, 200));
            Ok(RunsAnswer::Actions(report.page(offset, limit)))
        }
        (None, Some(_)) => Err(QueryRunsError::ActionWithoutRun),
        (None, None) => {
            let limit = to_usize(q.limit.unwrap_or(10).clamp(1, 50));
            let runs = store
                .ids()
                .into_iter()
                // A run whose folder exists but whose report is not written yet is left out,
                // not counted.
                .filter_map(|id| store.read(&id).ok())
                .take(limit)
                .map(|r| RunRow {
                    failed_actions: r
                        .actions
                        .iter()
                        .filter(|a| a.status.is_failure())
                        .take(LISTED_FAILURES)
                        .map(|a| a.action.clone())
                        .collect(),
                    run_id: r.run_id,
                    status: r.status,
                    started_at: r.started_at,
                    duration_ms: r.duration_ms,
                    counts: r.counts,
                    asked: r.asked,
                })
                .collect();
            Ok(RunsAnswer::Runs(RunsList { runs }))
        }
    }
}

fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// The JSON Schema of [`RunsQuery`].
pub fn runs_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "run_id": {"type": "string", "description": "One run"},
            "action": {"type": "string", "description": "With run_id: the action whose log to read"},
            "offset": {"type": "integer", "minimum": 0, "description": "First action or log line (0-based)"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 500, "description": "How many runs (default 10, max 50), actions (default 50, max 200) or log lines (default 100, max 500); a page of long rows or lines ends sooner, at about 12 KB, with `next_offset`"},
        },
        "required": [],
        "additionalProperties": false,
    })
}

/// The JSON Schema of [`RunsAnswer`]: its three shapes in one object.
pub fn runs_output_schema() -> Value {
    json!({
        "type": "object",
        "description": "Without run_id: `runs`. With run_id: a page of its actions (`actions`, `offset`, `total_actions`, `next_offset`). With run_id and action: a page of its log (`lines`, `offset`, `total_lines`, `next_offset`)",
        "properties": {
            "runs": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "run_id": {"type": "string"},
                    "status": run_status_schema(),
                    "started_at": {"type": "integer"},
                    "duration_ms": {"type": "integer"},
                    "counts": counts_schema(),
                    "failed_actions": {"type": "array", "items": {"type": "string"}, "description": "The first few failed actions"},
                    "request": request_schema(),
                    "asked_by": asked_by_schema(),
                },
                "required": ["run_id", "status", "started_at", "duration_ms", "counts", "failed_actions"],
                "additionalProperties": false,
            }},
            "run_id": {"type": "string"},
            "status": run_status_schema(),
            "counts": counts_schema(),
            "actions": {"type": "array", "items": action_schema()},
            "total_actions": {"type": "integer"},
            "request": request_schema(),
            "asked_by": asked_by_schema(),
            "action": {"type": "string"},
            "log": {"type": "string"},
            "lines": {"type": "array", "items": {"type": "string"}},
            "total_lines": {"type": "integer"},
            "offset": {"type": "integer"},
            "next_offset": {"type": "integer", "description": "Pass as offset for the next page; absent at the end"},
        },
        "required": [],
        "additionalProperties": false,
    })
}

fn request_schema() -> Value {
    json!({"type": "string", "description": "What was asked, as it would be typed after `once run` (`report:build`, `--all test`); absent in older records"})
}

fn asked_by_schema() -> Value {
    json!({"type": "string", "description": "Who asked: `terminal`, or the MCP client's name as it gave it; absent in older records"})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_leaves_out_runs_without_a_report_and_errors_say_what_to_call() {
        let dir = std::env::temp_dir().join(format!("once-run-query-{}", std::process::id()));
        let store = RunStore::new(&dir);
        let unfinished = store.create().unwrap();
        let list = query_runs(&store, &RunsQuery::default()).unwrap();
        assert_eq!(list, RunsAnswer::Runs(RunsList { runs: Vec::new() }));

        let q = RunsQuery {
            run_id: Some(unfinished.id.clone()),
            ..RunsQuery::default()
        };
        let error = query_runs(&store, &q).unwrap_err().to_string();
        assert_eq!(
            error,
            format!(
                "no run with id `{}`; once_query_runs without arguments lists the recent runs",
                unfinished.id
            )
        );
        let q = RunsQuery {
            action: Some("a:build".into()),
            ..RunsQuery::default()
        };
        assert!(matches!(
            query_runs(&store, &q),
            Err(QueryRunsError::ActionWithoutRun)
        ));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn unknown_arguments_are_refused() {
        let q: Result<RunsQuery, _> = serde_json::from_value(json!({"run": "x"}));
        assert!(q.is_err());
        let q: RunsQuery = serde_json::from_value(json!({"run_id": "x", "limit": 2})).unwrap();
        assert_eq!(q.limit, Some(2));
    }
}
