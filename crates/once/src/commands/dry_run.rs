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
        workspace.execution_settings(),
        &args.remote.flags(),
        &env,
    ) {
        Ok(config) => config.is_some(),
        Err(error) => {
            eprintln!("error: {error}");
            return Ok(Outcome::Invalid);
        }
    };
    let cache = once_run::Cache::configured(workspace.root(), workspace.cache_settings());
    let preview = once_run::preview(
        plan,
        &cache,
        PreviewOptions {
            force: args.force,
            remote,
        },
    );
    if args.json && args.explain {
        let explained = once_run::explain(plan, &cache).context("cannot compute the keys")?;
        output::json(&with_explanations(&preview, &explained)?)
            .context("cannot print the preview")?;
    } else if args.json {
        output::json(&preview).context("cannot print the preview")?;
    } else {
        output::text(&text(&preview)).context("cannot print the preview")?;
    }
    Ok(Outcome::Success)
}

/// The preview with each action's explanation beside it (`--dry-run --explain --json`): the key
/// it was recorded under last, what changed since, and the verdict in words; the parts
/// themselves are `once query key ACTION --json`'s.
fn with_explanations(
    preview: &Preview,
    explained: &[once_run::Explanation],
) -> Result<serde_json::Value> {
    let mut value = serde_json::to_value(preview).context("cannot encode the preview")?;
    if let Some(actions) = value.get_mut("actions").and_then(|a| a.as_array_mut()) {
        for (action, explanation) in actions.iter_mut().zip(explained) {
            let mut brief = serde_json::json!({
                "key": explanation.key,
                "entry": explanation.entry,
                "changes": explanation.changes,
                "verdict": explanation.verdict,
            });
            if let Some(last) = &explanation.last_key {
                brief["last_key"] = serde_json::json!(last);
            }
            if let Some(object) = action.as_object_mut() {
                object.insert("explanation".to_owned(), brief);
            }
        }
    }
    Ok(value)
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
