//! Which of the window's connections are held, and which give way, so that connections that
//! never proved anything can never take a place the owner needs.
//!
//! A connection enters *unproven*. It becomes *proven* with its first request that carries a
//! credential (the page key or the session token) and passes the Host and Origin checks; only
//! proven connections count against [`MAX_CONNECTIONS`], only they are kept alive between
//! requests, and only they may hold an event stream. Unproven connections have a budget of their
//! own, [`MAX_UNPROVEN`]: when one more arrives, the oldest unproven one is shut down to make
//! room, so a newcomer (the owner's request among them) is never turned away by a flood; a real
//! client sends its whole request at once and is proven within microseconds, long before it
//! could become the oldest. `lib.rs` also gives an unproven connection a short deadline for its
//! request and closes it after one answer, so it holds its place for at most one request.
//!
//! This module only counts and evicts; it must never read from or write to a connection.

use std::collections::VecDeque;
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Proven connections served at once; one more is answered 503 and closed.
pub const MAX_CONNECTIONS: usize = 64;
/// Unproven connections held at once; one more evicts the oldest.
pub const MAX_UNPROVEN: usize = 16;

/// The window's connections, by standing.
#[derive(Debug, Default)]
pub(crate) struct Admission {
    proven: AtomicUsize,
    /// The unproven connections, oldest first, each with a number of its own and a handle to
    /// shut it down.
    unproven: Mutex<VecDeque<(u64, TcpStream)>>,
    next: AtomicU64,
}

/// A connection's place; dropping it frees the place.
#[derive(Debug)]
pub(crate) struct Ticket<'a> {
    admission: &'a Admission,
    /// `Some(number)` while unproven.
    unproven: Option<u64>,
}

impl Admission {
    fn unproven(&self) -> MutexGuard<'_, VecDeque<(u64, TcpStream)>> {
        self.unproven.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes an unproven place for `stream`, shutting the oldest unproven connection down when
    /// [`MAX_UNPROVEN`] are held; `None` when the connection cannot be tracked (no descriptor
    /// left to clone it), which its caller closes.
    pub(crate) fn admit(&self, stream: &TcpStream) -> Option<Ticket<'_>> {
        let tracked = stream.try_clone().ok()?;
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        let mut unproven = self.unproven();
        while unproven.len() >= MAX_UNPROVEN {
            let Some((_, oldest)) = unproven.pop_front() else {
                break;
            };
            // Its thread's next read or write fails at once, and the thread ends.
            tracing::debug!("evicted the oldest connection that proved nothing, to make room");
            let _ = oldest.shutdown(Shutdown::Both);
        }
        unproven.push_back((number, tracked));
        Some(Ticket {
            admission: self,
            unproven: Some(number),
        })
    }
}

impl Ticket<'_> {
    /// Whether the connection has proven itself.
    pub(crate) fn is_proven(&self) -> bool {
        self.unproven.is_none()
    }

    /// Moves the connection to the proven ones; `false` (and it stays unproven) when
    /// [`MAX_CONNECTIONS`] are proven already.
    pub(crate) fn prove(&mut self) -> bool {
        let Some(number) = self.unproven else {
            return true;
        };
        let proven = &self.admission.proven;
        let took = proven
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
                (open < MAX_CONNECTIONS).then_some(open + 1)
            })
            .is_ok();
        if took {
            self.admission.unproven().retain(|(n, _)| *n != number);
            self.unproven = None;
        }
        took
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        match self.unproven {
            Some(number) => self.admission.unproven().retain(|(n, _)| *n != number),
            None => {
                self.admission.proven.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::{Ipv4Addr, TcpListener};

    /// A connected pair on loopback: (our end, the peer's end).
    fn pair(listener: &TcpListener) -> (TcpStream, TcpStream) {
        let peer = TcpStream::connect(listener.local_addr().expect("addr")).expect("connects");
        let (ours, _) = listener.accept().expect("accepts");
        (ours, peer)
    }

    #[test]
    fn a_newcomer_evicts_the_oldest_unproven_connection_and_proven_ones_stay() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("binds");
        let admission = Admission::default();
        let (proven_stream, mut proven_peer) = pair(&listener);
        let mut proven = admission.admit(&proven_stream).expect("admitted");
        assert!(proven.prove() && proven.is_proven());
        let mut held = Vec::new();
        for _ in 0..MAX_UNPROVEN {
            let (ours, peer) = pair(&listener);
            held.push((admission.admit(&ours).expect("admitted"), ours, peer));
        }
        let (newcomer, _newcomer_peer) = pair(&listener);
        let _ticket = admission.admit(&newcomer).expect("admitted");
        // The oldest unproven one was shut down: its peer reads the end of the stream.
        let (_, _, oldest_peer) = &mut held[0];
        oldest_peer
            .set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .expect("timeout");
        let mut byte = [0u8; 1];
        assert_eq!(
            oldest_peer.read(&mut byte).expect("closed, not timed out"),
            0
        );
        // The proven one was not.
        proven_peer.set_nonblocking(true).expect("nonblocking");
        let still = proven_peer.read(&mut byte);
        assert!(
            matches!(&still, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "{still:?}"
        );
        assert_eq!(admission.unproven().len(), MAX_UNPROVEN);
    }

    #[test]
    fn proven_places_are_bounded_and_freed_on_drop() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("binds");
        let admission = Admission::default();
        let mut streams = Vec::new();
        let mut tickets = Vec::new();
        for _ in 0..MAX_CONNECTIONS {
            let (ours, peer) = pair(&listener);
            streams.push((ours, peer));
        }
        for (ours, _) in &streams {
            let mut ticket = admission.admit(ours).expect("admitted");
            assert!(ticket.prove());
            tickets.push(ticket);
        }
        let (one_more, _peer) = pair(&listener);
        let mut refused = admission.admit(&one_more).expect("admitted");
        assert!(!refused.prove(), "one proven connection too many");
        assert!(!refused.is_proven());
        tickets.pop();
        assert!(refused.prove(), "a closed connection frees its place");
        drop(refused);
        drop(tickets);
        assert_eq!(admission.proven.load(Ordering::Acquire), 0);
        assert!(admission.unproven().is_empty());
    }
}
