//! What a wrong command line earns: exit status 2 whatever the flag, and a message in the CLI's
//! words (flags and commands), not the MCP tools' (arguments and tool names) that the libraries
//! write for agents.

use crate::support::Test;

const SHOP: &str = r#"
[targets.core]
kind = "command"
[targets.core.capabilities.build]
command = "true"

[targets.web]
kind = "command"
deps = ["core"]
[targets.web.capabilities.build]
command = "true"

[targets.py]
kind = "command"
[targets.py.evaluator]
language = "python"
"#;

fn once(args: &[&str]) -> crate::support::Run {
    Test::new()
        .manifest(SHOP)
        .file("web/page.txt", "hello\n")
        .args(args.iter().copied())
        .run()
}

/// Runs `args`, asserts exit status 2 and no MCP tool name in the message, and returns stderr.
fn wrong(args: &[&str]) -> String {
    let run = once(args);
    assert_eq!(run.code(), 2, "{args:?}: {}", run.transcript());
    let stderr = run.stderr();
    assert!(
        !stderr.contains("once_"),
        "{args:?} names an MCP tool: {stderr}"
    );
    stderr
}

#[test]
fn every_bad_cursor_is_exit_2_and_names_the_flag() {
    for args in [
        &["query", "targets", "--cursor", "bogus"][..],
        &["query", "graph", "deps", "web", "--cursor", "bogus"],
        &["query", "graph", "order", "web:build", "--cursor", "bogus"],
        &[
            "query",
            "affected",
            "--files",
            "web/page.txt",
            "--cursor",
            "bogus",
        ],
        &["query", "memory", "--cursor", "bogus"],
        &["memory", "list", "--cursor", "bogus"],
        &["memory", "search", "word", "--cursor", "bogus"],
    ] {
        let stderr = wrong(args);
        assert!(stderr.contains("`--cursor`"), "{args:?}: {stderr}");
    }
}

#[test]
fn every_limit_out_of_range_is_exit_2_and_names_the_flag() {
    for args in [
        &["query", "targets", "--limit", "0"][..],
        &["query", "targets", "--limit", "100000"],
        &["query", "graph", "dependents", "core", "--limit", "0"],
        &["query", "graph", "dependents", "core", "--limit", "100000"],
        &[
            "query",
            "affected",
            "--files",
            "web/page.txt",
            "--limit",
            "0",
        ],
        &[
            "query",
            "affected",
            "--files",
            "web/page.txt",
            "--limit",
            "100000",
        ],
        &["query", "memory", "--limit", "0"],
        &["memory", "list", "--limit", "100000"],
        &["query", "runs", "--limit", "0"],
        &["run", "web", "--jobs", "0"],
    ] {
        let stderr = wrong(args);
        assert!(
            stderr.contains("--limit") || stderr.contains("--jobs"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn other_wrong_values_are_exit_2() {
    assert!(wrong(&["memory", "list", "--kind", "bogus"]).contains("unknown kind `bogus`"));
    assert!(wrong(&["memory", "add", "--title", "t", "--kind", "bogus"]).contains("`bogus`"));
    assert!(wrong(&["changes", "list", "--status", "bogus"]).contains("bogus"));
    let deadline = wrong(&["eval", "--local", "py", "1", "--deadline", "soon"]);
    assert!(deadline.contains("`--deadline`"), "{deadline}");
    let order = wrong(&["query", "graph", "order", "web"]);
    assert!(order.contains("`--capability`"), "{order}");
}

#[test]
fn messages_point_at_commands_not_tools() {
    // No answer is exit 1, and says which command lists what there is.
    let target = once(&["query", "target", "wbe"]);
    assert_eq!(target.code(), 1, "{}", target.transcript());
    assert!(
        target
            .stderr()
            .contains("did you mean `web`? Run `once query targets` to list targets"),
        "{}",
        target.transcript()
    );
    let kind = once(&["query", "schema", "comand"]);
    assert_eq!(kind.code(), 1, "{}", kind.transcript());
    assert!(
        kind.stderr()
            .contains("Run `once query schema` to see every kind"),
        "{}",
        kind.transcript()
    );
    let capability = once(&["query", "graph", "order", "web:bild"]);
    assert_eq!(capability.code(), 1, "{}", capability.transcript());
    assert!(
        capability
            .stderr()
            .contains("Run `once query target web` to see its capabilities"),
        "{}",
        capability.transcript()
    );
    let runs = once(&["query", "runs", "20990101-000000-000-1-0"]);
    assert_eq!(runs.code(), 1, "{}", runs.transcript());
    assert!(
        runs.stderr()
            .contains("`once query runs` lists the recent runs"),
        "{}",
        runs.transcript()
    );
    for run in [&target, &kind, &capability, &runs] {
        assert!(!run.stderr().contains("once_"), "{}", run.transcript());
    }
}

#[test]
fn only_the_top_level_offers_the_version() {
    let top = Test::new().args(["--help"]).run();
    assert!(
        top.stdout().contains("-V, --version"),
        "{}",
        top.transcript()
    );
    for args in [
        &["query", "--help"][..],
        &["run", "--help"],
        &["memory", "add", "--help"],
    ] {
        let help = Test::new().args(args.iter().copied()).run();
        assert_eq!(help.code(), 0, "{}", help.transcript());
        assert!(
            !help.stdout().contains("--version"),
            "{args:?}: {}",
            help.stdout()
        );
    }
    assert_eq!(Test::new().args(["query", "-V"]).run().code(), 2);
}

#[test]
fn query_memory_offers_json_like_every_query_and_prints_json_either_way() {
    let help = once(&["query", "memory", "--help"]);
    assert!(help.stdout().contains("Always JSON"), "{}", help.stdout());
    let offered = |flag: &str| {
        let stdout = help.stdout();
        stdout
            .lines()
            .any(|line| line.trim_start().starts_with(flag))
    };
    assert!(offered("--limit") && offered("--json"), "{}", help.stdout());
    for args in [&["query", "memory"][..], &["query", "memory", "--json"]] {
        let run = once(args);
        assert_eq!(run.code(), 0, "{}", run.transcript());
        assert!(run.json()["entries"].is_array(), "{}", run.transcript());
    }
}

/// The footer of `--help` says how the root is found, as `once_graph`'s root search does it:
/// every manifest that can make a folder the root, the repository's top as the limit, and the
/// variable that lets another user's folder be one.
#[test]
fn the_help_says_how_the_workspace_root_is_found() {
    let run = once(&["--help"]);
    assert_eq!(run.code(), 0, "{}", run.transcript());
    let help = run
        .stdout()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(help.contains("nearest folder"), "{help}");
    assert!(help.contains("never above the repository's top"), "{help}");
    for marker in once_graph::discover::MARKERS {
        assert!(
            help.contains(&format!("`{marker}`")),
            "{marker} missing: {help}"
        );
    }
    assert!(help.contains("`ONCE_SAFE_DIRECTORIES`"), "{help}");
}
