//! What each target's evaluator was asked and what came back, for a person to read beside the
//! agent: the last [`ENTRIES`] calls per target, each cut to a bounded size.
//!
//! A transcript lives in memory only, as long as its [`Evaluators`](crate::Evaluators); this
//! module must never write it anywhere, and never hold more than [`ENTRIES`] entries of at most
//! [`CODE_BYTES`] of code and [`TEXT_BYTES`] of each value, error and output per target.

use std::collections::VecDeque;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::error::Error;
use crate::evaluation::{Evaluation, Status};
use crate::spec::Language;

/// The most entries kept per target; older ones are dropped first.
pub const ENTRIES: usize = 50;
/// The most bytes of an entry's code.
pub const CODE_BYTES: usize = 4 * 1024;
/// The most bytes of an entry's value, error and output, each.
pub const TEXT_BYTES: usize = 16 * 1024;

/// What came of one call, in the words `once_eval` answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryOutcome {
    /// The code ran to the end.
    Done,
    /// The code raised, timed out, was cancelled, or no evaluator could be had.
    Problem,
    /// Another call held the evaluator; nothing ran.
    Busy,
    /// The code was empty; nothing ran.
    None,
}

/// One call of a target's evaluator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TranscriptEntry {
    /// When the call ended, in milliseconds since the Unix epoch.
    pub at: u64,
    /// The code, cut at [`CODE_BYTES`].
    pub code: String,
    pub outcome: EntryOutcome,
    /// How the evaluation ended, when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// The last expression's value, cut at [`TEXT_BYTES`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The exception, what interrupted the code, or why nothing ran; cut at [`TEXT_BYTES`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What the code printed, stdout then stderr, cut at [`TEXT_BYTES`].
    pub output: String,
    /// True when any of the above was cut.
    pub truncated: bool,
}

impl TranscriptEntry {
    /// The entry of a call that produced `result`.
    pub(crate) fn of(code: &str, result: &Result<Evaluation, Error>) -> TranscriptEntry {
        let mut entry = TranscriptEntry {
            at: now_ms(),
            code: String::new(),
            outcome: EntryOutcome::Problem,
            status: None,
            value: None,
            error: None,
            output: String::new(),
            truncated: false,
        };
        entry.code = entry.cut(code, CODE_BYTES);
        match result {
            Ok(evaluation) => {
                entry.outcome = if evaluation.status == Status::Ok {
                    EntryOutcome::Done
                } else {
                    EntryOutcome::Problem
                };
                entry.status = Some(evaluation.status);
                entry.value = evaluation
                    .value
                    .as_deref()
                    .map(|value| entry.cut(value, TEXT_BYTES));
                let error = evaluation.error.as_deref().or(evaluation.notice.as_deref());
                entry.error = error.map(|error| entry.cut(error, TEXT_BYTES));
                let output = format!("{}{}", evaluation.stdout, evaluation.stderr);
                entry.output = entry.cut(&output, TEXT_BYTES);
            }
            Err(error) => {
                entry.outcome = match error {
                    Error::Busy { .. } => EntryOutcome::Busy,
                    Error::Empty { .. } => EntryOutcome::None,
                    _ => EntryOutcome::Problem,
                };
                entry.error = Some(entry.cut(&error.to_string(), TEXT_BYTES));
            }
        }
        entry
    }

    /// The first `limit` bytes of `text` (on a character boundary), noting a cut.
    fn cut(&mut self, text: &str, limit: usize) -> String {
        if text.len() <= limit {
            return text.to_owned();
        }
        self.truncated = true;
        let mut end = limit;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text[..end].to_owned()
    }
}

/// One target's transcript, as [`Evaluators::transcripts`](crate::Evaluators::transcripts)
/// shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EvaluatorTranscript {
    pub target: String,
    pub language: Language,
    /// Whether an evaluator process or nREPL session is live now.
    pub running: bool,
    /// Whether a call is evaluating now (another one would be answered busy).
    pub evaluating: bool,
    /// The live Python or Node.js evaluator's process id.
    pub pid: Option<u32>,
    /// Oldest first.
    pub entries: Vec<TranscriptEntry>,
}

/// The bounded list of one target's entries.
#[derive(Debug, Default)]
pub(crate) struct Transcript {
    entries: VecDeque<TranscriptEntry>,
}

impl Transcript {
    pub(crate) fn push(&mut self, entry: TranscriptEntry) {
        if self.entries.len() == ENTRIES {
            self.entries.pop_front();
        }
        self.entries.push_back(entry);
    }

    pub(crate) fn entries(&self) -> Vec<TranscriptEntry> {
        self.entries.iter().cloned().collect()
    }

    /// How many entries there are and when the newest ended: changes with every push.
    pub(crate) fn stamp(&self) -> (usize, u64) {
        (
            self.entries.len(),
            self.entries.back().map_or(0, |entry| entry.at),
        )
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evaluation(value: &str, stdout: &str) -> Evaluation {
        Evaluation {
            target: "t".into(),
            language: Language::Python,
            status: Status::Ok,
            value: Some(value.into()),
            stdout: stdout.into(),
            stderr: String::new(),
            error: None,
            state_lost: false,
            notice: None,
            elapsed_ms: 1,
        }
    }

    #[test]
    fn entries_are_cut_and_say_so() {
        let code = "x".repeat(CODE_BYTES + 1);
        let entry =
            TranscriptEntry::of(&code, &Ok(evaluation("é".repeat(TEXT_BYTES).as_str(), "")));
        assert_eq!(entry.code.len(), CODE_BYTES);
        assert!(entry.value.as_ref().is_some_and(|v| v.len() <= TEXT_BYTES));
        assert!(entry.truncated);
        assert_eq!(entry.outcome, EntryOutcome::Done);

        let small = TranscriptEntry::of("1", &Ok(evaluation("1", "out\n")));
        assert!(!small.truncated);
        assert_eq!(small.output, "out\n");
        let json = serde_json::to_value(&small).expect("serializes");
        assert_eq!(json["outcome"], "done");
        assert_eq!(json["status"], "ok");
        assert!(json.get("error").is_none());
    }

    #[test]
    fn errors_become_busy_none_or_problem() {
        let busy = Error::Busy {
            target: "t".into(),
            seconds: 3,
            stopping: false,
        };
        assert_eq!(
            TranscriptEntry::of("1", &Err(busy)).outcome,
            EntryOutcome::Busy
        );
        let empty = Error::Empty { target: "t".into() };
        assert_eq!(
            TranscriptEntry::of(" ", &Err(empty)).outcome,
            EntryOutcome::None
        );
        let problem = TranscriptEntry::of("1", &Err(Error::ShuttingDown));
        assert_eq!(problem.outcome, EntryOutcome::Problem);
        assert!(problem.error.is_some_and(|e| e.contains("shutting down")));
    }

    #[test]
    fn a_transcript_keeps_the_last_entries() {
        let mut transcript = Transcript::default();
        for n in 0..ENTRIES + 7 {
            transcript.push(TranscriptEntry::of(
                &n.to_string(),
                &Err(Error::ShuttingDown),
            ));
        }
        let entries = transcript.entries();
        assert_eq!(entries.len(), ENTRIES);
        assert_eq!(entries[0].code, "7");
        assert_eq!(entries[ENTRIES - 1].code, (ENTRIES + 6).to_string());
    }
}
