//! The shims between `once` and a command: the code a spawned child runs before it execs, which
//! forks the processes that keep the command's whole tree contained (see `contain.rs` for the
//! modes and why).
//!
//! In the pid-namespace mode the spawned child (the *shim*) unshares a PID namespace, starts its
//! *init* (pid 1, which passes SIGTERM on to every process of the namespace and reaps orphans)
//! and forks the command into it (pid 2). When the command ends the shim kills the init, which
//! makes the kernel kill whatever is left in the namespace, and relays the command's status as
//! its own (exit code, or death by the same signal), so `once` sees the command's status.
//! In the subreaper mode the shim forks the command itself and kills its descendants.
//!
//! Everything here except [`probe`] runs in a forked copy of a multi-threaded process, so it
//! must never allocate, lock, log or panic: raw system calls on stack buffers only, and every
//! index checked. The shims never return to the caller; only the command's process does.

use std::io;
use std::mem::MaybeUninit;

use crate::contain::{Containment, Probe};
use crate::exec::Exec;

/// How a shim exits when it cannot do its part, like a shell that cannot run a command.
pub(crate) const FAILED: libc::c_int = 127;
/// The signals that ask a run to stop: a shim must neither die of them before it ignores them
/// nor let them reach its init before the init waits for them.
pub(crate) const STOPS: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];
/// Most descendants one sweep tracks; any beyond are caught by the next sweep.
const MAX_TRACKED: usize = 2048;
/// Sweeps before a subreaper stops trying to kill descendants that keep appearing.
const MAX_SWEEPS: u32 = 5000;

/// Tries, in a throwaway child, what a spawn would do: a PID namespace, then one inside a user
/// namespace, then a subreaper.
pub(crate) fn probe() -> Probe {
    let probe = |mode, user_namespace| Probe {
        mode,
        user_namespace,
    };
    // SAFETY: the child only makes async-signal-safe calls and exits with `_exit`.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: in the child; see above.
        unsafe {
            let code = if enter_pid_namespace(UserNamespace::None).is_ok() {
                0
            } else if enter_pid_namespace(UserNamespace::Unshare).is_ok() {
                1
            } else if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) == 0 {
                2
            } else {
                3
            };
            libc::_exit(code)
        }
    }
    let status = if pid > 0 { wait_for(pid) } else { None };
    match status
        .filter(|status| libc::WIFEXITED(*status))
        .map(|status| libc::WEXITSTATUS(status))
    {
        Some(0) => probe(Containment::PidNamespace, false),
        Some(1) => probe(Containment::PidNamespace, true),
        Some(2) => probe(Containment::Subreaper, false),
        _ => probe(Containment::ProcessGroup, false),
    }
}

/// Enters `probe`'s mode in a child between `fork` and `exec`; returns only in the process that
/// is to exec the command.
///
/// # Safety
///
/// Only in a forked child before `exec`.
pub(crate) unsafe fn enter(
    probe: Probe,
    parent: libc::pid_t,
    exec: Option<&Exec>,
) -> io::Result<()> {
    // SAFETY: forwarded from the caller.
    unsafe {
        match probe.mode {
            Containment::PidNamespace => {
                let user = if probe.user_namespace {
                    UserNamespace::Unshare
                } else {
                    UserNamespace::None
                };
                namespace(user, exec, &())
            }
            Containment::Subreaper => subreaper(parent),
            // A job object is never probed on Linux (`Containment::PLATFORM`).
            Containment::JobObject | Containment::ProcessGroup => Ok(()),
        }
    }
}

/// Room for the init's stack: it runs a wait loop and a no-op handler, nothing deeper.
const INIT_STACK: usize = 32 * 1024;

/// The init's stack, inside the shim's frame (the init shares the shim's memory).
#[repr(C, align(16))]
struct InitStack([MaybeUninit<u8>; INIT_STACK]);

/// What the clone that execs the command needs, on the shim's stack.
struct CommandStart<'a> {
    exec: &'a Exec,
    shim_end: libc::c_int,
    mask: libc::sigset_t,
}

/// What a shim tells whoever started it. A shim that shares `once`'s memory reports here; a
/// forked one has nothing to report (`()`). Called from the shim: async-signal-safe only.
pub(crate) trait Watcher {
    /// The command has exec'd in the namespace.
    fn started(&self) {}
    /// The init is reaped: no process of the shim's runs on the shim's stack any more.
    fn init_gone(&self) {}
}

impl Watcher for () {}

/// Where the shim's user namespace comes from, when it needs one to be allowed a PID namespace.
#[derive(Debug, Clone, Copy)]
pub(crate) enum UserNamespace {
    /// None: the shim may make a PID namespace as it is.
    None,
    /// The shim unshares one itself (a forked shim: one that shares no memory may).
    Unshare,
    /// The clone that made the shim entered one; `uid` and `gid` are its ids outside, read
    /// before the clone (inside, unmapped ids read as the overflow id).
    Entered { uid: libc::uid_t, gid: libc::gid_t },
}

/// The pid-namespace mode: this process becomes the shim, starts the init of a new namespace
/// (a clone that shares its memory, so it costs no copy of page tables) and starts the command
/// in the namespace. With `exec`, the command is a vfork-style clone that execs at once (no copy
/// of the page tables either), `watcher` hears when it has, and nothing returns; without, it is a
/// fork, which returns.
///
/// # Safety
///
/// Only in a child that `once` started (forked, or cloned with its memory shared), before it
/// execs; it leaves this process with the empty signal mask.
pub(crate) unsafe fn namespace(
    user: UserNamespace,
    exec: Option<&Exec>,
    watcher: &dyn Watcher,
) -> io::Result<()> {
    // SAFETY: async-signal-safe calls on stack memory, in a forked or cloned child.
    unsafe {
        enter_pid_namespace(user)?;
        let mut ends = [0; 2];
        if libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            ends.as_mut_ptr(),
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        let [shim_end, init_end] = ends;
        // A stop signal must not kill the shim before it ignores them (that would kill the
        // namespace without a grace), nor reach the init before it waits for them.
        let stops = sigset(&STOPS);
        libc::sigprocmask(libc::SIG_BLOCK, &stops, std::ptr::null_mut());
        // What the command starts with and the shim waits with: `once` blocks its stop signals
        // in every thread, and a mask survives exec.
        let unmasked = sigset(&[]);
        let mut stack = InitStack([MaybeUninit::uninit(); INIT_STACK]);
        let top = stack.0.as_mut_ptr().add(INIT_STACK).cast::<libc::c_void>();
        // The first process of the namespace is its init. It shares our memory but has its own
        // descriptors, signal handlers and mask; it touches nothing but its own stack.
        let init = libc::clone(
            init_process,
            top,
            libc::CLONE_VM | libc::SIGCHLD,
            init_end as isize as *mut libc::c_void,
        );
        if init < 0 {
            let error = io::Error::last_os_error();
            libc::close(shim_end);
            libc::close(init_end);
            libc::sigprocmask(libc::SIG_SETMASK, &unmasked, std::ptr::null_mut());
            return Err(error);
        }
        libc::close(init_end);
        // The stack of the clone that execs the command: it masks signals, closes one
        // descriptor and calls `execve`, far less than an init's room.
        let mut exec_stack = InitStack([MaybeUninit::uninit(); INIT_STACK]);
        let command = match exec {
            Some(exec) => {
                let mut start = CommandStart {
                    exec,
                    shim_end,
                    mask: unmasked,
                };
                let top = exec_stack.0.as_mut_ptr().add(INIT_STACK);
                // Pid 2 of the namespace, sharing our memory until its `execve`; we are
                // suspended until then (CLONE_VFORK), so it may read `start` on our stack.
                libc::clone(
                    exec_command,
                    top.cast::<libc::c_void>(),
                    libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                    (&raw mut start).cast::<libc::c_void>(),
                )
            }
            None => libc::fork(),
        };
        if command < 0 {
            let error = io::Error::last_os_error();
            libc::kill(init, libc::SIGKILL);
            if wait_for(init).is_some() {
                watcher.init_gone();
            }
            libc::close(shim_end);
            libc::sigprocmask(libc::SIG_SETMASK, &unmasked, std::ptr::null_mut());
            return Err(error);
        }
        if command == 0 {
            // Pid 2 of the namespace. If the shim dies, so does the init, and the kernel kills
            // this process with the rest of the namespace: no death signal of its own needed.
            libc::close(shim_end);
            libc::sigprocmask(libc::SIG_SETMASK, &unmasked, std::ptr::null_mut());
            return Ok(());
        }
        watcher.started();
        // Our end stays open: the init reads its closing as our death.
        close_all_but(shim_end);
        for signal in STOPS {
            libc::signal(signal, libc::SIG_IGN);
        }
        libc::sigprocmask(libc::SIG_SETMASK, &unmasked, std::ptr::null_mut());
        let status = wait_for(command).unwrap_or(libc::SIGKILL);
        // The command is over: the init's death makes the kernel kill the rest of the
        // namespace, and its wait ends only once all of it is gone.
        libc::kill(init, libc::SIGKILL);
        if wait_for(init).is_some() {
            watcher.init_gone();
        }
        // The init ran on this stack until now; keep it allocated until here.
        std::hint::black_box(&mut stack);
        std::hint::black_box(&mut exec_stack);
        relay(status)
    }
}

/// Pid 2 of the namespace, started with CLONE_VFORK: restores the signal mask and execs the
/// command. Runs on its own stack in the shim's memory while the shim waits, so it only reads.
extern "C" fn exec_command(start: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `start` points at the shim's `CommandStart`, alive while the shim is suspended;
    // every call is async-signal-safe.
    unsafe {
        let start = &*start.cast::<CommandStart<'_>>();
        libc::close(start.shim_end);
        libc::sigprocmask(libc::SIG_SETMASK, &start.mask, std::ptr::null_mut());
        let _ = start.exec.execve();
        libc::_exit(FAILED)
    }
}

/// Pid 1 of the namespace: passes SIGTERM to every process in it and reaps the orphans that the
/// kernel gives it, until the shim kills it. Runs on its own stack in the shim's memory, so it
/// must not rely on `errno` (shared with the shim) and never returns.
extern "C" fn init_process(end: *mut libc::c_void) -> libc::c_int {
    let end = end as isize as libc::c_int;
    // SAFETY: async-signal-safe calls on this stack only.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
            libc::_exit(FAILED);
        }
        // The shim may have died before the death signal was asked for; its end of the socket
        // is then closed (poll says readable), and no signal will ever come.
        let mut poll = libc::pollfd {
            fd: end,
            events: libc::POLLIN,
            revents: 0,
        };
        if libc::poll(&mut poll, 1, 0) != 0 {
            libc::_exit(FAILED);
        }
        close_all_but(-1);
        // An init only receives the signals it handles; SIGTERM is then taken synchronously.
        libc::signal(libc::SIGTERM, ignore as *const () as libc::sighandler_t);
        let waited = sigset(&[libc::SIGTERM, libc::SIGCHLD]);
        libc::sigprocmask(libc::SIG_SETMASK, &waited, std::ptr::null_mut());
        loop {
            if libc::sigwaitinfo(&waited, std::ptr::null_mut()) == libc::SIGTERM {
                // To every process of the namespace but this one, setsid'd ones included.
                libc::kill(-1, libc::SIGTERM);
                continue;
            }
            while reap_any().is_some() {}
        }
    }
}

/// The subreaper mode: this process becomes the shim, forks the command (which returns), and
/// kills the command's descendants when asked or when the command ends.
///
/// # Safety
///
/// Only in a child that `once` forked, before it execs, with `parent` the pid of `once`: it
/// forks, and whatever runs until `_exit` or the exec must be async-signal-safe.
unsafe fn subreaper(parent: libc::pid_t) -> io::Result<()> {
    // SAFETY: async-signal-safe calls on stack memory, in a forked child.
    unsafe {
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) != 0 {
            return Err(io::Error::last_os_error());
        }
        let waited = sigset(&[libc::SIGTERM, libc::SIGUSR1, libc::SIGCHLD]);
        let blocked = sigset(&[
            libc::SIGTERM,
            libc::SIGUSR1,
            libc::SIGCHLD,
            libc::SIGINT,
            libc::SIGHUP,
        ]);
        let mut previous = MaybeUninit::<libc::sigset_t>::zeroed();
        libc::sigprocmask(libc::SIG_BLOCK, &blocked, previous.as_mut_ptr());
        let previous = previous.assume_init();
        // When `once` dies, sweep rather than die: a dead shim could kill nothing.
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGUSR1) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::getppid() != parent {
            libc::_exit(FAILED);
        }
        let shim = libc::getpid();
        let command = libc::fork();
        if command < 0 {
            let error = io::Error::last_os_error();
            libc::sigprocmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut());
            return Err(error);
        }
        if command == 0 {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != shim {
                libc::_exit(FAILED);
            }
            libc::sigprocmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut());
            return Ok(());
        }
        close_all_but(-1);
        let mut status = None;
        while status.is_none() {
            match libc::sigwaitinfo(&waited, std::ptr::null_mut()) {
                libc::SIGTERM => {
                    sweep(shim, libc::SIGTERM);
                }
                libc::SIGUSR1 => {
                    sweep(shim, libc::SIGKILL);
                }
                _ => {}
            }
            while let Some((pid, reaped)) = reap_any() {
                if pid == command {
                    status = Some(reaped);
                }
            }
        }
        // The command is over: nothing it started may outlive it.
        for _ in 0..MAX_SWEEPS {
            while reap_any().is_some() {}
            // No child left means no descendant left: an orphan is reparented to us.
            if !has_children() {
                break;
            }
            sweep(shim, libc::SIGKILL);
            let pause = libc::timespec {
                tv_sec: 0,
                tv_nsec: 1_000_000,
            };
            libc::nanosleep(&pause, std::ptr::null_mut());
        }
        relay(status.unwrap_or(libc::SIGKILL))
    }
}

/// Exits the way `status` (a wait status) says: with its code, or killed by its signal.
///
/// # Safety
///
/// Only in the shim, a forked child of `once`: it never returns, ending this process without
/// running destructors or flushing anything the parent's memory holds.
unsafe fn relay(status: libc::c_int) -> ! {
    // SAFETY: async-signal-safe calls on stack memory, in a forked child.
    unsafe {
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            // A shim is a copy of `once`: dying by SIGSEGV must not dump its memory.
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            libc::signal(signal, libc::SIG_DFL);
            let set = sigset(&[signal]);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal);
        }
        libc::_exit(if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            FAILED
        })
    }
}

/// Unshares a PID namespace for the children of this process, inside a user namespace that maps
/// our own ids (which needs no privilege) when `user` asks for one.
///
/// # Safety
///
/// Only in a single-threaded child of `once` before it execs: `unshare` changes the namespaces
/// of the whole process, which `once` itself must never leave.
unsafe fn enter_pid_namespace(user: UserNamespace) -> io::Result<()> {
    // SAFETY: async-signal-safe calls on stack memory.
    unsafe {
        match user {
            UserNamespace::None => {}
            UserNamespace::Unshare => {
                let (uid, gid) = (libc::geteuid(), libc::getegid());
                check(libc::unshare(libc::CLONE_NEWUSER))?;
                map_own_ids(uid, gid)?;
            }
            UserNamespace::Entered { uid, gid } => map_own_ids(uid, gid)?,
        }
        check(libc::unshare(libc::CLONE_NEWPID))
    }
}

/// Maps `uid` and `gid` (ours outside) to themselves in the user namespace we just entered.
///
/// # Safety
///
/// Only right after this child unshared its user namespace (see [`enter_pid_namespace`]); it
/// must stay async-signal-safe, so it writes from stack buffers only.
unsafe fn map_own_ids(uid: libc::uid_t, gid: libc::gid_t) -> io::Result<()> {
    // SAFETY: async-signal-safe calls on stack memory.
    unsafe {
        // Required before an unprivileged gid map; absent on kernels before 3.19.
        let _ = write_file(c"/proc/self/setgroups", b"deny");
        let mut map = [0u8; 40];
        write_file(c"/proc/self/uid_map", id_map(&mut map, uid))?;
        write_file(c"/proc/self/gid_map", id_map(&mut map, gid))
    }
}

/// `ID ID 1`: the id maps to itself.
fn id_map(buffer: &mut [u8; 40], id: u32) -> &[u8] {
    let mut digits = [0u8; 10];
    let mut count = 0;
    let mut rest = id;
    loop {
        if let Some(digit) = digits.get_mut(count) {
            *digit = b'0' + (rest % 10) as u8;
        }
        count += 1;
        rest /= 10;
        if rest == 0 || count == digits.len() {
            break;
        }
    }
    let mut length = 0;
    for _ in 0..2 {
        for index in (0..count).rev() {
            if let (Some(slot), Some(digit)) = (buffer.get_mut(length), digits.get(index)) {
                *slot = *digit;
            }
            length += 1;
        }
        if let Some(slot) = buffer.get_mut(length) {
            *slot = b' ';
        }
        length += 1;
    }
    for byte in *b"1\n" {
        if let Some(slot) = buffer.get_mut(length) {
            *slot = byte;
        }
        length += 1;
    }
    buffer.get(..length).unwrap_or_default()
}

/// Writes `bytes` to the file at `path` with one `write`, as `/proc` files want.
///
/// # Safety
///
/// Async-signal-safe, for a forked child: the caller must not rely on it allocating or
/// buffering, and a short write is an error, never retried.
unsafe fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated and `bytes` valid for its length.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let error = io::Error::last_os_error();
        libc::close(fd);
        if written == bytes.len() as isize {
            Ok(())
        } else {
            Err(error)
        }
    }
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

extern "C" fn ignore(_: libc::c_int) {}

/// The set of exactly `signals`.
pub(crate) fn sigset(signals: &[libc::c_int]) -> libc::sigset_t {
    let mut set = MaybeUninit::<libc::sigset_t>::zeroed();
    // SAFETY: `set` is valid for writing; sigemptyset initialises it.
    unsafe {
        libc::sigemptyset(set.as_mut_ptr());
        for &signal in signals {
            libc::sigaddset(set.as_mut_ptr(), signal);
        }
        set.assume_init()
    }
}

/// Closes every descriptor but `keep`: a shim must hold no pipe of the command's (its capture
/// would wait for the shim) and not `std`'s exec-error pipe (spawn would wait for the command).
///
/// # Safety
///
/// Only in a forked child: it closes descriptors that other owners (an `OwnedFd`, `std`'s
/// pipes) still believe open, which in `once` itself would lead to double closes.
unsafe fn close_all_but(keep: libc::c_int) {
    // SAFETY: closing descriptors has no memory effects.
    unsafe {
        let max = libc::c_uint::MAX;
        let close_range = |from: libc::c_int, to: libc::c_uint| {
            if from as libc::c_uint > to {
                return;
            }
            if libc::syscall(libc::SYS_close_range, from as libc::c_uint, to, 0) != 0 {
                // Before Linux 5.9: close one by one up to the descriptor limit.
                let mut limit = MaybeUninit::<libc::rlimit>::zeroed();
                let end = if libc::getrlimit(libc::RLIMIT_NOFILE, limit.as_mut_ptr()) == 0 {
                    limit.assume_init().rlim_cur.min(65_536) as libc::c_uint
                } else {
                    1024
                };
                for fd in from as libc::c_uint..end.min(to.saturating_add(1)) {
                    libc::close(fd as libc::c_int);
                }
            }
        };
        if keep < 0 {
            close_range(0, max);
        } else {
            if keep > 0 {
                close_range(0, (keep - 1) as libc::c_uint);
            }
            close_range(keep + 1, max);
        }
    }
}

/// Waits for `pid` and returns its wait status. Reads no `errno` (the namespace's init shares
/// the shim's): no handler is installed in a shim, so a failure is never EINTR but a pid that is
/// not our child, and a few retries suffice.
fn wait_for(pid: libc::pid_t) -> Option<libc::c_int> {
    for _ in 0..3 {
        let mut status = 0;
        // SAFETY: `status` is a valid out-pointer.
        if unsafe { libc::waitpid(pid, &mut status, 0) } == pid {
            return Some(status);
        }
    }
    None
}

/// Reaps one exited child, if any.
fn reap_any() -> Option<(libc::pid_t, libc::c_int)> {
    let mut status = 0;
    // SAFETY: `status` is a valid out-pointer.
    let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
    (pid > 0).then_some((pid, status))
}

fn has_children() -> bool {
    let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
    // SAFETY: `info` is a valid out-pointer; WNOWAIT leaves any child as it is.
    let rc = unsafe {
        libc::waitid(
            libc::P_ALL,
            0,
            info.as_mut_ptr(),
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    rc == 0
}

/// Sends `signal` to every live descendant of `root`, found by walking `/proc` until the set
/// stops growing. Returns how many were signalled.
fn sweep(root: libc::pid_t, signal: libc::c_int) -> usize {
    let mut tracked = [0 as libc::pid_t; MAX_TRACKED];
    tracked[0] = root;
    let mut count = 1;
    loop {
        let before = count;
        scan_proc(|pid, ppid| {
            let known = tracked.get(..count).unwrap_or_default();
            if count < MAX_TRACKED
                && known.contains(&ppid)
                && !known.contains(&pid)
                && let Some(slot) = tracked.get_mut(count)
            {
                *slot = pid;
                count += 1;
            }
        });
        if count == before {
            break;
        }
    }
    for &pid in tracked.get(1..count).unwrap_or_default() {
        // SAFETY: kill has no memory effects; every pid here is > 1 and ours.
        unsafe { libc::kill(pid, signal) };
    }
    count - 1
}

/// Calls `visit(pid, ppid)` for every live (not zombie) process in `/proc`.
fn scan_proc(mut visit: impl FnMut(libc::pid_t, libc::pid_t)) {
    // SAFETY: raw system calls on stack buffers; the directory is closed before returning.
    unsafe {
        let dir = libc::open(
            c"/proc".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if dir < 0 {
            return;
        }
        let mut entries = [0u8; 4096];
        loop {
            let read = libc::syscall(
                libc::SYS_getdents64,
                dir,
                entries.as_mut_ptr(),
                entries.len(),
            );
            if read <= 0 {
                break;
            }
            let filled = entries.get(..read as usize).unwrap_or_default();
            // `struct linux_dirent64`: inode (8), offset (8), record length (2), type (1), name.
            let mut offset = 0;
            while let Some(record) = filled.get(offset..) {
                let (Some(&low), Some(&high)) = (record.get(16), record.get(17)) else {
                    break;
                };
                let length = u16::from_ne_bytes([low, high]) as usize;
                if length == 0 {
                    break;
                }
                if let Some(pid) = record.get(19..length).and_then(parse_pid)
                    && let Some(ppid) = live_parent(pid)
                {
                    visit(pid, ppid);
                }
                offset += length;
            }
        }
        libc::close(dir);
    }
}

/// A NUL-terminated decimal name as a pid.
fn parse_pid(name: &[u8]) -> Option<libc::pid_t> {
    let mut pid: libc::pid_t = 0;
    let mut digits = 0;
    for &byte in name.iter().take_while(|&&byte| byte != 0) {
        if !byte.is_ascii_digit() {
            return None;
        }
        pid = pid
            .checked_mul(10)?
            .checked_add(libc::pid_t::from(byte - b'0'))?;
        digits += 1;
    }
    (digits > 0).then_some(pid)
}

/// The parent of `pid`, unless it is a zombie or gone (`/proc/PID/stat`: `pid (comm) state
/// ppid …`, read after the last `)` since a name may hold anything).
fn live_parent(pid: libc::pid_t) -> Option<libc::pid_t> {
    let mut path = [0u8; 32];
    let mut length = 0;
    for &byte in b"/proc/" {
        *path.get_mut(length)? = byte;
        length += 1;
    }
    let mut digits = [0u8; 10];
    let mut count = 0;
    let mut rest = pid;
    loop {
        *digits.get_mut(count)? = b'0' + (rest % 10) as u8;
        count += 1;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    for index in (0..count).rev() {
        *path.get_mut(length)? = *digits.get(index)?;
        length += 1;
    }
    for &byte in b"/stat\0" {
        *path.get_mut(length)? = byte;
        length += 1;
    }
    let mut stat = [0u8; 256];
    // SAFETY: `path` is NUL-terminated; `stat` is valid for its length.
    let read = unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let read = libc::read(fd, stat.as_mut_ptr().cast(), stat.len());
        libc::close(fd);
        read
    };
    let text = stat.get(..usize::try_from(read).ok()?)?;
    let close = text.iter().rposition(|&byte| byte == b')')?;
    let mut fields = text
        .get(close + 1..)?
        .split(|&byte| byte == b' ')
        .filter(|field| !field.is_empty());
    let state = fields.next()?;
    if matches!(state, b"Z" | b"X") {
        return None;
    }
    parse_pid(fields.next()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_map_maps_the_id_to_itself() {
        let mut buffer = [0u8; 40];
        assert_eq!(id_map(&mut buffer, 0), b"0 0 1\n");
        assert_eq!(
            id_map(&mut buffer, 4294967295),
            b"4294967295 4294967295 1\n"
        );
    }

    #[test]
    fn our_own_parent_is_read_from_proc() {
        let me = std::process::id() as libc::pid_t;
        // SAFETY: getppid has no preconditions.
        assert_eq!(live_parent(me), Some(unsafe { libc::getppid() }));
        assert_eq!(parse_pid(b"12a"), None);
        assert_eq!(parse_pid(b"123\0xyz"), Some(123));
    }
}
