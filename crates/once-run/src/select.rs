//! The targets a [`Selection`] picks: those carrying one of its tags and named like one of its
//! globs, each with the selection's capability.
//!
//! A tag no target carries is a mistake in the request (a typo, answered with the nearest tag);
//! a selection that is valid but picks nothing is not, and the caller says "nothing to run".
//! This module must never look at anything but the targets it is given.

use std::collections::BTreeSet;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use once_graph::model::Target;

use crate::error::Error;
use crate::request::Selection;

/// The `(target, capability)` indices the selection picks, in target order.
pub(crate) fn select(
    targets: &[Target],
    selection: &Selection,
) -> Result<Vec<(usize, usize)>, Error> {
    let known: BTreeSet<&str> = targets
        .iter()
        .flat_map(|t| t.tags.iter().map(String::as_str))
        .collect();
    for tag in &selection.tags {
        if !known.contains(tag.as_str()) {
            return Err(Error::UnknownTag {
                tag: tag.clone(),
                near: near(&known, tag),
            });
        }
    }
    let names = globs(&selection.names)?;
    Ok(targets
        .iter()
        .enumerate()
        .filter(|(_, t)| {
            selection.tags.is_empty() || t.tags.iter().any(|tag| selection.tags.contains(tag))
        })
        .filter(|(_, t)| names.as_ref().is_none_or(|set| set.is_match(&t.name)))
        .filter_map(|(i, t)| {
            t.capabilities
                .iter()
                .position(|c| *c.name == *selection.capability)
                .map(|c| (i, c))
        })
        .collect())
}

/// How many capability names [`existing`] lists.
const EXISTING_SHOWN: usize = 8;

/// The capabilities the targets a selection picks do have, commonest first (then by name), for
/// a "nothing to run" that says what exists instead: "`build` (2 targets), `test` (1 target)".
pub(crate) fn existing(targets: &[Target], selection: &Selection) -> String {
    let names = globs(&selection.names).ok().flatten();
    let mut counts: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for t in targets
        .iter()
        .filter(|t| {
            selection.tags.is_empty() || t.tags.iter().any(|tag| selection.tags.contains(tag))
        })
        .filter(|t| names.as_ref().is_none_or(|set| set.is_match(&t.name)))
    {
        for c in t.capabilities.iter() {
            *counts.entry(&c.name).or_default() += 1;
        }
    }
    let mut list: Vec<(&str, usize)> = counts.into_iter().collect();
    list.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let shown: Vec<String> = list
        .iter()
        .take(EXISTING_SHOWN)
        .map(|(name, n)| {
            format!(
                "`{name}` ({n} {})",
                if *n == 1 { "target" } else { "targets" }
            )
        })
        .collect();
    let rest = list.len().saturating_sub(EXISTING_SHOWN);
    let mut text = shown.join(", ");
    if rest > 0 {
        text.push_str(&format!(
            " and {rest} more (`once query targets` lists them)"
        ));
    }
    text
}

/// What a selection asked for, for a sentence: "with tag `a` or `b`, named like `api-*`".
pub(crate) fn describe(selection: &Selection) -> String {
    let list = |items: &[String]| {
        items
            .iter()
            .map(|item| format!("`{item}`"))
            .collect::<Vec<_>>()
            .join(" or ")
    };
    let mut parts = Vec::new();
    if !selection.tags.is_empty() {
        parts.push(format!("with tag {}", list(&selection.tags)));
    }
    if !selection.names.is_empty() {
        parts.push(format!("named like {}", list(&selection.names)));
    }
    parts.join(", ")
}

/// The name globs as one set; `None` when there are none (every name matches). A `*` matches
/// any run of characters, `/` included: target names are not paths.
fn globs(names: &[String]) -> Result<Option<GlobSet>, Error> {
    if names.is_empty() {
        return Ok(None);
    }
    let mut set = GlobSetBuilder::new();
    for name in names {
        let glob = GlobBuilder::new(name)
            .literal_separator(false)
            .build()
            .map_err(|e| Error::BadNameGlob {
                glob: name.clone(),
                message: e.kind().to_string(),
            })?;
        set.add(glob);
    }
    set.build().map(Some).map_err(|e| Error::BadNameGlob {
        glob: names.join(" "),
        message: e.kind().to_string(),
    })
}

/// The closest known tag, when it is close enough to be a typo.
fn near(known: &BTreeSet<&str>, tag: &str) -> Option<String> {
    let allowed = (tag.chars().count() / 3).max(1);
    known
        .iter()
        .map(|k| (strsim::levenshtein(k, tag), *k))
        .filter(|(d, _)| *d <= allowed)
        .min()
        .map(|(_, k)| k.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selection_is_described_as_asked() {
        let selection = Selection {
            capability: "test".into(),
            tags: vec!["a".into(), "b".into()],
            names: vec!["api-*".into()],
        };
        assert_eq!(
            describe(&selection),
            "with tag `a` or `b`, named like `api-*`"
        );
    }

    #[test]
    fn the_nearest_tag_is_a_typo_away() {
        let known: BTreeSet<&str> = ["backend", "frontend"].into_iter().collect();
        assert_eq!(near(&known, "bakend").as_deref(), Some("backend"));
        assert_eq!(near(&known, "mobile"), None);
    }
}
