//! A run seen before it happens (`once run --dry-run`): the plan in order and, for each action,
//! whether the local cache would replay it or it would run, and why.
//!
//! Keys are computed as a run computes them ([`crate::keyer`]), from the same file-hash cache,
//! so a preview and the run that follows agree on every key. A preview must never run anything
//! nor write anything: no run folder, no cache entry, no lock, no saved file hashes, and no call
//! to a remote cache (a local miss that a remote cache could answer is said so, not asked).

use serde::Serialize;

use crate::cache::Cache;
use crate::environ::Environ;
use crate::keyer::Keyer;
use crate::plan::{Plan, Step};

/// What a preview is asked.
#[derive(Debug, Clone, Copy, Default)]
pub struct PreviewOptions {
    /// The run would be forced (`--force`): every action runs.
    pub force: bool,
    /// A remote cache is configured: a local miss would ask it before running.
    pub remote: bool,
}

/// What a run would do with one action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The local cache has its result: it would be replayed.
    Cached,
    /// It would run (after asking the remote cache, when `reason` says so).
    Run,
}

/// Why an action would run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The local cache has no entry for its key.
    NoEntry,
    /// The local cache has no entry, and the remote cache would be asked first.
    AskRemote,
    /// Its capability says `cache = false`.
    CacheFalse,
    /// It is persistent (a server): never replayed.
    Persistent,
    /// It depends on an action that is never cached, so it is never cached either.
    DependsOnUncached,
    /// It depends on an action that would run, and has no entry of its own.
    DependsOnRun,
    /// The run is forced.
    Forced,
    /// Its key cannot be computed (an input that cannot be read): the run would fail it.
    NoKey,
}

/// One action of a preview, in plan order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PreviewAction {
    pub action: String,
    /// The command as it would run.
    pub command: String,
    /// The key the run would look up (hex); absent when it cannot be computed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    pub verdict: Verdict,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
    /// The dependencies the reason names (`depends_on_run`, `depends_on_uncached`), or why the
    /// key could not be computed (`no_key`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub because: Vec<String>,
}

/// The plan in order, each action with its verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Preview {
    pub actions: Vec<PreviewAction>,
    /// How many would be replayed from the local cache.
    pub cached: usize,
    /// How many would run (or ask the remote cache first).
    pub run: usize,
}

/// What running `plan` now would do, action by action, without running or writing anything.
pub fn preview(plan: &Plan, cache: &Cache, options: PreviewOptions) -> Preview {
    let hashes = cache.file_hashes();
    let environ = Environ::new();
    let keyer = Keyer::new(plan, &hashes, &environ);
    let mut buffer = vec![0u8; 64 * 1024];
    let mut keys = Vec::with_capacity(plan.steps.len());
    let mut runs = Vec::with_capacity(plan.steps.len());
    let mut actions = Vec::with_capacity(plan.steps.len());
    // Steps are in topological order: each dependency's key and verdict are known first.
    for step in &plan.steps {
        let dep_keys: Option<Vec<_>> = step.deps.iter().map(|&d| keys[d]).collect();
        let key = match dep_keys {
            Some(dep_keys) => keyer
                .key(step, &dep_keys, &mut buffer)
                .map_err(|e| e.to_string()),
            None => Err("a dependency's key cannot be computed".to_owned()),
        };
        let (verdict, reason, because) = match &key {
            Err(message) => (Verdict::Run, Some(Reason::NoKey), vec![message.clone()]),
            Ok(key) => judge(plan, step, &runs, options, cache.lookup(key).is_some()),
        };
        keys.push(key.as_ref().ok().copied());
        runs.push(verdict == Verdict::Run);
        actions.push(PreviewAction {
            action: step.action.clone(),
            command: step.command.clone(),
            key: key.ok().map(|k| k.to_hex()),
            verdict,
            reason,
            because,
        });
    }
    // Deliberately not `hashes.save()`: a preview leaves `.once/cache/files` as it found it.
    drop(hashes);
    let cached = actions
        .iter()
        .filter(|a| a.verdict == Verdict::Cached)
        .count();
    Preview {
        run: actions.len() - cached,
        cached,
        actions,
    }
}

/// The verdict on `step`, given which earlier steps would run and whether its key has an entry.
fn judge(
    plan: &Plan,
    step: &Step,
    runs: &[bool],
    options: PreviewOptions,
    has_entry: bool,
) -> (Verdict, Option<Reason>, Vec<String>) {
    let names = |pick: &dyn Fn(usize) -> bool| -> Vec<String> {
        step.deps
            .iter()
            .copied()
            .filter(|&d| pick(d))
            .map(|d| plan.steps[d].action.clone())
            .collect()
    };
    if options.force {
        return (Verdict::Run, Some(Reason::Forced), Vec::new());
    }
    if step.persistent {
        return (Verdict::Run, Some(Reason::Persistent), Vec::new());
    }
    if !step.cache {
        // The plan clears `cache` for a step whose dependency is never cached; otherwise the
        // capability itself said `cache = false`.
        let uncached = names(&|d| !plan.steps[d].cache);
        return if uncached.is_empty() {
            (Verdict::Run, Some(Reason::CacheFalse), Vec::new())
        } else {
            (Verdict::Run, Some(Reason::DependsOnUncached), uncached)
        };
    }
    if has_entry {
        return (Verdict::Cached, None, Vec::new());
    }
    let running = names(&|d| runs[d]);
    if !running.is_empty() {
        return (Verdict::Run, Some(Reason::DependsOnRun), running);
    }
    let reason = if options.remote {
        Reason::AskRemote
    } else {
        Reason::NoEntry
    };
    (Verdict::Run, Some(reason), Vec::new())
}
