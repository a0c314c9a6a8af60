//! A cancel token: cloneable, fired once, observable by polling, by blocking, and by the runs
//! it was handed to.
//!
//! Firing wakes every run that holds the token through its channel, so a run notices at once
//! instead of polling. The token must never signal processes itself: it only tells runs, and
//! each run stops its own group with its own grace.

use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::wake::Wake;

/// A token that asks runs to stop; clones share one state.
#[derive(Debug, Clone, Default)]
pub struct Cancel {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    state: Mutex<State>,
    fired: Condvar,
}

#[derive(Debug, Default)]
struct State {
    cancelled: bool,
    next_id: u64,
    wakers: Vec<(u64, Sender<Wake>)>,
}

impl Cancel {
    pub fn new() -> Self {
        Cancel::default()
    }

    /// Fires the token; idempotent.
    pub fn cancel(&self) {
        let mut state = self.lock();
        state.cancelled = true;
        for (_, waker) in state.wakers.drain(..) {
            // A run that already finished dropped its receiver; nothing to wake.
            let _ = waker.send(Wake::Cancelled);
        }
        self.inner.fired.notify_all();
    }

    pub fn is_cancelled(&self) -> bool {
        self.lock().cancelled
    }

    /// Blocks until the token fires.
    pub fn wait(&self) {
        let mut state = self.lock();
        while !state.cancelled {
            state = self
                .inner
                .fired
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Blocks until the token fires or `timeout` passes; true if it fired.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        let mut state = self.lock();
        while !state.cancelled {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            state = self
                .inner
                .fired
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }

    /// Sends [`Wake::Cancelled`] on `waker` when the token fires, or at once if it already has.
    /// The subscription ends when the returned guard drops.
    pub(crate) fn subscribe(&self, waker: Sender<Wake>) -> Subscription {
        let mut state = self.lock();
        state.next_id += 1;
        let id = state.next_id;
        if state.cancelled {
            let _ = waker.send(Wake::Cancelled);
        } else {
            state.wakers.push((id, waker));
        }
        Subscription {
            cancel: self.clone(),
            id,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is a flag and a list; a panic elsewhere cannot leave it half-written.
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// Keeps a run subscribed to a [`Cancel`]; unsubscribes on drop.
#[derive(Debug)]
pub(crate) struct Subscription {
    cancel: Cancel,
    id: u64,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.cancel.lock().wakers.retain(|(id, _)| *id != self.id);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::thread;

    use super::*;

    #[test]
    fn firing_wakes_subscribers_waiters_and_late_subscribers() {
        let cancel = Cancel::new();
        let (tx, rx) = mpsc::channel();
        let _subscription = cancel.subscribe(tx.clone());
        let waiter = {
            let cancel = cancel.clone();
            thread::spawn(move || cancel.wait())
        };
        assert!(!cancel.wait_timeout(Duration::from_millis(1)));
        cancel.clone().cancel();
        assert!(matches!(
            rx.recv_timeout(Duration::from_secs(5)),
            Ok(Wake::Cancelled)
        ));
        waiter.join().unwrap();
        assert!(cancel.is_cancelled());
        assert!(cancel.wait_timeout(Duration::ZERO));
        let _late = cancel.subscribe(tx);
        assert!(matches!(
            rx.recv_timeout(Duration::from_secs(5)),
            Ok(Wake::Cancelled)
        ));
    }

    #[test]
    fn a_dropped_subscription_is_forgotten() {
        let cancel = Cancel::new();
        let (tx, _rx) = mpsc::channel();
        drop(cancel.subscribe(tx));
        assert!(cancel.lock().wakers.is_empty());
    }
}
