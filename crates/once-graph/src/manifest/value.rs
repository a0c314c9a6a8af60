//! Typed readers over span-carrying TOML values.
//!
//! Each reader returns `None` after recording a `wrong-type` diagnostic, so
//! callers just skip the value; they must never panic or abort the parse.

use std::borrow::Cow;
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::diagnostic::{Diagnostic, SourceFile};
use crate::hash::{FxBuild, FxHashMap};
use crate::kind::{Kind, builtin_kinds};
use crate::manifest::Settings;
use crate::model::Capability;
use crate::suggest;
use crate::template::{Template, TemplateError};

pub(crate) type Key<'i> = Spanned<Cow<'i, str>>;
pub(crate) type Val<'i> = Spanned<DeValue<'i>>;

/// The parse context: the file, the diagnostics sink and the shared texts.
pub(crate) struct Cx<'a> {
    pub src: &'a SourceFile,
    pub diags: &'a mut Vec<Diagnostic>,
    pub shared: &'a mut Shared,
}

/// Texts shared by every target of a load: equal names, commands and glob
/// lists are held once. Seeded with the kinds' capability names, so a name is
/// the same `Arc` whether it comes from a kind or a manifest.
#[derive(Debug)]
pub(crate) struct Shared {
    /// Each text with its id (ids are dense, in first-seen order).
    strs: FxHashMap<Arc<str>, u32>,
    /// Valid glob lists by the hash of their items.
    lists: FxHashMap<u64, Vec<Arc<[String]>>>,
    /// Each kind's default capabilities with the load's default deadline.
    kind_caps: Vec<(&'static str, std::time::Duration, Arc<[Capability]>)>,
    /// Each command parsed once, however many capabilities share it.
    templates: FxHashMap<Arc<str>, Result<Arc<Template>, TemplateError>>,
}

impl Default for Shared {
    fn default() -> Self {
        let mut strs = FxHashMap::default();
        for k in builtin_kinds() {
            for c in &k.defaults {
                let id = u32::try_from(strs.len()).unwrap_or(u32::MAX);
                strs.entry(c.name.clone()).or_insert(id);
            }
        }
        Shared {
            strs,
            lists: FxHashMap::default(),
            kind_caps: Vec::new(),
            templates: FxHashMap::default(),
        }
    }
}

impl Shared {
    /// `command` parsed as a template, lexed once per distinct command.
    pub fn template(&mut self, command: &Arc<str>) -> Result<Arc<Template>, TemplateError> {
        self.templates
            .entry(command.clone())
            .or_insert_with(|| Template::parse(command).map(Arc::new))
            .clone()
    }

    /// The shared copy of `s`.
    pub fn text(&mut self, s: &str) -> Arc<str> {
        self.text_id(s).0
    }

    /// The shared copy of `s` and its id.
    pub fn text_id(&mut self, s: &str) -> (Arc<str>, u32) {
        if let Some((a, &id)) = self.strs.get_key_value(s) {
            return (a.clone(), id);
        }
        let a: Arc<str> = Arc::from(s);
        let id = u32::try_from(self.strs.len()).unwrap_or(u32::MAX);
        self.strs.insert(a.clone(), id);
        (a, id)
    }

    /// The id of `s` if it was seen.
    pub fn id(&self, s: &str) -> Option<u32> {
        self.strs.get(s).copied()
    }

    /// One more than the largest id.
    pub fn len(&self) -> usize {
        self.strs.len()
    }

    /// `kind`'s default capabilities, built once per load.
    pub fn kind_capabilities(
        &mut self,
        kind: &'static Kind,
        settings: &Settings,
    ) -> Arc<[Capability]> {
        let deadline = settings.default_deadline;
        if let Some((_, _, caps)) = self
            .kind_caps
            .iter()
            .find(|(k, d, _)| *k == kind.name && *d == deadline)
        {
            return caps.clone();
        }
        let caps: Arc<[Capability]> = kind
            .defaults
            .iter()
            .map(|c| Capability {
                deadline,
                ..c.clone()
            })
            .collect();
        self.kind_caps
            .push((kind.name.as_str(), deadline, caps.clone()));
        caps
    }

    fn list_hash(items: &[(&str, usize)]) -> u64 {
        let mut h = FxBuild::default().build_hasher();
        for (s, _) in items {
            s.hash(&mut h);
        }
        h.finish()
    }

    /// A glob list seen (and validated) before with exactly these items.
    pub fn known_list(&self, items: &[(&str, usize)]) -> Option<Arc<[String]>> {
        self.lists
            .get(&Self::list_hash(items))?
            .iter()
            .find(|l| l.len() == items.len() && l.iter().zip(items).all(|(a, (b, _))| a == b))
            .cloned()
    }

    /// Remembers a valid glob list.
    pub fn add_list(&mut self, items: &[(&str, usize)]) -> Arc<[String]> {
        let list: Arc<[String]> = items.iter().map(|(s, _)| (*s).to_string()).collect();
        self.lists
            .entry(Self::list_hash(items))
            .or_default()
            .push(list.clone());
        list
    }
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
    pub fn wrong_type(&mut self, v: &Val<'_>, what: fmt::Arguments<'_>, expected: &str) {
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

    pub fn table<'v, 'i>(
        &mut self,
        v: &'v Val<'i>,
        what: fmt::Arguments<'_>,
    ) -> Option<&'v DeTable<'i>> {
        let t = v.get_ref().as_table();
        if t.is_none() {
            self.wrong_type(v, what, "a table");
        }
        t
    }

    pub fn string<'v>(&mut self, v: &'v Val<'_>, what: fmt::Arguments<'_>) -> Option<&'v str> {
        let s = v.get_ref().as_str();
        if s.is_none() {
            self.wrong_type(v, what, "a string");
        }
        s
    }

    pub fn boolean(&mut self, v: &Val<'_>, what: fmt::Arguments<'_>) -> Option<bool> {
        let b = v.get_ref().as_bool();
        if b.is_none() {
            self.wrong_type(v, what, "a boolean");
        }
        b
    }

    /// A list of strings with each element's byte offset.
    pub fn string_list<'v>(
        &mut self,
        v: &'v Val<'_>,
        what: fmt::Arguments<'_>,
    ) -> Option<Vec<(&'v str, usize)>> {
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
                    self.wrong_type(item, format_args!("each element of {what}"), "a string");
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
