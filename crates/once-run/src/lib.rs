//! Running the actions of a `once` workspace: what was asked, with which parameters, in which
//! order, which results can be replayed, and where each run is recorded.
//!
//! This crate decides *what* runs; `once-exec` runs each command. It must never print, never
//! install signal handlers, never know about terminals or the MCP protocol, and never start a
//! process except through `once_exec::run`, so every process it causes has a process group, a
//! deadline and a place in the caller's [`Registry`](once_exec::Registry).
//!
//! # Theory of operation
//!
//! A run is a pipeline you can read in the module list:
//!
//! ```text
//! request (TARGET[:CAP], --all CAP, --tag/--name CAP, k=v, -- words) ─► params (typed, checked) ─► plan (actions + deps, topological)
//!     ─► schedule: for each action whose deps succeeded, on a pool of `jobs` threads:
//!            key (BLAKE3 of action, command, params, environ, inputs, dep keys) ─► local hit? restore outputs
//!              └─► miss: remote cache? describe (REAPI Action) ─► remote hit? fetch all, verify, store locally, restore
//!                    └─► miss (or no remote cache): once_exec::run ─► record ─► upload a success (when uploading)
//!     ─► report (RunReport, every action, written to .once/runs/<id>/run.json by the store;
//!                RunSummary, its bounded view, for the CLI's --json and MCP)
//!     ─► query (the recent runs, a page of a run's actions or of an action's log: the one value
//!               of `once query runs` and `once_query_runs`)
//! ```
//!
//! Keys are computed by one `keyer` for a run and for what looks at a run before it happens:
//! `preview` (`once run --dry-run`: each action cached or why it would run) and `explain` (`once
//! query key`: a key's parts, compared with the manifest of parts the last record left in the
//! journal `.once/cache/key-parts`). Neither runs nor writes anything.
//!
//! Everything that can be wrong with a request (an unknown target, a capability it lacks, a
//! parameter of the wrong type) is found while planning, before anything runs. The scheduler is
//! dynamic: an action starts the moment its last dependency succeeds, not when a whole wave is
//! done. The first failure stops new starts (running actions finish) unless `keep_going`; the
//! actions left behind are reported as skipped.
//!
//! The cache follows Bazel's remote cache: an action's result (exit code, duration, tail, output
//! files with their digests) is recorded under its key, and `cas/<digest>` holds the output
//! files' bytes. Results go into packs, a file per run that records any (see `packs.rs`); every
//! object is written to a temporary file in the same folder and renamed into place, and its name
//! is its content's hash, so two processes writing the same object at once write the same bytes
//! and the last rename wins harmlessly. Nothing is synced; instead nothing is trusted unchecked
//! (a result carries the checksum of its key and itself, an object is hashed as it is restored),
//! so a crash costs results, never a wrong one (see `cache.rs`).
//! Before running an action on a miss, a worker takes an exclusive lock on its key's slot of
//! `locks/keys` and
//! looks again: two `once run` on one workspace never run the same action in the same folder at
//! once (their outputs would interleave); the second waits and replays the first one's result.
//! Only successful runs are recorded, and never those of an action that says `cache = false`, is
//! persistent, or depends on one of those: their results are not functions of their inputs. A
//! cache hit takes no lock, nor does a persistent action (a server would hold it while it runs).
//!
//! `describe` spells an action as the Remote Execution API does (a `Command`, a `Directory` tree of
//! its inputs, an `Action`), by paths relative to the workspace root so that clones share digests.
//! A run with a remote cache (`remote`, given in [`Options::remote`]) describes an action only
//! after a local miss, once for both the remote lookup and the upload of its success. A remote hit
//! is downloaded whole and verified (each blob's SHA-256, each path a plain relative one that the
//! action's `outputs` globs match) before it is stored in the local cache and restored from there,
//! so it is never restored in part nor anywhere a local hit could not be. The first failure of the
//! server turns the remote cache off for the rest of the run (one warning); an action that cannot
//! be described just runs without it.
//!
//! The environment part of a key (`environ`) is computed once per run where it can be: our own
//! variables are read once, the keyed subset once per `pass-env` list, and the program a command
//! starts is found on `PATH` once per `PATH` value and name, its content proven unchanged by the
//! same file-hash cache as inputs.
//!
//! A no-op run must cost little more than a `stat` per file, so the key of an action reads no
//! file it has hashed before: `.once/cache/files` maps each input and output file to its
//! `once_fs::Stamp` and digests (BLAKE3, and SHA-256 for `describe`, taken in one read), and a
//! stamp that proves the file unchanged (and was not racily clean when taken) stands for its
//! content. Folders are walked once, reading `.gitignore` files
//! from the listings; the `.gitignore` files above targets are read once per run. A no-op run
//! writes only its `run.json` (renamed into place without an fsync: at the start, at most every
//! 100 ms while it runs, and at the end); a cached action's log is named, not copied. A no-op run
//! also leaves a proof of everything it read (`proof`, `witness`), so the same request made again
//! is answered by one `stat` per path, without loading the workspace or computing a key.
//!
//! A record that says `running` names its owner (pid and start time); whoever reads it through
//! the store after that process is gone records the run `interrupted`, so a run killed with its
//! process never stays `running`.

mod asked;
mod cache;
mod changed;
mod describe;
mod dotenv;
mod environ;
mod error;
mod explain;
mod fetched;
mod file_facts;
mod git;
mod hashes;
mod journal;
mod key;
mod keyer;
mod owner;
mod packs;
mod params;
mod parts;
mod plan;
mod preview;
pub mod proof;
mod prune;
mod query;
mod remote;
mod report;
mod request;
mod schedule;
mod select;
mod store;
mod witness;
mod worktree;

pub use asked::{Asked, TERMINAL};
pub use cache::{ActionResult, Cache, KeyLock, LOG_CAP, OutputFile, Ran};
pub use changed::changed_files;
pub use describe::{Described, describe, describe_all};
pub use error::Error;
pub use explain::{
    Change, DepPart, EnvPart, Explanation, FILES_CAP, FilePart, KeyParts, Rest, UpstreamPart,
    changes, explain,
};
pub use git::GIT_DEADLINE;
pub use key::{Key, hash_file};
pub use params::resolve as resolve_params;
pub use plan::{Joinable, Plan, SourceSet, Step, Upstream, plan};
pub use preview::{Preview, PreviewAction, PreviewOptions, Reason, Verdict, preview};
pub use prune::{CacheStats, DEFAULT_MAX_SIZE, Pruned};
pub use query::{
    QueryRunsError, RunRow, RunsAnswer, RunsList, RunsQuery, query_runs, runs_input_schema,
    runs_output_schema,
};
pub use remote::{
    Engine, ExecutionConfig, ExecutionReport, Remote, RemoteConfig, RemoteFlags, RemoteReport,
};
pub use report::{
    ActionReport, ActionStatus, ActionsPage, Counts, Owner, RunReport, RunStatus, RunSummary,
    SUMMARY_ROWS, SUMMARY_TAILS, summary_schema,
};
pub use request::{Request, Selection, parse_action, parse_param};
pub use schedule::{Event, Options, announce, execute};
pub use store::{LogPage, RunDir, RunStore};
pub use witness::Witness;
