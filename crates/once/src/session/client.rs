//! The client's side of a session: finding the session of a workspace, connecting to it, and a
//! minimal MCP client for commands that call one tool in it (`once eval`).
//!
//! [`connect`] is the one way into a session: it opens the loopback socket and presents the
//! token as the first line; `once mcp --attach` (`bridge.rs`) and [`Client`] both start there.
//! [`Client`] speaks just enough MCP to make calls: `initialize`, `notifications/initialized`,
//! `tools/list` and `tools/call`, one request at a time, skipping notifications it does not
//! need. A refusal by the listener (busy, bad token) arrives as one error line and becomes an
//! error. This module must never show a token, and never wait on the session without end: the
//! session bounds every call, and a closed connection ends every read.

use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, Shutdown, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};

use super::registry::{Entry, Registry};
use once_web::Token;

/// The protocol version [`Client`] asks for.
const PROTOCOL_VERSION: &str = "2025-11-25";
/// How long a closing client waits for the session to finish with the connection.
const LAST_WORDS: Duration = Duration::from_secs(5);

/// The live session serving exactly `root` (canonical), if there is one. Reads the registry
/// without creating or reaping anything: a dead entry is simply not live.
pub fn find(root: &Path) -> Result<Option<Entry>> {
    let dir = super::registry::state_dir()?.join("once").join("mcp");
    if !dir.is_dir() {
        return Ok(None);
    }
    let registry = Registry::open_at(&dir)?;
    Ok(registry
        .live()?
        .into_iter()
        .find(|entry| entry.workspace == root))
}

/// Connects to `entry`'s port and presents its token as the first line; what follows is MCP.
pub fn connect(entry: &Entry) -> Result<TcpStream> {
    let mut socket = TcpStream::connect((Ipv4Addr::LOCALHOST, entry.port)).with_context(|| {
        format!(
            "cannot connect to the session of `{}` on port {}",
            entry.workspace.display(),
            entry.port
        )
    })?;
    // Small messages, answered one at a time: Nagle's delay would dominate every round trip.
    socket.set_nodelay(true).context("cannot set TCP_NODELAY")?;
    let token = Token::from_hex(&entry.token).with_context(|| {
        format!(
            "the session file of pid {} holds no valid token; stop that session and start it again",
            entry.pid
        )
    })?;
    let mut first = token.line().into_bytes();
    first.push(b'\n');
    socket
        .write_all(&first)
        .context("cannot present the session token")?;
    Ok(socket)
}

/// An initialized MCP connection to a session.
#[derive(Debug)]
pub struct Client {
    reader: BufReader<TcpStream>,
    writer: Writer,
    next_id: u64,
}

/// The writing half, shared with whoever may cancel a call from another thread.
#[derive(Debug, Clone)]
pub struct Writer(Arc<Mutex<TcpStream>>);

impl Writer {
    fn send(&self, message: &Value) -> Result<()> {
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        let mut socket = self
            .0
            .lock()
            .map_err(|_| anyhow!("the connection's writer panicked"))?;
        socket
            .write_all(&line)
            .and_then(|()| socket.flush())
            .context("cannot write to the session")
    }

    /// Sends `notifications/cancelled` for call `id`, then closes our side, so the session
    /// interrupts the call, finishes, and closes the connection (which ends the waiting read).
    pub fn cancel(&self, id: u64, reason: &str) -> Result<()> {
        self.send(&json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": reason},
        }))?;
        let socket = self
            .0
            .lock()
            .map_err(|_| anyhow!("the connection's writer panicked"))?;
        socket
            .shutdown(Shutdown::Write)
            .context("cannot close the connection")
    }
}

/// How a tool call ended.
#[derive(Debug)]
pub enum CallOutcome {
    /// The tool's value (`structuredContent.result`, else its text parsed as JSON).
    Value(Value),
    /// The tool's error text (`isError: true`).
    Error(String),
}

impl Client {
    /// Connects to `entry` and performs the handshake.
    pub fn open(entry: &Entry, name: &str) -> Result<Client> {
        let socket = connect(entry)?;
        let reader = BufReader::new(socket.try_clone().context("cannot share the socket")?);
        let mut client = Client {
            reader,
            writer: Writer(Arc::new(Mutex::new(socket))),
            next_id: 0,
        };
        client.request(
            "initialize",
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": name, "version": env!("CARGO_PKG_VERSION")},
            }),
        )?;
        client.writer.send(&json!({
            "jsonrpc": "2.0",
            "method": "notifications/initialized",
        }))?;
        Ok(client)
    }

    pub fn writer(&self) -> Writer {
        self.writer.clone()
    }

    /// The id the next request will carry.
    pub fn next_id(&self) -> u64 {
        self.next_id + 1
    }

    /// Whether the session lists a tool named `name` (following `nextCursor` pages).
    pub fn lists(&mut self, name: &str) -> Result<bool> {
        let mut cursor: Option<String> = None;
        loop {
            let params = match &cursor {
                Some(cursor) => json!({"cursor": cursor}),
                None => json!({}),
            };
            let page = self.request("tools/list", params)?;
            let tools = page["tools"].as_array().map_or(&[][..], Vec::as_slice);
            if tools.iter().any(|tool| tool["name"] == name) {
                return Ok(true);
            }
            match page["nextCursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return Ok(false),
            }
        }
    }

    /// Calls `tool` with `arguments` and waits for its result.
    pub fn call(&mut self, tool: &str, arguments: Value) -> Result<CallOutcome> {
        let result = self.request("tools/call", json!({"name": tool, "arguments": arguments}))?;
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        if result["isError"] == true {
            return Ok(CallOutcome::Error(text.to_owned()));
        }
        let value = match result.get("structuredContent") {
            Some(structured) => structured["result"].clone(),
            None => serde_json::from_str(text)
                .with_context(|| format!("the session answered {tool} with no JSON value"))?,
        };
        Ok(CallOutcome::Value(value))
    }

    /// Sends one request and returns its `result`, skipping notifications and requests from the
    /// session on the way.
    fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        self.next_id += 1;
        let id = self.next_id;
        self.writer.send(&json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": method,
            "params": params,
        }))?;
        loop {
            let mut line = String::new();
            let read = self
                .reader
                .read_line(&mut line)
                .context("cannot read from the session")?;
            if read == 0 {
                bail!("the session closed the connection before answering");
            }
            let message: Value = serde_json::from_str(&line)
                .with_context(|| format!("the session sent a line that is not JSON: {line}"))?;
            let answers_us = message["id"] == id;
            // A refusal (busy, bad token) has no request to answer: its id is null.
            let refused = message["id"].is_null() && message.get("error").is_some();
            if !answers_us && !refused {
                continue;
            }
            if let Some(error) = message.get("error") {
                let text = error["message"].as_str().unwrap_or("an unexplained error");
                if refused {
                    bail!("the session refused the connection: {text}");
                }
                bail!("the session refused `{method}`: {text}");
            }
            return Ok(message["result"].clone());
        }
    }
}

impl Drop for Client {
    /// Closes our side and waits (bounded) for the session to close its own, so the session's
    /// single client slot is free again by the time this process is gone.
    fn drop(&mut self) {
        if let Ok(socket) = self.writer.0.lock() {
            let _ = socket.shutdown(Shutdown::Write);
        }
        let socket = self.reader.get_ref();
        if socket.set_read_timeout(Some(LAST_WORDS)).is_err() {
            return;
        }
        let mut rest = Vec::new();
        let _ = std::io::Read::read_to_end(&mut self.reader, &mut rest);
    }
}
