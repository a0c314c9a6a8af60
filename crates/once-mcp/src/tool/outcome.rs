//! What came of a call of a tool that acts: one of five words, a one-line message, and the
//! tool's value when it has one.
//!
//! An agent that ran, cancelled, evaluated, proposed or wrote something must be able to branch
//! on what happened without parsing prose: `done` (it did what was asked), `refused` (a gate, a
//! stale revision, a path or an argument said no), `busy` (the resource is in use; the message
//! says by whom), `problem` (it ran and failed) or `none` (there was nothing to do). A tool that
//! acts has a handler that can only return an [`Answer`], so no return path can leave the word
//! out. This module must never know about JSON-RPC framing; the server shapes an answer for the
//! wire.

use serde_json::{Value, json};

/// The longest message; what is longer is cut. Messages quote arguments and library errors,
/// and one that quotes a huge argument must not make a huge answer.
pub const MESSAGE_BYTES: usize = 2000;

/// The five words an acting tool answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// It did what was asked.
    Done,
    /// A gate is closed, a revision or base is stale, a path is not allowed, an argument is wrong.
    Refused,
    /// The resource is in use; the message says by whom.
    Busy,
    /// It ran and failed: a command failed, an evaluation raised.
    Problem,
    /// There was nothing to do.
    None,
}

impl Outcome {
    /// Every word, in the order the output schema lists them.
    pub const ALL: [Outcome; 5] = [
        Outcome::Done,
        Outcome::Refused,
        Outcome::Busy,
        Outcome::Problem,
        Outcome::None,
    ];

    /// The wire word.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Done => "done",
            Outcome::Refused => "refused",
            Outcome::Busy => "busy",
            Outcome::Problem => "problem",
            Outcome::None => "none",
        }
    }

    /// Whether the result carries `isError: true`: the call did not do what was asked, and not
    /// because there was nothing to do.
    pub fn is_error(self) -> bool {
        matches!(self, Outcome::Refused | Outcome::Busy | Outcome::Problem)
    }
}

/// The answer of a tool that acts. Built with one constructor per word; the message is made one
/// line (a library's multi-line error keeps its lines, joined by `; `), without a trailing
/// period, and cut at [`MESSAGE_BYTES`].
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    outcome: Outcome,
    message: String,
    result: Option<Value>,
}

impl Answer {
    fn new(outcome: Outcome, message: impl Into<String>) -> Answer {
        Answer {
            outcome,
            message: one_line(&message.into()),
            result: None,
        }
    }

    /// It did what was asked.
    pub fn done(message: impl Into<String>) -> Answer {
        Answer::new(Outcome::Done, message)
    }

    /// A gate, a stale revision, a path or an argument said no.
    pub fn refused(message: impl Into<String>) -> Answer {
        Answer::new(Outcome::Refused, message)
    }

    /// The resource is in use; say by whom and what to do.
    pub fn busy(message: impl Into<String>) -> Answer {
        Answer::new(Outcome::Busy, message)
    }

    /// It ran and failed; say what failed.
    pub fn problem(message: impl Into<String>) -> Answer {
        Answer::new(Outcome::Problem, message)
    }

    /// There was nothing to do.
    pub fn none(message: impl Into<String>) -> Answer {
        Answer::new(Outcome::None, message)
    }

    /// The same answer carrying the tool's value, which must match its output schema.
    #[must_use]
    pub fn with_result(mut self, value: Value) -> Answer {
        self.result = Some(value);
        self
    }

    /// The word.
    pub fn outcome(&self) -> Outcome {
        self.outcome
    }

    /// The one-line message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The tool's value, when the answer has one.
    pub fn result(&self) -> Option<&Value> {
        self.result.as_ref()
    }

    /// `structuredContent`: `{outcome, message, result?}`.
    pub fn structured(&self) -> Value {
        let mut object = json!({"outcome": self.outcome.as_str(), "message": self.message});
        if let (Some(result), Value::Object(map)) = (&self.result, &mut object) {
            map.insert("result".into(), result.clone());
        }
        object
    }

    /// The text content: `word: message`, then the value's JSON on the next line when there is
    /// one, so a client that shows only text still reads the word first.
    pub fn text(&self) -> String {
        let mut text = format!("{}: {}", self.outcome.as_str(), self.message);
        if let Some(result) = &self.result {
            text.push('\n');
            text.push_str(&result.to_string());
        }
        text
    }
}

impl From<Result<Answer, Answer>> for Answer {
    /// Lets a handler written as `-> Result<Answer, Answer>` use `?` on its early refusals.
    fn from(result: Result<Answer, Answer>) -> Answer {
        result.unwrap_or_else(|answer| answer)
    }
}

/// The output schema of a tool that acts: the answer's object, with the tool's value schema
/// under `result`.
pub fn answer_output_schema(value_schema: &Value) -> Value {
    let words: Vec<&str> = Outcome::ALL.iter().map(|o| o.as_str()).collect();
    json!({
        "type": "object",
        "properties": {
            "outcome": {
                "type": "string",
                "enum": words,
                "description": "What came of the call: done, refused (fix and call again), busy (in use; see message), problem (it ran and failed), none (nothing to do)",
            },
            "message": {"type": "string", "description": "One line that says what happened"},
            "result": value_schema,
        },
        "required": ["outcome", "message"],
        "additionalProperties": false,
    })
}

/// `text` as one line: its non-blank lines trimmed and joined by `; `, without a trailing period,
/// cut at [`MESSAGE_BYTES`] on a character boundary.
fn one_line(text: &str) -> String {
    let mut line = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    if line.len() > MESSAGE_BYTES {
        let mut end = MESSAGE_BYTES;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        let cut = line.len() - end;
        line.truncate(end);
        line.push_str(&format!("… ({cut} more bytes cut)"));
    }
    // An ellipsis is not a sentence's end; a single full stop is.
    if line.ends_with('.') && !line.ends_with("..") {
        line.pop();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_line_without_a_full_stop() {
        let answer = Answer::problem("cannot start:\n  Traceback\n\n  NameError: x.\n");
        assert_eq!(answer.message(), "cannot start:; Traceback; NameError: x");
        assert_eq!(answer.outcome(), Outcome::Problem);
        let long = Answer::refused("é".repeat(MESSAGE_BYTES));
        assert!(long.message().len() < MESSAGE_BYTES + 40);
        assert!(long.message().ends_with("more bytes cut)"));
    }

    #[test]
    fn the_text_starts_with_the_word_and_carries_the_value() {
        let answer = Answer::done("ran 4 actions, 3 cached").with_result(json!({"run_id": "r"}));
        assert_eq!(
            answer.text(),
            "done: ran 4 actions, 3 cached\n{\"run_id\":\"r\"}"
        );
        assert_eq!(
            answer.structured(),
            json!({"outcome": "done", "message": "ran 4 actions, 3 cached", "result": {"run_id": "r"}})
        );
        let none = Answer::none("nothing to cancel");
        assert_eq!(none.text(), "none: nothing to cancel");
        assert_eq!(
            none.structured(),
            json!({"outcome": "none", "message": "nothing to cancel"})
        );
    }

    #[test]
    fn only_refused_busy_and_problem_are_errors() {
        let errors: Vec<&str> = Outcome::ALL
            .iter()
            .filter(|o| o.is_error())
            .map(|o| o.as_str())
            .collect();
        assert_eq!(errors, ["refused", "busy", "problem"]);
    }
}
