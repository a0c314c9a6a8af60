//! `workspace`: the overview an agent reads first: identity, manifests,
//! counts, kinds in use, diagnostics and the first page of targets.
//!
//! Must stay bounded in size: its targets are the first page of `targets`, and the manifests
//! and diagnostics are the first few with their totals (`once check` prints every diagnostic).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::schema_util::{array, enumeration, integer, nullable, object, record, string};
use super::targets::{TargetRow, TargetsQuery, row_schema, targets};
use crate::{Diagnostic, Workspace};

/// How many manifests the overview lists.
const MANIFESTS_SHOWN: usize = 20;
/// How many diagnostics the overview lists, errors first.
const DIAGNOSTICS_SHOWN: usize = 10;
/// Most bytes of diagnostics the overview lists: a diagnostic quotes what it found.
const DIAGNOSTICS_BYTES: usize = 4 * 1024;
/// The longest text of a diagnostic in the preview, in characters (`once check` shows it whole).
const DIAGNOSTIC_TEXT: usize = 300;
/// How many targets the overview lists; `once_query_targets` goes on from its cursor.
const TARGETS_SHOWN: u32 = 20;

/// Arguments of [`workspace`] (none).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceQuery {}

/// A manifest file and its content hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestInfo {
    /// Path relative to the root.
    pub path: String,
    /// BLAKE3 of its bytes, hex.
    pub blake3: String,
}

/// Sizes of the graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Targets.
    pub targets: u32,
    /// Actions (target capabilities).
    pub capabilities: u32,
    /// Edges between targets, of every kind, those that order nothing included: what
    /// `once_query_graph` and the picture list.
    pub edges: u32,
    /// Edges between actions (`target:capability` → `target:capability`).
    pub action_edges: u32,
}

/// How many targets use a kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindUse {
    /// Kind name.
    pub kind: String,
    /// Number of targets.
    pub targets: u32,
}

/// Sizes of project memory. Computed outside this crate (by `once-memory`), so the graph
/// overview leaves it unknown and the caller that owns both fills it in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryCounts {
    /// Entries that parse.
    pub entries: u32,
    /// Entries whose linked files or targets changed since they were written.
    pub stale: u32,
    /// Entry files that do not parse.
    pub broken: u32,
}

/// Change sets by decision. Computed outside this crate (by `once-changes`), like
/// [`MemoryCounts`], and filled in by the caller that owns both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeSetCounts {
    /// Proposals waiting for a person to apply or reject them.
    pub pending: u32,
    /// Proposals applied.
    pub applied: u32,
    /// Proposals rejected.
    pub rejected: u32,
    /// Applies that could be neither finished nor undone (each set's `reason` says why).
    #[serde(default)]
    pub failed: u32,
}

/// Overview of a workspace.
#[derive(Debug, Clone, Serialize)]
pub struct WorkspaceInfo {
    /// Absolute root folder.
    pub root: String,
    /// Workspace name.
    pub name: String,
    /// The first 20 manifests, root first.
    pub manifests: Vec<ManifestInfo>,
    /// Manifests over all.
    pub manifests_total: u32,
    /// Sizes.
    pub counts: Counts,
    /// Kinds used, by name.
    pub kinds_in_use: Vec<KindUse>,
    /// The first problems found (at most 10, and fewer when they are long), errors first.
    pub diagnostics: Vec<Diagnostic>,
    /// Problems over all.
    pub diagnostics_total: u32,
    /// The first 20 targets (as `targets` with no filter and `limit` 20).
    pub targets: Vec<TargetRow>,
    /// Cursor for `targets` to get the next page; null when all are shown.
    pub next_cursor: Option<String>,
    /// Project memory sizes; null when unknown.
    pub memory: Option<MemoryCounts>,
    /// Change sets by decision; null when unknown.
    pub change_sets: Option<ChangeSetCounts>,
}

fn n(v: usize) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// The workspace overview.
pub fn workspace(ws: &Workspace) -> WorkspaceInfo {
    let mut kinds: BTreeMap<&str, u32> = BTreeMap::new();
    for t in &ws.targets {
        *kinds.entry(t.kind.as_str()).or_default() += 1;
    }
    // Errors first: they are what stops the graph from being queried.
    let (errors, warnings): (Vec<&Diagnostic>, Vec<&Diagnostic>) = ws
        .diagnostics()
        .iter()
        .partition(|d| d.severity == crate::Severity::Error);
    // An empty query never fails (no cursor, no filters).
    let first_page = TargetsQuery {
        limit: Some(TARGETS_SHOWN),
        ..TargetsQuery::default()
    };
    let page = targets(ws, &first_page).ok();
    let mut diagnostics: Vec<Diagnostic> = errors
        .into_iter()
        .chain(warnings)
        .take(DIAGNOSTICS_SHOWN)
        .map(preview)
        .collect();
    diagnostics.truncate(super::page::fitting(&diagnostics, DIAGNOSTICS_BYTES));
    WorkspaceInfo {
        root: ws.root().to_string_lossy().into_owned(),
        name: ws.name.clone(),
        manifests: ws
            .manifests
            .iter()
            .take(MANIFESTS_SHOWN)
            .map(|m| ManifestInfo {
                path: m.rel.clone(),
                blake3: m.hash.to_hex().to_string(),
            })
            .collect(),
        manifests_total: n(ws.manifests.len()),
        counts: Counts {
            targets: n(ws.targets.len()),
            capabilities: n(ws.graph.action_count()),
            edges: n(super::edges::edge_count(ws)),
            action_edges: n(ws.graph.edge_count()),
        },
        kinds_in_use: kinds
            .into_iter()
            .map(|(k, c)| KindUse {
                kind: k.to_string(),
                targets: c,
            })
            .collect(),
        diagnostics,
        diagnostics_total: n(ws.diagnostics().len()),
        next_cursor: page.as_ref().and_then(|p| p.next_cursor.clone()),
        targets: page.map(|p| p.targets).unwrap_or_default(),
        memory: None,
        change_sets: None,
    }
}

pub(crate) fn diagnostic_schema() -> Value {
    record(
        "A problem in a manifest",
        vec![
            ("file", string("Manifest path relative to the root")),
            ("line", integer("1-based line")),
            ("column", integer("1-based column, in characters")),
            (
                "severity",
                enumeration(&["error", "warning"], "Errors make the workspace invalid"),
            ),
            ("code", string("Stable kebab-case code, e.g. `unknown-key`")),
            ("message", string("What is wrong")),
            ("expected", nullable(string("What would be valid"))),
            ("found", nullable(string("What was found"))),
            ("help", nullable(string("Suggested fix"))),
        ],
    )
}

pub(crate) fn output_schema() -> Value {
    record(
        "Overview of the workspace",
        vec![
            ("root", string("Absolute root folder")),
            ("name", string("Workspace name")),
            (
                "manifests",
                array(
                    record(
                        "A manifest",
                        vec![
                            ("path", string("Relative path")),
                            ("blake3", string("BLAKE3 hash, hex")),
                        ],
                    ),
                    "The first 20 manifests, root first",
                ),
            ),
            ("manifests_total", integer("Manifests over all")),
            (
                "counts",
                record(
                    "Graph sizes",
                    vec![
                        ("targets", integer("Targets")),
                        ("capabilities", integer("Actions (target capabilities)")),
                        (
                            "edges",
                            integer(
                                "Edges between targets, of every kind, those that order nothing included (not actions: see action_edges)",
                            ),
                        ),
                        (
                            "action_edges",
                            integer(
                                "Edges between actions, `target:capability` to `target:capability`",
                            ),
                        ),
                    ],
                ),
            ),
            (
                "kinds_in_use",
                array(
                    record(
                        "A kind in use",
                        vec![
                            ("kind", string("Kind name")),
                            ("targets", integer("Targets of it")),
                        ],
                    ),
                    "Kinds used",
                ),
            ),
            (
                "diagnostics",
                array(
                    diagnostic_schema(),
                    "The first problems found (at most 10), errors first; `once check` prints them all",
                ),
            ),
            ("diagnostics_total", integer("Problems over all")),
            ("targets", array(row_schema(), "The first 20 targets")),
            (
                "next_cursor",
                nullable(string("Pass as `cursor` to once_query_targets for more")),
            ),
            (
                "memory",
                nullable(record(
                    "Project memory sizes",
                    vec![
                        ("entries", integer("Entries that parse")),
                        (
                            "stale",
                            integer("Entries whose linked files or targets changed"),
                        ),
                        ("broken", integer("Entry files that do not parse")),
                    ],
                )),
            ),
            (
                "change_sets",
                nullable(record(
                    "Change sets proposed by agents, by decision",
                    vec![
                        (
                            "pending",
                            integer("Waiting for a person: `once changes list`"),
                        ),
                        ("applied", integer("Applied")),
                        ("rejected", integer("Rejected, kept with the decision")),
                        (
                            "failed",
                            integer("Applies that could be neither finished nor undone"),
                        ),
                    ],
                )),
            ),
        ],
    )
}

pub(crate) fn input_schema() -> Value {
    object("Overview of the workspace; takes no arguments", vec![], &[])
}

/// A diagnostic as the overview shows it: each text cut to [`DIAGNOSTIC_TEXT`] characters, so
/// one that quotes a huge key or value cannot outgrow the answer.
fn preview(diagnostic: &Diagnostic) -> Diagnostic {
    let cut = |text: &str| super::error::clip_to(text, DIAGNOSTIC_TEXT);
    Diagnostic {
        file: cut(&diagnostic.file),
        message: cut(&diagnostic.message),
        expected: diagnostic.expected.as_deref().map(cut),
        found: diagnostic.found.as_deref().map(cut),
        help: diagnostic.help.as_deref().map(cut),
        ..diagnostic.clone()
    }
}
