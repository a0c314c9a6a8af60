//! Reading one `once.toml`: TOML → span-carrying values → typed targets.
//!
//! Everything wrong becomes a [`Diagnostic`] and parsing goes on, so a user sees
//! every problem at once; this module must never stop at the first error,
//! never panic on any input and never touch the file system.
//!
//! # Format
//!
//! ```toml
//! [workspace]                  # root manifest only
//! name = "shop"                # optional; defaults to the root folder's name
//! members = ["services/*"]     # folders holding more once.toml files
//! default-deadline = "10m"     # deadline of capabilities declaring none; default 30m
//! env-mode = "strict"          # loose (default): commands see the caller's whole environment;
//!                              # strict: a documented base, `pass-env` and `env` only
//! pass-env = ["CI", "NODE_*"]  # variables every command needs: passed when strict, always keyed
//!
//! [discover]                   # root manifest only: targets from the ecosystems' own manifests
//! enabled = true               # default; false: only the targets once.toml files declare
//! ecosystems = ["cargo"]       # default: cargo, javascript, python, go
//! exclude = ["bench-*"]        # inferred target names (globs) to leave out
//!
//! [cache]                      # root manifest only: the remote cache `once run` also uses
//! remote = "grpc://host:50051" # `grpc://host:port` (plaintext) or `grpcs://host[:port]` (TLS)
//! instance = "main"            # REAPI instance name; may be empty
//! upload = false               # whether successes are uploaded
//! timeout = "10s"              # per remote call
//! max-blob = "1GiB"            # the largest blob fetched; a result with a larger one is a miss
//! max-result = "4GiB"          # the largest result (all its outputs) fetched; larger: a miss
//! max-size = "10GiB"           # the local cache's bound; least recently used results go first
//! share-worktrees = false      # a linked git worktree keeps a cache of its own (default: shares)
//!                              # never credentials (`headers`): they come from the environment
//!
//! [execution]                  # root manifest only: the remote execution engine `once run` uses
//! remote = "grpc://host:50051" # REAPI Execution service; also the remote cache unless `[cache]`
//! instance = "main"            # names another
//! jobs = 64                    # remote actions in flight at once
//! platform = { OSFamily = "linux", container-image = "docker://…" }
//!
//! [targets.NAME]
//! kind = "cargo-package"       # required, unless NAME is an inferred target this overlays;
//!                              # another kind than the inferred one replaces that target
//! path = "crates/core"         # target folder relative to this manifest's folder; default "."
//! description = "…"            # optional
//! tags = ["backend"]           # optional
//! deps = ["proto"]             # capability C depends on C of each listed target that has C
//! package = "shop-core"        # any field of the kind
//!
//! [targets.NAME.capabilities.CAP]
//! command = "…"                # `sh -c` in the target folder; `{param}`, `{field}`, `{target}`, `{path}`,
//!                              # each quoted for where it sits (see `crate::template`)
//! description = "…"
//! inputs = ["src/**", "!x/**"] # globs relative to the target folder; `!` excludes
//! outputs = ["out/**"]
//! env = { KEY = "value" }
//! deadline = "2m"              # 500ms, 90s, 5m, 1h30m, 1d
//! pass-env = ["AWS_*"]         # added to the workspace's `pass-env` for this capability
//! env-file = ".env"            # dotenv file (relative to the target folder): its variables,
//!                              # under `env`; keyed by hash, never logged nor recorded
//! cache = false                # always run, never replay nor record (deploys)
//! persistent = true            # a server: no deadline, never cached, runs until stopped
//! local = true                 # runs on this machine even with remote execution on
//! platform = { container-image = "docker://…" }   # over `[execution] platform`
//! deps = ["t:cap", ":cap", "t"]
//!
//! [targets.NAME.capabilities.CAP.params.P]
//! type = "string"              # string | integer | boolean | enum (default string)
//! default = "x"                # absent: required at run time
//! description = "…"
//! flag = "--x"                 # boolean only
//! values = ["a", "b"]          # enum only
//! ```

pub(crate) mod execution;
mod literal;
mod target;
mod value;

use std::time::Duration;

use toml::de::{DeTable, DeValue};

use crate::diagnostic::{Diagnostic, Severity, SourceFile};
use crate::duration::parse_duration;
use crate::ecosystem::Ecosystem;
use crate::model::Target;
use crate::model::{ENV_MODES, EnvMode, valid_env_glob};
use crate::suggest;
pub use execution::ExecutionSettings;
pub(crate) use target::{DepRef, PendingTarget};
pub(crate) use value::Shared;
use value::{Cx, key_name};

pub use crate::model::{DEFAULT_DEADLINE, valid_name};
pub(crate) use crate::relpath::join_path;

/// Settings from the root manifest's `[workspace]` table.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub name: Option<String>,
    /// Member globs with the byte offset of each in the root manifest.
    pub members: Vec<(String, usize)>,
    pub default_deadline: Duration,
    pub env_mode: EnvMode,
    pub pass_env: Vec<String>,
    /// `[discover]`: whether and from which ecosystems targets are inferred.
    pub discover: DiscoverSettings,
    /// `[cache]`: the remote cache as the manifest configures it.
    pub cache: CacheSettings,
    /// `[execution]`: the remote execution engine as the manifest configures it.
    pub execution: ExecutionSettings,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            name: None,
            members: Vec::new(),
            default_deadline: DEFAULT_DEADLINE,
            env_mode: EnvMode::Loose,
            pass_env: Vec::new(),
            discover: DiscoverSettings::default(),
            cache: CacheSettings::default(),
            execution: ExecutionSettings::default(),
        }
    }
}

/// Settings from the root manifest's `[discover]` table.
#[derive(Debug, Clone)]
pub(crate) struct DiscoverSettings {
    /// `false`: no target is inferred.
    pub enabled: bool,
    /// The ecosystems whose manifests are read.
    pub ecosystems: Vec<Ecosystem>,
    /// Globs of inferred target names to leave out.
    pub exclude: Vec<String>,
}

impl Default for DiscoverSettings {
    fn default() -> Self {
        DiscoverSettings {
            enabled: true,
            ecosystems: Ecosystem::ALL.to_vec(),
            exclude: Vec::new(),
        }
    }
}

/// The root manifest's `[cache]` table: the lowest layer of the remote cache's configuration.
///
/// Each key is `None` when the manifest leaves it out, so that whoever builds the cache client
/// can put command-line flags and environment variables above it and its own defaults below.
/// Credentials are never here: the manifest is committed, so a `headers` key is an error.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheSettings {
    /// `remote`: the cache's URL as written, starting with `grpc://` or `grpcs://`.
    pub remote: Option<String>,
    /// `instance`: the REAPI instance name (may be empty).
    pub instance: Option<String>,
    /// `upload`: whether successful actions are uploaded to the remote cache.
    pub upload: Option<bool>,
    /// `timeout`: how long one remote call may take; never zero.
    pub timeout: Option<Duration>,
    /// `max-blob`: the largest blob, in bytes, fetched from the remote cache; never zero.
    pub max_blob: Option<u64>,
    /// `max-result`: the largest result (its outputs together), in bytes; never zero.
    pub max_result: Option<u64>,
    /// `max-size`: the bound of the local cache (results and objects), in bytes.
    pub max_size: Option<u64>,
    /// `share-worktrees`: whether a linked git worktree uses its main worktree's local cache.
    pub share_worktrees: Option<bool>,
}

/// The URL schemes a remote cache may use: plaintext and TLS gRPC.
const CACHE_SCHEMES: [&str; 2] = ["grpc://", "grpcs://"];

/// Keys of `[cache]` that would hold credentials, refused by name so their value is never shown.
const CREDENTIAL_KEYS: [&str; 4] = ["headers", "header", "authorization", "token"];

/// Inferred targets a manifest may overlay, sorted by name.
#[derive(Debug, Default)]
pub(crate) struct Bases {
    pub targets: Vec<Target>,
}

impl Bases {
    /// The inferred target named `name`.
    pub fn get(&self, name: &str) -> Option<&Target> {
        self.targets
            .binary_search_by(|t| t.name.as_str().cmp(name))
            .ok()
            .and_then(|i| self.targets.get(i))
    }
}

/// The inferred targets a manifest's targets overlay: computed once the root's settings are
/// read (they may turn discovery off), or already known (a member manifest).
pub(crate) enum Overlay<'b> {
    /// Infer with the root's settings.
    Infer(&'b mut dyn FnMut(&Settings, &mut Shared, &mut Vec<Diagnostic>) -> Bases),
    /// Inferred already.
    Ready(&'b Bases),
}

/// Parses a manifest. For the root (`settings == None`), reads `[workspace]`, `[discover]` and `[cache]`
/// and returns the settings it used; members get the root's settings. A target named like an
/// inferred one overlays it; the inferred targets are returned when this call inferred them.
#[allow(clippy::too_many_arguments)]
pub(crate) fn parse_file(
    src: &SourceFile,
    file: usize,
    dir_rel: &str,
    settings: Option<&Settings>,
    shared: &mut Shared,
    diags: &mut Vec<Diagnostic>,
    overlay: Overlay<'_>,
) -> (Settings, Vec<PendingTarget>, Vec<String>, Option<Bases>) {
    let (doc, errors) = DeTable::parse_recoverable(&src.text);
    for e in errors {
        let at = e.span().map_or(0, |s| s.start);
        diags.push(src.error(
            at,
            "toml-syntax",
            format!("invalid TOML: {}", e.message().trim()),
        ));
    }
    let mut cx = Cx { src, diags, shared };
    let is_root = settings.is_none();
    let mut own = Settings::default();
    let doc = doc.get_ref();
    if let Some((k, v)) = doc.get_key_value("workspace") {
        if is_root {
            own = parse_workspace(&mut cx, v);
        } else {
            cx.diags.push(
                src.error(
                    k.span().start,
                    "workspace-in-member",
                    "a `[workspace]` table is only allowed in the root once.toml",
                )
                .help("move these settings to the workspace root's once.toml, or delete the table"),
            );
        }
    }
    if is_root && let Some((_, v)) = doc.get_key_value("discover") {
        own.discover = parse_discover(&mut cx, v);
    }
    if is_root && let Some((_, v)) = doc.get_key_value("cache") {
        own.cache = parse_cache(&mut cx, v);
    }
    if is_root && let Some((_, v)) = doc.get_key_value("execution") {
        own.execution = execution::parse(&mut cx, v);
    }
    let settings = settings.unwrap_or(&own);
    let (inferred, ready) = match overlay {
        Overlay::Infer(infer) => (Some(infer(settings, cx.shared, cx.diags)), None),
        Overlay::Ready(bases) => (None, Some(bases)),
    };
    let none = Bases::default();
    let bases = inferred.as_ref().or(ready).unwrap_or(&none);
    let mut targets = Vec::new();
    let mut declared = Vec::new();
    for (k, v) in doc.iter() {
        match k.get_ref().as_ref() {
            "workspace" => {}
            "discover" if is_root => {}
            "discover" => cx.diags.push(
                src.error(
                    k.span().start,
                    "discover-in-member",
                    "a `[discover]` table is only allowed in the root once.toml",
                )
                .help("move it to the workspace root's once.toml, or delete the table"),
            ),
            "cache" if is_root => {}
            "cache" => cx.diags.push(
                src.error(
                    k.span().start,
                    "cache-in-member",
                    "a `[cache]` table is only allowed in the root once.toml",
                )
                .help("move it to the workspace root's once.toml, or delete the table"),
            ),
            "execution" if is_root => {}
            "execution" => cx.diags.push(
                src.error(
                    k.span().start,
                    "execution-in-member",
                    "an `[execution]` table is only allowed in the root once.toml",
                )
                .help("move it to the workspace root's once.toml, or delete the table"),
            ),
            "targets" => {
                let Some(table) = cx.table(v, format_args!("`targets`")) else {
                    continue;
                };
                targets.reserve(table.len());
                declared.reserve(table.len());
                for (name, tv) in table.iter() {
                    declared.push(key_name(name).to_string());
                    let base = bases.get(key_name(name));
                    if let Some(t) =
                        target::parse_target(&mut cx, file, dir_rel, settings, name, tv, base)
                    {
                        targets.push(t);
                    }
                }
            }
            _ => cx.unknown_key(
                k,
                &["workspace", "discover", "cache", "execution", "targets"],
                "at the top level",
            ),
        }
    }
    (own, targets, declared, inferred)
}

fn parse_discover(cx: &mut Cx<'_>, v: &toml::Spanned<DeValue<'_>>) -> DiscoverSettings {
    let mut d = DiscoverSettings::default();
    let Some(table) = cx.table(v, format_args!("`discover`")) else {
        return d;
    };
    let t: &DeTable<'_> = table;
    for (k, v) in t.iter() {
        match key_name(k) {
            "enabled" => {
                if let Some(b) = cx.boolean(v, format_args!("`discover.enabled`")) {
                    d.enabled = b;
                }
            }
            "ecosystems" => {
                let Some(list) = cx.string_list(v, format_args!("`discover.ecosystems`")) else {
                    continue;
                };
                d.ecosystems.clear();
                for (name, at) in list {
                    match Ecosystem::ALL.iter().find(|e| e.name() == name) {
                        Some(e) => d.ecosystems.push(*e),
                        None => cx.diags.push(
                            cx.src
                                .error(
                                    at,
                                    "unknown-ecosystem",
                                    format!("unknown ecosystem `{name}`"),
                                )
                                .expected("`cargo`, `javascript`, `python` or `go`")
                                .found(format!("`{name}`"))
                                .did_you_mean(suggest::best(
                                    name,
                                    Ecosystem::ALL.iter().map(|e| e.name()),
                                )),
                        ),
                    }
                }
            }
            "exclude" => {
                let Some(list) = cx.string_list(v, format_args!("`discover.exclude`")) else {
                    continue;
                };
                for (glob, at) in list {
                    match globset::GlobBuilder::new(glob)
                        .literal_separator(true)
                        .build()
                    {
                        Ok(_) => d.exclude.push(glob.to_string()),
                        Err(e) => cx.diags.push(
                            cx.src
                                .error(
                                    at,
                                    "bad-glob",
                                    format!("invalid target glob `{glob}`: {}", e.kind()),
                                )
                                .expected("a target name or a glob of names, like `bench-*`"),
                        ),
                    }
                }
            }
            _ => cx.unknown_key(k, &["enabled", "ecosystems", "exclude"], "in `[discover]`"),
        }
    }
    d
}

fn parse_cache(cx: &mut Cx<'_>, v: &toml::Spanned<DeValue<'_>>) -> CacheSettings {
    let mut c = CacheSettings::default();
    let Some(table) = cx.table(v, format_args!("`cache`")) else {
        return c;
    };
    let t: &DeTable<'_> = table;
    for (k, v) in t.iter() {
        match key_name(k) {
            "remote" => c.remote = remote_url(cx, v, "cache"),
            "instance" => {
                c.instance = cx
                    .string(v, format_args!("`cache.instance`"))
                    .map(str::to_string);
            }
            "upload" => c.upload = cx.boolean(v, format_args!("`cache.upload`")),
            "share-worktrees" => {
                c.share_worktrees = cx.boolean(v, format_args!("`cache.share-worktrees`"));
            }
            "timeout" => {
                let Some(text) = cx.string(v, format_args!("`cache.timeout`")) else {
                    continue;
                };
                // `parse_duration` refuses zero: a call allowed no time would always fail.
                match parse_duration(text) {
                    Ok(d) => c.timeout = Some(d),
                    Err(e) => cx.diags.push(
                        cx.src
                            .error(
                                v.span().start,
                                "bad-duration",
                                format!("invalid `cache.timeout`: {e}"),
                            )
                            .expected("a duration like `500ms`, `10s` or `1m`")
                            .found(format!("`{text}`")),
                    ),
                }
            }
            name @ ("max-blob" | "max-result" | "max-size") => {
                let Some(text) = cx.string(v, format_args!("`cache.{name}`")) else {
                    continue;
                };
                match crate::size::parse_size(text) {
                    Ok(bytes) if name == "max-blob" => c.max_blob = Some(bytes),
                    Ok(bytes) if name == "max-size" => c.max_size = Some(bytes),
                    Ok(bytes) => c.max_result = Some(bytes),
                    Err(e) => cx.diags.push(
                        cx.src
                            .error(
                                v.span().start,
                                "bad-size",
                                format!("invalid `cache.{name}`: {e}"),
                            )
                            .expected("a size like `512MiB` or `1GiB`")
                            .found(format!("`{text}`")),
                    ),
                }
            }
            name if CREDENTIAL_KEYS.contains(&name) => credentials_key(cx, k, "cache", name),
            _ => cx.unknown_key(
                k,
                &[
                    "remote",
                    "instance",
                    "upload",
                    "timeout",
                    "max-blob",
                    "max-result",
                    "max-size",
                    "share-worktrees",
                ],
                "in `[cache]`",
            ),
        }
    }
    c
}

/// The URL of `[TABLE] remote` (the remote cache, the execution engine): a gRPC URL with a
/// host, else a diagnostic and `None`.
pub(super) fn remote_url(
    cx: &mut Cx<'_>,
    v: &toml::Spanned<DeValue<'_>>,
    table: &str,
) -> Option<String> {
    let url = cx.string(v, format_args!("`{table}.remote`"))?;
    let host = CACHE_SCHEMES
        .iter()
        .find_map(|scheme| url.strip_prefix(scheme));
    if host.is_some_and(|h| !h.is_empty()) {
        return Some(url.to_string());
    }
    cx.diags.push(
        cx.src
            .error(
                v.span().start,
                "bad-remote-url",
                format!("`{table}.remote` must be a gRPC URL"),
            )
            .expected("a URL starting with `grpc://` or `grpcs://`, then a host")
            .found(format!("`{url}`"))
            .help("write `grpc://host:port` (plaintext) or `grpcs://host[:port]` (TLS)"),
    );
    None
}

/// A key of `[TABLE]` that would hold credentials: named by key, never by value (the value is a
/// secret the manifest already leaks), with where credentials go instead.
pub(super) fn credentials_key(cx: &mut Cx<'_>, k: &value::Key<'_>, table: &str, name: &str) {
    cx.diags.push(
        cx.src
            .error(
                k.span().start,
                "credentials-in-manifest",
                format!("`{table}.{name}` would put credentials in once.toml, which is committed"),
            )
            .help(
                "delete the key; set headers in env `ONCE_REMOTE_HEADERS` (one `Name: value` \
                 per line) or in a file named by `ONCE_REMOTE_HEADERS_FILE` or \
                 `--remote-headers-file`",
            ),
    );
}

fn parse_workspace(cx: &mut Cx<'_>, v: &toml::Spanned<DeValue<'_>>) -> Settings {
    let mut s = Settings::default();
    let Some(table) = cx.table(v, format_args!("`workspace`")) else {
        return s;
    };
    let t: &DeTable<'_> = table;
    for (k, v) in t.iter() {
        match key_name(k) {
            "name" => {
                s.name = cx
                    .string(v, format_args!("`workspace.name`"))
                    .map(str::to_string)
            }
            "members" => {
                if let Some(list) = cx.string_list(v, format_args!("`workspace.members`")) {
                    s.members = list
                        .into_iter()
                        .map(|(g, at)| (g.to_string(), at))
                        .collect();
                }
            }
            "default-deadline" => {
                if let Some(text) = cx.string(v, format_args!("`workspace.default-deadline`")) {
                    match parse_duration(text) {
                        Ok(d) => s.default_deadline = d,
                        Err(e) => cx.diags.push(
                            cx.src
                                .error(
                                    v.span().start,
                                    "bad-duration",
                                    format!("invalid `default-deadline`: {e}"),
                                )
                                .expected("a duration like `500ms`, `90s`, `5m`, `1h30m` or `1d`")
                                .found(format!("`{text}`")),
                        ),
                    }
                }
            }
            "env-mode" => {
                if let Some(text) = cx.string(v, format_args!("`workspace.env-mode`")) {
                    match text {
                        "loose" => s.env_mode = EnvMode::Loose,
                        "strict" => s.env_mode = EnvMode::Strict,
                        _ => cx.diags.push(
                            cx.src
                                .error(
                                    v.span().start,
                                    "unknown-env-mode",
                                    format!("unknown `env-mode` `{text}`"),
                                )
                                .expected("`loose` (the caller's whole environment) or `strict`")
                                .found(format!("`{text}`"))
                                .did_you_mean(suggest::best(text, ENV_MODES.iter().copied())),
                        ),
                    }
                }
            }
            "pass-env" => {
                if let Some(globs) = env_globs(cx, v, format_args!("`workspace.pass-env`")) {
                    s.pass_env = globs;
                }
            }
            _ => cx.unknown_key(
                k,
                &[
                    "name",
                    "members",
                    "default-deadline",
                    "env-mode",
                    "pass-env",
                ],
                "in `[workspace]`",
            ),
        }
    }
    s
}

/// A `pass-env` list, each glob checked; `None` when it is not a list of strings.
pub(crate) fn env_globs(
    cx: &mut Cx<'_>,
    v: &toml::Spanned<DeValue<'_>>,
    what: std::fmt::Arguments<'_>,
) -> Option<Vec<String>> {
    let list = cx.string_list(v, what)?;
    let mut globs = Vec::with_capacity(list.len());
    for (glob, at) in list {
        if valid_env_glob(glob) {
            globs.push(glob.to_string());
        } else {
            cx.diags.push(
                cx.src
                    .error(
                        at,
                        "bad-env-glob",
                        format!("invalid variable glob `{glob}` in {what}"),
                    )
                    .expected("a variable name or a glob of one, like `CI` or `NODE_*` (letters, digits, `_`, `*`, `?`)")
                    .found(format!("`{glob}`")),
            );
        }
    }
    Some(globs)
}

/// A warning at `offset` (kept here so callers need not import `Severity`).
pub(crate) fn warning(
    src: &SourceFile,
    offset: usize,
    code: &'static str,
    message: impl Into<String>,
) -> Diagnostic {
    src.diag(offset, Severity::Warning, code, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(valid_name("web"));
        assert!(valid_name("a.b_c-1"));
        assert!(!valid_name(""));
        assert!(!valid_name("-x"));
        assert!(!valid_name("a b"));
        assert!(!valid_name("a:b"));
    }

    /// Every key a capability table takes is in the JSON Schema an editor checks it with, and
    /// nothing else is: an editor must neither flag `batch = true` nor accept a key we refuse.
    #[test]
    fn the_schema_knows_every_capability_key() {
        let schema = crate::query::manifest_schema();
        let capability = &schema["properties"]["targets"]["additionalProperties"]["properties"]["capabilities"]
            ["additionalProperties"]["properties"];
        let mut in_schema: Vec<&str> = capability
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let mut parsed = target::CAP_KEYS.to_vec();
        in_schema.sort_unstable();
        parsed.sort_unstable();
        assert_eq!(in_schema, parsed);
    }
}
