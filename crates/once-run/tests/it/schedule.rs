//! Planning and scheduling: order, failures, parameters.

use std::collections::BTreeMap;

use once_run::{
    ActionStatus, Asked, Options, Request, RunReport, RunStatus, RunStore, RunsQuery, query_runs,
};
use serde_json::Value;

use super::{Fixture, serial, statuses};

const CHAIN: &str = r#"
[targets.a]
kind = "command"
path = "a"
[targets.a.capabilities.build]
command = "echo a >> ../order"

[targets.b]
kind = "command"
path = "b"
deps = ["a"]
[targets.b.capabilities.build]
command = "echo b >> ../order"

[targets.c]
kind = "command"
path = "c"
deps = ["b"]
[targets.c.capabilities.build]
command = "echo c >> ../order"
"#;

#[test]
fn dependencies_run_first_and_everything_is_reported() {
    let ws = Fixture::new(CHAIN);
    ws.file("a/x", "").file("b/x", "").file("c/x", "");
    let report = ws.run(&["c"], &Options::default());
    assert_eq!(report.status, RunStatus::Succeeded);
    assert_eq!(ws.read("order"), "a\nb\nc\n");
    let names: Vec<&str> = report.actions.iter().map(|a| a.action.as_str()).collect();
    assert_eq!(names, ["a:build", "b:build", "c:build"]);
    assert_eq!(report.counts.ran, 3);
    // Every action has its log's place; these print nothing, so none made a file there.
    assert!(
        report
            .actions
            .iter()
            .all(|a| a.log.as_ref().is_some_and(|l| !l.exists()))
    );
    assert!(
        ws.root
            .join(".once/runs")
            .join(&report.run_id)
            .join("run.json")
            .exists()
    );
}

const FAILING: &str = r#"
[targets.bad]
kind = "command"
[targets.bad.capabilities.build]
command = "echo about to fail; exit 3"

[targets.after]
kind = "command"
path = "after"
deps = ["bad"]
[targets.after.capabilities.build]
command = "touch ran"

[targets.other]
kind = "command"
path = "other"
deps = ["bad2"]
[targets.other.capabilities.build]
command = "touch ran"

[targets.bad2]
kind = "command"
path = "bad2"
[targets.bad2.capabilities.build]
command = "touch ran"
"#;

#[test]
fn the_first_failure_stops_new_work_and_reports_its_tail() {
    let ws = Fixture::new(FAILING);
    ws.file("after/x", "")
        .file("other/x", "")
        .file("bad2/x", "");
    // Serially, `bad` (first in name order) fails before anything else has started.
    let report = ws.run(&["after", "other"], &serial());
    assert_eq!(report.status, RunStatus::Failed);
    let bad = report
        .actions
        .iter()
        .find(|a| a.action == "bad:build")
        .unwrap();
    assert_eq!(bad.status, ActionStatus::Failed);
    assert_eq!(bad.exit_code, Some(3));
    assert_eq!(bad.tail.as_deref(), Some(&["about to fail".to_owned()][..]));
    assert_eq!(report.counts.failed, 1);
    assert_eq!(report.counts.skipped, 3);
    assert!(!ws.root.join("after/ran").exists());
    assert!(!ws.root.join("bad2/ran").exists());

    // With keep_going, what does not depend on the failure still runs.
    let keep_going = Options {
        keep_going: true,
        ..serial()
    };
    let report = ws.run(&["after", "other"], &keep_going);
    assert_eq!(
        statuses(&report),
        BTreeMap::from([
            ("after:build".into(), "skipped".into()),
            ("bad2:build".into(), "succeeded".into()),
            ("bad:build".into(), "failed".into()),
            ("other:build".into(), "succeeded".into()),
        ])
    );
    assert!(!ws.root.join("after/ran").exists());
    assert!(ws.root.join("other/ran").exists());
}

#[test]
fn a_skipped_action_says_why_and_the_record_says_who_asked_for_what() {
    let ws = Fixture::new(FAILING);
    ws.file("after/x", "")
        .file("other/x", "")
        .file("bad2/x", "");
    let options = Options {
        asked: Some(Asked::new(&["after", "other"], once_run::TERMINAL)),
        ..serial()
    };
    let report = ws.run(&["after", "other"], &options);
    let because = |name: &str| {
        report
            .actions
            .iter()
            .find(|a| a.action == name)
            .and_then(|a| a.skipped_because.clone())
    };
    // `after` depends on the failure; `other` only never got its turn.
    assert_eq!(
        because("after:build").as_deref(),
        Some("`bad:build` failed")
    );
    assert_eq!(
        because("other:build").as_deref(),
        Some("the run stopped before it started")
    );
    assert_eq!(because("bad:build"), None);

    // The record on disk, and the list and pages every reader gets, carry the request.
    let store = RunStore::new(&ws.root);
    let record = store.read(&report.run_id).unwrap();
    assert_eq!(record.asked, options.asked);
    let list = query_runs(&store, &RunsQuery::default()).unwrap();
    let list = serde_json::to_value(&list).unwrap();
    assert_eq!(list["runs"][0]["request"], "after other");
    assert_eq!(list["runs"][0]["asked_by"], "terminal");
    let page = RunsQuery {
        run_id: Some(report.run_id.clone()),
        ..RunsQuery::default()
    };
    let page = serde_json::to_value(query_runs(&store, &page).unwrap()).unwrap();
    assert_eq!(page["request"], "after other");
    assert_eq!(page["asked_by"], "terminal");
    let after = page["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["action"] == "after:build")
        .unwrap();
    assert_eq!(after["skipped_because"], "`bad:build` failed");

    // A record written before the request was kept reads as asking nothing.
    let mut old = serde_json::to_value(&record).unwrap();
    let fields = old.as_object_mut().unwrap();
    fields.remove("request");
    fields.remove("asked_by");
    let old: RunReport = serde_json::from_value(old).unwrap();
    assert_eq!(old.asked, None);
}

const PARAMS: &str = r#"
[targets.t]
kind = "command"
[targets.t.capabilities.build]
command = "echo {greeting} {count} {loud} {mode} > out.txt"
outputs = ["out.txt"]
[targets.t.capabilities.build.params.greeting]
type = "string"
default = "hello world"
[targets.t.capabilities.build.params.count]
type = "integer"
[targets.t.capabilities.build.params.loud]
type = "boolean"
default = false
flag = "--loud"
[targets.t.capabilities.build.params.mode]
type = "enum"
values = ["fast", "slow"]
default = "fast"
"#;

fn with_params(pairs: &[(&str, &str)]) -> Request {
    Request {
        actions: vec!["t:build".into()],
        params: pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Value::String((*v).to_owned())))
            .collect(),
        ..Request::default()
    }
}

#[test]
fn parameters_are_checked_before_anything_runs_and_rendered_into_the_command() {
    let ws = Fixture::new(PARAMS);
    assert_eq!(
        ws.plan_error(with_params(&[])),
        "parameter `count` of `t:build` is required: expected an integer"
    );
    assert_eq!(
        ws.plan_error(with_params(&[("count", "many")])),
        "parameter `count` of `t:build`: expected an integer, found `many`"
    );
    assert_eq!(
        ws.plan_error(with_params(&[("count", "1"), ("mode", "medium")])),
        "parameter `mode` of `t:build`: expected one of `fast`, `slow`, found `medium`"
    );
    assert!(
        ws.plan_error(with_params(&[("count", "1"), ("colour", "red")]))
            .starts_with("unknown parameter `colour` for `t:build`; expected one of: `count`")
    );
    assert!(!ws.root.join("out.txt").exists());

    let report = ws.run_request(
        with_params(&[("count", "2"), ("loud", "true"), ("mode", "slow")]),
        &serial(),
    );
    assert_eq!(report.status, RunStatus::Succeeded);
    assert_eq!(ws.read("out.txt"), "hello world 2 --loud slow\n");
}

const CONTEXTS: &str = r#"
[targets.t]
kind = "command"
[targets.t.capabilities.build]
command = "echo {v} 'in {v}' \"in {v}\" \"$(echo {v})\" --x={v} {flag} {target}"
[targets.t.capabilities.build.params.v]
type = "string"
[targets.t.capabilities.build.params.flag]
type = "boolean"
default = false
flag = "--flag"
"#;

#[test]
fn each_value_is_quoted_for_its_placeholder_and_a_command_too_long_for_sh_is_refused() {
    let ws = Fixture::new(CONTEXTS);
    let workspace = once_graph::Workspace::load(&ws.root).unwrap();
    let plan = once_run::plan(&workspace, &with_params(&[("v", "it's $(x)")])).unwrap();
    assert_eq!(
        plan.steps[0].command,
        r#"echo 'it'\''s $(x)' 'in it'\''s $(x)' "in it's \$(x)" "$(echo 'it'\''s $(x)')" --x='it'\''s $(x)'  t"#
    );
    // Under the per-value limit, but four placeholders of it make more than one argument holds.
    let long = "y".repeat(40 * 1024);
    let error = ws.plan_error(with_params(&[("v", &long)]));
    assert!(
        error.starts_with("the command of `t:build` renders to ")
            && error
                .ends_with("`sh -c` takes at most 131071 bytes (Linux's limit on one argument)"),
        "{error}"
    );
}

#[test]
fn unknown_targets_and_capabilities_name_what_exists() {
    let ws = Fixture::new(CHAIN);
    let request = |actions: &[&str]| Request {
        actions: actions.iter().map(|a| (*a).to_owned()).collect(),
        ..Request::default()
    };
    assert_eq!(
        ws.plan_error(request(&["bb"])),
        "no target named `bb`; did you mean `b`?"
    );
    assert_eq!(
        ws.plan_error(request(&["b:test"])),
        "target `b` has no capability `test`; it has: `build`"
    );
    assert_eq!(
        ws.plan_error(Request {
            all: Some("lint".into()),
            ..Request::default()
        }),
        "no target has the capability `lint`; the capabilities that exist are `build` (3 targets); \
         to add it, declare `[targets.NAME.capabilities.lint]` with a `command` in `once.toml`"
    );
    assert!(
        ws.plan_error(Request::default())
            .starts_with("nothing to run")
    );
}

#[test]
fn all_runs_every_target_with_the_capability() {
    let ws = Fixture::new(CHAIN);
    ws.file("a/x", "").file("b/x", "").file("c/x", "");
    let report = ws.run_request(
        Request {
            all: Some("build".into()),
            ..Request::default()
        },
        &serial(),
    );
    assert_eq!(report.counts.total, 3);
    assert_eq!(ws.read("order"), "a\nb\nc\n");
}
