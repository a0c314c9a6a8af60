//! Targets made a graph: duplicates refused, deps resolved by name into action edges, inferred
//! edges ordered, cycles reported once with where they were declared.
//!
//! It must never fail: an unknown name or a cycle is a diagnostic at the dep that states it.

use std::sync::Arc;

use crate::diagnostic::{Diagnostic, SourceFile};
use crate::graph::{ActionId, Graph};
use crate::manifest::{DepRef, PendingTarget, Shared};
use crate::model::{Capability, Target};
use crate::suggest;

/// A dependency on a persistent capability, which never ends, so what depends on it never starts.
fn depends_on_persistent(
    src: &SourceFile,
    offset: usize,
    who: &str,
    target: &str,
    capability: &str,
) -> Diagnostic {
    src.error(
        offset,
        "depends-on-persistent",
        format!("{who} depends on `{target}:{capability}`, which is persistent and never ends"),
    )
    .help("an action starts when its dependencies succeed; run the server on its own instead")
}

/// Drops duplicates, sorts targets, resolves deps into the graph, finds cycles.
pub(super) fn resolve(
    pending: Vec<PendingTarget>,
    declared: &[String],
    files: &[SourceFile],
    shared: &Shared,
    diags: &mut Vec<Diagnostic>,
) -> (Vec<Target>, Graph) {
    // Sort indices, not the big records; ties keep declaration order, so among
    // duplicates (adjacent after sorting) the first declaration wins.
    let mut order: Vec<usize> = (0..pending.len()).collect();
    order.sort_unstable_by(|&a, &b| {
        pending[a]
            .target
            .name
            .cmp(&pending[b].target.name)
            .then(a.cmp(&b))
    });
    let mut keep: Vec<usize> = Vec::with_capacity(order.len());
    for &i in &order {
        let t = &pending[i].target;
        let Some(&first) = keep.last().filter(|&&k| pending[k].target.name == t.name) else {
            keep.push(i);
            continue;
        };
        let first = &pending[first].target;
        let (Some(src), Some(first_src)) = (files.get(t.file), files.get(first.file)) else {
            continue;
        };
        let (line, _) = first_src.locate(first.offset);
        diags.push(
            src.error(
                t.offset,
                "duplicate-target",
                format!(
                    "target `{}` is already declared at {}:{line}",
                    t.name, first_src.rel
                ),
            )
            .help("target names are unique across all manifests; rename one"),
        );
    }
    drop(order);
    let mut slots: Vec<Option<PendingTarget>> = pending.into_iter().map(Some).collect();
    let mut targets: Vec<Target> = Vec::with_capacity(keep.len());
    let mut deps: Vec<Deps> = Vec::with_capacity(keep.len());
    let mut name_ids: Vec<u32> = Vec::with_capacity(keep.len());
    for p in keep
        .iter()
        .filter_map(|&i| slots.get_mut(i).and_then(Option::take))
    {
        name_ids.push(p.name_id);
        targets.push(p.target);
        deps.push(Deps {
            target: p.target_deps,
            caps: p.cap_deps,
        });
    }
    drop(slots);
    drop(keep);

    let counts: Vec<usize> = targets.iter().map(|t| t.capabilities.len()).collect();
    let mut graph = Graph::new(&counts);
    // Names were interned while reading: a name's id leads to its target.
    let mut by_id: Vec<u32> = vec![u32::MAX; shared.len()];
    for (i, &id) in name_ids.iter().enumerate() {
        if let Some(slot) = by_id.get_mut(id as usize) {
            *slot = u32::try_from(i).unwrap_or(u32::MAX);
        }
    }
    let by_id = |id: u32| {
        by_id
            .get(id as usize)
            .copied()
            .filter(|&i| i != u32::MAX)
            .map(|i| i as usize)
    };
    let find = |name: &str| shared.id(name).and_then(by_id);
    let is_declared = |name: &str| declared.iter().any(|d| d == name);

    for (ti, (t, d)) in targets.iter().zip(&deps).enumerate() {
        let Some(src) = files.get(t.file) else {
            continue;
        };
        for dep in &d.target {
            match by_id(dep.id) {
                Some(di) => {
                    graph.add_target_edge(ti, di);
                    // Both lists are sorted by capability name: a merge walk pairs them.
                    let (mine, theirs) = (&t.capabilities, &targets[di].capabilities);
                    let (mut i, mut j) = (0, 0);
                    while let (Some(x), Some(y)) = (mine.get(i), theirs.get(j)) {
                        match cmp_names(&x.name, &y.name) {
                            std::cmp::Ordering::Less => i += 1,
                            std::cmp::Ordering::Greater => j += 1,
                            std::cmp::Ordering::Equal => {
                                if y.persistent {
                                    diags.push(depends_on_persistent(
                                        src,
                                        dep.offset,
                                        &format!("target `{}`", t.name),
                                        &targets[di].name,
                                        &y.name,
                                    ));
                                }
                                graph.add_edge(graph.action(ti, i), graph.action(di, j));
                                i += 1;
                                j += 1;
                            }
                        }
                    }
                }
                None if is_declared(&dep.text) => {}
                None => diags.push(unknown_target(
                    src,
                    dep.offset,
                    &dep.text,
                    &format!("target `{}`", t.name),
                    &targets,
                )),
            }
        }
        // Inferred edges order like target-level deps, but a server neither waits nor is waited
        // for, and an edge to a target left out is no error: the ecosystem's graph is legal.
        if let Some(inference) = &t.inference {
            for edge in inference
                .edges
                .iter()
                .filter(|e| !inference.unordered.contains(e))
            {
                let Some(di) = find(&edge.0) else { continue };
                graph.add_target_edge(ti, di);
                let (mine, theirs) = (&t.capabilities, &targets[di].capabilities);
                let (mut i, mut j) = (0, 0);
                while let (Some(x), Some(y)) = (mine.get(i), theirs.get(j)) {
                    match cmp_names(&x.name, &y.name) {
                        std::cmp::Ordering::Less => i += 1,
                        std::cmp::Ordering::Greater => j += 1,
                        std::cmp::Ordering::Equal => {
                            if !x.persistent && !y.persistent {
                                graph.add_edge(graph.action(ti, i), graph.action(di, j));
                            }
                            i += 1;
                            j += 1;
                        }
                    }
                }
            }
        }
        for (ci, (c, cdeps)) in t.capabilities.iter().zip(&d.caps).enumerate() {
            for dep in cdeps {
                let (tname, cname) = split_dep(&dep.text, t, c);
                let ctx = || format!("capability `{}` of target `{}`", c.name, t.name);
                let Some(di) = find(tname) else {
                    if !is_declared(tname) {
                        diags.push(unknown_target(src, dep.offset, tname, &ctx(), &targets));
                    }
                    continue;
                };
                let dt = &targets[di];
                match dt.capabilities.iter().position(|x| &*x.name == cname) {
                    Some(dci) => {
                        if dt.capabilities[dci].persistent {
                            diags.push(depends_on_persistent(
                                src,
                                dep.offset,
                                &ctx(),
                                tname,
                                cname,
                            ));
                        }
                        graph.add_edge(graph.action(ti, ci), graph.action(di, dci))
                    }
                    None => {
                        let ctx = ctx();
                        let names: Vec<&str> = dt.capabilities.iter().map(|x| &*x.name).collect();
                        diags.push(
                            src.error(dep.offset, "unknown-capability", format!("{ctx} depends on `{tname}:{cname}`, but target `{tname}` has no capability `{cname}`"))
                                .expected(format!("one of {}", names.iter().map(|n| format!("`{tname}:{n}`")).collect::<Vec<_>>().join(", ")))
                                .found(format!("`{}`", dep.text))
                                .did_you_mean(suggest::best(cname, names.iter().copied()).map(|s| format!("{tname}:{s}"))),
                        );
                    }
                }
            }
        }
    }
    graph.finish();

    // Where an edge was declared: the first target-level dep that yields it,
    // else the first dep of the capability naming it. Looked up only for cycles.
    let origin = |from: ActionId, to: ActionId| -> Option<(usize, usize, bool)> {
        let ((tf, cf), (tt, ct)) = (graph.split(from), graph.split(to));
        let (t, d) = (targets.get(tf)?, deps.get(tf)?);
        let (c, dc) = (
            t.capabilities.get(cf)?,
            targets.get(tt)?.capabilities.get(ct)?,
        );
        if c.name == dc.name
            && let Some(dep) = d.target.iter().find(|dep| by_id(dep.id) == Some(tt))
        {
            return Some((t.file, dep.offset, true));
        }
        d.caps.get(cf)?.iter().find_map(|dep| {
            let (tname, cname) = split_dep(&dep.text, t, c);
            (find(tname) == Some(tt) && cname == &*dc.name).then_some((t.file, dep.offset, false))
        })
    };
    let label = |a: ActionId| {
        let (t, c) = graph.split(a);
        let t = &targets[t];
        format!(
            "{}:{}",
            t.name,
            t.capabilities.get(c).map_or("?", |c| &*c.name)
        )
    };
    // A cycle made only of target-level `deps` repeats for every capability the
    // targets share: report it once per target cycle.
    let mut target_cycles: Vec<(Vec<usize>, Vec<&str>, ActionId, ActionId)> = Vec::new();
    for cycle in graph.cycles() {
        let n = cycle.len();
        let (from, to) = (cycle[n.saturating_sub(2)], cycle[n - 1]);
        let target_level = cycle
            .windows(2)
            .all(|w| origin(w[0], w[1]).is_some_and(|o| o.2));
        if target_level {
            let tcycle: Vec<usize> = cycle.iter().map(|&a| graph.split(a).0).collect();
            let (t, c) = graph.split(cycle[0]);
            let cap = targets[t].capabilities.get(c).map_or("?", |c| &*c.name);
            match target_cycles.iter_mut().find(|g| g.0 == tcycle) {
                Some(g) => g.1.push(cap),
                None => target_cycles.push((tcycle, vec![cap], from, to)),
            }
            continue;
        }
        let text = cycle
            .iter()
            .map(|&a| label(a))
            .collect::<Vec<_>>()
            .join(" → ");
        let (file, offset, _) = origin(from, to).unwrap_or((0, 0, false));
        if let Some(src) = files.get(file) {
            diags.push(
                src.error(
                    offset,
                    "dependency-cycle",
                    format!("dependency cycle: {text}"),
                )
                .help(format!(
                    "remove one of these dependencies, e.g. this one ({} → {})",
                    label(from),
                    label(to)
                )),
            );
        }
    }
    for (tcycle, mut caps, from, to) in target_cycles {
        caps.sort_unstable();
        caps.dedup();
        let name = |t: usize| targets[t].name.as_str();
        let text = tcycle
            .iter()
            .map(|&t| name(t))
            .collect::<Vec<_>>()
            .join(" → ");
        let (file, offset, _) = origin(from, to).unwrap_or((0, 0, false));
        if let Some(src) = files.get(file) {
            let (tf, tt) = (graph.split(from).0, graph.split(to).0);
            diags.push(
                src.error(
                    offset,
                    "dependency-cycle",
                    format!(
                        "dependency cycle: {text} (target-level `deps`; it holds for {} {})",
                        if caps.len() == 1 {
                            "capability"
                        } else {
                            "capabilities"
                        },
                        caps.join(", ")
                    ),
                )
                .help(format!(
                    "remove one of these dependencies, e.g. this one ({} → {})",
                    name(tf),
                    name(tt)
                )),
            );
        }
    }
    (targets, graph)
}

/// The `deps` of one target, parallel to the targets.
struct Deps {
    /// Target-level `deps`.
    target: Vec<DepRef>,
    /// Capability `deps`, parallel to the capabilities (empty when none declares any).
    caps: Vec<Vec<DepRef>>,
}

/// Capability names are shared, so equal names are usually the same pointer.
fn cmp_names(a: &Arc<str>, b: &Arc<str>) -> std::cmp::Ordering {
    if Arc::ptr_eq(a, b) {
        std::cmp::Ordering::Equal
    } else {
        (**a).cmp(&**b)
    }
}

/// `(target, capability)` named by a capability dep of `c` of `t`:
/// `t2:c2`, `:c2` (same target) or `t2` (same capability).
fn split_dep<'a>(text: &'a str, t: &'a Target, c: &'a Capability) -> (&'a str, &'a str) {
    match text.split_once(':') {
        Some(("", cn)) => (t.name.as_str(), cn),
        Some((tn, cn)) => (tn, cn),
        None => (text, &*c.name),
    }
}

fn unknown_target(
    src: &SourceFile,
    offset: usize,
    name: &str,
    ctx: &str,
    targets: &[Target],
) -> Diagnostic {
    src.error(
        offset,
        "unknown-target",
        format!("{ctx} depends on unknown target `{name}`"),
    )
    .expected("the name of a target declared in this workspace")
    .found(format!("`{name}`"))
    .did_you_mean(suggest::best(name, targets.iter().map(|t| t.name.as_str())))
}
