//! The go.mod and go.work syntax, read just far enough for discovery.
//!
//! Both files are lines of a verb and its arguments (`require x v1`), or a verb opening a
//! parenthesised block whose lines each carry that verb's arguments; `//` starts a comment and
//! arguments may be quoted (`"…"` or `` `…` ``). This lexer keeps every statement with byte
//! offsets and leaves meaning to the caller; it must never fail: a malformed line yields fewer
//! arguments, not an error, because the `go` command is the judge of validity, not discovery.

/// One argument of a statement, unquoted, with the byte offset where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Arg {
    pub text: String,
    pub offset: usize,
}

/// A verb with its arguments (one line, or one line of a block).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Stmt {
    pub verb: String,
    pub args: Vec<Arg>,
}

/// What discovery needs from a `go.mod`.
#[derive(Debug, Default)]
pub(super) struct GoMod {
    /// The module path and its offset.
    pub module: Option<Arg>,
    /// Required module paths, in order.
    pub requires: Vec<String>,
    /// `replace` directives.
    pub replaces: Vec<Replace>,
}

/// What discovery needs from a `go.work`.
#[derive(Debug, Default)]
pub(super) struct GoWork {
    /// `use` folders, as written, with offsets.
    pub uses: Vec<Arg>,
    /// `replace` directives.
    pub replaces: Vec<Replace>,
}

/// `replace FROM [VERSION] => TO [VERSION]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Replace {
    /// The module path replaced (any version).
    pub from: String,
    /// The replacement: a module path, or a folder when [`local`] says so.
    pub to: String,
}

impl Replace {
    /// Whether the replacement is a folder relative to the file, as Go reads it.
    pub fn local(&self) -> bool {
        let t = self.to.as_str();
        t == "." || t == ".." || t.starts_with("./") || t.starts_with("../")
    }
}

/// Reads a `go.mod`.
pub(super) fn go_mod(text: &str) -> GoMod {
    let mut out = GoMod::default();
    for stmt in statements(text) {
        match stmt.verb.as_str() {
            "module" if out.module.is_none() => out.module = stmt.args.into_iter().next(),
            "require" => out
                .requires
                .extend(stmt.args.into_iter().next().map(|a| a.text)),
            "replace" => out.replaces.extend(replace(&stmt.args)),
            _ => {}
        }
    }
    out
}

/// Reads a `go.work`.
pub(super) fn go_work(text: &str) -> GoWork {
    let mut out = GoWork::default();
    for stmt in statements(text) {
        match stmt.verb.as_str() {
            "use" => out.uses.extend(stmt.args.into_iter().next()),
            "replace" => out.replaces.extend(replace(&stmt.args)),
            _ => {}
        }
    }
    out
}

fn replace(args: &[Arg]) -> Option<Replace> {
    let arrow = args.iter().position(|a| a.text == "=>")?;
    Some(Replace {
        from: args.first().filter(|_| arrow > 0)?.text.clone(),
        to: args.get(arrow + 1)?.text.clone(),
    })
}

/// Every statement of the file, blocks flattened: `require ( a v1 \n b v2 )` is two
/// `require` statements.
pub(super) fn statements(text: &str) -> Vec<Stmt> {
    let mut out = Vec::new();
    let mut block: Option<String> = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let tokens = tokens(line, offset);
        offset += line.len();
        let mut rest = tokens.as_slice();
        let verb = match &block {
            Some(verb) => {
                if rest.first().is_some_and(|t| t.text == ")" && !t.quoted) {
                    block = None;
                    continue;
                }
                verb.clone()
            }
            None => {
                let Some((first, tail)) = rest.split_first() else {
                    continue;
                };
                rest = tail;
                if rest.first().is_some_and(|t| t.text == "(" && !t.quoted) {
                    // `verb (` opens a block; `verb ( )` on one line is an empty one.
                    if rest.get(1).is_none_or(|t| t.text != ")") {
                        block = Some(first.text.clone());
                    }
                    continue;
                }
                first.text.clone()
            }
        };
        if rest.is_empty() {
            continue;
        }
        out.push(Stmt {
            verb,
            args: rest
                .iter()
                .map(|t| Arg {
                    text: t.text.clone(),
                    offset: t.offset,
                })
                .collect(),
        });
    }
    out
}

struct Token {
    text: String,
    offset: usize,
    quoted: bool,
}

/// The tokens of one line: words, quoted strings (unquoted), `(` and `)`, up to a `//` comment.
fn tokens(line: &str, base: usize) -> Vec<Token> {
    let mut out = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if bytes[i..].starts_with(b"//") {
            break;
        } else if c == b'(' || c == b')' {
            out.push(Token {
                text: (c as char).to_string(),
                offset: base + i,
                quoted: false,
            });
            i += 1;
        } else if c == b'"' || c == b'`' {
            let (text, end) = quoted(line, i);
            out.push(Token {
                text,
                offset: base + i,
                quoted: true,
            });
            i = end;
        } else {
            let start = i;
            while i < bytes.len()
                && !bytes[i].is_ascii_whitespace()
                && !matches!(bytes[i], b'(' | b')' | b'"' | b'`')
                && !bytes[i..].starts_with(b"//")
            {
                i += 1;
            }
            out.push(Token {
                text: line[start..i].to_string(),
                offset: base + start,
                quoted: false,
            });
        }
    }
    out
}

/// The string quoted at `start` (`"…"` with backslash escapes, or `` `…` `` raw) and the index
/// after it; an unterminated string runs to the end of the line.
fn quoted(line: &str, start: usize) -> (String, usize) {
    let bytes = line.as_bytes();
    let close = bytes[start];
    let mut out = String::new();
    let mut chars = line[start + 1..].char_indices();
    while let Some((j, ch)) = chars.next() {
        let at = start + 1 + j;
        if ch as u32 == u32::from(close) {
            return (out, at + 1);
        }
        if ch == '\\' && close == b'"' {
            if let Some((_, next)) = chars.next() {
                out.push(next);
            }
            continue;
        }
        if ch == '\n' || ch == '\r' {
            return (out, at);
        }
        out.push(ch);
    }
    (out, line.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(stmts: &[Stmt]) -> Vec<String> {
        stmts
            .iter()
            .map(|s| {
                let args: Vec<&str> = s.args.iter().map(|a| a.text.as_str()).collect();
                format!("{} {}", s.verb, args.join(" "))
            })
            .collect()
    }

    #[test]
    fn blocks_comments_and_quotes() {
        let text = "// header\nmodule \"example.com/a\" // the module\n\ngo 1.22\n\
            require example.com/b v1.0.0\nrequire (\n\texample.com/c v1.2.0 // indirect\n\
            \t\"example.com/d\" v0.1.0\n)\nreplace (\n  example.com/b => ../b\n  \
            example.com/e v1.0.0 => example.com/f v1.1.0\n)\nreplace example.com/c=>./c\n\
            require ()\nexclude example.com/x v1.0.0\n";
        assert_eq!(
            texts(&statements(text)),
            [
                "module example.com/a",
                "go 1.22",
                "require example.com/b v1.0.0",
                "require example.com/c v1.2.0",
                "require example.com/d v0.1.0",
                "replace example.com/b => ../b",
                "replace example.com/e v1.0.0 => example.com/f v1.1.0",
                "replace example.com/c=>./c",
                "exclude example.com/x v1.0.0",
            ]
        );
        let m = go_mod(text);
        let module = m.module.expect("module");
        assert_eq!(module.text, "example.com/a");
        assert_eq!(
            &text[module.offset..module.offset + 15],
            "\"example.com/a\""
        );
        assert_eq!(
            m.requires,
            ["example.com/b", "example.com/c", "example.com/d"]
        );
        // `a=>b` without spaces is one word: Go reads it as a malformed line, and so does this.
        let replaces: Vec<(&str, &str, bool)> = m
            .replaces
            .iter()
            .map(|r| (r.from.as_str(), r.to.as_str(), r.local()))
            .collect();
        assert_eq!(
            replaces,
            [
                ("example.com/b", "../b", true),
                ("example.com/e", "example.com/f", false)
            ]
        );
    }

    #[test]
    fn go_work_uses_single_and_block() {
        let w = go_work(
            "go 1.22\n\nuse ./a\nuse (\n\t./b // the b\n\t\"./c d\"\n\t.\n)\n\
             replace example.com/x => ./x\n",
        );
        let uses: Vec<&str> = w.uses.iter().map(|u| u.text.as_str()).collect();
        assert_eq!(uses, ["./a", "./b", "./c d", "."]);
        assert_eq!(w.replaces.len(), 1);
        assert!(w.replaces[0].local());
    }

    #[test]
    fn never_panics_on_garbage() {
        for text in [
            "",
            "(",
            ")",
            "module",
            "require (",
            "replace => x",
            "replace a =>",
            "module \"unterminated",
            "module `raw\nstill",
            "\u{feff}module ünï/\"x\\",
            "require ( a v1 )",
        ] {
            let _ = go_mod(text);
            let _ = go_work(text);
        }
        assert!(go_mod("replace => x").replaces.is_empty());
    }
}
