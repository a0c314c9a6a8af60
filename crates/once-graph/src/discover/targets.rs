//! Inferred targets made graph targets: excluded packages left out, capabilities built on the
//! kind's, and edges that never close a cycle.
//!
//! This is where discovery's answers meet the model. It must never invent a
//! capability the manifest does not support (a package's scripts are exactly its
//! capabilities) and never turn a legal ecosystem graph into a cycle error.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::{Edge, EdgeKind, Inferred};
use crate::kind::find_kind;
use crate::manifest::{Settings, Shared};
use crate::model::{Capability, Inference, Origin, Target};
use crate::template::Template;

/// Leaves out the inferred targets whose names match an `exclude` glob of `[discover]`, and the
/// edges that lead to them.
pub(crate) fn exclude(found: &mut Vec<Inferred>, globs: &[String]) {
    found.retain(|t| !t.name.is_empty());
    let Some(set) = super::reader::globset_of(globs) else {
        return;
    };
    found.retain(|t| !set.is_match(&t.name));
    // A package is its ecosystem and its folder: an edge leads to an excluded one by those.
    let kept: std::collections::HashSet<(super::Ecosystem, String)> = found
        .iter()
        .map(|t| (t.ecosystem, t.path.clone()))
        .collect();
    for t in found.iter_mut() {
        let ecosystem = t.ecosystem;
        t.edges
            .retain(|e| kept.contains(&(ecosystem, e.folder.clone())));
    }
}

/// The graph target of an inferred one; `file` is where its manifest sits among the
/// workspace's files. `None` when the kind is unknown (an ecosystem module's bug).
pub(crate) fn to_target(
    inferred: Inferred,
    file: usize,
    settings: &Settings,
    shared: &mut Shared,
    problems: &mut Vec<String>,
) -> Option<Target> {
    let kind = find_kind(inferred.kind)?;
    let defaults = shared.kind_capabilities(kind, settings);
    let capabilities: Arc<[Capability]> = match inferred.capabilities {
        None => defaults,
        Some(list) => {
            // Not a default's name: the inputs every default of the kind shares.
            let generic_inputs: Arc<[String]> = defaults
                .first()
                .map_or_else(|| Arc::new([]) as Arc<[String]>, |c| c.inputs.clone());
            let mut caps: Vec<Capability> = Vec::with_capacity(list.len());
            for ic in list {
                let command = shared.text(&ic.command);
                let template = match shared.template(&command) {
                    Ok(t) => t,
                    Err(e) => {
                        problems.push(format!(
                            "the inferred command `{}` of `{}:{}` is not a valid command: {}",
                            ic.command, inferred.name, ic.name, e.message
                        ));
                        Arc::new(Template::broken(&e))
                    }
                };
                let base = defaults.iter().find(|c| *c.name == *ic.name);
                let mut cap = match base {
                    Some(b) => b.clone(),
                    None => Capability {
                        name: shared.text(&ic.name),
                        description: None,
                        command: command.clone(),
                        template: template.clone(),
                        params: Arc::new([]),
                        inputs: generic_inputs.clone(),
                        outputs: Arc::new([]),
                        env: BTreeMap::new(),
                        deadline: settings.default_deadline,
                        pass_env: Arc::new([]),
                        env_file: None,
                        cache: true,
                        persistent: false,
                        placement: crate::model::Placement::default(),
                        retries: 0,
                        mutex: None,
                        needs: None,
                        stands_for: None,
                        batch: None,
                        origin: Origin::Inferred,
                    },
                };
                cap.command = command;
                cap.template = template;
                if let Some(inputs) = &ic.inputs {
                    cap.inputs = inputs.clone().into();
                }
                cap.stands_for = ic.stands_for;
                cap.batch = ic.batch;
                cap.description = Some(Arc::from(ic.description.as_str()));
                cap.origin = Origin::Inferred;
                if ic.persistent {
                    cap.persistent = true;
                    cap.cache = false;
                }
                caps.push(cap);
            }
            caps.sort_by(|a, b| a.name.cmp(&b.name));
            caps.dedup_by(|a, b| a.name == b.name);
            caps.into()
        }
    };
    let mut fields = inferred.fields;
    // An inferred target has no required field without a default: the ecosystem gave its own.
    kind.fill_defaults(&inferred.name, &mut fields);
    let mut edges: Vec<Edge> = inferred.edges;
    edges.sort();
    edges.dedup();
    Some(Target {
        name: inferred.name,
        kind: kind.name.clone(),
        path: inferred.path,
        description: None,
        tags: Vec::new(),
        fields,
        evaluator: None,
        capabilities,
        inference: Some(Arc::new(Inference {
            ecosystem: inferred.ecosystem,
            // Named once every name is final (`workspace::overlay`), from the folders.
            edges: Vec::new(),
            folder_edges: edges.into_iter().map(|e| (e.folder, e.kind)).collect(),
            unordered: Vec::new(),
            source: (file, inferred.offset),
            overlay: None,
        })),
        file,
        offset: inferred.offset,
    })
}

/// Which inferred edges may order actions: all of them, unless together with the declared
/// `deps` they close a cycle. Then edges are added strongest first (normal, build, optional,
/// dev) and each that would close a cycle is left unordered. `targets` are all the workspace's
/// targets with their declared target-level deps by name.
pub(crate) fn unordered_edges(targets: &[(&Target, Vec<&str>)]) -> Vec<Vec<(String, EdgeKind)>> {
    let index: HashMap<&str, usize> = targets
        .iter()
        .enumerate()
        .map(|(i, (t, _))| (t.name.as_str(), i))
        .collect();
    let mut adjacency: Vec<Vec<usize>> = targets
        .iter()
        .map(|(_, declared)| {
            declared
                .iter()
                .filter_map(|d| index.get(d).copied())
                .collect()
        })
        .collect();
    let mut inferred: Vec<(u8, usize, usize, EdgeKind, &str)> = Vec::new();
    for (i, (t, _)) in targets.iter().enumerate() {
        let Some(inf) = &t.inference else { continue };
        for (to, kind) in &inf.edges {
            if let Some(&j) = index.get(to.as_str()) {
                let rank = match kind {
                    EdgeKind::Normal => 0,
                    EdgeKind::Build => 1,
                    EdgeKind::Optional => 2,
                    EdgeKind::Dev => 3,
                };
                inferred.push((rank, i, j, *kind, to.as_str()));
            }
        }
    }
    let mut unordered = vec![Vec::new(); targets.len()];
    // Fast path: the whole graph is acyclic, as a Cargo or uv graph without dev cycles is.
    let mut all = adjacency.clone();
    for &(_, i, j, _, _) in &inferred {
        all[i].push(j);
    }
    if is_acyclic(&all) {
        return unordered;
    }
    inferred.sort_by_key(|&(rank, i, j, _, _)| (rank, i, j));
    for (_, i, j, kind, to) in inferred {
        if i == j || reaches(&adjacency, j, i) {
            unordered[i].push((to.to_string(), kind));
        } else {
            adjacency[i].push(j);
        }
    }
    unordered
}

/// Whether the graph has no cycle (Kahn's algorithm).
fn is_acyclic(adjacency: &[Vec<usize>]) -> bool {
    let mut indegree = vec![0usize; adjacency.len()];
    for next in adjacency.iter().flatten() {
        indegree[*next] += 1;
    }
    let mut ready: Vec<usize> = (0..adjacency.len()).filter(|&i| indegree[i] == 0).collect();
    let mut seen = 0;
    while let Some(n) = ready.pop() {
        seen += 1;
        for &m in &adjacency[n] {
            indegree[m] -= 1;
            if indegree[m] == 0 {
                ready.push(m);
            }
        }
    }
    seen == adjacency.len()
}

/// Whether `to` can be reached from `from`.
fn reaches(adjacency: &[Vec<usize>], from: usize, to: usize) -> bool {
    let mut seen = vec![false; adjacency.len()];
    let mut stack = vec![from];
    while let Some(n) = stack.pop() {
        if n == to {
            return true;
        }
        if std::mem::replace(&mut seen[n], true) {
            continue;
        }
        stack.extend(adjacency[n].iter().copied());
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover::Ecosystem;

    fn target(name: &str, edges: &[(&str, EdgeKind)]) -> Target {
        Target {
            name: name.into(),
            kind: "command".into(),
            path: name.into(),
            description: None,
            tags: Vec::new(),
            fields: BTreeMap::new(),
            evaluator: None,
            capabilities: Arc::new([]),
            inference: Some(Arc::new(Inference {
                ecosystem: Ecosystem::Cargo,
                edges: edges.iter().map(|(t, k)| (t.to_string(), *k)).collect(),
                folder_edges: Vec::new(),
                unordered: Vec::new(),
                source: (0, 0),
                overlay: None,
            })),
            file: 0,
            offset: 0,
        }
    }

    #[test]
    fn an_acyclic_graph_keeps_every_edge() {
        let a = target("a", &[("b", EdgeKind::Normal), ("c", EdgeKind::Dev)]);
        let b = target("b", &[("c", EdgeKind::Build)]);
        let c = target("c", &[]);
        let cut = unordered_edges(&[(&a, vec![]), (&b, vec![]), (&c, vec![])]);
        assert!(cut.iter().all(Vec::is_empty), "{cut:?}");
    }

    #[test]
    fn a_dev_edge_closing_a_cycle_is_left_unordered() {
        // b depends on a for real; a's tests use b: legal in Cargo, a cycle for a scheduler.
        let a = target("a", &[("b", EdgeKind::Dev)]);
        let b = target("b", &[("a", EdgeKind::Normal)]);
        let cut = unordered_edges(&[(&a, vec![]), (&b, vec![])]);
        assert_eq!(cut[0], vec![("b".to_string(), EdgeKind::Dev)]);
        assert!(cut[1].is_empty());
    }

    #[test]
    fn declared_deps_count_when_breaking_cycles() {
        // A once.toml dep c → a plus inferred a → c: the inferred edge yields.
        let a = target("a", &[("c", EdgeKind::Optional)]);
        let c = target("c", &[]);
        let cut = unordered_edges(&[(&a, vec![]), (&c, vec!["a"])]);
        assert_eq!(cut[0], vec![("c".to_string(), EdgeKind::Optional)]);
    }

    fn inferred(name: &str, ecosystem: Ecosystem, edges: &[&str]) -> Inferred {
        Inferred {
            name: name.into(),
            kind: "command",
            path: name.into(),
            fields: BTreeMap::new(),
            capabilities: None,
            edges: edges
                .iter()
                .map(|t| Edge {
                    folder: t.to_string(),
                    kind: EdgeKind::Normal,
                })
                .collect(),
            file: 0,
            offset: 0,
            ecosystem,
        }
    }

    #[test]
    fn excluded_targets_take_their_edges_along() {
        let mut found = vec![
            inferred("app", Ecosystem::Cargo, &["bench-x", "lib"]),
            inferred("bench-x", Ecosystem::Cargo, &[]),
            inferred("lib", Ecosystem::Cargo, &[]),
        ];
        exclude(&mut found, &["bench-*".to_string()]);
        let names: Vec<&str> = found.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["app", "lib"]);
        assert_eq!(found[0].edges.len(), 1);
        assert_eq!(found[0].edges[0].folder, "lib");
    }
}
