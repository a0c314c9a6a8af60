//! `once sessions` (and `once serve --status`): the live sessions on this machine for this user,
//! as text or JSON. It reaps dead entries first; it must never print a session's token.

use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use crate::exit::Outcome;
use crate::output;
use crate::session::registry::{Entry, Registry};
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
