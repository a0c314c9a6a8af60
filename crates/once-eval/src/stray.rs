//! What an evaluator process writes to its file descriptors 1 and 2, cut per evaluation.
//!
//! Evaluated code's own prints are captured inside the adapter; this catches the rest (a
//! subprocess, a C extension) so it is neither lost nor mixed into the protocol. The adapter
//! writes [`MARKER`] to descriptor 1 before each reply; a drain thread splits the stream at each
//! marker into one segment per evaluation. Memory stays bounded: a segment keeps at most
//! [`OUTPUT_CAP`](crate::OUTPUT_CAP) bytes. This module must never block the drain thread on a
//! reader: the process would stall on a full pipe.

use std::collections::VecDeque;
use std::io::Read;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Written by the adapters before every reply; the same bytes as in `adapters/*`.
pub(crate) const MARKER: &[u8] = b"\x1eonce-eval-end\x1e";

#[derive(Debug)]
pub(crate) struct Stray {
    state: Mutex<State>,
    changed: Condvar,
    cap: usize,
}

#[derive(Debug, Default)]
struct State {
    current: Vec<u8>,
    dropped: usize,
    /// How many bytes of `MARKER` the stream has matched so far.
    matched: usize,
    segments: VecDeque<String>,
    closed: bool,
}

impl Stray {
    pub(crate) fn new(cap: usize) -> Stray {
        Stray {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            cap,
        }
    }

    /// Reads `pipe` to its end; run on the drain thread.
    pub(crate) fn drain(&self, mut pipe: impl Read) {
        let mut chunk = vec![0; 64 * 1024];
        loop {
            match pipe.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => self.feed(chunk.get(..n).unwrap_or_default()),
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        self.lock().closed = true;
        self.changed.notify_all();
    }

    fn feed(&self, bytes: &[u8]) {
        let mut state = self.lock();
        let mut ended = false;
        for &byte in bytes {
            if MARKER.get(state.matched) == Some(&byte) {
                state.matched += 1;
                if state.matched == MARKER.len() {
                    state.matched = 0;
                    let segment = finish(&mut state);
                    state.segments.push_back(segment);
                    ended = true;
                }
                continue;
            }
            // A partial match that failed was ordinary output after all.
            let partial = std::mem::take(&mut state.matched);
            for index in 0..partial {
                let held = MARKER.get(index).copied().unwrap_or_default();
                push(&mut state, held, self.cap);
            }
            if MARKER.first() == Some(&byte) {
                state.matched = 1;
            } else {
                push(&mut state, byte, self.cap);
            }
        }
        drop(state);
        if ended {
            self.changed.notify_all();
        }
    }

    /// The output of the evaluation that just replied: the next segment, waiting up to `wait`
    /// for its marker (it was written before the reply, so it is normally there already).
    pub(crate) fn next_segment(&self, wait: Duration) -> String {
        let end = Instant::now() + wait;
        let mut state = self.lock();
        loop {
            if let Some(segment) = state.segments.pop_front() {
                return segment;
            }
            let left = end.saturating_duration_since(Instant::now());
            if state.closed || left.is_zero() {
                return finish(&mut state);
            }
            state = self
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Everything not yet handed out, for an evaluation that got no reply (or a failed start).
    pub(crate) fn rest(&self, wait: Duration) -> String {
        let end = Instant::now() + wait;
        let mut state = self.lock();
        while !state.closed {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            state = self
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        let mut text: String = state.segments.drain(..).collect();
        text.push_str(&finish(&mut state));
        text
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Bytes and counters only; a panic cannot leave them inconsistent in a harmful way.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn push(state: &mut State, byte: u8, cap: usize) {
    if state.current.len() < cap {
        state.current.push(byte);
    } else {
        state.dropped += 1;
    }
}

fn finish(state: &mut State) -> String {
    let bytes = std::mem::take(&mut state.current);
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    let dropped = std::mem::take(&mut state.dropped);
    if dropped > 0 {
        text.push_str(&format!("\n[once: {dropped} more bytes not kept]\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_cut_at_markers_even_when_a_marker_is_split_across_reads() {
        let stray = Stray::new(8);
        let mut stream = b"a\x1eb".to_vec();
        stream.extend_from_slice(MARKER);
        stream.extend_from_slice(b"0123456789");
        stream.extend_from_slice(MARKER);
        stream.extend_from_slice(b"tail");
        for piece in stream.chunks(3) {
            stray.feed(piece);
        }
        assert_eq!(stray.next_segment(Duration::ZERO), "a\x1eb");
        assert_eq!(
            stray.next_segment(Duration::ZERO),
            "01234567\n[once: 2 more bytes not kept]\n"
        );
        assert_eq!(stray.next_segment(Duration::ZERO), "tail");
        assert_eq!(stray.rest(Duration::ZERO), "");
    }
}
