//! The `packages:` list of a `pnpm-workspace.yaml`, and nothing else of it.
//!
//! Not a YAML parser: it reads exactly one shape, a top-level `packages:` key
//! holding a block list (`- 'packages/*'`) or a one-line flow list
//! (`packages: ['a/*', "b"]`) of quoted or plain strings, with comments. Every
//! other top-level key (`catalog:`, `overrides:`, …) is skipped unread. It must
//! never guess: anything inside the `packages:` value outside that shape is an
//! error with its byte offset, so discovery can warn instead of inferring a
//! wrong workspace.

/// Why the `packages:` list could not be read, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct YamlError {
    /// Byte offset in the file.
    pub offset: usize,
    /// What was wrong, lowercase.
    pub message: String,
}

/// The globs of the `packages:` key (with `!` exclusions as written) and the key's offset;
/// `Ok(None)` when the file has no top-level `packages:` key.
pub(super) fn packages(text: &str) -> Result<Option<(Vec<String>, usize)>, YamlError> {
    let mut lines = Lines::new(text);
    while let Some((start, line)) = lines.next() {
        let Some(rest) = line.strip_prefix("packages:") else {
            continue;
        };
        let value = strip_comment(rest).trim();
        let value_at = start + "packages:".len() + (rest.len() - rest.trim_start().len());
        if value.is_empty() {
            return block_list(&mut lines).map(|globs| Some((globs, start)));
        }
        if value.starts_with('[') {
            return flow_list(value, value_at).map(|globs| Some((globs, start)));
        }
        return Err(YamlError {
            offset: value_at,
            message: "`packages` must be a list of folder globs".into(),
        });
    }
    Ok(None)
}

/// Lines with their byte offsets, without line ends.
struct Lines<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Self {
        Lines { text, at: 0 }
    }

    fn peek(&self) -> Option<(usize, &'a str)> {
        let rest = self.text.get(self.at..).filter(|r| !r.is_empty())?;
        let line = rest.split('\n').next().unwrap_or("");
        Some((self.at, line.strip_suffix('\r').unwrap_or(line)))
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = (usize, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        let (start, line) = self.peek()?;
        let rest = &self.text[start..];
        self.at = start + rest.find('\n').map_or(rest.len(), |n| n + 1);
        Some((start, line))
    }
}

/// `- item` lines until the first line that is neither an item, blank nor a comment.
fn block_list(lines: &mut Lines<'_>) -> Result<Vec<String>, YamlError> {
    let mut globs = Vec::new();
    while let Some((start, line)) = lines.peek() {
        let body = line.trim_start();
        if body.is_empty() || body.starts_with('#') {
            lines.next();
            continue;
        }
        let Some(item) = body.strip_prefix('-') else {
            break;
        };
        if !(item.is_empty() || item.starts_with([' ', '\t'])) {
            break;
        }
        lines.next();
        let at = start + (line.len() - item.trim_start().len());
        let (value, rest) = scalar(item.trim_start(), at, &[])?;
        if !strip_comment(rest).trim().is_empty() {
            return Err(YamlError {
                offset: at,
                message: "a `packages` entry must be one string".into(),
            });
        }
        globs.push(value);
    }
    Ok(globs)
}

/// `[a, 'b', "c"]` on one line (`value` starts at byte `at`).
fn flow_list(value: &str, at: usize) -> Result<Vec<String>, YamlError> {
    let mut globs = Vec::new();
    let mut rest = value[1..].trim_start();
    let offset_of = |rest: &str| at + value.len() - rest.len();
    if let Some(after) = rest.strip_prefix(']') {
        return end_of_flow(after, offset_of(after)).map(|()| globs);
    }
    loop {
        let (item, after) = scalar(rest, offset_of(rest), &[',', ']'])?;
        globs.push(item);
        let after = after.trim_start();
        if let Some(more) = after.strip_prefix(',') {
            rest = more.trim_start();
        } else if let Some(end) = after.strip_prefix(']') {
            return end_of_flow(end, offset_of(end)).map(|()| globs);
        } else {
            return Err(YamlError {
                offset: offset_of(after),
                message: "a one-line `packages` list must end with `]`".into(),
            });
        }
    }
}

fn end_of_flow(after: &str, at: usize) -> Result<(), YamlError> {
    if strip_comment(after).trim().is_empty() {
        Ok(())
    } else {
        Err(YamlError {
            offset: at,
            message: "unexpected text after the `packages` list".into(),
        })
    }
}

/// One quoted or plain string at the start of `s` (at byte `at`), and what follows it.
/// A plain string ends at a comment, the line's end or one of `stops`.
fn scalar<'a>(s: &'a str, at: usize, stops: &[char]) -> Result<(String, &'a str), YamlError> {
    let bad = |message: &str| YamlError {
        offset: at,
        message: message.into(),
    };
    if let Some(body) = s.strip_prefix('\'') {
        // Single quotes: `''` is a quote, nothing else escapes.
        let mut out = String::new();
        let mut chars = body.char_indices();
        while let Some((i, c)) = chars.next() {
            if c == '\'' {
                if body[i + 1..].starts_with('\'') {
                    out.push('\'');
                    chars.next();
                } else {
                    return Ok((out, &body[i + 1..]));
                }
            } else {
                out.push(c);
            }
        }
        return Err(bad("unterminated quoted string in `packages`"));
    }
    if let Some(body) = s.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = body.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => return Ok((out, &body[i + 1..])),
                '\\' => match chars.next() {
                    Some((_, e @ ('"' | '\\' | '/'))) => out.push(e),
                    _ => return Err(bad("unsupported escape in a `packages` string")),
                },
                c => out.push(c),
            }
        }
        return Err(bad("unterminated quoted string in `packages`"));
    }
    let end = plain_end(s, stops);
    let value = s[..end].trim_end();
    // A plain `!x` or `*x` is a YAML tag or alias, not a string: such globs must be quoted.
    if value.is_empty()
        || value.starts_with([
            '[', ']', '{', '}', '&', '*', '|', '>', '%', '@', '`', '!', '-',
        ])
        || value.contains(": ")
        || value.ends_with(':')
    {
        return Err(bad("a `packages` entry must be a folder glob string"));
    }
    Ok((value.to_string(), &s[end..]))
}

/// Where a plain scalar ends: before ` #`, or at one of `stops`.
fn plain_end(s: &str, stops: &[char]) -> usize {
    let bytes = s.as_bytes();
    for (i, c) in s.char_indices() {
        if stops.contains(&c) || c == '#' && i > 0 && matches!(bytes[i - 1], b' ' | b'\t') {
            return i;
        }
    }
    s.len()
}

/// `s` without a trailing ` # comment` (or a whole-line one).
fn strip_comment(s: &str) -> &str {
    let t = s.trim_start();
    if t.starts_with('#') {
        return "";
    }
    &s[..plain_end(s, &[])]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn globs(text: &str) -> Vec<String> {
        packages(text).unwrap().unwrap().0
    }

    #[test]
    fn reads_block_and_flow_lists() {
        let text = "---\n# top\npackages:   # the members\n  - 'packages/*'\n  - \"apps/**\" # apps\n\n  # a comment\n  - docs\n  - '!**/test/**'\n  - 'it''s'\nonlyBuiltDependencies:\n  - esbuild\n";
        assert_eq!(
            globs(text),
            ["packages/*", "apps/**", "docs", "!**/test/**", "it's"]
        );
        assert_eq!(globs("packages:\n- a\n- b\n"), ["a", "b"]);
        assert_eq!(
            globs("packages: [a/*, 'b', \"c\"]  # x\n"),
            ["a/*", "b", "c"]
        );
        assert_eq!(globs("packages: []\n"), Vec::<String>::new());
        assert_eq!(globs("packages:\r\n  - a\r\n"), ["a"]);
        assert_eq!(globs("a: 1\npackages:\n  - x#y\n"), ["x#y"]);
        let (_, offset) = packages("catalog:\n  x: 1\npackages:\n  - a\n")
            .unwrap()
            .unwrap();
        assert_eq!(offset, 16);
    }

    #[test]
    fn a_file_without_packages_has_none() {
        assert_eq!(packages("catalog:\n  packages: 1\n"), Ok(None));
        assert_eq!(packages(""), Ok(None));
    }

    #[test]
    fn anything_else_is_an_error_with_its_place() {
        for (text, offset) in [
            ("packages:\n  - 'open\n", 14),
            ("packages:\n  - a: b\n", 14),
            ("packages: a/*\n", 10),
            ("packages: ['a', \n", 15),
            ("packages:\n  - [x]\n", 14),
            ("packages:\n  - {a: 1}\n", 14),
            ("packages:\n  - a\n  - 'b' c\n", 20),
            ("packages: [a] b\n", 13),
            ("packages:\n  - !x\n", 14),
        ] {
            let e = packages(text).unwrap_err();
            assert_eq!(e.offset, offset, "{text:?}: {e:?}");
        }
    }
}
