//! `.once/`, once's own folder in the workspace: caches and run records never show in
//! `git status`, while project memory, meant to be committed, does.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::{TempDir, once_binary};

fn run(program: &str, dir: &Path, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CEILING_DIRECTORIES", dir.parent().expect("a parent"))
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("ONCE_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("runs");
    assert!(
        output.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn runs_and_caches_stay_out_of_git_status_and_memory_does_not() {
    let dir = TempDir::new();
    let root = dir.path();
    std::fs::write(
        root.join("once.toml"),
        "[targets.a]\nkind = \"command\"\n[targets.a.capabilities.build]\ncommand = \"echo hi > out.txt\"\noutputs = [\"out.txt\"]\n",
    )
    .expect("writes");
    std::fs::write(root.join(".gitignore"), "out.txt\n").expect("writes");
    run("git", root, &["init", "-q"]);
    run("git", root, &["add", "."]);
    run(
        "git",
        root,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "start",
        ],
    );

    run(once_binary(), root, &["run", "a"]);
    run(once_binary(), root, &["run", "a"]);
    assert!(root.join(".once/runs").is_dir() && root.join(".once/cache").is_dir());
    let status = run(
        "git",
        root,
        &["status", "--porcelain", "--untracked-files=all"],
    );
    assert_eq!(status, "", "nothing of `.once` shows");
    let ignore = std::fs::read_to_string(root.join(".once/.gitignore")).expect("written");
    assert!(ignore.lines().any(|line| line == "/*"), "{ignore}");

    run(
        once_binary(),
        root,
        &["memory", "add", "--title", "t", "--body", "b"],
    );
    let status = run(
        "git",
        root,
        &["status", "--porcelain", "--untracked-files=all"],
    );
    let shown: Vec<&str> = status.lines().collect();
    assert_eq!(shown.len(), 1, "{status}");
    assert!(
        shown[0].starts_with("?? .once/memory/") && shown[0].ends_with(".md"),
        "{status}"
    );
}

#[test]
fn a_gitignore_of_its_own_is_left_alone() {
    let dir = TempDir::new();
    let root = dir.path();
    std::fs::write(
        root.join("once.toml"),
        "[targets.a]\nkind = \"command\"\n[targets.a.capabilities.build]\ncommand = \"true\"\n",
    )
    .expect("writes");
    std::fs::create_dir_all(root.join(".once")).expect("mkdir");
    std::fs::write(root.join(".once/.gitignore"), "mine\n").expect("writes");
    run(once_binary(), root, &["run", "a"]);
    let ignore = std::fs::read_to_string(root.join(".once/.gitignore")).expect("still there");
    assert_eq!(ignore, "mine\n");
}
