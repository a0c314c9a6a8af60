//! `once init`: write a short `once.toml` that explains the overlay.
//!
//! The file it writes only adds to what discovery infers, so it starts almost
//! empty and says how to change an inferred target, add one, leave some out or
//! turn discovery off. It must never overwrite a `once.toml`, even one that
//! appears while it writes.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use once_graph::{SafeDirectories, Workspace};
use serde::Serialize;

use crate::exit::Outcome;
use crate::output;

/// What `once init --json` prints.
#[derive(Debug, Serialize)]
struct Initialized {
    /// The file written.
    path: PathBuf,
    /// The targets discovery infers there, over all.
    inferred: u64,
    /// Per ecosystem: how many of them.
    ecosystems: Vec<(String, u64)>,
}

pub fn run(workspace: Option<&Path>, json: bool) -> Result<Outcome> {
    let root = match workspace {
        Some(dir) => dir
            .canonicalize()
            .with_context(|| format!("cannot open folder `{}`", dir.display()))?,
        None => {
            let cwd = std::env::current_dir().context("cannot read the current folder")?;
            // The root discovery would use, so the overlay lands where it takes effect.
            Workspace::discover(&cwd, &SafeDirectories::from_env()).unwrap_or(cwd)
        }
    };
    let path = root.join(once_graph::MANIFEST_FILE);
    // A link counts as there, even a dangling one: nothing is ever written through it.
    if path.symlink_metadata().is_ok() {
        anyhow::bail!(
            "`{}` already exists; edit it, or see `once query schema` for every key",
            path.display()
        );
    }
    let loaded = Workspace::load(&root)
        .with_context(|| format!("cannot read the workspace at `{}`", root.display()))?;
    let mut ecosystems: Vec<(String, u64)> = Vec::new();
    for t in loaded.targets() {
        let Some(inference) = &t.inference else {
            continue;
        };
        let name = inference.ecosystem.name();
        match ecosystems.iter_mut().find(|(e, _)| e == name) {
            Some((_, n)) => *n += 1,
            None => ecosystems.push((name.to_string(), 1)),
        }
    }
    let inferred: u64 = ecosystems.iter().map(|(_, n)| n).sum();
    let example = loaded.targets().first().map(|t| t.name.as_str());
    let text = manifest_text(&loaded, inferred, &ecosystems, example);
    once_fs::write_atomic(&path, text.as_bytes(), once_fs::Mode::CreateNew).map_err(|e| match e
        .kind()
    {
        std::io::ErrorKind::AlreadyExists => anyhow::anyhow!(
            "`{}` appeared while writing; it was left as it is",
            path.display()
        ),
        _ => anyhow::Error::new(e).context(format!("cannot write `{}`", path.display())),
    })?;
    if json {
        output::json(&Initialized {
            path,
            inferred,
            ecosystems,
        })?;
    } else {
        let found = if inferred == 0 {
            "no target is inferred here yet; declare targets in it".to_string()
        } else {
            let parts: Vec<String> = ecosystems
                .iter()
                .map(|(e, n)| format!("{n} from {e}"))
                .collect();
            format!("{inferred} targets are inferred ({})", parts.join(", "))
        };
        output::text(&format!(
            "wrote `{}`: {found}\nnext: `once query targets` lists them, `once check` validates, {}",
            path.display(),
            next_run(&loaded)
        ))?;
    }
    Ok(Outcome::Success)
}

/// The run to try next, named from the capabilities that exist: `test` where a target has it,
/// else the commonest one, else how to add one, so the hint never runs nothing.
fn next_run(ws: &Workspace) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for c in ws.targets().iter().flat_map(|t| t.capabilities.iter()) {
        match counts.iter_mut().find(|(name, _)| *name == &*c.name) {
            Some((_, n)) => *n += 1,
            None => counts.push((&c.name, 1)),
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let runs = |name: &str, n: usize| {
        let targets = if n == 1 { "target" } else { "targets" };
        format!("`once run --all {name}` runs `{name}` on {n} {targets}")
    };
    if let Some((_, n)) = counts.iter().find(|(name, _)| *name == "test") {
        return runs("test", *n);
    }
    match counts.first() {
        Some((name, n)) => format!(
            "{}; no target has `test` (add one in `once.toml`: `[targets.NAME.capabilities.test]` with a `command`)",
            runs(name, *n)
        ),
        None => "no target has a capability yet: declare one in `once.toml` \
                 (`[targets.NAME.capabilities.test]` with a `command`)"
            .to_string(),
    }
}

/// The text of the new manifest: what discovery found, and how to change it.
fn manifest_text(
    ws: &Workspace,
    inferred: u64,
    ecosystems: &[(String, u64)],
    example: Option<&str>,
) -> String {
    let found = if inferred == 0 {
        "# Nothing is inferred here yet: no Cargo, JavaScript, Python or Go manifest was found.\n"
            .to_string()
    } else {
        let parts: Vec<String> = ecosystems.iter().map(|(e, n)| format!("{n} {e}")).collect();
        format!(
            "# Inferred here now: {inferred} targets ({}).\n",
            parts.join(", ")
        )
    };
    let name = example.unwrap_or("web");
    format!(
        r#"# The build graph of `{root}`.
#
# once infers targets from the workspace's own manifests (Cargo.toml, package.json workspaces
# and pnpm-workspace.yaml, pyproject.toml and uv workspaces, go.work and go.mod). This file only
# adds to what it infers; `once query targets` shows the result, `once query schema` every key.
{found}#
# Change an inferred target by its name (any field, any capability):
#   [targets.{name}.capabilities.test]
#   command = "…"
#   deadline = "5m"
# Declare a target of your own:
#   [targets.docs]
#   kind = "command"
#   capabilities.build.command = "mdbook build"
# Leave inferred targets out, or read fewer ecosystems, or turn discovery off:
#   [discover]
#   exclude = ["bench-*"]
#   ecosystems = ["cargo"]
#   enabled = false

[workspace]
# name = "…"              the workspace's name; default: its folder's name
# default-deadline = "30m"
"#,
        root = ws.root().display(),
    )
}
