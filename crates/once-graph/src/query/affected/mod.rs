//! `affected` and `owner`: which targets own changed files, and which actions must run again.
//!
//! An action is affected exactly when its cache key would change: a changed file is one of its
//! inputs (its folder's globs, minus what its target and the targets inside its folder write,
//! plus its `//` root globs, read by [`crate::inputs`] as `once-run` reads them), or it is among
//! the sources of a target its target depends on, or it depends on an affected action. The
//! changed files are given (the caller asks git); this module never reads a file, and every
//! list it answers is a page or a preview with its total.

mod index;
mod schema;

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::error::clip;
use super::{QueryError, page};
use crate::Workspace;
use crate::graph::ActionId;
use index::{Index, Why};
pub(crate) use schema::{input_schema, output_schema, owner_input_schema, owner_output_schema};
/// Most changed files one question may name.
pub const MAX_FILES: usize = 100_000;
/// The longest path accepted, in bytes (Linux's `PATH_MAX`).
const MAX_PATH: usize = 4096;

/// Arguments of [`affected`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AffectedQuery {
    /// Changed files, relative to the workspace root.
    pub files: Vec<String>,
    /// Only actions of this capability (`test`).
    pub capability: Option<String>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Most rows (files, then actions) per page, default 50, max 200.
    pub limit: Option<u32>,
}

/// A target that owns a file, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// Target name.
    pub target: String,
    /// ``inside folder `crates/x` ``, ``input of `x:build` ``, ``root input of `x:test` ``.
    pub reasons: Vec<String>,
}

/// One changed file with its owners.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedFile {
    /// The file, relative to the workspace root.
    pub path: String,
    /// Its first owners: the deepest target folder holding it first, then by name. Empty when
    /// no target owns it.
    pub owners: Vec<Owner>,
    /// Owners over all.
    pub owners_total: u32,
}

/// An action that must run again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AffectedAction {
    /// `target:capability`.
    pub action: String,
    /// Why: `` `src/a.rs` is an input ``, `` depends on `lib:build` ``, or `` depends on target
    /// `lib`, whose sources changed ``.
    pub reason: String,
}

/// A page of [`affected`]: rows are the files, then the actions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AffectedAnswer {
    /// The changed files of this page, sorted by path.
    pub files: Vec<ChangedFile>,
    /// Changed files over all pages.
    pub files_total: u32,
    /// Changed files no target owns.
    pub unowned_total: u32,
    /// The affected actions of this page: those a file is an input of first, then their
    /// dependents, nearest first, each level by name.
    pub actions: Vec<AffectedAction>,
    /// Affected actions over all pages (of `capability` only, when given).
    pub actions_total: u32,
    /// Cursor of the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// Arguments of [`owner`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnerQuery {
    /// A path relative to the workspace root.
    pub path: String,
}

/// Which targets own `path` and why: the value of `once query owner`.
pub fn owner(ws: &Workspace, q: &OwnerQuery) -> Result<ChangedFile, QueryError> {
    let path = normalize(&q.path)?;
    let mut index = Index::new(ws);
    let hits = index.file(&path);
    Ok(index.row(path, &hits))
}

/// Which targets own `q.files` and which actions they make run again, one page at a time.
pub fn affected(ws: &Workspace, q: &AffectedQuery) -> Result<AffectedAnswer, QueryError> {
    if q.files.len() > MAX_FILES {
        return Err(QueryError::InvalidArgument {
            message: format!(
                "`files` names {} files, more than {MAX_FILES}; ask about fewer at a time",
                q.files.len()
            ),
        });
    }
    let files: BTreeSet<String> = q
        .files
        .iter()
        .map(|f| normalize(f))
        .collect::<Result<_, _>>()?;
    if let Some(c) = &q.capability
        && !ws.targets.iter().any(|t| t.capability(c).is_some())
    {
        let names: BTreeSet<&str> = ws
            .targets
            .iter()
            .flat_map(|t| t.capabilities.iter().map(|c| &*c.name))
            .collect();
        let near = crate::suggest::near(c, names.iter().copied(), 3);
        return Err(QueryError::InvalidArgument {
            message: format!(
                "no target has capability `{}`{}",
                clip(c),
                match near.first() {
                    Some(n) => format!("; did you mean `{n}`?"),
                    None => String::new(),
                }
            ),
        });
    }
    let capability = q.capability.clone().unwrap_or_default();
    let mut parts: Vec<&str> = vec![&capability];
    parts.extend(files.iter().map(String::as_str));
    let fp = page::fingerprint(&parts);

    let mut index = Index::new(ws);
    let mut rows = Vec::with_capacity(files.len());
    let mut hits = Vec::with_capacity(files.len());
    for path in files {
        let found = index.file(&path);
        hits.push((path, found));
    }
    let actions = index.actions(&hits);
    let actions: Vec<(ActionId, Why)> = actions
        .into_iter()
        .filter(|(a, _)| {
            q.capability.is_none() || {
                let (t, c) = ws.graph.split(*a);
                ws.targets
                    .get(t)
                    .and_then(|t| t.capabilities.get(c))
                    .is_some_and(|c| *c.name == *capability)
            }
        })
        .collect();
    let unowned = hits.iter().filter(|(_, h)| h.owners.is_empty()).count();
    let (files_total, actions_total) = (hits.len(), actions.len());
    let (start, end, next) = page::window(
        q.cursor.as_deref(),
        q.limit,
        &fp,
        files_total + actions_total,
    )?;
    for (path, found) in hits
        .iter()
        .take(end.min(files_total))
        .skip(start.min(files_total))
    {
        rows.push(Row::File(index.row(path.clone(), found)));
    }
    for (a, why) in actions
        .iter()
        .take(end.saturating_sub(files_total))
        .skip(start.saturating_sub(files_total))
    {
        rows.push(Row::Action(AffectedAction {
            action: super::action_name(ws, *a),
            reason: why.render(ws, &hits),
        }));
    }
    let next_cursor = page::fit(&mut rows, start, next, &fp);
    let mut answer = AffectedAnswer {
        files: Vec::new(),
        files_total: count(files_total),
        unowned_total: count(unowned),
        actions: Vec::new(),
        actions_total: count(actions_total),
        next_cursor,
    };
    for row in rows {
        match row {
            Row::File(f) => answer.files.push(f),
            Row::Action(a) => answer.actions.push(a),
        }
    }
    Ok(answer)
}

/// One row of a page, for its byte budget.
#[derive(Serialize)]
#[serde(untagged)]
enum Row {
    File(ChangedFile),
    Action(AffectedAction),
}

pub(super) fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// `path` as a clean root-relative path (`./a//b/` → `a/b`), or why it is not one.
fn normalize(path: &str) -> Result<String, QueryError> {
    let refuse = |why: &str| QueryError::InvalidArgument {
        message: format!(
            "path `{}` {why}; name files relative to the workspace root",
            clip(path)
        ),
    };
    if path.len() > MAX_PATH || path.contains('\0') {
        return Err(refuse("is not a path"));
    }
    if path.starts_with('/') {
        return Err(refuse("is absolute"));
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(refuse("leaves the workspace")),
            part => parts.push(part),
        }
    }
    if parts.is_empty() {
        return Err(refuse("names no file"));
    }
    Ok(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_cleaned_or_refused() {
        assert_eq!(normalize("./a//b/").as_deref(), Ok("a/b"));
        for bad in ["", ".", "/a", "a/../b", "a\0b"] {
            assert!(normalize(bad).is_err(), "{bad:?}");
        }
        let long = "a".repeat(10_000);
        let message = normalize(&format!("/{long}")).unwrap_err().to_string();
        assert!(message.len() < 300, "{message}");
    }
}
