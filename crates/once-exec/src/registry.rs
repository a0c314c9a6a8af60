//! The registry of everything `once` must stop before it exits: the process group of every run
//! in flight, and other long-lived [`Runtime`]s (code evaluators, servers) that come later.
//!
//! [`Registry::stop_all`] is meant to be called from the binary's signal thread while runs are in
//! flight, so it takes only short locks and never waits for a run while holding one. The
//! registry must never reap or wait for a process itself: each run owns its leader and
//! retires its group id before reaping it, so a group id signalled here is never a reused pid;
//! the run stays registered until its group is gone, so `stop_all` waits for the last member.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::contain::Containment;
use crate::error::Error;
use crate::group;
use crate::wake::Wake;

/// How long `stop_all` waits for runs to notice their SIGKILL and deregister.
const KILL_WAIT: Duration = Duration::from_secs(5);

/// Something long-lived that must be stopped before `once` exits.
pub trait Runtime: Send + Sync {
    /// Stops the runtime and returns when it is stopped, within a bound of its own.
    fn stop(&self);
}

/// The live process groups and runtimes; clones share one registry.
#[derive(Clone, Default)]
pub struct Registry {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    state: Mutex<State>,
    /// Notified whenever an entry goes away.
    changed: Condvar,
}

#[derive(Default)]
struct State {
    shutting_down: bool,
    next_id: u64,
    groups: BTreeMap<u64, Group>,
    runtimes: BTreeMap<u64, Arc<dyn Runtime>>,
}

/// A run in flight. Its group id is unknown between admission and spawn.
struct Group {
    pgid: Option<i32>,
    waker: Sender<Wake>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("Registry")
            .field("shutting_down", &state.shutting_down)
            .field(
                "groups",
                &state
                    .groups
                    .values()
                    .filter_map(|group| group.pgid)
                    .collect::<Vec<_>>(),
            )
            .field("runtimes", &state.runtimes.len())
            .finish()
    }
}

impl Registry {
    pub fn new() -> Self {
        Registry::default()
    }

    /// Registers a runtime until the returned guard drops; refused after [`Registry::stop_all`].
    pub fn register(&self, runtime: Arc<dyn Runtime>) -> Result<Registration, Error> {
        let mut state = self.lock();
        if state.shutting_down {
            return Err(Error::ShuttingDown);
        }
        let id = state.take_id();
        state.runtimes.insert(id, runtime);
        Ok(Registration {
            registry: self.clone(),
            id,
        })
    }

    /// Admits a run before it spawns, so a spawn racing with `stop_all` is either refused here
    /// or woken through `waker`.
    pub(crate) fn admit(&self, waker: Sender<Wake>) -> Result<Registration, Error> {
        let mut state = self.lock();
        if state.shutting_down {
            return Err(Error::ShuttingDown);
        }
        let id = state.take_id();
        state.groups.insert(id, Group { pgid: None, waker });
        Ok(Registration {
            registry: self.clone(),
            id,
        })
    }

    /// The ids of the process groups of the runs in flight.
    pub fn live_groups(&self) -> Vec<i32> {
        self.lock()
            .groups
            .values()
            .filter_map(|group| group.pgid)
            .collect()
    }

    pub fn is_shutting_down(&self) -> bool {
        self.lock().shutting_down
    }

    /// Stops everything and refuses new work: wakes every run (which then returns
    /// [`Status::Cancelled`](crate::Status)), sends SIGTERM to every group, stops every runtime,
    /// waits up to `grace` for the groups to go, and sends SIGKILL to the rest. Idempotent.
    pub fn stop_all(&self, grace: Duration) {
        let runtimes: Vec<Arc<dyn Runtime>> = {
            let mut state = self.lock();
            state.shutting_down = true;
            for group in state.groups.values() {
                let _ = group.waker.send(Wake::Stopped);
                if let Some(pgid) = group.pgid {
                    group::terminate(pgid);
                }
            }
            state.runtimes.values().cloned().collect()
        };
        tracing::debug!(runtimes = runtimes.len(), "stopping everything");
        // Outside the lock: a runtime may drop its registration while stopping.
        for runtime in runtimes {
            runtime.stop();
        }
        if self.wait_for_no_groups(grace) {
            return;
        }
        for group in self.lock().groups.values() {
            if let Some(pgid) = group.pgid {
                Containment::current().kill(pgid);
            }
        }
        if !self.wait_for_no_groups(KILL_WAIT) {
            tracing::warn!(groups = ?self.live_groups(), "process groups still registered after SIGKILL");
        }
    }

    /// True if every run deregistered within `timeout`.
    fn wait_for_no_groups(&self, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        let mut state = self.lock();
        while !state.groups.is_empty() {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            state = self
                .inner
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every update is a single insert, remove or flag; a panic cannot leave one half-done.
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl State {
    fn take_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }
}

/// Keeps a runtime or a run registered; deregisters on drop.
#[derive(Debug)]
pub struct Registration {
    registry: Registry,
    id: u64,
}

impl Registration {
    /// Records the group of an admitted run, now that it exists. If `stop_all` began while the
    /// run was spawning, the group gets SIGKILL at once: it has done no work worth a grace, and
    /// `stop_all` may already be past its own SIGKILL pass, which could not address it.
    pub(crate) fn set_group(&self, pgid: i32) {
        let mut state = self.registry.lock();
        let shutting_down = state.shutting_down;
        if let Some(group) = state.groups.get_mut(&self.id) {
            group.pgid = Some(pgid);
            if shutting_down {
                Containment::current().kill(pgid);
            }
        }
    }
}

impl Registration {
    /// Forgets the group id while the run is still registered: after this, `stop_all` no longer
    /// signals it (its leader is about to be reaped, and the id could then name someone else),
    /// but still waits for the run to finish with what is left of its group.
    pub(crate) fn retire_group(&self) {
        if let Some(group) = self.registry.lock().groups.get_mut(&self.id) {
            group.pgid = None;
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut state = self.registry.lock();
        state.groups.remove(&self.id);
        state.runtimes.remove(&self.id);
        self.registry.inner.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;

    use super::*;

    #[derive(Default)]
    struct Counter(AtomicUsize);

    impl Runtime for Counter {
        fn stop(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn stop_all_stops_runtimes_wakes_runs_and_refuses_new_work() {
        let registry = Registry::new();
        let counter = Arc::new(Counter::default());
        let runtime = registry.register(counter.clone()).unwrap();
        let dropped = registry.register(counter.clone()).unwrap();
        drop(dropped);
        let (tx, rx) = mpsc::channel();
        let run = registry.admit(tx.clone()).unwrap();
        // The run deregisters as soon as it is woken, like a real run whose group is gone.
        let waker = std::thread::spawn(move || {
            assert!(matches!(
                rx.recv_timeout(Duration::from_secs(5)),
                Ok(Wake::Stopped)
            ));
            drop(run);
        });
        registry.stop_all(Duration::from_secs(5));
        waker.join().unwrap();
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        assert!(registry.live_groups().is_empty());
        assert!(matches!(registry.admit(tx), Err(Error::ShuttingDown)));
        assert!(matches!(
            registry.register(counter.clone()),
            Err(Error::ShuttingDown)
        ));
        registry.stop_all(Duration::ZERO);
        assert_eq!(counter.0.load(Ordering::SeqCst), 2);
        drop(runtime);
    }
}
