//! `targets`: a filtered, paged list of compact target rows.
//!
//! Rows are kept tiny (≈ 40 tokens) so an agent can scan many; details come
//! from `target`. Must never return unbounded pages: a page ends at `limit`
//! rows or at its byte budget.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::schema_util::{integer, nullable, object, record, string, strings};
use super::{QueryError, page};
use crate::Workspace;
use crate::kind::{builtin_kinds, find_kind};
use crate::model::Target;
use crate::suggest;

/// Arguments of [`targets`]; all filters combine with AND.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TargetsQuery {
    /// Glob over target names (`api-*`).
    pub name: Option<String>,
    /// Exact kind name.
    pub kind: Option<String>,
    /// Targets having this tag.
    pub tag: Option<String>,
    /// Targets having this capability.
    pub capability: Option<String>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Most rows per page, default 50, max 200; a page also ends at about 12 KB of rows.
    pub limit: Option<u32>,
}

/// One compact target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetRow {
    /// Target name.
    pub name: String,
    /// Kind name.
    pub kind: String,
    /// Folder relative to the workspace root.
    pub path: String,
    /// Capability names, sorted.
    pub capabilities: Vec<String>,
    /// Number of direct target dependencies.
    pub deps: u32,
}

/// A page of [`TargetRow`]s.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetsPage {
    /// The rows of this page, sorted by name.
    pub targets: Vec<TargetRow>,
    /// Number of matching targets over all pages.
    pub total: u32,
    /// Cursor of the next page; null on the last page.
    pub next_cursor: Option<String>,
}

pub(crate) fn row(ws: &Workspace, index: usize, t: &Target) -> TargetRow {
    TargetRow {
        name: t.name.clone(),
        kind: t.kind.clone(),
        path: t.path.clone(),
        capabilities: t.capabilities.iter().map(|c| c.name.to_string()).collect(),
        deps: u32::try_from(ws.graph.target_adjacency().get(index).map_or(0, Vec::len))
            .unwrap_or(u32::MAX),
    }
}

/// Lists targets matching `q`, one page at a time.
pub fn targets(ws: &Workspace, q: &TargetsQuery) -> Result<TargetsPage, QueryError> {
    let matcher = match &q.name {
        Some(g) => Some(
            globset::Glob::new(g)
                .map_err(|e| QueryError::InvalidArgument {
                    message: format!(
                        "`name` is not a valid glob ({}); use e.g. `api-*`",
                        e.kind()
                    ),
                })?
                .compile_matcher(),
        ),
        None => None,
    };
    if let Some(k) = &q.kind
        && find_kind(k).is_none()
    {
        return Err(QueryError::UnknownKind {
            kind: k.clone(),
            near: suggest::near(k, builtin_kinds().iter().map(|k| k.name.as_str()), 3),
        });
    }
    let s = |o: &Option<String>| o.clone().unwrap_or_default();
    let fp = page::fingerprint(&[&s(&q.name), &s(&q.kind), &s(&q.tag), &s(&q.capability)]);
    let matching: Vec<usize> = ws
        .targets
        .iter()
        .enumerate()
        .filter(|(_, t)| {
            matcher.as_ref().is_none_or(|m| m.is_match(&t.name))
                && q.kind.as_ref().is_none_or(|k| &t.kind == k)
                && q.tag.as_ref().is_none_or(|g| t.tags.contains(g))
                && q.capability
                    .as_ref()
                    .is_none_or(|c| t.capability(c).is_some())
        })
        .map(|(i, _)| i)
        .collect();
    let (start, end, next_cursor) =
        page::window(q.cursor.as_deref(), q.limit, &fp, matching.len())?;
    let mut targets: Vec<TargetRow> = matching[start..end]
        .iter()
        .filter_map(|&i| ws.targets.get(i).map(|t| row(ws, i, t)))
        .collect();
    let next_cursor = page::fit(&mut targets, start, next_cursor, &fp);
    Ok(TargetsPage {
        targets,
        total: u32::try_from(matching.len()).unwrap_or(u32::MAX),
        next_cursor,
    })
}

pub(crate) fn row_schema() -> Value {
    record(
        "A target in brief; call once_query_target for details",
        vec![
            ("name", string("Target name")),
            ("kind", string("Kind name")),
            ("path", string("Folder relative to the workspace root")),
            ("capabilities", strings("Capability names")),
            ("deps", integer("Number of direct target dependencies")),
        ],
    )
}

pub(crate) fn output_schema() -> Value {
    record(
        "A page of targets",
        vec![
            (
                "targets",
                super::schema_util::array(row_schema(), "Targets of this page, sorted by name"),
            ),
            ("total", integer("Matching targets over all pages")),
            (
                "next_cursor",
                nullable(string(
                    "Pass as `cursor` to get the next page; null on the last page",
                )),
            ),
        ],
    )
}

pub(crate) fn input_schema() -> Value {
    object(
        "List targets, filtered and paged",
        vec![
            ("name", string("Glob over target names, e.g. `api-*`")),
            (
                "kind",
                string("Only targets of this kind, e.g. `cargo-package`"),
            ),
            ("tag", string("Only targets with this tag")),
            (
                "capability",
                string("Only targets having this capability, e.g. `test`"),
            ),
            (
                "cursor",
                string("`next_cursor` from the previous page, unchanged; keep the same filters"),
            ),
            (
                "limit",
                integer("Most rows per page, 1-200, default 50; a page of long rows ends sooner"),
            ),
        ],
        &[],
    )
}
