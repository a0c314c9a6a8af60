//! The wire codec of the stdio transport: newline-delimited JSON.
//!
//! It splits a byte stream into lines (with a size cap that never buffers an
//! oversized line whole), decodes one line into a JSON value and encodes one
//! value into exactly one line. It knows nothing about JSON-RPC or MCP, and it
//! must never write anything anywhere: callers decide what to do with errors.

use std::io::{self, BufRead};

use serde_json::Value;

/// The default cap on one incoming line (64 MiB): large enough for any sane
/// tool argument, small enough that a runaway peer cannot exhaust memory.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Why one line could not be turned into a JSON value.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    /// The bytes are not UTF-8; JSON text must be (RFC 8259 §8.1).
    #[error("the message is not valid UTF-8 (first bad byte at offset {0})")]
    InvalidUtf8(usize),
    /// The text is not one JSON value.
    #[error("the message is not valid JSON: {0}")]
    InvalidJson(String),
    /// The text is JSON (RFC 8259 lets a string escape a lone UTF-16 surrogate), but such a
    /// string is no Unicode text, which every value we hand on must be. `lenient` is the value
    /// with each lone surrogate read as U+FFFD, so the caller can tell whose message it was.
    #[error(
        "the message holds a lone UTF-16 surrogate escape (`{escape}` at byte {offset}), which is no Unicode character"
    )]
    LoneSurrogate {
        escape: String,
        offset: usize,
        lenient: Box<Value>,
    },
}

/// Whether a line carries nothing but whitespace; such lines are skipped so a
/// client that pads its output (or ends lines with `\r\n`) is not punished.
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// Decodes one line (without or with its trailing `\n` / `\r\n`) into a value.
///
/// serde_json joins UTF-16 surrogate-pair escapes into the real character and
/// rejects lone surrogates, so every decoded string is valid Unicode. A line that
/// fails only because of lone surrogates is read a second time with each of them
/// as U+FFFD, and comes back as [`DecodeError::LoneSurrogate`] carrying that value.
pub fn decode_line(line: &[u8]) -> Result<Value, DecodeError> {
    let text = std::str::from_utf8(line).map_err(|e| DecodeError::InvalidUtf8(e.valid_up_to()))?;
    serde_json::from_str(text).map_err(|error| {
        let invalid = DecodeError::InvalidJson(error.to_string());
        let Some((replaced, offset)) = replace_lone_surrogates(text) else {
            return invalid;
        };
        match serde_json::from_str(&replaced) {
            Ok(lenient) => DecodeError::LoneSurrogate {
                escape: text[offset..offset + 6].to_owned(),
                offset,
                lenient: Box::new(lenient),
            },
            Err(_) => invalid,
        }
    })
}

/// `text` with every `\uXXXX` escape of a surrogate that is not half of a pair replaced by
/// `\ufffd`, and the byte offset of the first; `None` when there is none. Backslashes occur
/// only inside strings in JSON, so no string state is needed: an escaped backslash is skipped
/// as a pair, so `\\ud800` (a backslash, then the letters) is left as it is.
fn replace_lone_surrogates(text: &str) -> Option<(String, usize)> {
    let bytes = text.as_bytes();
    let unit = |at: usize| -> Option<u16> {
        let digits = bytes.get(at..at + 6)?;
        if digits[0] != b'\\' || digits[1] != b'u' {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(&digits[2..]).ok()?, 16).ok()
    };
    let (mut out, mut first, mut copied, mut i) = (String::new(), None, 0, 0);
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        let Some(code) = unit(i) else {
            // Some other escape: skip it whole, so its second byte is never read as a start.
            i += 2;
            continue;
        };
        let high = (0xD800..0xDC00).contains(&code);
        let low_follows = unit(i + 6).is_some_and(|next| (0xDC00..0xE000).contains(&next));
        if high && low_follows {
            i += 12;
        } else if (0xD800..0xE000).contains(&code) {
            out.push_str(&text[copied..i]);
            out.push_str("\\ufffd");
            first.get_or_insert(i);
            i += 6;
            copied = i;
        } else {
            i += 6;
        }
    }
    let first = first?;
    out.push_str(&text[copied..]);
    Some((out, first))
}

/// Encodes one value as one line, `\n` included.
///
/// serde_json's compact form escapes control characters inside strings and
/// puts no whitespace between tokens, so the line can never contain an
/// embedded newline that would split the message on the wire.
pub fn encode_line(value: &Value) -> Vec<u8> {
    // Serialising a `Value` cannot fail (its map keys are always strings); the
    // fallback only exists so that this function has no panic path.
    let mut bytes = serde_json::to_vec(value).unwrap_or_else(|_| {
        br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error: unserialisable reply"}}"#
            .to_vec()
    });
    bytes.push(b'\n');
    bytes
}

/// One unit read off the wire.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete line, without its `\n`.
    Line(Vec<u8>),
    /// A line longer than the cap; its bytes were skipped, not kept.
    TooLong {
        /// How many bytes the line had (its `\n` excluded).
        length: usize,
    },
}

/// Splits a reader into lines, enforcing a per-line cap.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    max_line_bytes: usize,
}

impl<R: BufRead> LineReader<R> {
    /// Wraps `inner`; lines longer than `max_line_bytes` become [`Frame::TooLong`].
    pub fn new(inner: R, max_line_bytes: usize) -> Self {
        Self {
            inner,
            max_line_bytes,
        }
    }

    /// Reads the next line; `Ok(None)` at end of input. A last line without a
    /// trailing newline is still returned, since a peer may close right after it.
    pub fn next_frame(&mut self) -> io::Result<Option<Frame>> {
        let mut line = Vec::new();
        let mut length = 0usize;
        let mut overflow = false;
        loop {
            let available = match self.inner.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                if length == 0 && line.is_empty() {
                    return Ok(None);
                }
                break;
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let chunk = &available[..newline.unwrap_or(available.len())];
            length += chunk.len();
            // Once over the cap we stop keeping bytes but keep consuming them,
            // so we resynchronise at the next newline with bounded memory.
            if !overflow {
                if length > self.max_line_bytes {
                    overflow = true;
                    line = Vec::new();
                } else {
                    line.extend_from_slice(chunk);
                }
            }
            let consumed = chunk.len() + usize::from(newline.is_some());
            self.inner.consume(consumed);
            if newline.is_some() {
                break;
            }
        }
        if overflow {
            Ok(Some(Frame::TooLong { length }))
        } else {
            Ok(Some(Frame::Line(line)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn surrogate_pairs_become_the_real_character() {
        let value = decode_line(br#"{"s":"\ud83d\ude00"}"#).unwrap();
        assert_eq!(value, json!({"s": "😀"}));
    }

    #[test]
    fn lone_surrogates_are_rejected_with_the_value_read_leniently() {
        let lone = |line: &[u8]| match decode_line(line) {
            Err(DecodeError::LoneSurrogate {
                escape,
                offset,
                lenient,
            }) => (escape, offset, *lenient),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            lone(br#"{"s":"\ud83d"}"#),
            ("\\ud83d".to_owned(), 6, json!({"s": "\u{fffd}"}))
        );
        assert_eq!(
            lone(br#"{"id":1,"s":"\ude00x\ud83d\ude00\ud800\u0041"}"#),
            (
                "\\ude00".to_owned(),
                13,
                json!({"id": 1, "s": "\u{fffd}x😀\u{fffd}A"})
            )
        );
        // An escaped backslash before `ud800` is no escape of a surrogate.
        assert_eq!(
            decode_line(br#"{"s":"\\ud800"}"#).unwrap(),
            json!({"s": "\\ud800"})
        );
        // Broken JSON stays a parse error, lone surrogate or not.
        assert!(matches!(
            decode_line(br#"{"s":"\ud800"#),
            Err(DecodeError::InvalidJson(_))
        ));
    }

    #[test]
    fn invalid_utf8_is_rejected() {
        assert_eq!(
            decode_line(b"{\"s\":\"\xff\"}"),
            Err(DecodeError::InvalidUtf8(6))
        );
    }

    #[test]
    fn crlf_and_blank_lines() {
        assert_eq!(decode_line(b"{}\r").unwrap(), json!({}));
        assert!(is_blank(b" \t\r"));
        assert!(is_blank(b""));
        assert!(!is_blank(b" {} "));
    }

    #[test]
    fn encoding_is_one_line() {
        let line = encode_line(&json!({"text": "a\nb\r\u{2028}"}));
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        assert_eq!(line.last(), Some(&b'\n'));
    }

    #[test]
    fn reader_splits_and_caps_lines() {
        let input = b"short\nthis line is too long\n\nlast".to_vec();
        // A tiny BufReader capacity forces the line to span many fill_buf calls.
        let reader = std::io::BufReader::with_capacity(3, &input[..]);
        let mut lines = LineReader::new(reader, 8);
        assert_eq!(
            lines.next_frame().unwrap(),
            Some(Frame::Line(b"short".to_vec()))
        );
        assert_eq!(
            lines.next_frame().unwrap(),
            Some(Frame::TooLong { length: 21 })
        );
        assert_eq!(lines.next_frame().unwrap(), Some(Frame::Line(Vec::new())));
        assert_eq!(
            lines.next_frame().unwrap(),
            Some(Frame::Line(b"last".to_vec()))
        );
        assert_eq!(lines.next_frame().unwrap(), None);
    }
}
