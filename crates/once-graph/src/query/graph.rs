//! `graph`: dependencies, dependents, paths and run order.
//!
//! Works on the precomputed adjacency of [`crate::graph::Graph`]; must never
//! rebuild the graph or walk more than the part reachable from the target.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::schema_util::{array, boolean, enumeration, integer, object, string, strings};
use super::{QueryError, action_name, find_target, page};
use crate::Workspace;
use crate::graph::{reach, shortest_path};

/// What to compute.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GraphMode {
    /// What the target needs.
    #[default]
    Deps,
    /// What needs the target.
    Dependents,
    /// Shortest dependency path from `target` to `to`.
    Path,
    /// Topological waves of actions to run `target:capability`.
    Order,
}

/// Arguments of [`graph`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphQuery {
    /// Mode.
    pub mode: GraphMode,
    /// `target` or `target:capability`.
    pub target: String,
    /// Path mode: the other end.
    #[serde(default)]
    pub to: Option<String>,
    /// Deps/dependents: follow edges transitively.
    #[serde(default)]
    pub transitive: Option<bool>,
    /// Work on actions of this capability (same as `target:capability`).
    #[serde(default)]
    pub capability: Option<String>,
    /// `next_cursor` of the previous page.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Page size, default 50, max 200.
    #[serde(default)]
    pub limit: Option<u32>,
}

/// A node reached from the query target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphNode {
    /// `target` or `target:capability`.
    pub name: String,
    /// Distance in edges (1 = direct).
    pub depth: u32,
}

/// The answer; which fields are present depends on `mode`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphAnswer {
    /// The mode answered.
    pub mode: GraphMode,
    /// The start node, normalized (`t` or `t:cap`).
    pub target: String,
    /// Deps/dependents: this page of nodes, by depth, then target name, then capability name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<GraphNode>>,
    /// Deps/dependents: matching nodes over all pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u32>,
    /// Deps/dependents: cursor of the next page (absent on the last page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Path: the other end, normalized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Path: the nodes from `target` to `to`; null when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<Vec<String>>,
    /// Path: why there is no path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Order: actions in waves; each wave depends only on earlier ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waves: Option<Vec<Vec<String>>>,
}

/// A resolved `t` or `t:cap`.
struct Node {
    target: usize,
    cap: Option<usize>,
}

fn parse_node(ws: &Workspace, text: &str, capability: Option<&str>) -> Result<Node, QueryError> {
    let (tname, cap) = match text.split_once(':') {
        Some((t, c)) => {
            if let Some(other) = capability.filter(|o| *o != c) {
                return Err(QueryError::InvalidArgument {
                    message: format!(
                        "`{text}` names capability `{c}` but `capability` is `{other}`; give it only once"
                    ),
                });
            }
            (t, Some(c))
        }
        None => (text, capability),
    };
    let target = find_target(ws, tname)?;
    let cap = match cap {
        None => None,
        Some(c) => {
            let t = &ws.targets[target];
            Some(
                t.capabilities
                    .iter()
                    .position(|x| &*x.name == c)
                    .ok_or_else(|| QueryError::NoSuchCapability {
                        target: t.name.clone(),
                        capability: c.to_string(),
                        near: {
                            let n =
                                crate::suggest::near(c, t.capabilities.iter().map(|x| &*x.name), 3);
                            if n.is_empty() {
                                t.capabilities.iter().map(|x| x.name.to_string()).collect()
                            } else {
                                n
                            }
                        },
                    })?,
            )
        }
    };
    Ok(Node { target, cap })
}

fn node_name(ws: &Workspace, n: &Node) -> String {
    match n.cap {
        Some(c) => action_name(ws, ws.graph.action(n.target, c)),
        None => ws
            .targets
            .get(n.target)
            .map(|t| t.name.clone())
            .unwrap_or_default(),
    }
}

fn empty(mode: GraphMode, target: String) -> GraphAnswer {
    GraphAnswer {
        mode,
        target,
        nodes: None,
        total: None,
        next_cursor: None,
        to: None,
        path: None,
        reason: None,
        waves: None,
    }
}

/// Answers a graph question.
pub fn graph(ws: &Workspace, q: &GraphQuery) -> Result<GraphAnswer, QueryError> {
    let start = parse_node(ws, &q.target, q.capability.as_deref())?;
    let start_name = node_name(ws, &start);
    let g = &ws.graph;
    let label = |id: u32, action: bool| -> String {
        if action {
            action_name(ws, id)
        } else {
            ws.targets
                .get(id as usize)
                .map(|t| t.name.clone())
                .unwrap_or_default()
        }
    };
    let (id, action) = match start.cap {
        Some(c) => (g.action(start.target, c), true),
        None => (u32::try_from(start.target).unwrap_or(u32::MAX), false),
    };
    match q.mode {
        GraphMode::Deps | GraphMode::Dependents => {
            if q.to.is_some() {
                return Err(QueryError::InvalidArgument {
                    message: "`to` is only used with mode `path`".into(),
                });
            }
            let adj = match (q.mode, action) {
                (GraphMode::Deps, true) => g.action_adjacency(),
                (GraphMode::Deps, false) => g.target_adjacency(),
                (_, true) => g.action_reverse(),
                (_, false) => g.target_reverse(),
            };
            let transitive = q.transitive.unwrap_or(false);
            // Ids follow name order (targets sorted by name, actions by target then
            // capability), so sorting ids avoids building every label.
            let mut found = reach(adj, id, transitive);
            found.sort_unstable_by_key(|&(n, depth)| (depth, n));
            let mode = if q.mode == GraphMode::Deps {
                "deps"
            } else {
                "dependents"
            };
            let fp = page::fingerprint(&[mode, &start_name, if transitive { "t" } else { "d" }]);
            let (s, e, next) = page::window(q.cursor.as_deref(), q.limit, &fp, found.len())?;
            let total = u32::try_from(found.len()).unwrap_or(u32::MAX);
            let mut out = empty(q.mode, start_name);
            out.nodes = Some(
                found[s..e]
                    .iter()
                    .map(|&(n, depth)| GraphNode {
                        name: label(n, action),
                        depth,
                    })
                    .collect(),
            );
            out.total = Some(total);
            out.next_cursor = next;
            Ok(out)
        }
        GraphMode::Path => {
            let Some(to_text) = &q.to else {
                return Err(QueryError::InvalidArgument {
                    message: "mode `path` needs `to`: the target (or `target:capability`) to reach"
                        .into(),
                });
            };
            let to = parse_node(
                ws,
                to_text,
                if to_text.contains(':') {
                    None
                } else {
                    q.capability.as_deref()
                },
            )?;
            if to.cap.is_some() != action {
                return Err(QueryError::InvalidArgument {
                    message: "`target` and `to` must both be targets or both be `target:capability` actions".into(),
                });
            }
            let to_id = match to.cap {
                Some(c) => g.action(to.target, c),
                None => u32::try_from(to.target).unwrap_or(u32::MAX),
            };
            let adj = if action {
                g.action_adjacency()
            } else {
                g.target_adjacency()
            };
            let mut out = empty(q.mode, start_name.clone());
            let to_name = node_name(ws, &to);
            match shortest_path(adj, id, to_id) {
                Some(p) => out.path = Some(p.into_iter().map(|n| label(n, action)).collect()),
                None => {
                    out.reason = Some(format!(
                        "`{start_name}` does not depend on `{to_name}`, directly or transitively; try the reverse direction (target `{to_name}`, to `{start_name}`)"
                    ))
                }
            }
            out.to = Some(to_name);
            Ok(out)
        }
        GraphMode::Order => {
            let Some(c) = start.cap else {
                let caps: Vec<&str> = ws.targets[start.target]
                    .capabilities
                    .iter()
                    .map(|c| &*c.name)
                    .collect();
                return Err(QueryError::InvalidArgument {
                    message: format!(
                        "mode `order` needs a capability: pass `target` as `{start_name}:CAP` or set `capability`; `{start_name}` has: {}",
                        caps.join(", ")
                    ),
                });
            };
            let a = g.action(start.target, c);
            match g.waves(&[a]) {
                Ok(w) => {
                    let mut out = empty(q.mode, start_name);
                    out.waves = Some(
                        w.into_iter()
                            .map(|wave| wave.into_iter().map(|n| action_name(ws, n)).collect())
                            .collect(),
                    );
                    Ok(out)
                }
                Err(left) => Err(QueryError::InvalidArgument {
                    message: format!(
                        "`{start_name}` cannot be ordered: its dependencies form a cycle among {}; fix the `dependency-cycle` diagnostic (see once_query_workspace)",
                        left.iter()
                            .take(10)
                            .map(|&n| action_name(ws, n))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                }),
            }
        }
    }
}

pub(crate) fn output_schema() -> Value {
    object(
        "Answer of a graph query; the fields present depend on `mode`",
        vec![
            (
                "mode",
                enumeration(
                    &["deps", "dependents", "path", "order"],
                    "The mode answered",
                ),
            ),
            (
                "target",
                string("Start node, `target` or `target:capability`"),
            ),
            (
                "nodes",
                array(
                    object(
                        "A reached node",
                        vec![
                            ("name", string("`target` or `target:capability`")),
                            ("depth", integer("Distance in edges, 1 = direct")),
                        ],
                        &["name", "depth"],
                    ),
                    "deps/dependents: this page of nodes, by depth then name",
                ),
            ),
            ("total", integer("deps/dependents: nodes over all pages")),
            (
                "next_cursor",
                string(
                    "deps/dependents: pass as `cursor` for the next page; absent on the last page",
                ),
            ),
            ("to", string("path: the other end")),
            (
                "path",
                strings(
                    "path: nodes from `target` to `to`; absent when there is no path (see `reason`)",
                ),
            ),
            ("reason", string("path: why there is no path")),
            (
                "waves",
                array(
                    strings("Actions that can run in parallel"),
                    "order: actions in topological waves, dependencies first",
                ),
            ),
        ],
        &["mode", "target"],
    )
}

pub(crate) fn input_schema() -> Value {
    object(
        "Dependencies, dependents, paths and run order in the build graph",
        vec![
            (
                "mode",
                enumeration(
                    &["deps", "dependents", "path", "order"],
                    "deps: what `target` needs; dependents: what needs it; path: shortest dependency path to `to`; order: waves of actions to run `target:capability`",
                ),
            ),
            (
                "target",
                string("A target name, or `target:capability` to work on actions"),
            ),
            (
                "to",
                string("mode path only: the target (or `target:capability`) to reach"),
            ),
            (
                "transitive",
                boolean("deps/dependents: include indirect ones (with depth); default false"),
            ),
            (
                "capability",
                string("Work on this capability's actions; same as writing `target:capability`"),
            ),
            (
                "cursor",
                string("`next_cursor` from the previous page, unchanged"),
            ),
            ("limit", integer("Page size, 1-200, default 50")),
        ],
        &["mode", "target"],
    )
}
