//! The one error type of the crate.
//!
//! Most variants describe a bad request, found before anything runs, and say what was expected
//! so that a person or an agent can fix the call; [`Error::is_bad_request`] tells them apart from
//! the few that mean `once` itself could not do its part (a file it could not read or write).
//! What a command did, including failing, is never an error: it is in the report.

use std::io;
use std::path::PathBuf;

/// `; did you mean `a`?` or `; did you mean one of `a`, `b`?`, or nothing without a suggestion.
fn did_you_mean(near: &[String]) -> String {
    match near {
        [] => String::new(),
        [one] => format!("; did you mean `{one}`?"),
        many => format!(
            "; did you mean one of {}?",
            many.iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// `; it has: …`, after `; did you mean `x`?` (so `It has`) when there is a suggestion.
fn capabilities(near: &[String], available: &str) -> String {
    if near.is_empty() {
        format!("; it has: {available}")
    } else {
        format!("{} It has: {available}", did_you_mean(near))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "nothing to run: name a target (`TARGET` or `TARGET:CAPABILITY`) or use `--all CAPABILITY`"
    )]
    EmptyRequest,
    #[error("invalid action `{text}`: expected `TARGET` or `TARGET:CAPABILITY`")]
    BadAction { text: String },
    #[error("invalid parameter `{text}`: expected `NAME=VALUE`")]
    BadParamSyntax { text: String },
    #[error("no target named `{name}`{}", did_you_mean(near))]
    UnknownTarget { name: String, near: Vec<String> },
    #[error(
        "target `{target}` has no capability `{capability}`{}",
        capabilities(near, available)
    )]
    UnknownCapability {
        target: String,
        capability: String,
        /// Its capabilities close to `capability`.
        near: Vec<String>,
        available: String,
    },
    #[error(
        "target `{target}` has several capabilities ({available}); name one as `{target}:CAPABILITY`"
    )]
    AmbiguousCapability { target: String, available: String },
    #[error(
        "no target has the capability `{capability}`; {}; to add it, declare \
         `[targets.NAME.capabilities.{capability}]` with a `command` in `once.toml`",
        what_exists(existing)
    )]
    NoTargetHas {
        capability: String,
        /// As in [`Error::NothingSelected`].
        existing: String,
    },
    #[error("no target has the tag `{tag}`{}", near.as_ref().map(|n| format!("; did you mean `{n}`?")).unwrap_or_default())]
    UnknownTag { tag: String, near: Option<String> },
    #[error("invalid name glob `{glob}`: {message}")]
    BadNameGlob { glob: String, message: String },
    /// A valid selection that picks no action, and nothing else was asked: not a mistake, so a
    /// caller says so and succeeds.
    #[error(
        "nothing to run: no target{} has the capability `{capability}`; {}; to add it, declare \
         `[targets.NAME.capabilities.{capability}]` with a `command` in `once.toml`",
        if selected.is_empty() { String::new() } else { format!(" {selected}") },
        what_exists(existing)
    )]
    NothingSelected {
        selected: String,
        capability: String,
        /// The commonest capabilities of the targets the selection would pick, with counts:
        /// "`build` (2 targets), `test` (1 target)".
        existing: String,
    },
    #[error(
        "the words after `--` go to the last named action, and none is named: name one as `TARGET:CAPABILITY` before `--`"
    )]
    ArgsWithoutAction,
    #[error(
        "the words after `--` cannot be appended to the command of `{action}`: they would sit {why}"
    )]
    ArgsUnsafe { action: String, why: String },
    #[error("unknown parameter `{name}` for `{action}`; expected one of: {accepted}")]
    UnknownParam {
        action: String,
        name: String,
        accepted: String,
    },
    #[error("parameter `{name}` of `{action}` is required: expected {expected}")]
    MissingParam {
        action: String,
        name: String,
        expected: String,
    },
    #[error("parameter `{name}` of `{action}`: expected {expected}, found {found}")]
    BadParam {
        action: String,
        name: String,
        expected: String,
        found: String,
    },
    #[error(
        "the command of `{action}` names `{{{name}}}`, which is neither a parameter, a field nor `target`/`path`"
    )]
    Render { action: String, name: String },
    #[error(
        "the command of `{action}` puts `{{{name}}}` {why}, where no value is safe; run `once check`"
    )]
    UnsafePlaceholder {
        action: String,
        name: String,
        why: String,
    },
    #[error("cannot use the env-file `{file}` of `{action}`: {why}")]
    EnvFile {
        action: String,
        file: String,
        why: String,
    },
    #[error("the command of `{action}` is not a valid template: {message}; run `once check`")]
    BadTemplate { action: String, message: String },
    #[error("parameter `{name}` of `{action}` holds a NUL byte, which no command line can carry")]
    ParamNul { action: String, name: String },
    #[error(
        "parameter `{name}` of `{action}` is {len} bytes long; a value may be at most {limit} bytes"
    )]
    ParamTooLong {
        action: String,
        name: String,
        len: usize,
        limit: usize,
    },
    #[error("the command of `{action}` holds a NUL byte (from a field of its target)")]
    CommandNul { action: String },
    #[error(
        "the command of `{action}` renders to {len} bytes; `sh -c` takes at most {limit} bytes (Linux's limit on one argument)"
    )]
    CommandTooLong {
        action: String,
        len: usize,
        limit: usize,
    },
    #[error("dependency cycle through {actions}; run `once check`")]
    Cycle { actions: String },
    #[error("bad glob `{glob}` in `{action}`: {message}")]
    Glob {
        action: String,
        glob: String,
        message: String,
    },
    #[error("no run with id `{id}`")]
    UnknownRun { id: String },
    #[error("run `{run}` has no action `{action}` with a log")]
    UnknownLog { run: String, action: String },
    #[error("`{}`: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error(
        "`{revision}` is not a revision: pass a branch, tag or commit such as `HEAD`, `main` or `HEAD~3`"
    )]
    BadRevision { revision: String },
    #[error(
        "`{}` is not inside a git repository, so there is nothing to compare with; run `git init` there, or name the changed files instead (`--files`, or `files` over MCP)",
        root.display()
    )]
    NotARepository { root: PathBuf },
    #[error(
        "git knows no commit `{revision}`; pass one that exists (`git log --oneline` lists them), or name the changed files instead; a repository without any commit has none yet"
    )]
    UnknownRevision { revision: String },
    #[error("cannot list the changed files: {message}")]
    Git { message: String },
    /// A remote cache setting (a flag, a variable, the headers file) that cannot be used.
    #[error("remote cache: {message}")]
    RemoteConfig { message: String },
    /// The remote cache refused the configuration when the run connected (an unknown instance,
    /// credentials it does not accept).
    #[error("{0}; fix the remote cache's settings, or pass `--no-remote-cache` to run without it")]
    Remote(#[from] once_remote::Error),
}

impl Error {
    /// True when the request itself was wrong (exit status 2 in the CLI); false when `once`
    /// could not read or write something.
    pub fn is_bad_request(&self) -> bool {
        !matches!(
            self,
            Error::Io { .. }
                | Error::UnknownRun { .. }
                | Error::UnknownLog { .. }
                | Error::Git { .. }
                | Error::Remote(_)
                | Error::NothingSelected { .. }
        )
    }

    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { path, source }
    }
}

/// "the capabilities that exist are `build` (2 targets)", or "none has any capability".
fn what_exists(existing: &str) -> String {
    if existing.is_empty() {
        "none has any capability".to_string()
    } else {
        format!("the capabilities that exist are {existing}")
    }
}
