//! `edges`: every direct edge between two targets, with what it is for and whether it orders
//! actions, as the target, graph and picture answers show them.
//!
//! The graph's target adjacency holds only the edges that order actions; an inferred edge that
//! would close a cycle (a test-only dependency back on a dependent) is recorded on its target's
//! inference and orders nothing. An agent must see both, so every answer about edges is built
//! here from the two. Must never hide an edge the manifests state, nor walk more than the
//! targets it is asked about (plus one pass over the unordered edges for dependents).

use crate::Workspace;
use crate::ecosystem::EdgeKind;

/// The kind of an edge no ecosystem manifest states: a once.toml `deps` (the target's or a
/// capability's) makes it.
pub(crate) const DECLARED: &str = "declared";

/// Every edge kind an answer may name, in the order an edge lists its kinds.
pub(crate) const EDGE_KINDS: &[&str] = &["normal", "dev", "build", "optional", DECLARED];

/// One direct edge between targets, by index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TargetEdge {
    /// The dependent.
    pub from: usize,
    /// The dependency.
    pub to: usize,
    /// What it is for, each once, in [`EDGE_KINDS`] order.
    pub kinds: Vec<&'static str>,
    /// Whether it orders the dependent's actions after the dependency's.
    pub orders: bool,
}

fn index(id: u32) -> usize {
    id as usize
}

/// The edge `from → to`, known to exist, with its kinds.
fn edge(ws: &Workspace, from: usize, to: usize, orders: bool) -> TargetEdge {
    let mut kinds: Vec<EdgeKind> = match (ws.targets.get(from), ws.targets.get(to)) {
        (Some(f), Some(t)) => f.inference.as_deref().map_or_else(Vec::new, |inference| {
            inference
                .edges
                .iter()
                .filter(|(name, _)| *name == t.name)
                .map(|&(_, kind)| kind)
                .collect()
        }),
        _ => Vec::new(),
    };
    kinds.sort_unstable();
    kinds.dedup();
    let mut kinds: Vec<&'static str> = kinds.into_iter().map(EdgeKind::name).collect();
    if kinds.is_empty() {
        kinds.push(DECLARED);
    }
    TargetEdge {
        from,
        to,
        kinds,
        orders,
    }
}

/// The targets `from` reaches through edges that order nothing, by index.
fn unordered_of(ws: &Workspace, from: usize) -> Vec<usize> {
    ws.targets
        .get(from)
        .and_then(|t| t.inference.as_deref())
        .map_or_else(Vec::new, |inference| {
            inference
                .unordered
                .iter()
                .filter_map(|(name, _)| ws.target_index(name))
                .filter(|&to| to != from)
                .collect()
        })
}

/// [`unordered_of`] without repeats: an edge of two kinds is one edge.
fn unordered_targets(ws: &Workspace, from: usize) -> Vec<usize> {
    let mut tos = unordered_of(ws, from);
    tos.sort_unstable();
    tos.dedup();
    tos
}

/// Every direct dependency of target `from`, ordering or not, sorted by name.
pub(crate) fn deps_of(ws: &Workspace, from: usize) -> Vec<TargetEdge> {
    let ordering: &[u32] = ws
        .graph
        .target_adjacency()
        .get(from)
        .map_or(&[], Vec::as_slice);
    let mut tos: Vec<(usize, bool)> = ordering.iter().map(|&to| (index(to), true)).collect();
    tos.extend(unordered_of(ws, from).into_iter().map(|to| (to, false)));
    // An edge that orders through another declaration (a once.toml `deps`) orders: keep `true`.
    tos.sort_unstable_by_key(|&(to, orders)| (to, !orders));
    tos.dedup_by_key(|&mut (to, _)| to);
    tos.into_iter()
        .map(|(to, orders)| edge(ws, from, to, orders))
        .collect()
}

/// Every target depending directly on target `to`, ordering or not, sorted by name.
pub(crate) fn dependents_of(ws: &Workspace, to: usize) -> Vec<TargetEdge> {
    let ordering: &[u32] = ws.graph.target_reverse().get(to).map_or(&[], Vec::as_slice);
    let mut froms: Vec<(usize, bool)> = ordering.iter().map(|&from| (index(from), true)).collect();
    if let Some(name) = ws.targets.get(to).map(|t| t.name.as_str()) {
        for (from, target) in ws.targets.iter().enumerate() {
            let Some(inference) = target.inference.as_deref() else {
                continue;
            };
            if from != to && inference.unordered.iter().any(|(n, _)| n == name) {
                froms.push((from, false));
            }
        }
    }
    froms.sort_unstable_by_key(|&(from, orders)| (from, !orders));
    froms.dedup_by_key(|&mut (from, _)| from);
    froms
        .into_iter()
        .map(|(from, orders)| edge(ws, from, to, orders))
        .collect()
}

/// Every edge of the workspace, by dependent then dependency.
pub(crate) fn all_edges(ws: &Workspace) -> Vec<TargetEdge> {
    (0..ws.targets.len())
        .flat_map(|from| deps_of(ws, from))
        .collect()
}

/// How many edges [`all_edges`] lists, without naming their kinds.
pub(crate) fn edge_count(ws: &Workspace) -> usize {
    (0..ws.targets.len())
        .map(|from| {
            let ordering = ws
                .graph
                .target_adjacency()
                .get(from)
                .map_or(&[][..], Vec::as_slice);
            let extra = unordered_targets(ws, from)
                .into_iter()
                .filter(|&to| {
                    ordering
                        .binary_search(&u32::try_from(to).unwrap_or(u32::MAX))
                        .is_err()
                })
                .count();
            ordering.len() + extra
        })
        .sum()
}
