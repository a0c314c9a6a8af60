//! The integration tests of `once-exec`: real processes, counted through `/proc`.
//!
//! Every test gives its commands a unique `ONCE_TEST_MARK`; children inherit it, so scanning
//! `/proc/*/environ` for it counts a command's whole family, grandchildren included. Tests wait
//! for conditions with a bounded poll of `/proc`, never with a fixed sleep.

mod process;
mod stop;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use once_exec::CommandSpec;

const MARK_VAR: &str = "ONCE_TEST_MARK";

/// A fresh directory and a unique mark for one test.
struct Fixture {
    dir: PathBuf,
    mark: String,
}

impl Fixture {
    fn new() -> Fixture {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let mark = format!(
            "{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let dir = std::env::temp_dir().join(format!("once-exec-it-{mark}"));
        std::fs::create_dir_all(&dir).unwrap();
        Fixture { dir, mark }
    }

    /// A marked spec with a deadline long enough never to matter unless a test sets its own.
    fn spec(&self, command: &str) -> CommandSpec {
        let log = self
            .dir
            .join("logs")
            .join(format!("{}.log", NEXT_LOG.fetch_add(1, Ordering::Relaxed)));
        let mut spec = CommandSpec::new(command, &self.dir, log);
        spec.env.insert(MARK_VAR.into(), self.mark.clone());
        spec.deadline = Duration::from_secs(30);
        spec.label = "test:run".into();
        spec
    }

    /// How many live processes carry this fixture's mark.
    fn count(&self) -> usize {
        count_marked(&self.mark)
    }

    /// Polls `/proc` until `done(count)` holds or `timeout` passes; returns the last count.
    fn wait_count(&self, done: impl Fn(usize) -> bool, timeout: Duration) -> usize {
        let end = Instant::now() + timeout;
        loop {
            let count = self.count();
            if done(count) || Instant::now() >= end {
                return count;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits until no marked process is left and asserts it.
    fn assert_none_left(&self) {
        let left = self.wait_count(|count| count == 0, Duration::from_secs(10));
        assert_eq!(
            left,
            0,
            "marked processes left: {:?}",
            marked_pids(&self.mark)
        );
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

static NEXT_LOG: AtomicUsize = AtomicUsize::new(0);

fn count_marked(mark: &str) -> usize {
    marked_pids(mark).len()
}

fn marked_pids(mark: &str) -> Vec<u32> {
    let needle = format!("{MARK_VAR}={mark}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            // A process may vanish or be unreadable; a zombie's environ reads empty, which is
            // right: a zombie no longer runs anything.
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
                environ
                    .split(|&b| b == 0)
                    .any(|entry| entry == needle.as_bytes())
            })
        })
        .collect()
}
