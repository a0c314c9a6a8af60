//! The evaluators of one workspace: at most one per target, registered with the runtime
//! registry so that `stop_all` stops them.
//!
//! An [`Evaluators`] is meant to be owned by whatever lives longest (the `once serve` session,
//! an `once mcp` process, one `once eval` command) and shared by reference. It must never
//! hold the map's lock while an evaluation runs: each target has its own slot and its own lock,
//! so a slow evaluation on one target never delays another.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use once_exec::{Registration, Registry, Runtime};

use crate::error::Error;
use crate::evaluation::Evaluation;
use crate::interrupt::Interrupt;
use crate::launcher::Launcher;
use crate::slot::{Context, Slot};
use crate::spec::EvaluatorSpec;
use crate::transcript::EvaluatorTranscript;

/// Every evaluator of a workspace, keyed by target name.
pub struct Evaluators {
    shared: Arc<Shared>,
    /// Keeps `shared` registered as a runtime until `self` drops.
    _registration: Registration,
}

struct Shared {
    slots: Mutex<HashMap<String, Arc<Slot>>>,
    stopping: AtomicBool,
    launcher: Launcher,
}

impl fmt::Debug for Evaluators {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Evaluators")
            .field("targets", &self.shared.lock().keys().collect::<Vec<_>>())
            .field("stopping", &self.shared.stopping.load(Ordering::SeqCst))
            .finish()
    }
}

impl Evaluators {
    /// Creates the evaluators and registers them with `registry`, so that
    /// [`Registry::stop_all`] stops every one.
    pub fn new(registry: &Registry) -> Result<Evaluators, Error> {
        let shared = Arc::new(Shared {
            slots: Mutex::new(HashMap::new()),
            stopping: AtomicBool::new(false),
            launcher: Launcher::start()?,
        });
        let registration = registry
            .register(Arc::clone(&shared) as Arc<dyn Runtime>)
            .map_err(|_| Error::ShuttingDown)?;
        Ok(Evaluators {
            shared,
            _registration: registration,
        })
    }

    /// Evaluates `code` in `target`'s evaluator, starting it (or a fresh one) when needed.
    ///
    /// Past `deadline` the code is interrupted; past `spec.grace` after that, the evaluator is
    /// killed and a fresh one started. `interrupt` does the same at the caller's request. Only
    /// a failure to provide an evaluator at all is an error: [`Error::Busy`] at once when another
    /// call is evaluating on `target` (the caller never waits behind it), [`Error::Empty`] for
    /// blank code.
    pub fn eval(
        &self,
        target: &str,
        spec: &EvaluatorSpec,
        code: &str,
        deadline: Duration,
        interrupt: &Interrupt,
    ) -> Result<Evaluation, Error> {
        if self.shared.is_stopping() {
            return Err(Error::ShuttingDown);
        }
        let slot = self.shared.slot(target);
        let stopping = || self.shared.is_stopping();
        let cx = Context {
            launcher: &self.shared.launcher,
            stopping: &stopping,
        };
        slot.eval(&cx, spec, code, deadline, interrupt)
    }

    /// Stops `target`'s evaluator, if it has one; the next evaluation starts a fresh one.
    /// Returns whether one was live.
    pub fn reset(&self, target: &str) -> bool {
        let slot = self.shared.lock().get(target).cloned();
        slot.is_some_and(|slot| slot.reset())
    }

    /// The end (at most 2 KB) of what `target`'s evaluation in flight printed so far, or of the
    /// last one; empty when nothing was printed yet. Never waits for the evaluation.
    pub fn output_so_far(&self, target: &str) -> String {
        let slot = self.shared.lock().get(target).cloned();
        slot.map(|slot| slot.output_so_far()).unwrap_or_default()
    }

    /// The process id of `target`'s live Python or Node.js evaluator.
    pub fn pid(&self, target: &str) -> Option<u32> {
        let slot = self.shared.lock().get(target).cloned();
        slot.and_then(|slot| slot.pid())
    }

    /// What each target's evaluator was asked and what came back: one transcript per target
    /// that has or had an evaluator (or was asked for one), sorted by target, each with its last
    /// [`ENTRIES`](crate::ENTRIES) calls, oldest first. Kept in memory only; never
    /// waits for an evaluation in flight.
    pub fn transcripts(&self) -> Vec<EvaluatorTranscript> {
        let slots: Vec<Arc<Slot>> = self.shared.lock().values().cloned().collect();
        let mut transcripts: Vec<EvaluatorTranscript> =
            slots.iter().filter_map(|slot| slot.transcript()).collect();
        transcripts.sort_by(|a, b| a.target.cmp(&b.target));
        transcripts
    }

    /// A number that changes whenever [`Evaluators::transcripts`] would show something new, at
    /// the cost of a few comparisons: for a watcher that looks often.
    pub fn stamp(&self) -> u64 {
        let slots: Vec<Arc<Slot>> = self.shared.lock().values().cloned().collect();
        let mut stamps: Vec<_> = slots.iter().filter_map(|slot| slot.stamp()).collect();
        stamps.sort();
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        std::hash::Hash::hash(&stamps, &mut hasher);
        std::hash::Hasher::finish(&hasher)
    }

    /// Stops every evaluator and refuses new evaluations; what `stop_all` calls. Idempotent.
    pub fn stop(&self) {
        self.shared.stop();
    }
}

impl Drop for Evaluators {
    fn drop(&mut self) {
        self.shared.stop();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Slot>>> {
        // Single inserts only; a panic cannot leave the map half-changed.
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    fn slot(&self, target: &str) -> Arc<Slot> {
        let mut slots = self.lock();
        Arc::clone(
            slots
                .entry(target.to_owned())
                .or_insert_with(|| Arc::new(Slot::new(target))),
        )
    }
}

impl Runtime for Shared {
    fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        let slots: Vec<Arc<Slot>> = self.lock().values().cloned().collect();
        // Kill everything first, without any slot's lock, so an evaluation in flight cannot
        // delay the others; then reap, as each evaluation in flight returns.
        for slot in &slots {
            slot.begin_stop();
        }
        for slot in &slots {
            slot.finish_stop();
        }
    }
}
