//! `once sessions` (and `once serve --status`): the live sessions on this machine for this user,
//! as text or JSON; and `once sessions --url`, a new one-time link to a session's window. It
//! reaps dead entries first; it must never print a session's token.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::exit::Outcome;
use crate::output;
use crate::session::bridge;
use crate::session::registry::{Entry, Registry};

/// How long the session has to answer `--url`.
const ASK_WAIT: Duration = Duration::from_secs(5);
use crate::session::unix_now;

/// One row of the listing: an entry without its token, plus its uptime.
#[derive(Debug, Serialize)]
struct Row {
    pid: u32,
    workspace: PathBuf,
    port: u16,
    version: String,
    started_at: u64,
    uptime_seconds: u64,
}

impl Row {
    fn new(entry: Entry, now: u64) -> Row {
        Row {
            pid: entry.pid,
            workspace: entry.workspace,
            port: entry.port,
            version: entry.version,
            started_at: entry.started_at,
            uptime_seconds: now.saturating_sub(entry.started_at),
        }
    }
}

pub fn run(json: bool) -> Result<Outcome> {
    let registry = Registry::open()?;
    registry.reap(&registry.lock()?)?;
    let now = unix_now();
    let rows: Vec<Row> = registry
        .live()?
        .into_iter()
        .map(|entry| Row::new(entry, now))
        .collect();
    if json {
        output::json(&rows)?;
        return Ok(Outcome::Success);
    }
    if rows.is_empty() {
        output::text("no live sessions; start one with `once serve` in a workspace")?;
        return Ok(Outcome::Success);
    }
    let mut text = format!("{:<8} {:<6} {:<9} WORKSPACE\n", "PID", "PORT", "UPTIME");
    for row in &rows {
        text.push_str(&format!(
            "{:<8} {:<6} {:<9} {}\n",
            row.pid,
            row.port,
            uptime(row.uptime_seconds),
            row.workspace.display()
        ));
    }
    output::text(&text)?;
    Ok(Outcome::Success)
}

/// `once sessions --url`: asks the session (with its token, as the owner) for a new login link and
/// prints it. The session to ask is the only live one, or the one serving `workspace`.
pub fn login_url(workspace: Option<&Path>, json: bool) -> Result<Outcome> {
    let registry = Registry::open()?;
    registry.reap(&registry.lock()?)?;
    let entry = bridge::choose(&registry.live()?, workspace)?;
    let url = ask_login_url(&entry).with_context(|| {
        format!(
            "cannot get a login link from the session of `{}` (pid {}, port {})",
            entry.workspace.display(),
            entry.pid,
            entry.port
        )
    })?;
    if json {
        output::json(&serde_json::json!({ "url": url, "workspace": entry.workspace }))?;
    } else {
        output::text(&url)?;
    }
    Ok(Outcome::Success)
}

/// `POST /session/login` with the session token as a bearer; the answer is `{"url": …}`.
fn ask_login_url(entry: &Entry) -> Result<String> {
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, entry.port))?;
    stream.set_read_timeout(Some(ASK_WAIT))?;
    stream.set_write_timeout(Some(ASK_WAIT))?;
    write!(
        stream,
        "POST /session/login HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n\
         Content-Length: 0\r\nConnection: close\r\n\r\n",
        entry.port, entry.token
    )?;
    let mut response = Vec::new();
    stream.take(64 * 1024).read_to_end(&mut response)?;
    let text = String::from_utf8_lossy(&response);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .context("the session's answer is not HTTP")?;
    if !head.starts_with("HTTP/1.1 200 ") {
        bail!(
            "the session answered `{}`: {}",
            head.lines().next().unwrap_or_default(),
            body.trim()
        );
    }
    let answer: serde_json::Value = serde_json::from_str(body)?;
    answer["url"]
        .as_str()
        .map(str::to_owned)
        .context("the session's answer has no `url`")
}

/// `42s`, `3m12s`, `5h03m`, `2d04h`: two units are enough to recognise a session.
fn uptime(seconds: u64) -> String {
    let (minutes, hours, days) = (seconds / 60, seconds / 3600, seconds / 86_400);
    match () {
        () if days > 0 => format!("{days}d{:02}h", hours % 24),
        () if hours > 0 => format!("{hours}h{:02}m", minutes % 60),
        () if minutes > 0 => format!("{minutes}m{:02}s", seconds % 60),
        () => format!("{seconds}s"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn uptime_uses_two_units() {
        assert_eq!(super::uptime(42), "42s");
        assert_eq!(super::uptime(192), "3m12s");
        assert_eq!(super::uptime(5 * 3600 + 180), "5h03m");
        assert_eq!(super::uptime(2 * 86_400 + 4 * 3600 + 59), "2d04h");
    }
}
