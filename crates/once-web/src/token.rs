//! The secrets of a session: its token, which proves a connection comes from the person who owns
//! the session, and the window's login, page key and CSRF secrets, drawn the same way.
//!
//! A session draws 128 bits from the kernel's CSPRNG when it starts and writes them, as hex, into
//! its registry file, which only its owner can read. A client presents the token as the first
//! line of a connection, `{"once_token":"<32 hex digits>"}`, and the listener compares it in
//! constant time. This module must never log or print a token, and never compare one with `==`.

use std::fmt;
use std::io;

/// Bytes of entropy in a token.
const TOKEN_BYTES: usize = 16;

/// A session's token.
#[derive(Clone, Eq)]
pub struct Token([u8; TOKEN_BYTES]);

impl PartialEq for Token {
    /// `==` is [`Token::matches`]: a derived comparison would stop at the first differing byte.
    fn eq(&self, other: &Token) -> bool {
        self.matches(other)
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A token in a log is a token given away.
        f.write_str("Token(…)")
    }
}

impl Token {
    /// A fresh token from the platform's CSPRNG (`getrandom(2)` on Linux), which blocks only
    /// until the kernel's pool is seeded once after boot, and never returns predictable bytes.
    pub fn generate() -> io::Result<Token> {
        let mut bytes = [0u8; TOKEN_BYTES];
        getrandom::fill(&mut bytes).map_err(io::Error::other)?;
        Ok(Token(bytes))
    }

    /// Parses 32 hex digits (either case); anything else is `None`.
    pub fn from_hex(text: &str) -> Option<Token> {
        let digits = text.as_bytes();
        if digits.len() != TOKEN_BYTES * 2 {
            return None;
        }
        let mut bytes = [0u8; TOKEN_BYTES];
        let (pairs, _) = digits.as_chunks::<2>();
        for (byte, &[high, low]) in bytes.iter_mut().zip(pairs) {
            *byte = (hex_value(high)? << 4) | hex_value(low)?;
        }
        Some(Token(bytes))
    }

    /// The 32 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|byte| format!("{byte:02x}")).collect()
    }

    /// Whether `presented` is this token, in time that does not depend on where they differ,
    /// so a local attacker cannot learn it a byte at a time from response times.
    pub fn matches(&self, presented: &Token) -> bool {
        constant_time_eq::constant_time_eq_16(&self.0, &presented.0)
    }

    /// The first line a client sends, without its newline.
    pub fn line(&self) -> String {
        format!("{{\"once_token\":\"{}\"}}", self.to_hex())
    }

    /// Reads the token out of a first line; `None` when the line is not exactly that object.
    pub fn from_line(line: &[u8]) -> Option<Token> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct FirstLine {
            once_token: String,
        }
        let first: FirstLine = serde_json::from_slice(line).ok()?;
        Token::from_hex(&first.once_token)
    }
}

/// The value of one hex digit (either case).
pub(crate) fn hex_value(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        b'A'..=b'F' => Some(digit - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_fresh_and_survive_hex() {
        let a = Token::generate().expect("a token");
        let b = Token::generate().expect("a token");
        assert_ne!(a, b, "two tokens drawn from the CSPRNG are equal");
        assert_eq!(a.to_hex().len(), 32);
        assert_eq!(Token::from_hex(&a.to_hex()), Some(a.clone()));
        assert_eq!(Token::from_hex(&a.to_hex().to_uppercase()), Some(a));
    }

    #[test]
    fn matching_tells_every_differing_byte() {
        let token = Token::from_hex("00112233445566778899aabbccddeeff").expect("hex");
        assert!(token.matches(&token.clone()));
        for position in 0..TOKEN_BYTES {
            let mut other = token.0;
            other[position] ^= 1;
            assert!(!token.matches(&Token(other)), "byte {position}");
        }
    }

    #[test]
    fn the_first_line_is_one_exact_object() {
        let token = Token::generate().expect("a token");
        assert_eq!(
            Token::from_line(token.line().as_bytes()),
            Some(token.clone())
        );
        for bad in [
            "",
            "{}",
            r#"{"once_token":"abc"}"#,
            r#"{"once_token":"00112233445566778899aabbccddeefg"}"#,
            r#"{"once_token":"00112233445566778899aabbccddeeff","x":1}"#,
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize"}"#,
            "GET / HTTP/1.1",
        ] {
            assert_eq!(Token::from_line(bad.as_bytes()), None, "{bad}");
        }
        assert!(!format!("{token:?}").contains(&token.to_hex()));
    }
}
