//! The entry file format: TOML front matter between `+++` lines, then the Markdown body.
//!
//! ```text
//! +++
//! id = "20250131-093000-4f2a9c1e"
//! title = "Release builds need the vendored OpenSSL"
//! kind = "gotcha"
//! ...
//! +++
//! The body, verbatim.
//! ```
//!
//! Why TOML between `+++`: it is the front matter Hugo and Zola read natively, the TOML parser
//! is already part of the workspace (no new dependency), it has a real date-time type, and its
//! errors carry byte spans, so a hand-edited file's problem is reported at its exact line.
//! YAML (`---`) is read by more tools, but the maintained Rust YAML crates are heavy or
//! deprecated (serde_yaml), and a hand-written subset would accept files other tools read
//! differently. The renderer writes a fixed field order so diffs in version control stay small.
//!
//! This module is pure text in, text out: it must never touch the file system, and it must never
//! panic on any input.

use serde::Deserialize;

use crate::model::{Entry, Kind, PathLink};

/// The delimiter line around the front matter.
pub const DELIMITER: &str = "+++";

/// Where a file is broken, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// 1-based line in the file.
    pub line: u32,
    /// What is wrong, and what would be right.
    pub message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    id: toml::Spanned<String>,
    title: toml::Spanned<String>,
    kind: Kind,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    targets: Vec<String>,
    #[serde(default)]
    paths: Vec<PathLink>,
    created: toml::value::Datetime,
    updated: toml::value::Datetime,
    revision: u64,
}

/// Parses an entry file. `expected_id` is the file's stem: an entry whose `id` disagrees with its
/// file name is broken, because links and the CLI find entries by file name.
pub fn parse(text: &str, expected_id: &str) -> Result<Entry, Problem> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or_default();
    if first.trim_end() != DELIMITER {
        return Err(Problem {
            line: 1,
            message: "an entry starts with a `+++` line, then TOML front matter, then `+++`".into(),
        });
    }
    let start = first.len();
    let mut offset = start;
    let mut line_no: u32 = 1;
    let mut end = None;
    for line in lines {
        line_no += 1;
        if line.trim_end() == DELIMITER {
            end = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let Some((fm_end, body_start)) = end else {
        return Err(Problem {
            line: line_no,
            message: "the front matter is never closed: add a `+++` line after it".into(),
        });
    };
    let front = &text[start..fm_end];
    let line_of = |byte: usize| -> u32 {
        let before = front.get(..byte.min(front.len())).unwrap_or_default();
        let n = before.bytes().filter(|b| *b == b'\n').count();
        u32::try_from(n).unwrap_or(u32::MAX).saturating_add(2)
    };
    let raw: Raw = toml::from_str(front).map_err(|error| Problem {
        line: error.span().map_or(2, |span| line_of(span.start)),
        message: error.message().trim().to_string(),
    })?;
    if raw.id.get_ref() != expected_id {
        return Err(Problem {
            line: line_of(raw.id.span().start),
            message: format!(
                "`id` is `{}` but the file is `{expected_id}.md`: they must agree",
                raw.id.get_ref()
            ),
        });
    }
    if raw.title.get_ref().trim().is_empty() {
        return Err(Problem {
            line: line_of(raw.title.span().start),
            message: "`title` is empty".into(),
        });
    }
    let (id, title) = (raw.id.into_inner(), raw.title.into_inner());
    Ok(Entry {
        id,
        title,
        kind: raw.kind,
        tags: raw.tags,
        targets: raw.targets,
        paths: raw.paths,
        created: raw.created.to_string(),
        updated: raw.updated.to_string(),
        revision: raw.revision,
        body: text[body_start..].to_string(),
    })
}

/// Renders an entry file; `parse(&render(e), &e.id) == Ok(e)` for every valid entry.
pub fn render(entry: &Entry) -> String {
    let mut out = String::with_capacity(256 + entry.body.len());
    out.push_str("+++\n");
    out.push_str(&format!("id = {}\n", quote(&entry.id)));
    out.push_str(&format!("title = {}\n", quote(&entry.title)));
    out.push_str(&format!("kind = {}\n", quote(entry.kind.as_str())));
    out.push_str(&format!("tags = {}\n", list(&entry.tags)));
    out.push_str(&format!("targets = {}\n", list(&entry.targets)));
    // Times are TOML date-times, not strings, so editors and site generators see dates.
    out.push_str(&format!("created = {}\n", entry.created));
    out.push_str(&format!("updated = {}\n", entry.updated));
    out.push_str(&format!("revision = {}\n", entry.revision));
    for link in &entry.paths {
        out.push_str(&format!(
            "\n[[paths]]\npath = {}\nblake3 = {}\n",
            quote(&link.path),
            quote(&link.blake3)
        ));
    }
    out.push_str("+++\n");
    out.push_str(&entry.body);
    out
}

fn list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|item| quote(item)).collect();
    format!("[{}]", quoted.join(", "))
}

/// A TOML basic string: every character that TOML would not take literally is escaped.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Entry {
        Entry {
            id: "20250131-093000-4f2a9c1e".into(),
            title: "Quotes \" and \\ back\tslash\u{1} — ünïcode".into(),
            kind: Kind::Gotcha,
            tags: vec!["build".into(), "a \"b\"".into()],
            targets: vec!["core".into(), "web".into()],
            paths: vec![
                PathLink {
                    path: "crates/core/src/lib.rs".into(),
                    blake3: "ab".repeat(32),
                },
                PathLink {
                    path: "web/package.json".into(),
                    blake3: "cd".repeat(32),
                },
            ],
            created: "2025-01-31T09:30:00Z".into(),
            updated: "2025-02-01T10:00:05Z".into(),
            revision: 7,
            body:
                "First line.\n\n+++ not a delimiter inside the body? it is: only the first closes\n"
                    .into(),
        }
    }

    #[test]
    fn every_field_round_trips() {
        let e = entry();
        let text = render(&e);
        assert_eq!(parse(&text, &e.id), Ok(e.clone()));
        let mut empty = e;
        empty.tags.clear();
        empty.targets.clear();
        empty.paths.clear();
        empty.body.clear();
        assert_eq!(parse(&render(&empty), &empty.id), Ok(empty));
    }

    #[test]
    fn problems_name_their_line() {
        let e = entry();
        let good = render(&e);
        let cases = [
            (
                good.replacen("kind = \"gotcha\"", "kind = \"gossip\"", 1),
                4,
                "gossip",
            ),
            (
                good.replacen("revision = 7", "revision = \"seven\"", 1),
                9,
                "",
            ),
            (good.replacen("tags =", "tagz =", 1), 5, "tagz"),
            (good.replacen("title = ", "title = = ", 1), 3, ""),
            (good.replacen("+++\n", "", 1), 1, "+++"),
            (
                good.replacen("\n+++\n", "\n", 1)
                    .replacen("+++\nFirst", "First", 1),
                0,
                "never closed",
            ),
            (good.replacen("id = \"2025", "id = \"1999", 1), 2, "file"),
        ];
        for (text, line, needle) in cases {
            let problem = parse(&text, &e.id).expect_err(&text);
            if line > 0 {
                assert_eq!(problem.line, line, "{problem:?}\n{text}");
            }
            assert!(problem.message.contains(needle), "{problem:?}");
        }
    }
}
