//! Command templates: `{name}` placeholders, `{{`/`}}` literal braces, and the quoting that
//! makes every value data.
//!
//! A template is parsed once, when its manifest is loaded: the placeholders are found and the
//! command is lexed as `sh` reads it ([`crate::shell`]), so each placeholder carries its quoting
//! context. Rendering quotes each value for that context and refuses a template with any
//! placeholder that has no safe context, so no value can ever be run as code. This module must
//! never execute anything.

use std::fmt;

use crate::shell::{Item, classify};
pub use crate::shell::{Quoting, Unsafe};

/// A parsed command template.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
    /// Set for a command that is not a valid template: it never renders.
    broken: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    /// Text with `{{`/`}}` already turned into braces.
    Text(String),
    Slot(Slot),
}

/// A placeholder of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    /// The name between the braces.
    pub name: String,
    /// Byte offset of its `{` in the template.
    pub offset: usize,
    /// Where it sits in the command, or why no value may go there.
    pub context: Result<Quoting, Unsafe>,
}

/// A malformed template: an unclosed `{`, a stray `}` or an empty `{}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    /// Byte offset of the offending brace.
    pub offset: usize,
    /// What is wrong, with the fix.
    pub message: String,
}

/// What a placeholder is given: text (quoted for its context), or nothing at all (a boolean
/// flag that is off).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fill {
    Text(String),
    Nothing,
}

/// Why a template could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RenderError {
    /// No value for this placeholder.
    Unknown(String),
    /// The command is not a valid template; the message says why.
    Broken(String),
    /// This placeholder has no safe quoting where it sits.
    Refused { name: String, why: Unsafe },
}

impl fmt::Display for RenderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RenderError::Unknown(name) => write!(f, "no value for `{{{name}}}`"),
            RenderError::Broken(message) => f.write_str(message),
            RenderError::Refused { name, why } => write!(f, "`{{{name}}}` sits {why}"),
        }
    }
}

impl Template {
    /// Parses `command`: its placeholders, then each one's quoting context.
    pub fn parse(command: &str) -> Result<Template, TemplateError> {
        let bytes = command.as_bytes();
        let mut parts = Vec::new();
        let mut text = String::new();
        let mut i = 0;
        let mut start = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'{' if bytes.get(i + 1) == Some(&b'{') => {
                    text.push_str(&command[start..=i]);
                    i += 2;
                    start = i;
                }
                b'}' if bytes.get(i + 1) == Some(&b'}') => {
                    text.push_str(&command[start..=i]);
                    i += 2;
                    start = i;
                }
                b'{' => {
                    let Some(len) = command[i + 1..].find('}') else {
                        return Err(TemplateError {
                            offset: i,
                            message: "unclosed `{` (write `{{` for a literal brace)".into(),
                        });
                    };
                    let name = &command[i + 1..i + 1 + len];
                    if name.is_empty() || name.contains('{') {
                        return Err(TemplateError {
                            offset: i,
                            message: format!(
                                "invalid placeholder `{{{name}}}` (write `{{{{` for a literal brace)"
                            ),
                        });
                    }
                    text.push_str(&command[start..i]);
                    if !text.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut text)));
                    }
                    parts.push(Part::Slot(Slot {
                        name: name.to_owned(),
                        offset: i,
                        context: Ok(Quoting::Single),
                    }));
                    i += len + 2;
                    start = i;
                }
                b'}' => {
                    return Err(TemplateError {
                        offset: i,
                        message: "stray `}` (write `}}` for a literal brace)".into(),
                    });
                }
                _ => i += 1,
            }
        }
        text.push_str(&command[start..]);
        if !text.is_empty() {
            parts.push(Part::Text(text));
        }
        // Only placeholders need a context: a command without any is never lexed.
        if !parts.iter().any(|p| matches!(p, Part::Slot(_))) {
            return Ok(Template {
                parts,
                broken: None,
            });
        }
        let items: Vec<Item> = parts
            .iter()
            .flat_map(|part| -> Box<dyn Iterator<Item = Item> + '_> {
                match part {
                    Part::Text(text) => Box::new(text.chars().map(Item::Char)),
                    Part::Slot(_) => Box::new(std::iter::once(Item::Slot)),
                }
            })
            .collect();
        let mut contexts = classify(&items).into_iter();
        for part in &mut parts {
            if let Part::Slot(slot) = part {
                // The lexer yields one context per placeholder; a missing one is refused.
                slot.context = contexts
                    .next()
                    .unwrap_or(Err(Unsafe::Uncertain("the end of the command")));
            }
        }
        Ok(Template {
            parts,
            broken: None,
        })
    }

    /// The template of a command that failed to parse: it has no placeholders and never
    /// renders, so a capability whose manifest has an error cannot run by accident.
    pub fn broken(error: &TemplateError) -> Template {
        Template {
            parts: Vec::new(),
            broken: Some(error.message.clone()),
        }
    }

    /// The placeholders, in order.
    pub fn slots(&self) -> impl Iterator<Item = &Slot> {
        self.parts.iter().filter_map(|p| match p {
            Part::Slot(slot) => Some(slot),
            Part::Text(_) => None,
        })
    }

    /// The command, each placeholder replaced by `lookup(name)` quoted for its context. Refuses
    /// the whole template if any placeholder has no safe context.
    pub fn render(
        &self,
        mut lookup: impl FnMut(&str) -> Option<Fill>,
    ) -> Result<String, RenderError> {
        if let Some(message) = &self.broken {
            return Err(RenderError::Broken(message.clone()));
        }
        for slot in self.slots() {
            if let Err(why) = slot.context {
                return Err(RenderError::Refused {
                    name: slot.name.clone(),
                    why,
                });
            }
        }
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Slot(slot) => {
                    let fill = lookup(&slot.name)
                        .ok_or_else(|| RenderError::Unknown(slot.name.clone()))?;
                    if let Ok(quoting) = slot.context {
                        quote(&mut out, &fill, quoting);
                    }
                }
            }
        }
        Ok(out)
    }
}

/// The shells' reserved words (dash's and bash's): unquoted, a value spelled like one could
/// change the command's grammar.
const RESERVED: &[&str] = &[
    "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for", "function", "if", "in",
    "select", "then", "time", "until", "while",
];

/// A word that means nothing to `sh` but itself: only characters the shell never interprets
/// (no `=`, which can make an assignment, no `,`, which bash's brace expansion splits on, no
/// `~`), and not a reserved word.
fn plain(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./:@%+".contains(&b))
        && !RESERVED.contains(&text)
}

/// Appends `fill` to `out` so that the shell reads it back, byte for byte, as literal text.
fn quote(out: &mut String, fill: &Fill, quoting: Quoting) {
    let text = match fill {
        Fill::Text(text) => text.as_str(),
        // A word of its own disappears; glued to other text, it must leave that text one word.
        Fill::Nothing if quoting == (Quoting::Bare { alone: false }) => {
            out.push_str("''");
            return;
        }
        Fill::Nothing => return,
    };
    match quoting {
        Quoting::Bare { alone: true } if plain(text) => out.push_str(text),
        Quoting::Bare { .. } => {
            out.push('\'');
            out.push_str(&text.replace('\'', r"'\''"));
            out.push('\'');
        }
        Quoting::Single => out.push_str(&text.replace('\'', r"'\''")),
        Quoting::Double => {
            for c in text.chars() {
                if matches!(c, '\\' | '"' | '$' | '`') {
                    out.push('\\');
                }
                out.push(c);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(template: &str) -> Vec<(usize, String, Result<Quoting, Unsafe>)> {
        Template::parse(template)
            .expect("parses")
            .slots()
            .map(|s| (s.offset, s.name.clone(), s.context))
            .collect()
    }

    #[test]
    fn finds_placeholders_with_their_offsets_and_contexts() {
        assert_eq!(
            slots("a {x} {{y}} '{z}'"),
            [
                (2, "x".into(), Ok(Quoting::Bare { alone: true })),
                (13, "z".into(), Ok(Quoting::Single)),
            ]
        );
        assert_eq!(
            slots("echo `{a}` ${{X:-{b}}}"),
            [
                (6, "a".into(), Err(Unsafe::Backquotes)),
                (17, "b".into(), Err(Unsafe::ParamExpansion)),
            ]
        );
        assert_eq!(
            slots("echo ${b}"),
            [(6, "b".into(), Err(Unsafe::AfterDollar))]
        );
        for bad in ["a {x", "a }", "a {}", "a {{x}"] {
            assert!(Template::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Template::parse("a }").unwrap_err().offset, 2);
    }

    fn render(template: &str, value: &str) -> Result<String, RenderError> {
        Template::parse(template)
            .expect("parses")
            .render(|n| (n == "v").then(|| Fill::Text(value.to_owned())))
    }

    #[test]
    fn renders_each_context_with_its_quoting() {
        assert_eq!(render("echo {v} {{b}}", "1").unwrap(), "echo 1 {b}");
        assert_eq!(render("echo {v}", "a b").unwrap(), "echo 'a b'");
        assert_eq!(render("echo {v}", "it's").unwrap(), r"echo 'it'\''s'");
        assert_eq!(render("echo {v}", "").unwrap(), "echo ''");
        assert_eq!(render("echo {v}", "a=b").unwrap(), "echo 'a=b'");
        assert_eq!(
            render("for i {v} a; do :; done", "in").unwrap(),
            "for i 'in' a; do :; done"
        );
        assert_eq!(
            render("{v} true", "x"),
            Err(RenderError::Refused {
                name: "v".into(),
                why: Unsafe::CommandName
            })
        );
        assert_eq!(render("echo --x={v}", "plain").unwrap(), "echo --x='plain'");
        assert_eq!(render("echo 'm={v}'", "it's").unwrap(), r"echo 'm=it'\''s'");
        assert_eq!(
            render("echo \"m={v}\"", "\"$(x)`y`\\").unwrap(),
            r#"echo "m=\"\$(x)\`y\`\\""#
        );
        assert_eq!(
            render("echo `{v}`", "x"),
            Err(RenderError::Refused {
                name: "v".into(),
                why: Unsafe::Backquotes
            })
        );
        assert_eq!(
            render("echo {w}", "x"),
            Err(RenderError::Unknown("w".into()))
        );
    }

    #[test]
    fn a_broken_template_never_renders() {
        let error = Template::parse("echo }").unwrap_err();
        assert_eq!(
            Template::broken(&error).render(|_| None),
            Err(RenderError::Broken(
                "stray `}` (write `}}` for a literal brace)".into()
            ))
        );
    }

    #[test]
    fn nothing_disappears_alone_and_keeps_a_glued_word_whole() {
        let t = Template::parse("cargo build {flag} --x={flag}y '{flag}'").unwrap();
        assert_eq!(
            t.render(|_| Some(Fill::Nothing)).unwrap(),
            "cargo build  --x=''y ''"
        );
    }
}
