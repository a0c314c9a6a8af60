//! `once run --dry-run`: the plan of a run in order, each action with what the run would do
//! with it (replay it from the local cache, or run it and why), as text or `--json`.
//!
//! It must never run an action, create a run folder, write to the cache nor call a remote cache:
//! a configured remote cache is only resolved, to say that a local miss would ask it.

use anyhow::{Context, Result};
use once_run::{Plan, Preview, PreviewAction, PreviewOptions, Reason, Verdict};

use crate::cli::RunArgs;
use crate::exit::Outcome;
use crate::{output, render};

pub fn show(workspace: &once_graph::Workspace, plan: &Plan, args: &RunArgs) -> Result<Outcome> {
    let env = |name: &str| std::env::var(name).ok();
    let remote = match once_run::RemoteConfig::resolve(
        workspace.cache_settings(),
        &args.remote.flags(),
        &env,
    ) {
        Ok(config) => config.is_some(),
        Err(error) => {
            eprintln!("error: {error}");
            return Ok(Outcome::Invalid);
        }
    };
    let cache = once_run::Cache::new(workspace.root());
    let preview = once_run::preview(
        plan,
        &cache,
        PreviewOptions {
            force: args.force,
            remote,
        },
    );
    if args.json {
        output::json(&preview).context("cannot print the preview")?;
    } else {
        output::text(&text(&preview)).context("cannot print the preview")?;
    }
    Ok(Outcome::Success)
}

/// One line per action, in plan order, under a line of counts.
fn text(preview: &Preview) -> String {
    let mut out = format!(
        "dry run: {}, {} cached, {} would run\n",
        render::count(preview.actions.len(), "action"),
        preview.cached,
        preview.run,
    );
    let width = preview
        .actions
        .iter()
        .map(|a| a.action.len())
        .max()
        .unwrap_or(0);
    for action in &preview.actions {
        let verdict = match action.verdict {
            Verdict::Cached => "cached",
            Verdict::Run => "run   ",
        };
        let key = action.key.as_deref().map_or("", |k| &k[..k.len().min(12)]);
        out.push_str(&format!(
            "  {verdict}  {:<width$}  {key:<12}  {}\n",
            action.action,
            why(action)
        ));
    }
    out
}

/// Why an action would run, in words; empty for a cached one.
fn why(action: &PreviewAction) -> String {
    let names = || {
        action
            .because
            .iter()
            .map(|name| format!("`{name}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match action.reason {
        None => String::new(),
        Some(Reason::NoEntry) => "no cache entry for its key".to_owned(),
        Some(Reason::AskRemote) => {
            "no local cache entry: would ask the remote cache, then run on a miss".to_owned()
        }
        Some(Reason::CacheFalse) => "`cache = false`".to_owned(),
        Some(Reason::Persistent) => "persistent: never replayed".to_owned(),
        Some(Reason::DependsOnUncached) => format!("depends on {}, never cached", names()),
        Some(Reason::DependsOnRun) => format!("depends on {}, which would run", names()),
        Some(Reason::Forced) => "`--force`".to_owned(),
        Some(Reason::NoKey) => format!("its key cannot be computed: {}", action.because.join("; ")),
    }
}
