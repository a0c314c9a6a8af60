//! The report of a run, in two sizes. [`RunReport`] lists every action and is what `run.json`
//! holds. [`RunSummary`] is the one shape that `once run --json` prints and the MCP tools
//! `once_run` and `once_cancel` return: every count, but at most [`SUMMARY_ROWS`] actions (the
//! ones that need attention first), the number left out and where to page through them, and
//! the tail of a log only for the first few failures. [`ActionsPage`] is one page of a run's
//! actions, for `once_query_runs`.
//!
//! These are public contracts (snake_case, durations in milliseconds). A summary and a page must
//! stay bounded whatever the size of the run and of its logs: a model reads them whole, so a
//! tail keeps only its last 3 KB and a page ends at 12 KB of rows.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use once_exec::Containment;

use crate::asked::Asked;
use crate::remote::{ExecutionReport, RemoteReport};

/// How a whole run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Still going (only in a `run.json` read while the run is in flight).
    Running,
    Succeeded,
    Failed,
    Cancelled,
    TimedOut,
    /// The process that owned the run stopped before the run ended (a signal, the end of
    /// `once mcp`'s input, a crash); each action says how far it got.
    Interrupted,
}

/// How one action ended, or where it is while its run is in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionStatus {
    Succeeded,
    Failed,
    TimedOut,
    Cancelled,
    /// Not started: a dependency failed, or the run stopped first.
    Skipped,
    /// Not started yet (only while the run is in flight).
    Pending,
    /// Started and not ended yet (only while the run is in flight).
    Running,
    /// Was running when the process that owned the run died.
    Interrupted,
}

impl ActionStatus {
    pub fn is_failure(self) -> bool {
        matches!(self, ActionStatus::Failed | ActionStatus::TimedOut)
    }

    /// The word a person reads, as the JSON spells it.
    pub fn word(self) -> &'static str {
        match self {
            ActionStatus::Succeeded => "succeeded",
            ActionStatus::Failed => "failed",
            ActionStatus::TimedOut => "timed_out",
            ActionStatus::Cancelled => "cancelled",
            ActionStatus::Skipped => "skipped",
            ActionStatus::Pending => "pending",
            ActionStatus::Running => "running",
            ActionStatus::Interrupted => "interrupted",
        }
    }
}

/// The process that owns a run in flight: its pid and its start time (field 22 of
/// `/proc/PID/stat`, in clock ticks since boot), which together name one process even after
/// its pid is reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    pub pid: u32,
    pub start_time: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub total: usize,
    /// Actions whose command ran (whatever the result).
    pub ran: usize,
    /// Actions replayed from the cache, local or remote.
    pub cached: usize,
    /// Of those, the ones replayed from the remote cache.
    #[serde(default)]
    pub remote: usize,
    /// Failed or timed out.
    pub failed: usize,
    pub skipped: usize,
    /// Actions that succeeded only after being run again (`retries`); absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retried: usize,
}

/// One action of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionReport {
    /// `target:capability`.
    pub action: String,
    pub status: ActionStatus,
    /// Replayed from the cache: nothing ran.
    pub cached: bool,
    /// Replayed from the remote cache (`cached` is true too).
    #[serde(default, skip_serializing_if = "is_false")]
    pub remote: bool,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    /// When it started, in milliseconds after its run started; absent for an action that never
    /// started (and in records written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_ms: Option<u64>,
    /// The full log: written as the command prints (readable while it runs), and for a cached
    /// action the log of the run that was recorded. The file is created with the command's first
    /// output: a command that printed nothing has none, which readers take for an empty log.
    pub log: Option<PathBuf>,
    /// Only for a failed action: the last lines of its log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail: Option<Vec<String>>,
    /// How many times its command was run again after failing (`retries`); absent when never.
    /// The earlier attempts' logs sit beside `log` as `<name>.attempt-N.log`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retried: usize,
    /// Only for a skipped action: why it never started (a dependency failed, the run stopped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped_because: Option<String>,
    /// Only for a cached action that ran although it had run before: what changed since its last
    /// recorded run, in words ("`Cargo.lock` appeared"), the first few changes and how many more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran_again: Option<String>,
    /// The batch it ran in, numbered from 1 in its run: the actions with one number ran as one
    /// command, whose log `log` names; absent for an action that ran alone or was replayed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<usize>,
    /// Where its command ran, when the run could send actions to a remote execution engine:
    /// on a worker (which, how long it queued and ran) or here (and why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran_on: Option<RanOn>,
}

/// Where an action's command ran in a run with remote execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RanOn {
    pub place: Place,
    /// Remote: the worker, as the engine names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    /// Remote: how long the action waited in the engine's queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_ms: Option<u64>,
    /// Remote: how long the worker took, fetching inputs and uploading outputs included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executed_ms: Option<u64>,
    /// Remote: the engine answered from its own cache, so nothing ran for this request.
    #[serde(default, skip_serializing_if = "is_false")]
    pub engine_cached: bool,
    /// Here: why not on the engine (`local = true`, persistent, secrets, remote execution off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub because: Option<String>,
}

/// Which machine ran an action's command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Place {
    Local,
    Remote,
}

/// A whole run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunReport {
    pub run_id: String,
    pub status: RunStatus,
    /// Milliseconds since the Unix epoch.
    pub started_at: u64,
    pub duration_ms: u64,
    pub counts: Counts,
    /// How the run's processes were kept from outliving it (see `once_exec::Containment`).
    #[serde(default)]
    pub containment: Containment,
    /// In plan order: dependencies first.
    pub actions: Vec<ActionReport>,
    /// The process running it, while it is `running`; a reader that finds that process gone
    /// records the run as interrupted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
    /// What the run did with the remote cache, when one was configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<RemoteReport>,
    /// What the run did with the remote execution engine, when one was configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ExecutionReport>,
    /// What was asked and by whom (see [`Asked`]); absent in records written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none", flatten)]
    pub asked: Option<Asked>,
}

fn is_false(value: &bool) -> bool {
    !*value
}

fn is_zero(value: &usize) -> bool {
    *value == 0
}

/// Why a run stopped before its end, if it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// It ran to its end.
    None,
    /// Its caller cancelled it (`once_cancel`, a client's cancellation).
    Cancelled,
    /// The process owning it is stopping (a signal, the end of `once mcp`'s input).
    Interrupted,
}

impl RunReport {
    /// The status and counts that follow from `actions`.
    pub(crate) fn summarise(actions: &[ActionReport], stop: Stop) -> (RunStatus, Counts) {
        let mut counts = Counts {
            total: actions.len(),
            ..Counts::default()
        };
        for action in actions {
            if action.cached {
                counts.cached += 1;
                counts.remote += usize::from(action.remote);
            } else if !matches!(action.status, ActionStatus::Skipped | ActionStatus::Pending) {
                counts.ran += 1;
            }
            if action.status.is_failure() {
                counts.failed += 1;
            }
            if action.status == ActionStatus::Skipped {
                counts.skipped += 1;
            }
            if action.status == ActionStatus::Succeeded && action.retried > 0 {
                counts.retried += 1;
            }
        }
        let any = |status| actions.iter().any(|a| a.status == status);
        let status = if stop == Stop::Interrupted || any(ActionStatus::Interrupted) {
            RunStatus::Interrupted
        } else if stop == Stop::Cancelled || any(ActionStatus::Cancelled) {
            RunStatus::Cancelled
        } else if any(ActionStatus::TimedOut) {
            RunStatus::TimedOut
        } else if counts.failed > 0 || counts.skipped > 0 {
            RunStatus::Failed
        } else {
            RunStatus::Succeeded
        };
        (status, counts)
    }

    /// This report as a reader must record it once the process that owned it is gone: what was
    /// running is interrupted, what had not started is skipped, and the run is interrupted.
    pub(crate) fn interrupted(mut self) -> RunReport {
        for action in &mut self.actions {
            match action.status {
                ActionStatus::Running => action.status = ActionStatus::Interrupted,
                ActionStatus::Pending => {
                    action.status = ActionStatus::Skipped;
                    action.skipped_because = Some(INTERRUPTED_FIRST.to_owned());
                }
                _ => {}
            }
        }
        let (_, counts) = RunReport::summarise(&self.actions, Stop::Interrupted);
        self.status = RunStatus::Interrupted;
        self.counts = counts;
        self.owner = None;
        self
    }
}

/// Why an action was skipped when the process that owned its run stopped before it started.
pub(crate) const INTERRUPTED_FIRST: &str = "the run was interrupted before it started";

/// Most actions a [`RunSummary`] lists.
pub const SUMMARY_ROWS: usize = 20;
/// Most listed failures that carry the tail of their log in a [`RunSummary`].
pub const SUMMARY_TAILS: usize = 3;
/// Most bytes of a log's tail in a summary or a page: the last lines that fit. A log line may
/// be 4 KB long, and the rest of the log is one `once_query_runs` call away.
const TAIL_BYTES: usize = 3 * 1024;
/// Most bytes of JSON rows one [`ActionsPage`] carries; a page of long rows ends sooner. An MCP
/// answer holds its value twice and must stay under 40 KB.
const PAGE_BYTES: usize = 12 * 1024;

/// The action with the tail of its log cut to its last [`TAIL_BYTES`]: whole lines while they
/// fit, and of a longer last line its end.
fn with_short_tail(action: &ActionReport) -> ActionReport {
    let mut action = action.clone();
    if let Some(tail) = &mut action.tail {
        let mut bytes = 0;
        let mut keep = 0;
        for line in tail.iter().rev() {
            if bytes + line.len() > TAIL_BYTES {
                break;
            }
            bytes += line.len();
            keep += 1;
        }
        if keep == 0
            && let Some(last) = tail.last_mut()
        {
            let mut cut = last.len() - TAIL_BYTES.min(last.len());
            while !last.is_char_boundary(cut) {
                cut += 1;
            }
            *last = format!("…{}", &last[cut..]);
            keep = 1;
        }
        tail.drain(..tail.len() - keep);
    }
    action
}

/// A run as a model or a script reads it: bounded whatever the number of actions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSummary {
    pub run_id: String,
    pub status: RunStatus,
    /// Milliseconds since the Unix epoch.
    pub started_at: u64,
    pub duration_ms: u64,
    pub counts: Counts,
    /// How the run's processes were kept from outliving it.
    #[serde(default)]
    pub containment: Containment,
    /// At most [`SUMMARY_ROWS`] actions: failed and timed out first, then cancelled, skipped,
    /// those that ran, and cached ones; in plan order within each group.
    pub actions: Vec<ActionReport>,
    /// Actions not listed.
    pub omitted: usize,
    /// How to see the rest, when some are omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// What the run did with the remote cache, when one was configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<RemoteReport>,
    /// What the run did with the remote execution engine, when one was configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ExecutionReport>,
}

/// One page of the actions of a run, in plan order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionsPage {
    pub run_id: String,
    pub status: RunStatus,
    pub counts: Counts,
    /// Index of the first action of `actions` (0-based).
    pub offset: usize,
    pub actions: Vec<ActionReport>,
    /// Actions in the whole run.
    pub total_actions: usize,
    /// Pass as `offset` for the next page; absent at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
    /// What was asked and by whom, when the record says.
    #[serde(default, skip_serializing_if = "Option::is_none", flatten)]
    pub asked: Option<Asked>,
}

impl RunReport {
    /// The bounded view of this report.
    pub fn summary(&self) -> RunSummary {
        // Lower ranks are listed first: what needs attention, then what happened, then what
        // did not need to happen.
        let rank = |action: &ActionReport| match action.status {
            ActionStatus::Failed | ActionStatus::TimedOut => 0,
            ActionStatus::Cancelled | ActionStatus::Interrupted | ActionStatus::Running => 1,
            ActionStatus::Skipped | ActionStatus::Pending => 2,
            ActionStatus::Succeeded if !action.cached => 3,
            ActionStatus::Succeeded => 4,
        };
        let mut order: Vec<usize> = (0..self.actions.len()).collect();
        // Stable: plan order within a rank.
        order.sort_by_key(|&i| rank(&self.actions[i]));
        let mut tails = 0;
        let actions: Vec<ActionReport> = order
            .into_iter()
            .take(SUMMARY_ROWS)
            .map(|i| {
                let mut action = with_short_tail(&self.actions[i]);
                if action.tail.is_some() {
                    tails += 1;
                    if tails > SUMMARY_TAILS {
                        action.tail = None;
                    }
                }
                action
            })
            .collect();
        let omitted = self.actions.len() - actions.len();
        RunSummary {
            run_id: self.run_id.clone(),
            status: self.status,
            started_at: self.started_at,
            duration_ms: self.duration_ms,
            counts: self.counts,
            containment: self.containment,
            hint: (omitted > 0).then(|| {
                format!(
                    "{omitted} more actions are not listed; once_query_runs with run_id {:?} \
                     and offset/limit pages through all {} in plan order",
                    self.run_id,
                    self.actions.len()
                )
            }),
            actions,
            omitted,
            remote: self.remote.clone(),
            execution: self.execution.clone(),
        }
    }

    /// Actions from `offset`: at most `limit`, fewer when their rows pass 12 KB.
    pub fn page(&self, offset: usize, limit: usize) -> ActionsPage {
        let mut actions: Vec<ActionReport> = Vec::new();
        let mut bytes = 0;
        for action in self.actions.iter().skip(offset).take(limit) {
            let action = with_short_tail(action);
            bytes += serde_json::to_string(&action).map_or(0, |json| json.len()) + 1;
            if !actions.is_empty() && bytes > PAGE_BYTES {
                break;
            }
            actions.push(action);
        }
        let end = offset.saturating_add(actions.len());
        ActionsPage {
            run_id: self.run_id.clone(),
            status: self.status,
            counts: self.counts,
            offset,
            total_actions: self.actions.len(),
            next_offset: (end < self.actions.len()).then_some(end),
            actions,
            asked: self.asked.clone(),
        }
    }
}

/// The JSON Schema of [`RunSummary`], or of `{run_id, status: "running"}`, what a caller that
/// stops waiting answers while the run goes on.
pub fn summary_schema() -> Value {
    json!({
        "type": "object",
        "description": "The run's summary (as `once run --json` prints it), or `{run_id, status: \"running\"}` when it is still going",
        "properties": {
            "run_id": {"type": "string"},
            "status": run_status_schema(),
            "started_at": {"type": "integer", "description": "Milliseconds since the Unix epoch"},
            "duration_ms": {"type": "integer"},
            "counts": counts_schema(),
            "containment": containment_schema(),
            "actions": {"type": "array", "items": action_schema(), "description": "At most 20: failed, timed out, cancelled and skipped first, then those that ran, then cached ones"},
            "omitted": {"type": "integer", "description": "Actions not listed; once_query_runs with run_id pages through all of them"},
            "hint": {"type": "string"},
            "remote": remote_schema(),
            "execution": execution_schema(),
        },
        "required": ["run_id", "status"],
        "additionalProperties": false,
    })
}

/// Every mode a report may name, from any platform: a report read back from another machine's
/// cache or store carries its own.
fn containment_schema() -> Value {
    let names: Vec<&str> = Containment::ALL.iter().map(|mode| mode.name()).collect();
    json!({
        "type": "string",
        "enum": names,
        "description": "How the run's processes were kept from outliving it (the modes strongest first)",
    })
}

pub(crate) fn counts_schema() -> Value {
    let count = |text: &str| json!({"type": "integer", "description": text});
    json!({
        "type": "object",
        "properties": {
            "total": count("Actions in the run"),
            "ran": count("Actions whose command ran, whatever the result"),
            "cached": count("Actions replayed from the cache, local or remote"),
            "remote": count("Of the cached actions, those replayed from the remote cache"),
            "failed": count("Failed or timed out"),
            "skipped": count("Not started: a dependency failed, or the run stopped first"),
            "retried": count("Of the actions that succeeded, those that needed a retry (absent when none)"),
        },
        "required": ["total", "ran", "cached", "remote", "failed", "skipped"],
        "additionalProperties": false,
    })
}

fn remote_schema() -> Value {
    let count = |text: &str| json!({"type": "integer", "description": text});
    json!({
        "type": "object",
        "description": "What the run did with the remote cache (present when one is configured)",
        "properties": {
            "url": {"type": "string"},
            "instance": {"type": "string"},
            "upload": {"type": "boolean", "description": "Whether successful results were uploaded"},
            "hits": count("Actions replayed from the remote cache"),
            "misses": count("Actions the remote cache did not have"),
            "uploaded": count("Results uploaded"),
            "round_trips": count("Calls sent to the server"),
            "warning": {"type": "string", "description": "What the person should know about the remote cache in this run, one sentence per line: why it went off (the run went on locally), results too large to fetch, headers not sent"},
        },
        "required": ["url", "instance", "upload", "hits", "misses", "uploaded", "round_trips"],
        "additionalProperties": false,
    })
}

fn execution_schema() -> Value {
    let count = json!({"type": "integer"});
    json!({
        "type": "object",
        "description": "With remote execution: actions the engine ran (of them answered from its cache, failed), run here instead, calls, and why it went off",
        "properties": {
            "url": {"type": "string"},
            "instance": {"type": "string"},
            "jobs": count,
            "executed": count,
            "engine_cached": count,
            "failed": count,
            "local": count,
            "round_trips": count,
            "warning": {"type": "string"},
        },
        "required": ["url", "instance", "jobs", "executed", "engine_cached", "failed", "local", "round_trips"],
        "additionalProperties": false,
    })
}

pub(crate) fn run_status_schema() -> Value {
    json!({"type": "string", "enum": ["running", "succeeded", "failed", "cancelled", "timed_out", "interrupted"]})
}

pub(crate) fn action_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "action": {"type": "string", "description": "`target:capability`"},
            "status": {"type": "string", "enum": ["succeeded", "failed", "timed_out", "cancelled", "skipped", "pending", "running", "interrupted"]},
            "cached": {"type": "boolean", "description": "Replayed from the cache: nothing ran"},
            "remote": {"type": "boolean", "description": "Replayed from the remote cache (absent when not)"},
            "retried": {"type": "integer", "minimum": 1, "description": "How many times the command was run again after failing (`retries`; absent when never); earlier attempts' logs sit beside `log` as `<name>.attempt-N.log`"},
            "exit_code": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "duration_ms": {"type": "integer", "description": "How long it ran; for a cached action, how long the run it replays took"},
            "started_ms": {"type": "integer", "description": "When it started, in milliseconds after its run started (absent if it never started)"},
            "log": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "The full log: written as the command prints, replayed with a cached result; the file is created with the first output, so a command that printed nothing has none"},
            "tail": {"type": "array", "items": {"type": "string"}, "description": "Only for a failure: the last lines of its log"},
            "skipped_because": {"type": "string", "description": "Only for a skipped action: why it never started"},
            "ran_again": {"type": "string", "description": "Only for an action that ran although a result of it was recorded before: what changed since its last recorded run (`Cargo.lock` appeared, `src/lib.rs` changed, variable `MODE` changed), the first 3 changes and how many more"},
            "batch": {"type": "integer", "minimum": 1, "description": "Actions with the same number ran as one command (`cargo test -p a -p b`); absent when it ran alone"},
            "ran_on": {
                "type": "object",
                "description": "With remote execution: where it ran; remote: the worker, ms queued and executing; local: why",
                "properties": {
                    "place": {"enum": ["local", "remote"]},
                    "worker": {"type": "string"},
                    "queued_ms": {"type": "integer"},
                    "executed_ms": {"type": "integer"},
                    "engine_cached": {"type": "boolean"},
                    "because": {"type": "string"},
                },
                "required": ["place"],
                "additionalProperties": false,
            },
        },
        "required": ["action", "status", "cached", "exit_code", "duration_ms", "log"],
        "additionalProperties": false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn action(name: String, status: ActionStatus, cached: bool) -> ActionReport {
        let failed = status.is_failure();
        ActionReport {
            action: name,
            status,
            cached,
            remote: false,
            exit_code: failed.then_some(1),
            duration_ms: 1,
            started_ms: Some(0),
            log: None,
            tail: failed.then(|| vec!["boom".to_owned()]),
            retried: 0,
            skipped_because: None,
            ran_again: None,
            batch: None,
            ran_on: None,
        }
    }

    fn report(actions: Vec<ActionReport>) -> RunReport {
        let (status, counts) = RunReport::summarise(&actions, Stop::None);
        RunReport {
            run_id: "20250101-000000-000-0000001-000000".into(),
            status,
            started_at: 0,
            duration_ms: 5,
            counts,
            containment: Containment::default(),
            actions,
            owner: None,
            remote: None,
            execution: None,
            asked: None,
        }
    }

    #[test]
    fn a_large_run_lists_what_needs_attention_first_and_counts_the_rest() {
        let mut actions: Vec<ActionReport> = (0..1000)
            .map(|i| action(format!("t{i:04}:build"), ActionStatus::Succeeded, true))
            .collect();
        actions[500] = action("ran:build".into(), ActionStatus::Succeeded, false);
        for i in [900, 901, 902, 903, 904] {
            actions[i] = action(format!("bad{i}:build"), ActionStatus::Failed, false);
        }
        actions[950] = action("late:build".into(), ActionStatus::Skipped, false);
        let report = report(actions);
        let summary = report.summary();
        assert_eq!(summary.counts.total, 1000);
        assert_eq!(summary.counts.failed, 5);
        assert_eq!(summary.actions.len(), SUMMARY_ROWS);
        assert_eq!(summary.omitted, 1000 - SUMMARY_ROWS);
        let names: Vec<&str> = summary
            .actions
            .iter()
            .take(8)
            .map(|a| a.action.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "bad900:build",
                "bad901:build",
                "bad902:build",
                "bad903:build",
                "bad904:build",
                "late:build",
                "ran:build",
                "t0000:build"
            ]
        );
        let tails = summary.actions.iter().filter(|a| a.tail.is_some()).count();
        assert_eq!(tails, SUMMARY_TAILS);
        assert!(summary.hint.as_deref().unwrap().contains(&report.run_id));
        let text = serde_json::to_string(&summary).unwrap();
        assert!(text.len() < 6_000, "{} bytes", text.len());
    }

    #[test]
    fn long_logs_keep_summaries_and_pages_small() {
        let long_tail: Vec<String> = (0..40)
            .map(|i| format!("{i}:{}", "e".repeat(4_000)))
            .collect();
        let actions: Vec<ActionReport> = (0..300)
            .map(|i| ActionReport {
                tail: Some(long_tail.clone()),
                ..action(format!("t{i:03}:build"), ActionStatus::Failed, false)
            })
            .collect();
        let report = report(actions);
        let summary = report.summary();
        let text = serde_json::to_string(&summary).unwrap();
        assert!(text.len() < 16 * 1024, "a summary of {} bytes", text.len());
        let tail = summary.actions[0].tail.as_ref().unwrap();
        assert_eq!(tail.len(), 1);
        assert!(
            tail[0].starts_with('…') && tail[0].ends_with('e'),
            "{}",
            &tail[0][..20]
        );
        // Paging with the largest limit still sees every action once, in small pages.
        let mut seen = Vec::new();
        let mut offset = 0;
        loop {
            let page = report.page(offset, 200);
            let size = serde_json::to_string(&page).unwrap().len();
            assert!(size < 16 * 1024, "a page of {size} bytes");
            seen.extend(page.actions.iter().map(|a| a.action.clone()));
            match page.next_offset {
                Some(next) => offset = next,
                None => break,
            }
        }
        let expected: Vec<String> = (0..300).map(|i| format!("t{i:03}:build")).collect();
        assert_eq!(seen, expected);
        // Short tails are kept whole.
        let short = with_short_tail(&action("a:build".into(), ActionStatus::Failed, false));
        assert_eq!(short.tail, Some(vec!["boom".to_owned()]));
    }

    #[test]
    fn a_small_run_is_listed_whole() {
        let report = report(vec![
            action("a:build".into(), ActionStatus::Succeeded, true),
            action("b:build".into(), ActionStatus::Succeeded, false),
        ]);
        let summary = report.summary();
        assert_eq!(summary.omitted, 0);
        assert_eq!(summary.hint, None);
        let names: Vec<&str> = summary.actions.iter().map(|a| a.action.as_str()).collect();
        assert_eq!(names, ["b:build", "a:build"]);
    }

    #[test]
    fn pages_cover_every_action_once() {
        let report = report(
            (0..45)
                .map(|i| action(format!("t{i}:build"), ActionStatus::Succeeded, true))
                .collect(),
        );
        let mut seen = Vec::new();
        let mut offset = Some(0);
        while let Some(at) = offset {
            let page = report.page(at, 20);
            assert_eq!(page.total_actions, 45);
            seen.extend(page.actions.into_iter().map(|a| a.action));
            offset = page.next_offset;
        }
        let all: Vec<String> = report.actions.iter().map(|a| a.action.clone()).collect();
        assert_eq!(seen, all);
        assert!(report.page(100, 20).actions.is_empty());
    }
}
