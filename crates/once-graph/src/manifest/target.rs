//! One `[targets.NAME]` table → a typed [`Target`] (deps still unresolved).
//!
//! Cross-target checks (unknown deps, duplicates, cycles) happen later in the
//! workspace, because they need every manifest; this module must never look
//! beyond the one target table it is given.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::literal;
use super::value::{Cx, Key, Val, found, key_name, to_json};
use super::{Settings, env_globs, join_path, valid_name};
use crate::duration::parse_duration;
use crate::kind::{FieldType, Kind, builtin_kinds, find_kind};
use crate::model::{
    Capability, EVALUATOR_LANGUAGES, Evaluator, MAX_RETRIES, Origin, Param, ParamType, Target,
    valid_mutex,
};
use crate::suggest;
use crate::template::Template;

/// A dependency string as written, with its location.
#[derive(Debug, Clone)]
pub(crate) struct DepRef {
    /// Shared: a target named in many `deps` is held once.
    pub text: Arc<str>,
    /// Id of `text` in the load's [`super::Shared`] texts.
    pub id: u32,
    pub offset: usize,
}

/// A parsed target whose dependencies still need resolving against all targets.
#[derive(Debug)]
pub(crate) struct PendingTarget {
    pub target: Target,
    /// Id of the name in the load's [`super::Shared`] texts.
    pub name_id: u32,
    /// Target-level `deps`.
    pub target_deps: Vec<DepRef>,
    /// Capability `deps`, parallel to `target.capabilities`; empty when no
    /// capability declares any.
    pub cap_deps: Vec<Vec<DepRef>>,
}

const TARGET_KEYS: &[&str] = &[
    "kind",
    "path",
    "description",
    "tags",
    "deps",
    "capabilities",
    "evaluator",
];
const EVALUATOR_KEYS: &[&str] = &["language", "command", "port-file"];
pub(super) const CAP_KEYS: &[&str] = &[
    "command",
    "description",
    "inputs",
    "outputs",
    "env",
    "deadline",
    "deps",
    "params",
    "pass-env",
    "env-file",
    "cache",
    "persistent",
    "retries",
    "mutex",
    "needs",
    "batch",
    "local",
    "platform",
];
const PARAM_KEYS: &[&str] = &["type", "default", "description", "flag", "values"];
const PARAM_TYPES: &[&str] = &["string", "integer", "boolean", "enum"];

pub(crate) fn parse_target(
    cx: &mut Cx<'_>,
    file: usize,
    dir_rel: &str,
    settings: &Settings,
    name_key: &Key<'_>,
    v: &Val<'_>,
    base: Option<&Target>,
) -> Option<PendingTarget> {
    let name = key_name(name_key);
    let at = name_key.span().start;
    if !valid_name(name) {
        cx.diags.push(
            cx.src
                .error(at, "invalid-name", format!("invalid target name `{name}`"))
                .expected("a name matching [A-Za-z0-9][A-Za-z0-9._-]*")
                .found(format!("`{name}`")),
        );
    }
    let table = cx.table(v, format_args!("target `{name}`"))?;

    // A target declared with another kind than the inferred one of its name replaces it whole:
    // the declaration says what the target is. Without `kind`, or with the same, it overlays.
    let base = base.filter(|b| {
        table
            .get("kind")
            .is_none_or(|kv| kv.get_ref().as_str() == Some(b.kind.as_str()))
    });
    // The kind decides which other keys are allowed, so read it first.
    let kind: Option<&'static Kind> = match table.get("kind") {
        // An overlay of an inferred target keeps its kind.
        None if base.is_some() => base.and_then(|b| find_kind(&b.kind)),
        None => {
            cx.diags.push(
                cx.src
                    .error(at, "missing-kind", format!("target `{name}` has no `kind`"))
                    .expected(format!("`kind = \"…\"`, one of {}", kind_list()))
                    .help("add e.g. `kind = \"command\"` and declare its capabilities"),
            );
            None
        }
        Some(kv) => match cx.string(kv, format_args!("`kind` of target `{name}`")) {
            None => None,
            Some(k) => {
                let found_kind = find_kind(k);
                if found_kind.is_none() {
                    cx.diags.push(
                        cx.src
                            .error(
                                kv.span().start,
                                "unknown-kind",
                                format!("unknown kind `{k}` for target `{name}`"),
                            )
                            .expected(format!("one of {}", kind_list()))
                            .found(format!("`{k}`"))
                            .did_you_mean(suggest::best(
                                k,
                                builtin_kinds().iter().map(|k| k.name.as_str()),
                            )),
                    );
                }
                found_kind
            }
        },
    };

    let mut path = base.map(|b| b.path.clone());
    let mut description = base.and_then(|b| b.description.clone());
    let mut tags = base.map(|b| b.tags.clone()).unwrap_or_default();
    let mut target_deps = Vec::new();
    let mut fields: BTreeMap<String, serde_json::Value> =
        base.map(|b| b.fields.clone()).unwrap_or_default();
    let mut cap_tables = None;
    let mut evaluator = None;
    for (k, val) in table.iter() {
        let key = key_name(k);
        match key {
            "kind" => {}
            "path" => {
                if let Some(p) = cx.string(val, format_args!("`path` of target `{name}`")) {
                    match join_path(dir_rel, p) {
                        Ok(j) => path = Some(j),
                        Err(code) => {
                            let msg = if code == "absolute-path" {
                                format!("`path` of target `{name}` is absolute")
                            } else {
                                format!("`path` of target `{name}` escapes the workspace root")
                            };
                            cx.diags.push(
                                cx.src
                                    .error(val.span().start, code, msg)
                                    .expected("a folder relative to this manifest's folder, inside the workspace")
                                    .found(format!("`{p}`")),
                            );
                        }
                    }
                }
            }
            "description" => {
                description = cx
                    .string(val, format_args!("`description` of target `{name}`"))
                    .map(str::to_string)
            }
            "tags" => {
                if let Some(l) = cx.string_list(val, format_args!("`tags` of target `{name}`")) {
                    tags = l.into_iter().map(|(s, _)| s.to_string()).collect();
                }
            }
            "deps" => {
                if let Some(l) = cx.string_list(val, format_args!("`deps` of target `{name}`")) {
                    target_deps = l
                        .into_iter()
                        .map(|(s, offset)| {
                            let (text, id) = cx.shared.text_id(s);
                            DepRef { text, id, offset }
                        })
                        .collect();
                }
            }
            "capabilities" => {
                cap_tables = cx.table(val, format_args!("`capabilities` of target `{name}`"))
            }
            "evaluator" => evaluator = parse_evaluator(cx, name, val),
            _ => {
                // Without a known kind we cannot tell fields from typos; the kind error suffices.
                if let Some(kd) = kind {
                    match kd.field(key) {
                        Some(spec) => {
                            if let Some(j) = field_value(
                                cx,
                                val,
                                spec.ty,
                                format_args!("field `{key}` of target `{name}`"),
                            ) {
                                fields.insert(key.to_string(), j);
                            }
                        }
                        None => {
                            let mut allowed: Vec<&str> = TARGET_KEYS.to_vec();
                            allowed.extend(kd.fields.iter().map(|f| f.name.as_str()));
                            cx.unknown_key(
                                k,
                                &allowed,
                                &format!("in target `{name}` (kind `{}`)", kd.name),
                            );
                        }
                    }
                }
            }
        }
    }
    let kind = kind?;
    for spec in kind.fill_defaults(name, &mut fields) {
        cx.diags.push(
            cx.src
                .error(
                    at,
                    "missing-field",
                    format!(
                        "target `{name}` of kind `{}` needs field `{}`",
                        kind.name, spec.name
                    ),
                )
                .expected(format!("`{} = …` ({})", spec.name, spec.ty.describe())),
        );
    }

    // Kind defaults first, then manifest capabilities override/extend them.
    // A target that only uses its kind's capabilities shares the kind's list.
    // An overlay starts from what discovery inferred instead.
    let mut capabilities: Arc<[Capability]> = match base {
        Some(b) => b.capabilities.clone(),
        None => cx.shared.kind_capabilities(kind, settings),
    };
    // Left empty (no allocation) when the manifest declares no capability.
    let mut cap_deps: Vec<Vec<DepRef>> = Vec::new();
    if let Some(ct) = cap_tables {
        // Sorted by name (the kind's list is); the texts stay shared.
        let mut caps = capabilities.to_vec();
        cap_deps.resize_with(caps.len(), Vec::new);
        for (ck, cv) in ct.iter() {
            parse_capability(
                cx,
                name,
                kind,
                &fields,
                settings,
                ck,
                cv,
                &mut caps,
                &mut cap_deps,
            );
        }
        capabilities = caps.into();
    }
    let name_id = cx.shared.text_id(name).1;
    Some(PendingTarget {
        name_id,
        target: Target {
            name: name.to_string(),
            kind: kind.name.clone(),
            path: path.unwrap_or_else(|| dir_rel_or_dot(dir_rel)),
            description,
            tags,
            fields,
            evaluator,
            capabilities,
            inference: base.and_then(|b| b.inference.as_ref()).map(|i| {
                let mut i = (**i).clone();
                i.overlay = Some((file, at));
                Arc::new(i)
            }),
            file,
            offset: at,
        },
        target_deps,
        cap_deps,
    })
}

/// `[targets.NAME.evaluator]`: the language (required), and the interpreter command or, for
/// nREPL, the port file. `None` (with diagnostics) when it is not usable.
fn parse_evaluator(cx: &mut Cx<'_>, name: &str, v: &Val<'_>) -> Option<Evaluator> {
    let table = cx.table(v, format_args!("`evaluator` of target `{name}`"))?;
    let mut language = None;
    let mut command = None;
    let mut port_file = None;
    let mut ok = true;
    for (k, val) in table.iter() {
        match key_name(k) {
            "language" => {
                let Some(text) = cx.string(
                    val,
                    format_args!("`language` of the evaluator of target `{name}`"),
                ) else {
                    ok = false;
                    continue;
                };
                if EVALUATOR_LANGUAGES.contains(&text) {
                    language = Some((text.to_string(), k.span().start));
                } else {
                    cx.diags.push(
                        cx.src
                            .error(
                                val.span().start,
                                "unknown-language",
                                format!("unknown evaluator language `{text}` for target `{name}`"),
                            )
                            .expected("one of `python`, `node`, `nrepl`")
                            .found(format!("`{text}`"))
                            .did_you_mean(suggest::best(text, EVALUATOR_LANGUAGES.iter().copied())),
                    );
                    ok = false;
                }
            }
            "command" => {
                command = cx
                    .string(
                        val,
                        format_args!("`command` of the evaluator of target `{name}`"),
                    )
                    .map(|text| (text.to_string(), k.span().start));
                ok &= command.is_some();
            }
            "port-file" => {
                let Some(text) = cx.string(
                    val,
                    format_args!("`port-file` of the evaluator of target `{name}`"),
                ) else {
                    ok = false;
                    continue;
                };
                if join_path("", text).is_err() {
                    cx.diags.push(
                        cx.src
                            .error(
                                val.span().start,
                                "absolute-path",
                                format!("`port-file` of the evaluator of target `{name}` leaves the workspace"),
                            )
                            .expected("a file relative to the target's folder, inside the workspace")
                            .found(format!("`{text}`")),
                    );
                    ok = false;
                } else {
                    port_file = Some((text.to_string(), k.span().start));
                }
            }
            _ => {
                cx.unknown_key(
                    k,
                    EVALUATOR_KEYS,
                    &format!("in the evaluator of target `{name}`"),
                );
                ok = false;
            }
        }
    }
    let Some((language, _)) = language else {
        if ok {
            cx.diags.push(
                cx.src
                    .error(
                        v.span().start,
                        "missing-language",
                        format!("the evaluator of target `{name}` has no `language`"),
                    )
                    .expected("`language = \"python\"`, `\"node\"` or `\"nrepl\"`"),
            );
        }
        return None;
    };
    // Each language takes only the keys that mean something to it.
    let misplaced = if language == "nrepl" {
        command.as_ref().map(|(_, at)| {
            (
                "command",
                *at,
                "an nREPL server is started by you, not by once; name its `port-file` instead",
            )
        })
    } else {
        port_file.as_ref().map(|(_, at)| {
            (
                "port-file",
                *at,
                "only an nREPL evaluator reads a port file; `command` names the interpreter",
            )
        })
    };
    if let Some((key, at, help)) = misplaced {
        cx.diags.push(
            cx.src
                .error(
                    at,
                    "evaluator-key",
                    format!(
                        "`{key}` does not apply to the {language} evaluator of target `{name}`"
                    ),
                )
                .help(help),
        );
        return None;
    }
    ok.then(|| Evaluator {
        language,
        command: command.map(|(text, _)| text),
        port_file: port_file.map(|(text, _)| text),
    })
}

fn dir_rel_or_dot(dir_rel: &str) -> String {
    if dir_rel.is_empty() {
        ".".into()
    } else {
        dir_rel.to_string()
    }
}

fn kind_list() -> String {
    builtin_kinds()
        .iter()
        .map(|k| format!("`{}`", k.name))
        .collect::<Vec<_>>()
        .join(", ")
}

fn field_value(
    cx: &mut Cx<'_>,
    v: &Val<'_>,
    ty: FieldType,
    what: fmt::Arguments<'_>,
) -> Option<serde_json::Value> {
    match ty {
        FieldType::String => cx
            .string(v, what)
            .map(|s| serde_json::Value::String(s.to_string())),
        FieldType::Boolean => cx.boolean(v, what).map(serde_json::Value::Bool),
        FieldType::Integer => match to_json(v.get_ref()) {
            j @ serde_json::Value::Number(_) if v.get_ref().is_integer() => Some(j),
            _ => {
                cx.wrong_type(v, what, "an integer");
                None
            }
        },
        FieldType::StringList => cx.string_list(v, what).map(|l| {
            serde_json::Value::Array(
                l.into_iter()
                    .map(|(s, _)| serde_json::Value::String(s.to_string()))
                    .collect(),
            )
        }),
    }
}

#[allow(clippy::too_many_arguments)]
fn parse_capability(
    cx: &mut Cx<'_>,
    target: &str,
    kind: &Kind,
    fields: &BTreeMap<String, serde_json::Value>,
    settings: &Settings,
    ck: &Key<'_>,
    cv: &Val<'_>,
    caps: &mut Vec<Capability>,
    cap_deps: &mut Vec<Vec<DepRef>>,
) {
    let cname = key_name(ck);
    let at = ck.span().start;
    if !valid_name(cname) {
        cx.diags.push(
            cx.src
                .error(
                    at,
                    "invalid-name",
                    format!("invalid capability name `{cname}` in target `{target}`"),
                )
                .expected("a name matching [A-Za-z0-9][A-Za-z0-9._-]*")
                .found(format!("`{cname}`")),
        );
        return;
    }
    let ctx = CapCtx { cname, target };
    let Some(table) = cx.table(cv, format_args!("{ctx}")) else {
        return;
    };
    // `caps` is sorted by name; a kind default is taken out while the manifest overrides it.
    let pos = caps.binary_search_by(|c| (*c.name).cmp(cname));
    let (mut cap, mut deps) = match pos {
        Ok(i) => {
            let mut cap = caps.remove(i);
            cap.origin = match cap.origin {
                Origin::Inferred | Origin::InferredAndManifest => Origin::InferredAndManifest,
                _ => Origin::KindAndManifest,
            };
            (cap, cap_deps.remove(i))
        }
        Err(_) => (
            Capability {
                name: cx.shared.text(cname),
                description: None,
                command: Arc::from(""),
                template: Arc::default(),
                params: Arc::new([]),
                // A kind default's name keys what that default keys, also where the target's
                // inferred capabilities (exactly its scripts or tools) left the default out:
                // the folder minus what the kind's tools write, and the workspace's lockfiles.
                inputs: kind
                    .defaults
                    .iter()
                    .find(|d| *d.name == *cname)
                    .map_or_else(|| Arc::new([]) as Arc<[String]>, |d| d.inputs.clone()),
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
                origin: Origin::Manifest,
            },
            Vec::new(),
        ),
    };
    let mut command_at = None;
    let mut broken: Vec<String> = Vec::new();
    // Where `deadline` and `cache = true` are written, to refuse them on a persistent capability.
    let mut deadline_at = None;
    let mut cached_at = None;
    // Where `batch` is written and what it says: applied once every key is read, since only a
    // capability whose kind declares a batch can have one switched on.
    let mut batch_at = None;
    for (k, v) in table.iter() {
        match key_name(k) {
            "command" => {
                if let Some(c) = cx.string(v, format_args!("`command` of {ctx}")) {
                    cap.command = cx.shared.text(c);
                    command_at = Some(v.span());
                }
            }
            "description" => {
                cap.description = cx
                    .string(v, format_args!("`description` of {ctx}"))
                    .map(Arc::from)
            }
            "inputs" => {
                if let Some(g) = globs(cx, v, true, format_args!("`inputs` of {ctx}")) {
                    cap.inputs = g;
                }
            }
            "outputs" => {
                if let Some(g) = globs(cx, v, false, format_args!("`outputs` of {ctx}")) {
                    cap.outputs = g;
                }
            }
            "env" => {
                if let Some(t) = cx.table(v, format_args!("`env` of {ctx}")) {
                    let mut env = BTreeMap::new();
                    for (ek, ev) in t.iter() {
                        if let Some(s) = cx.string(
                            ev,
                            format_args!("environment variable `{}` of {ctx}", key_name(ek)),
                        ) {
                            env.insert(key_name(ek).to_string(), s.to_string());
                        }
                    }
                    cap.env = env;
                }
            }
            "local" => {
                if let Some(local) = cx.boolean(v, format_args!("`local` of {ctx}")) {
                    cap.placement.local = local;
                }
            }
            "platform" => {
                if let Some(properties) =
                    super::execution::platform(cx, v, format_args!("`platform` of {ctx}"))
                {
                    cap.placement.platform = Arc::new(properties);
                }
            }
            "deadline" => {
                deadline_at = Some(k.span().start);
                if let Some(text) = cx.string(v, format_args!("`deadline` of {ctx}")) {
                    match parse_duration(text) {
                        Ok(d) => cap.deadline = d,
                        Err(e) => cx.diags.push(
                            cx.src
                                .error(
                                    v.span().start,
                                    "bad-duration",
                                    format!("invalid `deadline` of {ctx}: {e}"),
                                )
                                .expected("a duration like `500ms`, `90s`, `5m`, `1h30m` or `1d`")
                                .found(format!("`{text}`")),
                        ),
                    }
                }
            }
            "deps" => {
                if let Some(l) = cx.string_list(v, format_args!("`deps` of {ctx}")) {
                    deps = l
                        .into_iter()
                        .map(|(s, offset)| {
                            let (text, id) = cx.shared.text_id(s);
                            DepRef { text, id, offset }
                        })
                        .collect();
                }
            }
            "needs" => {
                if let Some(list) = cx.string_list(v, format_args!("`needs` of {ctx}")) {
                    cap.needs = Some(needs(cx, &ctx, list));
                }
            }
            "pass-env" => {
                if let Some(globs) = env_globs(cx, v, format_args!("`pass-env` of {ctx}")) {
                    cap.pass_env = globs.into();
                }
            }
            "env-file" => {
                if let Some(file) = cx.string(v, format_args!("`env-file` of {ctx}")) {
                    if join_path("", file).is_ok_and(|p| p != ".") {
                        cap.env_file = Some(Arc::from(file));
                    } else {
                        cx.diags.push(
                            cx.src
                                .error(
                                    v.span().start,
                                    "bad-env-file",
                                    format!("`env-file` of {ctx} must name a file inside the target folder's tree"),
                                )
                                .expected("a relative path like `.env` or `config/dev.env`")
                                .found(format!("`{file}`")),
                        );
                    }
                }
            }
            "cache" => {
                if let Some(cache) = cx.boolean(v, format_args!("`cache` of {ctx}")) {
                    cap.cache = cache;
                    cached_at = cache.then(|| k.span().start);
                }
            }
            "persistent" => {
                if let Some(persistent) = cx.boolean(v, format_args!("`persistent` of {ctx}")) {
                    cap.persistent = persistent;
                }
            }
            "retries" => match to_json(v.get_ref()).as_u64().map(u8::try_from) {
                Some(Ok(n)) if n <= MAX_RETRIES => cap.retries = n,
                _ => cx.diags.push(
                    cx.src
                        .error(
                            v.span().start,
                            "bad-retries",
                            format!("invalid `retries` of {ctx}"),
                        )
                        .expected(format!("a whole number from 0 to {MAX_RETRIES}"))
                        .found(match to_json(v.get_ref()) {
                            serde_json::Value::Number(n) => format!("`{n}`"),
                            _ => found(v.get_ref()),
                        }),
                ),
            },
            "batch" => {
                if let Some(on) = cx.boolean(v, format_args!("`batch` of {ctx}")) {
                    batch_at = Some((v.span().start, on));
                }
            }
            "mutex" => {
                if let Some(name) = cx.string(v, format_args!("`mutex` of {ctx}")) {
                    if valid_mutex(name) {
                        cap.mutex = Some(cx.shared.text(name));
                    } else {
                        cx.diags.push(
                            cx.src
                                .error(
                                    v.span().start,
                                    "bad-mutex",
                                    format!("invalid `mutex` of {ctx}"),
                                )
                                .expected("1 to 64 letters, digits, `-`, `_` or `.`, not starting with `.`")
                                .found(format!("`{name}`")),
                        );
                    }
                }
            }
            "params" => {
                if let Some(pt) = cx.table(v, format_args!("`params` of {ctx}")) {
                    let mut params = cap.params.to_vec();
                    for (pk, pv) in pt.iter() {
                        // A broken param is still declared: don't also flag its `{placeholder}`.
                        broken.push(key_name(pk).to_string());
                        if let Some(p) = parse_param(cx, &ctx, pk, pv) {
                            broken.pop();
                            match params.iter_mut().find(|q| q.name == p.name) {
                                Some(q) => *q = p,
                                None => params.push(p),
                            }
                        }
                    }
                    params.sort_by(|a, b| a.name.cmp(&b.name));
                    cap.params = params.into();
                }
            }
            _ => cx.unknown_key(k, CAP_KEYS, &format!("in {ctx}")),
        }
    }
    if let Some((at, on)) = batch_at {
        match &mut cap.batch {
            Some(batch) => batch.on = on,
            // Off is what it already is: nothing to say.
            None if !on => {}
            None => cx.diags.push(
                cx.src
                    .error(
                        at,
                        "no-batch",
                        format!("{ctx} cannot run in batches"),
                    )
                    .help("only a discovered Cargo package's `test` runs in batches (`cargo test -p a -p b`): remove `batch`"),
            ),
        }
    }
    if cap.persistent {
        if let Some(at) = deadline_at {
            cx.diags.push(
                cx.src
                    .error(
                        at,
                        "persistent-with-deadline",
                        format!("{ctx} is persistent and has a `deadline`"),
                    )
                    .help("a persistent capability runs until it is stopped: remove `deadline` or `persistent`"),
            );
        }
        if let Some(at) = cached_at {
            cx.diags.push(
                cx.src
                    .error(
                        at,
                        "persistent-cached",
                        format!("{ctx} is persistent, so its result cannot be cached"),
                    )
                    .help("remove `cache = true`; a server has no result to replay"),
            );
        }
        cap.cache = false;
    }
    if cap.command.is_empty() && command_at.is_none() {
        cx.diags.push(
            cx.src
                .error(at, "missing-command", format!("{ctx} has no `command`"))
                .expected("`command = \"…\"` (run by `sh -c` in the target folder)")
                .help(if kind.capabilities.is_empty() {
                    format!(
                        "targets of kind `{}` declare every capability's command by hand",
                        kind.name
                    )
                } else {
                    format!(
                        "kind `{}` has no default `{cname}`; add a `command`",
                        kind.name
                    )
                }),
        );
        return;
    }
    if let Some(span) = command_at {
        check_placeholders(cx, &mut cap, fields, &broken, span, &ctx);
    }
    let i = caps
        .binary_search_by(|c| (*c.name).cmp(cname))
        .unwrap_or_else(|i| i);
    caps.insert(i, cap);
    cap_deps.insert(i, deps);
}

/// "capability `C` of target `T`", formatted only when a diagnostic needs it.
struct CapCtx<'a> {
    cname: &'a str,
    target: &'a str,
}

impl fmt::Display for CapCtx<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "capability `{}` of target `{}`", self.cname, self.target)
    }
}

/// "param `P` of capability `C` of target `T`", formatted only when needed.
struct ParamCtx<'a> {
    pname: &'a str,
    cap: &'a CapCtx<'a>,
}

impl fmt::Display for ParamCtx<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "param `{}` of {}", self.pname, self.cap)
    }
}

fn check_placeholders(
    cx: &mut Cx<'_>,
    cap: &mut Capability,
    fields: &BTreeMap<String, serde_json::Value>,
    broken: &[String],
    span: std::ops::Range<usize>,
    ctx: &CapCtx<'_>,
) {
    // Point at the placeholder itself when the literal can be followed, else at its start.
    let raw = cx.src.text.get(span.clone()).unwrap_or("");
    let command = cap.command.clone();
    let at =
        |offset: usize| span.start + literal::offset_in_literal(raw, &command, offset).unwrap_or(0);
    let template = match cx.shared.template(&command) {
        Ok(template) => template,
        Err(e) => {
            cx.diags.push(cx.src.error(
                at(e.offset),
                "bad-template",
                format!("invalid `command` of {ctx}: {}", e.message),
            ));
            cap.template = Arc::new(Template::broken(&e));
            return;
        }
    };
    for slot in template.slots() {
        let name = slot.name.as_str();
        let known = name == "target"
            || name == "path"
            || fields.contains_key(name)
            || cap.params.iter().any(|p| p.name == name)
            || broken.iter().any(|b| b == name);
        if !known {
            let mut allowed: Vec<&str> = vec!["target", "path"];
            allowed.extend(fields.keys().map(String::as_str));
            allowed.extend(cap.params.iter().map(|p| p.name.as_str()));
            let list = allowed
                .iter()
                .map(|a| format!("`{{{a}}}`"))
                .collect::<Vec<_>>()
                .join(", ");
            cx.diags.push(
                cx.src
                    .error(
                        at(slot.offset),
                        "unknown-placeholder",
                        format!("unknown placeholder `{{{name}}}` in `command` of {ctx}"),
                    )
                    .expected(format!("one of {list}, or `{{{{` for a literal brace"))
                    .found(format!("`{{{name}}}`"))
                    .help(match suggest::best(name, allowed.iter().copied()) {
                        Some(s) => format!("did you mean `{{{s}}}`? or declare a param `{name}`"),
                        None => format!("declare it under `params.{name}`"),
                    }),
            );
        }
        if let Err(why) = slot.context {
            cx.diags.push(
                cx.src
                    .error(
                        at(slot.offset),
                        "unsafe-placeholder",
                        format!(
                            "placeholder `{{{name}}}` in `command` of {ctx} sits {why}, where no quoting keeps its value from running"
                        ),
                    )
                    .expected(
                        "a placeholder unquoted, inside `'…'` or `\"…\"`, or in one of those inside `$(…)`",
                    )
                    .found(format!("`{{{name}}}` {why}"))
                    .help(why.help().replace("{name}", &format!("{{{name}}}"))),
            );
        }
    }
    cap.template = template;
}

/// A glob list, each glob checked; equal lists read before are shared (and
/// not checked again). Only inputs may name files from the workspace root (`//`): outputs are
/// recorded and restored inside the target's folder.
fn globs(
    cx: &mut Cx<'_>,
    v: &Val<'_>,
    rooted: bool,
    what: fmt::Arguments<'_>,
) -> Option<Arc<[String]>> {
    let list = cx.string_list(v, what)?;
    // An equal list of inputs was checked under the laxer rule for `//`.
    let rooted_output = !rooted
        && list
            .iter()
            .any(|(g, _)| g.strip_prefix('!').unwrap_or(g).starts_with("//"));
    if !rooted_output && let Some(known) = cx.shared.known_list(&list) {
        return Some(known);
    }
    let mut out = Vec::with_capacity(list.len());
    let mut all_valid = true;
    for (g, at) in list.iter().copied() {
        let pattern = g.strip_prefix('!').unwrap_or(g);
        // `//` names a glob relative to the workspace root (a lockfile beside the manifest).
        let pattern = match pattern.strip_prefix("//") {
            Some(rest) if rooted => rest,
            _ => pattern,
        };
        // Globs are relative to the target's folder or the workspace root: one that climbs out
        // of it or starts at `/` would let a run hash, record or restore files anywhere (`.git/`
        // included).
        if pattern.starts_with('/') || pattern.split('/').any(|part| part == "..") {
            cx.diags.push(
                cx.src
                    .error(
                        at,
                        "glob-escapes",
                        format!("glob `{g}` in {what} leaves the target's folder"),
                    )
                    .expected(
                        "a glob relative to the target's folder, or to the workspace root after `//`, without `..` or a single leading `/`",
                    )
                    .found(format!("`{g}`")),
            );
            all_valid = false;
            continue;
        }
        if let Err(e) = globset::Glob::new(pattern) {
            cx.diags.push(
                cx.src
                    .error(
                        at,
                        "bad-glob",
                        format!("invalid glob `{g}` in {what}: {}", e.kind()),
                    )
                    .expected("a glob like `src/**/*.rs`; prefix `!` to exclude")
                    .found(format!("`{g}`")),
            );
            all_valid = false;
            continue;
        }
        out.push(g.to_string());
    }
    Some(if all_valid {
        cx.shared.add_list(&list)
    } else {
        out.into()
    })
}

fn parse_param(cx: &mut Cx<'_>, ctx: &CapCtx<'_>, pk: &Key<'_>, pv: &Val<'_>) -> Option<Param> {
    let pname = key_name(pk);
    let at = pk.span().start;
    let pctx = ParamCtx { pname, cap: ctx };
    if !valid_name(pname) {
        cx.diags.push(
            cx.src
                .error(
                    at,
                    "invalid-name",
                    format!("invalid param name `{pname}` in {ctx}"),
                )
                .expected("a name matching [A-Za-z0-9][A-Za-z0-9._-]*")
                .found(format!("`{pname}`")),
        );
        return None;
    }
    let table = cx.table(pv, format_args!("{pctx}"))?;
    let mut ok = true;
    let mut ty_name = "string";
    let mut ty_at = at;
    if let Some(tv) = table.get("type") {
        match cx.string(tv, format_args!("`type` of {pctx}")) {
            Some(t) if PARAM_TYPES.contains(&t) => {
                ty_name = PARAM_TYPES
                    .iter()
                    .copied()
                    .find(|x| *x == t)
                    .unwrap_or("string");
                ty_at = tv.span().start;
            }
            Some(t) => {
                cx.diags.push(
                    cx.src
                        .error(
                            tv.span().start,
                            "unknown-param-type",
                            format!("unknown type `{t}` of {pctx}"),
                        )
                        .expected("one of `string`, `integer`, `boolean`, `enum`")
                        .found(format!("`{t}`"))
                        .did_you_mean(suggest::best(t, PARAM_TYPES.iter().copied())),
                );
                return None;
            }
            None => return None,
        }
    }
    let mut values: Option<Vec<String>> = None;
    let mut default = None;
    let mut description = None;
    let mut flag = None;
    for (k, v) in table.iter() {
        match key_name(k) {
            "type" => {}
            "description" => {
                description = cx
                    .string(v, format_args!("`description` of {pctx}"))
                    .map(str::to_string)
            }
            "values" => match cx.string_list(v, format_args!("`values` of {pctx}")) {
                Some(l) => {
                    if ty_name != "enum" {
                        cx.diags.push(
                            cx.src
                                .error(k.span().start, "bad-enum", format!("`values` is only allowed on enum params, but {pctx} is `{ty_name}`"))
                                .help("set `type = \"enum\"` or remove `values`"),
                        );
                        ok = false;
                    }
                    values = Some(l.into_iter().map(|(s, _)| s.to_string()).collect());
                }
                None => ok = false,
            },
            "flag" => {
                if let Some(f) = cx.string(v, format_args!("`flag` of {pctx}")) {
                    if ty_name == "boolean" {
                        flag = Some(f.to_string());
                    } else {
                        cx.diags.push(
                            cx.src
                                .error(k.span().start, "flag-not-boolean", format!("`flag` is only allowed on boolean params, but {pctx} is `{ty_name}`"))
                                .expected("`type = \"boolean\"`")
                                .found(format!("`type = \"{ty_name}\"`")),
                        );
                        ok = false;
                    }
                } else {
                    ok = false;
                }
            }
            "default" => default = Some(v),
            _ => cx.unknown_key(k, PARAM_KEYS, &format!("in {pctx}")),
        }
    }
    let ty = match ty_name {
        "integer" => ParamType::Integer,
        "boolean" => ParamType::Boolean,
        "enum" => {
            let vals = values.unwrap_or_default();
            if vals.is_empty() {
                cx.diags.push(
                    cx.src
                        .error(ty_at, "bad-enum", format!("enum {pctx} has no `values`"))
                        .expected("`values = [\"a\", \"b\"]` with at least one value"),
                );
                ok = false;
            }
            ParamType::Enum(vals)
        }
        _ => ParamType::String,
    };
    let default = match default {
        None => None,
        Some(v) => {
            let dv = v.get_ref();
            let good = match &ty {
                ParamType::String => dv.is_str(),
                ParamType::Integer => dv.is_integer(),
                ParamType::Boolean => dv.is_bool(),
                ParamType::Enum(vals) => match dv.as_str() {
                    Some(s) if !vals.is_empty() && !vals.iter().any(|x| x == s) => {
                        cx.diags.push(
                            cx.src
                                .error(
                                    v.span().start,
                                    "bad-enum",
                                    format!("default `{s}` of {pctx} is not among its values"),
                                )
                                .expected(format!(
                                    "one of {}",
                                    vals.iter()
                                        .map(|x| format!("`{x}`"))
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                ))
                                .found(format!("`{s}`")),
                        );
                        ok = false;
                        true
                    }
                    Some(_) => true,
                    None => false,
                },
            };
            if !good {
                let expected = match &ty {
                    ParamType::String | ParamType::Enum(_) => "a string",
                    ParamType::Integer => "an integer",
                    ParamType::Boolean => "a boolean",
                };
                cx.diags.push(
                    cx.src
                        .error(
                            v.span().start,
                            "bad-default",
                            format!("default of {pctx} does not match its type `{ty_name}`"),
                        )
                        .expected(expected)
                        .found(found(dv)),
                );
                ok = false;
            }
            Some(to_json(dv))
        }
    };
    ok.then(|| Param {
        name: pname.to_string(),
        ty,
        default,
        description,
        flag,
    })
}

/// A capability's `needs`: capability names, each the capability of every discovered dependency
/// to wait for. A `target:capability` is a `deps` entry, not a need: it is refused, saying so.
fn needs(cx: &mut Cx<'_>, ctx: &dyn fmt::Display, list: Vec<(&str, usize)>) -> Arc<[Arc<str>]> {
    let mut out: Vec<Arc<str>> = Vec::with_capacity(list.len());
    for (name, offset) in list {
        if valid_name(name) {
            out.push(cx.shared.text(name));
            continue;
        }
        cx.diags.push(
            cx.src
                .error(
                    offset,
                    "bad-needs",
                    format!("`needs` of {ctx} lists `{name}`, which is not a capability name"),
                )
                .expected("capability names, each waited for on every discovered dependency, like `[\"build\"]`")
                .found(format!("`{name}`"))
                .help("to wait for one target's capability, list it in `deps` instead (`deps = [\"TARGET:CAPABILITY\"]`)"),
        );
    }
    out.sort();
    out.dedup();
    out.into()
}
