//! The stdout rule of `once mcp`, enforced at the file-descriptor level.
//!
//! JSON-RPC owns the real stdout. Before the server starts any thread or child, [`take`] keeps a
//! private, close-on-exec duplicate of file descriptor 1 for the protocol writer and then points
//! descriptor 1 at stderr. From then on a stray `println!`, a library that logs to stdout, or a
//! child process that inherits descriptor 1 all land on stderr, and the only way to reach the
//! client is the handle returned here. This module must never be used outside `once mcp`.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{FromRawFd, RawFd};

/// Moves descriptor 1 aside and returns the only handle that still writes to the real stdout.
pub fn take() -> io::Result<File> {
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
