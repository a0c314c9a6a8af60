//! A command's `execve` arguments, prepared before the fork.
//!
//! A shim that starts the command with a vfork-style clone (sharing its memory, so no copy of
//! `once`'s page tables) must call `execve` itself, and a forked child may not allocate: the
//! program, its arguments and its environment are turned into C strings and pointer arrays here,
//! in the parent, and only read after the fork. This type must never be built or changed in a
//! forked child.

use std::ffi::{CString, OsStr, c_char};
use std::io;
use std::os::unix::ffi::OsStrExt;

/// `execve`'s three arguments, owned.
// Only Linux's namespace shim execs from a clone; elsewhere `Command` execs.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
#[derive(Debug)]
pub(crate) struct Exec {
    /// Owns the texts the pointers below point into; a `CString`'s bytes never move.
    _texts: Vec<CString>,
    program: *const c_char,
    argv: Vec<*const c_char>,
    envp: Vec<*const c_char>,
}

// SAFETY: the pointers point into `_texts`, owned by the same value and never changed after
// `new`; sharing or sending the value shares or sends read-only bytes.
unsafe impl Send for Exec {}
// SAFETY: as above; nothing is ever written through the pointers.
unsafe impl Sync for Exec {}

impl Exec {
    /// `program` run with `args` (the first is the program's own name) in `env` (`NAME=value`
    /// pairs). Fails on a NUL byte, which no `execve` argument can carry.
    pub(crate) fn new<'a>(
        program: &OsStr,
        args: impl IntoIterator<Item = &'a OsStr>,
        env: impl IntoIterator<Item = (&'a OsStr, &'a OsStr)>,
    ) -> io::Result<Exec> {
        let text = |bytes: Vec<u8>| {
            CString::new(bytes).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a NUL byte in a command or variable",
                )
            })
        };
        let program = text(program.as_bytes().to_vec())?;
        let args: Vec<CString> = args
            .into_iter()
            .map(|a| text(a.as_bytes().to_vec()))
            .collect::<io::Result<_>>()?;
        let env: Vec<CString> = env
            .into_iter()
            .map(|(name, value)| {
                let mut pair = name.as_bytes().to_vec();
                pair.push(b'=');
                pair.extend_from_slice(value.as_bytes());
                text(pair)
            })
            .collect::<io::Result<_>>()?;
        let mut argv: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
        argv.push(std::ptr::null());
        let mut envp: Vec<*const c_char> = env.iter().map(|e| e.as_ptr()).collect();
        envp.push(std::ptr::null());
        let program_ptr = program.as_ptr();
        let mut texts = Vec::with_capacity(1 + args.len() + env.len());
        texts.push(program);
        texts.extend(args);
        texts.extend(env);
        Ok(Exec {
            _texts: texts,
            program: program_ptr,
            argv,
            envp,
        })
    }

    /// Replaces this process with the command; returns only on failure.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    ///
    /// # Safety
    ///
    /// Async-signal-safe: callable in a forked or cloned child.
    pub(crate) unsafe fn execve(&self) -> io::Error {
        // SAFETY: every pointer is into `_texts`, NUL-terminated, and both arrays end in null.
        unsafe { libc::execve(self.program, self.argv.as_ptr(), self.envp.as_ptr()) };
        io::Error::last_os_error()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nul_byte_is_refused_before_any_fork() {
        let nul = OsStr::new("a\0b");
        assert!(Exec::new(OsStr::new("/bin/sh"), [nul], []).is_err());
        assert!(Exec::new(OsStr::new("/bin/sh"), [], [(OsStr::new("A"), nul)]).is_err());
        let ok = Exec::new(
            OsStr::new("/bin/sh"),
            [OsStr::new("sh"), OsStr::new("-c"), OsStr::new("true")],
            [(OsStr::new("A"), OsStr::new("1"))],
        )
        .unwrap();
        assert_eq!(ok.argv.len(), 4);
        assert!(ok.argv[3].is_null());
        assert_eq!(ok.envp.len(), 2);
    }
}
