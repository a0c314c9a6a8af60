//! A package's `scripts` as its capabilities: exactly the scripts it has.
//!
//! Each script `s` becomes a capability running `<package manager> run s`, so
//! `once run --all lint` runs only where a `lint` script exists and never hits
//! "missing script". It must never invent a capability: a script whose name
//! cannot become a capability name is skipped with a warning, and `pre`/`post`
//! hooks of a script that exists are left to the package manager, which runs
//! them around the main script.
//!
//! A target a `once.toml` declares by hand as an `npm-package` keeps the kind's defaults only
//! where its `package.json` has their script ([`trim_missing_scripts`], by the kind's own
//! table [`NPM_SCRIPTS`]): the same rule, so `--all lint` skips it rather than fail.

use serde_json::{Map, Value};

use super::PackageManager;
use crate::discover::{InferredCapability, Reader};
use crate::kind::NPM_SCRIPTS;
use crate::manifest::PendingTarget;
use crate::model::{Capability, Origin, valid_name};

/// How much of a script's command its description quotes.
const DESCRIBED_CHARS: usize = 60;

/// Script names that start a server or a watcher.
const PERSISTENT_NAMES: [&str; 6] = ["dev", "start", "serve", "watch", "preview", "storybook"];

/// The capabilities of the `package.json` read as `file` whose object is `map`.
pub(super) fn capabilities(
    reader: &mut Reader,
    file: usize,
    map: &Map<String, Value>,
    pm: PackageManager,
) -> Vec<InferredCapability> {
    let Some(Value::Object(scripts)) = map.get("scripts") else {
        return Vec::new();
    };
    let rel = reader.rel(file).to_string();
    let at = super::package_json::key_offset(reader.text(file), "scripts");
    let mut out: Vec<InferredCapability> = Vec::new();
    for (script, command) in scripts {
        let Some(command) = command.as_str() else {
            reader.warn(
                file,
                at,
                "bad-script",
                format!("script `{script}` in `{rel}` is not a string; it was skipped"),
            );
            continue;
        };
        if is_hook_of_existing(script, scripts) {
            continue;
        }
        let name = script.replace(':', "-");
        if !valid_name(&name) {
            reader.warn(
                file,
                at,
                "bad-script",
                format!(
                    "script `{script}` in `{rel}` cannot be a capability name \
                     (letters, digits, `.`, `_`, `-`, `:`, starting with a letter or digit); it was skipped"
                ),
            );
            continue;
        }
        if let Some(first) = out.iter().find(|c| c.name == name) {
            // The command is `<pm> run <script>`: its last word is the script that took the name.
            let first = first
                .command
                .rsplit(' ')
                .next()
                .unwrap_or_default()
                .to_string();
            reader.warn(
                file,
                at,
                "bad-script",
                format!(
                    "script `{script}` in `{rel}` would be capability `{name}`, \
                     which script `{first}` already is; it was skipped"
                ),
            );
            continue;
        }
        out.push(InferredCapability {
            persistent: is_persistent(script, command),
            inputs: None,
            stands_for: None,
            batch: None,
            command: format!("{} run {script}", pm.name()),
            description: describe(script, command),
            name,
        });
    }
    out
}

/// `prebuild` and `postbuild` when `build` exists: the package manager runs them with it.
fn is_hook_of_existing(script: &str, scripts: &Map<String, Value>) -> bool {
    ["pre", "post"].iter().any(|hook| {
        script
            .strip_prefix(hook)
            .is_some_and(|main| !main.is_empty() && scripts.contains_key(main))
    })
}

/// A server or watcher, by a conservative rule: named `dev`, `start`, `serve`, `watch`,
/// `preview` or `storybook`, or ending in `-dev`, `:dev`, `-watch` or `:watch`, or passing
/// `--watch` or `-w` as a whole word. Marking a one-shot script persistent only costs its
/// caching; missing a server would leave a run waiting on it until its deadline.
fn is_persistent(script: &str, command: &str) -> bool {
    PERSISTENT_NAMES.contains(&script)
        || ["-dev", ":dev", "-watch", ":watch"]
            .iter()
            .any(|end| script.ends_with(end))
        || command
            .split_whitespace()
            .any(|word| word == "-w" || word == "--watch")
}

/// "the `build` script: `tsc -b`", the command cut to [`DESCRIBED_CHARS`] characters.
fn describe(script: &str, command: &str) -> String {
    let flat: String = command.split_whitespace().collect::<Vec<_>>().join(" ");
    let shown = if flat.chars().count() > DESCRIBED_CHARS {
        let cut: String = flat.chars().take(DESCRIBED_CHARS - 1).collect();
        format!("{cut}…")
    } else {
        flat
    };
    format!("the `{script}` script: `{shown}`")
}

/// Drops the default capabilities of a declared `npm-package` target whose script its
/// `package.json` lacks (`once run --all lint` then skips it instead of failing with "Missing
/// script"). A capability the manifest declares or changes stays; a folder without a readable
/// `package.json` keeps every default. Inferred targets already have exactly their scripts.
pub(crate) fn trim_missing_scripts(p: &mut PendingTarget, reader: &mut Reader) {
    let t = &p.target;
    if t.kind != "npm-package" || t.inference.is_some() {
        return;
    }
    let missing = |c: &Capability, scripts: &[String]| {
        c.origin == Origin::Kind
            && NPM_SCRIPTS
                .iter()
                .any(|(cap, script)| *c.name == **cap && !scripts.iter().any(|s| s == script))
    };
    let Some(scripts) = super::scripts_of(reader, &t.path) else {
        return;
    };
    if !t.capabilities.iter().any(|c| missing(c, &scripts)) {
        return;
    }
    let keep: Vec<bool> = t
        .capabilities
        .iter()
        .map(|c| !missing(c, &scripts))
        .collect();
    let capabilities: Vec<Capability> = t
        .capabilities
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(c, _)| c.clone())
        .collect();
    if !p.cap_deps.is_empty() {
        let deps = std::mem::take(&mut p.cap_deps);
        p.cap_deps = deps
            .into_iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(d, _)| d)
            .collect();
    }
    p.target.capabilities = capabilities.into();
}
