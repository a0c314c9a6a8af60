//! Local slots: with remote execution on, a run has as many workers as actions it may keep in
//! flight on the engine (`--remote-jobs`), but no more commands may run here at once than
//! `--jobs`. A worker takes a slot for the time its command runs here and gives it back when
//! the slot is dropped, whatever way the command ends. Never held while waiting for anything
//! else, so a slot cannot be part of a wait between runs.

use std::sync::{Condvar, Mutex, PoisonError};

/// A counting semaphore of the commands that may run here at once.
pub(crate) struct Slots {
    free: Mutex<usize>,
    freed: Condvar,
}

/// One slot, given back on drop.
pub(crate) struct Slot<'s>(&'s Slots);

impl Slots {
    pub(crate) fn new(count: usize) -> Slots {
        Slots {
            free: Mutex::new(count.max(1)),
            freed: Condvar::new(),
        }
    }

    /// Waits for a free slot and takes it.
    pub(crate) fn take(&self) -> Slot<'_> {
        // A count stays whole whatever panicked while holding the lock.
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        while *free == 0 {
            free = self
                .freed
                .wait(free)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *free -= 1;
        Slot(self)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        self.0.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn no_more_than_the_count_hold_a_slot_at_once() {
        let slots = Slots::new(2);
        let holding = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    for _ in 0..200 {
                        let _slot = slots.take();
                        let now = holding.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::yield_now();
                        holding.fetch_sub(1, Ordering::SeqCst);
                    }
                });
            }
        });
        assert!(most.load(Ordering::SeqCst) <= 2);
        assert_eq!(*slots.free.lock().unwrap(), 2);
    }
}
