//! `once worker`: a bot of a remote execution server's pool, over the Remote Workers API that
//! BuildGrid hands work out by (`once-remote`'s `bots.rs`), running each action with once's own
//! containment (`once-exec`). It needs nothing of the graph or a workspace.
//!
//! Theory of operation: one session, one action at a time. The bot opens its session, then
//! loops on `UpdateBotSession`: idle, the call is the server's long poll for work; given a
//! lease, the bot acknowledges it (`ACTIVE`), prepares it (`perform::prepare`), runs the command
//! on a thread of its own while it keeps reporting the lease as active every third of the
//! session's lifetime (so the server never takes it for dead; a lease the server cancels or
//! takes back stops the command), then collects the outputs and reports the lease `COMPLETED`
//! with its `ActionResult`. The session is closed (`BOT_TERMINATING`, any unfinished lease
//! failed) on every way the worker stops: an error in the loop, the server gone for longer
//! than the session lives (nothing to close then, and it says so), and a stop signal, which
//! the signal thread handles itself over a connection of its own (the loop may be in a long
//! poll), after stopping the running command's process group. It must never run two actions at
//! once nor leave a command or a scratch folder behind.

mod input;
mod output;
mod perform;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, bail};
use once_exec::{Cancel, Registry};
use once_remote::remoteworkers::{BotSession, BotStatus, LeaseState};
use once_remote::{Client, complete_lease, fail_lease, lease_work, release_lease, time_out_lease};

use crate::cli::WorkerArgs;
use crate::exit::Outcome;
use crate::signals;

use perform::Performed;

/// The bound of every call but the long poll and the signal thread's last word.
const CALL_TIMEOUT: Duration = Duration::from_secs(20);
/// How long the server may hold a poll for work; BuildGrid shortens it to its keepalive.
const POLL: Duration = Duration::from_secs(30);
/// The bound of the last report when a signal stops the worker.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(3);
/// The most time between reports while a command runs, whatever the session's lifetime.
const MAX_HEARTBEAT: Duration = Duration::from_secs(30);
/// The least: a server that says its sessions last no time gets a report this often.
const MIN_HEARTBEAT: Duration = Duration::from_millis(200);
/// Waits between attempts to reach a server that went away, doubled up to `MAX_RETRY`.
const FIRST_RETRY: Duration = Duration::from_millis(250);
const MAX_RETRY: Duration = Duration::from_secs(4);

/// Runs `once worker` until a signal or an error stops it.
pub fn run(args: WorkerArgs) -> Result<Outcome> {
    let registry = Arc::new(Registry::new());
    let last_session: Arc<Mutex<Option<BotSession>>> = Arc::new(Mutex::new(None));
    {
        let registry = Arc::clone(&registry);
        let last_session = Arc::clone(&last_session);
        let server = args.server.clone();
        let instance = args.instance.clone();
        signals::install(move |signal| {
            // The command first, so that its process group is gone before the server hears
            // that the worker is.
            registry.stop_all(once_exec::DEFAULT_GRACE);
            let session = last_session
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(mut session) = session {
                match Client::connect(&server, &instance, Vec::new(), CLOSE_TIMEOUT) {
                    Ok(client) => close(&client, &mut session),
                    Err(e) => eprintln!("warning: cannot close the session: {e}"),
                }
            }
            std::process::exit(128 + signal);
        })
        .context("cannot install the signal handlers")?;
    }

    let client = Client::connect(&args.server, &args.instance, Vec::new(), CALL_TIMEOUT)
        .with_context(|| format!("cannot join the server at `{}`", args.server))?;
    let capabilities = client.capabilities()?;
    if !capabilities.execution_enabled {
        bail!(
            "the server at `{}` does not execute actions (its capabilities say so): point \
             `--server` at a server with remote execution, or check `--instance`",
            args.server
        );
    }
    let bot_id = args.bot_id.clone().unwrap_or_else(default_bot_id);
    let scratch = args.scratch.clone().unwrap_or_else(std::env::temp_dir);
    let mut session = client
        .create_bot_session(&bot_id, &platform(&args.properties), POLL)
        .with_context(|| format!("cannot open a session on `{}`", args.server))?;
    publish(&last_session, &session);
    eprintln!(
        "once worker: working for `{}` as `{bot_id}` (session `{}`)",
        args.server, session.name
    );
    let worker = Worker {
        client: &client,
        registry: &registry,
        last_session: &last_session,
        scratch,
        bot_id: bot_id.clone(),
    };
    let served = worker.serve(&mut session);
    if registry.is_shutting_down() {
        // A signal: its thread closes the session and ends the process (bounded by its calls'
        // timeouts); a report from here could undo the close.
        loop {
            std::thread::park();
        }
    }
    // Every way out of the loop closes the session, unless the server is gone with it.
    if let Err(error) = &served
        && !is_gone(error)
    {
        last_session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        close(&client, &mut session);
    }
    served.map(|()| Outcome::Success)
}

struct Worker<'a> {
    client: &'a Client,
    registry: &'a Registry,
    last_session: &'a Mutex<Option<BotSession>>,
    scratch: PathBuf,
    /// Named in each result's metadata, so a client can say where its action ran.
    bot_id: String,
}

impl Worker<'_> {
    /// The session loop; returns only with an error (a signal ends the process instead).
    fn serve(&self, session: &mut BotSession) -> Result<()> {
        // Leases reported but still echoed by the server: never run twice.
        let mut reported: HashSet<String> = HashSet::new();
        loop {
            reported.retain(|id| session.leases.iter().any(|l| &l.id == id));
            // BuildGrid hands a lease out already `ACTIVE`; the API says `PENDING`.
            let new = session.leases.iter().position(|l| {
                (l.state == LeaseState::Pending as i32 || l.state == LeaseState::Active as i32)
                    && !reported.contains(&l.id)
            });
            match new {
                None => {
                    // Reported leases are the server's to forget.
                    session
                        .leases
                        .retain(|l| l.state != LeaseState::Completed as i32);
                    self.update(session, POLL)?;
                }
                Some(i) => {
                    reported.insert(session.leases[i].id.clone());
                    self.perform(session, i)?;
                }
            }
        }
    }

    /// Acknowledges, runs and reports the lease at `index`.
    fn perform(&self, session: &mut BotSession, index: usize) -> Result<()> {
        let id = session.leases[index].id.clone();
        let started = SystemTime::now();
        session.leases[index].state = LeaseState::Active as i32;
        let work = lease_work(&session.leases[index]);
        self.update(session, CALL_TIMEOUT)?;
        let outcome = match work {
            Err(reason) => Err(reason),
            Ok(work) => match perform::prepare(self.client, work, &self.scratch, &id) {
                Err(e) => Err(format!("{e:#}")),
                Ok(prepared) => match self.run_reporting(session, &id, &prepared)? {
                    None => Ok(Performed::Stopped),
                    Some(outcome) => perform::finish(self.client, &prepared, outcome)?,
                },
            },
        };
        let Some(lease) = session.leases.iter_mut().find(|l| l.id == id) else {
            // Cancelled or handed to another bot meanwhile: nothing to report.
            return Ok(());
        };
        match outcome {
            Ok(Performed::Done(mut result)) => {
                self.stamp(&mut result, started);
                complete_lease(lease, &result);
            }
            Ok(Performed::TimedOut(mut result)) => {
                self.stamp(&mut result, started);
                time_out_lease(lease, &result);
            }
            Ok(Performed::Stopped) => {
                release_lease(
                    lease,
                    "the worker stopped before the action finished".into(),
                );
            }
            Err(reason) => {
                eprintln!("once worker: lease `{id}` failed: {reason}");
                fail_lease(lease, reason);
            }
        }
        self.update(session, CALL_TIMEOUT)
    }

    /// Says in `result` which bot ran it and when (the engine adds when it was queued).
    fn stamp(&self, result: &mut once_remote::reapi::ActionResult, started: SystemTime) {
        let meta = result
            .execution_metadata
            .get_or_insert_with(Default::default);
        meta.worker.clone_from(&self.bot_id);
        meta.worker_start_timestamp = Some(started.into());
        meta.worker_completed_timestamp = Some(SystemTime::now().into());
    }

    /// Runs the command on its own thread and reports the lease as active until it ends;
    /// `None` when the server cancelled the lease or gave it to another bot (the command is
    /// stopped then).
    fn run_reporting(
        &self,
        session: &mut BotSession,
        id: &str,
        prepared: &perform::Prepared,
    ) -> Result<Option<once_exec::Outcome>> {
        let cancel = Cancel::new();
        let (sender, receiver) = mpsc::channel();
        std::thread::scope(|scope| -> Result<Option<once_exec::Outcome>> {
            let spec = &prepared.spec;
            let registry = self.registry;
            let cancel_run = cancel.clone();
            scope.spawn(move || {
                let _ = sender.send(once_exec::run(spec, registry, &cancel_run));
            });
            let mut taken_back = false;
            loop {
                match receiver.recv_timeout(heartbeat(session)) {
                    Ok(outcome) => {
                        let outcome = outcome.context("cannot run the command")?;
                        return Ok((!taken_back).then_some(outcome));
                    }
                    Err(RecvTimeoutError::Disconnected) => {
                        bail!("the command's thread ended without an outcome")
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                }
                if taken_back {
                    continue;
                }
                if let Err(e) = self.update(session, CALL_TIMEOUT) {
                    cancel.cancel();
                    return Err(e);
                }
                let ours = session.leases.iter().find(|l| l.id == id);
                if ours.is_none_or(|l| l.state == LeaseState::Cancelled as i32) {
                    taken_back = true;
                    cancel.cancel();
                }
            }
        })
    }

    /// One `UpdateBotSession`, retried while the server is unreachable and the session may
    /// still be alive.
    fn update(&self, session: &mut BotSession, wait: Duration) -> Result<()> {
        let mut retry = FIRST_RETRY;
        loop {
            // Once a signal is stopping the worker, only its thread speaks to the server: a
            // report from here says the bot is fine and would take the lease straight back.
            if self.registry.is_shutting_down() {
                bail!("the worker is stopping");
            }
            match self.client.update_bot_session(session, wait) {
                Ok(answer) => {
                    *session = answer;
                    publish(self.last_session, session);
                    return Ok(());
                }
                Err(once_remote::Error::CannotReach { url, detail }) => {
                    if expired(session) {
                        return Err(anyhow::Error::new(Gone { url, detail }));
                    }
                    std::thread::sleep(retry);
                    retry = (retry * 2).min(MAX_RETRY);
                }
                Err(e) => return Err(e).context("the server refused the session's update"),
            }
        }
    }
}

/// The server went away for longer than the session lives: there is nothing left to close.
#[derive(Debug)]
struct Gone {
    url: String,
    detail: String,
}

impl std::fmt::Display for Gone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "lost the server at `{}` for longer than its session lives ({}): start `once worker` \
             again once the server is back",
            self.url, self.detail
        )
    }
}

impl std::error::Error for Gone {}

fn is_gone(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| cause.is::<Gone>())
}

/// Tells the server the worker is leaving, failing any lease it did not finish; best effort.
fn close(client: &Client, session: &mut BotSession) {
    session.status = BotStatus::BotTerminating as i32;
    for lease in &mut session.leases {
        if lease.state == LeaseState::Active as i32 || lease.state == LeaseState::Pending as i32 {
            release_lease(
                lease,
                "the worker stopped before the action finished".into(),
            );
        }
    }
    if let Err(e) = client.update_bot_session(session, CLOSE_TIMEOUT) {
        eprintln!("warning: cannot close the session `{}`: {e}", session.name);
    }
}

fn publish(last: &Mutex<Option<BotSession>>, session: &BotSession) {
    *last.lock().unwrap_or_else(PoisonError::into_inner) = Some(session.clone());
}

/// A third of what is left of the session's life, within bounds.
fn heartbeat(session: &BotSession) -> Duration {
    left(session)
        .map(|left| left / 3)
        .unwrap_or(MAX_HEARTBEAT)
        .clamp(MIN_HEARTBEAT, MAX_HEARTBEAT)
}

fn expired(session: &BotSession) -> bool {
    left(session).is_some_and(|left| left.is_zero())
}

/// Time until the server forgets the session, by its `expire_time`.
fn left(session: &BotSession) -> Option<Duration> {
    let at = session.expire_time.as_ref()?;
    let at = SystemTime::UNIX_EPOCH
        + Duration::new(
            u64::try_from(at.seconds).ok()?,
            u32::try_from(at.nanos).ok()?,
        );
    Some(at.duration_since(SystemTime::now()).unwrap_or_default())
}

/// What this machine offers, in the REAPI platform lexicon, and what `--property` adds.
fn platform(properties: &[(String, String)]) -> Vec<(String, String)> {
    let isa = match std::env::consts::ARCH {
        "x86_64" => "x86-64",
        "x86" => "x86-32",
        "aarch64" => "arm-a64",
        other => other,
    };
    let mut offered = vec![
        ("OSFamily".to_owned(), std::env::consts::OS.to_owned()),
        ("ISA".to_owned(), isa.to_owned()),
    ];
    offered.extend(properties.iter().cloned());
    offered
}

/// `host-pid`: unique among the bots of one machine, and says where to look.
fn default_bot_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "once-worker".to_owned());
    format!("{host}-{}", std::process::id())
}
