//! The resolved, typed model of a workspace: targets, capabilities, params.
//!
//! Everything here is already validated and owns its data; it must never hold
//! TOML spans or raw values, so queries can use it without re-checking.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::ecosystem::{Ecosystem, EdgeKind};
use crate::template::Template;

/// The type of a capability parameter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "type", content = "values")]
pub enum ParamType {
    /// Any string.
    String,
    /// A 64-bit signed integer.
    Integer,
    /// `true`/`false`; with a `flag`, renders as the flag when true.
    Boolean,
    /// One of the listed strings.
    Enum(Vec<String>),
}

/// A typed parameter of a capability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Param {
    /// Name, used as `{name}` in the command.
    pub name: String,
    /// Type.
    pub ty: ParamType,
    /// Default; `None` means the parameter is required at run time.
    pub default: Option<serde_json::Value>,
    /// What it means.
    pub description: Option<String>,
    /// Boolean only: text substituted when true.
    pub flag: Option<String>,
}

/// Where a capability's definition comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Origin {
    /// Only from the kind's defaults.
    #[serde(rename = "kind")]
    Kind,
    /// Only from the manifest.
    #[serde(rename = "manifest")]
    Manifest,
    /// A kind default overridden or extended by the manifest.
    #[serde(rename = "kind+manifest")]
    KindAndManifest,
    /// Inferred from the ecosystem's own manifest (a package's script, say).
    #[serde(rename = "inferred")]
    Inferred,
    /// Inferred, then changed by a `once.toml` overlay.
    #[serde(rename = "inferred+manifest")]
    InferredAndManifest,
}

/// A resolved capability of a target.
///
/// The text parts are shared (`Arc`): a kind's defaults are held once and every
/// target of the kind points at them, as do equal names, commands and glob lists
/// read from the manifests; cloning a capability never copies text.
#[derive(Debug, Clone)]
pub struct Capability {
    /// Name (`build`, `test`, …).
    pub name: Arc<str>,
    /// What it does.
    pub description: Option<Arc<str>>,
    /// Command template, run by `sh -c` in the target folder.
    pub command: Arc<str>,
    /// `command` parsed: its placeholders, each with its quoting context. Empty when the
    /// command is not a valid template (the manifest then has an error).
    pub template: Arc<Template>,
    /// Parameters, sorted by name.
    pub params: Arc<[Param]>,
    /// Input globs relative to the target folder.
    pub inputs: Arc<[String]>,
    /// Output globs relative to the target folder.
    pub outputs: Arc<[String]>,
    /// Environment variables.
    pub env: BTreeMap<String, String>,
    /// Deadline (the workspace default when not declared).
    pub deadline: Duration,
    /// Globs of the caller's variables it needs: passed in strict mode, keyed in every mode.
    pub pass_env: Arc<[String]>,
    /// A dotenv file (relative to the target folder) whose variables the command gets, under
    /// the declared `env`; read when the action is planned, keyed by hash, never recorded.
    pub env_file: Option<Arc<str>>,
    /// Whether a result may be recorded and replayed (`cache = false` says never).
    pub cache: bool,
    /// Whether it runs until stopped (a server): no deadline, never cached.
    pub persistent: bool,
    /// Where it may run when remote execution is on: `local = true`, `platform`.
    pub placement: Placement,
    /// How many times a failed run is run again (0..=[`MAX_RETRIES`]); a timeout is not.
    pub retries: u8,
    /// Actions naming the same mutex never run at the same time, in one run or across runs on
    /// the workspace; a name of [`valid_mutex`]'s letters, so it can name a lock file.
    pub mutex: Option<Arc<str>>,
    /// The capabilities of each discovered dependency it waits for (turbo's `^build`): `None`
    /// is its ecosystem's rule ([`Ecosystem::needs`]), `Some` what an overlay's `needs` says.
    /// Whatever it waits for, its key covers every dependency's sources.
    pub needs: Option<Arc<[Arc<str>]>>,
    /// The ecosystem whose packages' capability of the same name this one does in one command
    /// (the root's `cargo nextest run --workspace` for each crate's `test`): `--all` runs it
    /// instead of them, `--affected` runs the affected packages instead of it
    /// ([`crate::stand_in`]), so no test runs twice.
    pub stands_for: Option<Ecosystem>,
    /// How several actions of this capability run as one command of the ecosystem's tool, where
    /// that tool takes several packages at once and its kind declares how (`cargo test -p a -p
    /// b`); `None` for every other capability.
    pub batch: Option<Batch>,
    /// Where the definition comes from.
    pub origin: Origin,
}

/// Where an action may run when a run sends actions to a remote execution engine
/// (`[execution]`): on this machine only, or on a worker whose platform has these properties.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    /// `local = true`: always runs on this machine (it needs something only this machine has).
    pub local: bool,
    /// `platform`: REAPI platform properties a worker must offer (`container-image`, `OSFamily`),
    /// over the ones `[execution] platform` names for every action.
    pub platform: Arc<BTreeMap<String, String>>,
}

/// How an action joins others of its capability in one command: a kind's declaration, which an
/// overlay's `batch = true|false` switches on or off.
///
/// A member's command must still be [`Batch::alone`] (no overlay `command`), run with every
/// parameter at its default and no words after `--`: anything else would make the batch do
/// something the action does not, so such an action runs on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// What the batch's command starts with, before every member's words: `cargo test`.
    pub command: Arc<str>,
    /// What it ends with, after them: the words each member's own command ends with, so that
    /// the batch runs exactly what each would (`''`, the empty filter `{filter}` renders to:
    /// given any filter, cargo runs no doc-tests, so neither may the batch).
    pub tail: Arc<str>,
    /// The command template a member must still have to join, every parameter at its default:
    /// `cargo test {filter}`.
    pub alone: Arc<str>,
    /// The words that select this member in the batch's command: `-p once-fs@0.1.0`.
    pub member: Arc<str>,
    /// The folder, relative to the workspace root, where the batch's command runs (the Cargo
    /// workspace's root); members of batches in different folders never join.
    pub dir: Arc<str>,
    /// Whether its actions join batches unless a run says otherwise (`--batch`, `--no-batch`).
    pub on: bool,
}

/// How the environment of a command is built from the caller's (`[workspace] env-mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EnvMode {
    /// Every variable of the caller passes through, the declared ones on top.
    #[default]
    Loose,
    /// Only a documented base, the variables `pass-env` names and the declared ones.
    Strict,
}

/// The names of [`EnvMode`]s, as a manifest spells them.
pub const ENV_MODES: &[&str] = &["loose", "strict"];

/// Whether `glob` is a valid `pass-env` entry: a variable name where `*` stands for any run of
/// characters and `?` for one.
pub(crate) fn valid_env_glob(glob: &str) -> bool {
    !glob.is_empty()
        && glob
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '*' | '?'))
}

/// The code evaluator a target declares (`[targets.NAME.evaluator]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evaluator {
    /// `python`, `node` or `nrepl` (one of [`EVALUATOR_LANGUAGES`]).
    pub language: String,
    /// The interpreter as shell words, in place of the language's default (`python3`, `node`).
    pub command: Option<String>,
    /// nREPL only: the server's port file, relative to the target folder (default `.nrepl-port`).
    pub port_file: Option<String>,
}

/// The most `retries` a capability may ask for.
pub const MAX_RETRIES: u8 = 10;

/// Whether `name` can be a `mutex`: 1 to 64 ASCII letters, digits, `-`, `_` and `.`, not
/// starting with `.` (it names a file under `.once/cache/locks/`).
pub fn valid_mutex(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The languages an evaluator may declare.
pub const EVALUATOR_LANGUAGES: &[&str] = &["python", "node", "nrepl"];

/// A resolved target.
#[derive(Debug, Clone)]
pub struct Target {
    /// Unique name.
    pub name: String,
    /// Kind name.
    pub kind: String,
    /// Folder relative to the workspace root, `/`-separated, `.` for the root.
    pub path: String,
    /// Optional description.
    pub description: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// Kind fields with defaults applied.
    pub fields: BTreeMap<String, serde_json::Value>,
    /// The code evaluator it declares, if any.
    pub evaluator: Option<Evaluator>,
    /// Capabilities sorted by name; shared with the kind's defaults (and every
    /// target using just those) unless the manifest changes them.
    pub capabilities: Arc<[Capability]>,
    /// How discovery inferred it; `None` for a target only a `once.toml` declares.
    pub inference: Option<Arc<Inference>>,
    /// Index of the manifest file that declares it.
    pub(crate) file: usize,
    /// Byte offset of the target's key in that file.
    pub(crate) offset: usize,
}

/// How discovery inferred a target from its ecosystem's manifests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inference {
    /// The ecosystem whose manifest describes it.
    pub ecosystem: Ecosystem,
    /// Its dependencies inside the workspace, as the manifest states them, with what each is for.
    /// Each one orders the dependent's capabilities after the dependency's, except those listed
    /// in `unordered`.
    pub edges: Vec<(String, EdgeKind)>,
    /// The same edges as discovery found them: each by the folder of the package of this
    /// ecosystem it reaches. They are what binds: `edges` are named from them once every name
    /// is final, so no name, given by discovery or by an overlay, can move an edge to another
    /// package.
    pub(crate) folder_edges: Vec<(String, EdgeKind)>,
    /// The edges that would close a cycle (a test-only dependency back on a dependent, legal in
    /// Cargo and npm): recorded, but not ordering anything.
    pub unordered: Vec<(String, EdgeKind)>,
    /// The manifest that describes it: its index among the workspace's files, and the byte
    /// offset of what names the package.
    pub(crate) source: (usize, usize),
    /// Where a `once.toml` overlay changes it: the manifest and the byte offset of its table.
    pub(crate) overlay: Option<(usize, usize)>,
}

impl Target {
    /// The capability named `name`.
    pub fn capability(&self, name: &str) -> Option<&Capability> {
        self.capabilities
            .binary_search_by(|c| (*c.name).cmp(name))
            .ok()
            .and_then(|i| self.capabilities.get(i))
    }
}

/// Default deadline of capabilities when neither they nor the workspace declare one.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(30 * 60);

/// Whether `name` is a valid target or capability name: `[A-Za-z0-9][A-Za-z0-9._-]*`.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}
