//! Turning SIGINT, SIGTERM and SIGHUP into an orderly stop.
//!
//! [`install`] blocks the three signals in the calling thread before any other thread exists, so
//! every thread inherits the mask and none is interrupted at a random point; one dedicated thread
//! waits for them with `sigwait` and runs the stop action in ordinary code, where it may take
//! locks and call `stop_all`. Children must not inherit the mask: whoever spawns a process resets
//! it (see `once-exec`).

use std::io;
use std::mem::MaybeUninit;
use std::thread;

/// The signals that ask `once` to stop.
const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Blocks the stop signals in this thread and runs `on_signal` on a watcher thread when one
/// arrives. Must be called before any other thread is spawned.
pub fn install(on_signal: impl FnOnce(libc::c_int) + Send + 'static) -> io::Result<()> {
    let set = stop_set()?;
    // SAFETY: `set` is an initialised signal set; a null old-set pointer is allowed.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut signal: libc::c_int = 0;
            // SAFETY: `set` outlives the call and `signal` is a valid out-pointer.
            let rc = unsafe { libc::sigwait(&set, &mut signal) };
            if rc == 0 {
                on_signal(signal);
            }
        })?;
    Ok(())
}

fn stop_set() -> io::Result<libc::sigset_t> {
    let mut set = MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigemptyset initialises the set; sigaddset only touches that initialised set.
    unsafe {
        if libc::sigemptyset(set.as_mut_ptr()) != 0 {
            return Err(io::Error::last_os_error());
        }
        for signal in STOP_SIGNALS {
            if libc::sigaddset(set.as_mut_ptr(), signal) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(set.assume_init())
    }
}
