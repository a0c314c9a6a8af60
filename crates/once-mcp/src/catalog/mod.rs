//! The tools `once mcp` offers, one module per group, and what they share: the live workspace
//! and the instructions that teach an agent the workflow across them.
//!
//! A tool module only adapts: it turns arguments into a library call and returns the library's
//! value unchanged. It must never compute a value the CLI would compute differently.

mod affected;
mod changes;
mod eval;
mod examples;
mod memory;
mod query;
mod run;
mod tail;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use once_graph::Workspace;

use crate::tool::Gates;

pub use affected::affected_tools;
pub use changes::change_tools;
pub use eval::{DEFAULT_EVAL_DEADLINE, EvalPolicy, eval_tools, evaluator_spec};
pub use examples::example_tools;
pub use memory::memory_tools;
pub use query::{Overview, query_tools};
pub use run::run_tools;

/// The whole catalog, in the order `tools/list` gives it: every tool `once mcp` and `once serve`
/// offer (the window adds its own after these). The server lists only those whose gate is open,
/// so callers pass every tool and let the gates decide. Processes the tools start are registered
/// in `runtime`; `evaluators` are owned by the caller so they outlive one connection.
pub fn catalog(
    live: &Arc<LiveWorkspace>,
    overview: Overview,
    runtime: &once_exec::Registry,
    evaluators: &Arc<once_eval::Evaluators>,
    eval_policy: EvalPolicy,
) -> Vec<crate::tool::Tool> {
    let mut tools = query_tools(live, overview);
    tools.extend(affected_tools(live, runtime));
    tools.extend(memory_tools(live));
    tools.extend(change_tools(live));
    tools.extend(example_tools(live));
    tools.extend(run_tools(live, runtime));
    tools.extend(eval_tools(live, evaluators, eval_policy));
    tools
}

/// A workspace that reloads itself when a manifest's content changes.
#[derive(Debug)]
pub struct LiveWorkspace {
    workspace: RwLock<Workspace>,
    /// How many times it was reloaded: a watcher compares it instead of the whole graph.
    generation: AtomicU64,
}

impl LiveWorkspace {
    pub fn new(workspace: Workspace) -> Self {
        LiveWorkspace {
            workspace: RwLock::new(workspace),
            generation: AtomicU64::new(0),
        }
    }

    /// Changes every time the graph is reloaded.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Reloads the workspace if any manifest changed since it was read. Called before each
    /// request, so no answer is ever computed from a stale graph.
    pub fn refresh(&self) {
        if !self.read().is_stale() {
            return;
        }
        let mut workspace = self
            .workspace
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        match workspace.reload_if_stale() {
            Ok(true) => {
                self.generation.fetch_add(1, Ordering::AcqRel);
                tracing::info!(
                    "manifest changed: graph reloaded ({} diagnostics)",
                    workspace.diagnostics().len()
                );
            }
            Ok(false) => {}
            // The old graph stays: a workspace that cannot be read now (a folder being
            // replaced, say) is better answered from the last good state than not at all.
            Err(error) => tracing::warn!("cannot reload the workspace: {error}"),
        }
    }

    /// The current workspace. A poisoned lock only means a query panicked while reading; the
    /// workspace itself was not being changed, so it is safe to go on.
    pub fn read(&self) -> RwLockReadGuard<'_, Workspace> {
        self.workspace
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The server's instructions: how an agent should use the tools it actually has.
pub fn instructions(root: &str, gates: Gates) -> String {
    let mut text = format!(
        "once serves the typed build graph of the workspace at {root}. Targets are parts of the \
         workspace (a crate, a package, a folder); each has a kind, which types its fields and \
         gives it capabilities such as build, test and lint; an action is one capability of one \
         target, written `target:capability`.\n\
         \n\
         Workflow: call once_query_workspace first (counts, diagnostics, first targets). Narrow \
         down with once_query_targets (filters: name glob, kind, tag, capability), read one \
         target with once_query_target, and walk dependencies with once_query_graph (modes deps, \
         dependents, path, order). After a change, once_query_affected says which actions \
         (`capability: \"test\"`: which tests) must run again and why. Before editing once.toml, \
         read once_query_schema.\n\
         \n\
         Paging: lists come a page at a time; when an answer has `next_cursor`, pass it back as \
         `cursor` with the same filters. Ask for details only when you need them.\n\
         \n\
         Freshness: the graph reloads by itself when a manifest changes; there is nothing to \
         refresh.\n\
         \n\
         Project memory holds notes people and agents wrote about this workspace. Before you \
         change an area, search it with once_query_memory (`query`, or filter by `target` or \
         `path`) and read the entries that matter (`id`); an entry with a non-empty `stale` \
         list may no longer be true. Search before you write: update an existing entry rather \
         than adding a duplicate. To update, pass the `revision` you last read to \
         once_remember; a refusal carries the current text, so merge and call again.\n\
         \n\
         To change files, propose a change set with once_change_set_propose: it saves your edits \
         (each replacement or deletion with the hash of the file you read as its `base`: \
         `sha256:<hex>` from `sha256sum FILE`, or once_query_hashes, which gives SHA-256 and \
         BLAKE3 for up to 100 files) and applies nothing; the person reviews it with `once \
         changes show ID` and applies or rejects it. Tell them the id it returns.\n"
    );
    text.push_str(
        "\nOutcomes: every tool that acts (once_run, once_cancel, once_eval, once_eval_reset, \
         once_change_set_propose, once_materialize_example, once_remember, once_forget) answers \
         `outcome` and a one-line `message`, with its value under `result`: done (it did what \
         was asked), refused (a gate, a stale revision, a path or an argument said no: fix and \
         call again, or ask the person), busy (in use: the message says by whom; call again \
         later), problem (it ran and failed: read the result), none (there was nothing to do). \
         The text starts with the same word.\n",
    );
    text.push_str(
        "\nRuns: once_query_runs lists recent runs (status, duration, cached or not, exit \
         codes); with `run_id` it returns a run's report, and with `run_id` and `action` a page \
         of that action's log (`offset`, `limit`, then `next_offset`). Reports never carry \
         whole logs: read them here.\n",
    );
    text.push_str(if gates.allow_run {
        "\nRunning capabilities is enabled. once_run runs `target:capability` after its \
         dependencies; pass typed `params` as once_query_target shows them. An action whose \
         inputs, command, parameters and dependencies are unchanged is replayed from the cache \
         (`cached: true`), so running again is cheap. once_run waits up to `wait_seconds` \
         (default 300) for the report; for a long build pass a small value, get \
         `{run_id, status: \"running\"}`, and poll once_query_runs with that run_id. Stop a \
         run with once_cancel, or cancel the once_run request itself. A failed action's report \
         holds the tail of its log; read the rest with once_query_runs.\n\
         \n\
         Targets that declare an evaluator (once_query_target shows `evaluator`) run code with \
         once_eval in a persistent Python, Node.js or nREPL evaluator: definitions stay for the \
         next call. Give a `deadline` that fits; an interrupted evaluation keeps its state, and \
         whenever state was lost the result says `state_lost: true` with a `notice`. An \
         evaluator runs one call at a time: another call meanwhile is answered `busy`. \
         once_eval_reset starts a target's evaluator afresh (refused in a `once serve` session \
         unless the person allowed it).\n"
    } else {
        "\nRunning capabilities (once_run, once_cancel) is disabled: the person must add \
         --allow-run to the server's command line in the client configuration.\n"
    });
    text.push_str(if gates.allow_edit {
        "Editing project memory and materializing examples is enabled.\n"
    } else {
        "Editing project memory and materializing examples is disabled: it needs --allow-edit \
         on the server's command line.\n"
    });
    text
}
