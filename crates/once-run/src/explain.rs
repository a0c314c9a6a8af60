//! What an action's key is made of, and which of those parts changed since the last recorded run
//! of that action: the answer to "why did this run again?" (`once query key`, `once run
//! --explain`).
//!
//! # The key's manifest
//!
//! Each time a run records a result under its key, it also appends the key's parts ([`KeyParts`])
//! as one line of the journal `.once/cache/key-parts` (see `journal.rs`). Invariants:
//! - the last readable line of an action is its manifest: it always describes the last key
//!   recorded for that action, and the recorded results stay exactly as they were (the
//!   manifest is beside them, never part of an entry nor of a key);
//! - bounded: at most [`FILES_CAP`] files are listed by path and digest; the rest are counted
//!   and covered by one digest, so a change among them is still seen (as "a file past the
//!   first N"), and a manifest stays under about 200 KB whatever the target's size;
//! - no value of a variable is ever written: a variable is listed by name, whether its key
//!   takes a hash of its value (a secret) or the value itself, and a hash of the value, which is
//!   enough to say it changed;
//! - a manifest that cannot be written costs only the explanation, never the run: it is logged
//!   and the run goes on; one that cannot be read or parsed reads as none.
//!
//! Explaining computes keys as a run does ([`crate::keyer`]) and must never write anything: no
//! run folder, no entry, no manifest, no saved file hashes.
//!
//! # Why it ran again
//!
//! A run takes an action's parts before its command runs, as its key saw them (a first `cargo
//! test` writes `Cargo.lock`: parts taken afterwards would name a lock file the key never read),
//! and records those. When a cached action misses, [`Recall::ran_again`] compares them with the
//! last recorded ones and says, in one bounded sentence, what changed ([`because`]): the report
//! carries it as `ran_again`, and `once query key` puts the same words in its verdict.

use std::collections::{BTreeMap, HashSet};
use std::sync::OnceLock;

use serde::Serialize;

use crate::cache::Cache;
use crate::environ::{Environ, Program, hidden, secret_hash};
use crate::error::Error;
use crate::key::{KEY_VERSION, Key};
use crate::keyer::Keyer;
use crate::plan::{Plan, Step};

pub use crate::parts::{DepPart, EnvPart, FILES_CAP, FilePart, KeyParts, Rest, UpstreamPart};

/// One part that differs between the last recorded key and the current one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// `version`, `command`, `folder`, `params`, `env`, `program`, `outputs`, `file`,
    /// `files_rest`, `upstream` or `dep`.
    pub part: &'static str,
    /// The variable, file, dependency or targets it is about, when the part has several.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `added`, `removed` or `changed`.
    pub how: &'static str,
}

/// The answer of `once query key ACTION` for one action.
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    pub action: String,
    /// The key a run would look up now.
    pub key: String,
    /// Whether a result is recorded under the key (a run would replay it).
    pub entry: bool,
    /// The key of the last recorded run of this action, if one was recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_key: Option<String>,
    /// What changed since then; empty when the keys are equal or nothing was recorded.
    pub changes: Vec<Change>,
    /// One line: what this means.
    pub verdict: String,
    pub parts: KeyParts,
}

/// The parts of `step`'s key `key`, given its dependencies' keys (in `step.deps` order).
pub(crate) fn parts(
    plan: &Plan,
    keyer: &Keyer<'_>,
    step: &Step,
    dep_keys: &[Key],
    key: Key,
    buffer: &mut [u8],
) -> Result<KeyParts, Error> {
    let (environ, hashes) = keyer.environ();
    let env = env_parts(environ, step);
    let (program, path) = environ.identity(step, hashes, buffer);
    let (program, program_digest) = match program {
        Program::Found { path, digest } => {
            (path.display().to_string(), digest.to_hex().to_string())
        }
        Program::Path => ("PATH".to_owned(), secret_hash(&path).to_hex().to_string()),
    };
    let all = keyer.own_files(step, buffer)?;
    let files_rest = (all.len() > FILES_CAP).then(|| {
        let mut hasher = blake3::Hasher::new();
        for (path, digest) in &all[FILES_CAP..] {
            hasher.update(&(path.len() as u64).to_le_bytes());
            hasher.update(path.as_bytes());
            hasher.update(digest.as_bytes());
        }
        Rest {
            count: all.len() - FILES_CAP,
            digest: hasher.finalize().to_hex().to_string(),
        }
    });
    let files = all
        .iter()
        .take(FILES_CAP)
        .map(|(path, digest)| FilePart {
            path: path.clone(),
            digest: digest.to_hex().to_string(),
        })
        .collect();
    let upstream = step
        .upstream
        .iter()
        .map(|&set| {
            let digest = keyer.set_digest(&step.action, set, buffer)?;
            let targets = plan
                .sources
                .get(set)
                .map(|s| s.members.iter().map(|m| m.path.clone()).collect())
                .unwrap_or_default();
            Ok(UpstreamPart {
                targets,
                digest: digest.to_hex().to_string(),
            })
        })
        .collect::<Result<_, Error>>()?;
    let deps = step
        .deps
        .iter()
        .zip(dep_keys)
        .map(|(&d, key)| DepPart {
            action: plan.steps[d].action.clone(),
            key: key.to_hex(),
        })
        .collect();
    Ok(KeyParts {
        action: step.action.clone(),
        key: key.to_hex(),
        version: String::from_utf8_lossy(KEY_VERSION)
            .trim_end_matches('\0')
            .to_owned(),
        command: step.command.clone(),
        folder: step.path.clone(),
        params: serde_json::Value::from(serde_json::Map::from_iter(step.params.clone()))
            .to_string(),
        env,
        program,
        program_digest,
        outputs: step.outputs.to_vec(),
        files,
        files_rest,
        upstream,
        deps,
    })
}

fn env_parts(environ: &Environ, step: &Step) -> Vec<EnvPart> {
    environ
        .keyed(step)
        .into_iter()
        .map(|(name, value)| EnvPart {
            secret: hidden(step, &name),
            digest: secret_hash(&value).to_hex().to_string(),
            name,
        })
        .collect()
}

/// Keeps `parts` as the manifest of `parts.action`; a failure is logged, never raised.
pub(crate) fn remember(cache: &Cache, parts: &KeyParts) {
    if let Err(error) = crate::journal::append(cache, parts) {
        tracing::warn!(action = %parts.action, %error, "cannot write the key's manifest");
    }
}

/// The manifest of the last key recorded for `action`, if there is a readable one.
pub(crate) fn recalled(cache: &Cache, action: &str) -> Option<KeyParts> {
    crate::journal::last(cache, action)
}

/// How many changes [`because`] names before it counts the rest.
pub const NAMED_CHANGES: usize = 3;

/// One change in the words of a summary: "`Cargo.lock` appeared". Never a variable's value.
fn words(change: &Change) -> String {
    let name = change.name.as_deref().unwrap_or_default();
    let (appeared, disappeared) = ("appeared", "disappeared");
    let how = match change.how {
        "added" => appeared,
        "removed" => disappeared,
        _ => "changed",
    };
    match change.part {
        // Root-relative inputs are spelled `//…` in the parts; a person knows them without.
        "file" => format!("`{}` {how}", name.strip_prefix("//").unwrap_or(name)),
        "env" => format!("variable `{name}` {how}"),
        "program" if name == "PATH" => format!("`PATH` {how}"),
        "program" => format!("the program `{name}` {how}"),
        "outputs" => format!("output `{name}` {how}"),
        "files_rest" => format!("one of the {name} {how}"),
        "upstream" => format!("the sources of `{name}` {how}"),
        "dep" => format!("dependency `{name}` {how}"),
        "command" => "its command changed".to_owned(),
        "params" => "its parameters changed".to_owned(),
        "folder" => "its folder changed".to_owned(),
        "version" => "the key's version changed (a new `once`)".to_owned(),
        other => format!("its {other} changed"),
    }
}

/// The first [`NAMED_CHANGES`] changes in words, then how many more: "`Cargo.lock` appeared",
/// "`a` changed, `b` appeared, `c` disappeared and 4 more". Empty for no change.
pub fn because(changes: &[Change]) -> String {
    let mut text = changes
        .iter()
        .take(NAMED_CHANGES)
        .map(words)
        .collect::<Vec<_>>()
        .join(", ");
    let more = changes.len().saturating_sub(NAMED_CHANGES);
    if more > 0 {
        text.push_str(&format!(" and {more} more"));
    }
    text
}

/// Why an action whose parts are `now` runs again, given the parts of its last recorded run.
pub(crate) fn ran_again(last: &KeyParts, now: &KeyParts) -> String {
    if last.key == now.key {
        return "its recorded result is no longer in the cache".to_owned();
    }
    let changes = changes(last, now);
    if changes.is_empty() {
        return "its key changed in a part the record does not name".to_owned();
    }
    because(&changes)
}

/// The last recorded parts of a plan's actions, read from the journal once per run, at the
/// first action that misses: a run that replays everything never reads it.
pub(crate) struct Recall<'a> {
    cache: &'a Cache,
    plan: &'a Plan,
    last: OnceLock<crate::journal::Recalled>,
}

impl<'a> Recall<'a> {
    pub(crate) fn new(cache: &'a Cache, plan: &'a Plan) -> Recall<'a> {
        Recall {
            cache,
            plan,
            last: OnceLock::new(),
        }
    }

    /// Why the action whose parts are `now` runs again; `None` for its first recorded run.
    pub(crate) fn ran_again(&self, now: &KeyParts) -> Option<String> {
        let last = self.last.get_or_init(|| {
            let wanted: HashSet<&str> = self.plan.steps.iter().map(|s| s.action.as_str()).collect();
            crate::journal::Recalled::read(self.cache, &wanted)
        });
        last.last(&now.action).map(|last| ran_again(&last, now))
    }
}

/// Pushes onto `found` what was removed from, changed in, or added to `a` to make `b`.
fn compare(
    found: &mut Vec<Change>,
    part: &'static str,
    a: BTreeMap<String, String>,
    b: BTreeMap<String, String>,
) {
    for (name, value) in &a {
        let how = match b.get(name) {
            None => "removed",
            Some(other) if other != value => "changed",
            Some(_) => continue,
        };
        found.push(Change {
            part,
            name: Some(name.clone()),
            how,
        });
    }
    for name in b.keys().filter(|name| !a.contains_key(*name)) {
        found.push(Change {
            part,
            name: Some(name.clone()),
            how: "added",
        });
    }
}

/// The parts that differ from `last` to `now`, in the order of [`KeyParts`]' fields.
pub fn changes(last: &KeyParts, now: &KeyParts) -> Vec<Change> {
    let mut found = Vec::new();
    let mut one = |part: &'static str, a: &str, b: &str| {
        if a != b {
            found.push(Change {
                part,
                name: None,
                how: "changed",
            });
        }
    };
    one("version", &last.version, &now.version);
    one("command", &last.command, &now.command);
    one("folder", &last.folder, &now.folder);
    one("params", &last.params, &now.params);
    let named =
        |items: Vec<(String, String)>| -> BTreeMap<String, String> { items.into_iter().collect() };
    let env = |p: &KeyParts| {
        named(
            p.env
                .iter()
                .map(|e| (e.name.clone(), format!("{}{}", e.secret, e.digest)))
                .collect(),
        )
    };
    compare(&mut found, "env", env(last), env(now));
    let program = |p: &KeyParts| named(vec![(p.program.clone(), p.program_digest.clone())]);
    compare(&mut found, "program", program(last), program(now));
    let outputs = |p: &KeyParts| {
        named(
            p.outputs
                .iter()
                .map(|o| (o.clone(), String::new()))
                .collect(),
        )
    };
    compare(&mut found, "outputs", outputs(last), outputs(now));
    let files = |p: &KeyParts| {
        named(
            p.files
                .iter()
                .map(|f| (f.path.clone(), f.digest.clone()))
                .collect(),
        )
    };
    compare(&mut found, "file", files(last), files(now));
    if last.files_rest != now.files_rest {
        found.push(Change {
            part: "files_rest",
            name: Some(format!("files past the first {FILES_CAP}")),
            how: "changed",
        });
    }
    let upstream = |p: &KeyParts| {
        named(
            p.upstream
                .iter()
                .map(|u| (u.targets.join(", "), u.digest.clone()))
                .collect(),
        )
    };
    compare(&mut found, "upstream", upstream(last), upstream(now));
    let deps = |p: &KeyParts| {
        named(
            p.deps
                .iter()
                .map(|d| (d.action.clone(), d.key.clone()))
                .collect(),
        )
    };
    compare(&mut found, "dep", deps(last), deps(now));
    found
}

/// Explains the key of every step of `plan`, in plan order, reading and writing nothing but
/// what a key needs to read.
pub fn explain(plan: &Plan, cache: &Cache) -> Result<Vec<Explanation>, Error> {
    let hashes = cache.file_hashes();
    let environ = Environ::new();
    let keyer = Keyer::new(plan, &hashes, &environ);
    let mut buffer = vec![0u8; 64 * 1024];
    let mut keys: Vec<Key> = Vec::with_capacity(plan.steps.len());
    let mut explained = Vec::with_capacity(plan.steps.len());
    for step in &plan.steps {
        let dep_keys: Vec<Key> = step.deps.iter().map(|&d| keys[d]).collect();
        let key = keyer.key(step, &dep_keys, &mut buffer)?;
        keys.push(key);
        let now = parts(plan, &keyer, step, &dep_keys, key, &mut buffer)?;
        let entry = cache.lookup(&key).is_some();
        let last = recalled(cache, &step.action);
        let changes = match &last {
            Some(last) if last.key != now.key => changes(last, &now),
            _ => Vec::new(),
        };
        let verdict = verdict(&now, last.as_ref(), entry, &changes);
        explained.push(Explanation {
            action: step.action.clone(),
            key: now.key.clone(),
            entry,
            last_key: last.map(|l| l.key),
            changes,
            verdict,
            parts: now,
        });
    }
    // A preview of keys saves no file hashes: `.once/cache/files` is left as it was.
    drop(hashes);
    Ok(explained)
}

fn verdict(now: &KeyParts, last: Option<&KeyParts>, entry: bool, changes: &[Change]) -> String {
    match (last, entry) {
        (Some(last), true) if last.key == now.key => {
            "nothing changed: the entry is there, a run would replay it".to_owned()
        }
        (_, true) => "the entry is there, a run would replay it".to_owned(),
        (None, false) => "no run of this action was recorded: it would run".to_owned(),
        (Some(last), false) if last.key == now.key => {
            "nothing changed since the last recorded run, but its entry is gone: it would run"
                .to_owned()
        }
        (Some(_), false) if changes.is_empty() => {
            "the key changed in a part the manifest does not name: it would run".to_owned()
        }
        (Some(_), false) => format!(
            "{} since the last recorded run: it would run",
            because(changes)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(files: &[(&str, &str)], rest: Option<(usize, &str)>) -> KeyParts {
        KeyParts {
            action: "t:build".into(),
            key: "k".into(),
            version: "v".into(),
            command: "make".into(),
            folder: "t".into(),
            params: "{}".into(),
            env: vec![EnvPart {
                name: "API_TOKEN".into(),
                secret: true,
                digest: "d1".into(),
            }],
            program: "PATH".into(),
            program_digest: "p".into(),
            outputs: vec!["out/**".into()],
            files: files
                .iter()
                .map(|(path, digest)| FilePart {
                    path: (*path).into(),
                    digest: (*digest).into(),
                })
                .collect(),
            files_rest: rest.map(|(count, digest)| Rest {
                count,
                digest: digest.into(),
            }),
            upstream: Vec::new(),
            deps: Vec::new(),
        }
    }

    #[test]
    fn each_changed_part_is_named_and_nothing_else() {
        let last = parts(&[("a.rs", "1"), ("b.rs", "1")], None);
        let mut now = parts(&[("a.rs", "2"), ("c.rs", "1")], Some((3, "r")));
        now.env[0].digest = "d2".into();
        let changed = changes(&last, &now);
        let found: Vec<(&str, Option<&str>, &str)> = changed
            .iter()
            .map(|c| (c.part, c.name.as_deref(), c.how))
            .collect();
        assert_eq!(
            found,
            vec![
                ("env", Some("API_TOKEN"), "changed"),
                ("file", Some("a.rs"), "changed"),
                ("file", Some("b.rs"), "removed"),
                ("file", Some("c.rs"), "added"),
                ("files_rest", Some("files past the first 1000"), "changed"),
            ]
        );
        assert!(changes(&last, &last).is_empty());
        assert_eq!(
            because(&changed),
            "variable `API_TOKEN` changed, `a.rs` changed, `b.rs` disappeared and 2 more"
        );
    }

    #[test]
    fn a_rerun_names_the_file_that_appeared_or_says_why_it_cannot() {
        let mut last = parts(&[("src/main.rs", "1")], None);
        let mut now = parts(&[("src/main.rs", "1"), ("//Cargo.lock", "1")], None);
        now.key = "k2".into();
        assert_eq!(ran_again(&last, &now), "`Cargo.lock` appeared");
        last.key = now.key.clone();
        assert_eq!(
            ran_again(&last, &now),
            "its recorded result is no longer in the cache"
        );
        last.key = "k1".into();
        last.files = now.files.clone();
        assert_eq!(
            ran_again(&last, &now),
            "its key changed in a part the record does not name"
        );
    }
}
