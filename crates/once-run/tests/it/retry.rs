//! `retries`: a failed run is run again, its earlier logs kept, only the success recorded.

use once_run::{ActionStatus, RunStatus};

use super::{Fixture, serial};

/// Fails the first time it runs in a folder (no counter yet), succeeds after.
const FLAKY: &str = r#"
[targets.flaky]
kind = "command"
path = "flaky"
[targets.flaky.capabilities.test]
command = "n=$(cat ../count 2>/dev/null || echo 0); n=$((n + 1)); echo $n > ../count; echo attempt $n; [ $n -ge 2 ]"
retries = RETRIES

[targets.slow]
kind = "command"
path = "slow"
[targets.slow.capabilities.test]
command = "echo x >> ../slow-count; sleep 30"
deadline = "300ms"
retries = 3
"#;

fn fixture(retries: u8) -> Fixture {
    let ws = Fixture::new(&FLAKY.replace("RETRIES", &retries.to_string()));
    ws.file("flaky/x", "").file("slow/x", "");
    ws
}

#[test]
fn a_failure_then_a_success_is_reported_retried_and_only_the_success_is_cached() {
    let ws = fixture(2);
    let report = ws.run(&["flaky:test"], &serial());
    assert_eq!(report.status, RunStatus::Succeeded);
    let action = &report.actions[0];
    assert_eq!(action.status, ActionStatus::Succeeded);
    assert_eq!(action.retried, 1);
    assert_eq!(report.counts.retried, 1);
    assert_eq!(ws.read("count"), "2\n");
    // Each attempt's log is kept: the last one at the report's path, the first beside it.
    let log = action.log.clone().expect("a log");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "attempt 2\n");
    let first = log.with_file_name("flaky_test.attempt-1.log");
    assert_eq!(std::fs::read_to_string(first).unwrap(), "attempt 1\n");
    let json = serde_json::to_value(report.summary()).unwrap();
    assert_eq!(json["actions"][0]["retried"], 1);
    assert_eq!(json["counts"]["retried"], 1);
    // The success is recorded: the next run replays it, with no retry of its own.
    let again = ws.run(&["flaky:test"], &serial());
    assert!(again.actions[0].cached);
    assert_eq!(again.actions[0].retried, 0);
    assert!(
        serde_json::to_value(again.summary()).unwrap()["counts"]
            .get("retried")
            .is_none()
    );
    assert_eq!(ws.read("count"), "2\n");
}

#[test]
fn without_retries_the_first_failure_is_final() {
    let ws = fixture(0);
    let report = ws.run(&["flaky:test"], &serial());
    assert_eq!(report.status, RunStatus::Failed);
    assert_eq!(report.actions[0].retried, 0);
    assert_eq!(ws.read("count"), "1\n");
}

#[test]
fn a_timeout_is_not_retried() {
    let ws = fixture(0);
    let report = ws.run(&["slow:test"], &serial());
    assert_eq!(report.actions[0].status, ActionStatus::TimedOut);
    assert_eq!(report.actions[0].retried, 0);
    assert_eq!(ws.read("slow-count"), "x\n");
}

#[test]
fn retries_outside_zero_to_ten_are_a_manifest_error() {
    for bad in ["11", "-1", "\"2\"", "1.5"] {
        let ws = Fixture::new(&FLAKY.replace("RETRIES", bad));
        let loaded = once_graph::Workspace::load(&ws.root).unwrap();
        let codes: Vec<String> = loaded
            .diagnostics()
            .iter()
            .map(|d| d.code.to_string())
            .collect();
        assert!(
            codes.contains(&"bad-retries".to_owned()),
            "{bad}: {codes:?}"
        );
    }
}
