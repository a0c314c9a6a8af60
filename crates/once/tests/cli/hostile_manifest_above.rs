//! `tests/hostile/manifest-above`: a `once.toml` planted in a folder above a clone, a worktree
//! and a submodule must never become their workspace, through the CLI, `once mcp` or
//! `once serve`; outside any repository, another user's manifest is refused until the person
//! allows it.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::support::{Mcp, PATIENCE, Serve, TempDir, copy_hostile, once_binary, output_within};

/// `once ARGS` run from `cwd`, bounded in time, with Cargo's output kept inside `scratch`.
fn once_in(cwd: &Path, scratch: &Path, args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut command = Command::new(once_binary());
    command
        .args(args)
        .current_dir(cwd)
        .env("CARGO_TARGET_DIR", scratch.join("cargo-target"))
        .env_remove("ONCE_LOG")
        .env_remove("ONCE_SAFE_DIRECTORIES")
        .envs(env.iter().copied());
    output_within(command)
}

fn transcript(output: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn json_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", transcript(output)))
}

/// The (name, kind, path) of every target `once query targets` lists.
fn targets_of(value: &Value) -> Vec<(String, String, String)> {
    value["targets"]
        .as_array()
        .unwrap_or_else(|| panic!("no targets in {value}"))
        .iter()
        .map(|t| {
            let field = |k: &str| t[k].as_str().unwrap_or_default().to_owned();
            (field("name"), field("kind"), field("path"))
        })
        .collect()
}

fn own_cargo_target() -> Vec<(String, String, String)> {
    vec![("victim".into(), "cargo-package".into(), ".".into())]
}

#[test]
fn a_planted_manifest_above_a_repository_never_becomes_its_workspace() {
    let dir = TempDir::new();
    let top = dir.path();
    copy_hostile("manifest-above", top);
    for repo in ["clone", "worktree", "super/sub"] {
        let repo = top.join(repo);
        let inside = repo.join("src");
        let query = once_in(&inside, top, &["query", "workspace"], &[]);
        assert_eq!(query.status.code(), Some(0), "{}", transcript(&query));
        let workspace = json_of(&query);
        assert_eq!(
            workspace["root"].as_str(),
            repo.to_str(),
            "{}",
            transcript(&query)
        );
        assert_eq!(targets_of(&workspace), own_cargo_target(), "{workspace}");

        let run = once_in(&repo, top, &["run", "--all", "test"], &[]);
        assert_eq!(run.status.code(), Some(0), "{}", transcript(&run));
        assert!(
            repo.join("own-ran").is_file(),
            "the repository's own tests did not run:\n{}",
            transcript(&run)
        );
        assert!(repo.join(".once").is_dir(), "{}", transcript(&run));
        assert!(
            !top.join("planted-ran").exists(),
            "the planted command ran from {}",
            repo.display()
        );
        assert!(
            !top.join(".once").exists() && !top.join("super/.once").exists(),
            "state was written above {}",
            repo.display()
        );
    }
}

#[test]
fn once_mcp_and_once_serve_started_in_the_clone_serve_the_clone() {
    let dir = TempDir::new();
    let top = dir.path();
    copy_hostile("manifest-above", top);
    let clone = top.join("clone");

    let mut command = Command::new(once_binary());
    command
        .arg("mcp")
        .current_dir(&clone)
        .env_remove("ONCE_LOG")
        .env_remove("ONCE_SAFE_DIRECTORIES");
    let mut server = Mcp::from_command(command);
    let reply = server.initialize();
    assert_eq!(reply["result"]["serverInfo"]["name"], "once-mcp", "{reply}");
    let tools = server.tools(1);
    assert!(
        tools.iter().any(|t| t["name"] == "once_query_targets"),
        "{tools:?}"
    );
    let answer = server.call(10, "once_query_targets", json!({}));
    let targets = &answer["result"]["structuredContent"]["result"];
    assert_eq!(targets_of(targets), own_cargo_target(), "{answer}");
    server.close_stdin();
    let (code, _) = server.wait(PATIENCE);
    assert_eq!(code, Some(0));

    // `once serve` started in the clone with no `-C`, reached through `once mcp --attach`.
    let state = TempDir::new();
    let mut serve = Serve::start_in(&clone, state.path(), &[]);
    assert_eq!(serve.entry()["workspace"].as_str(), clone.to_str());
    let mut attached = Mcp::attach(state.path(), Some(&clone.join("src")));
    attached.initialize();
    let answer = attached.call(1, "once_query_targets", json!({}));
    let targets = &answer["result"]["structuredContent"]["result"];
    assert_eq!(targets_of(targets), own_cargo_target(), "{answer}");
    attached.close_stdin();
    attached.wait(PATIENCE);
    serve.stop_with(libc::SIGTERM);

    assert!(!top.join("planted-ran").exists());
    assert!(
        !top.join(".once").exists(),
        "state was written above the clone"
    );
}

#[test]
fn outside_a_repository_another_users_manifest_is_refused_until_allowed() {
    let dir = TempDir::new();
    let top = dir.path();
    std::fs::write(
        top.join("once.toml"),
        "[targets.planted]\nkind = \"command\"\n[targets.planted.capabilities.test]\ncommand = \"touch planted-ran\"\n",
    )
    .expect("writes the manifest");
    let below = top.join("work");
    std::fs::create_dir_all(&below).expect("mkdir");
    let planted = vec![("planted".to_owned(), "command".to_owned(), ".".to_owned())];

    // A manifest of our own (and, as these tests run as root here, one owned by root) is
    // accepted, as git accepts a repository of one's own.
    let own = once_in(&below, top, &["query", "targets"], &[]);
    assert_eq!(own.status.code(), Some(0), "{}", transcript(&own));
    assert_eq!(targets_of(&json_of(&own)), planted);

    // Only root may give a file away: as any other user there is no foreign manifest to make.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    let nobody = 65534;
    std::os::unix::fs::chown(top.join("once.toml"), Some(nobody), Some(nobody)).expect("chown");

    for args in [&["query", "targets"][..], &["run", "--all", "test"]] {
        let refused = once_in(&below, top, args, &[]);
        let stderr = String::from_utf8_lossy(&refused.stderr).into_owned();
        assert_ne!(refused.status.code(), Some(0), "{}", transcript(&refused));
        let expected = format!(
            "`{manifest}` belongs to another user (uid 65534), so `once` does not take `{top}` as \
             the workspace; if you trust it, pass `--workspace {top}` or add it to \
             `ONCE_SAFE_DIRECTORIES`; for a project below it, pass the project's folder with \
             `--workspace`",
            manifest = top.join("once.toml").display(),
            top = top.display(),
        );
        assert!(stderr.contains(&expected), "{}", transcript(&refused));
        assert!(!top.join("planted-ran").exists());
        assert!(!top.join(".once").exists());
    }

    // Allowed by name, by `*`, or by naming the folder on the command line.
    let allowed = once_in(
        &below,
        top,
        &["query", "targets"],
        &[("ONCE_SAFE_DIRECTORIES", top)],
    );
    assert_eq!(allowed.status.code(), Some(0), "{}", transcript(&allowed));
    assert_eq!(targets_of(&json_of(&allowed)), planted);
    let any = once_in(
        &below,
        top,
        &["query", "targets"],
        &[("ONCE_SAFE_DIRECTORIES", Path::new("*"))],
    );
    assert_eq!(targets_of(&json_of(&any)), planted, "{}", transcript(&any));
    let named = once_in(
        &below,
        top,
        &[
            "--workspace",
            top.to_str().expect("utf-8"),
            "query",
            "targets",
        ],
        &[],
    );
    assert_eq!(
        targets_of(&json_of(&named)),
        planted,
        "{}",
        transcript(&named)
    );

    // Another user's folder is refused just the same, even holding a manifest of ours.
    std::os::unix::fs::chown(top.join("once.toml"), Some(0), Some(0)).expect("chown");
    std::os::unix::fs::chown(top, Some(nobody), Some(nobody)).expect("chown");
    let folder = once_in(&below, top, &["query", "targets"], &[]);
    assert_ne!(folder.status.code(), Some(0), "{}", transcript(&folder));
    assert!(
        String::from_utf8_lossy(&folder.stderr).contains("belongs to another user (uid 65534)"),
        "{}",
        transcript(&folder)
    );
    // Give the folder back so the temporary folder can be removed.
    std::os::unix::fs::chown(top, Some(0), Some(0)).expect("chown");
}
