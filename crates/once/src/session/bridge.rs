//! `once mcp --attach`: a stdio client's way into a live session.
//!
//! The bridge picks an entry from the registry, connects to its port and presents the token as
//! the first line (`client::connect`, shared with `once eval`), and from then on is a pipe: one
//! thread copies stdin to the socket, another the socket to the real stdout, chunk by chunk as the
//! bytes arrive, so every line — a malformed one included — reaches the other side exactly as it
//! was written.
//!
//! One exception, for the exit code: the session's first line is held back until it is complete
//! (or clearly too long to be a refusal), and when it is the door's refusal — an error with a
//! null id and the door's "busy" or "unauthorized" code — the bridge forwards it and then fails,
//! so whoever started it sees that it is not connected. The line goes out unchanged either way.
//! It must never re-encode or otherwise buffer a message, and never write anything but the
//! session's bytes to stdout.

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::registry::Entry;

/// How long the bridge waits for the session to finish answering after stdin closed.
const LAST_WORDS: Duration = Duration::from_secs(5);

/// The entry to attach to: the one serving `dir` (or the closest workspace enclosing it within
/// its repository), or the only live one when no folder is named.
pub fn choose(live: &[Entry], dir: Option<&Path>) -> Result<Entry> {
    let Some(dir) = dir else {
        return match live {
            [only] => Ok(only.clone()),
            [] => bail!(
                "no live `once serve` session; start one in the workspace with `once serve` \
                 (or `once -C DIR serve`), then attach with `once mcp --attach`"
            ),
            several => bail!(
                "{} live sessions; name the workspace with `once mcp --attach DIR`:\n{}",
                several.len(),
                listing(several)
            ),
        };
    };
    let wanted = dir
        .canonicalize()
        .with_context(|| format!("cannot open `{}`", dir.display()))?;
    // The deepest workspace that holds the folder: attaching from a subfolder of a workspace
    // finds it, and a nested workspace wins over the one around it. Never one above the top of
    // the folder's repository, as root discovery would never settle there either.
    let top = once_graph::repository_top(&wanted);
    let best = live
        .iter()
        .filter(|entry| wanted.starts_with(&entry.workspace))
        .filter(|entry| {
            top.as_ref()
                .is_none_or(|top| entry.workspace.starts_with(top))
        })
        .max_by_key(|entry| entry.workspace.components().count());
    match best {
        Some(entry) => Ok(entry.clone()),
        None if live.is_empty() => bail!(
            "no live session serves `{}`; start one with `once serve` in that workspace \
             (`once -C {} serve`)",
            wanted.display(),
            wanted.display()
        ),
        None => bail!(
            "no live session serves `{}`; start one with `once serve` in that workspace \
             (`once -C {} serve`). Live sessions:\n{}",
            wanted.display(),
            wanted.display(),
            listing(live)
        ),
    }
}

fn listing(entries: &[Entry]) -> String {
    entries
        .iter()
        .map(|entry| {
            format!(
                "  pid {}  port {}  {}",
                entry.pid,
                entry.port,
                entry.workspace.display()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Connects to `entry`, presents its token, and copies bytes both ways until either side
/// closes. `stdout` is the real stdout, set aside by `stdout_guard::take`.
pub fn run(entry: &Entry, stdout: File) -> Result<()> {
    let socket = super::client::connect(entry)?;

    let (done, finished) = mpsc::channel();
    let upstream = socket.try_clone().context("cannot share the socket")?;
    let downstream = socket.try_clone().context("cannot share the socket")?;
    let to_session = done.clone();
    std::thread::Builder::new()
        .name("stdin → session".into())
        .spawn(move || {
            let result = copy(&mut io::stdin().lock(), &mut &upstream);
            // The session sees end of input, finishes, and closes: that ends the other copy.
            let _ = upstream.shutdown(Shutdown::Write);
            let _ = to_session.send(Side::Stdin(result));
        })
        .context("cannot start the bridge")?;
    std::thread::Builder::new()
        .name("session → stdout".into())
        .spawn(move || {
            let mut stdout = stdout;
            let result = copy_watching_for_refusal(&mut &downstream, &mut stdout);
            let _ = done.send(Side::Session(result));
        })
        .context("cannot start the bridge")?;

    let first_to_end = finished.recv().context("the bridge threads vanished")?;
    let session_result = match first_to_end {
        Side::Session(result) => result,
        Side::Stdin(result) => {
            if let Err(error) = result {
                tracing::warn!("reading stdin failed: {error}");
            }
            match finished.recv_timeout(LAST_WORDS) {
                Ok(Side::Session(result)) => result,
                _ => {
                    tracing::warn!("the session did not close within {LAST_WORDS:?} of stdin");
                    Ok(None)
                }
            }
        }
    };
    // Either way we are done; a thread still blocked reading stdin ends with the process.
    let _ = socket.shutdown(Shutdown::Both);
    match session_result.context("the connection to the session failed")? {
        Some(refusal) => bail!("the session refused the connection: {refusal}"),
        None => Ok(()),
    }
}

enum Side {
    Stdin(io::Result<()>),
    /// How the session's side ended, with the door's refusal when it refused us.
    Session(io::Result<Option<String>>),
}

/// The door's JSON-RPC codes for "busy" and "unauthorized" (see `listener.rs`).
const REFUSAL_CODES: [i64; 2] = [-32000, -32001];
/// A refusal is one short line; a first line longer than this is the session answering.
const REFUSAL_MAX: usize = 4096;

/// Copies like [`copy`], but holds the first line back until it is complete (or longer than any
/// refusal) to see whether it is the door's refusal, whose message it returns.
fn copy_watching_for_refusal(
    from: &mut impl Read,
    to: &mut impl Write,
) -> io::Result<Option<String>> {
    let mut first = Vec::new();
    let mut buffer = vec![0u8; 64 * 1024];
    while !first.contains(&b'\n') && first.len() <= REFUSAL_MAX {
        let n = match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        first.extend_from_slice(&buffer[..n]);
    }
    to.write_all(&first)?;
    to.flush()?;
    let line = first.split(|&b| b == b'\n').next().unwrap_or_default();
    if let Some(refusal) = refusal(line) {
        return Ok(Some(refusal));
    }
    copy(from, to).map(|()| None)
}

/// The message of the door's refusal, when `line` is one.
fn refusal(line: &[u8]) -> Option<String> {
    let message: serde_json::Value = serde_json::from_slice(line).ok()?;
    let error = message.get("error")?;
    let refused = message.get("id").is_some_and(serde_json::Value::is_null)
        && error["code"]
            .as_i64()
            .is_some_and(|code| REFUSAL_CODES.contains(&code));
    refused.then(|| error["message"].as_str().unwrap_or("refused").to_owned())
}

/// Copies until end of input, writing each chunk as soon as it is read.
fn copy(from: &mut impl Read, to: &mut impl Write) -> io::Result<()> {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        to.write_all(&buffer[..n])?;
        to.flush()?;
    }
}

/// A folder to compare with workspaces, from `--attach DIR` or the global `--workspace`.
pub fn requested_dir(attach: Option<PathBuf>, workspace: Option<&Path>) -> Option<PathBuf> {
    attach.or_else(|| workspace.map(Path::to_path_buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pid: u32, workspace: &Path) -> Entry {
        Entry {
            pid,
            start_time: 0,
            port: 4000 + u16::try_from(pid).expect("small"),
            workspace: workspace.to_path_buf(),
            version: "0".into(),
            token: "00".repeat(16),
            started_at: 0,
        }
    }

    #[test]
    fn the_deepest_enclosing_workspace_wins() {
        let tmp = std::env::temp_dir()
            .canonicalize()
            .expect("temp")
            .join(format!("once-bridge-{}", std::process::id()));
        let inner = tmp.join("outer/inner");
        std::fs::create_dir_all(inner.join("src")).expect("mkdir");
        let outer = tmp.join("outer");
        let live = [entry(1, &outer), entry(2, &inner)];
        let pick = |dir: &Path| choose(&live, Some(dir)).map(|e| e.pid).ok();
        assert_eq!(pick(&inner.join("src")), Some(2));
        assert_eq!(pick(&outer), Some(1));
        assert_eq!(pick(&tmp), None);
        let _ = std::fs::remove_dir_all(&tmp);
    }

    #[test]
    fn a_session_above_the_folders_repository_is_not_chosen() {
        let tmp = std::env::temp_dir()
            .canonicalize()
            .expect("temp")
            .join(format!("once-bridge-repo-{}", std::process::id()));
        let clone = tmp.join("clone");
        std::fs::create_dir_all(clone.join(".git")).expect("mkdir");
        std::fs::create_dir_all(clone.join("src")).expect("mkdir");
        let above = [entry(1, &tmp)];
        let pick = |live: &[Entry], dir: &Path| choose(live, Some(dir)).map(|e| e.pid).ok();
        assert_eq!(pick(&above, &clone.join("src")), None);
        assert_eq!(pick(&above, &tmp), Some(1));
        let own = [entry(1, &tmp), entry(2, &clone)];
        assert_eq!(pick(&own, &clone.join("src")), Some(2));
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
