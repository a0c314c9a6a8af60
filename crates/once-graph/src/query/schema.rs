//! `schema`: JSON Schemas (2020-12) of `once.toml` and of every kind,
//! generated from the same kind tables that drive validation, so they can
//! never disagree. Must never hand-write a kind's fields here.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::QueryError;
use super::schema_util::{object, string};
use super::target::params_schema;
use crate::kind::{FieldDefault, FieldType, Kind, builtin_kinds, find_kind};
use crate::model::MAX_RETRIES;
use crate::suggest;

const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// Arguments of [`schema`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchemaQuery {
    /// Only this kind's entry.
    pub kind: Option<String>,
}

fn field_schema(ty: FieldType) -> Value {
    match ty {
        FieldType::String => json!({ "type": "string" }),
        FieldType::Boolean => json!({ "type": "boolean" }),
        FieldType::Integer => json!({ "type": "integer" }),
        FieldType::StringList => json!({ "type": "array", "items": { "type": "string" } }),
    }
}

fn kind_entry(k: &Kind) -> Value {
    let mut props = Map::new();
    let mut required = Vec::new();
    for f in &k.fields {
        let mut s = field_schema(f.ty);
        s["description"] = json!(f.description);
        if let FieldDefault::Value(v) = &f.default {
            s["default"] = v.clone();
        }
        if f.required {
            required.push(f.name.clone());
        }
        props.insert(f.name.clone(), s);
    }
    let caps: Map<String, Value> = k
        .capabilities
        .iter()
        .map(|c| {
            (
                c.name.clone(),
                json!({ "description": c.description, "command": c.command, "params": params_schema(&c.params) }),
            )
        })
        .collect();
    json!({
        "$schema": DIALECT,
        "description": k.description,
        "fields": { "type": "object", "properties": props, "required": required, "additionalProperties": false },
        "capabilities": caps,
    })
}

fn strings() -> Value {
    json!({ "type": "array", "items": { "type": "string" } })
}

/// The JSON Schema of `once.toml` alone: one document with `$schema` and no `$id`, so a copy
/// written to a file (`once query schema --manifest`) is what an editor's TOML support reads.
pub fn manifest_schema() -> Value {
    let pass_env = json!({
        "type": "array",
        "items": { "type": "string", "pattern": "^[A-Za-z0-9_*?]+$" },
        "description": "Globs of variable names (`*` any run, `?` one character): passed in strict mode, part of the cache key in every mode"
    });
    let duration = json!({ "type": "string", "pattern": "^([0-9]+(ms|s|m|h|d))+$", "description": "A duration like 500ms, 90s, 5m, 1h30m, 1d" });
    let param = json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "type": { "enum": ["string", "integer", "boolean", "enum"], "default": "string" },
            "default": { "description": "Default value; absent means required at run time, null means left out of the command when not given" },
            "description": { "type": "string" },
            "flag": { "type": "string", "description": "Boolean only: rendered when true" },
            "values": { "type": "array", "items": { "type": "string" }, "minItems": 1, "description": "Enum only" }
        }
    });
    let platform = json!({
        "type": "object",
        "additionalProperties": { "type": "string" },
        "description": "REAPI platform properties a remote worker must offer, like `OSFamily = \"linux\"` or `container-image`; a capability's go over `[execution] platform`, and `OSFamily` defaults to this machine's"
    });
    let capability = json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "command": { "type": "string", "description": "Run by `sh -c` in the target folder; {param}, {field}, {target}, {path}; {{ and }} are literal braces" },
            "description": { "type": "string" },
            "inputs": { "type": "array", "items": { "type": "string" }, "description": "Globs relative to the target folder; `!` excludes" },
            "outputs": { "type": "array", "items": { "type": "string" } },
            "env": { "type": "object", "additionalProperties": { "type": "string" } },
            "deadline": duration,
            "deps": { "type": "array", "items": { "type": "string" }, "description": "`target:cap`, `:cap` (same target) or `target` (same capability)" },
            "params": { "type": "object", "additionalProperties": param },
            "pass-env": pass_env.clone(),
            "env-file": { "type": "string", "description": "A dotenv file relative to the target folder (`KEY=value` lines); its variables reach the command under `env`, keyed by a hash of their values, never logged" },
            "cache": { "type": "boolean", "default": true, "description": "false: always run, never replay nor record the result (a deploy)" },
            "persistent": { "type": "boolean", "default": false, "description": "A server: no deadline (not allowed with `deadline`), never cached, runs until stopped" },
            "retries": { "type": "integer", "minimum": 0, "maximum": MAX_RETRIES, "default": 0, "description": "How many times a failed run (not one that timed out) is run again; a success after a retry is reported with `retried`" },
            "batch": { "type": "boolean", "description": "Whether actions of this capability that are ready at once run as one command of their tool (a Cargo package's `test`: `cargo test -p a -p b`); `once run --batch`/`--no-batch` overrides it for one run. Default: off (see the README's *Batches*)" },
            "local": { "type": "boolean", "default": false, "description": "true: runs on this machine even when the run sends actions to a remote execution engine (it needs something only this machine has)" },
            "platform": platform.clone(),
            "mutex": { "type": "string", "pattern": "^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$", "description": "Actions naming the same mutex never run at the same time, in one run or in concurrent runs on the workspace (a database, a port)" },
            "needs": { "type": "array", "items": { "type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]*$" }, "uniqueItems": true, "description": "The capabilities of each discovered dependency to wait for (turbo's `^build`); `[]` waits for none. Default: a JavaScript package's dependencies' `build`, nothing for Cargo, Python and Go, whose tools build dependencies themselves" }
        }
    });
    let kinds: Vec<&str> = builtin_kinds().iter().map(|k| k.name.as_str()).collect();
    let mut target_props = json!({
        "kind": { "enum": kinds },
        "path": { "type": "string", "description": "Folder relative to this manifest's folder; default `.`" },
        "description": { "type": "string" },
        "tags": strings(),
        "deps": { "type": "array", "items": { "type": "string" }, "description": "Every capability C depends on C of these targets when they have it" },
        "capabilities": { "type": "object", "additionalProperties": capability },
        "evaluator": {
            "type": "object",
            "additionalProperties": false,
            "required": ["language"],
            "description": "A persistent code evaluator for `once eval` and the MCP tool once_eval",
            "properties": {
                "language": { "enum": crate::model::EVALUATOR_LANGUAGES },
                "command": { "type": "string", "description": "python and node: the interpreter as shell words, in place of `python3` or `node`" },
                "port-file": { "type": "string", "description": "nrepl: the port file of a server you started, relative to the target folder; default `.nrepl-port`" }
            }
        }
    });
    // Kind fields: each allowed only with its kind (checked by `once`), typed here.
    for k in builtin_kinds() {
        for f in &k.fields {
            let mut s = field_schema(f.ty);
            s["description"] = json!(format!("({}) {}", k.name, f.description));
            target_props[f.name.as_str()] = s;
        }
    }
    json!({
        "$schema": DIALECT,
        "title": "once.toml",
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "workspace": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "name": { "type": "string" },
                    "members": { "type": "array", "items": { "type": "string" }, "description": "Globs of folders holding their own once.toml" },
                    "default-deadline": duration,
                    "env-mode": { "enum": crate::model::ENV_MODES, "default": "loose", "description": "loose: commands see the caller's whole environment; strict: only a documented base, `pass-env` and declared `env`" },
                    "pass-env": pass_env
                }
            },
            "discover": {
                "type": "object",
                "additionalProperties": false,
                "description": "Targets inferred from the workspace's own manifests (Cargo.toml, package.json workspaces, pnpm-workspace.yaml, pyproject.toml, go.work, go.mod); root once.toml only",
                "properties": {
                    "enabled": { "type": "boolean", "default": true, "description": "false: only the targets once.toml files declare" },
                    "ecosystems": { "type": "array", "items": { "enum": ["cargo", "javascript", "python", "go"] }, "description": "The ecosystems whose manifests are read; default all" },
                    "exclude": { "type": "array", "items": { "type": "string" }, "description": "Globs of inferred target names to leave out" }
                }
            },
            "cache": {
                "type": "object",
                "additionalProperties": false,
                "description": "The remote cache (REAPI v2 over gRPC) `once run` reads after a local miss and writes after a success; root once.toml only. `--remote-cache`, `--remote-instance`, `--remote-upload` and their `ONCE_REMOTE_*` variables override these keys; credentials (headers) never go here, only in env `ONCE_REMOTE_HEADERS` or a file named by `ONCE_REMOTE_HEADERS_FILE`",
                "properties": {
                    "remote": { "type": "string", "pattern": "^grpcs?://.+$", "description": "The cache's URL: `grpc://host:port` (plaintext) or `grpcs://host[:port]` (TLS, port 443 by default)" },
                    "instance": { "type": "string", "default": "", "description": "The REAPI instance name; may be empty" },
                    "upload": { "type": "boolean", "default": true, "description": "false: only read the remote cache (laptops); true: also upload successes (CI)" },
                    "timeout": { "type": "string", "pattern": "^([0-9]+(ms|s|m|h|d))+$", "default": "10s", "description": "How long one remote call may take, like 500ms, 10s, 1m; never zero" },
                    "max-blob": { "type": "string", "pattern": "^[0-9]+ ?(B|KiB|MiB|GiB|TiB)?$", "default": "1GiB", "description": "The largest blob fetched from the remote cache; a result with a larger one is a miss. Overridden by `--remote-max-blob` and `ONCE_REMOTE_MAX_BLOB`" },
                    "max-result": { "type": "string", "pattern": "^[0-9]+ ?(B|KiB|MiB|GiB|TiB)?$", "default": "4GiB", "description": "The largest result (its outputs together) fetched from the remote cache; a larger one is a miss. Overridden by `--remote-max-result` and `ONCE_REMOTE_MAX_RESULT`" },
                    "max-size": { "type": "string", "pattern": "^[0-9]+ ?(B|KiB|MiB|GiB|TiB)?$", "default": "10GiB", "description": "The bound of the local cache: past it, the least recently used results go until it is under 80% of it" },
                    "share-worktrees": { "type": "boolean", "default": true, "description": "Whether a linked git worktree uses its main worktree's local cache; false: a cache of its own" }
                }
            },
            "execution": {
                "type": "object",
                "additionalProperties": false,
                "description": "The remote execution engine (REAPI v2 `Execution` over gRPC) `once run` sends actions to; root once.toml only. `--remote-exec`, `--remote-jobs` and `ONCE_REMOTE_EXEC`, `ONCE_REMOTE_JOBS` override these keys; credentials never go here",
                "properties": {
                    "remote": { "type": "string", "pattern": "^grpcs?://.+$", "description": "The engine's URL: `grpc://host:port` (plaintext) or `grpcs://host[:port]` (TLS); it is the remote cache too unless `[cache] remote` names another" },
                    "instance": { "type": "string", "default": "", "description": "The REAPI instance name; may be empty" },
                    "jobs": { "type": "integer", "minimum": 1, "maximum": crate::manifest::execution::MAX_JOBS, "default": 64, "description": "How many actions may run remotely at once (local ones stay within `--jobs`)" },
                    "platform": platform
                }
            },
            "targets": {
                "type": "object",
                "propertyNames": { "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]*$" },
                "description": "Targets; one named like an inferred target overlays it (`kind` omitted or the same: fields and capabilities change it by name) or, with another `kind`, replaces it",
                "additionalProperties": { "type": "object", "additionalProperties": false, "properties": target_props }
            }
        }
    })
}

/// The manifest schema and every kind's, or one kind's entry.
pub fn schema(_ws: &crate::Workspace, q: &SchemaQuery) -> Result<Value, QueryError> {
    match &q.kind {
        Some(name) => find_kind(name)
            .map(kind_entry)
            .ok_or_else(|| QueryError::UnknownKind {
                kind: name.clone(),
                near: suggest::near(name, builtin_kinds().iter().map(|k| k.name.as_str()), 3),
            }),
        None => {
            let kinds: Map<String, Value> = builtin_kinds()
                .iter()
                .map(|k| (k.name.clone(), kind_entry(k)))
                .collect();
            Ok(json!({ "manifest": manifest_schema(), "kinds": kinds }))
        }
    }
}

pub(crate) fn output_schema() -> Value {
    json!({ "type": "object", "description": "JSON Schema 2020-12 documents: `{manifest, kinds}`, or one kind's `{description, fields, capabilities}`" })
}

pub(crate) fn input_schema() -> Value {
    object(
        "JSON Schemas of once.toml and of the built-in kinds",
        vec![(
            "kind",
            string("Only this kind, e.g. `cargo-package`; omit for the manifest and all kinds"),
        )],
        &[],
    )
}
