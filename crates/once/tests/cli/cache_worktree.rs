//! A linked git worktree replays what the main worktree built (`git worktree add`, then
//! `once run` in it), its outputs restored into the worktree that asked; `[cache]
//! share-worktrees = false` keeps a cache of its own.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::support::{TempDir, once_binary};

const MANIFEST: &str = r#"
[targets.gen]
kind = "command"
[targets.gen.capabilities.build]
command = "echo ran >> ../runs && cat in.txt > out.txt"
inputs = ["in.txt"]
outputs = ["out.txt"]
"#;

/// git and `once` with no user or system configuration, and no repository above the test.
fn isolated(program: &str, dir: &Path, ceiling: &Path) -> Command {
    let mut command = Command::new(program);
    command
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CEILING_DIRECTORIES", ceiling)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("ONCE_LOG")
        .stdin(Stdio::null());
    command
}

fn git(dir: &Path, ceiling: &Path, args: &[&str]) {
    let output = isolated("git", dir, ceiling)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .output()
        .expect("runs git");
    assert!(output.status.success(), "git {args:?}: {}", text(&output));
}

fn once(dir: &Path, ceiling: &Path, args: &[&str]) -> Output {
    isolated(once_binary(), dir, ceiling)
        .args(args)
        .output()
        .expect("runs once")
}

fn text(output: &Output) -> String {
    format!(
        "exit {:?}\n{}{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The one action's report in `once run --json`: whether it was replayed.
fn cached(output: &Output) -> bool {
    assert_eq!(output.status.code(), Some(0), "{}", text(output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    report["actions"][0]["cached"].as_bool().expect("cached")
}

fn runs(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("runs")).map_or(0, |text| text.lines().count())
}

/// A main worktree at `main/` with one commit; the folder `runs` above the worktrees counts
/// the runs of the action.
fn repository(tmp: &TempDir) -> std::path::PathBuf {
    let main = tmp.path().join("repo/main");
    std::fs::create_dir_all(&main).expect("mkdir");
    std::fs::write(main.join("once.toml"), MANIFEST).expect("writes");
    std::fs::write(main.join("in.txt"), "from the main worktree\n").expect("writes");
    std::fs::write(main.join(".gitignore"), ".once/\nout.txt\n").expect("writes");
    git(&main, tmp.path(), &["init", "-q"]);
    git(&main, tmp.path(), &["add", "-A"]);
    git(&main, tmp.path(), &["commit", "-q", "-m", "first"]);
    main
}

#[test]
fn a_linked_worktree_replays_what_the_main_worktree_built_into_its_own_folder() {
    let tmp = TempDir::new();
    let main = repository(&tmp);
    let counter = main.parent().expect("a parent");
    assert!(!cached(&once(
        &main,
        tmp.path(),
        &["run", "gen:build", "--json"]
    )));
    assert_eq!(runs(counter), 1);

    let linked = tmp.path().join("repo/linked");
    git(
        &main,
        tmp.path(),
        &["worktree", "add", "-q", linked.to_str().expect("UTF-8")],
    );
    let replayed = once(&linked, tmp.path(), &["run", "gen:build", "--json"]);
    assert!(cached(&replayed), "{}", text(&replayed));
    assert_eq!(runs(counter), 1, "the linked worktree ran the action again");
    assert_eq!(
        std::fs::read_to_string(linked.join("out.txt")).expect("restored"),
        "from the main worktree\n"
    );
    // Its results are the main worktree's: it made no pack of its own.
    assert!(!linked.join(".once/cache/packs").exists());

    // A change in the linked worktree runs there, is restored there only, and the main
    // worktree then replays it after making the same change.
    std::fs::write(linked.join("in.txt"), "changed\n").expect("writes");
    assert!(!cached(&once(
        &linked,
        tmp.path(),
        &["run", "gen:build", "--json"]
    )));
    assert_eq!(runs(counter), 2);
    assert_eq!(
        std::fs::read_to_string(main.join("out.txt")).expect("main's own"),
        "from the main worktree\n"
    );
    std::fs::write(main.join("in.txt"), "changed\n").expect("writes");
    assert!(cached(&once(
        &main,
        tmp.path(),
        &["run", "gen:build", "--json"]
    )));
    assert_eq!(runs(counter), 2);
    assert_eq!(
        std::fs::read_to_string(main.join("out.txt")).expect("restored"),
        "changed\n"
    );
}

#[test]
fn share_worktrees_false_keeps_a_cache_per_worktree() {
    let tmp = TempDir::new();
    let main = repository(&tmp);
    let counter = main.parent().expect("a parent");
    assert!(!cached(&once(
        &main,
        tmp.path(),
        &["run", "gen:build", "--json"]
    )));
    let linked = tmp.path().join("repo/own");
    git(
        &main,
        tmp.path(),
        &["worktree", "add", "-q", linked.to_str().expect("UTF-8")],
    );
    std::fs::write(
        linked.join("once.toml"),
        format!("[cache]\nshare-worktrees = false\n{MANIFEST}"),
    )
    .expect("writes");
    let own = once(&linked, tmp.path(), &["run", "gen:build", "--json"]);
    assert!(!cached(&own), "{}", text(&own));
    assert_eq!(runs(counter), 2);
    assert!(linked.join(".once/cache/packs").is_dir());
    let stats = once(&linked, tmp.path(), &["cache", "stats", "--json"]);
    let stats: serde_json::Value = serde_json::from_slice(&stats.stdout).expect("JSON");
    assert_eq!(stats["shared"], false);
    assert_eq!(stats["entries"], 1);
}
