//! Where the remote cache is and how to use it, from three places, the first that says wins:
//! the command line, the environment (`ONCE_REMOTE_*`), the root manifest's `[cache]` table.
//!
//! Credentials are headers, and headers come only from the environment (`ONCE_REMOTE_HEADERS`)
//! or a file the person names (`--remote-headers-file`, `ONCE_REMOTE_HEADERS_FILE`), never from
//! the manifest, which is committed. They go only to a server the person named too (the flag or
//! `ONCE_REMOTE_CACHE`): a server that only the workspace's `once.toml` names, which anyone with
//! a commit can change, gets no headers, and the run says so once. This module must never put a
//! header's value into an error or a log line: a bad line is named by its number.

use std::path::{Path, PathBuf};
use std::time::Duration;

use std::collections::BTreeMap;

use once_graph::{CacheSettings, ExecutionSettings, MAX_REMOTE_JOBS};

use super::RemoteConfig;
use crate::error::Error;

/// How long one call to the remote cache may take, connecting included, unless `[cache]
/// timeout` says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The variables a person may set, by name.
pub const URL_VAR: &str = "ONCE_REMOTE_CACHE";
pub const INSTANCE_VAR: &str = "ONCE_REMOTE_INSTANCE";
pub const UPLOAD_VAR: &str = "ONCE_REMOTE_UPLOAD";
pub const HEADERS_VAR: &str = "ONCE_REMOTE_HEADERS";
pub const HEADERS_FILE_VAR: &str = "ONCE_REMOTE_HEADERS_FILE";
pub const MAX_BLOB_VAR: &str = "ONCE_REMOTE_MAX_BLOB";
pub const MAX_RESULT_VAR: &str = "ONCE_REMOTE_MAX_RESULT";
pub const EXEC_VAR: &str = "ONCE_REMOTE_EXEC";
pub const JOBS_VAR: &str = "ONCE_REMOTE_JOBS";

/// How many actions may run on the engine at once unless a setting says otherwise: far more
/// than local cores, since a remote action costs this machine a waiting thread only.
pub const DEFAULT_REMOTE_JOBS: usize = 64;

/// The largest blob fetched unless a setting says otherwise.
pub const DEFAULT_MAX_BLOB: u64 = 1 << 30;
/// The largest result (its outputs together) fetched unless a setting says otherwise.
pub const DEFAULT_MAX_RESULT: u64 = 4 << 30;

/// What the command line says about the remote cache.
#[derive(Debug, Clone, Default)]
pub struct RemoteFlags {
    /// `--remote-cache URL`.
    pub url: Option<String>,
    /// `--no-remote-cache`: none for this run, whatever else says.
    pub off: bool,
    /// `--remote-instance NAME`.
    pub instance: Option<String>,
    /// `--remote-upload` / `--no-remote-upload`.
    pub upload: Option<bool>,
    /// `--remote-headers-file PATH`.
    pub headers_file: Option<PathBuf>,
    /// `--remote-max-blob SIZE`, as written.
    pub max_blob: Option<String>,
    /// `--remote-max-result SIZE`, as written.
    pub max_result: Option<String>,
    /// `--remote-exec URL`.
    pub exec: Option<String>,
    /// `--no-remote-exec`: every action runs here, whatever else says.
    pub no_exec: bool,
    /// `--remote-jobs N`.
    pub jobs: Option<usize>,
}

/// Where the remote execution engine is and how to use it (see [`ExecutionConfig::resolve`]).
#[derive(Clone)]
pub struct ExecutionConfig {
    /// `grpc://host:port` or `grpcs://host[:port]`.
    pub url: String,
    pub instance: String,
    /// Sent with every call (credentials): never shown.
    pub headers: Vec<(String, String)>,
    /// Bounds every call but `Execute`, which the action's deadline bounds.
    pub timeout: Duration,
    /// Remote actions in flight at once.
    pub jobs: usize,
    /// The largest blob of a worker's result downloaded (as for the remote cache).
    pub max_blob: u64,
    /// The largest result downloaded, its outputs together.
    pub max_result: u64,
    /// Properties every action asks of its worker (a capability's `platform` goes over them).
    pub platform: BTreeMap<String, String>,
    /// Said once when the run starts: why headers were not sent.
    pub notice: Option<String>,
}

impl std::fmt::Debug for ExecutionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("ExecutionConfig")
            .field("url", &self.url)
            .field("instance", &self.instance)
            .field("headers", &names)
            .field("jobs", &self.jobs)
            .field("platform", &self.platform)
            .finish_non_exhaustive()
    }
}

impl ExecutionConfig {
    /// The engine to send actions to, if any: `flags` over the variables `env` reads over
    /// `[execution]`; the instance, headers and timeout as for the remote cache (`[cache]`),
    /// with headers sent only to an engine the person named (the flag or `ONCE_REMOTE_EXEC`).
    pub fn resolve(
        cache: &CacheSettings,
        manifest: &ExecutionSettings,
        flags: &RemoteFlags,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<ExecutionConfig>, Error> {
        if flags.no_exec {
            return Ok(None);
        }
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let named = flags.exec.clone().or_else(|| var(EXEC_VAR));
        let person_named = named.is_some();
        let Some(url) = named.or_else(|| manifest.remote.clone()) else {
            return Ok(None);
        };
        let url = url.trim().to_owned();
        check_url(&url)?;
        let instance = flags
            .instance
            .clone()
            .or_else(|| var(INSTANCE_VAR))
            .or_else(|| manifest.instance.clone())
            .or_else(|| cache.instance.clone())
            .unwrap_or_default();
        let jobs = match flags.jobs {
            Some(jobs) => jobs,
            None => match var(JOBS_VAR) {
                Some(text) => text
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|n| (1..=MAX_REMOTE_JOBS).contains(n))
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| {
                        bad(format!(
                            "`{JOBS_VAR}` must be a whole number from 1 to {MAX_REMOTE_JOBS}, not `{}`",
                            text.trim()
                        ))
                    })?,
                None => manifest.jobs.unwrap_or(DEFAULT_REMOTE_JOBS),
            },
        };
        let mut headers = headers(flags, &var)?;
        let mut notice = None;
        if !person_named && !headers.is_empty() {
            let names: Vec<String> = headers.iter().map(|(n, _)| format!("`{n}`")).collect();
            notice = Some(format!(
                "the remote execution engine `{url}` is named only by the workspace's `once.toml`, so the header(s) {} were not sent to it: to send them, name it yourself with `--remote-exec {url}` or `{EXEC_VAR}={url}`",
                names.join(", ")
            ));
            headers.clear();
        }
        let mut platform = manifest.platform.clone();
        platform
            .entry("OSFamily".to_owned())
            .or_insert_with(|| std::env::consts::OS.to_owned());
        let (max_blob, max_result) = size_limits(cache, flags, &var)?;
        Ok(Some(ExecutionConfig {
            url,
            instance,
            headers,
            timeout: cache.timeout.unwrap_or(DEFAULT_TIMEOUT),
            jobs,
            max_blob,
            max_result,
            platform,
            notice,
        }))
    }
}

impl RemoteConfig {
    /// The remote cache to use, if any: `flags` over the variables `env` reads over `manifest`.
    /// An empty variable counts as unset.
    ///
    /// Without a remote cache of its own, a run with a remote execution engine (`execution`,
    /// the same flags and variables) uses the engine's cache, as named as the engine is.
    pub fn resolve(
        manifest: &CacheSettings,
        execution: &ExecutionSettings,
        flags: &RemoteFlags,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<RemoteConfig>, Error> {
        if flags.off {
            return Ok(None);
        }
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let engine_named = (!flags.no_exec)
            .then(|| flags.exec.clone().or_else(|| var(EXEC_VAR)))
            .flatten();
        let engine_in_manifest = (!flags.no_exec).then(|| execution.remote.clone()).flatten();
        // Whether the person named the server (flag or variable), not only the workspace.
        let named = flags.url.clone().or_else(|| var(URL_VAR));
        let (named, fallback) = match named {
            Some(url) => (Some(url), None),
            None => match manifest.remote.clone() {
                Some(url) => (None, Some(url)),
                None => (engine_named, engine_in_manifest),
            },
        };
        let person_named = named.is_some();
        let Some(url) = named.or(fallback) else {
            return Ok(None);
        };
        let url = url.trim().to_owned();
        check_url(&url)?;
        let instance = flags
            .instance
            .clone()
            .or_else(|| var(INSTANCE_VAR))
            .or_else(|| manifest.instance.clone())
            .unwrap_or_default();
        let upload = match flags.upload {
            Some(upload) => upload,
            None => match var(UPLOAD_VAR) {
                Some(text) => parse_bool(&text).ok_or_else(|| {
                    bad(format!(
                        "`{UPLOAD_VAR}` must be `true` or `false` (or 1/0, yes/no, on/off), not `{}`",
                        text.trim()
                    ))
                })?,
                None => manifest.upload.unwrap_or(true),
            },
        };
        let mut headers = headers(flags, &var)?;
        let mut notice = None;
        if !person_named && !headers.is_empty() {
            let names: Vec<String> = headers.iter().map(|(n, _)| format!("`{n}`")).collect();
            notice = Some(format!(
                "the remote cache `{url}` is named only by the workspace's `once.toml`, so the header(s) {} were not sent to it: to send them, name it yourself with `--remote-cache {url}` or `{URL_VAR}={url}`",
                names.join(", ")
            ));
            headers.clear();
        }
        let (max_blob, max_result) = size_limits(manifest, flags, &var)?;
        Ok(Some(RemoteConfig {
            url,
            instance,
            upload,
            headers,
            timeout: manifest.timeout.unwrap_or(DEFAULT_TIMEOUT),
            max_blob,
            max_result,
            notice,
        }))
    }
}

/// The largest blob and result fetched: each flag over its variable over `[cache]`, for the
/// remote cache and the engine alike.
fn size_limits(
    cache: &CacheSettings,
    flags: &RemoteFlags,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<(u64, u64), Error> {
    let size = |flag: &Option<String>, name: &str, setting: Option<u64>, default: u64| match flag
        .clone()
        .or_else(|| var(name))
    {
        Some(text) => once_graph::size::parse_size(&text)
            .map_err(|e| bad(format!("invalid `{name}` (or its flag): {e}"))),
        None => Ok(setting.unwrap_or(default)),
    };
    Ok((
        size(
            &flags.max_blob,
            MAX_BLOB_VAR,
            cache.max_blob,
            DEFAULT_MAX_BLOB,
        )?,
        size(
            &flags.max_result,
            MAX_RESULT_VAR,
            cache.max_result,
            DEFAULT_MAX_RESULT,
        )?,
    ))
}

/// The headers the person gives: `ONCE_REMOTE_HEADERS`, then the headers file.
fn headers(
    flags: &RemoteFlags,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, Error> {
    let mut headers = Vec::new();
    if let Some(text) = var(HEADERS_VAR) {
        headers.extend(parse_headers(&text, &format!("`{HEADERS_VAR}`"))?);
    }
    let file = flags
        .headers_file
        .clone()
        .or_else(|| var(HEADERS_FILE_VAR).map(PathBuf::from));
    if let Some(file) = file {
        headers.extend(read_headers(&file)?);
    }
    Ok(headers)
}

/// `grpc://host:port` (a plaintext port has no usual number) or `grpcs://host[:port]`.
fn check_url(url: &str) -> Result<(), Error> {
    let expected = || {
        bad(format!(
            "`{url}` is not a remote cache url: expected `grpc://host:port` or `grpcs://host[:port]`"
        ))
    };
    let (authority, port_required) = if let Some(rest) = url.strip_prefix("grpc://") {
        (rest, true)
    } else if let Some(rest) = url.strip_prefix("grpcs://") {
        (rest, false)
    } else {
        return Err(expected());
    };
    let authority = authority.strip_suffix('/').unwrap_or(authority);
    let host_and_port = match authority.rsplit_once(':') {
        // `[::1]` alone: the colon belongs to the address.
        Some((_, port)) if port.ends_with(']') => None,
        Some((host, port)) => Some((host, port)),
        None => None,
    };
    match host_and_port {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => Ok(()),
        Some(_) => Err(expected()),
        None if port_required => Err(bad(format!(
            "`{url}` names no port: write `grpc://host:port` (plaintext gRPC has no default port)"
        ))),
        None if authority.is_empty() || authority.contains('/') => Err(expected()),
        None => Ok(()),
    }
}

fn bad(message: String) -> Error {
    Error::RemoteConfig { message }
}

fn parse_bool(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

fn read_headers(path: &Path) -> Result<Vec<(String, String)>, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        bad(format!(
            "cannot read the headers file `{}`: {e}",
            path.display()
        ))
    })?;
    parse_headers(&text, &format!("`{}`", path.display()))
}

/// `Name: value` lines; blank lines and `#` comments are skipped. `source` names where the text
/// came from in errors, which name a line by its number and never show its value.
fn parse_headers(text: &str, source: &str) -> Result<Vec<(String, String)>, Error> {
    let mut headers = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(bad(format!(
                "line {} of {source} is not `Name: value`",
                n + 1
            )));
        };
        let name = name.trim();
        let token = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !token {
            return Err(bad(format!(
                "line {} of {source}: the header name before `:` is not a valid name",
                n + 1
            )));
        }
        headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn resolve(
        manifest: &CacheSettings,
        flags: &RemoteFlags,
        vars: &[(&str, &str)],
    ) -> Result<Option<RemoteConfig>, Error> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        RemoteConfig::resolve(manifest, &ExecutionSettings::default(), flags, &|name| {
            vars.get(name).cloned()
        })
    }

    fn manifest() -> CacheSettings {
        CacheSettings {
            remote: Some("grpc://manifest:1".into()),
            instance: Some("main".into()),
            upload: Some(false),
            timeout: Some(Duration::from_secs(3)),
            max_blob: Some(5 << 20),
            max_result: None,
            max_size: None,
            share_worktrees: None,
        }
    }

    #[test]
    fn flags_win_over_variables_which_win_over_the_manifest() {
        let none = resolve(&CacheSettings::default(), &RemoteFlags::default(), &[]).unwrap();
        assert!(none.is_none());
        let from_manifest = resolve(&manifest(), &RemoteFlags::default(), &[])
            .unwrap()
            .unwrap();
        assert_eq!(from_manifest.url, "grpc://manifest:1");
        assert_eq!(from_manifest.instance, "main");
        assert!(!from_manifest.upload);
        assert_eq!(from_manifest.timeout, Duration::from_secs(3));
        let vars = [
            (URL_VAR, "grpc://env:2"),
            (INSTANCE_VAR, "ci"),
            (UPLOAD_VAR, "true"),
        ];
        let from_env = resolve(&manifest(), &RemoteFlags::default(), &vars)
            .unwrap()
            .unwrap();
        assert_eq!(
            (
                from_env.url.as_str(),
                from_env.instance.as_str(),
                from_env.upload
            ),
            ("grpc://env:2", "ci", true)
        );
        let flags = RemoteFlags {
            url: Some("grpcs://flag".into()),
            instance: Some("x".into()),
            upload: Some(false),
            ..RemoteFlags::default()
        };
        let from_flags = resolve(&manifest(), &flags, &vars).unwrap().unwrap();
        assert_eq!(
            (
                from_flags.url.as_str(),
                from_flags.instance.as_str(),
                from_flags.upload
            ),
            ("grpcs://flag", "x", false)
        );
        let off = RemoteFlags {
            off: true,
            ..RemoteFlags::default()
        };
        assert!(resolve(&manifest(), &off, &vars).unwrap().is_none());
        // An empty variable is unset, not an empty url.
        let empty = resolve(&manifest(), &RemoteFlags::default(), &[(URL_VAR, "")])
            .unwrap()
            .unwrap();
        assert_eq!(empty.url, "grpc://manifest:1");
    }

    #[test]
    fn bad_settings_say_what_is_expected() {
        let flags = RemoteFlags {
            url: Some("http://cache:80".into()),
            ..RemoteFlags::default()
        };
        let e = resolve(&CacheSettings::default(), &flags, &[]).unwrap_err();
        assert!(e.to_string().contains("grpc://host:port"), "{e}");
        for url in [
            "grpc://host",
            "grpc://:80",
            "grpc://h:port",
            "grpcs://",
            "grpcs://h/x",
        ] {
            let flags = RemoteFlags {
                url: Some(url.into()),
                ..RemoteFlags::default()
            };
            assert!(
                resolve(&CacheSettings::default(), &flags, &[]).is_err(),
                "{url} was accepted"
            );
        }
        for url in [
            "grpc://127.0.0.1:50051",
            "grpcs://cache.example",
            "grpcs://h:443/",
            "grpc://[::1]:9",
        ] {
            let flags = RemoteFlags {
                url: Some(url.into()),
                ..RemoteFlags::default()
            };
            assert!(
                resolve(&CacheSettings::default(), &flags, &[]).is_ok(),
                "{url} was refused"
            );
        }
        let e = resolve(
            &manifest(),
            &RemoteFlags::default(),
            &[(UPLOAD_VAR, "maybe")],
        )
        .unwrap_err();
        assert!(e.to_string().contains("`true` or `false`"), "{e}");
    }

    #[test]
    fn headers_come_from_the_variable_and_the_file_and_errors_never_show_values() {
        let dir = std::env::temp_dir().join(format!("once-headers-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("headers");
        std::fs::write(&file, "# team token\n\nx-team: blue\n").unwrap();
        let flags = RemoteFlags {
            url: Some("grpc://named:1".into()),
            headers_file: Some(file.clone()),
            ..RemoteFlags::default()
        };
        let config = resolve(
            &manifest(),
            &flags,
            &[(HEADERS_VAR, "Authorization: Bearer s3cret\n")],
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            config.headers,
            vec![
                ("authorization".to_owned(), "Bearer s3cret".to_owned()),
                ("x-team".to_owned(), "blue".to_owned()),
            ]
        );
        assert!(!format!("{config:?}").contains("s3cret"));
        let e = resolve(
            &manifest(),
            &RemoteFlags::default(),
            &[(HEADERS_VAR, "ok: 1\nBearer s3cret")],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("line 2 of `ONCE_REMOTE_HEADERS`"), "{e}");
        assert!(!e.contains("s3cret"), "{e}");
        let e = resolve(
            &manifest(),
            &RemoteFlags {
                headers_file: Some(dir.join("missing")),
                ..RemoteFlags::default()
            },
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("cannot read the headers file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn headers_go_only_to_a_server_the_person_named() {
        let secret = [(HEADERS_VAR, "Authorization: Bearer s3cret")];
        let committed = resolve(&manifest(), &RemoteFlags::default(), &secret)
            .unwrap()
            .unwrap();
        assert!(committed.headers.is_empty(), "{committed:?}");
        let notice = committed.notice.expect("the run says why");
        assert!(notice.contains("`grpc://manifest:1`"), "{notice}");
        assert!(notice.contains("`authorization`"), "{notice}");
        assert!(
            notice.contains("--remote-cache grpc://manifest:1"),
            "{notice}"
        );
        assert!(!notice.contains("s3cret"), "{notice}");
        // No headers to withhold: nothing to say.
        let quiet = resolve(&manifest(), &RemoteFlags::default(), &[])
            .unwrap()
            .unwrap();
        assert!(quiet.notice.is_none());
        // The same server, named by the person: it gets them.
        for (flags, vars) in [
            (
                RemoteFlags {
                    url: Some("grpc://manifest:1".into()),
                    ..RemoteFlags::default()
                },
                secret.to_vec(),
            ),
            (
                RemoteFlags::default(),
                vec![secret[0], (URL_VAR, "grpc://manifest:1")],
            ),
        ] {
            let named = resolve(&manifest(), &flags, &vars).unwrap().unwrap();
            assert_eq!(named.headers.len(), 1);
            assert!(named.notice.is_none());
        }
    }

    #[test]
    fn size_limits_come_from_flags_variables_the_manifest_or_defaults() {
        let plain = resolve(
            &CacheSettings {
                remote: Some("grpc://h:1".into()),
                ..CacheSettings::default()
            },
            &RemoteFlags::default(),
            &[],
        )
        .unwrap()
        .unwrap();
        assert_eq!((plain.max_blob, plain.max_result), (1 << 30, 4 << 30));
        let set = resolve(&manifest(), &RemoteFlags::default(), &[])
            .unwrap()
            .unwrap();
        assert_eq!(set.max_blob, 5 << 20);
        let env = resolve(
            &manifest(),
            &RemoteFlags::default(),
            &[(MAX_RESULT_VAR, "2GiB")],
        )
        .unwrap()
        .unwrap();
        assert_eq!(env.max_result, 2 << 30);
        let flags = RemoteFlags {
            max_blob: Some("64KiB".into()),
            ..RemoteFlags::default()
        };
        let flagged = resolve(&manifest(), &flags, &[(MAX_BLOB_VAR, "1MiB")])
            .unwrap()
            .unwrap();
        assert_eq!(flagged.max_blob, 64 << 10);
        let e = resolve(
            &manifest(),
            &RemoteFlags::default(),
            &[(MAX_BLOB_VAR, "lots")],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("`ONCE_REMOTE_MAX_BLOB`"), "{e}");
    }

    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| vars.get(name).cloned()
    }

    fn engine_in_manifest() -> ExecutionSettings {
        ExecutionSettings {
            remote: Some("grpc://engine:1".into()),
            instance: None,
            jobs: Some(16),
            platform: BTreeMap::from([("container-image".into(), "docker://b:1".into())]),
        }
    }

    #[test]
    fn the_engine_comes_from_the_flag_the_variable_or_the_manifest() {
        let none = CacheSettings::default();
        let exec = |flags: &RemoteFlags, vars: &[(&str, &str)]| {
            ExecutionConfig::resolve(&none, &engine_in_manifest(), flags, &env_of(vars))
        };
        let from_manifest = exec(&RemoteFlags::default(), &[]).unwrap().unwrap();
        assert_eq!(from_manifest.url, "grpc://engine:1");
        assert_eq!(from_manifest.jobs, 16);
        assert_eq!(from_manifest.platform["container-image"], "docker://b:1");
        assert_eq!(from_manifest.platform["OSFamily"], std::env::consts::OS);
        let from_env = exec(
            &RemoteFlags::default(),
            &[(EXEC_VAR, "grpc://env:2"), (JOBS_VAR, "8")],
        )
        .unwrap()
        .unwrap();
        assert_eq!((from_env.url.as_str(), from_env.jobs), ("grpc://env:2", 8));
        let flags = RemoteFlags {
            exec: Some("grpc://flag:3".into()),
            jobs: Some(4),
            ..RemoteFlags::default()
        };
        let from_flag = exec(&flags, &[(EXEC_VAR, "grpc://env:2")])
            .unwrap()
            .unwrap();
        assert_eq!(
            (from_flag.url.as_str(), from_flag.jobs),
            ("grpc://flag:3", 4)
        );
        let off = RemoteFlags {
            no_exec: true,
            ..RemoteFlags::default()
        };
        assert!(exec(&off, &[(EXEC_VAR, "grpc://env:2")]).unwrap().is_none());
        for hostile in ["0", "1000000", "-1", "lots"] {
            let e = exec(&RemoteFlags::default(), &[(JOBS_VAR, hostile)])
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("`ONCE_REMOTE_JOBS`") && e.contains("4096"),
                "{e}"
            );
        }
        let e = exec(&RemoteFlags::default(), &[(EXEC_VAR, "http://x:1")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("grpc://host:port"), "{e}");
    }

    #[test]
    fn headers_go_only_to_an_engine_the_person_named() {
        let none = CacheSettings::default();
        let vars = [(HEADERS_VAR, "Authorization: Bearer s3cret")];
        let only_manifest = ExecutionConfig::resolve(
            &none,
            &engine_in_manifest(),
            &RemoteFlags::default(),
            &env_of(&vars),
        )
        .unwrap()
        .unwrap();
        assert!(only_manifest.headers.is_empty());
        let notice = only_manifest.notice.unwrap();
        assert!(
            notice.contains("`authorization`") && !notice.contains("s3cret"),
            "{notice}"
        );
        let named = ExecutionConfig::resolve(
            &none,
            &engine_in_manifest(),
            &RemoteFlags::default(),
            &env_of(&[vars[0], (EXEC_VAR, "grpc://engine:1")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(named.headers.len(), 1);
        assert!(named.notice.is_none());
        assert!(!format!("{named:?}").contains("s3cret"));
    }

    #[test]
    fn without_a_cache_of_its_own_a_run_uses_the_engines() {
        let none = CacheSettings::default();
        let cache = |cache: &CacheSettings, flags: &RemoteFlags, vars: &[(&str, &str)]| {
            RemoteConfig::resolve(cache, &engine_in_manifest(), flags, &env_of(vars))
                .unwrap()
                .map(|c| (c.url, c.headers.len()))
        };
        assert_eq!(
            cache(&none, &RemoteFlags::default(), &[]),
            Some(("grpc://engine:1".into(), 0))
        );
        // Named by the person for the engine: named for its cache too, headers included.
        let flags = RemoteFlags {
            exec: Some("grpc://flag:3".into()),
            ..RemoteFlags::default()
        };
        assert_eq!(
            cache(&none, &flags, &[(HEADERS_VAR, "A: b")]),
            Some(("grpc://flag:3".into(), 1))
        );
        // A cache of its own wins; `--no-remote-exec` takes the engine's cache away too.
        assert_eq!(
            cache(&manifest(), &flags, &[]),
            Some(("grpc://manifest:1".into(), 0))
        );
        let off = RemoteFlags {
            no_exec: true,
            ..RemoteFlags::default()
        };
        assert_eq!(cache(&none, &off, &[]), None);
    }
}
