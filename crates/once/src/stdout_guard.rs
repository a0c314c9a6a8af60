//! The stdout rule of `once mcp`, enforced at the file-descriptor level.
//!
//! JSON-RPC owns the real stdout. Before the server starts any thread or child, [`take`] keeps a
//! private, close-on-exec duplicate of file descriptor 1 for the protocol writer and then points
//! descriptor 1 at stderr. From then on a stray `println!`, a library that logs to stdout, or a
//! child process that inherits descriptor 1 all land on stderr, and the only way to reach the
//! client is the handle returned here.
//!
//! On Windows the same is done with handles: the standard output handle is duplicated into a
//! private one that children do not inherit, and the process's standard output handle is set to
//! standard error's, which is what Rust's `stdout` and every child started afterwards use. Weaker
//! than Unix: the original handle stays open, so C code writing through the C runtime's own
//! descriptor 1 (bound at start-up) still reaches the real stdout.
//!
//! This module must never be used outside `once mcp`.

use std::fs::File;
use std::io::{self, Write};

/// Moves descriptor 1 aside and returns the only handle that still writes to the real stdout.
#[cfg(unix)]
pub fn take() -> io::Result<File> {
    use std::os::fd::{FromRawFd, RawFd};

    // Anything Rust's own stdout buffer holds belongs before the switch.
    io::stdout().flush()?;
    // SAFETY: plain descriptor syscalls on descriptors this process owns; results are checked.
    let private: RawFd = unsafe { libc::fcntl(libc::STDOUT_FILENO, libc::F_DUPFD_CLOEXEC, 3) };
    if private < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above; dup2 atomically replaces descriptor 1 with a copy of descriptor 2.
    if unsafe { libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) } < 0 {
        let error = io::Error::last_os_error();
        // SAFETY: `private` was opened above and is owned by nobody else yet.
        unsafe { libc::close(private) };
        return Err(error);
    }
    // SAFETY: `private` is a fresh descriptor that nothing else owns; the File takes ownership.
    Ok(unsafe { File::from_raw_fd(private) })
}

/// Sets the standard output handle aside and returns the only handle that still writes to the
/// real stdout.
#[cfg(windows)]
pub fn take() -> io::Result<File> {
    use std::os::windows::io::FromRawHandle;
    use windows_sys::Win32::Foundation::{
        DUPLICATE_SAME_ACCESS, DuplicateHandle, HANDLE, INVALID_HANDLE_VALUE,
    };
    use windows_sys::Win32::System::Console::{
        GetStdHandle, STD_ERROR_HANDLE, STD_OUTPUT_HANDLE, SetStdHandle,
    };
    use windows_sys::Win32::System::Threading::GetCurrentProcess;

    // Anything Rust's own stdout buffer holds belongs before the switch.
    io::stdout().flush()?;
    let invalid = |handle: HANDLE| handle.is_null() || handle == INVALID_HANDLE_VALUE;
    // SAFETY: reads the process's standard handles; results are checked.
    let (stdout, stderr) = unsafe {
        (
            GetStdHandle(STD_OUTPUT_HANDLE),
            GetStdHandle(STD_ERROR_HANDLE),
        )
    };
    if invalid(stdout) || invalid(stderr) {
        return Err(io::Error::other(
            "the process has no standard output or error",
        ));
    }
    let mut private: HANDLE = std::ptr::null_mut();
    // SAFETY: duplicates a valid handle of this process into this process, not inheritable; the
    // out-pointer is a live local.
    let duplicated = unsafe {
        let me = GetCurrentProcess();
        DuplicateHandle(me, stdout, me, &mut private, 0, 0, DUPLICATE_SAME_ACCESS)
    };
    if duplicated == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `private` is a fresh handle that nothing else owns; the File takes ownership.
    let file = unsafe { File::from_raw_handle(private) };
    // SAFETY: replaces the process's standard output handle with a valid one.
    if unsafe { SetStdHandle(STD_OUTPUT_HANDLE, stderr) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    //! The guard is process-wide, so the test runs it in a child: the test binary re-executes
    //! itself with [`CHILD`] set, and only that process moves its stdout aside.

    use std::io::Write;
    use std::process::{Command, Stdio};

    const CHILD: &str = "ONCE_STDOUT_GUARD_CHILD";

    #[test]
    fn stray_writes_to_fd_1_land_on_stderr() {
        if std::env::var_os(CHILD).is_some() {
            return stray_writer();
        }
        let output = Command::new(std::env::current_exe().expect("the test binary"))
            .args([
                "--exact",
                "stdout_guard::tests::stray_writes_to_fd_1_land_on_stderr",
            ])
            .args(["--nocapture", "--test-threads=1", "-q"])
            .env(CHILD, "1")
            .stdin(Stdio::null())
            .output()
            .expect("re-runs the test binary");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stdout}\n{stderr}");
        // Only the protocol line reaches the real stdout; libtest's own report went to fd 1,
        // which is stderr by the time it prints, except what it wrote before the switch.
        let protocol: Vec<_> = stdout.lines().filter(|l| l.starts_with('{')).collect();
        assert_eq!(
            protocol,
            [r#"{"jsonrpc":"2.0","id":1,"result":{}}"#],
            "{stdout}"
        );
        for stray in [
            "stray from println",
            "stray from libc write",
            "stray from a child",
        ] {
            assert!(
                !stdout.contains(stray),
                "`{stray}` reached stdout:\n{stdout}"
            );
            assert!(stderr.contains(stray), "`{stray}` is lost:\n{stderr}");
        }
    }

    /// In the child: take the guard, then write to fd 1 every way a stray byte can come.
    #[allow(clippy::print_stdout)]
    fn stray_writer() {
        let mut protocol = super::take().expect("takes stdout");
        println!("stray from println");
        std::io::stdout().flush().expect("flushes");
        let bytes = b"stray from libc write\n";
        // SAFETY: writing a valid buffer to descriptor 1.
        let written = unsafe { libc::write(1, bytes.as_ptr().cast(), bytes.len()) };
        assert_eq!(usize::try_from(written).ok(), Some(bytes.len()));
        let status = Command::new("sh")
            .args(["-c", "echo stray from a child"])
            .status()
            .expect("runs sh");
        assert!(status.success());
        protocol
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n")
            .expect("writes");
        protocol.flush().expect("flushes");
    }
}
