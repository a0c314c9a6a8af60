//! `target`: everything about one target, typed and with defaults applied.
//!
//! Its lists of neighbours are previews: the first 20 names with the total, and the
//! graph query pages through the rest, so a target with thousands of dependents still answers
//! in a few kilobytes. The edges its manifest states (`inferred.edges`) are a page of their own,
//! with a cursor, so every one of them, ordering or not, is reachable from this answer. Must never expose raw TOML (values come from the resolved model) nor
//! return an unbounded list of neighbours.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::schema_util::{
    array, boolean, enumeration, integer, map, nullable, object, record, string, strings,
};
use super::{QueryError, find_target, page};
use crate::Workspace;
use crate::model::{EVALUATOR_LANGUAGES, Evaluator, Inference, Origin, Param, ParamType};

/// How many dependencies and dependents a target (and each capability) lists by name.
pub(crate) const PREVIEW: usize = 20;

/// Arguments of [`target`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetQuery {
    /// Target name.
    pub name: String,
    /// `inferred.next_cursor` of the previous answer: the next page of its edges.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Most edges per page of `inferred.edges`, default 20, max 200.
    #[serde(default)]
    pub limit: Option<u32>,
}

/// Where a target is declared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestLocation {
    /// Manifest path relative to the root.
    pub file: String,
    /// 1-based line of the target's key.
    pub line: u32,
}

/// A capability with everything resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapabilityDetail {
    /// Name.
    pub name: String,
    /// What it does.
    pub description: Option<String>,
    /// Command template.
    pub command: String,
    /// JSON Schema of its parameters.
    pub params_schema: Value,
    /// The first 20 dependencies as `target:capability`, by target, then capability.
    pub deps: Vec<String>,
    /// Dependencies over all; `once_query_graph` mode `deps` on `target:capability` pages them.
    pub deps_total: u32,
    /// Input globs.
    pub inputs: Vec<String>,
    /// Output globs.
    pub outputs: Vec<String>,
    /// Environment.
    pub env: BTreeMap<String, String>,
    /// Deadline in milliseconds.
    pub deadline_ms: u64,
    /// Globs of the caller's variables it needs (the workspace's and its own).
    pub pass_env: Vec<String>,
    /// A dotenv file (relative to the target folder) whose variables it gets.
    pub env_file: Option<String>,
    /// Whether a success may be recorded and replayed.
    pub cache: bool,
    /// Whether it runs until stopped (a server or watcher).
    pub persistent: bool,
    /// How many times a failed run is tried again.
    pub retries: u8,
    /// The mutex it holds while it runs: no other action naming it runs at the same time.
    pub mutex: Option<String>,
    /// `kind`, `manifest`, `kind+manifest`, `inferred` or `inferred+manifest`.
    pub origin: Origin,
}

/// A dependency an ecosystem's manifest states.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InferredEdge {
    /// The target depended on.
    pub target: String,
    /// `normal`, `dev`, `build` or `optional`.
    pub kind: String,
    /// Whether it orders actions; `false` when it would close a cycle (a test-only dependency
    /// back on a dependent).
    pub orders: bool,
}

/// How discovery inferred a target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InferredFrom {
    /// `cargo`, `javascript`, `python` or `go`.
    pub ecosystem: String,
    /// The ecosystem manifest that describes it, and the line naming the package.
    pub manifest: ManifestLocation,
    /// Where a once.toml overlay changes it, if one does.
    pub overlay: Option<ManifestLocation>,
    /// A page of the dependencies its manifest states (the first 20 unless `limit` says
    /// otherwise), in the manifest's order, those that order nothing included.
    pub edges: Vec<InferredEdge>,
    /// Those dependencies over all.
    pub edges_total: u32,
    /// Pass as `cursor`, with the same `name`, for the next page of `edges`; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// One target in full.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetDetail {
    /// Name.
    pub name: String,
    /// Kind.
    pub kind: String,
    /// Folder relative to the root.
    pub path: String,
    /// Description.
    pub description: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// Declaration site: the once.toml declaring or overlaying it, or the manifest it is
    /// inferred from.
    pub manifest: ManifestLocation,
    /// How discovery inferred it; `null` for a target only a once.toml declares.
    pub inferred: Option<InferredFrom>,
    /// Kind fields with defaults applied.
    pub fields: BTreeMap<String, Value>,
    /// The code evaluator it declares (`once eval`, `once_eval`), if any.
    pub evaluator: Option<Evaluator>,
    /// Capabilities by name.
    pub capabilities: Vec<CapabilityDetail>,
    /// The first 20 direct target dependencies, by name.
    pub deps: Vec<String>,
    /// Direct target dependencies over all.
    pub deps_total: u32,
    /// The first 20 targets depending directly on this one, by name.
    pub dependents: Vec<String>,
    /// Direct dependents over all.
    pub dependents_total: u32,
}

fn total(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// JSON Schema of a capability's parameters (used for its `params` argument).
pub fn params_schema(params: &[Param]) -> Value {
    let mut props = serde_json::Map::new();
    let mut required = Vec::new();
    for p in params {
        let mut s = match &p.ty {
            ParamType::String => json!({ "type": "string" }),
            ParamType::Integer => json!({ "type": "integer" }),
            ParamType::Boolean => json!({ "type": "boolean" }),
            ParamType::Enum(v) => json!({ "type": "string", "enum": v }),
        };
        if let Some(d) = &p.description {
            s["description"] = json!(d);
        }
        match &p.default {
            // A `null` default is an optional argument left out of the command: not required,
            // and no default of its type to state.
            Some(serde_json::Value::Null) => {}
            Some(d) => s["default"] = d.clone(),
            None => required.push(p.name.clone()),
        }
        props.insert(p.name.clone(), s);
    }
    json!({ "type": "object", "properties": props, "required": required, "additionalProperties": false })
}

/// Everything about one target.
pub fn target(ws: &Workspace, q: &TargetQuery) -> Result<TargetDetail, QueryError> {
    let ti = find_target(ws, &q.name)?;
    let t = &ws.targets[ti];
    let (file, line) = ws.target_location(t);
    // Target ids follow name order, so the first ids by value are the first names.
    let names = |ids: &[u32]| -> Vec<String> {
        let mut first = ids.to_vec();
        first.sort_unstable();
        first
            .iter()
            .take(PREVIEW)
            .filter_map(|&i| ws.targets.get(i as usize))
            .map(|t| t.name.clone())
            .collect()
    };
    let target_deps = ws
        .graph
        .target_adjacency()
        .get(ti)
        .map_or(&[][..], Vec::as_slice);
    let target_dependents = ws
        .graph
        .target_reverse()
        .get(ti)
        .map_or(&[][..], Vec::as_slice);
    let capabilities = t
        .capabilities
        .iter()
        .enumerate()
        .map(|(ci, c)| {
            let a = ws.graph.action(ti, ci);
            // Action ids follow target, then capability name order: sorting ids sorts names.
            let mut ids = ws.graph.action_deps(a).to_vec();
            ids.sort_unstable();
            let deps: Vec<String> = ids
                .iter()
                .take(PREVIEW)
                .map(|&d| super::action_name(ws, d))
                .collect();
            CapabilityDetail {
                name: c.name.to_string(),
                description: c.description.as_deref().map(str::to_string),
                command: c.command.to_string(),
                params_schema: params_schema(&c.params),
                deps,
                deps_total: total(ids.len()),
                inputs: c.inputs.to_vec(),
                outputs: c.outputs.to_vec(),
                env: c.env.clone(),
                deadline_ms: u64::try_from(c.deadline.as_millis()).unwrap_or(u64::MAX),
                pass_env: ws
                    .pass_env()
                    .iter()
                    .chain(c.pass_env.iter())
                    .cloned()
                    .collect(),
                env_file: c.env_file.as_deref().map(str::to_string),
                cache: c.cache && !c.persistent,
                persistent: c.persistent,
                retries: c.retries,
                mutex: c.mutex.as_deref().map(str::to_string),
                origin: c.origin,
            }
        })
        .collect();
    Ok(TargetDetail {
        name: t.name.clone(),
        kind: t.kind.clone(),
        path: t.path.clone(),
        description: t.description.clone(),
        tags: t.tags.clone(),
        manifest: ManifestLocation { file, line },
        inferred: t
            .inference
            .as_deref()
            .map(|inf| inferred(ws, &t.name, inf, q))
            .transpose()?,
        fields: t.fields.clone(),
        evaluator: t.evaluator.clone(),
        capabilities,
        deps: names(target_deps),
        deps_total: total(target_deps.len()),
        dependents: names(target_dependents),
        dependents_total: total(target_dependents.len()),
    })
}

/// How `inf` inferred the target named `name`, with the page of its edges `q` asks for.
fn inferred(
    ws: &Workspace,
    name: &str,
    inf: &Inference,
    q: &TargetQuery,
) -> Result<InferredFrom, QueryError> {
    let at = |(file, offset): (usize, usize)| {
        let (file, line) = ws.location(file, offset);
        ManifestLocation { file, line }
    };
    // The fingerprint names the target: a cursor of another target's edges is refused.
    let fp = page::fingerprint(&["target-edges", name]);
    let limit = Some(q.limit.unwrap_or(PREVIEW as u32));
    let (start, end, next) = page::window(q.cursor.as_deref(), limit, &fp, inf.edges.len())?;
    let mut edges: Vec<InferredEdge> = inf.edges[start..end]
        .iter()
        .map(|e| InferredEdge {
            target: e.0.clone(),
            kind: e.1.name().to_string(),
            orders: !inf.unordered.contains(e),
        })
        .collect();
    let next_cursor = page::fit(&mut edges, start, next, &fp);
    Ok(InferredFrom {
        ecosystem: inf.ecosystem.name().to_string(),
        manifest: at(inf.source),
        overlay: inf.overlay.map(at),
        edges,
        edges_total: total(inf.edges.len()),
        next_cursor,
    })
}

pub(crate) fn output_schema() -> Value {
    let cap = record(
        "A capability (named action) of the target",
        vec![
            ("name", string("Capability name")),
            ("description", nullable(string("What it does"))),
            (
                "command",
                string(
                    "Command template run by `sh -c` in the target folder; `{name}` are params or fields",
                ),
            ),
            (
                "params_schema",
                json!({ "type": "object", "description": "JSON Schema of the capability's parameters" }),
            ),
            (
                "deps",
                strings(
                    "The first 20 actions it depends on, as `target:capability`, by target then capability",
                ),
            ),
            (
                "deps_total",
                integer(
                    "Actions it depends on over all; once_query_graph mode deps on `target:capability` pages them",
                ),
            ),
            (
                "inputs",
                strings("Input globs relative to the target folder; `!` excludes"),
            ),
            (
                "outputs",
                strings("Output globs relative to the target folder"),
            ),
            (
                "env",
                map(json!({ "type": "string" }), "Environment variables"),
            ),
            ("deadline_ms", integer("Deadline in milliseconds")),
            (
                "pass_env",
                strings(
                    "Globs of the caller's variables it needs: passed in strict mode, keyed always",
                ),
            ),
            (
                "env_file",
                nullable(string(
                    "A dotenv file, relative to the target folder, whose variables it gets",
                )),
            ),
            (
                "cache",
                boolean("Whether a success may be recorded and replayed"),
            ),
            (
                "persistent",
                boolean(
                    "Whether it runs until stopped (a server or watcher): no deadline, never cached",
                ),
            ),
            (
                "retries",
                integer("How many times a failed run is tried again (a timeout never is)"),
            ),
            (
                "mutex",
                nullable(string(
                    "The mutex it holds while it runs: no other action naming it runs at the same time",
                )),
            ),
            (
                "origin",
                enumeration(
                    &[
                        "kind",
                        "manifest",
                        "kind+manifest",
                        "inferred",
                        "inferred+manifest",
                    ],
                    "Where the definition comes from",
                ),
            ),
        ],
    );
    record(
        "A target in full",
        vec![
            ("name", string("Target name")),
            ("kind", string("Kind name")),
            ("path", string("Folder relative to the workspace root")),
            ("description", nullable(string("Description"))),
            ("tags", strings("Tags")),
            (
                "manifest",
                location(
                    "Declaration site: the once.toml declaring or overlaying it, or the manifest it is inferred from",
                ),
            ),
            (
                "inferred",
                nullable(object(
                    "How the target was inferred from its ecosystem's manifests",
                    vec![
                        (
                            "ecosystem",
                            enumeration(&["cargo", "javascript", "python", "go"], "The ecosystem"),
                        ),
                        (
                            "manifest",
                            location("The manifest describing it, and the line naming the package"),
                        ),
                        ("overlay", nullable(location("The once.toml overlaying it"))),
                        (
                            "edges",
                            array(
                                record(
                                    "A dependency the manifest states",
                                    vec![
                                        ("target", string("The target depended on")),
                                        (
                                            "kind",
                                            enumeration(
                                                &["normal", "dev", "build", "optional"],
                                                "What for",
                                            ),
                                        ),
                                        (
                                            "orders",
                                            boolean(
                                                "Whether it orders actions (false: it would close a cycle)",
                                            ),
                                        ),
                                    ],
                                ),
                                "A page of the dependencies its manifest states, in its order (the first 20 unless `limit` says otherwise), those that order nothing included",
                            ),
                        ),
                        ("edges_total", integer("Those dependencies over all")),
                        (
                            "next_cursor",
                            string(
                                "Pass as `cursor`, with the same `name`, for the next page of `edges`; absent on the last page",
                            ),
                        ),
                    ],
                    &["ecosystem", "manifest", "overlay", "edges", "edges_total"],
                )),
            ),
            (
                "fields",
                json!({ "type": "object", "description": "Kind fields with defaults applied" }),
            ),
            (
                "evaluator",
                nullable(record(
                    "The code evaluator the target declares (once_eval)",
                    vec![
                        ("language", enumeration(EVALUATOR_LANGUAGES, "The runtime")),
                        (
                            "command",
                            nullable(string("The interpreter, in place of python3 or node")),
                        ),
                        (
                            "port_file",
                            nullable(string(
                                "nREPL: the server's port file, relative to the target folder",
                            )),
                        ),
                    ],
                )),
            ),
            ("capabilities", array(cap, "Capabilities sorted by name")),
            (
                "deps",
                strings("The first 20 direct target dependencies, by name"),
            ),
            (
                "deps_total",
                integer("Direct dependencies over all; once_query_graph mode deps pages them"),
            ),
            (
                "dependents",
                strings("The first 20 targets that depend directly on this one, by name"),
            ),
            (
                "dependents_total",
                integer("Direct dependents over all; once_query_graph mode dependents pages them"),
            ),
        ],
    )
}

fn location(description: &str) -> Value {
    record(
        description,
        vec![
            (
                "file",
                string("Manifest path relative to the workspace root"),
            ),
            ("line", integer("1-based line")),
        ],
    )
}

pub(crate) fn input_schema() -> Value {
    object(
        "Everything about one target",
        vec![
            (
                "name",
                string("Target name, as listed by once_query_targets"),
            ),
            (
                "cursor",
                string(
                    "`inferred.next_cursor` from the previous answer, unchanged, with the same `name`: the next page of its edges",
                ),
            ),
            (
                "limit",
                integer("Most edges per page of `inferred.edges`, 1-200, default 20"),
            ),
        ],
        &["name"],
    )
}
