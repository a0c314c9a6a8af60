//! The integration tests of `once-eval`: real Python and Node.js processes (and a real nREPL
//! server when one is installed), counted through `/proc`.
//!
//! Every test gives its evaluators a unique `ONCE_TEST_MARK`; children inherit it, so scanning
//! `/proc/*/environ` for it counts an evaluator's whole family. Tests wait for conditions with
//! a bounded poll of `/proc`, never with a fixed sleep.

mod adapters;
mod busy;
mod nrepl;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use once_eval::{EvaluatorSpec, Language};

const MARK_VAR: &str = "ONCE_TEST_MARK";

/// A fresh folder and a unique mark for one test.
struct Fixture {
    dir: PathBuf,
    mark: String,
}

impl Fixture {
    fn new() -> Fixture {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let mark = format!(
            "eval-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        let dir = std::env::temp_dir().join(format!("once-eval-test-{mark}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Fixture { dir, mark }
    }

    fn spec(&self, language: Language) -> EvaluatorSpec {
        let mut spec = EvaluatorSpec::new(language, &self.dir);
        spec.env.insert(MARK_VAR.into(), self.mark.clone());
        spec.grace = Duration::from_millis(500);
        spec
    }

    /// Pids of live processes carrying this fixture's mark.
    fn processes(&self) -> Vec<u32> {
        marked(&self.mark)
    }

    /// Waits (bounded) until `count` marked processes are left.
    fn wait_for_processes(&self, count: usize) -> Vec<u32> {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            let found = self.processes();
            if found.len() == count || Instant::now() > end {
                return found;
            }
            std::thread::yield_now();
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn marked(mark: &str) -> Vec<u32> {
    let needle = format!("{MARK_VAR}={mark}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            // A zombie's environ reads empty, which is right: a zombie runs nothing.
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
                environ
                    .split(|&b| b == 0)
                    .any(|entry| entry == needle.as_bytes())
            })
        })
        .collect()
}
