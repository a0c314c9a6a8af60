//! The discovery files: how `once mcp --attach` and `once sessions` find the live sessions.
//!
//! Each `once serve` publishes one [`Entry`] as `<state dir>/once/mcp/<pid>.json`, where the state
//! dir is `$XDG_STATE_HOME` (when absolute) or `~/.local/state` (on Windows `%LOCALAPPDATA%`).
//! The folder is 0700 and owned by us, the file 0600, written to a temporary name, synced and
//! renamed, so a reader sees a whole entry or none. An entry is live only while a process with its
//! pid *and* its start time (field 22 of `/proc/<pid>/stat`; on Windows its creation time) exists,
//! so a pid the kernel handed to another program is not mistaken for the session. Dead entries are
//! reaped under the folder's lock at every start.
//!
//! On Windows there are no modes to set or check: the folder and its tokens are as private as the
//! access rules they inherit, which under `%LOCALAPPDATA%` give the user (and the administrators
//! and the system) alone; nothing here checks them, so a `XDG_STATE_HOME` in a shared folder
//! shares the tokens.
//!
//! This module must never publish or reap outside [`Registry::lock`], and never show a token.

use std::fs::{self, DirBuilder, File, OpenOptions, TryLockError};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

/// How long a start waits for another process that holds the registry lock.
const LOCK_PATIENCE: Duration = Duration::from_secs(5);

/// One live session, as published in its discovery file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub pid: u32,
    /// The process's start time in clock ticks after boot (`/proc/<pid>/stat`, field 22).
    pub start_time: u64,
    pub port: u16,
    /// The workspace root, canonical.
    pub workspace: PathBuf,
    /// The `once` version that serves it.
    pub version: String,
    /// 32 hex digits; see `token.rs`.
    pub token: String,
    /// Seconds since the Unix epoch.
    pub started_at: u64,
}

impl Entry {
    /// Whether the process that published this entry is still the one running under its pid.
    pub fn is_live(&self) -> bool {
        start_time(self.pid) == Some(self.start_time)
    }
}

/// The folder of discovery files.
#[derive(Debug)]
pub struct Registry {
    dir: PathBuf,
}

/// Held while reaping and publishing, so a reaper never removes the file of a session that
/// is being published under a reused pid.
#[derive(Debug)]
pub struct Lock(File);

impl Drop for Lock {
    fn drop(&mut self) {
        // Closing the file would release the lock anyway; an unlock that fails changes nothing.
        let _ = self.0.unlock();
    }
}

impl Registry {
    /// Opens (creating if needed) the folder under the state dir the environment names.
    pub fn open() -> Result<Registry> {
        Registry::open_at(&state_dir()?.join("once").join("mcp"))
    }

    pub fn open_at(dir: &Path) -> Result<Registry> {
        let mut builder = DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(dir)
            .with_context(|| format!("cannot create `{}`", dir.display()))?;
        #[cfg(unix)]
        make_private(dir)?;
        Ok(Registry {
            dir: dir.to_path_buf(),
        })
    }

    /// Takes the folder's lock, waiting a bounded time for another `once` to release it.
    pub fn lock(&self) -> Result<Lock> {
        let path = self.dir.join("lock");
        let file = private_file()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open `{}`", path.display()))?;
        let deadline = Instant::now() + LOCK_PATIENCE;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(Lock(file)),
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(error)) => {
                    return Err(error).with_context(|| format!("cannot lock `{}`", path.display()));
                }
            }
            if Instant::now() >= deadline {
                bail!(
                    "another `once` has held `{}` for over {}s",
                    path.display(),
                    LOCK_PATIENCE.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Removes the files of dead sessions (and half-written ones of dead writers); returns how
    /// many went. A file this version cannot read is kept while its pid lives.
    pub fn reap(&self, _lock: &Lock) -> Result<usize> {
        let mut reaped = 0;
        for file in self.files()? {
            let dead = match &file {
                Found::Entry { path, pid } => match read_entry(path) {
                    Some(entry) => entry.pid != *pid || !entry.is_live(),
                    None => start_time(*pid).is_none(),
                },
                Found::Partial {
                    pid, start_time: t, ..
                } => start_time(*pid) != Some(*t),
            };
            if dead {
                let path = file.path();
                match fs::remove_file(path) {
                    Ok(()) => reaped += 1,
                    Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                    Err(error) => {
                        return Err(error)
                            .with_context(|| format!("cannot remove `{}`", path.display()));
                    }
                }
                tracing::info!("reaped the stale session file `{}`", path.display());
            }
        }
        Ok(reaped)
    }

    /// The live entries, oldest first.
    pub fn live(&self) -> Result<Vec<Entry>> {
        let mut entries: Vec<Entry> = self
            .files()?
            .iter()
            .filter_map(|file| match file {
                Found::Entry { path, pid } => read_entry(path).filter(|e| e.pid == *pid),
                Found::Partial { .. } => None,
            })
            .filter(Entry::is_live)
            .collect();
        entries.sort_by_key(|entry| (entry.started_at, entry.pid));
        Ok(entries)
    }

    /// Writes `entry` atomically as `<pid>.json` with mode 0600; the returned file removes it
    /// when dropped or told to.
    pub fn publish(&self, entry: &Entry, _lock: &Lock) -> Result<Published> {
        let path = self.dir.join(format!("{}.json", entry.pid));
        let partial = self
            .dir
            .join(format!("{}.{}.partial", entry.pid, entry.start_time));
        let _ = fs::remove_file(&partial);
        let mut text = serde_json::to_vec_pretty(entry).context("cannot encode the entry")?;
        text.push(b'\n');
        let write = || -> io::Result<()> {
            let mut file = private_file().write(true).create_new(true).open(&partial)?;
            file.write_all(&text)?;
            file.sync_all()?;
            fs::rename(&partial, &path)?;
            // The rename is durable once the folder is synced (see `once_fs::sync_dir` for
            // Windows).
            once_fs::sync_dir(&self.dir)
        };
        if let Err(error) = write() {
            let _ = fs::remove_file(&partial);
            return Err(error).with_context(|| format!("cannot write `{}`", path.display()));
        }
        Ok(Published {
            path,
            removed: AtomicBool::new(false),
        })
    }

    fn files(&self) -> Result<Vec<Found>> {
        let read = fs::read_dir(&self.dir)
            .with_context(|| format!("cannot read `{}`", self.dir.display()))?;
        let mut found = Vec::new();
        for item in read {
            let item = item.with_context(|| format!("cannot read `{}`", self.dir.display()))?;
            let name = item.file_name();
            let Some(name) = name.to_str() else { continue };
            let path = item.path();
            if let Some(pid) = name.strip_suffix(".json").and_then(|s| s.parse().ok()) {
                found.push(Found::Entry { path, pid });
            } else if let Some((pid, start)) = name
                .strip_suffix(".partial")
                .and_then(|stem| stem.split_once('.'))
                && let (Ok(pid), Ok(start_time)) = (pid.parse(), start.parse())
            {
                found.push(Found::Partial {
                    path,
                    pid,
                    start_time,
                });
            }
        }
        Ok(found)
    }
}

/// A file in the folder that reaping cares about.
enum Found {
    Entry {
        path: PathBuf,
        pid: u32,
    },
    /// A temporary file left by a writer that stopped between create and rename.
    Partial {
        path: PathBuf,
        pid: u32,
        start_time: u64,
    },
}

impl Found {
    fn path(&self) -> &Path {
        match self {
            Found::Entry { path, .. } | Found::Partial { path, .. } => path,
        }
    }
}

/// Our published entry; removed when dropped (a fatal error unwinding) or by [`Published::remove`]
/// (the signal thread, which then exits without running destructors).
#[derive(Debug)]
pub struct Published {
    path: PathBuf,
    removed: AtomicBool,
}

impl Published {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the file once; later calls do nothing.
    pub fn remove(&self) {
        if !self.removed.swap(true, Ordering::SeqCst)
            && let Err(error) = fs::remove_file(&self.path)
            && error.kind() != io::ErrorKind::NotFound
        {
            tracing::warn!("cannot remove `{}`: {error}", self.path.display());
        }
    }
}

impl Drop for Published {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Refuses a folder another user owns, and takes group and other access away from ours (made by
/// hand, or by an older tool, with looser modes).
#[cfg(unix)]
fn make_private(dir: &Path) -> Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let metadata = fs::metadata(dir).with_context(|| format!("cannot read `{}`", dir.display()))?;
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    if metadata.uid() != me {
        bail!(
            "`{}` belongs to another user (uid {}); session tokens must live in a folder only you can read",
            dir.display(),
            metadata.uid()
        );
    }
    if metadata.mode() & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .with_context(|| format!("cannot make `{}` private", dir.display()))?;
    }
    Ok(())
}

/// Options for a file only its owner may read: mode 0600.
#[cfg(unix)]
fn private_file() -> OpenOptions {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = OpenOptions::new();
    options.mode(0o600);
    options
}

/// Options for a new file, which Windows gives the access rules of its folder: it has no modes.
#[cfg(windows)]
fn private_file() -> OpenOptions {
    OpenOptions::new()
}

fn read_entry(path: &Path) -> Option<Entry> {
    let text = fs::read(path).ok()?;
    serde_json::from_slice(&text).ok()
}

/// `$XDG_STATE_HOME`, or `~/.local/state`; the XDG spec says a relative value is to be ignored.
#[cfg(unix)]
pub fn state_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_STATE_HOME").map(PathBuf::from)
        && dir.is_absolute()
    {
        return Ok(dir);
    }
    match std::env::var_os("HOME").map(PathBuf::from) {
        Some(home) if home.is_absolute() => Ok(home.join(".local").join("state")),
        _ => bail!("neither XDG_STATE_HOME nor HOME is set to an absolute path"),
    }
}

/// `$XDG_STATE_HOME` when absolute, else `%LOCALAPPDATA%`: the user's own, unroamed folder,
/// where Windows keeps what Unix keeps in `~/.local/state`.
#[cfg(windows)]
pub fn state_dir() -> Result<PathBuf> {
    ["XDG_STATE_HOME", "LOCALAPPDATA"]
        .iter()
        .filter_map(|name| std::env::var_os(name).map(PathBuf::from))
        .find(|dir| dir.is_absolute())
        .ok_or_else(|| {
            anyhow::anyhow!("neither XDG_STATE_HOME nor LOCALAPPDATA is set to an absolute path")
        })
}

/// The start time of process `pid` in clock ticks after boot, or `None` when there is no such
/// process. Field 22 of `/proc/<pid>/stat`, counted after the command name, which is in
/// parentheses and may itself hold spaces and parentheses.
#[cfg(target_os = "linux")]
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    // After the name come field 3 (state) onwards, so field 22 is the 20th.
    after_name.split_whitespace().nth(19)?.parse().ok()
}

/// Without `/proc` only whether `pid` lives can be told: every live process reads as started at
/// 0, so a pid the system handed to another program passes for the session until it exits.
#[cfg(all(unix, not(target_os = "linux")))]
pub fn start_time(pid: u32) -> Option<u64> {
    let pid = libc::pid_t::try_from(pid).ok().filter(|pid| *pid > 0)?;
    // SAFETY: signal 0 only asks whether the process exists; nothing is sent.
    let alive = unsafe { libc::kill(pid, 0) } == 0
        || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    alive.then_some(0)
}

/// The creation time of process `pid` (100 ns ticks since 1601), or `None` when it has ended or
/// this user may not ask about it: a session that runs elevated, seen from a `once` that does
/// not, reads as gone and its file is reaped.
#[cfg(windows)]
pub fn start_time(pid: u32) -> Option<u64> {
    use windows_sys::Win32::Foundation::{CloseHandle, FILETIME, STILL_ACTIVE};
    use windows_sys::Win32::System::Threading::{
        GetExitCodeProcess, GetProcessTimes, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
    };
    // SAFETY: plain call with a pid; the handle is checked before use.
    let handle = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if handle.is_null() {
        return None;
    }
    let zero = FILETIME {
        dwLowDateTime: 0,
        dwHighDateTime: 0,
    };
    let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
    let mut code = 0u32;
    // SAFETY: a valid process handle and pointers to live locals; the handle is closed once.
    let (timed, asked) = unsafe {
        let timed = GetProcessTimes(handle, &mut created, &mut exited, &mut kernel, &mut user);
        let asked = GetExitCodeProcess(handle, &mut code);
        CloseHandle(handle);
        (timed, asked)
    };
    let running = timed != 0 && asked != 0 && code == STILL_ACTIVE as u32;
    running.then(|| u64::from(created.dwHighDateTime) << 32 | u64::from(created.dwLowDateTime))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("once-registry-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn entry(pid: u32, start_time: u64) -> Entry {
        Entry {
            pid,
            start_time,
            port: 4242,
            workspace: PathBuf::from("/w"),
            version: "0".into(),
            token: "00".repeat(16),
            started_at: 1,
        }
    }

    #[test]
    fn our_own_start_time_is_stable_and_a_dead_pid_has_none() {
        let me = std::process::id();
        let first = start_time(me).expect("our own stat");
        assert_eq!(start_time(me), Some(first));
        let mut child = std::process::Command::new("true").spawn().expect("spawns");
        let pid = child.id();
        child.wait().expect("waits");
        assert_eq!(start_time(pid), None);
    }

    #[test]
    fn publish_reap_and_remove() {
        let dir = temp("cycle");
        let registry = Registry::open_at(&dir).expect("opens");
        let me = std::process::id();
        let lock = registry.lock().expect("locks");
        let live = entry(me, start_time(me).expect("stat"));
        let published = registry.publish(&live, &lock).expect("publishes");
        let mode = fs::metadata(published.path()).expect("stat").mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(fs::metadata(&dir).expect("stat").mode() & 0o777, 0o700);
        // A leftover partial file of a writer that is gone.
        let mut writer = std::process::Command::new("true").spawn().expect("spawns");
        let gone = writer.id();
        writer.wait().expect("waits");
        fs::write(dir.join(format!("{gone}.7.partial")), "{").expect("writes");
        assert_eq!(registry.reap(&lock).expect("reaps"), 1);
        assert_eq!(registry.live().expect("lists"), [live]);
        published.remove();
        published.remove();
        assert!(registry.live().expect("lists").is_empty());
        drop(lock);
        let _ = fs::remove_dir_all(&dir);
    }
}
