//! `graph`: dependencies, dependents, paths and run order.
//!
//! Every mode answers a page of nodes with the total over all pages, so an answer stays small
//! however long the chain behind it. Works on the precomputed adjacency of
//! [`crate::graph::Graph`]; must never rebuild the graph, walk more than the part reachable from
//! the target, or return a list without a page bound.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::clip;
use super::schema_util::{array, boolean, enumeration, integer, object, string};
use super::{QueryError, action_name, edges, find_target, page};
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
    /// Most nodes per page, default 50, max 200; a page also ends at about 12 KB of nodes.
    #[serde(default)]
    pub limit: Option<u32>,
}

/// A node of the answer: reached from the query target, on the path, or in the run order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphNode {
    /// `target` or `target:capability`.
    pub name: String,
    /// Deps/dependents: distance in edges (1 = direct). Path: position from `target` (0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    /// Order: the wave the action runs in (1 runs first); it depends only on earlier waves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wave: Option<u32>,
    /// Deps/dependents of a target, direct edges (depth 1): what the edge is for (`normal`,
    /// `dev`, `build`, `optional`, `declared`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kinds: Option<Vec<String>>,
    /// Deps/dependents of a target, direct edges: whether the edge orders actions (`false`: it
    /// would close a cycle, so it is recorded and orders nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orders: Option<bool>,
}

/// The answer: a page of nodes in every mode, plus what only some modes have.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphAnswer {
    /// The mode answered.
    pub mode: GraphMode,
    /// The start node, normalized (`t` or `t:cap`).
    pub target: String,
    /// This page of nodes. Deps/dependents: by depth, then target name, then capability name.
    /// Path: from `target` to `to`. Order: by wave, then name.
    pub nodes: Vec<GraphNode>,
    /// Nodes over all pages (path: nodes on the path, both ends included; 0 when there is none).
    pub total: u32,
    /// Cursor of the next page (absent on the last page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Path: the other end, normalized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Path: why there is no path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Order: how many waves there are over all pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wave_count: Option<u32>,
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
                        "`{}` names capability `{}` but `capability` is `{}`; give it only once",
                        clip(text),
                        clip(c),
                        clip(other)
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
                                // Every name, as long as the list stays short to read.
                                t.capabilities
                                    .iter()
                                    .take(10)
                                    .map(|x| x.name.to_string())
                                    .collect()
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

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The page of `items` the cursor and limit select, as an answer with its total. The
/// fingerprint names the mode and its arguments, so a cursor of another question is refused.
fn paged<T>(
    q: &GraphQuery,
    target: String,
    fingerprint: &[&str],
    items: &[T],
    node: impl Fn(usize, &T) -> GraphNode,
) -> Result<GraphAnswer, QueryError> {
    let fp = page::fingerprint(fingerprint);
    let (start, end, next_cursor) = page::window(q.cursor.as_deref(), q.limit, &fp, items.len())?;
    let mut nodes: Vec<GraphNode> = (start..end).map(|i| node(i, &items[i])).collect();
    let next_cursor = page::fit(&mut nodes, start, next_cursor, &fp);
    Ok(GraphAnswer {
        mode: q.mode,
        target,
        nodes,
        total: count(items.len()),
        next_cursor,
        to: None,
        reason: None,
        wave_count: None,
    })
}

/// `a, b, c` for the first names of a list, with how many more there are: an error message
/// stays short whatever the manifest declares.
fn some_names<'a>(names: impl ExactSizeIterator<Item = &'a str>) -> String {
    const SHOWN: usize = 10;
    let more = names.len().saturating_sub(SHOWN);
    let mut text = names.take(SHOWN).collect::<Vec<_>>().join(", ");
    if more > 0 {
        text.push_str(&format!(" and {more} more"));
    }
    text
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
            // A target's direct edges come with their kinds, those that order nothing too:
            // they are in no adjacency, and an agent must still see them.
            let direct = if action {
                Vec::new()
            } else if q.mode == GraphMode::Deps {
                edges::deps_of(ws, start.target)
            } else {
                edges::dependents_of(ws, start.target)
            };
            let other_end = |e: &edges::TargetEdge| {
                let end = if q.mode == GraphMode::Deps {
                    e.to
                } else {
                    e.from
                };
                u32::try_from(end).unwrap_or(u32::MAX)
            };
            for e in direct.iter().filter(|e| !e.orders) {
                let end = other_end(e);
                found.retain(|&(n, _)| n != end);
                found.push((end, 1));
            }
            found.sort_unstable_by_key(|&(n, depth)| (depth, n));
            let edge_of = |n: u32| direct.iter().find(|e| other_end(e) == n);
            let mode = if q.mode == GraphMode::Deps {
                "deps"
            } else {
                "dependents"
            };
            paged(
                q,
                start_name.clone(),
                &[mode, &start_name, if transitive { "t" } else { "d" }],
                &found,
                |_, &(n, depth)| {
                    let edge = if depth == 1 { edge_of(n) } else { None };
                    GraphNode {
                        name: label(n, action),
                        depth: Some(depth),
                        wave: None,
                        kinds: edge.map(|e| e.kinds.iter().map(|k| (*k).to_string()).collect()),
                        orders: edge.map(|e| e.orders),
                    }
                },
            )
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
            let to_name = node_name(ws, &to);
            let path = shortest_path(adj, id, to_id).unwrap_or_default();
            let mut out = paged(
                q,
                start_name.clone(),
                &["path", &start_name, &to_name],
                &path,
                |i, &n| GraphNode {
                    name: label(n, action),
                    depth: Some(count(i)),
                    wave: None,
                    kinds: None,
                    orders: None,
                },
            )?;
            if path.is_empty() {
                out.reason = Some(format!(
                    "`{start_name}` does not depend on `{to_name}`, directly or transitively; try the reverse direction (target `{to_name}`, to `{start_name}`)"
                ));
            }
            out.to = Some(to_name);
            Ok(out)
        }
        GraphMode::Order => {
            let Some(c) = start.cap else {
                let caps = &ws.targets[start.target].capabilities;
                return Err(QueryError::InvalidArgument {
                    message: format!(
                        "mode `order` needs a capability: pass `target` as `{start_name}:CAP` or set `capability`; `{start_name}` has: {}",
                        some_names(caps.iter().map(|c| &*c.name))
                    ),
                });
            };
            let a = g.action(start.target, c);
            match g.waves(&[a]) {
                Ok(waves) => {
                    // Flattened in run order, each action with its wave, so a page is a slice.
                    let order: Vec<(u32, u32)> = waves
                        .iter()
                        .zip(1u32..)
                        .flat_map(|(wave, w)| wave.iter().map(move |&n| (n, w)))
                        .collect();
                    let mut out = paged(
                        q,
                        start_name.clone(),
                        &["order", &start_name],
                        &order,
                        |_, &(n, wave)| GraphNode {
                            name: action_name(ws, n),
                            depth: None,
                            wave: Some(wave),
                            kinds: None,
                            orders: None,
                        },
                    )?;
                    out.wave_count = Some(count(waves.len()));
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
        "Answer of a graph query: a page of nodes in every mode, with the total over all pages",
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
                        "A node",
                        vec![
                            ("name", string("`target` or `target:capability`")),
                            (
                                "depth",
                                integer(
                                    "deps/dependents: distance in edges, 1 = direct; path: position from `target`, 0 = `target`",
                                ),
                            ),
                            (
                                "wave",
                                integer(
                                    "order: the wave it runs in, 1 first; it needs only earlier waves",
                                ),
                            ),
                            (
                                "kinds",
                                array(
                                    enumeration(edges::EDGE_KINDS, "An edge kind"),
                                    "deps/dependents of a target, depth 1: what the edge is for; `declared`: a once.toml `deps` states it, no ecosystem manifest",
                                ),
                            ),
                            (
                                "orders",
                                boolean(
                                    "deps/dependents of a target, depth 1: whether the edge orders actions; false: it would close a cycle, so it orders nothing (and is not followed transitively)",
                                ),
                            ),
                        ],
                        &["name"],
                    ),
                    "This page of nodes. deps/dependents: by depth then name; path: from `target` to `to`; order: by wave then name",
                ),
            ),
            (
                "total",
                integer("Nodes over all pages; path: nodes on the path, 0 when there is none"),
            ),
            (
                "next_cursor",
                string(
                    "Pass as `cursor`, with the same arguments, for the next page; absent on the last page",
                ),
            ),
            ("to", string("path: the other end")),
            ("reason", string("path: why there is no path")),
            ("wave_count", integer("order: waves over all pages")),
        ],
        &["mode", "target", "nodes", "total"],
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
                string("`next_cursor` from the previous page, unchanged, with the same arguments"),
            ),
            (
                "limit",
                integer(
                    "Most nodes per page in every mode, 1-200, default 50; a page of long names ends sooner",
                ),
            ),
        ],
        &["mode", "target"],
    )
}
