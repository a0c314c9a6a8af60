//! Persistent code evaluators: one per target, kept warm between evaluations, with deadlines
//! that can never wedge a target.
//!
//! This crate knows nothing about manifests, the graph or MCP; it must never depend on
//! `once-graph` or `once-mcp`, never print, and never install signal handlers. The caller turns
//! a target's manifest entry into an [`EvaluatorSpec`] and hands it in with every evaluation.
//!
//! # Theory of operation
//!
//! [`Evaluators`] holds one slot per target. The first [`Evaluators::eval`] on a target starts
//! its evaluator and proves it *ready* by a trivial evaluation (`1` must come back as `1`);
//! later evaluations reuse it, so variables, imports and definitions persist.
//!
//! For Python and Node.js the evaluator is a small adapter program embedded in this crate
//! (`adapters/`), run with `python3 -c` or `node -e` as the leader of a new process group.
//! Requests and replies are JSON lines on a socket pair at file descriptor 3 (on Windows, which
//! cannot pass it, a loopback connection the adapter opens with a secret token); the code's prints
//! are captured per evaluation inside the adapter, and whatever reaches descriptors 1 and 2
//! anyway (a subprocess's output) is cut per evaluation at a marker the adapter writes before
//! each reply. Processes are forked from one launcher thread, because the death signal that
//! kills them if `once` dies is tied to the forking thread (see `launcher.rs`). For nREPL the
//! evaluator is a session on a server someone else started, found through its port file.
//!
//! Each evaluation is a small state machine, driven by one channel per target that carries
//! replies, the end of the evaluator's channel, the caller's [`Interrupt`] and `stop`:
//!
//! ```text
//!   running ──deadline / interrupt──► interrupting (SIGINT to the group, nREPL `interrupt`)
//!      │                                   │ ──grace──► killed: group SIGKILL, fresh start,
//!      │                                   │            result says state was lost
//!      └──── reply ────────────────────────┴──► done (ok, error, timed_out, cancelled)
//!   any state ── channel closed ──► died (state lost; the next evaluation starts fresh)
//!   any state ── stop ──► stopped
//! ```
//!
//! One call evaluates on a target at a time. A second call while one runs is answered at once
//! with [`Error::Busy`], saying since when the evaluator is held; it never waits silently.
//! Every call, answered or refused, goes into the target's transcript
//! ([`Evaluators::transcripts`]): the last [`ENTRIES`] calls, code cut at [`CODE_BYTES`] and
//! value, error and output at [`TEXT_BYTES`] each, in memory only.
//!
//! An evaluator that died between evaluations (killed from outside, crashed) is noticed when
//! the next evaluation starts (its channel closed, or `waitid` says it exited); a fresh one is
//! started and the result says that state was lost. A live evaluator whose spec changed is
//! replaced the same way.
//!
//! [`Evaluators::new`] registers them with the `once-exec` runtime registry, so
//! [`once_exec::Registry::stop_all`] kills every evaluator's group, wakes every evaluation in
//! flight (which returns `stopped`), reaps, and refuses new ones.
//!
//! # Limits
//!
//! A process that leaves the evaluator's group (`setsid`) escapes its group signals. An nREPL
//! server is not ours: when it ignores an interrupt, `once` can only close its session and open
//! another; the code may go on running in the server.
//!
//! On Windows an evaluator runs in a job object (`once_exec::spawn_contained`): nothing it starts
//! outlives it or `once`. No interrupt reaches the interpreter there (it has no console to send
//! a Ctrl-C to), so a deadline or a cancel kills the evaluator after its grace, and its state is
//! lost.

mod error;
mod evaluation;
mod evaluators;
mod event;
mod group;
mod interrupt;
mod launcher;
#[cfg(any(windows, test))]
mod loopback;
mod nrepl;
mod process;
mod reply;
mod slot;
mod spec;
mod stray;
mod transcript;

pub use error::Error;
pub use evaluation::{Evaluation, Status};
pub use evaluators::Evaluators;
pub use interrupt::Interrupt;
pub use nrepl::DEFAULT_PORT_FILE;
pub use spec::{DEFAULT_GRACE, DEFAULT_START_TIMEOUT, EvaluatorSpec, Language, OUTPUT_CAP};
pub use transcript::{
    CODE_BYTES, ENTRIES, EntryOutcome, EvaluatorTranscript, TEXT_BYTES, TranscriptEntry,
};
