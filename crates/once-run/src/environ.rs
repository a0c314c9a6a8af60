//! What of a command's environment goes into its cache key: the variables that change what build
//! tools produce, the variables `pass-env` names, the declared ones, and the program the command
//! starts, found on `PATH` as the shell will find it.
//!
//! A variable whose name looks like a secret is keyed by a hash of its value, never its text.
//! Nothing here writes anything: the key is a hash, and this module must never log, record or
//! return a variable's value. It must never leave out a variable a command sees that a build tool
//! documents as changing its output, even to save time; time is saved by computing each part once
//! per run.

use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use once_exec::{EnvMode, env_glob_matches};

use crate::hashes::FileHashes;
use crate::plan::Step;
use crate::witness::Witness;

/// The variables (globs, as in `pass-env`) that build tools read to decide what they produce,
/// keyed whenever a command sees them. Locations of caches, terminal settings and credentials
/// are not here: they change how a tool works, not what it makes.
pub(crate) const KEYED_ENV: &[&str] = &[
    // Rust: flags, the compiler and its wrapper, the toolchain, cargo's configuration.
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "RUSTC",
    "RUSTC_*",
    "RUSTDOC",
    "RUSTUP_TOOLCHAIN",
    "CARGO_*",
    // C and C++, which build scripts and native modules compile with.
    "CC",
    "CXX",
    "AR",
    "LD",
    "CPPFLAGS",
    "CFLAGS",
    "CXXFLAGS",
    "LDFLAGS",
    "PKG_CONFIG_PATH",
    // JavaScript.
    "NODE_ENV",
    "NODE_OPTIONS",
    "NODE_PATH",
    // Go.
    "GOFLAGS",
    "GOOS",
    "GOARCH",
    "GOARM",
    "GOAMD64",
    "GOEXPERIMENT",
    "GOTOOLCHAIN",
    "GOROOT",
    "CGO_*",
    // Python.
    "PYTHONPATH",
    "VIRTUAL_ENV",
    // JVM.
    "JAVA_HOME",
    // Reproducible builds stamp this time into what they make.
    "SOURCE_DATE_EPOCH",
];

/// Names [`KEYED_ENV`] matches that still change nothing a build makes: cargo's terminal and
/// network settings, where it keeps its caches, and the jobserver descriptors of a parent `make`
/// or `cargo`, which differ on every invocation.
const UNKEYED_ENV: &[&str] = &[
    "CARGO_TERM_*",
    "CARGO_HOME",
    "CARGO_MAKEFLAGS",
    "CARGO_NET_*",
    "CARGO_HTTP_*",
    "CARGO_REGISTRY_*",
    "CARGO_REGISTRIES_*",
];

/// Name parts (upper-cased) that make a variable a secret, keyed by a hash of its value.
const SECRET_PARTS: &[&str] = &[
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "KEY",
    "CREDENTIAL",
    "AUTH",
    "PRIVATE",
    "COOKIE",
];

/// Words that start no program of their own (shell keywords and builtins): a command starting
/// with one is keyed by its whole `PATH` instead.
const SHELL_WORDS: &[&str] = &[
    "!", "{", "}", "(", "[", "[[", ".", ":", "alias", "builtin", "case", "cd", "command", "do",
    "done", "echo", "elif", "else", "esac", "eval", "exec", "exit", "export", "false", "fi", "for",
    "if", "local", "printf", "read", "return", "set", "shift", "source", "test", "then", "time",
    "trap", "true", "type", "ulimit", "umask", "unset", "until", "wait", "while",
];

/// Whether `name` looks like it holds a secret.
pub(crate) fn is_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_PARTS.iter().any(|part| upper.contains(part))
}

/// Whether the key takes `name` of `step` in by a hash of its value only: a secret-looking name
/// or a variable of the env-file.
pub(crate) fn hidden(step: &Step, name: &str) -> bool {
    is_secret(name) || step.env_file_vars.iter().any(|v| v == name)
}

/// The hash a hidden variable's value is keyed by.
pub(crate) fn secret_hash(value: &OsStr) -> blake3::Hash {
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"once secret\0");
    hasher.update(value.as_encoded_bytes());
    hasher.finalize()
}

/// Whether `name` is a build tool's variable that changes results.
fn tool_variable(name: &str) -> bool {
    KEYED_ENV.iter().any(|glob| env_glob_matches(glob, name))
        && !UNKEYED_ENV.iter().any(|glob| env_glob_matches(glob, name))
}

/// The program a command starts, as far as its key is concerned.
#[derive(Debug, Clone)]
pub(crate) enum Program {
    /// Found at `path` (as `PATH` gave it) with this content.
    Found { path: PathBuf, digest: blake3::Hash },
    /// Not a plain word, a shell builtin, or not found: the whole `PATH` stands for it.
    Path,
}

/// Variables by name, with their values.
type Variables = Arc<[(String, OsString)]>;

/// Which of our variables a command inherits: strict or not, and its `pass-env` globs.
type Passing = (bool, Arc<[String]>);

/// Our own environment and what was learned from it, shared by every action of a run.
pub(crate) struct Environ {
    /// Read once: the environment does not change during a run (nothing of ours sets it).
    own: Vec<(OsString, OsString, bool)>,
    /// The keyed variables a command inherits, per mode and `pass-env` list.
    inherited: Mutex<HashMap<Passing, Variables>>,
    /// Programs found before, by `PATH` value and name (only for absolute `PATH` entries).
    programs: Mutex<HashMap<(OsString, String), Program>>,
}

impl Environ {
    pub(crate) fn new() -> Environ {
        Environ {
            own: std::env::vars_os()
                .map(|(name, value)| {
                    let keyed = name.to_str().is_some_and(tool_variable);
                    (name, value, keyed)
                })
                .collect(),
            inherited: Mutex::new(HashMap::new()),
            programs: Mutex::new(HashMap::new()),
        }
    }

    /// Feeds `field` the keyed variables `step` sees (sorted by name, secrets as hashes), then the
    /// identity of the program it starts.
    pub(crate) fn key(
        &self,
        step: &Step,
        hashes: &FileHashes,
        buffer: &mut [u8],
        field: &mut dyn FnMut(&[u8]),
    ) {
        field(b"env");
        for (name, value) in self.keyed(step) {
            field(name.as_bytes());
            if hidden(step, &name) {
                field(secret_hash(&value).as_bytes());
            } else {
                field(value.as_encoded_bytes());
            }
        }
        let (program, path) = self.identity(step, hashes, buffer);
        field(b"program");
        match program {
            Program::Found { path, digest } => {
                field(path.as_os_str().as_encoded_bytes());
                field(digest.as_bytes());
            }
            Program::Path => {
                field(b"PATH");
                field(path.as_encoded_bytes());
            }
        }
    }

    /// The keyed variables `step` sees, by name: those it inherits, under its declared ones.
    pub(crate) fn keyed(&self, step: &Step) -> BTreeMap<String, OsString> {
        let inherited = self.inherited(step);
        let mut keyed: BTreeMap<String, OsString> = inherited
            .iter()
            .filter(|(name, _)| !step.env.contains_key(name))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        for (name, value) in &step.env {
            keyed.insert(name.clone(), OsString::from(value));
        }
        keyed
    }

    /// The program `step` starts as its key knows it, and the `PATH` it is looked up on.
    pub(crate) fn identity(
        &self,
        step: &Step,
        hashes: &FileHashes,
        buffer: &mut [u8],
    ) -> (Program, OsString) {
        let path = match step.env.get("PATH") {
            Some(path) => OsString::from(path),
            None => self.own_value("PATH").unwrap_or_default(),
        };
        (self.program(step, &path, hashes, buffer), path)
    }

    fn own_value(&self, name: &str) -> Option<OsString> {
        self.own
            .iter()
            .find(|(own, ..)| own == name)
            .map(|(_, value, _)| value.clone())
    }

    /// The variables of ours that `step` inherits and that are keyed: build tools' variables
    /// and those its `pass-env` names, as far as its mode passes them.
    fn inherited(&self, step: &Step) -> Variables {
        let id = (step.strict, Arc::clone(&step.pass_env));
        let mut memo = self
            .inherited
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = memo.get(&id) {
            return Arc::clone(found);
        }
        let mode = if step.strict {
            EnvMode::Strict {
                pass: step.pass_env.to_vec(),
            }
        } else {
            EnvMode::Loose
        };
        let found: Variables = self
            .own
            .iter()
            .filter(|(name, ..)| mode.passes(name))
            .filter_map(|(name, value, tool)| {
                let name = name.to_str()?;
                let named = step
                    .pass_env
                    .iter()
                    .any(|glob| env_glob_matches(glob, name));
                (*tool || named).then(|| (name.to_owned(), value.clone()))
            })
            .collect();
        memo.insert(id, Arc::clone(&found));
        found
    }

    fn program(
        &self,
        step: &Step,
        path: &OsStr,
        hashes: &FileHashes,
        buffer: &mut [u8],
    ) -> Program {
        let Some(word) = first_program(&step.command) else {
            return Program::Path;
        };
        let absolute =
            !word.contains('/') && std::env::split_paths(path).all(|folder| folder.is_absolute());
        let id = (path.to_os_string(), word.to_owned());
        if absolute
            && let Some(found) = self
                .programs
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&id)
        {
            return found.clone();
        }
        let found = resolve(word, path, &step.dir, hashes.witness())
            .and_then(|found| identify(found, hashes, buffer))
            .unwrap_or(Program::Path);
        if absolute {
            self.programs
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(id, found.clone());
        }
        found
    }
}

/// The first word of `command` after leading `NAME=value` assignments, when it is a plain word
/// naming a program (not a builtin, not quoted, not expanded, not after an assignment to `PATH`).
fn first_program(command: &str) -> Option<&str> {
    let plain = |word: &str| {
        word.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'+' | b'-' | b'/'))
    };
    for word in command.split_ascii_whitespace() {
        if let Some((name, value)) = word.split_once('=')
            && !name.is_empty()
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && !name.as_bytes()[0].is_ascii_digit()
        {
            if name == "PATH" || !plain(value) {
                return None;
            }
            continue;
        }
        return (plain(word) && !SHELL_WORDS.contains(&word)).then_some(word);
    }
    None
}

/// Where the shell finds `word`: itself when it holds a `/` (relative to `dir`), else the first
/// executable regular file named so in a `PATH` folder (an empty entry is `dir`). On Windows the
/// name is also tried with `.exe`, as the shell tries it there.
fn resolve(word: &str, path: &OsStr, dir: &Path, witness: &Witness) -> Option<PathBuf> {
    let found = |base: PathBuf| {
        NAME_SUFFIXES.iter().find_map(|suffix| {
            let mut candidate = base.clone().into_os_string();
            candidate.push(suffix);
            let candidate = PathBuf::from(candidate);
            if runnable(&candidate) {
                // Recorded with its content by `identify`.
                return Some(candidate);
            }
            // Followed, as the shell follows it: what is there (nothing, or no program).
            witness.look(&candidate, true);
            None
        })
    };
    if word.contains('/') {
        return found(dir.join(word));
    }
    std::env::split_paths(path).find_map(|folder| {
        found(if folder.as_os_str().is_empty() {
            dir.join(word)
        } else {
            dir.join(folder).join(word)
        })
    })
}

/// What the shell appends to a program's name when it looks for it.
const NAME_SUFFIXES: &[&str] = if cfg!(windows) { &["", ".exe"] } else { &[""] };

/// Whether the shell would start the file at `candidate`: a regular file with an executable bit.
#[cfg(unix)]
fn runnable(candidate: &Path) -> bool {
    fs::metadata(candidate).is_ok_and(|m| m.is_file() && crate::file_facts::has_exec_bit(&m))
}

/// Whether the shell would start the file at `candidate`: Windows has no executable bit, so any
/// regular file counts, which may take a data file for the program where the shell would look on.
#[cfg(windows)]
fn runnable(candidate: &Path) -> bool {
    fs::metadata(candidate).is_ok_and(|m| m.is_file())
}

/// The content identity of the program at `path`: the digest of the file it resolves to, read
/// once and then proven unchanged by a `stat` through the file-hash cache.
fn identify(path: PathBuf, hashes: &FileHashes, buffer: &mut [u8]) -> Option<Program> {
    // Taken first, following links as the shell does: what a later proof compares.
    let mut found = || -> io::Result<(fs::Metadata, blake3::Hash)> {
        let followed = fs::metadata(&path)?;
        let real = fs::canonicalize(&path)?;
        let metadata = fs::metadata(&real)?;
        Ok((followed, hashes.digest(&real, &metadata, buffer)?))
    };
    match found() {
        Ok((followed, digest)) => {
            hashes.witness().file_followed(&path, &followed, &digest);
            Some(Program::Found { path, digest })
        }
        Err(_) => {
            // Gone or unreadable since it was found: nothing recorded stands for it.
            hashes.witness().spoil("a program could not be identified");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_program_skips_assignments_and_refuses_what_is_not_plain() {
        for (command, program) in [
            ("cargo build -p x", Some("cargo")),
            ("  LANG=C RUST_LOG=debug cargo test", Some("cargo")),
            ("./gradlew build", Some("./gradlew")),
            ("PATH=/opt/bin tool", None),
            ("X=\"a b\" tool", None),
            ("cd web && npm test", None),
            ("true", None),
            ("'quoted' x", None),
            ("$TOOL x", None),
            ("", None),
            ("A=1", None),
        ] {
            assert_eq!(first_program(command), program, "{command}");
        }
    }

    #[test]
    fn tool_variables_and_secrets() {
        for (name, keyed) in [
            ("RUSTFLAGS", true),
            ("CARGO_TARGET_DIR", true),
            ("CARGO_BUILD_TARGET", true),
            ("CARGO_TERM_COLOR", false),
            ("CARGO_HOME", false),
            ("CARGO_MAKEFLAGS", false),
            ("CC", true),
            ("CCACHE_DIR", false),
            ("NODE_ENV", true),
            ("CGO_ENABLED", true),
            ("HOME", false),
            ("SSH_AUTH_SOCK", false),
        ] {
            assert_eq!(tool_variable(name), keyed, "{name}");
        }
        assert!(is_secret("GITHUB_TOKEN") && is_secret("aws_secret_access_key"));
        assert!(is_secret("NPM_AUTH") && is_secret("DB_PASSWORD"));
        assert!(!is_secret("RUSTFLAGS") && !is_secret("NODE_ENV"));
    }
}
