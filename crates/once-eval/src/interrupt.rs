//! A token with which a caller asks the evaluation it started to stop early (an MCP
//! `notifications/cancelled`, a Ctrl-C at the terminal).
//!
//! Firing it wakes the evaluation through its target's channel, so the evaluation notices at
//! once instead of polling. The token must never signal a process itself: the evaluation sends
//! the interrupt and applies the grace, exactly as for a deadline.

use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::event::Event;

/// Cloneable; clones share one state. Fired once, for one evaluation.
#[derive(Debug, Clone, Default)]
pub struct Interrupt {
    inner: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    fired: bool,
    waker: Option<Sender<Event>>,
}

impl Interrupt {
    pub fn new() -> Interrupt {
        Interrupt::default()
    }

    /// Asks the evaluation to stop; idempotent.
    pub fn fire(&self) {
        let mut state = self.lock();
        state.fired = true;
        if let Some(waker) = state.waker.take() {
            // The evaluation may have finished and its target gone; nothing to wake then.
            let _ = waker.send(Event::Interrupt);
        }
    }

    pub fn is_fired(&self) -> bool {
        self.lock().fired
    }

    /// Routes a firing to `waker` until the guard drops; sends at once if already fired.
    pub(crate) fn attach(&self, waker: Sender<Event>) -> Attached<'_> {
        let mut state = self.lock();
        if state.fired {
            let _ = waker.send(Event::Interrupt);
        } else {
            state.waker = Some(waker);
        }
        Attached { interrupt: self }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A flag and an optional sender; a panic cannot leave them half-written.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Detaches the token from an evaluation when it ends.
#[derive(Debug)]
pub(crate) struct Attached<'a> {
    interrupt: &'a Interrupt,
}

impl Drop for Attached<'_> {
    fn drop(&mut self) {
        self.interrupt.lock().waker = None;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    #[test]
    fn firing_wakes_the_attached_evaluation_once_and_a_late_attach_at_once() {
        let interrupt = Interrupt::new();
        let (tx, rx) = mpsc::channel();
        {
            let _attached = interrupt.attach(tx.clone());
            interrupt.clone().fire();
            interrupt.fire();
        }
        assert!(matches!(rx.try_recv(), Ok(Event::Interrupt)));
        assert!(rx.try_recv().is_err());
        let _late = interrupt.attach(tx);
        assert!(matches!(rx.try_recv(), Ok(Event::Interrupt)));
        assert!(interrupt.is_fired());
    }
}
