//! The environment a command sees: a short, documented base passed through from `once`'s own
//! environment, then the variables the capability declares.
//!
//! Everything else is dropped, so a build cannot depend on a variable nobody declared. This
//! module must never add a variable that changes what a build produces on purpose (`RUSTFLAGS`,
//! `CC`, `CFLAGS`, `NODE_ENV`, …): those belong in the spec, where the manifest shows them and the
//! cache key sees them.

use std::collections::BTreeMap;

/// The names passed through from `once`'s environment when they are set.
///
/// The rule: what a shell and a toolchain need to find themselves, their caches, their
/// certificates and their network, and what a person expects to carry over (locale, time zone).
/// Toolchain *selection* (`RUSTUP_TOOLCHAIN`, `GOFLAGS`, …) is deliberately absent: declare it.
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
];

/// The base variables that are set in this process, as a command will receive them.
///
/// A cache key should include this map: it is exactly what is passed. A value that is not UTF-8
/// is left out here and in the child alike, so the two never disagree.
pub fn base_env() -> BTreeMap<String, String> {
    BASE_ENV
        .iter()
        .filter_map(|name| {
            let value = std::env::var_os(name)?.into_string().ok()?;
            Some(((*name).to_owned(), value))
        })
        .collect()
}

/// The whole environment of a command: the base, then the declared variables over it.
pub(crate) fn command_env(declared: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut env = base_env();
    env.extend(
        declared
            .iter()
            .map(|(name, value)| (name.clone(), value.clone())),
    );
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_variables_override_the_base_and_nothing_else_leaks() {
        let declared = BTreeMap::from([
            ("PATH".to_owned(), "/declared".to_owned()),
            ("X".to_owned(), "1".to_owned()),
        ]);
        let env = command_env(&declared);
        assert_eq!(env.get("PATH").map(String::as_str), Some("/declared"));
        assert_eq!(env.get("X").map(String::as_str), Some("1"));
        assert!(
            env.keys()
                .all(|name| BASE_ENV.contains(&name.as_str()) || declared.contains_key(name))
        );
    }

    #[test]
    fn the_base_list_has_no_duplicates() {
        let mut names = BASE_ENV.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), BASE_ENV.len());
    }
}
