//! The root manifest's `[execution]` table, the lowest layer of remote execution's
//! configuration (the command line and `ONCE_REMOTE_EXEC*` variables go over it, as for
//! `[cache]`), and the `platform` tables that it and a capability may hold.
//!
//! Like `[cache]` it must never hold credentials: keys that would are refused by name, and
//! their value is never shown.

use std::collections::BTreeMap;
use std::fmt;

use toml::de::DeValue;

use super::value::{Cx, key_name};
use super::{CREDENTIAL_KEYS, credentials_key, remote_url};

/// The most remote actions in flight at once, whatever asks (the manifest, `--remote-jobs`,
/// `ONCE_REMOTE_JOBS`): each is a thread of the running `once`.
pub const MAX_JOBS: u64 = 4096;

/// `[execution]` as written; each key `None` (or empty) when the manifest leaves it out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecutionSettings {
    /// `remote`: the engine's URL, starting with `grpc://` or `grpcs://`.
    pub remote: Option<String>,
    /// `instance`: the REAPI instance name (may be empty).
    pub instance: Option<String>,
    /// `jobs`: how many remote actions may be in flight at once; never zero.
    pub jobs: Option<usize>,
    /// `platform`: properties every remotely executed action asks of its worker.
    pub platform: BTreeMap<String, String>,
}

pub(super) fn parse(cx: &mut Cx<'_>, v: &toml::Spanned<DeValue<'_>>) -> ExecutionSettings {
    let mut settings = ExecutionSettings::default();
    let Some(table) = cx.table(v, format_args!("`execution`")) else {
        return settings;
    };
    for (k, v) in table.iter() {
        match key_name(k) {
            "remote" => settings.remote = remote_url(cx, v, "execution"),
            "instance" => {
                settings.instance = cx
                    .string(v, format_args!("`execution.instance`"))
                    .map(str::to_string);
            }
            "jobs" => match super::value::to_json(v.get_ref()).as_u64() {
                Some(n @ 1..=MAX_JOBS) => settings.jobs = usize::try_from(n).ok(),
                _ => cx.diags.push(
                    cx.src
                        .error(v.span().start, "bad-jobs", "invalid `execution.jobs`")
                        .expected(format!("a whole number from 1 to {MAX_JOBS}"))
                        .found(super::value::found(v.get_ref())),
                ),
            },
            "platform" => {
                if let Some(properties) = platform(cx, v, format_args!("`execution.platform`")) {
                    settings.platform = properties;
                }
            }
            name if CREDENTIAL_KEYS.contains(&name) => {
                credentials_key(cx, k, "execution", name);
            }
            _ => cx.unknown_key(
                k,
                &["remote", "instance", "jobs", "platform"],
                "in `[execution]`",
            ),
        }
    }
    settings
}

/// A table of platform properties: each a non-empty name with a string value.
pub(super) fn platform(
    cx: &mut Cx<'_>,
    v: &toml::Spanned<DeValue<'_>>,
    what: fmt::Arguments<'_>,
) -> Option<BTreeMap<String, String>> {
    let table = cx.table(v, what)?;
    let mut properties = BTreeMap::new();
    for (k, v) in table.iter() {
        let name = key_name(k);
        if let Some(value) = cx.string(v, format_args!("platform property `{name}` of {what}")) {
            properties.insert(name.to_string(), value.to_string());
        }
    }
    Some(properties)
}
