//! The result of one evaluation: the value shape both doors (CLI `--json`, MCP `once_eval`) show.
//!
//! Every way an evaluation can end is a [`Status`] here, with the evaluator's fate spelled out in
//! `state_lost` and `notice`; this module must never hide a restart: whenever earlier state is
//! gone, `state_lost` is true and `notice` says why in a sentence a person can act on.

use serde::Serialize;
use serde_json::{Value, json};

use crate::spec::Language;

/// How an evaluation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The code ran to the end; `value` holds its last expression's value, if any.
    Ok,
    /// The code raised; `error` holds the exception and its traceback.
    Error,
    /// The deadline passed; the code was interrupted (or its evaluator killed, see `state_lost`).
    TimedOut,
    /// The caller cancelled; the code was interrupted (or its evaluator killed).
    Cancelled,
    /// The evaluator died while the code ran (it exited, crashed, or was killed from outside).
    Died,
    /// `once` is shutting down and stopped the evaluator.
    Stopped,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Error => "error",
            Status::TimedOut => "timed_out",
            Status::Cancelled => "cancelled",
            Status::Died => "died",
            Status::Stopped => "stopped",
        }
    }
}

/// One evaluation's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Evaluation {
    pub target: String,
    pub language: Language,
    pub status: Status,
    /// The last expression's value as the language's REPL would print it; `None` when the code
    /// ended with a statement or the value is `None`/`undefined`.
    pub value: Option<String>,
    /// What the code printed to stdout (and, at the end, what its subprocesses wrote to the
    /// evaluator's file descriptors).
    pub stdout: String,
    pub stderr: String,
    /// The exception with its traceback, or what interrupted the code.
    pub error: Option<String>,
    /// True when the evaluator's earlier state (variables, imports, definitions) is gone.
    pub state_lost: bool,
    /// What happened to the evaluator, in plain words, when anything did.
    pub notice: Option<String>,
    pub elapsed_ms: u64,
}

impl Evaluation {
    /// JSON Schema (2020-12) of the value, for the MCP tool's `outputSchema`.
    pub fn schema() -> Value {
        let text = |description: &str| json!({"type": "string", "description": description});
        let nullable = |description: &str| json!({"anyOf": [{"type": "string"}, {"type": "null"}], "description": description});
        json!({
            "type": "object",
            "properties": {
                "target": text("The target whose evaluator ran the code"),
                "language": {"type": "string", "enum": ["python", "node", "nrepl"]},
                "status": {
                    "type": "string",
                    "enum": ["ok", "error", "timed_out", "cancelled", "died", "stopped"],
                    "description": "ok: ran to the end; error: raised (see error); timed_out / cancelled: interrupted (see state_lost); died: the evaluator died mid-evaluation; stopped: once is shutting down"
                },
                "value": nullable("The last expression's value as the REPL prints it"),
                "stdout": text("What the code printed"),
                "stderr": text("What the code printed to stderr"),
                "error": nullable("The exception with its traceback"),
                "state_lost": {"type": "boolean", "description": "True when earlier variables, imports and definitions are gone"},
                "notice": nullable("What happened to the evaluator, when anything did"),
                "elapsed_ms": {"type": "integer"},
            },
            "required": ["target", "language", "status", "value", "stdout", "stderr", "error", "state_lost", "notice", "elapsed_ms"],
            "additionalProperties": false,
        })
    }
}
