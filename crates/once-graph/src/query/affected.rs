//! `affected` and `owner`: which targets own changed files, and which actions must run again.
//!
//! An action is affected exactly when its cache key would change: a changed file is one of its
//! inputs (its folder's globs, minus what its target and the targets inside its folder write,
//! plus its `//` root globs, read by [`crate::inputs`] as `once-run` reads them), or it is among
//! the sources of a target its target depends on, or it depends on an affected action. The
//! changed files are given (the caller asks git); this module never reads a file, and every
//! list it answers is a page or a preview with its total.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::clip;
use super::schema_util::{array, integer, nullable, object, record, string, strings};
use super::{QueryError, page};
use crate::Workspace;
use crate::graph::ActionId;
use crate::inputs::{InputGlobs, Written, inside, is_reserved};

/// Most owners a file row shows; the rest are counted in `owners_total` (the actions list
/// pages every affected action).
const OWNERS_PREVIEW: usize = 20;
/// Most changed files one question may name.
pub const MAX_FILES: usize = 100_000;
/// The longest path accepted, in bytes (Linux's `PATH_MAX`).
const MAX_PATH: usize = 4096;

/// Arguments of [`affected`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AffectedQuery {
    /// Changed files, relative to the workspace root.
    pub files: Vec<String>,
    /// Only actions of this capability (`test`).
    pub capability: Option<String>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Most rows (files, then actions) per page, default 50, max 200.
    pub limit: Option<u32>,
}

/// A target that owns a file, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// Target name.
    pub target: String,
    /// `inside folder `crates/x``, `input of `x:build``, `root input of `x:test``.
    pub reasons: Vec<String>,
}

/// One changed file with its owners.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedFile {
    /// The file, relative to the workspace root.
    pub path: String,
    /// Its first owners: the deepest target folder holding it first, then by name. Empty when
    /// no target owns it.
    pub owners: Vec<Owner>,
    /// Owners over all.
    pub owners_total: u32,
}

/// An action that must run again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AffectedAction {
    /// `target:capability`.
    pub action: String,
    /// Why: `` `src/a.rs` is an input ``, `` depends on `lib:build` ``, or `` depends on target
    /// `lib`, whose sources changed ``.
    pub reason: String,
}

/// A page of [`affected`]: rows are the files, then the actions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AffectedAnswer {
    /// The changed files of this page, sorted by path.
    pub files: Vec<ChangedFile>,
    /// Changed files over all pages.
    pub files_total: u32,
    /// Changed files no target owns.
    pub unowned_total: u32,
    /// The affected actions of this page: those a file is an input of first, then their
    /// dependents, nearest first, each level by name.
    pub actions: Vec<AffectedAction>,
    /// Affected actions over all pages (of `capability` only, when given).
    pub actions_total: u32,
    /// Cursor of the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// Arguments of [`owner`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnerQuery {
    /// A path relative to the workspace root.
    pub path: String,
}

/// Which targets own `path` and why: the value of `once query owner`.
pub fn owner(ws: &Workspace, q: &OwnerQuery) -> Result<ChangedFile, QueryError> {
    let path = normalize(&q.path)?;
    let mut index = Index::new(ws);
    let hits = index.file(&path);
    Ok(index.row(path, &hits))
}

/// Which targets own `q.files` and which actions they make run again, one page at a time.
pub fn affected(ws: &Workspace, q: &AffectedQuery) -> Result<AffectedAnswer, QueryError> {
    if q.files.len() > MAX_FILES {
        return Err(QueryError::InvalidArgument {
            message: format!(
                "`files` names {} files, more than {MAX_FILES}; ask about fewer at a time",
                q.files.len()
            ),
        });
    }
    let files: BTreeSet<String> = q
        .files
        .iter()
        .map(|f| normalize(f))
        .collect::<Result<_, _>>()?;
    if let Some(c) = &q.capability
        && !ws.targets.iter().any(|t| t.capability(c).is_some())
    {
        let names: BTreeSet<&str> = ws
            .targets
            .iter()
            .flat_map(|t| t.capabilities.iter().map(|c| &*c.name))
            .collect();
        let near = crate::suggest::near(c, names.iter().copied(), 3);
        return Err(QueryError::InvalidArgument {
            message: format!(
                "no target has capability `{}`{}",
                clip(c),
                match near.first() {
                    Some(n) => format!("; did you mean `{n}`?"),
                    None => String::new(),
                }
            ),
        });
    }
    let capability = q.capability.clone().unwrap_or_default();
    let mut parts: Vec<&str> = vec![&capability];
    parts.extend(files.iter().map(String::as_str));
    let fp = page::fingerprint(&parts);

    let mut index = Index::new(ws);
    let mut rows = Vec::with_capacity(files.len());
    let mut hits = Vec::with_capacity(files.len());
    for path in files {
        let found = index.file(&path);
        hits.push((path, found));
    }
    let actions = index.actions(&hits);
    let actions: Vec<(ActionId, Why)> = actions
        .into_iter()
        .filter(|(a, _)| {
            q.capability.is_none() || {
                let (t, c) = ws.graph.split(*a);
                ws.targets
                    .get(t)
                    .and_then(|t| t.capabilities.get(c))
                    .is_some_and(|c| *c.name == *capability)
            }
        })
        .collect();
    let unowned = hits.iter().filter(|(_, h)| h.owners.is_empty()).count();
    let (files_total, actions_total) = (hits.len(), actions.len());
    let (start, end, next) = page::window(
        q.cursor.as_deref(),
        q.limit,
        &fp,
        files_total + actions_total,
    )?;
    for (path, found) in hits
        .iter()
        .take(end.min(files_total))
        .skip(start.min(files_total))
    {
        rows.push(Row::File(index.row(path.clone(), found)));
    }
    for (a, why) in actions
        .iter()
        .take(end.saturating_sub(files_total))
        .skip(start.saturating_sub(files_total))
    {
        rows.push(Row::Action(AffectedAction {
            action: super::action_name(ws, *a),
            reason: why.render(ws, &hits),
        }));
    }
    let next_cursor = page::fit(&mut rows, start, next, &fp);
    let mut answer = AffectedAnswer {
        files: Vec::new(),
        files_total: count(files_total),
        unowned_total: count(unowned),
        actions: Vec::new(),
        actions_total: count(actions_total),
        next_cursor,
    };
    for row in rows {
        match row {
            Row::File(f) => answer.files.push(f),
            Row::Action(a) => answer.actions.push(a),
        }
    }
    Ok(answer)
}

/// Why an action is affected, rendered only for the rows of a page.
#[derive(Debug, Clone, Copy)]
enum Why {
    /// The changed file with this index is one of its inputs.
    Input(usize),
    /// It depends on this affected action.
    Action(ActionId),
    /// Its target depends on this target, whose sources changed.
    Target(usize),
}

impl Why {
    fn render(self, ws: &Workspace, files: &[(String, Hits)]) -> String {
        match self {
            Why::Input(f) => format!("`{}` is an input", files.get(f).map_or("?", |f| &f.0)),
            Why::Action(a) => format!("depends on `{}`", super::action_name(ws, a)),
            Why::Target(t) => format!(
                "depends on target `{}`, whose sources changed",
                ws.targets.get(t).map_or("?", |t| &t.name)
            ),
        }
    }
}

/// One row of a page, for its byte budget.
#[derive(Serialize)]
#[serde(untagged)]
enum Row {
    File(ChangedFile),
    Action(AffectedAction),
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// `path` as a clean root-relative path (`./a//b/` → `a/b`), or why it is not one.
fn normalize(path: &str) -> Result<String, QueryError> {
    let refuse = |why: &str| QueryError::InvalidArgument {
        message: format!(
            "path `{}` {why}; name files relative to the workspace root",
            clip(path)
        ),
    };
    if path.len() > MAX_PATH || path.contains('\0') {
        return Err(refuse("is not a path"));
    }
    if path.starts_with('/') {
        return Err(refuse("is absolute"));
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(refuse("leaves the workspace")),
            part => parts.push(part),
        }
    }
    if parts.is_empty() {
        return Err(refuse("names no file"));
    }
    Ok(parts.join("/"))
}

/// What one file touches.
#[derive(Debug, Default)]
struct Hits {
    /// Owners by target index.
    owners: HashMap<usize, Ownership>,
}

/// Why one target owns one file.
#[derive(Debug, Default)]
struct Ownership {
    /// Its folder is the deepest target folder holding the file.
    folder: bool,
    /// Its capabilities whose folder globs name the file.
    local: Vec<usize>,
    /// Its capabilities whose `//` globs name the file.
    root: Vec<usize>,
}

/// The workspace's folders and compiled globs, built as a question needs them.
struct Index<'a> {
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
    fn new(ws: &'a Workspace) -> Index<'a> {
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
    fn file(&mut self, path: &str) -> Hits {
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
    fn row(&self, path: String, hits: &Hits) -> ChangedFile {
        let ws = self.ws;
        let mut owners: Vec<(&usize, &Ownership)> = hits.owners.iter().collect();
        owners.sort_unstable_by_key(|(t, o)| (!o.folder, **t));
        let total = owners.len();
        let caps = |t: usize, list: &[usize]| {
            list.iter()
                .map(|&c| format!("`{}`", super::action_name(ws, ws.graph.action(t, c))))
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
    fn actions(&self, files: &[(String, Hits)]) -> Vec<(ActionId, Why)> {
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
        let reverse = ws.graph.target_reverse();
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

fn file_schema() -> Value {
    record(
        "A changed file and the targets that own it",
        vec![
            ("path", string("The file, relative to the workspace root")),
            (
                "owners",
                array(
                    record(
                        "A target that owns the file",
                        vec![
                            ("target", string("Target name")),
                            (
                                "reasons",
                                strings(
                                    "Why: inside its folder (the deepest target folder), an \
                                     input of some of its capabilities, or a root (`//`) input",
                                ),
                            ),
                        ],
                    ),
                    "The first 20 owners, the deepest folder's first; empty when no target owns it",
                ),
            ),
            ("owners_total", integer("Owners over all")),
        ],
    )
}

pub(crate) fn owner_output_schema() -> Value {
    file_schema()
}

pub(crate) fn owner_input_schema() -> Value {
    object(
        "Which targets own a path",
        vec![("path", string("A path relative to the workspace root"))],
        &["path"],
    )
}

pub(crate) fn output_schema() -> Value {
    record(
        "A page of changed files with their owners, then of the actions that must run again",
        vec![
            (
                "files",
                array(file_schema(), "The changed files of this page, by path"),
            ),
            ("files_total", integer("Changed files over all pages")),
            ("unowned_total", integer("Changed files no target owns")),
            (
                "actions",
                array(
                    record(
                        "An action whose cache key the change alters",
                        vec![
                            ("action", string("`target:capability`")),
                            (
                                "reason",
                                string(
                                    "Why: a changed file is its input, it depends on an affected \
                                     action, or its target depends on a target whose sources \
                                     changed",
                                ),
                            ),
                        ],
                    ),
                    "Affected actions of this page: direct ones first, then dependents by distance",
                ),
            ),
            (
                "actions_total",
                integer("Affected actions over all pages (of `capability` only, when given)"),
            ),
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
        "Which targets own changed files and which actions must run again",
        vec![
            (
                "files",
                strings("Changed files, relative to the workspace root"),
            ),
            (
                "capability",
                string("Only actions of this capability, e.g. `test`"),
            ),
            (
                "cursor",
                string("`next_cursor` from the previous page, unchanged; keep the same arguments"),
            ),
            (
                "limit",
                integer("Most rows (files, then actions) per page, 1-200, default 50"),
            ),
        ],
        &[],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_cleaned_or_refused() {
        assert_eq!(normalize("./a//b/").as_deref(), Ok("a/b"));
        for bad in ["", ".", "/a", "a/../b", "a\0b"] {
            assert!(normalize(bad).is_err(), "{bad:?}");
        }
        let long = "a".repeat(10_000);
        let message = normalize(&format!("/{long}")).unwrap_err().to_string();
        assert!(message.len() < 300, "{message}");
    }
}
