//! `once cache stats` and `once cache prune`: the local cache's size and its bound, as text or
//! `--json` (the values `once_run::Cache::stats` and `Cache::prune` compute, unreshaped).
//!
//! Never removes anything but through `Cache::prune`, which leaves what running builds hold.

use std::path::Path;

use anyhow::{Context, Result};

use crate::cli::CacheCommand;
use crate::exit::Outcome;
use crate::output;

pub fn run(workspace: Option<&Path>, command: CacheCommand) -> Result<Outcome> {
    let workspace = super::load(workspace)?;
    let cache = once_run::Cache::configured(workspace.root(), workspace.cache_settings());
    match command {
        CacheCommand::Stats { json } => {
            let stats = cache.stats();
            if json {
                output::json(&stats).context("cannot print the stats")?;
            } else {
                let whose = if stats.shared {
                    " (the main worktree's, shared)"
                } else {
                    ""
                };
                output::text(&format!(
                    "cache: `{}`{whose}\nresults: {}\nobjects: {}\nsize: {} of {}\n",
                    stats.folder.display(),
                    stats.entries,
                    stats.objects,
                    bytes(stats.bytes),
                    bytes(stats.max_size),
                ))
                .context("cannot print the stats")?;
            }
        }
        CacheCommand::Prune { max_size, json } => {
            let pruned = cache.prune(max_size).context("cannot prune the cache")?;
            if json {
                output::json(&pruned).context("cannot print what was pruned")?;
            } else {
                output::text(&format!(
                    "removed {} results and {} objects: {} → {} (bound {})\n",
                    pruned.entries_removed,
                    pruned.objects_removed,
                    bytes(pruned.bytes_before),
                    bytes(pruned.bytes_after),
                    bytes(pruned.max_size),
                ))
                .context("cannot print what was pruned")?;
            }
        }
    }
    Ok(Outcome::Success)
}

/// A size as people read it: `12.3 MiB`.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}
