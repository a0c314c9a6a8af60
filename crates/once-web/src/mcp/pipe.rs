//! The input side of one MCP-over-HTTP session: an in-memory pipe whose writer is the POST
//! handlers (each message a line) and whose reader is the session's `once_mcp` loop.
//!
//! It holds at most [`CAPACITY`] bytes (one message of any size still fits when it is empty), so
//! posts cannot grow the server while the loop is busy; a writer waits for room only until its
//! deadline. It must never block a reader after it is closed: closing is the loop's end of input.

use std::collections::VecDeque;
use std::io::{self, Read};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Bytes waiting for the loop at most (a larger message still goes, alone).
const CAPACITY: usize = 1024 * 1024;

#[derive(Debug, Default)]
struct Buffer {
    bytes: VecDeque<u8>,
    closed: bool,
}

#[derive(Debug, Default)]
struct Shared {
    buffer: Mutex<Buffer>,
    /// Signalled when bytes arrive, room is made, or the pipe closes.
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Buffer> {
        self.buffer.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The writing end.
#[derive(Debug, Clone)]
pub(super) struct Input(Arc<Shared>);

/// The reading end, given to the loop.
#[derive(Debug)]
pub(super) struct Output(Arc<Shared>);

/// Why a message did not go in.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Refused {
    /// The loop has ended.
    Closed,
    /// No room before the deadline.
    Full,
}

/// A new, empty pipe.
pub(super) fn pipe() -> (Input, Output) {
    let shared = Arc::new(Shared::default());
    (Input(Arc::clone(&shared)), Output(shared))
}

impl Input {
    /// Appends `line` whole, waiting for room at most `wait`.
    pub(super) fn push(&self, line: &[u8], wait: Duration) -> Result<(), Refused> {
        let deadline = Instant::now() + wait;
        let mut buffer = self.0.lock();
        loop {
            if buffer.closed {
                return Err(Refused::Closed);
            }
            if buffer.bytes.is_empty() || buffer.bytes.len() + line.len() <= CAPACITY {
                buffer.bytes.extend(line);
                self.0.changed.notify_all();
                return Ok(());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Refused::Full);
            }
            buffer = self
                .0
                .changed
                .wait_timeout(buffer, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Ends the input: the loop reads what is left, then end of input.
    pub(super) fn close(&self) {
        self.0.lock().closed = true;
        self.0.changed.notify_all();
    }
}

impl Read for Output {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let mut buffer = self.0.lock();
        while buffer.bytes.is_empty() {
            if buffer.closed {
                return Ok(0);
            }
            buffer = self
                .0
                .changed
                .wait(buffer)
                .unwrap_or_else(PoisonError::into_inner);
        }
        let n = out.len().min(buffer.bytes.len());
        for (slot, byte) in out.iter_mut().zip(buffer.bytes.drain(..n)) {
            *slot = byte;
        }
        self.0.changed.notify_all();
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_pass_in_order_and_close_ends_the_input() {
        let (input, mut output) = pipe();
        input.push(b"one\n", Duration::ZERO).expect("room");
        input.push(b"two\n", Duration::ZERO).expect("room");
        input.close();
        let mut text = String::new();
        output.read_to_string(&mut text).expect("reads");
        assert_eq!(text, "one\ntwo\n");
        assert_eq!(input.push(b"x\n", Duration::ZERO), Err(Refused::Closed));
    }

    #[test]
    fn a_full_pipe_refuses_after_the_wait_but_takes_one_huge_line_when_empty() {
        let (input, _output) = pipe();
        let huge = vec![b'x'; CAPACITY + 10];
        input.push(&huge, Duration::ZERO).expect("alone, it fits");
        assert_eq!(
            input.push(b"more\n", Duration::from_millis(20)),
            Err(Refused::Full)
        );
    }
}
