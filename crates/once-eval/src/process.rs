//! One live adapter process (Python or Node.js): how it is started, how it is talked to, how it
//! ends.
//!
//! The process leads its own group, with stdin from `/dev/null`, descriptors 1 and 2 on one
//! pipe (drained by [`Stray`]), and descriptor 3 one end of a socket pair: the private channel
//! of the protocol, which evaluated code never writes to by accident. Between `fork` and `exec`
//! the child clears its signal mask (the binary blocks its stop signals in every thread), sets
//! SIGINT and SIGPIPE back to their defaults (an ignored SIGINT survives `exec`, and Python then
//! never turns it into `KeyboardInterrupt`), asks for SIGKILL when the launcher thread dies, and
//! enters the containment of `once_exec` (a PID namespace of its own where the kernel allows),
//! so nothing the evaluated code starts outlives the evaluator, even a `setsid`'d process or a
//! SIGKILL of `once`. A reader thread turns reply lines into [`Event`]s. This module must never reap the leader
//! before taking its group (see `group.rs`), nor run code between `fork` and `exec` that is not
//! async-signal-safe.

use std::io::{self, BufRead, BufReader, Write};
use std::mem::MaybeUninit;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::mpsc::Sender;
use std::thread;

use crate::event::Event;
use crate::group::{self, Group};
use crate::launcher::Launcher;
use crate::reply;
use crate::spec::{EvaluatorSpec, Language, OUTPUT_CAP};
use crate::stray::Stray;

const PYTHON_ADAPTER: &str = include_str!("../adapters/python.py");
const NODE_ADAPTER: &str = include_str!("../adapters/node.js");

/// How long an ended evaluator's group may take to finish dying.
const GONE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The descriptor the adapters read requests from and write replies to.
const CHANNEL_FD: libc::c_int = 3;

#[derive(Debug)]
pub(crate) struct AdapterProcess {
    child: Child,
    channel: UnixStream,
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
        let (ours, theirs) = UnixStream::pair()?;
        let (stray_reader, stray_writer) = io::pipe()?;
        let mut command = Command::new("/bin/sh");
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
        let channel_fd = theirs.as_raw_fd();
        // Probed before the fork: a forked child may not probe.
        once_exec::Containment::current();
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: `prepare_child` only makes async-signal-safe calls and touches no shared memory.
        unsafe {
            command.pre_exec(move || prepare_child(parent, channel_fd));
        }
        let child = launcher.spawn(command)?;
        // The child has its own copies; ours would keep the pipe and the socket open forever.
        drop(theirs);
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

    /// Sends SIGINT to the group, as a terminal's Ctrl-C would: the interpreter raises in the
    /// evaluated code, and the subprocesses it waits on stop too.
    pub(crate) fn interrupt(&self) {
        self.group.signal(libc::SIGINT);
    }

    /// Whether the process has exited (killed from outside, crashed), without reaping it.
    pub(crate) fn has_exited(&self) -> bool {
        child_pid(&self.child).map_or(true, group::has_exited)
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
    match status.map(|status| (status.code(), status.signal())) {
        Some((Some(code), _)) => format!("exited with status {code}"),
        Some((None, Some(signal))) => {
            let name = match signal {
                libc::SIGKILL => " (SIGKILL)",
                libc::SIGTERM => " (SIGTERM)",
                libc::SIGINT => " (SIGINT)",
                libc::SIGSEGV => " (SIGSEGV)",
                libc::SIGABRT => " (SIGABRT)",
                _ => "",
            };
            format!("was killed by signal {signal}{name}")
        }
        _ => "ended".into(),
    }
}

fn read_replies(channel: UnixStream, generation: u64, events: Sender<Event>) {
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

/// Runs in the child between `fork` and `exec`.
fn prepare_child(parent: libc::pid_t, channel_fd: libc::c_int) -> io::Result<()> {
    // SAFETY: every call below is async-signal-safe and only passes pointers to this stack frame.
    unsafe {
        if libc::setpgid(0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut empty = MaybeUninit::<libc::sigset_t>::zeroed();
        libc::sigemptyset(empty.as_mut_ptr());
        if libc::sigprocmask(libc::SIG_SETMASK, empty.as_ptr(), std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
        for signal in [libc::SIGPIPE, libc::SIGINT] {
            if libc::signal(signal, libc::SIG_DFL) == libc::SIG_ERR {
                return Err(io::Error::last_os_error());
            }
        }
        if channel_fd == CHANNEL_FD {
            // dup2 onto itself would keep close-on-exec set.
            let flags = libc::fcntl(CHANNEL_FD, libc::F_GETFD);
            if flags < 0 || libc::fcntl(CHANNEL_FD, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                return Err(io::Error::last_os_error());
            }
        } else if libc::dup2(channel_fd, CHANNEL_FD) < 0 {
            return Err(io::Error::last_os_error());
        }
        // Only Linux has a death signal; elsewhere a SIGKILL of `once` leaves the evaluator.
        #[cfg(target_os = "linux")]
        {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The launcher may have died between fork and prctl; then no death signal would come.
            if libc::getppid() != parent {
                libc::_exit(127);
            }
        }
        // Last: the shims it forks keep descriptor 3 and the signal state out of their own way.
        once_exec::enter_containment(parent)
    }
}
