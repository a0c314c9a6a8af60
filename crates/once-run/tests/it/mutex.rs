//! `mutex`: actions naming the same one never overlap, in one run or across runs; without one
//! they do.
//!
//! Each command writes `start NAME` to a shared file, then waits (a bounded poll) until the other
//! action's marker file exists, then writes `end NAME`. Two actions that may overlap meet at the
//! markers and interleave; two that may not, cannot meet, so the first one's wait runs out (the
//! bound is short) and the marks come out whole, one action after the other.

use std::thread;

use once_exec::{Cancel, Registry};
use once_graph::Workspace;
use once_run::{Cache, Options, Request, RunStatus, RunStore};

use super::Fixture;

fn manifest(mutex: Option<&str>, bound_polls: u32) -> String {
    let mut text = String::new();
    for (me, other) in [("a", "b"), ("b", "a")] {
        text.push_str(&format!(
            r#"
[targets.{me}]
kind = "command"
path = "{me}"
[targets.{me}.capabilities.test]
cache = false
command = "echo start {me} >> ../marks; touch ../{me}.mark; i=0; while [ ! -e ../{other}.mark ] && [ $i -lt {bound_polls} ]; do sleep 0.02; i=$((i + 1)); done; echo end {me} >> ../marks"
"#
        ));
        if let Some(mutex) = mutex {
            text.push_str(&format!("mutex = \"{mutex}\"\n"));
        }
    }
    text
}

fn fixture(mutex: Option<&str>, bound_polls: u32) -> Fixture {
    let ws = Fixture::new(&manifest(mutex, bound_polls));
    ws.file("a/x", "").file("b/x", "");
    ws
}

fn two_jobs() -> Options {
    Options {
        jobs: 2,
        ..Options::default()
    }
}

/// Whether the marks show one action's start and end with nothing of the other between.
fn whole(marks: &str) -> bool {
    let lines: Vec<&str> = marks.lines().collect();
    lines.len() == 4
        && lines.chunks(2).all(|pair| {
            let (start, end) = (pair[0], pair[1]);
            start.strip_prefix("start ") == end.strip_prefix("end ") && start.starts_with("start ")
        })
}

#[test]
fn without_a_mutex_two_jobs_overlap() {
    // Long bound: the two meet as soon as both have started, however loaded the machine is.
    let ws = fixture(None, 1500);
    let report = ws.run(&["a:test", "b:test"], &two_jobs());
    assert_eq!(report.status, RunStatus::Succeeded);
    let marks = ws.read("marks");
    assert!(!whole(&marks), "{marks}");
    assert!(
        marks.lines().take(2).all(|l| l.starts_with("start ")),
        "{marks}"
    );
}

#[test]
fn with_a_mutex_two_jobs_never_overlap() {
    let ws = fixture(Some("db"), 25);
    let report = ws.run(&["a:test", "b:test"], &two_jobs());
    assert_eq!(report.status, RunStatus::Succeeded);
    let marks = ws.read("marks");
    assert!(whole(&marks), "{marks}");
}

#[test]
fn a_mutex_holds_across_two_runs_on_one_workspace() {
    let ws = fixture(Some("db"), 25);
    let loaded = Workspace::load(&ws.root).unwrap();
    let plans: Vec<_> = ["a:test", "b:test"]
        .iter()
        .map(|action| {
            let request = Request {
                actions: vec![(*action).to_owned()],
                ..Request::default()
            };
            once_run::plan(&loaded, &request).unwrap()
        })
        .collect();
    thread::scope(|scope| {
        for plan in &plans {
            let root = loaded.root();
            scope.spawn(move || {
                let run = RunStore::new(root).create().unwrap();
                let report = once_run::execute(
                    plan,
                    &Cache::new(root),
                    &run,
                    &Registry::new(),
                    &Cancel::new(),
                    &Options::default(),
                    &mut |_| {},
                );
                assert_eq!(report.status, RunStatus::Succeeded);
            });
        }
    });
    let marks = ws.read("marks");
    assert!(whole(&marks), "{marks}");
}

#[test]
fn a_mutex_must_be_a_plain_name() {
    for bad in ["", ".hidden", "a/b", "a b", &"x".repeat(65)] {
        let ws = Fixture::new(&manifest(Some(bad), 1));
        let loaded = Workspace::load(&ws.root).unwrap();
        assert!(
            loaded.diagnostics().iter().any(|d| d.code == "bad-mutex"),
            "{bad}"
        );
    }
}
