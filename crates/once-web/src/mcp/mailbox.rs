//! Where the session's router leaves messages for one HTTP answer: a POST waiting for its
//! response, or the standalone GET stream. Messages stay the JSON text the loop wrote, so a large
//! answer is never parsed into a tree and written out again.
//!
//! The router puts, the connection's thread takes; putting never blocks, so a client that does
//! not read its stream can stall only its own connection's thread, never the loop. Notifications
//! are bounded ([`MAX_NOTES`] messages, [`MAX_NOTE_BYTES`] bytes) and dropped beyond that (a
//! later progress notification says everything an earlier one did); a response is never dropped
//! (there is one per request, and requests in flight are bounded by the loop).

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// Notifications held for one answer at most.
const MAX_NOTES: usize = 256;
/// Bytes of notifications held for one answer at most.
const MAX_NOTE_BYTES: usize = 1024 * 1024;

#[derive(Debug, Default)]
struct Inbox {
    notes: VecDeque<String>,
    note_bytes: usize,
    response: Option<String>,
    closed: bool,
    dropped: u64,
}

/// One answer's queue.
#[derive(Debug, Default)]
pub(super) struct Mailbox {
    inbox: Mutex<Inbox>,
    changed: Condvar,
}

/// What the connection's thread takes next.
#[derive(Debug, PartialEq)]
pub(super) enum Next {
    /// A notification, to write before anything else.
    Note(String),
    /// The response: the answer is complete.
    Response(String),
    /// The session ended without a response.
    Closed,
    /// Nothing came within the wait.
    Nothing,
}

impl Mailbox {
    fn lock(&self) -> MutexGuard<'_, Inbox> {
        self.inbox.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Leaves a notification, or drops it when the box is full.
    pub(super) fn note(&self, message: String) {
        let size = message.len();
        let mut inbox = self.lock();
        if inbox.closed {
            return;
        }
        if inbox.notes.len() >= MAX_NOTES || inbox.note_bytes + size > MAX_NOTE_BYTES {
            inbox.dropped += 1;
            if inbox.dropped.is_power_of_two() {
                tracing::debug!(
                    dropped = inbox.dropped,
                    "a slow client misses notifications"
                );
            }
            return;
        }
        inbox.note_bytes += size;
        inbox.notes.push_back(message);
        self.changed.notify_all();
    }

    /// Leaves the response.
    pub(super) fn respond(&self, message: String) {
        self.lock().response = Some(message);
        self.changed.notify_all();
    }

    /// Ends the box: the taker sees what is left, then [`Next::Closed`].
    pub(super) fn close(&self) {
        self.lock().closed = true;
        self.changed.notify_all();
    }

    /// Takes the next message (notifications first, then the response), waiting at most `wait`.
    pub(super) fn next(&self, wait: Duration) -> Next {
        let mut inbox = self.lock();
        if let Some(next) = take(&mut inbox) {
            return next;
        }
        inbox = self
            .changed
            .wait_timeout(inbox, wait)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
        take(&mut inbox).unwrap_or(Next::Nothing)
    }
}

fn take(inbox: &mut Inbox) -> Option<Next> {
    if let Some(note) = inbox.notes.pop_front() {
        inbox.note_bytes -= note.len();
        return Some(Next::Note(note));
    }
    if let Some(response) = inbox.response.take() {
        return Some(Next::Response(response));
    }
    inbox.closed.then_some(Next::Closed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_come_before_the_response_and_overflow_is_dropped() {
        let mailbox = Mailbox::default();
        for n in 0..MAX_NOTES + 5 {
            mailbox.note(n.to_string());
        }
        mailbox.respond("done".into());
        let mut notes = 0;
        loop {
            match mailbox.next(Duration::ZERO) {
                Next::Note(_) => notes += 1,
                Next::Response(response) => {
                    assert_eq!(response, "done");
                    break;
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(notes, MAX_NOTES);
        assert_eq!(mailbox.next(Duration::ZERO), Next::Nothing);
        mailbox.close();
        assert_eq!(mailbox.next(Duration::ZERO), Next::Closed);
    }
}
