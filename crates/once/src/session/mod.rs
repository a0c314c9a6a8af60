//! The live session of a workspace: `once serve` on one side, `once mcp --attach` on the other.
//!
//! # Theory of operation
//!
//! [`Session::start`] takes the registry folder's lock, reaps dead entries, refuses to start a
//! second session for a workspace that already has a live one (two would make `--attach DIR`
//! ambiguous), binds 127.0.0.1 on an OS-picked port, draws a token, and publishes its entry.
//! [`Session::serve`] then accepts connections for the life of the process (`listener.rs`).
//! A session stops in one of two ways: a signal, where the signal thread calls
//! [`Stopper::stop`] (remove the entry, stop every run) and exits; or a fatal error, where the
//! entry's guard removes the file as the error unwinds and the caller stops the runtime.
//!
//! The door (`listener.rs`) serves one authenticated client at a time and never lets anyone
//! else lock the owner out: a connection has one deadline, `TOKEN_WAIT` (3 s)
//! from its accept, to deliver its whole token line (a peer trickling a byte at a time gets no
//! more time than a silent one), and when `MAX_HANDSHAKES` (16)
//! connections already wait for their token, a new one evicts the oldest waiting one rather than
//! being refused. A real client sends its token in its first write, so it waits microseconds
//! where an attacker's connections wait seconds; a flood costs the session a bounded number of
//! threads and never the owner's access. Once connected, a client that stops reading stalls only
//! its own connection: `once_mcp`'s outbox is bounded and its loop stops reading until the client
//! reads. A refused `once mcp --attach` (busy, bad token) exits non-zero.
//!
//! The session owns everything that outlives one client: the graph (inside the server config's
//! tools), the runtime registry of runs, and the evaluators (built with the config, registered
//! with that registry), so an agent that reconnects finds its evaluators and their state. This
//! module must never accept a connection before its entry is published, nor leave the
//! entry behind when it stops.

pub mod bridge;
pub mod client;
mod listener;
mod peer;
pub mod registry;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use once_mcp::ServerConfig;

use once_web::Token;
use registry::{Entry, Published, Registry};

/// How long runs get to stop after SIGTERM before SIGKILL, when the session stops.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// A published, listening session.
#[derive(Debug)]
pub struct Session {
    listener: TcpListener,
    token: Token,
    config: Arc<ServerConfig>,
    web: once_web::Web,
    published: Arc<Published>,
    runtime: once_exec::Registry,
    port: u16,
    clients: Arc<listener::Clients>,
}

/// What the window reads beyond the server config: the live graph, the evaluators' transcripts,
/// and the hub its tools publish to.
pub struct WindowSources {
    pub live: Arc<once_mcp::LiveWorkspace>,
    pub evaluators: Arc<dyn Fn() -> serde_json::Value + Send + Sync>,
    pub evaluators_stamp: Arc<dyn Fn() -> u64 + Send + Sync>,
    pub hub: Arc<once_web::Hub>,
}

impl std::fmt::Debug for WindowSources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WindowSources").finish_non_exhaustive()
    }
}

/// What the signal thread needs to stop the session; cheap to clone.
#[derive(Debug, Clone)]
pub struct Stopper {
    published: Arc<Published>,
    runtime: once_exec::Registry,
}

impl Stopper {
    /// Removes the entry first (so nobody attaches to a session on its way out), then stops
    /// every run and runtime the session started.
    pub fn stop(&self) {
        self.published.remove();
        self.runtime.stop_all(STOP_GRACE);
    }
}

impl Session {
    /// Publishes a session of `workspace` (canonical) that will serve `config`; runs started
    /// through its tools register with `runtime`.
    pub fn start(
        registry: &Registry,
        workspace: &Path,
        config: Arc<ServerConfig>,
        runtime: once_exec::Registry,
        window: WindowSources,
    ) -> Result<Session> {
        let pid = std::process::id();
        let start_time = registry::start_time(pid).context("cannot read our own start time")?;
        let lock = registry.lock()?;
        registry.reap(&lock)?;
        if let Some(other) = registry
            .live()?
            .into_iter()
            .find(|entry| entry.workspace == workspace)
        {
            bail!(
                "a session already serves `{}` (pid {}, port {}); attach to it with \
                 `once mcp --attach`, or stop it first",
                workspace.display(),
                other.pid,
                other.port
            );
        }
        let listener = listener::bind().context("cannot listen on 127.0.0.1")?;
        let local = listener.local_addr().context("cannot read our port")?;
        let port = local.port();
        let clients = listener::Clients::new(local);
        let token = Token::generate().context("cannot draw a session token")?;
        let entry = Entry {
            pid,
            start_time,
            port,
            workspace: workspace.to_path_buf(),
            version: env!("CARGO_PKG_VERSION").into(),
            token: token.to_hex(),
            started_at: unix_now(),
        };
        let web = once_web::Web::new(
            port,
            token.clone(),
            once_web::Sources {
                root: workspace.to_path_buf(),
                config: Arc::clone(&config),
                live: window.live,
                evaluators: window.evaluators,
                evaluators_stamp: window.evaluators_stamp,
                hub: window.hub,
                claim: clients.claim_hook(),
            },
        )
        .context("cannot start the window")?;
        let published = Arc::new(registry.publish(&entry, &lock)?);
        Ok(Session {
            listener,
            token,
            config,
            web,
            published,
            runtime,
            port,
            clients,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// A new one-time link that opens the window in a browser.
    pub fn login_url(&self) -> Result<String> {
        self.web.login_url().context("cannot draw a login token")
    }

    pub fn entry_path(&self) -> PathBuf {
        self.published.path().to_path_buf()
    }

    pub fn stopper(&self) -> Stopper {
        Stopper {
            published: Arc::clone(&self.published),
            runtime: self.runtime.clone(),
        }
    }

    /// Serves clients, one at a time, until the process is stopped; returns only on a fatal
    /// error, after stopping everything and removing the entry.
    pub fn serve(self) -> Result<()> {
        let stopper = self.stopper();
        let result = listener::run(
            self.listener,
            self.token,
            self.config,
            self.web,
            self.clients,
        );
        stopper.stop();
        result.context("the session's listener failed")
    }
}

/// Seconds since the Unix epoch (0 for a clock set before it).
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}
