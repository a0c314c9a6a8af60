//! Targets made a graph: duplicates refused, deps resolved by name into action edges, inferred
//! edges ordered by what each capability needs, cycles reported once with where they were
//! declared.
//!
//! It runs as named steps ([`resolve`] reads as the list): [`keep_first_of_each_name`],
//! [`Names`], [`add_target_deps`], [`add_inferred_edges`], [`add_capability_deps`],
//! [`report_cycles`]. It must never fail: an unknown name or a cycle is a diagnostic at the
//! dep that states it.

use std::sync::Arc;

use crate::diagnostic::{Diagnostic, SourceFile};
#[cfg(doc)]
use crate::ecosystem::Ecosystem;
use crate::graph::{ActionId, Graph};
use crate::manifest::{DepRef, PendingTarget, Shared};
use crate::model::{Capability, Target};
use crate::suggest;

/// Drops duplicates, sorts targets, resolves deps into the graph, finds cycles.
pub(super) fn resolve(
    pending: Vec<PendingTarget>,
    declared: &[String],
    files: &[SourceFile],
    shared: &Shared,
    diags: &mut Vec<Diagnostic>,
) -> (Vec<Target>, Graph) {
    let kept = keep_first_of_each_name(pending, files, diags);
    let mut targets: Vec<Target> = Vec::with_capacity(kept.len());
    let mut deps: Vec<Deps> = Vec::with_capacity(kept.len());
    let mut name_ids: Vec<u32> = Vec::with_capacity(kept.len());
    for p in kept {
        name_ids.push(p.name_id);
        targets.push(p.target);
        deps.push(Deps {
            target: p.target_deps,
            caps: p.cap_deps,
        });
    }
    let names = Names::new(shared, &name_ids, declared);
    let counts: Vec<usize> = targets.iter().map(|t| t.capabilities.len()).collect();
    let mut graph = Graph::new(&counts);
    for (ti, (t, d)) in targets.iter().zip(&deps).enumerate() {
        let Some(src) = files.get(t.file) else {
            continue;
        };
        add_target_deps(&mut graph, &targets, ti, &d.target, &names, src, diags);
        add_inferred_edges(&mut graph, &targets, ti, &names);
        add_capability_deps(&mut graph, &targets, ti, &d.caps, &names, src, diags);
    }
    graph.finish();
    report_cycles(&graph, &targets, &deps, &names, files, diags);
    (targets, graph)
}

/// The pending targets sorted by name, the first declaration of each name kept and every later
/// one reported as a `duplicate-target` error at itself, pointing at the first.
fn keep_first_of_each_name(
    pending: Vec<PendingTarget>,
    files: &[SourceFile],
    diags: &mut Vec<Diagnostic>,
) -> Vec<PendingTarget> {
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
    let mut slots: Vec<Option<PendingTarget>> = pending.into_iter().map(Some).collect();
    keep.iter()
        .filter_map(|&i| slots.get_mut(i).and_then(Option::take))
        .collect()
}

/// Target names to target indices: through the ids names were interned with while reading, so
/// a dep finds its target without hashing the text again.
struct Names<'a> {
    by_id: Vec<u32>,
    shared: &'a Shared,
    declared: &'a [String],
}

impl<'a> Names<'a> {
    fn new(shared: &'a Shared, name_ids: &[u32], declared: &'a [String]) -> Self {
        let mut by_id: Vec<u32> = vec![u32::MAX; shared.len()];
        for (i, &id) in name_ids.iter().enumerate() {
            if let Some(slot) = by_id.get_mut(id as usize) {
                *slot = u32::try_from(i).unwrap_or(u32::MAX);
            }
        }
        Names {
            by_id,
            shared,
            declared,
        }
    }

    /// The target whose name was interned as `id`.
    fn by_id(&self, id: u32) -> Option<usize> {
        self.by_id
            .get(id as usize)
            .copied()
            .filter(|&i| i != u32::MAX)
            .map(|i| i as usize)
    }

    /// The target named `name`.
    fn find(&self, name: &str) -> Option<usize> {
        self.shared.id(name).and_then(|id| self.by_id(id))
    }

    /// Whether a manifest declares `name`, though the target is not in the graph (left out by a
    /// diagnostic of its own): a dep on it is no second error.
    fn is_declared(&self, name: &str) -> bool {
        self.declared.iter().any(|d| d == name)
    }
}

/// Target-level `deps` of target `ti`: each capability waits for the dependency's capability of
/// the same name.
fn add_target_deps(
    graph: &mut Graph,
    targets: &[Target],
    ti: usize,
    deps: &[DepRef],
    names: &Names<'_>,
    src: &SourceFile,
    diags: &mut Vec<Diagnostic>,
) {
    let t = &targets[ti];
    for dep in deps {
        match names.by_id(dep.id) {
            Some(di) => {
                graph.add_target_edge(ti, di);
                for (i, j) in same_names(&t.capabilities, &targets[di].capabilities) {
                    let y = &targets[di].capabilities[j];
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
                }
            }
            None if names.is_declared(&dep.text) => {}
            None => diags.push(unknown_target(
                src,
                dep.offset,
                &dep.text,
                &format!("target `{}`", t.name),
                targets,
            )),
        }
    }
}

/// The pairs `(i, j)` of capabilities of `mine` and `theirs` with the same name. Both lists are
/// sorted by name: a merge walk pairs them.
fn same_names(mine: &[Capability], theirs: &[Capability]) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    let (mut i, mut j) = (0, 0);
    while let (Some(x), Some(y)) = (mine.get(i), theirs.get(j)) {
        match cmp_names(&x.name, &y.name) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                pairs.push((i, j));
                i += 1;
                j += 1;
            }
        }
    }
    pairs
}

/// Inferred edges of target `ti`: each links the targets (so the dependency's sources reach
/// every key of the dependent), and each capability waits for the capabilities of the
/// dependency it needs (its `needs`, else its ecosystem's rule, [`Ecosystem::needs`]), never
/// more. A server neither waits nor is waited for, and an edge to a target left out is no
/// error: the ecosystem's graph is legal.
fn add_inferred_edges(graph: &mut Graph, targets: &[Target], ti: usize, names: &Names<'_>) {
    let t = &targets[ti];
    let Some(inference) = &t.inference else {
        return;
    };
    for edge in inference
        .edges
        .iter()
        .filter(|e| !inference.unordered.contains(e))
    {
        let Some(di) = names.find(&edge.0) else {
            continue;
        };
        graph.add_target_edge(ti, di);
        let theirs = &targets[di].capabilities;
        for (i, mine) in t.capabilities.iter().enumerate() {
            if mine.persistent {
                continue;
            }
            let by_ecosystem = inference.ecosystem.needs(&mine.name);
            let needed: Vec<&str> = match &mine.needs {
                Some(declared) => declared.iter().map(|n| &**n).collect(),
                None => by_ecosystem.to_vec(),
            };
            for name in needed {
                if let Ok(j) = theirs.binary_search_by(|c| (*c.name).cmp(name))
                    && !theirs[j].persistent
                {
                    graph.add_edge(graph.action(ti, i), graph.action(di, j));
                }
            }
        }
    }
}

/// Capability `deps` of target `ti` (`t2:c2`, `:c2`, `t2`), `caps` parallel to its
/// capabilities.
fn add_capability_deps(
    graph: &mut Graph,
    targets: &[Target],
    ti: usize,
    caps: &[Vec<DepRef>],
    names: &Names<'_>,
    src: &SourceFile,
    diags: &mut Vec<Diagnostic>,
) {
    let t = &targets[ti];
    for (ci, (c, cdeps)) in t.capabilities.iter().zip(caps).enumerate() {
        for dep in cdeps {
            let (tname, cname) = split_dep(&dep.text, t, c);
            let ctx = || format!("capability `{}` of target `{}`", c.name, t.name);
            let Some(di) = names.find(tname) else {
                if !names.is_declared(tname) {
                    diags.push(unknown_target(src, dep.offset, tname, &ctx(), targets));
                }
                continue;
            };
            let dt = &targets[di];
            let Some(dci) = dt.capabilities.iter().position(|x| &*x.name == cname) else {
                diags.push(unknown_capability(src, dep, &ctx(), tname, cname, dt));
                continue;
            };
            if dt.capabilities[dci].persistent {
                diags.push(depends_on_persistent(src, dep.offset, &ctx(), tname, cname));
            }
            graph.add_edge(graph.action(ti, ci), graph.action(di, dci));
        }
    }
}

/// Reports every cycle once, at the dep that closes it. A cycle made only of target-level
/// `deps` repeats for every capability the targets share: it is reported once per target cycle.
fn report_cycles(
    graph: &Graph,
    targets: &[Target],
    deps: &[Deps],
    names: &Names<'_>,
    files: &[SourceFile],
    diags: &mut Vec<Diagnostic>,
) {
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
            && let Some(dep) = d.target.iter().find(|dep| names.by_id(dep.id) == Some(tt))
        {
            return Some((t.file, dep.offset, true));
        }
        d.caps.get(cf)?.iter().find_map(|dep| {
            let (tname, cname) = split_dep(&dep.text, t, c);
            (names.find(tname) == Some(tt) && cname == &*dc.name)
                .then_some((t.file, dep.offset, false))
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
}

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

/// A capability dep naming a capability its target does not have.
fn unknown_capability(
    src: &SourceFile,
    dep: &DepRef,
    ctx: &str,
    tname: &str,
    cname: &str,
    dt: &Target,
) -> Diagnostic {
    let names: Vec<&str> = dt.capabilities.iter().map(|x| &*x.name).collect();
    src.error(
        dep.offset,
        "unknown-capability",
        format!(
            "{ctx} depends on `{tname}:{cname}`, but target `{tname}` has no capability `{cname}`"
        ),
    )
    .expected(format!(
        "one of {}",
        names
            .iter()
            .map(|n| format!("`{tname}:{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    ))
    .found(format!("`{}`", dep.text))
    .did_you_mean(suggest::best(cname, names.iter().copied()).map(|s| format!("{tname}:{s}")))
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
