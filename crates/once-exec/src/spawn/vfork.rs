//! Starting a command on Linux without copying `once`: the child that becomes the command (or,
//! in the pid-namespace mode, its shim) is a clone that shares `once`'s memory, the way
//! `posix_spawn` starts a program, instead of a fork.
//!
//! Why: a fork copies `once`'s page tables, and until the child execs or exits every page `once`
//! writes is copied once more. A pid-namespace shim never execs; it lives as long as its command,
//! so with a fork `once` paid copy-on-write faults for the whole build, and more the larger the
//! workspace (a 5,000-package graph is a large process).
//!
//! How, and what keeps it sound:
//! - A dedicated thread (the *waiter*) clones with `CLONE_VM | CLONE_VFORK`, so it is suspended
//!   until the child execs or exits. The child's libc calls write `errno` into the waiter's
//!   thread-local storage, which nothing reads while it is suspended. In the pid-namespace mode
//!   the waiter stays suspended while the command runs, then reaps the shim as before.
//! - The child runs on a stack of its own ([`Stack`]), only makes async-signal-safe system calls
//!   and reads [`Start`], which outlives it: the waiter holds it across the clone.
//! - Every signal is blocked across the clone, and the child sets each caught signal back to its
//!   default before it unblocks any: a handler of `once`'s run in the child would write `once`'s
//!   memory.
//! - The kernel writes the child's pid into [`Start`] before the child runs
//!   (`CLONE_PARENT_SETTID`). Whoever first settles the outcome (started, or failed with an
//!   errno) writes one byte to a pipe the calling thread reads, so [`spawn`] returns as soon as
//!   the command runs, while the waiter may still be suspended.
//! - A user namespace cannot be unshared by a process that shares its memory, so when one is
//!   needed the clone itself makes it (`CLONE_NEWUSER`) and the shim maps its ids.
//!
//! The subreaper mode forks its command from the shim, which a process sharing `once`'s memory
//! must never do, so it keeps the fork (see `unix.rs`).

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read};
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::mpsc::Sender;
use std::thread;
use std::time::Duration;

use crate::contain::{Containment, Probe};
use crate::exec::Exec;
use crate::group;
use crate::run::wait_for_leader;
use crate::shim::{self, FAILED, STOPS, UserNamespace, sigset};
use crate::spawn::{SpawnError, Spawned};
use crate::spec::CommandSpec;
use crate::wake::Wake;

/// The child's stack. Its deepest use is the shim's frame, which holds the two 32 KiB stacks of
/// the init and of the clone that execs; a guard page below catches anything deeper.
const STACK: usize = 256 * 1024;

/// The outcome is not known yet.
const PENDING: i32 = 0;
/// The command runs (it exec'd, or the shim started it in its namespace).
const STARTED: i32 = 1;
/// The shim ended without saying it started the command (it was killed).
const SHIM_ENDED: i32 = 2;

/// How long a killed shim's init may take to die before its waiter gives up on freeing what the
/// init runs on. SIGKILL ends it far sooner unless the kernel is stuck.
const LINGER: Duration = Duration::from_secs(60);

/// What the child becomes.
#[derive(Debug, Clone, Copy)]
enum Becomes {
    /// The command itself (process-group mode).
    Command,
    /// The shim of a new PID namespace, which starts the command in it.
    Shim(UserNamespace),
}

/// Whether this path can start commands in `probe`'s mode.
pub(super) fn serves(probe: Probe) -> bool {
    matches!(
        probe.mode,
        Containment::PidNamespace | Containment::ProcessGroup
    )
}

/// Everything the child reads, prepared before the clone; shared with it through memory.
struct Start {
    exec: Exec,
    cwd: CString,
    /// What the child puts at descriptors 0, 1 and 2: all above 2, and close-on-exec here.
    stdio: [RawFd; 3],
    /// The write end of the pipe [`spawn`] waits on.
    report: RawFd,
    /// `once`'s pid: a child whose parent is another has outlived it.
    parent: libc::pid_t,
    becomes: Becomes,
    /// The child's pid, written by the kernel before the child runs.
    pid: AtomicI32,
    /// [`PENDING`], [`STARTED`], [`SHIM_ENDED`], or a negated errno.
    outcome: AtomicI32,
    /// Set by a shim that has killed and reaped its init: nothing of its runs on shared memory.
    init_gone: AtomicBool,
}

impl shim::Watcher for Start {
    fn started(&self) {
        self.settle(STARTED);
    }

    fn init_gone(&self) {
        self.init_gone.store(true, Ordering::SeqCst);
    }
}

impl Start {
    /// Settles the outcome if nobody has, and then wakes [`spawn`]. Async-signal-safe.
    fn settle(&self, outcome: i32) {
        if self
            .outcome
            .compare_exchange(PENDING, outcome, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            let byte = 1u8;
            // SAFETY: one byte from the stack to a descriptor this process holds. A failed
            // write cannot be reported from here; the waiter's own settle then wakes `spawn`.
            unsafe { libc::write(self.report, (&raw const byte).cast(), 1) };
        }
    }
}

/// Spawns `exec` (`sh -c COMMAND`) in `spec.cwd` as a clone sharing `once`'s memory, leading its
/// own group, with its output piped; the waiter then tells `waker` when the leader exits.
pub(super) fn spawn(
    spec: &CommandSpec,
    exec: Exec,
    probe: Probe,
    parent: libc::pid_t,
    waker: Sender<Wake>,
) -> Result<Spawned, SpawnError> {
    let command = SpawnError::Command;
    let cwd = CString::new(spec.cwd.as_os_str().as_bytes()).map_err(|_| {
        command(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a NUL byte in the folder",
        ))
    })?;
    let null = above_stdio(File::open("/dev/null").map_err(command)?.into())?;
    let (out_read, out_write) = pipe()?;
    let (err_read, err_write) = pipe()?;
    let (report_read, report_write) = pipe()?;
    let becomes = match probe.mode {
        Containment::PidNamespace if probe.user_namespace => {
            Becomes::Shim(UserNamespace::Entered {
                // SAFETY: neither call has preconditions.
                uid: unsafe { libc::geteuid() },
                // SAFETY: as above.
                gid: unsafe { libc::getegid() },
            })
        }
        Containment::PidNamespace => Becomes::Shim(UserNamespace::None),
        _ => Becomes::Command,
    };
    let start = Arc::new(Start {
        exec,
        cwd,
        stdio: [
            null.as_raw_fd(),
            out_write.as_raw_fd(),
            err_write.as_raw_fd(),
        ],
        report: report_write.as_raw_fd(),
        parent,
        becomes,
        pid: AtomicI32::new(0),
        outcome: AtomicI32::new(PENDING),
        init_gone: AtomicBool::new(false),
    });
    let shared = Arc::clone(&start);
    thread::Builder::new()
        .name("once-exec-wait".into())
        .spawn(move || wait(&shared, report_write, waker))
        .map_err(|source| SpawnError::Thread("waiter", source))?;

    // Exactly one byte comes, from whoever settles first; end of file means the waiter is gone
    // without settling, which only a panic could do.
    let mut report = File::from(report_read);
    let mut byte = [0u8; 1];
    let woke = loop {
        match report.read(&mut byte) {
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            other => break other,
        }
    };
    // The clone has copied our descriptors (or never will): ours must close, or the capture
    // would wait for our own write ends.
    drop((null, out_write, err_write));
    match (woke, start.outcome.load(Ordering::SeqCst)) {
        (Ok(1), STARTED) => Ok(Spawned {
            pid: start.pid.load(Ordering::SeqCst),
            pipes: [
                Box::new(File::from(out_read)),
                Box::new(File::from(err_read)),
            ],
        }),
        (Ok(1), SHIM_ENDED) => Err(command(io::Error::other(
            "the containment shim ended before the command started",
        ))),
        (Ok(1), failed) if failed < 0 => Err(command(io::Error::from_raw_os_error(-failed))),
        (Err(source), _) => Err(SpawnError::Thread("waiter", source)),
        (Ok(_), _) => Err(SpawnError::Thread(
            "waiter",
            io::Error::other("the waiter ended before the command started"),
        )),
    }
}

/// The waiter: clones the child, settles what the clone's return tells, then waits for the
/// leader like any waiter (or reaps a child that failed).
fn wait(start: &Start, report_write: OwnedFd, waker: Sender<Wake>) {
    let stack = match Stack::new() {
        Ok(stack) => stack,
        Err(error) => {
            start.settle(-error.raw_os_error().unwrap_or(libc::EIO));
            return;
        }
    };
    let pid = match clone_child(start, &stack) {
        Ok(pid) => pid,
        Err(error) => {
            start.settle(-error.raw_os_error().unwrap_or(libc::EIO));
            return;
        }
    };
    // Back from a vfork-style clone, the child has exec'd or ended. A command that exec'd runs;
    // a shim that ended without settling was killed before it started the command.
    start.settle(match start.becomes {
        Becomes::Command => STARTED,
        Becomes::Shim(_) => SHIM_ENDED,
    });
    drop(report_write);
    // A shim that ended normally reaped its init first. One that was killed may leave its init
    // (or the clone that execs) running for a moment on `stack`, writing this thread's `errno`:
    // both must outlive them.
    let clean = match start.becomes {
        Becomes::Command => true,
        Becomes::Shim(_) => start.init_gone.load(Ordering::SeqCst),
    };
    if start.outcome.load(Ordering::SeqCst) == STARTED {
        wait_for_leader(pid, &waker);
    } else {
        // It exited at once; nobody else will reap it.
        let _ = group::reap(pid);
    }
    if !clean && !group::wait_gone(pid, LINGER) {
        tracing::warn!(
            pid,
            "a killed shim's init outlived it for {LINGER:?}; keeping its stack and thread"
        );
        std::mem::forget(stack);
        // This thread's `errno` may still be written: it must never be reused.
        loop {
            thread::park();
        }
    }
}

/// Clones the child and returns its pid once it has exec'd or ended.
fn clone_child(start: &Start, stack: &Stack) -> io::Result<libc::pid_t> {
    let mut flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PARENT_SETTID | libc::SIGCHLD;
    if let Becomes::Shim(UserNamespace::Entered { .. }) = start.becomes {
        flags |= libc::CLONE_NEWUSER;
    }
    let mut all = MaybeUninit::<libc::sigset_t>::zeroed();
    let mut before = MaybeUninit::<libc::sigset_t>::zeroed();
    // SAFETY: valid out-pointers; the child reads `start` only while this thread is suspended
    // in `clone`, and runs on `stack`, which outlives the call.
    unsafe {
        libc::sigfillset(all.as_mut_ptr());
        libc::pthread_sigmask(libc::SIG_SETMASK, all.as_ptr(), before.as_mut_ptr());
        let pid = libc::clone(
            child,
            stack.top(),
            flags,
            std::ptr::from_ref(start).cast_mut().cast(),
            start.pid.as_ptr(),
        );
        let error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, before.as_ptr(), std::ptr::null_mut());
        if pid < 0 { Err(error) } else { Ok(pid) }
    }
}

/// The child: becomes the command, or its shim. Never returns.
extern "C" fn child(start: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `start` is the waiter's `Start`, alive while the waiter is suspended, which is
    // until this process execs or exits; only async-signal-safe calls follow.
    unsafe {
        let start = &*start.cast::<Start>();
        if let Err(error) = prepare(start) {
            start.settle(-error.raw_os_error().unwrap_or(libc::EIO));
            libc::_exit(FAILED);
        }
        let error = match start.becomes {
            Becomes::Command => {
                set_mask(&[]);
                start.exec.execve()
            }
            Becomes::Shim(user) => {
                set_mask(&STOPS);
                match shim::namespace(user, Some(&start.exec), start) {
                    Err(error) => error,
                    // With a command to exec, the shim only returns on failure.
                    Ok(()) => io::Error::from_raw_os_error(libc::EIO),
                }
            }
        };
        start.settle(-error.raw_os_error().unwrap_or(libc::EIO));
        libc::_exit(FAILED)
    }
}

/// What every child does first, with every signal still blocked: no handler of `once`'s, a
/// group of its own, a death signal, its descriptors and its folder.
///
/// # Safety
///
/// Only in the child between the clone and the exec, while it shares `once`'s memory: it must
/// stay async-signal-safe and change nothing but its own registers, stack and process state.
unsafe fn prepare(start: &Start) -> io::Result<()> {
    // SAFETY: async-signal-safe calls on this stack and on `start`'s read-only fields.
    unsafe {
        default_every_handler();
        if libc::setpgid(0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
            return Err(io::Error::last_os_error());
        }
        // The waiter may have died between the clone and prctl; then no death signal will come,
        // and nobody reads what we would report.
        if libc::getppid() != start.parent {
            libc::_exit(FAILED);
        }
        for (target, &fd) in start.stdio.iter().enumerate() {
            if libc::dup2(fd, target as libc::c_int) < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        if libc::chdir(start.cwd.as_ptr()) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// Sets every caught signal back to its default, and SIGPIPE too (Rust ignores it, and an
/// ignored disposition survives exec: `yes | head` must end). Other ignored signals stay so.
///
/// # Safety
///
/// Only in a child before it execs, with every signal blocked: in `once` itself it would
/// remove the handlers its orderly shutdown depends on.
unsafe fn default_every_handler() {
    // SAFETY: sigaction with valid pointers to this stack.
    unsafe {
        let mut default = MaybeUninit::<libc::sigaction>::zeroed().assume_init();
        default.sa_sigaction = libc::SIG_DFL;
        for signal in 1..=libc::SIGRTMAX() {
            let mut old = MaybeUninit::<libc::sigaction>::zeroed();
            // Fails for SIGKILL, SIGSTOP and the C library's own signals: nothing to reset.
            if libc::sigaction(signal, std::ptr::null(), old.as_mut_ptr()) != 0 {
                continue;
            }
            let old = old.assume_init().sa_sigaction;
            if old != libc::SIG_DFL && (old != libc::SIG_IGN || signal == libc::SIGPIPE) {
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
    }
}

/// Blocks exactly `signals`.
///
/// # Safety
///
/// Only in a child before it execs: it replaces the calling thread's whole mask, which in
/// `once` would let signals reach threads that must not take them.
unsafe fn set_mask(signals: &[libc::c_int]) {
    // SAFETY: a valid set on this stack.
    unsafe { libc::sigprocmask(libc::SIG_SETMASK, &sigset(signals), std::ptr::null_mut()) };
}

/// A pipe whose ends are close-on-exec and above 2.
fn pipe() -> Result<(OwnedFd, OwnedFd), SpawnError> {
    let (read, write) = io::pipe().map_err(SpawnError::Command)?;
    Ok((above_stdio(read.into())?, above_stdio(write.into())?))
}

/// `fd`, moved above 2 if it is one of 0, 1 or 2 (only when `once` started with one closed):
/// the child's `dup2` onto 0, 1 and 2 must never overwrite a descriptor it has yet to copy.
fn above_stdio(fd: OwnedFd) -> Result<OwnedFd, SpawnError> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: fcntl on a descriptor we own; the new one is ours alone.
    let moved = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if moved < 0 {
        return Err(SpawnError::Command(io::Error::last_os_error()));
    }
    // SAFETY: `moved` is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(moved) })
}

/// An `mmap`'d stack with a guard page at its low end.
struct Stack {
    base: *mut libc::c_void,
    length: usize,
}

impl Stack {
    fn new() -> io::Result<Stack> {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let length = STACK + page;
        // SAFETY: a fresh anonymous mapping; nothing else refers to it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                length,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = Stack { base, length };
        // SAFETY: the first page of our own mapping.
        if unsafe { libc::mprotect(base, page, libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }

    /// The stack's top, where it starts (it grows down); page-aligned, so 16-byte aligned.
    fn top(&self) -> *mut libc::c_void {
        // SAFETY: one past the end of our own mapping.
        unsafe { self.base.cast::<u8>().add(self.length).cast() }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: our own mapping, which no process uses any more: the child has exec'd or ended.
        unsafe { libc::munmap(self.base, self.length) };
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;
    use std::io::{BufRead, BufReader};
    use std::path::Path;
    use std::sync::mpsc;

    use super::*;
    use crate::outcome::Status;

    /// `kcmp`'s type for "do these two processes share their memory?".
    const KCMP_VM: libc::c_long = 1;

    /// A fresh folder of this test's own, removed when dropped.
    struct Scratch(std::path::PathBuf);

    impl Scratch {
        fn new() -> Scratch {
            static NEXT: AtomicI32 = AtomicI32::new(0);
            let path = std::env::temp_dir().join(format!(
                "once-exec-vfork-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::SeqCst)
            ));
            std::fs::create_dir_all(&path).unwrap();
            Scratch(path)
        }

        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn start(
        command: &str,
        cwd: &Path,
        mode: Containment,
        user_namespace: bool,
    ) -> (Result<Spawned, SpawnError>, mpsc::Receiver<Wake>) {
        let spec = CommandSpec::new(command, cwd, cwd.join("log"));
        let sh = OsStr::new("/bin/sh");
        let exec = Exec::new(
            sh,
            [sh, OsStr::new("-c"), OsStr::new(command)],
            [(OsStr::new("PATH"), OsStr::new("/usr/bin:/bin"))],
        )
        .unwrap();
        let probe = Probe {
            mode,
            user_namespace,
        };
        let (waker, wakes) = mpsc::channel();
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        (spawn(&spec, exec, probe, parent, waker), wakes)
    }

    /// Waits for the leader to exit, reaps it, and says how it ended.
    fn end(pid: i32, wakes: &mpsc::Receiver<Wake>) -> Status {
        assert!(matches!(wakes.recv().unwrap(), Wake::Exited(Ok(()))));
        group::reap(pid).unwrap()
    }

    fn lines(spawned: Spawned) -> Vec<String> {
        let [stdout, _] = spawned.pipes;
        BufReader::new(stdout).lines().map(Result::unwrap).collect()
    }

    fn shares_our_memory(pid: i32) -> bool {
        // SAFETY: kcmp only compares two processes' kernel objects.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_kcmp,
                libc::getpid(),
                pid,
                KCMP_VM,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            )
        };
        assert!(rc >= 0, "kcmp: {}", io::Error::last_os_error());
        rc == 0
    }

    /// Starts `echo $$; exec sleep 60` in `mode` and reads its first line; says whether the
    /// leader shares our memory while it runs, then kills it and checks that it died of that.
    fn leader_while_running(mode: Containment) -> (i32, String, bool) {
        let dir = Scratch::new();
        let (spawned, wakes) = start("echo $$; exec sleep 60", dir.path(), mode, false);
        let spawned = spawned.unwrap();
        let pid = spawned.pid;
        let [stdout, _] = spawned.pipes;
        let mut first = String::new();
        BufReader::new(stdout).read_line(&mut first).unwrap();
        let shared = shares_our_memory(pid);
        mode.kill(pid);
        assert_eq!(
            end(pid, &wakes),
            Status::Signaled {
                signal: libc::SIGKILL
            }
        );
        (pid, first, shared)
    }

    #[test]
    fn a_shim_shares_our_memory_and_starts_the_command_as_pid_2() {
        let (_, first, shared) = leader_while_running(Containment::PidNamespace);
        assert_eq!(first, "2\n", "the command is pid 2 of its namespace");
        // The shim runs for as long as its command: it must be no copy of us.
        assert!(shared);
    }

    #[test]
    fn a_user_namespace_made_by_the_clone_maps_our_own_ids() {
        let dir = Scratch::new();
        let (spawned, wakes) = start(
            "echo $$; cat /proc/self/uid_map /proc/self/gid_map; exit 3",
            dir.path(),
            Containment::PidNamespace,
            true,
        );
        let spawned = spawned.unwrap();
        let pid = spawned.pid;
        let lines = lines(spawned);
        // SAFETY: neither call has preconditions.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let fields = |line: &str| {
            line.split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        assert_eq!(lines[0], "2");
        assert_eq!(
            fields(&lines[1]),
            [uid.to_string(), uid.to_string(), "1".into()]
        );
        assert_eq!(
            fields(&lines[2]),
            [gid.to_string(), gid.to_string(), "1".into()]
        );
        assert_eq!(end(pid, &wakes), Status::Exited { code: 3 });
    }

    #[test]
    fn in_the_process_group_mode_the_command_itself_leads_and_owns_its_memory() {
        let (pid, first, shared) = leader_while_running(Containment::ProcessGroup);
        assert_eq!(first, format!("{pid}\n"));
        assert!(!shared, "an exec'd command has memory of its own");
    }

    #[test]
    fn a_missing_folder_fails_the_spawn_with_its_error_in_every_mode() {
        let dir = Scratch::new();
        let missing = dir.path().join("gone");
        for (mode, user_namespace) in [
            (Containment::PidNamespace, false),
            (Containment::PidNamespace, true),
            (Containment::ProcessGroup, false),
        ] {
            let (spawned, _) = start("true", &missing, mode, user_namespace);
            match spawned {
                Err(SpawnError::Command(error)) => {
                    assert_eq!(error.kind(), io::ErrorKind::NotFound, "{mode:?}");
                }
                Err(other) => panic!("{mode:?}: {other:?}"),
                Ok(spawned) => panic!("{mode:?}: started as {}", spawned.pid),
            }
        }
    }
}
