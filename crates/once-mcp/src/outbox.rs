//! The single writer of the output stream.
//!
//! Every reply and notification goes through one channel to one thread that
//! owns the writer, so concurrent tool calls can never interleave their bytes.
//! Each message is one `write_all` of the whole line followed by a `flush`.
//! Sending never blocks (the channel is unbounded), which is what lets
//! `CallContext::progress` promise the same. Nothing else may write output.

use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::thread::{self, JoinHandle};

use serde_json::Value;

use crate::codec::encode_line;

enum Out {
    Line(Vec<u8>),
    Close,
}

/// A cloneable handle to the writer thread.
#[derive(Clone, Debug)]
pub(crate) struct Outbox {
    tx: Sender<Out>,
    broken: Arc<AtomicBool>,
}

impl std::fmt::Debug for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Out::Line(bytes) => write!(f, "Line({} bytes)", bytes.len()),
            Out::Close => f.write_str("Close"),
        }
    }
}

/// The writer thread, to be closed once at the end of a connection.
#[derive(Debug)]
pub(crate) struct Writer {
    outbox: Outbox,
    handle: JoinHandle<io::Result<()>>,
}

impl Outbox {
    /// Queues one message. Messages queued after [`Writer::close`] are
    /// dropped: a straggling handler must not write past the end of serve.
    pub(crate) fn send(&self, message: &Value) {
        if self.tx.send(Out::Line(encode_line(message))).is_err() {
            tracing::debug!("output already closed; message dropped");
        }
    }

    /// Whether a write failed (the peer went away): the loop then stops.
    pub(crate) fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Relaxed)
    }
}

impl Writer {
    /// Starts the writer thread over `writer`.
    pub(crate) fn spawn<W: Write + Send + 'static>(mut writer: W) -> io::Result<Self> {
        let (tx, rx) = mpsc::channel::<Out>();
        let broken = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&broken);
        let handle = thread::Builder::new()
            .name("once-mcp-writer".into())
            .spawn(move || {
                let mut first_error = None;
                for out in rx {
                    match out {
                        Out::Line(bytes) => {
                            // After a failure we keep draining (senders must
                            // never block or error) but stop writing.
                            if first_error.is_some() {
                                continue;
                            }
                            if let Err(e) = writer.write_all(&bytes).and_then(|()| writer.flush()) {
                                tracing::warn!(error = %e, "writing to the client failed");
                                flag.store(true, Ordering::Relaxed);
                                first_error = Some(e);
                            }
                        }
                        Out::Close => break,
                    }
                }
                if first_error.is_none() {
                    writer.flush()?;
                }
                first_error.map_or(Ok(()), Err)
            })?;
        Ok(Self {
            outbox: Outbox { tx, broken },
            handle,
        })
    }

    /// A handle for queueing messages.
    pub(crate) fn outbox(&self) -> Outbox {
        self.outbox.clone()
    }

    /// Writes everything queued so far, flushes and stops the thread.
    pub(crate) fn close(self) -> io::Result<()> {
        // Close is queued behind every message already sent, so none is lost.
        let _ = self.outbox.tx.send(Out::Close);
        match self.handle.join() {
            Ok(result) => result,
            Err(_) => Err(io::Error::other("the output writer thread panicked")),
        }
    }
}
