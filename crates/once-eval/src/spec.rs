//! What an evaluator is: its language, how to start it, where it runs, and its time limits.
//!
//! A spec is plain data that the caller builds from the manifest; this module must never read
//! a manifest or a file itself. Two specs that compare equal describe the same evaluator, so a
//! live evaluator whose target's spec changed is replaced rather than silently reused.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

/// How long an interrupted evaluation may take to acknowledge before its evaluator is killed.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(2);
/// How long a fresh evaluator may take to answer its first, trivial evaluation.
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(30);
/// The most text kept of each of an evaluation's stdout and stderr.
pub const OUTPUT_CAP: usize = 1 << 20;

/// The runtimes `once` can keep an evaluator for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// CPython, through the embedded adapter.
    Python,
    /// Node.js, through the embedded adapter.
    Node,
    /// An nREPL server someone else started (Clojure, Babashka, …), found by its port file.
    Nrepl,
}

impl Language {
    pub fn parse(name: &str) -> Option<Language> {
        match name {
            "python" => Some(Language::Python),
            "node" => Some(Language::Node),
            "nrepl" => Some(Language::Nrepl),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::Node => "node",
            Language::Nrepl => "nrepl",
        }
    }

    /// The interpreter started when the spec names none.
    pub fn default_command(self) -> &'static str {
        match self {
            Language::Python => "python3",
            Language::Node => "node",
            Language::Nrepl => "",
        }
    }
}

/// One target's evaluator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvaluatorSpec {
    pub language: Language,
    /// The interpreter, as shell words (`.venv/bin/python`, `uv run python`); `None` for the
    /// language's default. Unused for nREPL.
    pub command: Option<String>,
    /// nREPL only: the file that holds the server's port (absolute, or relative to `cwd`).
    pub port_file: Option<PathBuf>,
    /// The folder the evaluator runs in (the target's folder).
    pub cwd: PathBuf,
    /// Variables set on top of the base environment of `once_exec::base_env`.
    pub env: BTreeMap<String, String>,
    /// How long an interrupt may take before the evaluator is killed.
    pub grace: Duration,
    /// How long a fresh evaluator may take to become ready.
    pub start_timeout: Duration,
}

impl EvaluatorSpec {
    /// A spec with the defaults: the language's own interpreter, no extra variables.
    pub fn new(language: Language, cwd: impl Into<PathBuf>) -> EvaluatorSpec {
        EvaluatorSpec {
            language,
            command: None,
            port_file: None,
            cwd: cwd.into(),
            env: BTreeMap::new(),
            grace: DEFAULT_GRACE,
            start_timeout: DEFAULT_START_TIMEOUT,
        }
    }

    /// The interpreter's command line as it will be run.
    pub fn interpreter(&self) -> &str {
        self.command
            .as_deref()
            .unwrap_or(self.language.default_command())
    }
}
