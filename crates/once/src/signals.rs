//! Turning SIGINT, SIGTERM and SIGHUP (on Windows: Ctrl-C, Ctrl-Break and the console closing)
//! into an orderly stop.
//!
//! On Unix, [`install`] blocks the three signals in the calling thread before any other thread
//! exists, so every thread inherits the mask and none is interrupted at a random point; one
//! dedicated thread waits for them with `sigwait` and runs the stop action in ordinary code, where
//! it may take locks and call `stop_all`. Children must not inherit the mask: whoever spawns a
//! process resets it (see `once-exec`).
//!
//! On Windows, `SetConsoleCtrlHandler` registers a handler that Windows runs on a thread of its
//! own for each console event; the first one runs the same stop action, with the number of the
//! signal that means the same on Unix (Ctrl-C: SIGINT, 2; the console closing: SIGHUP, 1) or, for
//! Ctrl-Break, the C runtime's SIGBREAK, 21. Later events are swallowed, as later signals stay
//! blocked on Unix. Must never run the stop action twice.

use std::io;

/// Blocks the stop signals in this thread and runs `on_signal` on a watcher thread when one
/// arrives. Must be called before any other thread is spawned.
#[cfg(unix)]
pub fn install(on_signal: impl FnOnce(i32) + Send + 'static) -> io::Result<()> {
    use std::thread;

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

/// The signals that ask `once` to stop.
#[cfg(unix)]
const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

#[cfg(unix)]
fn stop_set() -> io::Result<libc::sigset_t> {
    use std::mem::MaybeUninit;
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

/// What a stop runs, given the signal's number.
#[cfg(windows)]
type StopAction = Box<dyn FnOnce(i32) + Send>;

/// The stop action, until the first console event takes it.
#[cfg(windows)]
static STOP: std::sync::Mutex<Option<StopAction>> = std::sync::Mutex::new(None);

/// Registers the console handler that runs `on_signal` at the first Ctrl-C, Ctrl-Break or close
/// of the console.
#[cfg(windows)]
pub fn install(on_signal: impl FnOnce(i32) + Send + 'static) -> io::Result<()> {
    use windows_sys::Win32::System::Console::SetConsoleCtrlHandler;
    *STOP
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Box::new(on_signal));
    // SAFETY: registers a function with the signature Windows expects; it lives for the process.
    if unsafe { SetConsoleCtrlHandler(Some(on_console_event), 1) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Runs on a thread Windows starts for the event. Returning 1 says the event is handled (for a
/// close, Windows ends the process once this returns, so the stop action runs to its end first).
#[cfg(windows)]
unsafe extern "system" fn on_console_event(event: u32) -> windows_sys::core::BOOL {
    use windows_sys::Win32::System::Console::{CTRL_BREAK_EVENT, CTRL_C_EVENT, CTRL_CLOSE_EVENT};
    let signal = match event {
        CTRL_C_EVENT => 2,
        CTRL_BREAK_EVENT => 21,
        CTRL_CLOSE_EVENT => 1,
        // Log-off and shut-down reach services only: leave them to the default handler.
        _ => return 0,
    };
    let stop = STOP
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    if let Some(stop) = stop {
        stop(signal);
    }
    1
}
