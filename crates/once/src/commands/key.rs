//! `once query key ACTION` and `once run --explain`: what an action's key is made of and which
//! parts changed since its last recorded run, as text or `--json` (the value
//! `once_run::explain` computes, unreshaped).
//!
//! Nothing here runs an action or writes a file: explaining reads what a key reads and the
//! manifests runs left in `.once/cache/key-parts`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::{Context, Result};
use once_run::{Explanation, Plan, Request};

use crate::exit::Outcome;
use crate::output;

pub fn run(
    workspace: &once_graph::Workspace,
    action: &str,
    params: &[String],
    json: bool,
) -> Result<Outcome> {
    let mut values = BTreeMap::new();
    for text in params {
        match once_run::parse_param(text) {
            Ok((name, value)) => {
                values.insert(name, value);
            }
            Err(error) => {
                eprintln!("error: {error}");
                return Ok(Outcome::Invalid);
            }
        }
    }
    let request = Request {
        actions: vec![action.to_owned()],
        params: values,
        ..Request::default()
    };
    let plan = match once_run::plan(workspace, &request) {
        Ok(plan) => plan,
        Err(error) if error.is_bad_request() => {
            eprintln!("error: {error}");
            return Ok(Outcome::Invalid);
        }
        Err(error) => return Err(error.into()),
    };
    let cache = once_run::Cache::configured(workspace.root(), workspace.cache_settings());
    let explained = once_run::explain(&plan, &cache).context("cannot compute the key")?;
    // The action asked for is the last one the plan requested; the others are its dependencies.
    let Some(index) = plan.steps.iter().rposition(|step| step.requested) else {
        anyhow::bail!("the plan of `{action}` has no action")
    };
    let explanation = &explained[index];
    if json {
        output::json(explanation).context("cannot print the key")?;
    } else {
        output::text(&text(explanation, true)).context("cannot print the key")?;
    }
    Ok(Outcome::Success)
}

/// `once run --explain`: the explanation of each action of `plan` that would run, on stderr.
pub fn explain_run(workspace: &once_graph::Workspace, plan: &Plan, force: bool) -> Result<()> {
    let cache = once_run::Cache::configured(workspace.root(), workspace.cache_settings());
    let explained = once_run::explain(plan, &cache).context("cannot compute the keys")?;
    let mut out = String::new();
    for (explanation, step) in explained.iter().zip(&plan.steps) {
        let runs = force || !step.cache || !explanation.entry;
        if runs {
            out.push_str(&text(explanation, false));
        }
    }
    if force {
        out.push_str("(`--force`: every action runs whatever its key)\n");
    }
    eprint!("{out}");
    Ok(())
}

/// An explanation in words: the verdict, what changed, and (with `parts`) every part.
fn text(e: &Explanation, parts: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}  key {}", e.action, short(&e.key));
    let _ = writeln!(out, "  {}", e.verdict);
    if let Some(last) = &e.last_key
        && !e.changes.is_empty()
    {
        let _ = writeln!(
            out,
            "  changed since the run that recorded {}:",
            short(last)
        );
        for change in &e.changes {
            let part = change.part.replace('_', " ");
            match &change.name {
                Some(name) => {
                    let _ = writeln!(out, "    {part} `{name}`: {}", change.how);
                }
                None => {
                    let _ = writeln!(out, "    {part}: {}", change.how);
                }
            }
        }
    }
    if !parts {
        return out;
    }
    let p = &e.parts;
    let _ = writeln!(out, "  parts:");
    let _ = writeln!(out, "    version   {}", p.version);
    let _ = writeln!(out, "    command   {}", p.command);
    let folder = if p.folder.is_empty() { "." } else { &p.folder };
    let _ = writeln!(out, "    folder    {folder}");
    let _ = writeln!(out, "    params    {}", p.params);
    for env in &p.env {
        let how = if env.secret {
            "keyed by a hash of its value"
        } else {
            "keyed by its value"
        };
        let _ = writeln!(out, "    env       {} ({how})", env.name);
    }
    let _ = writeln!(
        out,
        "    program   {} {}",
        p.program,
        short(&p.program_digest)
    );
    for output in &p.outputs {
        let _ = writeln!(out, "    output    {output} (never an input)");
    }
    for file in &p.files {
        let _ = writeln!(out, "    file      {} {}", file.path, short(&file.digest));
    }
    if let Some(rest) = &p.files_rest {
        let _ = writeln!(
            out,
            "    files     {} more, digest {}",
            rest.count,
            short(&rest.digest)
        );
    }
    for upstream in &p.upstream {
        let _ = writeln!(
            out,
            "    upstream  {} {}",
            upstream.targets.join(", "),
            short(&upstream.digest)
        );
    }
    for dep in &p.deps {
        let _ = writeln!(out, "    dep       {} {}", dep.action, short(&dep.key));
    }
    out
}

fn short(hex: &str) -> &str {
    &hex[..hex.len().min(12)]
}
