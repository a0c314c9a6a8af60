//! The plan: the requested actions plus everything they transitively depend on, in an order
//! where each action comes after its dependencies, each with its command rendered.
//!
//! A plan is built entirely before anything runs, so every mistake in a request is reported
//! while nothing has happened yet. This module must never run anything or touch files.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use once_graph::Workspace;
use once_graph::graph::ActionId;
use once_graph::inputs::Written;
use once_graph::model::{Capability, EnvMode, Target};
use once_graph::stand_in;
use once_graph::template::{Fill, RenderError, Template};
use serde_json::Value;

use crate::error::Error;
use crate::params;
use crate::request::{Request, Selection, parse_action};

/// The names of the placeholders the words after `--` fill: `--0`, `--1`, …, which no parameter
/// or field can be called.
const ARG_SLOT: &str = "--";

/// The deadline of a persistent action: none a run could reach (over a century).
const NO_DEADLINE: Duration = Duration::from_secs(u32::MAX as u64);

/// Everything to run, dependencies first.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The workspace root.
    pub root: PathBuf,
    /// Topologically ordered: every dependency index is smaller than its dependent's.
    pub steps: Vec<Step>,
    /// The source sets the steps' keys take in: each one's `next` indices are smaller than its
    /// own, so a set's digest can be taken after those of the sets it depends on.
    pub sources: Vec<SourceSet>,
}

/// Targets whose sources an action's key takes in together, seen for one capability name: one
/// target, or the targets of a cycle that unordered inferred edges close. Its digest covers its
/// members' sources and the digests of the sets it depends on, so a key takes in the whole
/// transitive closure through its direct dependencies alone.
#[derive(Debug, Clone)]
pub struct SourceSet {
    /// The members' sources, by folder.
    pub members: Vec<Arc<Upstream>>,
    /// Indices in [`Plan::sources`] of the sets the members depend on, each smaller than this
    /// set's own.
    pub next: Vec<usize>,
}

/// One action of a plan.
#[derive(Debug, Clone)]
pub struct Step {
    /// `target:capability`.
    pub action: String,
    /// The rendered command, run as `sh -c` in `dir`.
    pub command: String,
    /// The target's folder.
    pub dir: PathBuf,
    /// The target's folder relative to the workspace root (part of the cache key).
    pub path: String,
    /// Declared environment, over the variables of the `env-file`.
    pub env: BTreeMap<String, String>,
    /// The names in `env` that come from the `env-file`: keyed by a hash of their values, as
    /// secrets are.
    pub env_file_vars: Vec<String>,
    /// The env-file, relative to the workspace root: its values are secrets, so a description
    /// of the action for others never carries the file.
    pub env_file: Option<String>,
    /// Only the base list, `pass_env` and `env` reach the command (`env-mode = "strict"`).
    pub strict: bool,
    /// Variable globs of the workspace's and the capability's `pass-env`.
    pub pass_env: Arc<[String]>,
    /// Whether a result may be replayed and recorded: not when it or anything it depends on says
    /// `cache = false` or is persistent, since then its result is not a function of its inputs.
    pub cache: bool,
    /// Runs until stopped: no deadline of its own, never cached, never waited on by a lock.
    pub persistent: bool,
    /// Where it may run when remote execution is on (`local`, `platform`).
    pub placement: once_graph::Placement,
    /// How many times a failed run is run again (a timeout is not).
    pub retries: u8,
    /// No other action naming this mutex runs while this one does.
    pub mutex: Option<Arc<str>>,
    pub deadline: Duration,
    /// Input globs relative to `dir`; `!` excludes.
    pub inputs: Arc<[String]>,
    /// Output globs relative to `dir`.
    pub outputs: Arc<[String]>,
    /// Output globs (relative to `dir`) of the target's other capabilities and of the targets
    /// inside its folder: what they write is never an input.
    pub written: Arc<[String]>,
    /// Indices in [`Plan::sources`] of the source sets of the targets the target depends on
    /// directly; through theirs, their digests cover every target it depends on transitively, so
    /// that a change in a dependency reaches this action's key even when no action edge leads
    /// there.
    pub upstream: Vec<usize>,
    /// Every parameter's value, defaults filled in.
    pub params: BTreeMap<String, Value>,
    /// Indices in [`Plan::steps`] of the direct dependencies.
    pub deps: Vec<usize>,
    /// Asked for by the request (not only needed by another action).
    pub requested: bool,
    /// How this action may join others in one command (`crate::schedule` decides whether it
    /// does): only when its capability declares a batch and the action does exactly what the
    /// batch would do for it (see [`Joinable`]).
    pub batch: Option<Joinable>,
}

/// An action's part in a batch: what its members share and the words that select it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Joinable {
    /// What members of one batch have in common besides their environment: the target kind,
    /// the capability, the batch's command and folder.
    pub group: String,
    /// The command every member's words follow: `cargo test`.
    pub command: Arc<str>,
    /// What follows every member's words: `''`.
    pub tail: Arc<str>,
    /// This member's words: `-p core@0.1.0`.
    pub member: Arc<str>,
    /// Where the batch runs (the Cargo workspace's root).
    pub dir: PathBuf,
    /// Whether it joins one unless the run says otherwise (`batch` in `once.toml`).
    pub on: bool,
}

/// The sources of a target that an action's target depends on.
#[derive(Debug, Clone)]
pub struct Upstream {
    /// The dependency's folder.
    pub dir: PathBuf,
    /// That folder relative to the workspace root (part of the cache key).
    pub path: String,
    /// Input globs of the dependency's capability named like the action's, else of its
    /// `build`, else of its first; none (every file) when it has no capability.
    pub inputs: Arc<[String]>,
    /// Output globs of the dependency's capabilities and of the targets inside its folder.
    pub outputs: Arc<[String]>,
}

/// Resolves `request` against `ws` into a plan, or says what is wrong with the request.
pub fn plan(ws: &Workspace, request: &Request) -> Result<Plan, Error> {
    let targets = ws.targets();
    let graph = ws.graph();
    let mut roots: Vec<ActionId> = Vec::new();
    if !request.args.is_empty() && request.actions.is_empty() {
        return Err(Error::ArgsWithoutAction);
    }
    for text in &request.actions {
        let (name, capability) = parse_action(text)?;
        let t = find_target(targets, name)?;
        let target = &targets[t];
        let c = match capability {
            Some(capability) => target
                .capabilities
                .iter()
                .position(|c| &*c.name == capability)
                .ok_or_else(|| Error::UnknownCapability {
                    target: name.to_owned(),
                    capability: capability.to_owned(),
                    near: once_graph::near_names(
                        capability,
                        target.capabilities.iter().map(|c| &*c.name),
                        3,
                    ),
                    available: capability_list(target),
                })?,
            None => default_capability(target)?,
        };
        roots.push(graph.action(t, c));
    }
    if let Some(capability) = &request.all {
        let mut picked: Vec<(usize, usize)> = targets
            .iter()
            .enumerate()
            .filter_map(|(t, target)| {
                let c = target
                    .capabilities
                    .iter()
                    .position(|c| &*c.name == capability.as_str())?;
                Some((t, c))
            })
            .collect();
        if picked.is_empty() {
            return Err(Error::NoTargetHas {
                capability: capability.clone(),
                existing: crate::select::existing(targets, &Selection::default()),
            });
        }
        // The root's workspace-wide `test` in place of every crate's: one command, not both.
        stand_in::settle(targets, &mut picked, stand_in::Prefer::WorkspaceWide);
        roots.extend(picked.into_iter().map(|(t, c)| graph.action(t, c)));
    }
    // The words after `--` go to the action named last, whatever else is selected.
    let passed_to = (!request.args.is_empty())
        .then(|| roots.last().copied())
        .flatten();
    if let Some(selection) = &request.select {
        let mut picked = crate::select::select(targets, selection)?;
        // The root's workspace-wide `test` in place of every crate's: one command, not both.
        stand_in::settle(targets, &mut picked, stand_in::Prefer::WorkspaceWide);
        if picked.is_empty() && roots.is_empty() {
            return Err(Error::NothingSelected {
                selected: crate::select::describe(selection),
                capability: selection.capability.clone(),
                existing: crate::select::existing(targets, selection),
            });
        }
        roots.extend(picked.into_iter().map(|(t, c)| graph.action(t, c)));
    }
    if roots.is_empty() {
        return Err(Error::EmptyRequest);
    }

    // The closure over dependencies, then Kahn's algorithm over it: iterative, linear.
    let mut index: HashMap<ActionId, usize> = HashMap::new();
    let mut nodes: Vec<ActionId> = Vec::new();
    let mut stack: Vec<ActionId> = roots.clone();
    while let Some(a) = stack.pop() {
        if index.contains_key(&a) {
            continue;
        }
        index.insert(a, nodes.len());
        nodes.push(a);
        stack.extend_from_slice(graph.action_deps(a));
    }
    // Graph order (targets by name, then capabilities) breaks ties, so a plan is the same for
    // the same request every time.
    nodes.sort_unstable();
    for (i, &a) in nodes.iter().enumerate() {
        index.insert(a, i);
    }
    let mut pending: Vec<usize> = nodes.iter().map(|&a| graph.action_deps(a).len()).collect();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (i, &a) in nodes.iter().enumerate() {
        for d in graph.action_deps(a) {
            dependents[index[d]].push(i);
        }
    }
    let mut ready: VecDeque<usize> = (0..nodes.len()).filter(|&i| pending[i] == 0).collect();
    let mut order: Vec<usize> = Vec::with_capacity(nodes.len());
    while let Some(i) = ready.pop_front() {
        order.push(i);
        for &j in &dependents[i] {
            pending[j] -= 1;
            if pending[j] == 0 {
                ready.push_back(j);
            }
        }
    }
    if order.len() < nodes.len() {
        let stuck: Vec<String> = (0..nodes.len())
            .filter(|&i| pending[i] > 0)
            .take(5)
            .map(|i| action_name(ws, nodes[i]))
            .collect();
        return Err(Error::Cycle {
            actions: stuck.join(", "),
        });
    }

    let mut position = vec![0usize; nodes.len()];
    for (p, &i) in order.iter().enumerate() {
        position[i] = p;
    }
    let written = Written::new(targets);
    let source_edges = ws.source_edges();
    let mut sets = SourceSets::new(ws, &source_edges, &written);
    let mut steps: Vec<Step> = Vec::with_capacity(order.len());
    for &i in &order {
        let a = nodes[i];
        let (t, c) = graph.split(a);
        let target = &targets[t];
        let capability = &target.capabilities[c];
        let requested = roots.contains(&a);
        let action = format!("{}:{}", target.name, capability.name);
        let empty = BTreeMap::new();
        let given = if requested { &request.params } else { &empty };
        let values = params::resolve(&action, &capability.params, given)?;
        let args: &[String] = if passed_to == Some(a) {
            &request.args
        } else {
            &[]
        };
        let command = render(&action, target, capability, &values, args)?;
        let mut deps: Vec<usize> = graph
            .action_deps(a)
            .iter()
            .map(|d| position[index[d]])
            .collect();
        deps.sort_unstable();
        let (env, env_file_vars) = environment(ws.root(), &action, target, capability)?;
        let batch = joinable(ws.root(), target, capability, &values, args);
        steps.push(Step {
            batch,
            command,
            dir: ws.root().join(&target.path),
            path: target.path.clone(),
            env,
            env_file_vars,
            env_file: capability.env_file.as_ref().map(|file| {
                if target.path == "." {
                    file.to_string()
                } else {
                    format!("{}/{file}", target.path)
                }
            }),
            strict: ws.env_mode() == EnvMode::Strict,
            pass_env: pass_env(ws.pass_env(), &capability.pass_env),
            cache: capability.cache
                && !capability.persistent
                && deps.iter().all(|&d| steps[d].cache),
            persistent: capability.persistent,
            placement: capability.placement.clone(),
            retries: capability.retries,
            mutex: capability.mutex.clone(),
            // A server has no deadline of its own; one given with the request still applies.
            deadline: match request.deadline {
                Some(deadline) => deadline,
                None if capability.persistent => NO_DEADLINE,
                None => capability.deadline,
            },
            inputs: Arc::clone(&capability.inputs),
            outputs: Arc::clone(&capability.outputs),
            written: written.inside(&target.path, t, Some(c)),
            upstream: sets.upstream(t, &capability.name),
            params: values,
            deps,
            requested,
            action,
        });
    }
    Ok(Plan {
        root: ws.root().to_path_buf(),
        steps,
        sources: sets.sets,
    })
}

/// How the action of `capability` of `target` may join a batch: only when it does what the
/// batch does for it: its command is still the batch's form for one member (no overlay
/// `command`), every parameter is at its default (`values`, `defaults` from the capability),
/// no words follow `--`, and it neither retries, takes a mutex nor runs until stopped.
fn joinable(
    root: &Path,
    target: &Target,
    capability: &Capability,
    values: &BTreeMap<String, Value>,
    args: &[String],
) -> Option<Joinable> {
    let batch = capability.batch.as_ref()?;
    let defaults = capability
        .params
        .iter()
        .all(|p| p.default.is_some() && values.get(&p.name) == p.default.as_ref());
    let plain = *capability.command == *batch.alone
        && defaults
        && args.is_empty()
        && capability.retries == 0
        && capability.mutex.is_none()
        && !capability.persistent;
    plain.then(|| Joinable {
        group: format!(
            "{}\0{}\0{}\0{}\0{}",
            target.kind, capability.name, batch.command, batch.tail, batch.dir
        ),
        command: Arc::clone(&batch.command),
        tail: Arc::clone(&batch.tail),
        member: Arc::clone(&batch.member),
        dir: root.join(&*batch.dir),
        on: batch.on,
    })
}

/// The source sets of a plan, built as steps ask for them.
struct SourceSets<'w> {
    ws: &'w Workspace,
    adjacency: &'w [Vec<u32>],
    written: &'w Written,
    /// The strongly connected component of each target.
    component: Vec<usize>,
    /// Each component's targets, and the other components they have edges to.
    members: Vec<Vec<usize>>,
    next: Vec<Vec<usize>>,
    /// A target's sources for a capability, built once and shared by every set holding them.
    sources: HashMap<(usize, Option<usize>), Arc<Upstream>>,
    /// The set of each component seen for a capability name, by index in `sets`.
    built: HashMap<(usize, Arc<str>), usize>,
    sets: Vec<SourceSet>,
}

impl<'w> SourceSets<'w> {
    fn new(ws: &'w Workspace, adjacency: &'w [Vec<u32>], written: &'w Written) -> Self {
        let component = components(adjacency);
        let count = component.iter().max().map_or(0, |&c| c + 1);
        let mut members = vec![Vec::new(); count];
        let mut next = vec![Vec::new(); count];
        for (t, &c) in component.iter().enumerate() {
            members[c].push(t);
            for &d in adjacency.get(t).map_or(&[][..], Vec::as_slice) {
                let dc = component[d as usize];
                if dc != c {
                    next[c].push(dc);
                }
            }
        }
        for list in &mut next {
            list.sort_unstable();
            list.dedup();
        }
        SourceSets {
            ws,
            adjacency,
            written,
            component,
            members,
            next,
            sources: HashMap::new(),
            built: HashMap::new(),
            sets: Vec::new(),
        }
    }

    /// The sets of the targets `t` depends on directly, for `capability`: its own component's
    /// when an edge leads back into it (a cycle), the others' otherwise.
    fn upstream(&mut self, t: usize, capability: &Arc<str>) -> Vec<usize> {
        // An edge inside `t`'s own component (a cycle) takes in that component's set, `t`'s own
        // sources with it: more than needed, never less.
        let components: Vec<usize> = self
            .adjacency
            .get(t)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .map(|&d| self.component[d as usize])
            .collect();
        let mut out: Vec<usize> = components
            .into_iter()
            .map(|c| self.set(c, capability))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The set of component `c` for `capability`, built after the sets it depends on (with an
    /// explicit stack: a chain of a hundred thousand targets must not overflow ours).
    fn set(&mut self, c: usize, capability: &Arc<str>) -> usize {
        let mut stack = vec![(c, false)];
        while let Some((c, expanded)) = stack.pop() {
            if self.built.contains_key(&(c, Arc::clone(capability))) {
                continue;
            }
            if !expanded {
                stack.push((c, true));
                for &n in &self.next[c] {
                    if !self.built.contains_key(&(n, Arc::clone(capability))) {
                        stack.push((n, false));
                    }
                }
                continue;
            }
            let next: Vec<usize> = self.next[c]
                .iter()
                .filter_map(|n| self.built.get(&(*n, Arc::clone(capability))).copied())
                .collect();
            let mut members: Vec<Arc<Upstream>> = self.members[c]
                .clone()
                .into_iter()
                .map(|t| self.source(t, capability))
                .collect();
            members.sort_by(|a, b| a.path.cmp(&b.path));
            self.sets.push(SourceSet { members, next });
            self.built
                .insert((c, Arc::clone(capability)), self.sets.len() - 1);
        }
        self.built
            .get(&(c, Arc::clone(capability)))
            .copied()
            .unwrap_or_default()
    }

    /// Target `d`'s sources as its dependents see them for `capability`: the inputs of its
    /// capability of that name, else of its `build`, else of its first; minus what it writes.
    fn source(&mut self, d: usize, capability: &str) -> Arc<Upstream> {
        let dep = &self.ws.targets()[d];
        let chosen = dep
            .capabilities
            .iter()
            .position(|c| &*c.name == capability)
            .or_else(|| dep.capabilities.iter().position(|c| &*c.name == "build"))
            .or((!dep.capabilities.is_empty()).then_some(0));
        let (ws, written) = (self.ws, self.written);
        let entry = self.sources.entry((d, chosen)).or_insert_with(|| {
            Arc::new(Upstream {
                dir: ws.root().join(&dep.path),
                path: dep.path.clone(),
                inputs: chosen.map_or_else(
                    || Arc::from([]),
                    |c| Arc::clone(&dep.capabilities[c].inputs),
                ),
                outputs: written.inside(&dep.path, d, None),
            })
        });
        Arc::clone(entry)
    }
}

/// The strongly connected component of each node (Tarjan's algorithm, without recursion).
fn components(adjacency: &[Vec<u32>]) -> Vec<usize> {
    let n = adjacency.len();
    let unvisited = usize::MAX;
    let mut index = vec![unvisited; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut component = vec![unvisited; n];
    let mut stack: Vec<usize> = Vec::new();
    let mut next_index = 0;
    let mut count = 0;
    for root in 0..n {
        if index[root] != unvisited {
            continue;
        }
        // (node, position of the next edge to follow)
        let mut work: Vec<(usize, usize)> = vec![(root, 0)];
        while let Some(&mut (v, ref mut edge)) = work.last_mut() {
            if *edge == 0 && index[v] == unvisited {
                index[v] = next_index;
                low[v] = next_index;
                next_index += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            let edges = adjacency.get(v).map_or(&[][..], Vec::as_slice);
            if let Some(&w) = edges.get(*edge) {
                *edge += 1;
                let w = w as usize;
                if w >= n {
                    continue;
                }
                if index[w] == unvisited {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component[w] = count;
                    if w == v {
                        break;
                    }
                }
                count += 1;
            }
        }
    }
    component
}

/// The workspace's globs, then the capability's; shared when the capability adds none.
fn pass_env(workspace: &Arc<[String]>, capability: &[String]) -> Arc<[String]> {
    if capability.is_empty() {
        return Arc::clone(workspace);
    }
    workspace.iter().chain(capability).cloned().collect()
}

fn find_target(targets: &[Target], name: &str) -> Result<usize, Error> {
    targets
        .binary_search_by(|t| t.name.as_str().cmp(name))
        .map_err(|_| Error::UnknownTarget {
            name: name.to_owned(),
            // By name, folder or package, as the query answers suggest them.
            near: once_graph::near_targets(targets, name),
        })
}

fn capability_list(target: &Target) -> String {
    if target.capabilities.is_empty() {
        return "none".to_owned();
    }
    target
        .capabilities
        .iter()
        .map(|c| format!("`{}`", c.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `TARGET` alone means its only capability, or `build`.
fn default_capability(target: &Target) -> Result<usize, Error> {
    if target.capabilities.len() == 1 {
        return Ok(0);
    }
    target
        .capabilities
        .iter()
        .position(|c| &*c.name == "build")
        .ok_or_else(|| Error::AmbiguousCapability {
            target: target.name.clone(),
            available: capability_list(target),
        })
}

fn action_name(ws: &Workspace, a: ActionId) -> String {
    let (t, c) = ws.graph().split(a);
    let target = &ws.targets()[t];
    format!("{}:{}", target.name, target.capabilities[c].name)
}

/// A kind's field as a command shows it: text as it is, a list comma-separated after its flag
/// (`--features=a,b`), or nothing when the list is empty and has a flag to leave out.
fn field_fill(target: &Target, name: &str, value: &Value) -> Fill {
    match value {
        Value::String(text) => Fill::Text(text.clone()),
        Value::Array(items) => {
            let joined = items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map_or_else(|| item.to_string(), str::to_owned)
                })
                .collect::<Vec<_>>()
                .join(",");
            let flag = once_graph::kind::find_kind(&target.kind)
                .and_then(|kind| kind.fields.iter().find(|field| field.name == name))
                .and_then(|field| field.flag.as_deref());
            match flag {
                Some(_) if items.is_empty() => Fill::Nothing,
                Some(flag) => Fill::Text(format!("{flag}={joined}")),
                None => Fill::Text(joined),
            }
        }
        other => Fill::Text(other.to_string()),
    }
}

/// The command with parameters, then the kind's fields, then `{target}` and `{path}` filled in,
/// each value quoted for where its placeholder sits, then `args` appended as words of their own.
/// A command that cannot reach `sh -c` whole (too long for one argument, or holding a NUL byte)
/// is refused here, before anything runs.
fn render(
    action: &str,
    target: &Target,
    capability: &Capability,
    values: &BTreeMap<String, Value>,
    args: &[String],
) -> Result<String, Error> {
    // Passed-through words are placeholders of their own at the command's end, so the lexer
    // that quotes parameters decides whether a word can go there (not after a comment, inside
    // a here-document, or where it would name the program) and quotes each one.
    let appended;
    let template = if args.is_empty() {
        &*capability.template
    } else {
        let mut text = capability.command.trim_end().to_owned();
        for i in 0..args.len() {
            text.push_str(&format!(" {{{ARG_SLOT}{i}}}"));
        }
        appended = Template::parse(&text).map_err(|e| Error::BadTemplate {
            action: action.to_owned(),
            message: e.message,
        })?;
        &appended
    };
    let command = template
        .render(|name| {
            if let Some(i) = name.strip_prefix(ARG_SLOT) {
                return i
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| args.get(i))
                    .map(|word| Fill::Text(word.clone()));
            }
            if let (Some(value), Some(param)) = (
                values.get(name),
                capability.params.iter().find(|p| p.name == name),
            ) {
                return Some(params::render(param, value));
            }
            if let Some(field) = target.fields.get(name) {
                return Some(field_fill(target, name, field));
            }
            match name {
                "target" => Some(Fill::Text(target.name.clone())),
                "path" => Some(Fill::Text(target.path.clone())),
                _ => None,
            }
        })
        .map_err(|e| match e {
            RenderError::Unknown(name) => Error::Render {
                action: action.to_owned(),
                name,
            },
            RenderError::Broken(message) => Error::BadTemplate {
                action: action.to_owned(),
                message,
            },
            RenderError::Refused { name, why } if name.starts_with(ARG_SLOT) => Error::ArgsUnsafe {
                action: action.to_owned(),
                why: why.to_string(),
            },
            RenderError::Refused { name, why } => Error::UnsafePlaceholder {
                action: action.to_owned(),
                name,
                why: why.to_string(),
            },
        })?;
    if command.contains('\0') {
        return Err(Error::CommandNul {
            action: action.to_owned(),
        });
    }
    if command.len() > params::MAX_COMMAND {
        return Err(Error::CommandTooLong {
            action: action.to_owned(),
            len: command.len(),
            limit: params::MAX_COMMAND,
        });
    }
    Ok(command)
}

/// A capability's declared environment over the variables of its `env-file`, with the names
/// that came from the file. The file is read through `open_inside`: never outside the workspace,
/// never inside `.git` or `.once`, whatever links it crosses.
fn environment(
    root: &Path,
    action: &str,
    target: &Target,
    capability: &Capability,
) -> Result<(BTreeMap<String, String>, Vec<String>), Error> {
    let Some(file) = &capability.env_file else {
        return Ok((capability.env.clone(), Vec::new()));
    };
    let failed = |why: String| Error::EnvFile {
        action: action.to_string(),
        file: file.to_string(),
        why,
    };
    let relative = if target.path == "." {
        file.to_string()
    } else {
        format!("{}/{file}", target.path)
    };
    let opened = once_fs::open_inside(root, &relative).map_err(|e| failed(e.to_string()))?;
    let mut text = String::new();
    opened
        .take(crate::dotenv::MAX_ENV_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| failed(format!("it is not readable UTF-8 text ({e})")))?;
    if text.len() as u64 > crate::dotenv::MAX_ENV_FILE_BYTES {
        return Err(failed("it is larger than 1 MiB".into()));
    }
    let vars =
        crate::dotenv::parse(&text).map_err(|(line, why)| failed(format!("line {line}: {why}")))?;
    let mut env = capability.env.clone();
    let mut from_file = Vec::new();
    for (name, value) in vars {
        if let std::collections::btree_map::Entry::Vacant(slot) = env.entry(name) {
            from_file.push(slot.key().clone());
            slot.insert(value);
        }
    }
    Ok((env, from_file))
}

#[cfg(test)]
mod tests {
    use super::components;

    #[test]
    fn each_target_of_a_dag_is_its_own_component_and_a_cycle_is_one() {
        // 0 → 1 → 2, 3 ⇄ 4 → 2
        let adjacency = vec![vec![1], vec![2], vec![], vec![4], vec![3, 2]];
        let c = components(&adjacency);
        assert_eq!(c.len(), 5);
        let distinct: std::collections::BTreeSet<usize> = c.iter().copied().collect();
        assert_eq!(distinct.len(), 4);
        assert_eq!(c[3], c[4]);
        assert_ne!(c[0], c[1]);
        assert_ne!(c[1], c[2]);
        // Tarjan names a component after the ones it reaches: successors first.
        assert!(c[2] < c[1] && c[1] < c[0]);
        assert!(c[2] < c[3]);
    }

    #[test]
    fn a_chain_of_two_hundred_thousand_targets_needs_no_deep_stack() {
        let n = 200_000u32;
        let adjacency: Vec<Vec<u32>> = (0..n)
            .map(|i| if i + 1 < n { vec![i + 1] } else { vec![] })
            .collect();
        let c = components(&adjacency);
        assert_eq!(c[n as usize - 1], 0);
        assert_eq!(c[0], n as usize - 1);
    }
}
