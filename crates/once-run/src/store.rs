//! The run store under `.once/runs/`: one folder per run, named by its id, holding `run.json`
//! (the report) and one log per action that ran. Only the newest runs are kept.
//!
//! Ids sort by start time, so "newest" is a name sort and pruning needs no index. An id given
//! from outside (an agent) is checked before it becomes a path: this module must never open a
//! file outside the store.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::owner;
use crate::report::{RunReport, RunStatus};
use once_fs::write_replacing;

/// How many runs the store keeps by default.
pub const KEEP_RUNS: usize = 50;
/// Most bytes of log lines one [`LogPage`] carries: an MCP answer holds its value twice and must
/// stay under 40 KB, and a log line may be 4 KB long.
const LOG_PAGE_BYTES: usize = 12 * 1024;

/// The runs of one workspace.
#[derive(Debug, Clone)]
pub struct RunStore {
    root: PathBuf,
    keep: usize,
}

/// The folder of one run.
#[derive(Debug, Clone)]
pub struct RunDir {
    pub id: String,
    pub path: PathBuf,
}

/// A page of one action's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogPage {
    pub run_id: String,
    pub action: String,
    pub log: PathBuf,
    /// Index of the first line of `lines` (0-based).
    pub offset: usize,
    pub lines: Vec<String>,
    /// Lines in the whole log.
    pub total_lines: usize,
    /// Pass as `offset` for the next page; absent at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
}

impl RunStore {
    pub fn new(workspace_root: &Path) -> RunStore {
        RunStore {
            root: workspace_root.join(".once").join("runs"),
            keep: KEEP_RUNS,
        }
    }

    /// Keeps only the newest `keep` runs.
    pub fn keeping(mut self, keep: usize) -> RunStore {
        self.keep = keep.max(1);
        self
    }

    /// Makes the folder of a new run and prunes the oldest runs beyond the limit.
    pub fn create(&self) -> Result<RunDir, Error> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let id = format!(
            "{}-{:03}-{:07}-{:06}",
            timestamp(now.as_secs()),
            now.subsec_millis(),
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = self.root.join(&id);
        crate::cache::state_dir(&path)?;
        self.prune();
        Ok(RunDir { id, path })
    }

    /// Run ids, newest first.
    pub fn ids(&self) -> Vec<String> {
        let Ok(entries) = fs::read_dir(&self.root) else {
            return Vec::new();
        };
        let mut ids: Vec<String> = entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|name| valid_id(name))
            .collect();
        ids.sort_unstable_by(|a, b| b.cmp(a));
        ids
    }

    fn prune(&self) {
        for id in self.ids().into_iter().skip(self.keep) {
            let path = self.root.join(&id);
            if let Err(error) = fs::remove_dir_all(&path) {
                tracing::debug!(path = %path.display(), %error, "cannot prune an old run");
            }
        }
    }

    /// The report of run `id` (as far as it got, if it is still running).
    ///
    /// A report that says `running` while the process that owned it is gone (killed, crashed)
    /// can never end by itself: it is recorded here as interrupted, so no reader shows a run
    /// that nothing runs.
    pub fn read(&self, id: &str) -> Result<RunReport, Error> {
        let unknown = || Error::UnknownRun { id: id.to_owned() };
        if !valid_id(id) {
            return Err(unknown());
        }
        let folder = self.root.join(id);
        let bytes = fs::read(folder.join("run.json")).map_err(|_| unknown())?;
        let report: RunReport = serde_json::from_slice(&bytes).map_err(|_| unknown())?;
        match report.owner {
            Some(owner) if report.status == RunStatus::Running && !owner::is_alive(&owner) => {
                let report = report.interrupted();
                let run = RunDir {
                    id: id.to_owned(),
                    path: folder,
                };
                // Another reader may do the same at once; both write the same record.
                if let Err(error) = run.write_report(&report) {
                    tracing::debug!(%error, "cannot record an abandoned run as interrupted");
                }
                Ok(report)
            }
            _ => Ok(report),
        }
    }

    /// Lines `offset..offset + limit` of the log of `action` in run `id`.
    pub fn log_page(
        &self,
        id: &str,
        action: &str,
        offset: usize,
        limit: usize,
    ) -> Result<LogPage, Error> {
        let report = self.read(id)?;
        let log = report
            .actions
            .iter()
            .find(|a| a.action == action)
            .and_then(|a| a.log.clone())
            .ok_or_else(|| Error::UnknownLog {
                run: id.to_owned(),
                action: action.to_owned(),
            })?;
        // A running action's log may not be created yet: it has no lines so far.
        let file = match fs::File::open(&log) {
            Ok(file) => Some(file),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
            Err(error) => return Err(Error::io(&log)(error)),
        };
        let mut lines = Vec::new();
        let mut total = 0;
        // A page ends at `limit` lines or once it holds LOG_PAGE_BYTES, whichever comes first.
        let mut bytes = 0;
        let mut full = false;
        for line in file
            .into_iter()
            .flat_map(|file| BufReader::new(file).split(b'\n'))
        {
            let line = line.map_err(Error::io(&log))?;
            if total >= offset && lines.len() < limit && !full {
                let mut text = String::from_utf8_lossy(&line).into_owned();
                if text.len() > once_exec::LINE_CAP {
                    let mut cut = once_exec::LINE_CAP;
                    while !text.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    text.truncate(cut);
                }
                bytes += text.len() + 3;
                if !lines.is_empty() && bytes > LOG_PAGE_BYTES {
                    full = true;
                } else {
                    lines.push(text);
                }
            }
            total += 1;
        }
        let end = offset + lines.len();
        Ok(LogPage {
            run_id: id.to_owned(),
            action: action.to_owned(),
            log,
            offset,
            lines,
            total_lines: total,
            next_offset: (end < total).then_some(end),
        })
    }
}

impl RunDir {
    /// Where the log of `action` goes.
    pub fn log_path(&self, action: &str) -> PathBuf {
        let name: String = action
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.path.join(format!("{name}.log"))
    }

    /// Writes `run.json` atomically, so a reader never sees half a report. It is not synced: a
    /// run record is history, not state anything depends on, and a crash that loses it loses a
    /// report (readers then see no run or the earlier `running` one), while an fsync would cost
    /// every run, a no-op one included, a disk flush or two.
    pub fn write_report(&self, report: &RunReport) -> Result<(), Error> {
        let path = self.path.join("run.json");
        let bytes = serde_json::to_vec_pretty(report).map_err(|e| Error::Io {
            path: path.clone(),
            source: std::io::Error::other(e),
        })?;
        write_replacing(&path, &bytes).map_err(Error::io(&path))
    }
}

/// Only names this store makes: digits and dashes.
fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() < 64 && id.bytes().all(|b| b.is_ascii_digit() || b == b'-')
}

/// `YYYYMMDD-HHMMSS` in UTC, from seconds since the Unix epoch.
fn timestamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rest = secs % 86_400;
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}-{:02}{:02}{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        assert_eq!(timestamp(0), "19700101-000000");
        assert_eq!(timestamp(951_782_400 + 3661), "20000229-010101");
        assert_eq!(timestamp(1_735_689_599), "20241231-235959");
    }

    #[test]
    fn ids_from_outside_cannot_escape_the_store() {
        assert!(valid_id("20250101-000000-001-42-0"));
        for bad in ["", "..", "../x", "a", "1/2"] {
            assert!(!valid_id(bad), "{bad}");
        }
    }

    #[test]
    fn a_log_page_of_long_lines_ends_at_its_byte_budget() {
        use crate::report::{ActionReport, ActionStatus};
        let dir = std::env::temp_dir().join(format!("once-run-log-{}", std::process::id()));
        let store = RunStore::new(&dir);
        let run = store.create().unwrap();
        let log = run.log_path("a:build");
        let text: String = (0..500)
            .map(|i| format!("{i} {}\n", "x".repeat(4_000)))
            .collect();
        fs::write(&log, text).unwrap();
        let report = RunReport {
            run_id: run.id.clone(),
            status: RunStatus::Failed,
            started_at: 0,
            duration_ms: 1,
            counts: Default::default(),
            containment: Default::default(),
            actions: vec![ActionReport {
                action: "a:build".into(),
                status: ActionStatus::Failed,
                cached: false,
                remote: false,
                exit_code: Some(1),
                duration_ms: 1,
                started_ms: Some(0),
                log: Some(log),
                tail: None,
                retried: 0,
                skipped_because: None,
                ran_again: None,
                batch: None,
                ran_on: None,
            }],
            owner: None,
            remote: None,
            execution: None,
            asked: None,
        };
        run.write_report(&report).unwrap();
        let mut offset = 0;
        let mut lines = 0;
        loop {
            let page = store.log_page(&run.id, "a:build", offset, 500).unwrap();
            let size = serde_json::to_string(&page).unwrap().len();
            assert!(size < 16 * 1024, "a page of {size} bytes");
            assert_eq!(page.total_lines, 500);
            assert!(page.lines[0].starts_with(&format!("{offset} ")));
            lines += page.lines.len();
            match page.next_offset {
                Some(next) => offset = next,
                None => break,
            }
        }
        assert_eq!(lines, 500);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_running_record_whose_owner_is_gone_is_read_and_kept_as_interrupted() {
        use crate::report::{ActionReport, ActionStatus, Owner};
        let dir = std::env::temp_dir().join(format!("once-run-owner-{}", std::process::id()));
        let store = RunStore::new(&dir);
        let run = store.create().unwrap();
        let action = |name: &str, status| ActionReport {
            action: name.into(),
            status,
            cached: false,
            remote: false,
            exit_code: None,
            duration_ms: 0,
            started_ms: None,
            log: None,
            tail: None,
            retried: 0,
            skipped_because: None,
            ran_again: None,
            batch: None,
            ran_on: None,
        };
        let me = crate::owner::current().unwrap();
        let mut report = RunReport {
            run_id: run.id.clone(),
            status: RunStatus::Running,
            started_at: 0,
            duration_ms: 1,
            counts: Default::default(),
            containment: Default::default(),
            actions: vec![
                action("a:build", ActionStatus::Succeeded),
                action("b:build", ActionStatus::Running),
                action("c:build", ActionStatus::Pending),
            ],
            owner: Some(me),
            remote: None,
            execution: None,
            asked: None,
        };
        run.write_report(&report).unwrap();
        // Its owner lives: it is running.
        assert_eq!(store.read(&run.id).unwrap().status, RunStatus::Running);
        // The same pid with another start time is another process: the owner is gone.
        report.owner = Some(Owner {
            start_time: me.start_time + 1,
            ..me
        });
        run.write_report(&report).unwrap();
        let read = store.read(&run.id).unwrap();
        assert_eq!(read.status, RunStatus::Interrupted);
        let statuses: Vec<ActionStatus> = read.actions.iter().map(|a| a.status).collect();
        assert_eq!(
            statuses,
            [
                ActionStatus::Succeeded,
                ActionStatus::Interrupted,
                ActionStatus::Skipped
            ]
        );
        assert_eq!((read.counts.ran, read.counts.skipped), (2, 1));
        let on_disk: RunReport =
            serde_json::from_slice(&fs::read(run.path.join("run.json")).unwrap()).unwrap();
        assert_eq!(on_disk, read);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_store_keeps_the_newest_runs() {
        let dir = std::env::temp_dir().join(format!("once-run-store-{}", std::process::id()));
        let store = RunStore::new(&dir).keeping(2);
        let first = store.create().unwrap();
        let second = store.create().unwrap();
        let third = store.create().unwrap();
        assert_eq!(store.ids(), vec![third.id.clone(), second.id.clone()]);
        assert!(!first.path.exists());
        fs::remove_dir_all(dir).unwrap();
    }
}
