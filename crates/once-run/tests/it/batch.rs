//! Batches, with a stand-in `cargo` on the capability's `PATH` (a script that writes where and
//! how it was called, then sleeps or fails as told): which actions join, where the batch runs,
//! the deadline it gets, and that a cache hit never joins.

use std::time::Duration;

use once_run::{ActionStatus, Options, Request, RunStatus};

use super::{Fixture, statuses};

/// Three Cargo packages whose `test` runs the stand-in `cargo` (`bin/cargo`), batches on.
fn three_packages(cargo: &str) -> Fixture {
    let ws = Fixture::new("");
    let mut manifest = String::new();
    for name in ["a", "b", "c"] {
        ws.file(
            &format!("crates/{name}/Cargo.toml"),
            &format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\n"),
        );
        manifest.push_str(&format!(
            "[targets.{name}.capabilities.test]\nbatch = true\nenv = {{ PATH = \"{}/bin:/usr/bin:/bin\" }}\n",
            ws.root.display()
        ));
    }
    ws.file("Cargo.toml", "[workspace]\nmembers = [\"crates/*\"]\n");
    ws.file("once.toml", &manifest);
    ws.file(
        "bin/cargo",
        &format!(
            // The line is built first and appended with one write: a batch and an action run
            // alone call this at the same time, and separate writes of one line interleave.
            "#!/bin/sh\nline=\"${{PWD##*/}}\"\nfor a in \"$@\"; do line=\"$line [$a]\"; done\n\
             printf '%s\\n' \"$line\" >> {}/calls\n{cargo}\n",
            ws.root.display()
        ),
    );
    make_executable(&ws.root.join("bin/cargo"));
    ws
}

fn make_executable(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn all_three() -> Request {
    Request {
        actions: ["a:test", "b:test", "c:test"].map(str::to_owned).to_vec(),
        ..Request::default()
    }
}

/// Where the stand-in was called (the folder's name) and with what, one line a call, sorted.
fn calls(ws: &Fixture) -> Vec<String> {
    let mut calls: Vec<String> = ws.read("calls").lines().map(str::to_owned).collect();
    calls.sort();
    calls
}

#[test]
fn ready_members_run_as_one_command_from_the_workspace_root_and_hits_never_join() {
    let ws = three_packages("exit 0");
    let report = ws.run_request(
        Request {
            actions: vec!["a:test".to_owned()],
            ..Request::default()
        },
        &Options::default(),
    );
    assert_eq!(report.status, RunStatus::Succeeded);
    // Alone, in its own folder, as without batches.
    assert_eq!(calls(&ws), ["a [test]"]);

    let report = ws.run_request(all_three(), &Options::default());
    assert_eq!(report.status, RunStatus::Succeeded, "{report:#?}");
    let by_name = statuses(&report);
    assert_eq!(by_name["a:test"], "succeeded (cached)");
    // `a` replayed on its own; `b` and `c` in one `cargo test` from the root.
    assert_eq!(
        calls(&ws),
        [
            "a [test]".to_owned(),
            format!(
                "{} [test] [-p] [b@0.1.0] [-p] [c@0.1.0]",
                ws.root.file_name().unwrap().to_string_lossy()
            ),
        ]
    );
    let batches: Vec<Option<usize>> = report.actions.iter().map(|a| a.batch).collect();
    assert_eq!(batches, [None, Some(1), Some(1)]);
}

#[test]
fn a_batch_has_the_sum_of_its_members_deadlines() {
    // Each member alone has 2 s; the stand-in takes 3 s: alone each times out, together the
    // three have 6 s.
    let ws = three_packages("sleep 3");
    let request = Request {
        deadline: Some(Duration::from_secs(2)),
        ..all_three()
    };
    let report = ws.run_request(request.clone(), &Options::default());
    assert_eq!(report.status, RunStatus::Succeeded, "{report:#?}");
    assert!(
        report.actions.iter().all(|a| a.batch == Some(1)),
        "{report:#?}"
    );

    let alone = Options {
        batch: Some(false),
        force: true,
        ..Options::default()
    };
    let report = ws.run_request(request, &alone);
    assert!(
        report
            .actions
            .iter()
            .all(|a| a.status == ActionStatus::TimedOut && a.batch.is_none()),
        "{report:#?}"
    );
}

#[test]
fn a_parameter_or_words_after_dashes_keep_an_action_out_of_the_batch() {
    let ws = three_packages("exit 0");
    let request = Request {
        args: vec!["--exact".to_owned()],
        ..all_three()
    };
    let report = ws.run_request(request, &Options::default());
    assert_eq!(report.status, RunStatus::Succeeded, "{report:#?}");
    let root = ws.root.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(
        calls(&ws),
        [
            "c [test] [--exact]".to_owned(),
            format!("{root} [test] [-p] [a@0.1.0] [-p] [b@0.1.0]"),
        ]
    );
}

#[test]
fn a_cancel_stops_the_batch_process_and_every_member_ends_cancelled() {
    use once_exec::{Cancel, Registry};
    use once_run::{Cache, RunStore};
    use std::time::Instant;

    let ws = three_packages("sleep 30");
    let loaded = once_graph::Workspace::load(&ws.root).unwrap();
    let plan = once_run::plan(&loaded, &all_three()).unwrap();
    let run = RunStore::new(loaded.root()).create().unwrap();
    let cancel = Cancel::new();
    let started = Instant::now();
    let (report, logs) = std::thread::scope(|scope| {
        let watcher = scope.spawn(|| {
            // Once the batch's process has started (its stand-in wrote its call), the record
            // shows every member running, each pointing at the batch's one log; then cancel.
            let deadline = Instant::now() + Duration::from_secs(20);
            let store = RunStore::new(&ws.root);
            let mut logs = Vec::new();
            while Instant::now() < deadline {
                let record = store.read(&run.id).ok();
                let running: Vec<_> = record
                    .iter()
                    .flat_map(|r| &r.actions)
                    .filter(|a| a.status == ActionStatus::Running)
                    .map(|a| a.log.clone())
                    .collect();
                if !ws.read("calls").is_empty() && running.len() == 3 {
                    logs = running;
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            cancel.cancel();
            logs
        });
        let report = once_run::execute(
            &plan,
            &Cache::new(loaded.root()),
            &run,
            &Registry::new(),
            &cancel,
            &Options::default(),
            &mut |_| {},
        );
        (report, watcher.join().unwrap())
    });
    let batch_log = run.log_path("a:test");
    assert_eq!(logs, vec![Some(batch_log); 3], "while it ran");
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "the batch was not stopped"
    );
    assert_eq!(report.status, RunStatus::Cancelled, "{report:#?}");
    assert!(
        report
            .actions
            .iter()
            .all(|a| a.status == ActionStatus::Cancelled && a.batch == Some(1)),
        "{report:#?}"
    );
    assert_eq!(calls(&ws).len(), 1, "one process for the three");
}
