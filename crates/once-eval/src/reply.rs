//! The wire format between `once` and an embedded adapter: one JSON object per line each way.
//!
//! A request is `{"id", "code", "cap"}`; a reply is `{"id", "status", "value", "error",
//! "stdout", "stderr", "marker"}`. While the code runs, the adapter may send `{"id", "output"}`
//! lines: the latest output printed (at most a few KB, at most every 100 ms), for progress. This module must never be told about processes: it only
//! shapes and reads lines, so the adapters and this file can be checked against each other.

use serde::Deserialize;
use serde_json::json;

/// How an adapter says the code ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ReplyStatus {
    Ok,
    Error,
    Interrupted,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Reply {
    pub id: u64,
    pub status: ReplyStatus,
    #[serde(default)]
    pub value: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub stdout: String,
    #[serde(default)]
    pub stderr: String,
    /// Whether the adapter wrote the end marker to descriptor 1 before this reply.
    #[serde(default)]
    pub marker: bool,
}

/// One request line, newline included.
pub(crate) fn request(id: u64, code: &str, cap: usize) -> Vec<u8> {
    let mut line = json!({"id": id, "code": code, "cap": cap}).to_string();
    line.push('\n');
    line.into_bytes()
}

/// Reads one output line of an evaluation in flight: its id and the text.
pub(crate) fn parse_output(line: &str) -> Option<(u64, String)> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Output {
        id: u64,
        output: String,
    }
    let output: Output = serde_json::from_str(line).ok()?;
    Some((output.id, output.output))
}

/// Reads one reply line; `None` when it is not a reply (the adapter is then unusable).
pub(crate) fn parse(line: &str) -> Option<Reply> {
    serde_json::from_str(line).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_one_line_and_replies_read_back() {
        let line = request(7, "print('a\\nb')\n1", 10);
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        let reply = parse(
            r#"{"id":7,"status":"interrupted","value":null,"error":"KeyboardInterrupt","stdout":"x","stderr":"","marker":true}"#,
        )
        .unwrap();
        assert_eq!(reply.id, 7);
        assert_eq!(reply.status, ReplyStatus::Interrupted);
        assert_eq!(reply.stdout, "x");
        assert!(parse("not json").is_none());
        assert_eq!(
            parse_output(r#"{"id":7,"output":"so far"}"#),
            Some((7, "so far".to_owned()))
        );
        assert!(parse(r#"{"id":7,"output":"so far"}"#).is_none());
    }
}
