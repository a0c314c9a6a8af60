//! `once query affected`, `once query owner` and the target selection of `once run --affected`:
//! the changed files (named on the command line, or listed by git), turned into the value of
//! `once_graph::query::affected`, printed as text or as the JSON the MCP tool returns.
//!
//! Paths on the command line are relative to the current folder or to the workspace root; one
//! outside the workspace is refused, never silently dropped. This module must never compute
//! ownership itself: it only resolves paths and prints the library's answer.

use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result};
use once_graph::Workspace;
use once_graph::query::{self, AffectedAnswer, AffectedQuery, ChangedFile, OwnerQuery, Ownership};

use crate::cli::{self, AffectedArgs};
use crate::exit::Outcome;
use crate::{output, wording};

/// Why no answer could be given, and the exit status it earns.
pub enum Refusal {
    /// The command line or the repository is not what it must be (exit 2).
    Invalid(String),
    /// The question could not be answered (exit 1).
    Failed(String),
}

impl Refusal {
    /// Prints the message and gives the exit status.
    pub fn report(self) -> Outcome {
        match self {
            Refusal::Invalid(message) => {
                eprintln!("error: {}", wording::for_cli(&message));
                Outcome::Invalid
            }
            Refusal::Failed(message) => {
                eprintln!("error: {}", wording::for_cli(&message));
                Outcome::Failure
            }
        }
    }
}

pub fn affected(workspace: &Workspace, args: AffectedArgs) -> Result<Outcome> {
    let files = match changed(workspace.root(), args.since.as_deref(), &args.files) {
        Ok(files) => files,
        Err(refusal) => return Ok(refusal.report()),
    };
    let q = AffectedQuery {
        files,
        capability: args.capability,
        ownership: match args.ownership {
            cli::Ownership::Summary => Ownership::Summary,
            cli::Ownership::All => Ownership::All,
            cli::Ownership::None => Ownership::None,
        },
        cursor: args.page.cursor,
        limit: args.page.limit,
    };
    match query::affected(workspace, &q) {
        Ok(answer) if args.json => output::json(&answer)?,
        Ok(answer) => output::text(&render(&answer))?,
        Err(error) if super::query::Refusal::is_wrong_argument(&error) => {
            return Ok(Refusal::Invalid(error.to_string()).report());
        }
        Err(error) => return Ok(Refusal::Failed(error.to_string()).report()),
    }
    Ok(Outcome::Success)
}

pub fn owner(workspace: &Workspace, path: &Path, json: bool) -> Result<Outcome> {
    let path = match resolve(workspace.root(), path) {
        Ok(path) => path,
        Err(refusal) => return Ok(refusal.report()),
    };
    match query::owner(workspace, &OwnerQuery { path }) {
        Ok(row) if json => output::json(&row)?,
        Ok(row) => output::text(&owner_line(&row))?,
        Err(error) => return Ok(Refusal::Failed(error.to_string()).report()),
    }
    Ok(Outcome::Success)
}

/// The targets whose `capability` action the changes since `since` affect, sorted: what
/// `once run --affected` adds to its request.
pub fn targets(
    workspace: &Workspace,
    since: &str,
    capability: &str,
) -> Result<Vec<String>, Refusal> {
    let files = changed(workspace.root(), Some(since), &[])?;
    let mut q = AffectedQuery {
        files,
        capability: Some(capability.to_owned()),
        // Only the actions name targets: the files' owners would only lengthen the pages.
        ownership: Ownership::None,
        cursor: None,
        limit: Some(query::MAX_PAGE_LIMIT),
    };
    let mut targets = Vec::new();
    loop {
        let page = query::affected(workspace, &q).map_err(|e| Refusal::Invalid(e.to_string()))?;
        targets.extend(
            page.actions
                .iter()
                .filter_map(|a| a.action.rsplit_once(':').map(|(t, _)| t.to_owned())),
        );
        match page.next_cursor {
            Some(cursor) => q.cursor = Some(cursor),
            None => break,
        }
    }
    targets.sort_unstable();
    targets.dedup();
    Ok(packages_over_stand_ins(workspace, targets, capability))
}

/// `names` (targets with `capability`) less a workspace-wide stand-in whose packages are among
/// them: the affected crates' own tests run, not the whole workspace's.
fn packages_over_stand_ins(
    workspace: &Workspace,
    names: Vec<String>,
    capability: &str,
) -> Vec<String> {
    let all = workspace.targets();
    let mut picked: Vec<(usize, usize)> = names
        .iter()
        .filter_map(|name| {
            let t = all.binary_search_by(|t| t.name.as_str().cmp(name)).ok()?;
            let c = all[t]
                .capabilities
                .iter()
                .position(|c| &*c.name == capability)?;
            Some((t, c))
        })
        .collect();
    if picked.len() != names.len() {
        // A name without the capability: leave the list as the query answered it.
        return names;
    }
    once_graph::stand_in::settle(all, &mut picked, once_graph::stand_in::Prefer::Packages);
    picked
        .into_iter()
        .map(|(t, _)| all[t].name.clone())
        .collect()
}

/// The changed files: those named, resolved against the workspace root, or git's since `since`.
fn changed(root: &Path, since: Option<&str>, named: &[PathBuf]) -> Result<Vec<String>, Refusal> {
    if !named.is_empty() {
        return named.iter().map(|path| resolve(root, path)).collect();
    }
    let registry = once_exec::Registry::new();
    once_run::changed_files(root, since.unwrap_or("HEAD"), &registry).map_err(|error| {
        if error.is_bad_request() {
            Refusal::Invalid(error.to_string())
        } else {
            Refusal::Failed(error.to_string())
        }
    })
}

/// `path` relative to the workspace root: from the current folder when it exists there, else
/// from the root when it exists there, else from the current folder; refused when it lies
/// outside the workspace.
pub(super) fn resolve(root: &Path, path: &Path) -> Result<String, Refusal> {
    let root = &root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let cwd = std::env::current_dir()
        .and_then(|cwd| cwd.canonicalize())
        .context("cannot read the current folder")
        .map_err(|e| Refusal::Failed(format!("{e:#}")))?;
    // A folder on the way may be spelled through a link (`/tmp` for `/private/tmp`): the
    // existing part of a path is resolved, its last name kept, so a link named as a changed
    // file stays that link.
    let real = |p: PathBuf| match (p.parent(), p.file_name()) {
        (Some(parent), Some(name)) => parent
            .canonicalize()
            .map_or(p.clone(), |parent| parent.join(name)),
        _ => p,
    };
    let candidates: Vec<PathBuf> = if path.is_absolute() {
        vec![real(lexical(path))]
    } else {
        vec![real(lexical(&cwd.join(path))), lexical(&root.join(path))]
    };
    let inside = |p: &PathBuf| p.strip_prefix(root).ok().map(Path::to_path_buf);
    let chosen = candidates
        .iter()
        .find(|p| inside(p).is_some() && p.symlink_metadata().is_ok())
        .or_else(|| candidates.iter().find(|p| inside(p).is_some()));
    let relative = chosen.and_then(inside).ok_or_else(|| {
        Refusal::Invalid(format!(
            "`{}` is outside the workspace `{}`; name files inside it",
            path.display(),
            root.display()
        ))
    })?;
    let text = relative.to_str().ok_or_else(|| {
        Refusal::Invalid(format!(
            "`{}` is not valid UTF-8, so no capability can name it",
            path.display()
        ))
    })?;
    if text.is_empty() {
        return Err(Refusal::Invalid(format!(
            "`{}` is the workspace root itself; name files inside it",
            path.display()
        )));
    }
    Ok(text.to_owned())
}

/// `path` with `.` and `..` folded away, without asking the file system.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The answer for a person: the actions with their reasons, then who owns the changed files.
fn render(answer: &AffectedAnswer) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} affected {}",
        answer.actions_total,
        crate::render::noun(answer.actions_total as usize, "action")
    );
    let width = answer
        .actions
        .iter()
        .map(|a| a.action.len())
        .max()
        .unwrap_or(0);
    for action in &answer.actions {
        let _ = writeln!(out, "  {:width$}  {}", action.action, action.reason);
    }
    let _ = writeln!(
        out,
        "{} changed {}, {} owned by no target",
        answer.files_total,
        crate::render::noun(answer.files_total as usize, "file"),
        answer.unowned_total
    );
    if !answer.owners.is_empty() {
        let owners: Vec<String> = answer
            .owners
            .iter()
            .map(|o| format!("{} ({})", o.target, o.files))
            .collect();
        let more = (answer.owners_total as usize).saturating_sub(answer.owners.len());
        let more = if more > 0 {
            format!(", and {more} more")
        } else {
            String::new()
        };
        let _ = writeln!(out, "  owned by {}{more}", owners.join(", "));
    }
    for file in &answer.files {
        let _ = writeln!(out, "  {}", owner_line(file));
    }
    if let Some(cursor) = &answer.next_cursor {
        let _ = writeln!(out, "more: pass `--cursor {cursor}` for the next page");
    }
    out
}

/// `path: owner (reasons); owner (reasons)`, or that nothing owns it.
fn owner_line(file: &ChangedFile) -> String {
    if file.owners.is_empty() {
        return format!("{}: owned by no target", file.path);
    }
    let owners: Vec<String> = file
        .owners
        .iter()
        .map(|o| format!("{} ({})", o.target, o.reasons.join("; ")))
        .collect();
    let more = file.owners_total as usize - file.owners.len().min(file.owners_total as usize);
    let more = if more > 0 {
        format!("; and {more} more")
    } else {
        String::new()
    };
    format!("{}: {}{more}", file.path, owners.join("; "))
}
