//! How `affected` answers: the workspace's folders and compiled globs, each changed file's
//! owners, and the affected actions by distance from the change.
//!
//! Built once per question and only as far as the files need: glob lists are compiled once per
//! distinct list. This module must never read a file; it matches the paths it is given.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::Workspace;
use crate::graph::ActionId;
use crate::inputs::{InputGlobs, Written, inside, is_reserved};

use super::{ChangedFile, Owner, count};

/// Most owners a file row shows; the rest are counted in `owners_total` (the actions list
/// pages every affected action).
const OWNERS_PREVIEW: usize = 20;

/// Why an action is affected, rendered only for the rows of a page.
#[derive(Debug, Clone, Copy)]
pub(super) enum Why {
    /// The changed file with this index is one of its inputs.
    Input(usize),
    /// It depends on this affected action.
    Action(ActionId),
    /// Its target depends on this target, whose sources changed.
    Target(usize),
}

impl Why {
    pub(super) fn render(self, ws: &Workspace, files: &[(String, Hits)]) -> String {
        match self {
            Why::Input(f) => format!("`{}` is an input", files.get(f).map_or("?", |f| &f.0)),
            Why::Action(a) => format!("depends on `{}`", crate::query::action_name(ws, a)),
            Why::Target(t) => format!(
                "depends on target `{}`, whose sources changed",
                ws.targets.get(t).map_or("?", |t| &t.name)
            ),
        }
    }
}

/// What one file touches.
#[derive(Debug, Default)]
pub(super) struct Hits {
    /// Owners by target index.
    pub(super) owners: HashMap<usize, Claim>,
}

/// Why one target owns one file.
#[derive(Debug, Default)]
pub(super) struct Claim {
    /// Its folder is the deepest target folder holding the file.
    folder: bool,
    /// Its capabilities whose folder globs name the file.
    local: Vec<usize>,
    /// Its capabilities whose `//` globs name the file.
    root: Vec<usize>,
}

/// The workspace's folders and compiled globs, built as a question needs them.
pub(super) struct Index<'a> {
    ws: &'a Workspace,
    written: Written,
    /// Folder → targets there.
    folders: HashMap<&'a str, Vec<usize>>,
    /// Distinct `//` glob lists, compiled, with the actions having each.
    rooted: Vec<(Option<InputGlobs>, Vec<ActionId>)>,
    /// `(target, capability)` → its own inputs; `(target, None-as-MAX)` → its sources as a
    /// dependency sees them.
    local: HashMap<(usize, usize, bool), usize>,
    /// The compiled folder globs, one per distinct (glob list, exclusions): targets of one kind
    /// share their lists, so a folder holding thousands of targets compiles a few.
    compiled: Vec<Option<InputGlobs>>,
    by_globs: HashMap<(usize, usize, Vec<String>), usize>,
    /// Targets whose sources (as a dependency, per chosen capability; `usize::MAX` for none)
    /// changed.
    sources: HashSet<(usize, usize)>,
}

/// The capability whose inputs are a dependency's sources for a dependent's `name` (as
/// `once-run` chooses them): the one named like it, else `build`, else the first.
fn chosen(t: &crate::model::Target, name: &str) -> usize {
    t.capabilities
        .iter()
        .position(|c| &*c.name == name)
        .or_else(|| t.capabilities.iter().position(|c| &*c.name == "build"))
        .or((!t.capabilities.is_empty()).then_some(0))
        .unwrap_or(usize::MAX)
}

impl<'a> Index<'a> {
    pub(super) fn new(ws: &'a Workspace) -> Index<'a> {
        let mut folders: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, t) in ws.targets.iter().enumerate() {
            folders.entry(t.path.as_str()).or_default().push(i);
        }
        // Capabilities share their glob lists (a kind's defaults are one list), so each
        // distinct list is compiled once.
        let mut rooted: Vec<(Option<InputGlobs>, Vec<ActionId>)> = Vec::new();
        let mut by_pointer: HashMap<(usize, usize), usize> = HashMap::new();
        let mut by_text: HashMap<&[String], usize> = HashMap::new();
        for (t, target) in ws.targets.iter().enumerate() {
            for (c, cap) in target.capabilities.iter().enumerate() {
                if !cap.inputs.iter().any(|g| g.starts_with("//")) {
                    continue;
                }
                let pointer = (cap.inputs.as_ptr() as usize, cap.inputs.len());
                let slot = match by_pointer.get(&pointer) {
                    Some(&slot) => slot,
                    None => {
                        let slot = *by_text.entry(&cap.inputs).or_insert_with(|| {
                            rooted.push((InputGlobs::new(&cap.inputs, []).ok(), Vec::new()));
                            rooted.len() - 1
                        });
                        by_pointer.insert(pointer, slot);
                        slot
                    }
                };
                rooted[slot].1.push(ws.graph.action(t, c));
            }
        }
        Index {
            ws,
            written: Written::new(&ws.targets),
            folders,
            rooted,
            local: HashMap::new(),
            compiled: Vec::new(),
            by_globs: HashMap::new(),
            sources: HashSet::new(),
        }
    }

    /// The folder inputs of capability `c` of target `t`: as its own (`own`), minus what every
    /// other capability there writes, or as a dependency's sources, minus everything written.
    fn local_matches(&mut self, t: usize, c: usize, own: bool, relative: &str) -> bool {
        let id = match self.local.get(&(t, c, own)) {
            Some(&id) => id,
            None => {
                let target = &self.ws.targets[t];
                let capability = target.capabilities.get(c);
                let inputs: &[String] = capability.map_or(&[], |c| &c.inputs);
                let mut excluded: Vec<String> = match capability {
                    Some(cap) if own => cap.outputs.to_vec(),
                    _ => Vec::new(),
                };
                excluded.extend(
                    self.written
                        .inside(&target.path, t, own.then_some(c))
                        .iter()
                        .cloned(),
                );
                // Equal lists are one shared allocation (see `model::Capability`).
                let key = (inputs.as_ptr() as usize, inputs.len(), excluded);
                let id = match self.by_globs.get(&key) {
                    Some(&id) => id,
                    None => {
                        let compiled = InputGlobs::new(inputs, key.2.iter()).ok();
                        self.compiled.push(compiled);
                        self.by_globs.insert(key, self.compiled.len() - 1);
                        self.compiled.len() - 1
                    }
                };
                self.local.insert((t, c, own), id);
                id
            }
        };
        // A glob that does not compile was refused when the manifest loaded; should one get
        // here anyway, the file counts as an input: a needless run beats a missed one.
        self.compiled
            .get(id)
            .and_then(Option::as_ref)
            .is_none_or(|g| g.local().matches(relative))
    }

    /// The owners of `path` and the actions it is an input of; remembers whose sources it is.
    pub(super) fn file(&mut self, path: &str) -> Hits {
        let ws = self.ws;
        let mut hits = Hits::default();
        let reserved = is_reserved(path);
        // Every folder holding the path, deepest first; the path itself may be a folder.
        let mut folders: Vec<&str> = Vec::new();
        let mut at = path;
        loop {
            folders.push(at);
            match at.rfind('/') {
                Some(i) => at = &at[..i],
                None => break,
            }
        }
        folders.push(".");
        let mut deepest = true;
        for folder in folders {
            let Some(targets) = self.folders.get(folder).cloned() else {
                continue;
            };
            for t in targets {
                let entry = hits.owners.entry(t).or_default();
                entry.folder = deepest;
                let Some(relative) = inside(&ws.targets[t].path, path) else {
                    continue;
                };
                if reserved {
                    continue;
                }
                for c in 0..ws.targets[t].capabilities.len() {
                    if self.local_matches(t, c, true, relative) {
                        hits.owners.entry(t).or_default().local.push(c);
                    }
                    if self.local_matches(t, c, false, relative) {
                        self.sources.insert((t, c));
                    }
                }
                // No capability: every file of the folder is a dependent's source.
                if ws.targets[t].capabilities.is_empty()
                    && self.local_matches(t, usize::MAX, false, relative)
                {
                    self.sources.insert((t, usize::MAX));
                }
            }
            deepest = false;
        }
        for (globs, actions) in &self.rooted {
            if !globs.as_ref().is_none_or(|g| g.rooted().matches(path)) {
                continue;
            }
            for &a in actions {
                let (t, c) = ws.graph.split(a);
                hits.owners.entry(t).or_default().root.push(c);
                self.sources.insert((t, c));
            }
        }
        hits.owners
            .retain(|_, o| o.folder || !o.local.is_empty() || !o.root.is_empty());
        hits
    }

    /// The row of `path`: its first owners with their reasons.
    pub(super) fn row(&self, path: String, hits: &Hits) -> ChangedFile {
        let ws = self.ws;
        let mut owners: Vec<(&usize, &Claim)> = hits.owners.iter().collect();
        owners.sort_unstable_by_key(|(t, o)| (!o.folder, **t));
        let total = owners.len();
        let caps = |t: usize, list: &[usize]| {
            list.iter()
                .map(|&c| format!("`{}`", crate::query::action_name(ws, ws.graph.action(t, c))))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let owners = owners
            .into_iter()
            .take(OWNERS_PREVIEW)
            .map(|(&t, o)| {
                let mut reasons = Vec::new();
                if o.folder {
                    reasons.push(format!("inside folder `{}`", ws.targets[t].path));
                }
                if !o.local.is_empty() {
                    reasons.push(format!("input of {}", caps(t, &o.local)));
                }
                if !o.root.is_empty() {
                    reasons.push(format!("root input of {}", caps(t, &o.root)));
                }
                Owner {
                    target: ws.targets[t].name.clone(),
                    reasons,
                }
            })
            .collect();
        ChangedFile {
            path,
            owners,
            owners_total: count(total),
        }
    }

    /// Every affected action with its reason: the files' own first, then their dependents by
    /// distance, each level in graph order (targets by name, then capabilities).
    pub(super) fn actions(&self, files: &[(String, Hits)]) -> Vec<(ActionId, Why)> {
        let ws = self.ws;
        let graph = &ws.graph;
        let n = graph.action_count();
        let mut depth: Vec<u32> = vec![u32::MAX; n];
        let mut reason: Vec<Option<Why>> = vec![None; n];
        let mut direct: Vec<ActionId> = Vec::new();
        for (f, (_, hits)) in files.iter().enumerate() {
            for (&t, o) in &hits.owners {
                for &c in o.local.iter().chain(&o.root) {
                    let a = graph.action(t, c);
                    if let Some(d) = depth.get_mut(a as usize)
                        && *d == u32::MAX
                    {
                        *d = 0;
                        reason[a as usize] = Some(Why::Input(f));
                        direct.push(a);
                    }
                }
            }
        }
        // Breadth first over dependents; then an action whose target depends on changed sources
        // (and that no action edge reached) joins at level 1, and its dependents after it.
        self.dependents(&mut direct, &mut depth, &mut reason, 0);
        let mut upstream: Vec<(ActionId, usize)> = self
            .upstream()
            .into_iter()
            .filter(|(a, _)| depth.get(*a as usize) == Some(&u32::MAX))
            .collect();
        upstream.sort_unstable();
        let mut level: Vec<ActionId> = Vec::new();
        for (a, origin) in upstream {
            depth[a as usize] = 1;
            reason[a as usize] = Some(Why::Target(origin));
            level.push(a);
        }
        self.dependents(&mut level, &mut depth, &mut reason, 1);
        let mut order: Vec<(u32, ActionId)> = depth
            .iter()
            .enumerate()
            .filter(|(_, d)| **d != u32::MAX)
            .map(|(a, d)| (*d, a as ActionId))
            .collect();
        order.sort_unstable();
        order
            .into_iter()
            .map(|(_, a)| {
                let why = reason[a as usize].take().unwrap_or(Why::Action(a));
                (a, why)
            })
            .collect()
    }

    /// Marks every action depending on `level` (at depth `d`), breadth first, that has no
    /// depth yet, with the action it depends on as its reason.
    fn dependents(
        &self,
        level: &mut Vec<ActionId>,
        depth: &mut [u32],
        reason: &mut [Option<Why>],
        mut d: u32,
    ) {
        let ws = self.ws;
        while !level.is_empty() {
            level.sort_unstable();
            let mut next = Vec::new();
            for &a in level.iter() {
                for &r in ws
                    .graph
                    .action_reverse()
                    .get(a as usize)
                    .map_or(&[][..], |v| v)
                {
                    if depth.get(r as usize) == Some(&u32::MAX) {
                        depth[r as usize] = d + 1;
                        reason[r as usize] = Some(Why::Action(a));
                        next.push(r);
                    }
                }
            }
            *level = next;
            d += 1;
        }
    }

    /// Actions whose target depends, directly or not, on a target whose sources changed, with
    /// that target: what `once-run` puts in every key beside the action's own inputs.
    fn upstream(&self) -> HashMap<ActionId, usize> {
        let ws = self.ws;
        let mut found = HashMap::new();
        if self.sources.is_empty() {
            return found;
        }
        let changed: BTreeSet<usize> = self.sources.iter().map(|(t, _)| *t).collect();
        let names: BTreeSet<&str> = ws
            .targets
            .iter()
            .flat_map(|t| t.capabilities.iter().map(|c| &*c.name))
            .collect();
        // Sources travel along unordered inferred edges too, as in `once-run`'s keys.
        let edges = ws.source_edges();
        let reverse: std::borrow::Cow<'_, [Vec<u32>]> = match &edges {
            std::borrow::Cow::Borrowed(_) => std::borrow::Cow::Borrowed(ws.graph.target_reverse()),
            std::borrow::Cow::Owned(adjacency) => {
                std::borrow::Cow::Owned(crate::graph::reverse(adjacency))
            }
        };
        for name in names {
            let starts: Vec<usize> = changed
                .iter()
                .copied()
                .filter(|&t| self.sources.contains(&(t, chosen(&ws.targets[t], name))))
                .collect();
            if starts.is_empty() {
                continue;
            }
            // Reached only through an edge: a target's own sources are not upstream of it.
            let mut origin = vec![usize::MAX; ws.targets.len()];
            let mut queued = vec![false; ws.targets.len()];
            let mut queue: std::collections::VecDeque<(usize, usize)> =
                starts.iter().map(|&t| (t, t)).collect();
            for &t in &starts {
                queued[t] = true;
            }
            while let Some((v, from)) = queue.pop_front() {
                for &w in reverse.get(v).map_or(&[][..], |v| v) {
                    let w = w as usize;
                    if origin[w] == usize::MAX {
                        origin[w] = from;
                    }
                    if !queued[w] {
                        queued[w] = true;
                        queue.push_back((w, from));
                    }
                }
            }
            for (t, &from) in origin.iter().enumerate() {
                if from == usize::MAX {
                    continue;
                }
                if let Some(c) = ws.targets[t]
                    .capabilities
                    .iter()
                    .position(|c| &*c.name == name)
                {
                    found.insert(ws.graph.action(t, c), from);
                }
            }
        }
        found
    }
}
