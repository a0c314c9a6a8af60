//! The single writer of the output stream, with a bounded queue in front of it.
//!
//! Every reply and notification goes through one queue to one thread that owns the writer, so
//! concurrent tool calls can never interleave their bytes. Each message is one `write_all` of the
//! whole line followed by a `flush`. Nothing else may write output.
//!
//! The queue holds at most `capacity` bytes of encoded lines (the line being written counts until
//! it is written), so a client that sends requests and never reads cannot make the server grow:
//! - a reply ([`Outbox::send`]) waits for room. The read loop answers most requests itself, so
//!   it stops reading input until the client reads output; a tool's worker waits the same way.
//! - a notification ([`Outbox::notify`]: progress, log messages) never waits: when there is no
//!   room it is dropped, because a tool must never stall on a client that is not listening, and a
//!   later progress notification carries everything a dropped one said.
//!
//! A message larger than the whole capacity still goes, alone, once the queue is empty. After the
//! output breaks (the peer went away) nothing waits any more and everything is dropped. This
//! module must never block a notification, nor let a reply skip the queue.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};

use serde_json::Value;

use crate::codec::encode_line;

/// The default capacity: room for hundreds of ordinary replies, far below what matters.
pub(crate) const DEFAULT_CAPACITY: usize = 1024 * 1024;

#[derive(Debug, Default)]
struct Queue {
    lines: VecDeque<Vec<u8>>,
    /// Bytes queued plus the bytes of the line being written.
    bytes: usize,
    /// No more messages are taken; the writer ends once the queue is empty.
    closed: bool,
    /// A write failed: the writer drops everything from now on.
    broken: bool,
    /// Notifications dropped for want of room, for the log.
    dropped: u64,
}

#[derive(Debug)]
struct Shared {
    queue: Mutex<Queue>,
    /// Signalled when a line is queued or the queue is closed (the writer waits on it).
    filled: Condvar,
    /// Signalled when room is made or the output breaks (waiting replies wait on it).
    drained: Condvar,
    capacity: usize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A cloneable handle to the writer thread.
#[derive(Clone, Debug)]
pub(crate) struct Outbox {
    shared: Arc<Shared>,
}

/// The writer thread, to be closed once at the end of a connection.
#[derive(Debug)]
pub(crate) struct Writer {
    outbox: Outbox,
    handle: JoinHandle<io::Result<()>>,
}

impl Outbox {
    /// Queues a reply, waiting for room. Dropped after [`Writer::close`] (a straggling handler
    /// must not write past the end of serve) or once the output is broken.
    pub(crate) fn send(&self, message: &Value) {
        let line = encode_line(message);
        let shared = &*self.shared;
        let mut queue = shared.lock();
        while !queue.closed && !queue.broken && !fits(&queue, line.len(), shared.capacity) {
            queue = shared
                .drained
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if queue.closed || queue.broken {
            tracing::debug!("output closed or broken; reply dropped");
            return;
        }
        push(&mut queue, line);
        shared.filled.notify_one();
    }

    /// Queues a notification if there is room now; drops it otherwise. Never blocks.
    pub(crate) fn notify(&self, message: &Value) {
        let line = encode_line(message);
        let shared = &*self.shared;
        let mut queue = shared.lock();
        if queue.closed || queue.broken {
            return;
        }
        if !fits(&queue, line.len(), shared.capacity) {
            queue.dropped += 1;
            if queue.dropped.is_power_of_two() {
                tracing::debug!(
                    dropped = queue.dropped,
                    "the client is not reading; notifications dropped"
                );
            }
            return;
        }
        push(&mut queue, line);
        shared.filled.notify_one();
    }

    /// Whether a write failed (the peer went away): the loop then stops.
    pub(crate) fn is_broken(&self) -> bool {
        self.shared.lock().broken
    }
}

/// Room for `len` more bytes, or an empty queue (so that one huge message still goes).
fn fits(queue: &Queue, len: usize, capacity: usize) -> bool {
    queue.bytes == 0 || queue.bytes.saturating_add(len) <= capacity
}

fn push(queue: &mut Queue, line: Vec<u8>) {
    queue.bytes += line.len();
    queue.lines.push_back(line);
}

impl Writer {
    /// Starts the writer thread over `writer`, with a queue of `capacity` bytes.
    pub(crate) fn spawn<W: Write + Send + 'static>(
        mut writer: W,
        capacity: usize,
    ) -> io::Result<Self> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            filled: Condvar::new(),
            drained: Condvar::new(),
            capacity,
        });
        let mine = Arc::clone(&shared);
        let handle = thread::Builder::new()
            .name("once-mcp-writer".into())
            .spawn(move || write_all_queued(&mine, &mut writer))?;
        Ok(Self {
            outbox: Outbox { shared },
            handle,
        })
    }

    /// A handle for queueing messages.
    pub(crate) fn outbox(&self) -> Outbox {
        self.outbox.clone()
    }

    /// Writes everything queued so far, flushes and stops the thread. Replies still waiting for
    /// room are dropped.
    pub(crate) fn close(self) -> io::Result<()> {
        let shared = &*self.outbox.shared;
        shared.lock().closed = true;
        shared.filled.notify_all();
        shared.drained.notify_all();
        match self.handle.join() {
            Ok(result) => result,
            Err(_) => Err(io::Error::other("the output writer thread panicked")),
        }
    }
}

/// The writer thread's loop: one line at a time, in queue order, until closed and empty.
fn write_all_queued<W: Write>(shared: &Shared, writer: &mut W) -> io::Result<()> {
    let mut first_error = None;
    loop {
        let line = {
            let mut queue = shared.lock();
            loop {
                if let Some(line) = queue.lines.pop_front() {
                    break line;
                }
                if queue.closed {
                    drop(queue);
                    return match first_error {
                        Some(error) => Err(error),
                        None => writer.flush(),
                    };
                }
                queue = shared
                    .filled
                    .wait(queue)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        };
        // After a failure we keep draining (so nobody waits for room) but stop writing.
        if first_error.is_none()
            && let Err(error) = writer.write_all(&line).and_then(|()| writer.flush())
        {
            tracing::warn!(%error, "writing to the client failed");
            first_error = Some(error);
            shared.lock().broken = true;
        }
        let mut queue = shared.lock();
        queue.bytes -= line.len();
        drop(queue);
        shared.drained.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A writer that takes nothing until told to, like a client that does not read.
    struct Held(Arc<(Mutex<bool>, Condvar)>, Arc<Mutex<Vec<u8>>>);

    impl Write for Held {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            let (open, opened) = &*self.0;
            let mut open = open.lock().unwrap();
            while !*open {
                open = opened.wait(open).unwrap();
            }
            self.1.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn notifications_are_dropped_when_full_and_replies_keep_their_order() {
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let written = Arc::new(Mutex::new(Vec::new()));
        let writer = Writer::spawn(Held(Arc::clone(&gate), Arc::clone(&written)), 64).unwrap();
        let outbox = writer.outbox();
        // The first line is taken by the writer (and held); it fills the budget.
        outbox.send(&json!({"n": 0, "pad": "x".repeat(60)}));
        for n in 1..100 {
            outbox.notify(&json!({"note": n}));
        }
        let sender = {
            let outbox = outbox.clone();
            thread::spawn(move || outbox.send(&json!({"n": 1})))
        };
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
        sender.join().unwrap();
        writer.close().unwrap();
        let text = String::from_utf8(written.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].contains("\"n\":0"), "{text}");
        assert!(lines.last().unwrap().contains("\"n\":1"), "{text}");
        assert!(
            lines.len() < 10,
            "notifications were queued past the budget: {text}"
        );
    }
}
