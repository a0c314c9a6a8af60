//! `affected` and `owner`: which targets own changed files, and which actions must run again.
//!
//! An action is affected exactly when its cache key would change: a changed file is one of its
//! inputs (its folder's globs, minus what its target and the targets inside its folder write,
//! plus its `//` root globs, read by [`crate::inputs`] as `once-run` reads them), or it is among
//! the sources of a target its target depends on, or it depends on an affected action. The
//! changed files are given (the caller asks git); this module never reads a file, and every
//! list it answers is a page or a preview with its total.
//!
//! The actions come first: a branch may change thousands of files and still make a handful of
//! actions run, and that handful is what the first page must carry. Each file's owners come
//! only when asked for ([`Ownership::All`]), after the actions; by default an answer counts
//! the files each target owns instead.

mod index;
mod schema;

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::error::clip;
use super::{QueryError, page};
use crate::Workspace;
use crate::graph::ActionId;
use index::{Hits, Index, Why};
pub(crate) use schema::{input_schema, output_schema, owner_input_schema, owner_output_schema};
/// Most targets the ownership summary names; the rest are counted in `owners_total`.
const OWNERS_SUMMARY: usize = 20;
/// Most bytes of JSON the ownership summary takes, beside a page's rows: long target names
/// shorten the summary rather than push an answer past its bound.
const SUMMARY_BYTES: usize = 2 * 1024;
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
    /// How much of each file's ownership to answer beside the actions.
    pub ownership: Ownership,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Most rows (actions, then files) per page, default 50, max 200.
    pub limit: Option<u32>,
}

/// How much an [`affected`] answer says about who owns the changed files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ownership {
    /// Only the counts (`files_total`, `unowned_total`, `owners_total`).
    None,
    /// The counts and the targets owning the most files, with how many each.
    #[default]
    Summary,
    /// Every file with its owners, as rows after the actions.
    All,
}

impl Ownership {
    fn word(self) -> &'static str {
        match self {
            Ownership::None => "none",
            Ownership::Summary => "summary",
            Ownership::All => "all",
        }
    }
}

/// A target and how many of the changed files it owns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnerCount {
    /// Target name.
    pub target: String,
    /// Changed files it owns (inside its folder, or named by its inputs).
    pub files: u32,
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

/// A page of [`affected`]: rows are the actions, then (with [`Ownership::All`]) the files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AffectedAnswer {
    /// The affected actions of this page: those a file is an input of first, then their
    /// dependents, nearest first, each level by name.
    pub actions: Vec<AffectedAction>,
    /// Affected actions over all pages (of `capability` only, when given).
    pub actions_total: u32,
    /// Changed files.
    pub files_total: u32,
    /// Changed files no target owns.
    pub unowned_total: u32,
    /// With [`Ownership::Summary`]: the targets owning the most changed files, most first, then
    /// by name; empty otherwise.
    pub owners: Vec<OwnerCount>,
    /// Targets owning at least one changed file.
    pub owners_total: u32,
    /// With [`Ownership::All`]: the changed files of this page, by path, after its actions;
    /// empty otherwise.
    pub files: Vec<ChangedFile>,
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
    let mut parts: Vec<&str> = vec![&capability, q.ownership.word()];
    parts.extend(files.iter().map(String::as_str));
    let fp = page::fingerprint(&parts);

    let mut index = Index::new(ws);
    let hits: Vec<(String, Hits)> = files
        .into_iter()
        .map(|path| {
            let found = index.file(&path);
            (path, found)
        })
        .collect();
    let actions: Vec<(ActionId, Why)> = index
        .actions(&hits)
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
    let file_rows = if q.ownership == Ownership::All {
        files_total
    } else {
        0
    };
    let (start, end, next) =
        page::window(q.cursor.as_deref(), q.limit, &fp, actions_total + file_rows)?;
    let mut rows = Vec::with_capacity(end - start);
    for (a, why) in actions
        .iter()
        .take(end.min(actions_total))
        .skip(start.min(actions_total))
    {
        rows.push(Row::Action(AffectedAction {
            action: super::action_name(ws, *a),
            reason: why.render(ws, &hits),
        }));
    }
    for (path, found) in hits
        .iter()
        .take(end.saturating_sub(actions_total))
        .skip(start.saturating_sub(actions_total))
    {
        rows.push(Row::File(index.row(path.clone(), found)));
    }
    let next_cursor = page::fit(&mut rows, start, next, &fp);
    let (mut owners, owners_total) = owner_counts(ws, &hits);
    if q.ownership == Ownership::Summary {
        owners.truncate(OWNERS_SUMMARY);
        owners.truncate(page::fitting(&owners, SUMMARY_BYTES));
    } else {
        owners.clear();
    }
    let mut answer = AffectedAnswer {
        actions: Vec::new(),
        actions_total: count(actions_total),
        files_total: count(files_total),
        unowned_total: count(unowned),
        owners,
        owners_total: count(owners_total),
        files: Vec::new(),
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

/// Every target owning a changed file with how many it owns, most first, then by name; and
/// how many targets that is.
fn owner_counts(ws: &Workspace, hits: &[(String, Hits)]) -> (Vec<OwnerCount>, usize) {
    let mut files_of: std::collections::HashMap<usize, u32> = std::collections::HashMap::new();
    for (_, found) in hits {
        for &t in found.owners.keys() {
            *files_of.entry(t).or_default() += 1;
        }
    }
    let mut counts: Vec<OwnerCount> = files_of
        .into_iter()
        .filter_map(|(t, files)| {
            ws.targets.get(t).map(|target| OwnerCount {
                target: target.name.clone(),
                files,
            })
        })
        .collect();
    counts.sort_unstable_by(|a, b| b.files.cmp(&a.files).then_with(|| a.target.cmp(&b.target)));
    let total = counts.len();
    (counts, total)
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
