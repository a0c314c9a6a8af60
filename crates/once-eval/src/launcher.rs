//! The thread every evaluator process is forked from.
//!
//! `PR_SET_PDEATHSIG` fires when the *thread* that forked a child exits, not the process. An
//! evaluator outlives the request that started it (in `once serve`, the connection thread that
//! asked for it ends when the client disconnects), so forking on the caller's thread would kill
//! the evaluator with it. Forking here instead ties every evaluator's death signal to the life
//! of its [`Evaluators`](crate::Evaluators): the thread ends only when they are dropped. (On
//! Windows a job, not a thread, holds the evaluator: the same thread spawns it into the job.)
//! This module must never do anything but spawn: a slow spawn here delays every other target's.

use std::io;
use std::process::{Child, Command};
use std::sync::mpsc::{self, Sender};
use std::sync::{Mutex, PoisonError};
use std::thread;

use crate::error::Error;

type Job = (Command, Sender<io::Result<Child>>);

#[derive(Debug)]
pub(crate) struct Launcher {
    jobs: Mutex<Sender<Job>>,
}

impl Launcher {
    pub(crate) fn start() -> Result<Launcher, Error> {
        let (jobs, queue) = mpsc::channel::<Job>();
        thread::Builder::new()
            .name("evaluator launcher".into())
            .spawn(move || {
                for (mut command, reply) in queue {
                    let _ = reply.send(spawn(&mut command));
                }
            })
            .map_err(|source| Error::Thread {
                role: "launcher",
                source,
            })?;
        Ok(Launcher {
            jobs: Mutex::new(jobs),
        })
    }

    /// Spawns `command` on the launcher thread and returns the child.
    pub(crate) fn spawn(&self, command: Command) -> io::Result<Child> {
        let (reply, answer) = mpsc::channel();
        let gone = || io::Error::other("the evaluator launcher thread is gone");
        self.jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send((command, reply))
            .map_err(|_| gone())?;
        answer.recv().map_err(|_| gone())?
    }
}

#[cfg(unix)]
fn spawn(command: &mut Command) -> io::Result<Child> {
    command.spawn()
}

/// Into a job of its own: the Windows containment, as `pre_exec` is on Unix.
#[cfg(windows)]
fn spawn(command: &mut Command) -> io::Result<Child> {
    once_exec::spawn_contained(command)
}
