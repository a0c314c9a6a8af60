//! A client of an nREPL server that someone else started (Clojure, Babashka, nbb, …): bencode
//! over TCP on loopback, one session per target, the `eval` and `interrupt` operations.
//!
//! The server's port comes from its port file (`.nrepl-port` in the target's folder unless the
//! spec names another). `once` does not own that server's process, so unlike an adapter it can
//! never kill it: when an interrupt is not acknowledged within the grace, the session is closed
//! and a new one opened, and the result says what that loses. This module must never connect
//! anywhere but 127.0.0.1.

mod bencode;

use std::collections::BTreeMap;
use std::io::{self, BufReader, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::mpsc::Sender;
use std::thread;
use std::time::Duration;

use bencode::Value;

use crate::event::Event;
use crate::spec::EvaluatorSpec;

/// The port file read when the spec names none, as Leiningen, Clojure CLI and Babashka write it.
pub const DEFAULT_PORT_FILE: &str = ".nrepl-port";

/// One decoded message from the server.
#[derive(Debug, Clone, Default)]
pub(crate) struct Message {
    entries: BTreeMap<Vec<u8>, Value>,
}

impl Message {
    pub(crate) fn text(&self, key: &str) -> Option<String> {
        self.entries.get(key.as_bytes()).and_then(Value::as_text)
    }

    /// Whether `status` lists `flag`.
    pub(crate) fn has_status(&self, flag: &str) -> bool {
        match self.entries.get(&b"status"[..]) {
            Some(Value::List(items)) => items
                .iter()
                .any(|item| item.as_text().as_deref() == Some(flag)),
            _ => false,
        }
    }
}

/// The path of the port file for `spec`.
pub(crate) fn port_file(spec: &EvaluatorSpec) -> PathBuf {
    let named = spec
        .port_file
        .clone()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_PORT_FILE));
    spec.cwd.join(named)
}

/// Reads the port from the port file.
pub(crate) fn read_port(spec: &EvaluatorSpec) -> Result<u16, String> {
    let path = port_file(spec);
    let text = std::fs::read_to_string(&path).map_err(|error| {
        format!(
            "cannot read the port file `{}` ({error}); start the nREPL server in the target's \
             folder first",
            path.display()
        )
    })?;
    text.trim().parse().map_err(|_| {
        format!(
            "the port file `{}` does not hold a port number: `{}`",
            path.display(),
            text.trim()
        )
    })
}

/// A connection with one session on it.
#[derive(Debug)]
pub(crate) struct Connection {
    stream: TcpStream,
    pub(crate) session: Option<String>,
}

impl Connection {
    /// Connects to 127.0.0.1:`port` and starts the reader thread, whose messages arrive as
    /// [`Event::Nrepl`] tagged with `generation`.
    pub(crate) fn open(
        port: u16,
        timeout: Duration,
        generation: u64,
        events: Sender<Event>,
    ) -> io::Result<Connection> {
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let stream = TcpStream::connect_timeout(&address, timeout)?;
        stream.set_nodelay(true)?;
        let reader = stream.try_clone()?;
        thread::Builder::new()
            .name(format!("nrepl {port} messages"))
            .spawn(move || read_messages(reader, generation, events))?;
        Ok(Connection {
            stream,
            session: None,
        })
    }

    /// Sends one request: `op` and `id`, the session when there is one, then `fields`.
    pub(crate) fn send(&mut self, op: &str, id: &str, fields: &[(&str, &str)]) -> io::Result<()> {
        let mut entries = BTreeMap::from([
            (b"op".to_vec(), Value::text(op)),
            (b"id".to_vec(), Value::text(id)),
        ]);
        if let Some(session) = &self.session {
            entries.insert(b"session".to_vec(), Value::text(session));
        }
        for (key, value) in fields {
            entries.insert(key.as_bytes().to_vec(), Value::text(value));
        }
        let mut wire = Vec::new();
        Value::Dict(entries).encode(&mut wire);
        self.stream.write_all(&wire)
    }

    /// Closes the session (best effort) and the connection.
    pub(crate) fn close(mut self) {
        if self.session.is_some() {
            let _ = self.send("close", "once-close", &[]);
        }
        let _ = self.stream.shutdown(Shutdown::Both);
    }
}

fn read_messages(stream: TcpStream, generation: u64, events: Sender<Event>) {
    let mut input = BufReader::new(stream);
    loop {
        match bencode::decode(&mut input) {
            Ok(Some(Value::Dict(entries))) => {
                let message = Message { entries };
                if events
                    .send(Event::Nrepl {
                        generation,
                        message,
                    })
                    .is_err()
                {
                    return;
                }
            }
            Ok(Some(_)) => tracing::warn!("nREPL server sent a message that is not a dictionary"),
            Ok(None) | Err(_) => break,
        }
    }
    let _ = events.send(Event::Closed { generation });
}
