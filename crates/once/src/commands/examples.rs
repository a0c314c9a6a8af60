//! `once examples list|show` and `once materialize`: the built-in starters, read and written.
//!
//! Materializing needs no `once.toml` (a starter usually brings the first one), so the root is
//! `-C DIR`, else the workspace around the current folder, else the current folder. This module
//! must never write a file itself: `once_examples::materialize` does, all or nothing.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use once_examples::{ExampleDetail, ExampleList};
use once_fs::WorkspacePath;
use once_graph::{SafeDirectories, Workspace};

use crate::cli::{ExamplesCommand, MaterializeArgs};
use crate::exit::Outcome;
use crate::output;

pub fn list_or_show(command: ExamplesCommand) -> Result<Outcome> {
    match command {
        ExamplesCommand::List { json } => {
            let list = ExampleList::new();
            if json {
                output::json(&list)?;
            } else {
                let width = list
                    .examples
                    .iter()
                    .map(|e| e.name.len())
                    .max()
                    .unwrap_or(0);
                let mut text = String::new();
                for row in &list.examples {
                    text.push_str(&format!(
                        "{:width$}  {} [{}]\n",
                        row.name,
                        row.description,
                        row.stacks.join(", ")
                    ));
                }
                output::text(&text)?;
            }
        }
        ExamplesCommand::Show { name, file, json } => {
            let example = once_examples::find(&name)?;
            if let Some(path) = file {
                let Some(found) = example.files().find(|f| f.path == path) else {
                    anyhow::bail!(
                        "example `{name}` has no file `{path}`; `once examples show {name}` lists them"
                    );
                };
                output::text(&String::from_utf8_lossy(found.bytes))?;
                return Ok(Outcome::Success);
            }
            let detail = ExampleDetail::new(example);
            if json {
                output::json(&detail)?;
            } else {
                let mut text = format!(
                    "{}: {} [{}]\n",
                    detail.name,
                    detail.description,
                    detail.stacks.join(", ")
                );
                for file in &detail.files {
                    text.push_str(&format!("  {}  ({} bytes)\n", file.path, file.bytes));
                }
                output::text(&text)?;
            }
        }
    }
    Ok(Outcome::Success)
}

pub fn materialize(workspace: Option<&Path>, args: MaterializeArgs) -> Result<Outcome> {
    let example = once_examples::find(&args.name)?;
    let root = root(workspace)?;
    let into = args
        .into
        .as_deref()
        .filter(|text| !matches!(text.trim_matches('/'), "" | "."))
        .map(WorkspacePath::parse)
        .transpose()
        .context("invalid `--into`")?;
    let done = match once_examples::materialize(&root, example, into.as_ref(), args.dry_run) {
        Ok(done) => done,
        Err(once_examples::Error::Conflicts { conflicts }) => {
            eprintln!(
                "error: refused, nothing was written: {} file(s) of `{}` already exist with \
                 different content:",
                conflicts.len(),
                example.name
            );
            for conflict in &conflicts {
                eprintln!("  {} ({})", conflict.path, conflict.problem);
            }
            eprintln!("hint: materialize into an empty folder with `--into DIR`");
            return Ok(Outcome::Failure);
        }
        Err(error) => return Err(error).context(format!("cannot materialize `{}`", example.name)),
    };
    if args.json {
        output::json(&done)?;
    } else {
        let verb = if done.dry_run {
            "would create"
        } else {
            "created"
        };
        let mut text = format!(
            "{}: {verb} {} file(s), {} unchanged, in `{}`\n",
            done.example,
            done.created.len(),
            done.unchanged.len(),
            done.into
        );
        for path in &done.created {
            text.push_str(&format!("  + {path}\n"));
        }
        output::text(&text)?;
    }
    Ok(Outcome::Success)
}

/// `-C DIR`, else the workspace around the current folder, else the current folder.
fn root(workspace: Option<&Path>) -> Result<PathBuf> {
    if let Some(dir) = workspace {
        return dir
            .canonicalize()
            .with_context(|| format!("cannot open folder `{}`", dir.display()));
    }
    let cwd = std::env::current_dir().context("cannot read the current folder")?;
    Ok(Workspace::discover(&cwd, &SafeDirectories::from_env()).unwrap_or(cwd))
}
