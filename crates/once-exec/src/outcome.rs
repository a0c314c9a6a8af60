//! What a run produced: how it ended, when, for how long, and the last lines it wrote.
//!
//! These shapes are serialised for the CLI and for agents, so field and variant names are a
//! public contract (snake_case, durations in milliseconds). This module must never reach for
//! processes or files: it is the value, not the run.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Status {
    /// The leader exited by itself with this code.
    Exited { code: i32 },
    /// The leader was killed by this signal, not by us.
    Signaled { signal: i32 },
    /// The deadline passed and the group was stopped.
    TimedOut,
    /// A [`Cancel`](crate::Cancel) token or [`Registry::stop_all`](crate::Registry::stop_all)
    /// stopped the group.
    Cancelled,
    /// `sh` could not be started, for instance because the working directory is missing.
    FailedToStart { message: String },
}

/// The result of one [`run`](crate::run).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    pub status: Status,
    /// When the run started, in milliseconds since the Unix epoch.
    pub started_at: u64,
    /// Wall time from spawn to the end of capture.
    #[serde(rename = "duration_ms", with = "millis")]
    pub duration: Duration,
    /// The log; absent when the command printed nothing (`log_bytes` is 0).
    pub log_path: PathBuf,
    /// The last lines of stdout and stderr, interleaved in arrival order.
    pub tail: Vec<String>,
    /// Bytes written to the log.
    pub log_bytes: u64,
}

impl Outcome {
    /// True only when the command exited with code 0.
    pub fn success(&self) -> bool {
        self.status == Status::Exited { code: 0 }
    }
}

/// A duration as whole milliseconds, which is what a person or an agent reads.
mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        u64::deserialize(deserializer).map(Duration::from_millis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_in_snake_case_with_milliseconds() {
        let outcome = Outcome {
            status: Status::TimedOut,
            started_at: 1,
            duration: Duration::from_millis(1500),
            log_path: PathBuf::from("/tmp/x.log"),
            tail: vec!["a".into()],
            log_bytes: 2,
        };
        let json = serde_json::to_value(&outcome).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "status": {"kind": "timed_out"},
                "started_at": 1,
                "duration_ms": 1500,
                "log_path": "/tmp/x.log",
                "tail": ["a"],
                "log_bytes": 2,
            })
        );
        let back: Outcome = serde_json::from_value(json).unwrap();
        assert_eq!(back, outcome);
        let failed = serde_json::to_value(Status::FailedToStart {
            message: "m".into(),
        })
        .unwrap();
        assert_eq!(
            failed,
            serde_json::json!({"kind": "failed_to_start", "message": "m"})
        );
    }

    #[test]
    fn only_exit_zero_is_success() {
        let with = |status| Outcome {
            status,
            started_at: 0,
            duration: Duration::ZERO,
            log_path: PathBuf::new(),
            tail: Vec::new(),
            log_bytes: 0,
        };
        assert!(with(Status::Exited { code: 0 }).success());
        assert!(!with(Status::Exited { code: 1 }).success());
        assert!(!with(Status::Signaled { signal: 9 }).success());
        assert!(!with(Status::Cancelled).success());
    }
}
