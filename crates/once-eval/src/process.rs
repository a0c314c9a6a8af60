//! One live adapter process (Python or Node.js): how it is started, how it is talked to, how it
//! ends.
//!
//! The process leads its own group, with stdin from the null device, descriptors 1 and 2 on one
//! pipe (drained by [`Stray`]), and a private channel for the protocol, which evaluated code
//! never writes to by accident: on Unix descriptor 3, one end of a socket pair (see `unix.rs`),
//! on Windows a loopback connection the adapter opens (see `windows.rs`). Either way it starts
//! in the containment of `once_exec`, so nothing the evaluated code starts outlives the
//! evaluator. A reader thread turns reply lines into [`Event`]s. This module must never reap the
//! leader before taking its group (see `group.rs`).

use std::io::{self, BufRead, BufReader, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::mpsc::Sender;
use std::thread;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as platform;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as platform;

use crate::event::Event;
use crate::group::Group;
use crate::launcher::Launcher;
use crate::reply;
use crate::spec::{EvaluatorSpec, Language, OUTPUT_CAP};
use crate::stray::Stray;

pub(crate) const PYTHON_ADAPTER: &str = include_str!("../adapters/python.py");
pub(crate) const NODE_ADAPTER: &str = include_str!("../adapters/node.js");

/// How long an ended evaluator's group may take to finish dying.
const GONE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

#[derive(Debug)]
pub(crate) struct AdapterProcess {
    child: Child,
    channel: platform::Channel,
    pub(crate) stray: Arc<Stray>,
    pub(crate) group: Arc<Group>,
}

impl AdapterProcess {
    /// Spawns the adapter; it is not ready until it has answered a first evaluation.
    pub(crate) fn spawn(
        launcher: &Launcher,
        spec: &EvaluatorSpec,
        group: Arc<Group>,
        generation: u64,
        events: Sender<Event>,
    ) -> io::Result<AdapterProcess> {
        let (flag, source) = match spec.language {
            Language::Python => ("-c", PYTHON_ADAPTER),
            Language::Node => ("-e", NODE_ADAPTER),
            Language::Nrepl => return Err(io::Error::other("nREPL has no adapter process")),
        };
        let (stray_reader, stray_writer) = io::pipe()?;
        let mut command = Command::new(platform::SHELL);
        // `exec` through the shell so `command` may be shell words (`uv run python`) while the
        // interpreter itself, not a shell, leads the group and receives the interrupts.
        command
            .arg("-c")
            .arg(format!("exec {} \"$@\"", spec.interpreter()))
            .arg("once-eval")
            .arg(flag)
            .arg(source)
            .current_dir(&spec.cwd)
            .env_clear()
            .envs(once_exec::base_env())
            .envs(&spec.env)
            .stdin(Stdio::null())
            .stdout(Stdio::from(stray_writer.try_clone()?))
            .stderr(Stdio::from(stray_writer));
        let (child, ours) = platform::start(launcher, command, spec)?;
        let pid = child_pid(&child)?;
        group.set(pid);
        let stray = Arc::new(Stray::new(OUTPUT_CAP));
        let drain = Arc::clone(&stray);
        let spawned = thread::Builder::new()
            .name(format!("evaluator {pid} output"))
            .spawn(move || drain.drain(stray_reader));
        let reader = ours.try_clone();
        let process = AdapterProcess {
            child,
            channel: ours,
            stray,
            group,
        };
        // From here on, dropping `process` on an error path kills and reaps it.
        spawned?;
        let reader = reader?;
        thread::Builder::new()
            .name(format!("evaluator {pid} replies"))
            .spawn(move || read_replies(reader, generation, events))?;
        Ok(process)
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends one request line.
    pub(crate) fn send(&mut self, id: u64, code: &str) -> io::Result<()> {
        self.channel
            .write_all(&reply::request(id, code, OUTPUT_CAP))
    }

    /// Interrupts the evaluated code as a terminal's Ctrl-C would (see [`Group::interrupt`]).
    pub(crate) fn interrupt(&self) {
        self.group.interrupt();
    }

    /// Whether the process has exited (killed from outside, crashed), without reaping it.
    pub(crate) fn has_exited(&self) -> bool {
        platform::has_exited(&self.child)
    }

    /// Kills the group and reaps the leader; says how the leader ended.
    pub(crate) fn end(mut self) -> Option<ExitStatus> {
        self.finish()
    }

    fn finish(&mut self) -> Option<ExitStatus> {
        let group = self.group.take();
        let _ = self.channel.shutdown(std::net::Shutdown::Both);
        let status = self.child.wait().ok();
        // The leader is a shim that died at once; the rest of the group (the namespace's init
        // and the interpreter) may still be dying, and nothing may outlive the evaluator.
        if let Some(pgid) = group
            && !once_exec::wait_group_gone(pgid, GONE_WAIT)
        {
            tracing::warn!(
                pgid,
                "an evaluator's processes outlived SIGKILL for {GONE_WAIT:?}"
            );
        }
        status
    }
}

impl Drop for AdapterProcess {
    fn drop(&mut self) {
        // After `end` this finds no group and an already reaped child: both are no-ops.
        self.finish();
    }
}

fn child_pid(child: &Child) -> io::Result<i32> {
    i32::try_from(child.id()).map_err(|_| io::Error::other("a pid that does not fit in pid_t"))
}

/// How an evaluator process ended, in words that follow "the evaluator …".
pub(crate) fn describe_exit(status: Option<ExitStatus>) -> String {
    match status {
        Some(status) => match status.code() {
            Some(code) => format!("exited with status {code}"),
            None => platform::describe_signal(status).unwrap_or_else(|| "ended".into()),
        },
        None => "ended".into(),
    }
}

fn read_replies(channel: platform::Channel, generation: u64, events: Sender<Event>) {
    let mut lines = BufReader::new(channel);
    let mut line = String::new();
    loop {
        line.clear();
        match lines.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => match reply::parse(&line) {
                Some(reply) => {
                    if events.send(Event::Reply { generation, reply }).is_err() {
                        return;
                    }
                }
                None => {
                    if let Some((id, text)) = reply::parse_output(&line) {
                        let output = Event::Output {
                            generation,
                            id,
                            text,
                        };
                        if events.send(output).is_err() {
                            return;
                        }
                        continue;
                    }
                    // Something wrote garbage on the private channel: the adapter can no
                    // longer be trusted, so treat it as gone.
                    tracing::warn!(
                        line = line.trim_end(),
                        "evaluator sent a line that is not a reply"
                    );
                    break;
                }
            },
        }
    }
    let _ = events.send(Event::Closed { generation });
}
