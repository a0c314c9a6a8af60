//! `once memory …`: project memory on the command line. Reads print the value that
//! `once_memory::query` computes (the MCP tool `once_query_memory` returns the very same JSON with
//! `--json`); writes go through `once_memory::Store`, which makes them atomic and safe under
//! concurrent writers. This module only resolves paths, reads bodies and renders text; it must
//! never hold the store's lock while a person is typing in an editor.

use std::io::{IsTerminal, Read};
use std::path::Path;

use anyhow::{Context, Result, bail};
use once_graph::Workspace;
use once_memory::{Change, Draft, Kind, MemoryQuery, Store, front_matter};

use crate::cli::{AddArgs, EditArgs, ListArgs, MemoryCommand, MemoryQueryArgs};
use crate::exit::{Outcome, Usage};
use crate::{output, wording};

pub fn run(workspace: Option<&Path>, command: MemoryCommand) -> Result<Outcome> {
    let root = super::find_root(workspace)?;
    let store = Store::new(&root);
    match command {
        MemoryCommand::Add(args) => add(&store, args),
        MemoryCommand::Edit(args) => edit(&store, args),
        MemoryCommand::Show { id, json } => {
            let q = MemoryQuery {
                id: Some(id),
                ..MemoryQuery::default()
            };
            read(&store, &q, json, true)
        }
        MemoryCommand::List(args) => {
            let q = list_query(None, &args)?;
            read(&store, &q, args.json, false)
        }
        MemoryCommand::Search { words, list } => {
            let q = list_query(Some(words.join(" ")), &list)?;
            read(&store, &q, list.json, false)
        }
        MemoryCommand::Forget { id, revision } => match store.forget(&id, revision) {
            Ok(_) => {
                output::text(&format!("forgot {id}"))?;
                Ok(Outcome::Success)
            }
            Err(error) => refused(error),
        },
        MemoryCommand::Check { json } => check(&store, json),
    }
}

/// `once query memory`: the same value as `once memory search|list|show --json`, always as JSON.
pub fn query(workspace: Option<&Path>, args: MemoryQueryArgs) -> Result<Outcome> {
    let store = Store::new(&super::find_root(workspace)?);
    let q = match args.id {
        Some(id) => MemoryQuery {
            id: Some(id),
            ..MemoryQuery::default()
        },
        None => {
            let words = (!args.words.is_empty()).then(|| args.words.join(" "));
            list_query(words, &args.list)?
        }
    };
    read(&store, &q, true, false)
}

/// Whether the build graph has a target; an unloadable workspace has none we can vouch for.
fn graph_targets(root: &Path) -> impl Fn(&str) -> bool {
    let workspace = Workspace::load(root).ok();
    move |name: &str| {
        workspace
            .as_ref()
            .is_some_and(|ws| ws.target(name).is_some())
    }
}

fn kind(name: &str) -> Result<Kind> {
    Kind::parse(name).ok_or_else(|| {
        let names: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        Usage(format!(
            "unknown kind `{name}`; use one of {}",
            names.join(", ")
        ))
        .into()
    })
}

fn list_query(words: Option<String>, args: &ListArgs) -> Result<MemoryQuery> {
    Ok(MemoryQuery {
        query: words,
        id: None,
        kind: args.kind.as_deref().map(kind).transpose()?,
        tag: args.tag.clone(),
        target: args.target.clone(),
        path: args.path.clone(),
        body: Some(args.body),
        cursor: args.page.cursor.clone(),
        limit: args.page.limit,
    })
}

fn read(store: &Store, q: &MemoryQuery, json: bool, full: bool) -> Result<Outcome> {
    let target_exists = graph_targets(store.root());
    let page = match once_memory::query(store, q, &target_exists) {
        Ok(page) => page,
        // A cursor or a limit the query cannot take: the command line was wrong.
        Err(error @ once_memory::Error::Invalid { .. }) => {
            eprintln!("error: {}", wording::for_cli(&error.to_string()));
            return Ok(Outcome::Invalid);
        }
        Err(error) => {
            eprintln!("error: {error}");
            return Ok(Outcome::Failure);
        }
    };
    for broken in &page.broken {
        eprintln!("warning: {broken}");
    }
    if json {
        output::json(&page)?;
        return Ok(Outcome::Success);
    }
    let mut text = String::new();
    for row in &page.entries {
        let stale = if row.stale.is_empty() {
            ""
        } else {
            "  [stale]"
        };
        if full {
            text.push_str(&format!(
                "{}\n{} · {} · revision {} · updated {}\n",
                row.title,
                row.id,
                row.kind.as_str(),
                row.revision,
                row.updated
            ));
            if !row.tags.is_empty() {
                text.push_str(&format!("tags: {}\n", row.tags.join(", ")));
            }
            if !row.targets.is_empty() {
                text.push_str(&format!("targets: {}\n", row.targets.join(", ")));
            }
            for link in &row.paths {
                text.push_str(&format!("path: {}\n", link.path));
            }
            for reason in &row.stale {
                text.push_str(&format!("stale: {reason}\n"));
            }
            text.push('\n');
            text.push_str(row.body.as_deref().unwrap_or_default());
        } else {
            text.push_str(&format!(
                "{}  {:<10}  {}{stale}\n",
                row.id,
                row.kind.as_str(),
                row.title
            ));
        }
    }
    if let Some(cursor) = &page.next_cursor {
        text.push_str(&format!(
            "… {} in all; more with --cursor {cursor}\n",
            page.total
        ));
    }
    if !text.is_empty() {
        output::text(&text)?;
    }
    Ok(Outcome::Success)
}

fn add(store: &Store, args: AddArgs) -> Result<Outcome> {
    let body = body(args.body, args.file.as_deref())?.unwrap_or_default();
    let draft = Draft {
        title: args.title,
        kind: kind(&args.kind)?,
        tags: args.tags,
        targets: args.targets,
        paths: workspace_paths(store.root(), &args.paths)?,
        body,
    };
    let entry = store.create(draft).context("cannot write the entry")?;
    if args.json {
        output::json(&entry)?;
    } else {
        output::text(&entry.id)?;
    }
    Ok(Outcome::Success)
}

fn edit(store: &Store, args: EditArgs) -> Result<Outcome> {
    let body = body(args.body, args.file.as_deref())?;
    let paths = match &args.paths {
        Some(paths) => Some(workspace_paths(store.root(), paths)?),
        None => None,
    };
    let change = Change {
        title: args.title,
        kind: args.kind.as_deref().map(kind).transpose()?,
        tags: args.tags,
        targets: args.targets,
        paths,
        body,
    };
    let (change, revision) = if args.editor || (change.is_empty() && std::io::stdin().is_terminal())
    {
        match in_editor(store, &args.id)? {
            Some(edited) => edited,
            None => {
                output::text("no change")?;
                return Ok(Outcome::Success);
            }
        }
    } else if change.is_empty() {
        bail!(
            "nothing to change: give --title, --kind, --tag, --target, --path, --body or --file, \
             or run it on a terminal to open $EDITOR"
        );
    } else {
        (change, args.revision)
    };
    match store.update(&args.id, revision, change) {
        Ok(entry) if args.json => output::json(&entry)?,
        Ok(entry) => output::text(&format!("{} is at revision {}", entry.id, entry.revision))?,
        Err(error) => return refused(error),
    }
    Ok(Outcome::Success)
}

/// Lets the person edit the whole file in `$EDITOR` (no lock is held meanwhile); returns the
/// change and the revision it was made from, or `None` when nothing changed.
fn in_editor(store: &Store, id: &str) -> Result<Option<(Change, Option<u64>)>> {
    let before = store.get(id)?;
    let scratch = std::env::temp_dir().join(format!("once-memory-{}-{id}.md", std::process::id()));
    std::fs::write(&scratch, front_matter::render(&before))
        .with_context(|| format!("cannot write `{}`", scratch.display()))?;
    let editor = std::env::var("VISUAL")
        .or_else(|_| std::env::var("EDITOR"))
        .unwrap_or_else(|_| "vi".into());
    // Through the shell, so an EDITOR with arguments (`code --wait`) works.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(&scratch)
        .status()
        .with_context(|| format!("cannot start the editor `{editor}`"))?;
    if !status.success() {
        bail!("the editor `{editor}` failed ({status}); the entry is unchanged");
    }
    let text = std::fs::read_to_string(&scratch)
        .with_context(|| format!("cannot read `{}`", scratch.display()))?;
    let after = front_matter::parse(&text, id).map_err(|problem| {
        anyhow::anyhow!(
            "{}:{}: {}; the entry is unchanged, your text is kept there",
            scratch.display(),
            problem.line,
            problem.message
        )
    })?;
    let _ = std::fs::remove_file(&scratch);
    let change = Change {
        title: (after.title != before.title).then_some(after.title),
        kind: (after.kind != before.kind).then_some(after.kind),
        tags: (after.tags != before.tags).then_some(after.tags),
        targets: (after.targets != before.targets).then_some(after.targets),
        paths: (after.paths != before.paths)
            .then(|| after.paths.into_iter().map(|l| l.path).collect()),
        body: (after.body != before.body).then_some(after.body),
    };
    Ok((!change.is_empty()).then_some((change, Some(before.revision))))
}

/// A stale revision is not a crash: say so, and show the current text so nothing is lost.
fn refused(error: once_memory::Error) -> Result<Outcome> {
    match error {
        once_memory::Error::StaleRevision { expected, current } => {
            eprintln!(
                "error: entry `{}` is at revision {}, not {expected}: it changed since you read it; \
                 nothing was written. Merge your change into the current text below and pass \
                 --revision {}\n\n{}",
                current.id,
                current.revision,
                current.revision,
                front_matter::render(&current)
            );
            Ok(Outcome::Failure)
        }
        other => {
            eprintln!("error: {other}");
            Ok(Outcome::Failure)
        }
    }
}

fn check(store: &Store, json: bool) -> Result<Outcome> {
    let target_exists = graph_targets(store.root());
    let report = once_memory::check(store, &target_exists).context("cannot read project memory")?;
    let clean = report.stale.is_empty() && report.broken.is_empty();
    if json {
        output::json(&report)?;
    } else {
        let mut text = String::new();
        for entry in &report.stale {
            text.push_str(&format!("{}  {}\n", entry.id, entry.title));
            for reason in &entry.stale {
                text.push_str(&format!("    stale: {reason}\n"));
            }
        }
        for broken in &report.broken {
            text.push_str(&format!("{broken}\n"));
        }
        if clean {
            text.push_str("every entry is fresh\n");
        }
        output::text(&text)?;
    }
    Ok(if clean {
        Outcome::Success
    } else {
        Outcome::Failure
    })
}

/// The body from `--body`, or `--file PATH` (`-` for stdin).
fn body(text: Option<String>, file: Option<&Path>) -> Result<Option<String>> {
    match (text, file) {
        (Some(text), _) => Ok(Some(text)),
        (None, Some(path)) if path == Path::new("-") => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("cannot read the body from stdin")?;
            Ok(Some(text))
        }
        (None, Some(path)) => std::fs::read_to_string(path)
            .map(Some)
            .with_context(|| format!("cannot read the body from `{}`", path.display())),
        (None, None) => Ok(None),
    }
}

/// `--path` values made relative to the workspace root, resolved as `once query affected
/// --files` resolves them: from the current folder when the file is there, else from the root,
/// so a path copied from either works. One outside the workspace is a wrong command line.
fn workspace_paths(root: &Path, paths: &[String]) -> Result<Vec<String>> {
    paths
        .iter()
        .map(
            |path| match super::affected::resolve(root, Path::new(path)) {
                Ok(relative) => Ok(relative),
                Err(super::affected::Refusal::Invalid(message)) => Err(Usage(message).into()),
                Err(super::affected::Refusal::Failed(message)) => Err(anyhow::anyhow!(message)),
            },
        )
        .collect()
}
