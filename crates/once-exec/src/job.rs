//! Windows containment: one Job Object per command, and the table from a leader's pid to its job,
//! so the code that knows only a pid (a run, the registry, an evaluator) can end the whole tree.
//!
//! # Theory of operation
//!
//! A job created with `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE` terminates every process in it when
//! its last handle closes. Only this table holds that handle (it is not inheritable, so no child
//! holds one), which makes the table the owner of the tree: the job ends when its run releases
//! it, and, whatever way `once` dies, when the kernel closes `once`'s handles. No breakaway limit
//! is set, so a process in the job cannot leave it, and every process it starts is in it too.
//!
//! The command is created suspended, assigned to its job, and only then are its threads resumed
//! (std keeps the primary thread's handle to itself, so they are found through a thread
//! snapshot): it cannot start a process before it is inside. If the assignment fails the command
//! is killed before it ever ran, and the spawn fails.
//!
//! Windows has no SIGTERM for console programs, and a CTRL_BREAK reaches only processes that
//! share `once`'s console, which a command started without a window does not: stopping a job is
//! always `TerminateJobObject`, a hard stop. The table also keeps a handle to the leader, so its
//! pid cannot name another process while its entry exists.
//!
//! This module must never hand a job handle to a child, never resume a process that is not in
//! its job, and never drop an entry while its run may still signal it by pid.

use std::collections::BTreeMap;
use std::io;
use std::os::windows::io::{AsHandle, AsRawHandle, FromRawHandle, OwnedHandle};
use std::os::windows::process::CommandExt;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use windows_sys::Win32::Foundation::INVALID_HANDLE_VALUE;
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_BASIC_ACCOUNTING_INFORMATION, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JobObjectBasicAccountingInformation, JobObjectExtendedLimitInformation,
    QueryInformationJobObject, SetInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::Threading::{
    CREATE_NEW_PROCESS_GROUP, CREATE_NO_WINDOW, CREATE_SUSPENDED, OpenThread, ResumeThread,
    THREAD_SUSPEND_RESUME,
};

/// The exit code of every process a stop terminates: the code of a console program ended by
/// Ctrl-C, so a tool that reports it reads "interrupted".
const STOPPED: u32 = 0xC000_013A;

/// A command's job and its leader.
#[derive(Debug)]
pub(crate) struct Contained {
    job: OwnedHandle,
    leader: OwnedHandle,
}

/// The jobs of the commands and evaluators still running, by their leader's pid as an `i32`
/// (the type every caller holds; the same cast everywhere keys the same entry).
static LIVE: Mutex<BTreeMap<i32, Arc<Contained>>> = Mutex::new(BTreeMap::new());

fn live() -> MutexGuard<'static, BTreeMap<i32, Arc<Contained>>> {
    // Each update is one insert or remove; a panic cannot leave the map half-written.
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Spawns `command` (its stdio and environment already set) into a new job of its own, and
/// keeps the job until [`release`]. When this returns `Ok`, the command runs inside the job.
pub(crate) fn spawn(command: &mut Command) -> io::Result<Child> {
    let job = create()?;
    command.creation_flags(CREATE_SUSPENDED | CREATE_NEW_PROCESS_GROUP | CREATE_NO_WINDOW);
    let mut child = command.spawn()?;
    let leader = assign(&job, &child)
        .and_then(|()| child.as_handle().try_clone_to_owned())
        .and_then(|leader| resume(child.id()).map(|()| leader));
    let leader = match leader {
        Ok(leader) => leader,
        Err(error) => {
            // Still suspended (or just resumed inside the job, which dropping `job` ends):
            // it never ran outside a job.
            let _ = child.kill();
            let _ = child.wait();
            return Err(error);
        }
    };
    // Windows process ids are multiples of four far below `i32::MAX`; the cast is the key.
    live().insert(child.id() as i32, Arc::new(Contained { job, leader }));
    Ok(child)
}

/// The job of `pid`, while it is held.
pub(crate) fn find(pid: i32) -> Option<Arc<Contained>> {
    live().get(&pid).cloned()
}

/// Terminates every process in the job of `pid`; a released job is gone already.
pub(crate) fn terminate(pid: i32) {
    if let Some(contained) = find(pid) {
        contained.terminate();
    }
}

/// Closes the job of `pid`: the kernel kills whatever is still in it.
pub(crate) fn release(pid: i32) {
    live().remove(&pid);
}

impl Contained {
    pub(crate) fn leader(&self) -> &OwnedHandle {
        &self.leader
    }

    pub(crate) fn terminate(&self) {
        // SAFETY: the handle is a live job handle owned by `self`.
        if unsafe { TerminateJobObject(self.job.as_raw_handle(), STOPPED) } == 0 {
            let error = io::Error::last_os_error();
            tracing::warn!(%error, "cannot terminate a job object");
        }
    }

    /// How many processes of the job are alive; an error counts as some.
    pub(crate) fn active_processes(&self) -> u32 {
        let mut info = JOBOBJECT_BASIC_ACCOUNTING_INFORMATION::default();
        // SAFETY: `info` is a valid out-pointer of the size passed, for the duration of the call.
        let ok = unsafe {
            QueryInformationJobObject(
                self.job.as_raw_handle(),
                JobObjectBasicAccountingInformation,
                (&raw mut info).cast(),
                size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
                std::ptr::null_mut(),
            )
        };
        if ok == 0 {
            u32::MAX
        } else {
            info.ActiveProcesses
        }
    }
}

/// A new job that kills what it holds when its last handle closes.
fn create() -> io::Result<OwnedHandle> {
    // SAFETY: null attributes and name ask for an unnamed job whose handle is not inheritable.
    let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
    if raw.is_null() {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a new handle that nothing else owns.
    let job = unsafe { OwnedHandle::from_raw_handle(raw) };
    let mut limits = JOBOBJECT_EXTENDED_LIMIT_INFORMATION::default();
    limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
    // SAFETY: `limits` is valid for reads of the size passed, for the duration of the call.
    let ok = unsafe {
        SetInformationJobObject(
            job.as_raw_handle(),
            JobObjectExtendedLimitInformation,
            (&raw const limits).cast(),
            size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(job)
}

fn assign(job: &OwnedHandle, child: &Child) -> io::Result<()> {
    // SAFETY: both handles are live for the duration of the call.
    if unsafe { AssignProcessToJobObject(job.as_raw_handle(), child.as_raw_handle()) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Resumes the threads of the suspended process `pid` (one, its primary thread).
fn resume(pid: u32) -> io::Result<()> {
    // SAFETY: a snapshot of every thread of the system; the process id is ignored for threads.
    let raw = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
    if raw == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a new handle that nothing else owns.
    let snapshot = unsafe { OwnedHandle::from_raw_handle(raw) };
    let mut entry = THREADENTRY32 {
        dwSize: size_of::<THREADENTRY32>() as u32,
        ..THREADENTRY32::default()
    };
    let mut resumed = 0;
    // SAFETY: `entry` is a valid out-pointer whose `dwSize` says its size.
    let mut more = unsafe { Thread32First(snapshot.as_raw_handle(), &mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: opens a thread by id; the result is checked before use.
            let raw = unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID) };
            if raw.is_null() {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: `raw` is a new handle that nothing else owns.
            let thread = unsafe { OwnedHandle::from_raw_handle(raw) };
            // SAFETY: a live thread handle opened with THREAD_SUSPEND_RESUME.
            if unsafe { ResumeThread(thread.as_raw_handle()) } == u32::MAX {
                return Err(io::Error::last_os_error());
            }
            resumed += 1;
        }
        // SAFETY: as for `Thread32First`.
        more = unsafe { Thread32Next(snapshot.as_raw_handle(), &mut entry) } != 0;
    }
    if resumed == 0 {
        return Err(io::Error::other("the new process has no thread to resume"));
    }
    Ok(())
}
