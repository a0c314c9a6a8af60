//! The once.toml overlay on discovery: declarations laid over inferred targets, renames
//! checked against every name in use, and inferred edges named from the packages they reach.
//!
//! It must never bind an edge by name: an inferred edge reaches the package of its ecosystem in
//! its folder, whatever the names, and a rename onto a name in use is refused, never obeyed.

use std::collections::HashMap;
use std::sync::Arc;

use crate::diagnostic::{Diagnostic, SourceFile};
use crate::discover::{self, Ecosystem};
use crate::manifest::{self, Bases, PendingTarget, Shared};
use crate::model::Target;

/// Adds the inferred targets no manifest declares (to overlay or to replace them) to `pending`,
/// names every inferred edge from the package it reaches, then decides which inferred edges
/// order actions (those closing a cycle do not).
///
/// A target a once.toml declares under a name of its own, with an inferred one's kind and
/// folder, is that package: it takes the inference, and edges to the package follow it. Its
/// name is checked against every inferred name first: one that another package holds is
/// refused with a warning (the declaration is left out, both packages keep the names discovery
/// gave them), so a rename can never take a package's dependents away from it.
pub(super) fn overlay_inferred(
    pending: &mut Vec<PendingTarget>,
    declared: &[String],
    bases: Bases,
    shared: &mut Shared,
    files: &[SourceFile],
    diags: &mut Vec<Diagnostic>,
) {
    let inferred_at: HashMap<&str, &Target> =
        bases.targets.iter().map(|t| (t.name.as_str(), t)).collect();
    let mut by_place: HashMap<(String, String), usize> = HashMap::new();
    let mut refused: Vec<usize> = Vec::new();
    for (i, p) in pending.iter().enumerate() {
        if p.target.inference.is_some() {
            continue;
        }
        let place = (p.target.kind.clone(), p.target.path.clone());
        let Some(package) = bases
            .targets
            .iter()
            .find(|t| (&t.kind, &t.path) == (&place.0, &place.1))
        else {
            continue;
        };
        match inferred_at.get(p.target.name.as_str()) {
            Some(holder) if holder.name != package.name => {
                if let Some(src) = files.get(p.target.file) {
                    diags.push(rename_refused(src, &p.target, package, holder));
                }
                refused.push(i);
            }
            _ => {
                by_place.insert(place, i);
            }
        }
    }
    let refused_names: std::collections::HashSet<String> = refused
        .iter()
        .map(|&i| pending[i].target.name.clone())
        .collect();
    for &i in refused.iter().rev() {
        pending.remove(i);
    }
    let by_place: HashMap<(String, String), usize> = by_place
        .into_iter()
        .map(|(place, i)| (place, i - refused.iter().filter(|&&r| r < i).count()))
        .collect();
    let declared: std::collections::HashSet<&str> = declared
        .iter()
        .map(String::as_str)
        .filter(|name| !refused_names.contains(*name))
        .collect();
    // Each package's final name, by its ecosystem and folder: what its dependents' edges reach.
    let mut named: HashMap<(Ecosystem, String), String> = HashMap::new();
    for target in bases.targets {
        let Some(ecosystem) = target.inference.as_ref().map(|i| i.ecosystem) else {
            continue;
        };
        let key = (ecosystem, target.path.clone());
        if declared.contains(target.name.as_str()) {
            named.insert(key, target.name);
            continue;
        }
        let place = (target.kind.clone(), target.path.clone());
        if let Some(&i) = by_place.get(&place) {
            let declaration = &mut pending[i].target;
            named.insert(key, declaration.name.clone());
            if let Some(inference) = &target.inference {
                let mut inference = (**inference).clone();
                inference.overlay = Some((declaration.file, declaration.offset));
                declaration.inference = Some(Arc::new(inference));
            }
            continue;
        }
        named.insert(key, target.name.clone());
        let name_id = shared.text_id(&target.name).1;
        pending.push(PendingTarget {
            target,
            name_id,
            target_deps: Vec::new(),
            cap_deps: Vec::new(),
        });
    }
    for p in pending.iter_mut() {
        let Some(inference) = p.target.inference.as_mut() else {
            continue;
        };
        let inference = Arc::make_mut(inference);
        let ecosystem = inference.ecosystem;
        // A package left out (`[discover] exclude`) has no name: its edge goes with it.
        inference.edges = inference
            .folder_edges
            .iter()
            .filter_map(|(folder, kind)| {
                let name = named.get(&(ecosystem, folder.clone()))?;
                Some((name.clone(), *kind))
            })
            .collect();
        inference.edges.sort();
        inference.edges.dedup();
    }
    let unordered = {
        let view: Vec<(&Target, Vec<&str>)> = pending
            .iter()
            .map(|p| {
                let deps = p.target_deps.iter().map(|d| &*d.text).collect();
                (&p.target, deps)
            })
            .collect();
        if view.iter().all(|(t, _)| t.inference.is_none()) {
            return;
        }
        discover::unordered_edges(&view)
    };
    for (p, cut) in pending.iter_mut().zip(unordered) {
        if cut.is_empty() {
            continue;
        }
        if let Some(inference) = p.target.inference.as_mut() {
            Arc::make_mut(inference).unordered = cut;
        }
    }
}

/// The warning for a declaration that would name `package` with the name `holder` has.
fn rename_refused(
    src: &SourceFile,
    declaration: &Target,
    package: &Target,
    holder: &Target,
) -> Diagnostic {
    let ecosystem = |t: &Target| t.inference.as_ref().map_or("", |i| i.ecosystem.name());
    manifest::warning(
        src,
        declaration.offset,
        "name-taken",
        format!(
            "target `{}` was left out: it declares the {} package in `{}`, but `{}` is already \
             the {} package in `{}`",
            declaration.name,
            ecosystem(package),
            package.path,
            holder.name,
            ecosystem(holder),
            holder.path,
        ),
    )
    .help(format!(
        "rename the table to a name no other target has, or delete it to keep the name `{}`",
        package.name
    ))
}
