//! Where a byte of a string's value sits in its TOML literal, so a diagnostic about a command
//! can point at the very placeholder even when the string has escapes (`\"`, `\n`, `\u00e9`)
//! or is a multi-line string.
//!
//! It re-decodes the literal and trusts the answer only if the decoding gives back exactly
//! the value the TOML parser produced; it must never be used to read values.

/// The offset in `raw` (the literal with its quotes) of byte `offset` of `value`, or `None`
/// when `raw` does not decode to `value` by the rules below.
pub(crate) fn offset_in_literal(raw: &str, value: &str, offset: usize) -> Option<usize> {
    let (quote, basic) = if raw.starts_with("\"\"\"") {
        ("\"\"\"", true)
    } else if raw.starts_with("'''") {
        ("'''", false)
    } else if raw.starts_with('"') {
        ("\"", true)
    } else if raw.starts_with('\'') {
        ("'", false)
    } else {
        return None;
    };
    let mut start = quote.len();
    let mut body = raw.get(start..raw.len().checked_sub(quote.len())?)?;
    if quote.len() == 3 {
        // A line break right after the opening quotes is not part of the value.
        for newline in ["\n", "\r\n"] {
            if let Some(rest) = body.strip_prefix(newline) {
                body = rest;
                start += newline.len();
                break;
            }
        }
    }
    let mut decoded = String::with_capacity(body.len());
    let mut found = (offset == 0 && value.is_empty()).then_some(start);
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if decoded.len() == offset {
            found = Some(start + i);
        }
        if !(basic && c == '\\') {
            decoded.push(c);
            continue;
        }
        let (_, escape) = chars.next()?;
        let unicode = |chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>, n: usize| {
            let hex: String = (0..n)
                .filter_map(|_| chars.next().map(|(_, h)| h))
                .collect();
            u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32)
        };
        let ch = match escape {
            'b' => '\u{8}',
            't' => '\t',
            'n' => '\n',
            'f' => '\u{c}',
            'r' => '\r',
            'e' => '\u{1b}',
            '"' => '"',
            '\\' => '\\',
            'x' => unicode(&mut chars, 2)?,
            'u' => unicode(&mut chars, 4)?,
            'U' => unicode(&mut chars, 8)?,
            ' ' | '\t' | '\r' | '\n' if quote.len() == 3 => {
                // A line-ending backslash drops the line break and the blanks after it.
                while chars
                    .peek()
                    .is_some_and(|(_, w)| matches!(w, ' ' | '\t' | '\r' | '\n'))
                {
                    chars.next();
                }
                continue;
            }
            _ => return None,
        };
        decoded.push(ch);
    }
    if decoded.len() == offset && found.is_none() {
        found = Some(start + body.len());
    }
    (decoded == value).then_some(found).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_follow_escapes_and_multi_line_strings() {
        let value = "echo \"m={m}\"";
        let raw = r#""echo \"m={m}\"""#;
        assert_eq!(offset_in_literal(raw, value, 8), Some(10));
        assert_eq!(&raw[10..13], "{m}");

        let raw = "'''\necho\n{m}'''";
        assert_eq!(offset_in_literal(raw, "echo\n{m}", 5), Some(9));

        let raw = "\"\"\"a \\\n   {m}\"\"\"";
        assert_eq!(offset_in_literal(raw, "a {m}", 2), Some(10));

        let raw = r#""\u00e9 {m}""#;
        assert_eq!(offset_in_literal(raw, "é {m}", 3), Some(8));

        assert_eq!(offset_in_literal("'x {m}'", "x {m}", 2), Some(3));
        // A literal that does not decode to the value is not trusted.
        assert_eq!(offset_in_literal(r#""a\q""#, "a\\q", 1), None);
        assert_eq!(offset_in_literal("\"abc\"", "abd", 1), None);
    }
}
