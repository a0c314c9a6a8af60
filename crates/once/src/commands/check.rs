//! `once check`: validate every manifest and report all problems at once.

use std::path::Path;

use anyhow::Result;
use once_graph::{Severity, Workspace};

use crate::exit::Outcome;
use crate::output;

pub fn run(workspace: Option<&Path>, json: bool) -> Result<Outcome> {
    let loaded = super::load(workspace)?;
    if json {
        output::json(loaded.diagnostics())?;
    } else {
        super::report_diagnostics(&loaded);
        if loaded.diagnostics().is_empty() {
            let manifest = loaded.root().join(once_graph::MANIFEST_FILE);
            let inferred = loaded
                .targets()
                .iter()
                .filter(|t| t.inference.is_some())
                .count();
            let text = if !manifest.is_file() {
                format!(
                    "`{}` is valid: {inferred} targets inferred from its manifests, no once.toml",
                    loaded.root().display()
                )
            } else if inferred > 0 {
                format!(
                    "`{}` is valid ({inferred} of {} targets inferred)",
                    manifest.display(),
                    loaded.targets().len()
                )
            } else {
                format!("`{}` is valid", manifest.display())
            };
            output::text(&text)?;
        }
    }
    Ok(if loaded.has_errors() {
        Outcome::Invalid
    } else {
        Outcome::Success
    })
}

/// "2 errors and 1 warning in the manifests", or nothing when there is nothing to say.
pub fn summary(workspace: &Workspace) -> Option<String> {
    let errors = count(workspace, Severity::Error);
    let warnings = count(workspace, Severity::Warning);
    let part = |n: usize, word: &str| match n {
        0 => None,
        1 => Some(format!("1 {word}")),
        n => Some(format!("{n} {word}s")),
    };
    let parts: Vec<String> = [part(errors, "error"), part(warnings, "warning")]
        .into_iter()
        .flatten()
        .collect();
    if parts.is_empty() {
        return None;
    }
    let lead = if errors > 0 { "error" } else { "warning" };
    Some(format!("{lead}: {} in the manifests", parts.join(" and ")))
}

fn count(workspace: &Workspace, severity: Severity) -> usize {
    workspace
        .diagnostics()
        .iter()
        .filter(|diagnostic| diagnostic.severity == severity)
        .count()
}
