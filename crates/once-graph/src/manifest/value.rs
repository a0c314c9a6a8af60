//! Typed readers over span-carrying TOML values.
//!
//! Each reader returns `None` after recording a `wrong-type` diagnostic, so
//! callers just skip the value; they must never panic or abort the parse.

use std::borrow::Cow;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::diagnostic::{Diagnostic, SourceFile};
use crate::suggest;

pub(crate) type Key<'i> = Spanned<Cow<'i, str>>;
pub(crate) type Val<'i> = Spanned<DeValue<'i>>;

/// The parse context: the file and the diagnostics sink.
pub(crate) struct Cx<'a> {
    pub src: &'a SourceFile,
    pub diags: &'a mut Vec<Diagnostic>,
}

pub(crate) fn key_name<'k>(k: &'k Key<'_>) -> &'k str {
    k.get_ref().as_ref()
}

/// `a string`, `an integer`, … for `found:` lines.
pub(crate) fn found(v: &DeValue<'_>) -> String {
    let t = v.type_str();
    let article = if t.starts_with(['a', 'i']) { "an" } else { "a" };
    match v {
        DeValue::String(s) => format!("a string (`{s}`)"),
        _ => format!("{article} {t}"),
    }
}

impl<'a> Cx<'a> {
    pub fn wrong_type(&mut self, v: &Val<'_>, what: &str, expected: &str) {
        self.diags.push(
            self.src
                .error(
                    v.span().start,
                    "wrong-type",
                    format!("{what} must be {expected}"),
                )
                .expected(expected.to_string())
                .found(found(v.get_ref())),
        );
    }

    pub fn unknown_key(&mut self, k: &Key<'_>, allowed: &[&str], context: &str) {
        let name = key_name(k);
        let list = allowed
            .iter()
            .map(|a| format!("`{a}`"))
            .collect::<Vec<_>>()
            .join(", ");
        self.diags.push(
            self.src
                .error(
                    k.span().start,
                    "unknown-key",
                    format!("unknown key `{name}` {context}"),
                )
                .expected(format!("one of {list}"))
                .found(format!("`{name}`"))
                .did_you_mean(suggest::best(name, allowed.iter().copied())),
        );
    }

    pub fn table<'v, 'i>(&mut self, v: &'v Val<'i>, what: &str) -> Option<&'v DeTable<'i>> {
        let t = v.get_ref().as_table();
        if t.is_none() {
            self.wrong_type(v, what, "a table");
        }
        t
    }

    pub fn string<'v>(&mut self, v: &'v Val<'_>, what: &str) -> Option<&'v str> {
        let s = v.get_ref().as_str();
        if s.is_none() {
            self.wrong_type(v, what, "a string");
        }
        s
    }

    pub fn boolean(&mut self, v: &Val<'_>, what: &str) -> Option<bool> {
        let b = v.get_ref().as_bool();
        if b.is_none() {
            self.wrong_type(v, what, "a boolean");
        }
        b
    }

    /// A list of strings with each element's byte offset.
    pub fn string_list<'v>(&mut self, v: &'v Val<'_>, what: &str) -> Option<Vec<(&'v str, usize)>> {
        let Some(arr) = v.get_ref().as_array() else {
            self.wrong_type(v, what, "a list of strings");
            return None;
        };
        let mut out = Vec::with_capacity(arr.len());
        let mut ok = true;
        for item in arr.iter() {
            match item.get_ref().as_str() {
                Some(s) => out.push((s, item.span().start)),
                None => {
                    self.wrong_type(item, &format!("each element of {what}"), "a string");
                    ok = false;
                }
            }
        }
        ok.then_some(out)
    }
}

/// Converts a scalar/array TOML value to JSON (for field values and defaults).
pub(crate) fn to_json(v: &DeValue<'_>) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        DeValue::String(s) => J::String(s.to_string()),
        DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix()).map_or(J::Null, J::from),
        DeValue::Float(f) => f
            .as_str()
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or(J::Null, J::Number),
        DeValue::Boolean(b) => J::Bool(*b),
        DeValue::Datetime(d) => J::String(d.to_string()),
        DeValue::Array(a) => J::Array(a.iter().map(|x| to_json(x.get_ref())).collect()),
        DeValue::Table(t) => J::Object(
            t.iter()
                .map(|(k, v)| (k.get_ref().to_string(), to_json(v.get_ref())))
                .collect(),
        ),
    }
}
