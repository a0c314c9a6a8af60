//! The one way `once` starts git: [`run`], which runs a few git commands in a repository that
//! may be hostile, with every setting of git's that can start a program turned off.
//!
//! A repository's configuration is its author's: `.git/config` (and what it includes, and
//! `.gitattributes`, which picks filter and diff drivers by path) can name programs that git runs
//! on its own while it reads the work tree: an fsmonitor hook, hooks such as `post-index-change`
//! (git refreshes the index during a `diff`), clean and process filters, external diff and
//! textconv drivers, pagers, and, through a lazy fetch in a partial clone, ssh commands, proxies,
//! credential helpers, askpass programs and `ext::` transports. A read-only question such as
//! "what changed since `main`" must run none of them. So every git process gets:
//!
//! - settings on git's own command line (`GIT_CONFIG_COUNT`, which outranks every file, included
//!   ones too): the fixed list [`FIXED`], plus one override for each driver-like key the
//!   repository's configuration defines ([`neutralise`]: filter, diff and pager drivers,
//!   per-URL credential helpers, per-protocol permissions), read first with
//!   `git config --list --name-only` so that `include.path` and `includeIf` chains are seen as
//!   git sees them;
//! - variables that outrank the configuration: no askpass, no proxy, no ssh, no protocol at all
//!   (`GIT_ALLOW_PROTOCOL` empty), no lazy fetch, no terminal prompt, no optional locks;
//! - no pager and no external diff on its command line (`--no-pager`, and callers pass
//!   `--no-ext-diff --no-textconv` to `diff`);
//! - closed stdin, its own process group and a deadline (`once_exec::run`, like every process).
//!
//! A filter that is off changes no answer about *which* files changed for the worse: a file whose
//! clean filter would have made it match the index is reported as changed, never the reverse.
//!
//! Arguments reach git through variables, never spliced into the shell's text, and git's
//! answers are written to files in a folder only this user can open. This module must never
//! start git any other way, and never let a repository's settings choose a program.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use once_exec::{Cancel, CommandSpec, Registry, Status};

use crate::error::Error;

/// How long each git run may take to answer.
pub const GIT_DEADLINE: Duration = Duration::from_secs(30);

/// Settings that turn off what git could start, whatever the repository says. Empty values
/// reset a list (`credential.helper`) or name no program; `/dev/null` holds no hooks.
pub const FIXED: &[(&str, &str)] = &[
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.askPass", ""),
    ("core.sshCommand", "false"),
    ("core.gitProxy", "none"),
    ("core.editor", "false"),
    ("core.alternateRefsCommand", ""),
    ("sequence.editor", "false"),
    ("diff.external", ""),
    ("credential.helper", ""),
    ("protocol.allow", "never"),
    ("protocol.ext.allow", "never"),
    ("protocol.file.allow", "never"),
    ("protocol.ssh.allow", "never"),
    ("protocol.git.allow", "never"),
    ("protocol.http.allow", "never"),
    ("protocol.https.allow", "never"),
    ("submodule.recurse", "false"),
    ("safe.bareRepository", "explicit"),
];

/// Variables that outrank git's configuration, set for every git process.
const VARIABLES: &[(&str, &str)] = &[
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GIT_OPTIONAL_LOCKS", "0"),
    ("GIT_PAGER", "cat"),
    ("PAGER", "cat"),
    ("GIT_ASKPASS", ""),
    ("SSH_ASKPASS", ""),
    ("GIT_SSH_COMMAND", "false"),
    ("GIT_PROXY_COMMAND", ""),
    ("GIT_ALLOW_PROTOCOL", ""),
    ("GIT_PROTOCOL_FROM_USER", "0"),
    ("GIT_NO_LAZY_FETCH", "1"),
    ("GIT_EDITOR", "false"),
];

/// Variables of the caller's that would choose a program for git; the script unsets them.
const UNSET: &str = "GIT_EXTERNAL_DIFF GIT_SSH GIT_SEQUENCE_EDITOR GIT_CONFIG_PARAMETERS";

/// The most driver-like keys a repository may define before `once` gives up on it: each is one
/// variable in git's environment, which the system bounds.
const MAX_OVERRIDES: usize = 2_000;

/// The exit status of the script when `git` is not on `PATH`.
const NO_GIT: i32 = 99;

/// The exit status of the script when step `n` failed is `FIRST_STEP_FAILED + n`.
const FIRST_STEP_FAILED: i32 = 100;

/// What a run of git commands came to.
#[derive(Debug)]
pub enum Answer {
    /// Every step exited 0: what each printed on stdout, in order.
    Printed(Vec<Vec<u8>>),
    /// Step `step` (from 0) exited non-zero; `said` is what git wrote on stderr, trimmed.
    Failed { step: usize, said: String },
}

/// Runs `steps` (each a git command's arguments, without `git`) one after the other in `root`,
/// hardened as the module says, stopping at the first that fails. `overrides` are settings added
/// after [`FIXED`] (those [`neutralise`] made). Errors are git missing, a deadline, or a failure to
/// start.
pub fn run(
    root: &Path,
    steps: &[&[&str]],
    overrides: &[(String, String)],
    label: &str,
    registry: &Registry,
) -> Result<Answer, Error> {
    let scratch = Scratch::new()?;
    let errors = scratch.0.join("errors");
    let mut script = format!("unset {UNSET}\ncommand -v git >/dev/null || exit {NO_GIT}\n");
    let mut spec = CommandSpec::new(String::new(), root, scratch.0.join("log"));
    for (index, step) in steps.iter().enumerate() {
        script.push_str("git --no-pager");
        for (at, argument) in step.iter().enumerate() {
            let name = format!("ONCE_GIT_{index}_{at}");
            script.push_str(&format!(" \"${name}\""));
            spec.env.insert(name, (*argument).to_string());
        }
        let failed = FIRST_STEP_FAILED + index as i32;
        script.push_str(&format!(
            " >\"$ONCE_GIT_OUT/{index}\" 2>>\"$ONCE_GIT_ERRORS\" || exit {failed}\n"
        ));
    }
    spec.command = script;
    spec.deadline = GIT_DEADLINE;
    spec.label = label.to_string();
    spec.env
        .insert("ONCE_GIT_OUT".into(), scratch.0.to_string_lossy().into());
    spec.env
        .insert("ONCE_GIT_ERRORS".into(), errors.to_string_lossy().into());
    for (name, value) in VARIABLES {
        spec.env.insert((*name).into(), (*value).into());
    }
    let settings = FIXED
        .iter()
        .map(|(key, value)| ((*key).to_string(), (*value).to_string()))
        .chain(overrides.iter().cloned());
    let mut count = 0;
    for (index, (key, value)) in settings.enumerate() {
        spec.env.insert(format!("GIT_CONFIG_KEY_{index}"), key);
        spec.env.insert(format!("GIT_CONFIG_VALUE_{index}"), value);
        count = index + 1;
    }
    spec.env
        .insert("GIT_CONFIG_COUNT".into(), count.to_string());

    let outcome = once_exec::run(&spec, registry, &Cancel::new()).map_err(|error| Error::Git {
        message: format!("cannot start git: {error}"),
    })?;
    match outcome.status {
        Status::Exited { code: 0 } => {
            let mut printed = Vec::with_capacity(steps.len());
            for index in 0..steps.len() {
                let path = scratch.0.join(index.to_string());
                printed.push(std::fs::read(&path).map_err(Error::io(&path))?);
            }
            Ok(Answer::Printed(printed))
        }
        Status::Exited { code: NO_GIT } => Err(Error::Git {
            message: String::from("`git` is not installed or not on `PATH`"),
        }),
        Status::Exited { code } if code >= FIRST_STEP_FAILED => {
            let text = std::fs::read_to_string(&errors).unwrap_or_default();
            Ok(Answer::Failed {
                step: (code - FIRST_STEP_FAILED) as usize,
                said: text.trim().to_string(),
            })
        }
        Status::TimedOut => Err(Error::Git {
            message: format!("git did not answer within {} s", GIT_DEADLINE.as_secs()),
        }),
        other => Err(Error::Git {
            message: format!("git ended unexpectedly: {other:?}"),
        }),
    }
}

/// The overrides that turn off every driver-like key in `names`, the NUL-separated output of
/// `git config --list --name-only -z`: filter drivers (their commands emptied, none required),
/// diff drivers' commands and textconv, pagers per command, credential helpers per URL, and the
/// permission of every protocol named.
pub fn neutralise(names: &[u8]) -> Result<Vec<(String, String)>, Error> {
    let mut overrides = Vec::new();
    for name in names.split(|&b| b == 0).filter(|name| !name.is_empty()) {
        let Ok(name) = std::str::from_utf8(name) else {
            // git prints a key as it was written; a key that is not UTF-8 cannot be overridden
            // through the environment, so the repository is refused rather than trusted.
            return Err(Error::Git {
                message: String::from(
                    "the repository's git configuration has a key that is not UTF-8; \
                     remove it from `.git/config` (or the file that includes it)",
                ),
            });
        };
        if let Some(value) = override_for(name) {
            overrides.push((name.to_string(), value.to_string()));
        }
    }
    overrides.sort();
    overrides.dedup();
    if overrides.len() > MAX_OVERRIDES {
        return Err(Error::Git {
            message: format!(
                "the repository's git configuration defines {} drivers and helpers, more than \
                 {MAX_OVERRIDES}; `once` will not run git in it",
                overrides.len()
            ),
        });
    }
    Ok(overrides)
}

/// The value that turns `key` off, when it is a key that names a program.
fn override_for(key: &str) -> Option<&'static str> {
    let (section, rest) = key.split_once('.')?;
    let (_, variable) = rest.rsplit_once('.').unwrap_or(("", rest));
    let section = section.to_ascii_lowercase();
    let variable = variable.to_ascii_lowercase();
    let has_subsection = rest.contains('.');
    match (section.as_str(), variable.as_str()) {
        ("filter", "clean" | "smudge" | "process") if has_subsection => Some(""),
        ("filter", "required") if has_subsection => Some("false"),
        ("diff", "command" | "textconv") if has_subsection => Some(""),
        ("merge", "driver") if has_subsection => Some(""),
        ("credential", "helper") if has_subsection => Some(""),
        ("protocol", "allow") if has_subsection => Some("never"),
        ("pager", _) => Some("false"),
        _ => None,
    }
}

/// A folder for git's answers that only this user can open, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch, Error> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!(
            "once-git-{}-{}-{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        // `create` fails on an existing path, so nothing planted there is ever used; 0700 keeps
        // the list of changed files from other users.
        #[cfg(unix)]
        let builder = {
            let mut builder = std::fs::DirBuilder::new();
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder
        };
        #[cfg(not(unix))]
        let builder = std::fs::DirBuilder::new();
        builder.create(&path).map_err(Error::io(&path))?;
        Ok(Scratch(path))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_driver_like_key_is_turned_off_and_nothing_else() {
        let names = b"core.bare\0filter.lfs.clean\0filter.Evil.process\0filter.x.required\0\
diff.x.textconv\0diff.x.command\0diff.x.binary\0pager.diff\0credential.https://h.helper\0\
protocol.ext.allow\0merge.m.driver\0user.name\0filter.clean\0";
        let overrides = neutralise(names).unwrap();
        let got: Vec<(&str, &str)> = overrides
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("credential.https://h.helper", ""),
                ("diff.x.command", ""),
                ("diff.x.textconv", ""),
                ("filter.Evil.process", ""),
                ("filter.lfs.clean", ""),
                ("filter.x.required", "false"),
                ("merge.m.driver", ""),
                ("pager.diff", "false"),
                ("protocol.ext.allow", "never"),
            ]
        );
    }

    #[test]
    fn a_flood_of_drivers_is_refused_rather_than_passed_to_git() {
        let names: Vec<u8> = (0..=MAX_OVERRIDES)
            .flat_map(|n| format!("filter.f{n}.clean\0").into_bytes())
            .collect();
        let error = neutralise(&names).unwrap_err();
        assert!(error.to_string().contains("more than 2000"), "{error}");
    }

    #[cfg(unix)]
    #[test]
    fn the_answer_folder_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let scratch = Scratch::new().unwrap();
        let mode = std::fs::metadata(&scratch.0).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}
