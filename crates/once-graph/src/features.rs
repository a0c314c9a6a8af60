//! The `features` of a `cargo-package` target, checked against the package's own `Cargo.toml`:
//! a feature the package does not declare makes every cargo command of the target fail, so
//! `once check` says so first, as a warning at the target. It only reads the package's
//! `Cargo.toml`, and only through discovery's one [`Reader`] (its size limit, no pipe, the file
//! recorded so that editing its features makes the workspace stale); it must never fail a load
//! (a manifest it cannot read or parse is cargo's to report) and never judge what it cannot see
//! (a `dependency/feature` is left to cargo).

use std::collections::BTreeSet;

use crate::diagnostic::{Diagnostic, SourceFile};
use crate::discover::Reader;
use crate::model::Target;

/// A warning for each feature a `cargo-package` target enables that its package lacks. A
/// `Cargo.toml` among `files` (read by discovery) is not read again; any other is read through
/// `reader`, whose files the caller keeps.
pub(crate) fn unknown(
    targets: &[Target],
    files: &[SourceFile],
    reader: &mut Reader,
) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    for target in targets.iter().filter(|t| t.kind == "cargo-package") {
        let Some(serde_json::Value::Array(items)) = target.fields.get("features") else {
            continue;
        };
        let wanted: Vec<&str> = items.iter().filter_map(|item| item.as_str()).collect();
        if wanted.is_empty() {
            continue;
        }
        let Some(src) = files.get(target.file) else {
            continue;
        };
        let manifest = if target.path == "." || target.path.is_empty() {
            "Cargo.toml".to_owned()
        } else {
            format!("{}/Cargo.toml", target.path)
        };
        let text = match files.iter().find(|file| file.rel == manifest) {
            Some(file) => Some(file.text.as_str()),
            None => reader.read(&manifest).map(|file| reader.text(file)),
        };
        let Some(declared) = text.and_then(declared) else {
            continue;
        };
        for feature in wanted {
            if feature.contains('/') || declared.contains(feature) {
                continue;
            }
            let known: Vec<String> = declared.iter().map(|f| format!("`{f}`")).collect();
            diags.push(
                crate::manifest::warning(
                    src,
                    target.offset,
                    "unknown-feature",
                    format!(
                        "target `{}` enables feature `{feature}`, which `{}` does not declare; \
                         every cargo command of the target would fail",
                        target.name, manifest
                    ),
                )
                .help(if known.is_empty() {
                    "the package declares no features: remove it from `features`".to_string()
                } else {
                    format!("the package declares {}", known.join(", "))
                }),
            );
        }
    }
    diags
}

/// The features a package can enable: its `[features]`, its optional dependencies (each an
/// implicit feature unless a feature names it as `dep:NAME`), and `default`. `None` when the
/// manifest cannot be parsed.
fn declared(text: &str) -> Option<BTreeSet<String>> {
    let doc: toml::Table = toml::from_str(text).ok()?;
    let mut names: BTreeSet<String> = BTreeSet::from(["default".to_string()]);
    let mut hidden = BTreeSet::new();
    if let Some(features) = doc.get("features").and_then(toml::Value::as_table) {
        for (name, enables) in features {
            names.insert(name.clone());
            for item in enables.as_array().into_iter().flatten() {
                if let Some(dep) = item.as_str().and_then(|s| s.strip_prefix("dep:")) {
                    hidden.insert(dep.to_string());
                }
            }
        }
    }
    let targets = doc.get("target").and_then(toml::Value::as_table);
    let tables = std::iter::once(doc.get("dependencies")).chain(
        targets
            .into_iter()
            .flat_map(|t| t.values())
            .map(|platform| platform.get("dependencies")),
    );
    for table in tables.flatten().filter_map(toml::Value::as_table) {
        for (name, spec) in table {
            let optional = spec.get("optional").and_then(toml::Value::as_bool) == Some(true);
            if optional && !hidden.contains(name) {
                names.insert(name.clone());
            }
        }
    }
    Some(names)
}
