//! The report of a run: the one shape that `once run --json` prints, that `run.json` holds and
//! that the MCP tool `once_run` returns.
//!
//! It is a public contract (snake_case, durations in milliseconds) and must stay bounded: only
//! a failed action carries output, and only the tail of its log; everything else is a log path.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

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
}

/// How one action ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionStatus {
    Succeeded,
    Failed,
    TimedOut,
    Cancelled,
    /// Not started: a dependency failed, or the run stopped first.
    Skipped,
}

impl ActionStatus {
    pub fn is_failure(self) -> bool {
        matches!(self, ActionStatus::Failed | ActionStatus::TimedOut)
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub total: usize,
    /// Actions whose command ran (whatever the result).
    pub ran: usize,
    /// Actions replayed from the cache.
    pub cached: usize,
    /// Failed or timed out.
    pub failed: usize,
    pub skipped: usize,
}

/// One action of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionReport {
    /// `target:capability`.
    pub action: String,
    pub status: ActionStatus,
    /// Replayed from the cache: nothing ran.
    pub cached: bool,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    /// The full log, when the command ran.
    pub log: Option<PathBuf>,
    /// Only for a failed action: the last lines of its log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail: Option<Vec<String>>,
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
    /// In plan order: dependencies first.
    pub actions: Vec<ActionReport>,
}

impl RunReport {
    /// The status and counts that follow from `actions`.
    pub(crate) fn summarise(actions: &[ActionReport], cancelled: bool) -> (RunStatus, Counts) {
        let mut counts = Counts {
            total: actions.len(),
            ..Counts::default()
        };
        for action in actions {
            if action.cached {
                counts.cached += 1;
            } else if action.status != ActionStatus::Skipped {
                counts.ran += 1;
            }
            if action.status.is_failure() {
                counts.failed += 1;
            }
            if action.status == ActionStatus::Skipped {
                counts.skipped += 1;
            }
        }
        let any = |status| actions.iter().any(|a| a.status == status);
        let status = if cancelled || any(ActionStatus::Cancelled) {
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
}
