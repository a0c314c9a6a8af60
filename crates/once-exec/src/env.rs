//! The environment a command sees, in one of two modes.
//!
//! [`EnvMode::Loose`] passes `once`'s own environment through whole, the declared variables on
//! top: a command sees what it would see in the caller's shell, including the switches that keep
//! tools from changing the machine (`RUSTUP_AUTO_INSTALL=0`). [`EnvMode::Strict`] starts from
//! nothing: the documented [`BASE_ENV`], the variables its globs name, then the declared ones, so
//! a build cannot depend on a variable nobody named. This module must never add, change or remove
//! a variable of its own accord: what a command gets is what the caller has, filtered in strict
//! mode, plus what the manifest declares.
//!
//! On Windows, variable names ignore case (`Path` is `PATH`), so strict mode and the declared
//! variables compare them that way there, and the base adds the few names a Windows program
//! cannot start without (`SYSTEMROOT`, `TEMP`, ...).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};

/// The names passed through from `once`'s environment when they are set.
///
/// The rule: what a shell and a toolchain need to find themselves, their caches, their
/// certificates and their network, and what a person expects to carry over (locale, time zone).
/// Toolchain *selection* (`RUSTUP_TOOLCHAIN`, `GOFLAGS`, …) is deliberately absent: name it in
/// `pass-env` or declare it. Switches that only keep a tool from changing the machine are in.
pub const BASE_ENV: &[&str] = &[
    // The shell and the user.
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TMPDIR",
    "TERM",
    // Locale and time.
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    // Where tools keep their state and caches.
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_RUNTIME_DIR",
    // Rust.
    "CARGO_HOME",
    "RUSTUP_HOME",
    // Without it, rustup installs whatever toolchain a `rust-toolchain.toml` names.
    "RUSTUP_AUTO_INSTALL",
    // Go.
    "GOPATH",
    "GOCACHE",
    "GOMODCACHE",
    "GOROOT",
    // JavaScript.
    "NPM_CONFIG_CACHE",
    "NPM_CONFIG_PREFIX",
    "PNPM_HOME",
    "YARN_CACHE_FOLDER",
    "BUN_INSTALL",
    // Python.
    "PIP_CACHE_DIR",
    "UV_CACHE_DIR",
    "PYENV_ROOT",
    // JVM.
    "JAVA_HOME",
    "GRADLE_USER_HOME",
    // Network: without these, fetching dependencies fails behind a proxy or a private CA.
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    // How git and ssh reach the user's keys.
    "SSH_AUTH_SOCK",
];

/// On Windows only, passed through with [`BASE_ENV`]: without these a Windows program cannot
/// find the system (`SYSTEMROOT`: Python, for one, cannot even seed its hashes), its temporary
/// folder or the user's folders.
#[cfg(windows)]
const WINDOWS_BASE_ENV: &[&str] = &[
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "TEMP",
    "TMP",
    "USERNAME",
    "USERPROFILE",
    "APPDATA",
    "LOCALAPPDATA",
    "PROGRAMDATA",
    "PROGRAMFILES",
];

/// The names of this platform's base environment.
fn base_names() -> impl Iterator<Item = &'static str> {
    let names = BASE_ENV.iter();
    #[cfg(windows)]
    let names = names.chain(WINDOWS_BASE_ENV);
    names.copied()
}

/// How a command's environment is built from `once`'s own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum EnvMode {
    /// All of `once`'s environment, then the declared variables.
    #[default]
    Loose,
    /// [`BASE_ENV`] and the variables matching `pass` (see [`env_glob_matches`]), then the
    /// declared variables.
    Strict { pass: Vec<String> },
}

impl EnvMode {
    /// Whether a variable of `once`'s environment named `name` reaches the command.
    pub fn passes(&self, name: &OsStr) -> bool {
        match self {
            EnvMode::Loose => true,
            #[cfg(unix)]
            EnvMode::Strict { pass } => name.to_str().is_some_and(|name| {
                BASE_ENV.contains(&name) || pass.iter().any(|glob| env_glob_matches(glob, name))
            }),
            // Windows names are the same whatever their case: `Path` is `PATH`.
            #[cfg(windows)]
            EnvMode::Strict { pass } => name.to_str().is_some_and(|name| {
                let name = name.to_ascii_uppercase();
                base_names().any(|base| base == name)
                    || pass
                        .iter()
                        .any(|glob| env_glob_matches(&glob.to_ascii_uppercase(), &name))
            }),
        }
    }
}

/// Whether the variable `name` matches `glob`, where `*` stands for any run of characters and
/// `?` for exactly one; everything else matches itself, case included.
pub fn env_glob_matches(glob: &str, name: &str) -> bool {
    let (glob, name) = (glob.as_bytes(), name.as_bytes());
    // The classic two-pointer match: on a mismatch, let the last `*` swallow one more byte.
    let (mut g, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match glob.get(g) {
            Some(b'*') => {
                star = Some((g, n));
                g += 1;
            }
            Some(&c) if c == b'?' || c == name[n] => {
                g += 1;
                n += 1;
            }
            _ => match star {
                Some((star_g, star_n)) => {
                    g = star_g + 1;
                    n = star_n + 1;
                    star = Some((star_g, star_n + 1));
                }
                None => return false,
            },
        }
    }
    glob[g..].iter().all(|&c| c == b'*')
}

/// The base variables that are set in this process, as a command will receive them (on Windows
/// with its own few besides [`BASE_ENV`], under their upper-case names).
///
/// A cache key should include this map: it is exactly what is passed. A value that is not UTF-8
/// is left out here and in the child alike, so the two never disagree.
pub fn base_env() -> BTreeMap<String, String> {
    base_names()
        .filter_map(|name| {
            let value = std::env::var_os(name)?.into_string().ok()?;
            Some((name.to_owned(), value))
        })
        .collect()
}

/// The whole environment of a command as it will receive it: what `mode` passes of `once`'s own
/// environment, then the declared variables over it. Values that are not UTF-8 pass unchanged.
pub fn command_env(
    mode: &EnvMode,
    declared: &BTreeMap<String, String>,
) -> BTreeMap<OsString, OsString> {
    let mut env: BTreeMap<OsString, OsString> = std::env::vars_os()
        .filter(|(name, _)| mode.passes(name))
        .collect();
    // Windows names ignore case: an inherited `Path` must not outlive a declared `PATH`.
    #[cfg(windows)]
    env.retain(|name, _| {
        !declared.keys().any(|declared| {
            name.to_str()
                .is_some_and(|name| name.eq_ignore_ascii_case(declared))
        })
    });
    env.extend(
        declared
            .iter()
            .map(|(name, value)| (OsString::from(name), OsString::from(value))),
    );
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_variables_override_and_strict_mode_lets_nothing_else_leak() {
        let declared = BTreeMap::from([
            ("PATH".to_owned(), "/declared".to_owned()),
            ("X".to_owned(), "1".to_owned()),
        ]);
        let strict = EnvMode::Strict {
            pass: vec!["CARGO_PKG_*".into()],
        };
        for mode in [EnvMode::Loose, strict.clone()] {
            let env = command_env(&mode, &declared);
            assert_eq!(
                env.get(OsStr::new("PATH")).map(|v| v.as_os_str()),
                Some(OsStr::new("/declared"))
            );
            assert_eq!(
                env.get(OsStr::new("X")).map(|v| v.as_os_str()),
                Some(OsStr::new("1"))
            );
        }
        // Cargo sets these for the tests it runs: loose passes them, strict only through a glob.
        assert!(
            command_env(&EnvMode::Loose, &declared).contains_key(OsStr::new("CARGO_MANIFEST_DIR"))
        );
        let env = command_env(&strict, &declared);
        assert!(env.contains_key(OsStr::new("CARGO_PKG_NAME")));
        assert!(env.keys().all(|name| {
            let name = name.to_str().unwrap_or_default();
            BASE_ENV.contains(&name)
                || name.starts_with("CARGO_PKG_")
                || declared.contains_key(name)
        }));
    }

    #[test]
    fn loose_mode_is_exactly_our_environment() {
        let ours: BTreeMap<OsString, OsString> = std::env::vars_os().collect();
        assert_eq!(command_env(&EnvMode::Loose, &BTreeMap::new()), ours);
    }

    #[test]
    fn globs_match_whole_names() {
        for (glob, name, matches) in [
            ("CI", "CI", true),
            ("CI", "CIX", false),
            ("NODE_*", "NODE_ENV", true),
            ("NODE_*", "NODE_", true),
            ("NODE_*", "XNODE_ENV", false),
            ("*_TOKEN", "GH_TOKEN", true),
            ("*TOKEN*", "TOKEN", true),
            ("A?C", "ABC", true),
            ("A?C", "AC", false),
            ("a*b*c", "aXbYbZc", true),
            ("a*b*c", "aXbYbZ", false),
            ("*", "", true),
            ("", "X", false),
        ] {
            assert_eq!(env_glob_matches(glob, name), matches, "{glob} {name}");
        }
    }

    #[test]
    fn the_base_list_has_no_duplicates() {
        let mut names = BASE_ENV.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), BASE_ENV.len());
    }
}
