//! Selecting targets by tag and name glob, and passing words through to the last named action.

use std::collections::BTreeSet;

use once_run::{Request, Selection};

use super::{Fixture, serial};

const TAGGED: &str = r#"
[targets.api-users]
kind = "command"
path = "api-users"
tags = ["backend"]
[targets.api-users.capabilities.test]
command = "echo api-users >> ../ran"
[targets.api-users.capabilities.lint]
command = "echo lint >> ../ran"

[targets.api-orders]
kind = "command"
path = "api-orders"
tags = ["backend", "db"]
[targets.api-orders.capabilities.test]
command = "echo api-orders >> ../ran"

[targets.worker]
kind = "command"
path = "worker"
tags = ["backend", "db"]
[targets.worker.capabilities.test]
command = "echo worker >> ../ran"

[targets.web]
kind = "command"
path = "web"
tags = ["frontend"]
[targets.web.capabilities.test]
command = "echo web >> ../ran"
[targets.web.capabilities.build]
command = "echo web-build >> ../ran"
"#;

fn fixture() -> Fixture {
    let ws = Fixture::new(TAGGED);
    for folder in ["api-users", "api-orders", "worker", "web"] {
        ws.file(&format!("{folder}/x"), "");
    }
    ws
}

fn selection(capability: &str, tags: &[&str], names: &[&str]) -> Option<Selection> {
    Some(Selection {
        capability: capability.to_owned(),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        names: names.iter().map(|n| (*n).to_owned()).collect(),
    })
}

fn ran(ws: &Fixture, request: Request) -> BTreeSet<String> {
    let report = ws.run_request(request, &serial());
    report.actions.iter().map(|a| a.action.clone()).collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|i| (*i).to_owned()).collect()
}

#[test]
fn a_tag_selects_its_targets_that_have_the_capability() {
    let ws = fixture();
    let request = Request {
        select: selection("test", &["backend"], &[]),
        ..Request::default()
    };
    assert_eq!(
        ran(&ws, request),
        set(&["api-orders:test", "api-users:test", "worker:test"])
    );
}

#[test]
fn tag_and_name_intersect_and_named_actions_add_to_them() {
    let ws = fixture();
    let request = Request {
        select: selection("test", &["db"], &["api-*"]),
        ..Request::default()
    };
    assert_eq!(ran(&ws, request), set(&["api-orders:test"]));
    // Repeating a flag widens it; a named action is added to what is selected.
    let request = Request {
        actions: vec!["web:build".into()],
        select: selection("test", &["frontend", "db"], &[]),
        ..Request::default()
    };
    assert_eq!(
        ran(&ws, request),
        set(&["api-orders:test", "web:build", "web:test", "worker:test"])
    );
}

#[test]
fn a_selection_of_nothing_says_so_and_a_tag_nobody_has_is_a_typo() {
    let ws = fixture();
    let nothing = Request {
        select: selection("test", &[], &["mobile-*"]),
        ..Request::default()
    };
    let ws_loaded = once_graph::Workspace::load(&ws.root).unwrap();
    let error = once_run::plan(&ws_loaded, &nothing).unwrap_err();
    assert!(!error.is_bad_request(), "{error}");
    assert_eq!(
        error.to_string(),
        "nothing to run: no target named like `mobile-*` has the capability `test`; none has any \
         capability; to add it, declare `[targets.NAME.capabilities.test]` with a `command` in \
         `once.toml`"
    );
    let typo = Request {
        select: selection("test", &["bakend"], &[]),
        ..Request::default()
    };
    let error = once_run::plan(&ws_loaded, &typo).unwrap_err();
    assert!(error.is_bad_request());
    assert_eq!(
        error.to_string(),
        "no target has the tag `bakend`; did you mean `backend`?"
    );
    let bad_glob = Request {
        select: selection("test", &[], &["api-[*"]),
        ..Request::default()
    };
    assert!(
        ws.plan_error(bad_glob)
            .contains("invalid name glob `api-[*`")
    );
}

const ECHO: &str = r#"
[targets.web]
kind = "command"
path = "web"
[targets.web.capabilities.test]
command = "printf '%s\n' start > ../words && for w in \"$@\"; do :; done; printf '[%s]\n' \"$0\""
[targets.web.capabilities.args]
command = "printf '[%s]\n' >> ../words"
[targets.web.capabilities.comment]
command = "echo hi # a comment"
"#;

#[test]
fn the_words_after_the_double_dash_reach_the_command_exactly_and_change_its_key() {
    let ws = Fixture::new(ECHO);
    ws.file("web/x", "");
    let hostile = [
        "--grep",
        "check out",
        "'; rm -rf /'",
        "$(x)",
        "`y`",
        "a\"b",
        "*",
        "if",
    ];
    let request = |words: &[&str]| Request {
        actions: vec!["web:args".into()],
        args: words.iter().map(|w| (*w).to_owned()).collect(),
        ..Request::default()
    };
    let report = ws.run_request(request(&hostile), &serial());
    assert!(!report.actions[0].cached);
    let expected: String = hostile.iter().map(|w| format!("[{w}]\n")).collect();
    assert_eq!(ws.read("words"), expected);
    // The same words replay; other words are another key.
    let again = ws.run_request(request(&hostile), &serial());
    assert!(again.actions[0].cached);
    let other = ws.run_request(request(&["--grep", "cart"]), &serial());
    assert!(!other.actions[0].cached);
    assert_eq!(ws.read("words"), format!("{expected}[--grep]\n[cart]\n"));
}

#[test]
fn words_need_one_last_named_action_whose_end_can_take_them() {
    let ws = Fixture::new(ECHO);
    ws.file("web/x", "");
    let words = vec!["--grep".to_owned()];
    let all = Request {
        all: Some("test".into()),
        args: words.clone(),
        ..Request::default()
    };
    assert!(
        ws.plan_error(all)
            .contains("the words after `--` go to the last named action")
    );
    let selected = Request {
        select: Some(Selection {
            capability: "test".into(),
            names: vec!["*".into()],
            ..Selection::default()
        }),
        args: words.clone(),
        ..Request::default()
    };
    assert!(
        ws.plan_error(selected)
            .contains("go to the last named action")
    );
    let comment = Request {
        actions: vec!["web:comment".into()],
        args: words,
        ..Request::default()
    };
    assert_eq!(
        ws.plan_error(comment),
        "the words after `--` cannot be appended to the command of `web:comment`: they would sit inside a comment"
    );
}
