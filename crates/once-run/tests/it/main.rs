//! The integration tests of `once-run`: real workspaces in temporary folders, real processes.
//!
//! Commands leave side effects in files (a counter appended on each run, markers), so each test
//! proves what ran by what it finds on disk, never by timing.

mod batch;
mod cache;
mod describe;
mod inputs;
mod mutex;
mod retry;
mod schedule;
mod select;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use once_exec::{Cancel, Registry};
use once_graph::Workspace;
use once_run::{Cache, Options, Request, RunReport, RunStore};

/// A workspace in a fresh temporary folder.
#[derive(Debug)]
pub struct Fixture {
    pub root: PathBuf,
}

impl Fixture {
    pub fn new(manifest: &str) -> Fixture {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "once-run-it-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root).unwrap();
        fs::write(root.join("once.toml"), manifest).unwrap();
        Fixture { root }
    }

    pub fn file(&self, path: &str, text: &str) -> &Fixture {
        let path = self.root.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
        self
    }

    pub fn read(&self, path: &str) -> String {
        fs::read_to_string(self.root.join(path)).unwrap_or_default()
    }

    pub fn run(&self, actions: &[&str], options: &Options) -> RunReport {
        self.run_request(
            Request {
                actions: actions.iter().map(|a| (*a).to_owned()).collect(),
                ..Request::default()
            },
            options,
        )
    }

    pub fn run_request(&self, request: Request, options: &Options) -> RunReport {
        let ws = Workspace::load(&self.root).unwrap();
        assert!(!ws.has_errors(), "{:?}", ws.diagnostics());
        let plan = once_run::plan(&ws, &request).unwrap();
        let run = RunStore::new(ws.root()).create().unwrap();
        once_run::execute(
            &plan,
            &Cache::new(ws.root()),
            &run,
            &Registry::new(),
            &Cancel::new(),
            options,
            &mut |_| {},
        )
    }

    pub fn plan_error(&self, request: Request) -> String {
        let ws = Workspace::load(&self.root).unwrap();
        once_run::plan(&ws, &request).unwrap_err().to_string()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// Each action's status (and whether it was cached), by name.
pub fn statuses(report: &RunReport) -> BTreeMap<String, String> {
    report
        .actions
        .iter()
        .map(|a| {
            let status = serde_json::to_value(a.status).unwrap();
            let status = status.as_str().unwrap().to_owned();
            (
                a.action.clone(),
                if a.cached {
                    format!("{status} (cached)")
                } else {
                    status
                },
            )
        })
        .collect()
}

pub fn serial() -> Options {
    Options {
        jobs: 1,
        ..Options::default()
    }
}

pub fn exists(root: &Path, path: &str) -> bool {
    root.join(path).exists()
}
