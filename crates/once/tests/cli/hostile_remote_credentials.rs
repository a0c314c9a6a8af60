//! `tests/hostile/remote-credentials`: a committed `once.toml` names a remote cache, and the
//! person has credentials in `ONCE_REMOTE_HEADERS`. A loopback server stands in for the
//! workspace's server and records the headers of every call: named only by the workspace it gets
//! none (and the run says so once), named by the person (flag or variable) it gets them. Through
//! `once run` and through `once mcp --allow-run`'s `once_run`.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Mcp, Running, TempDir, copy_hostile, once_binary};

use crate::hostile_cache::{HostileCache, Plan};

const SECRET: &str = "Bearer s3cret-of-the-person";
const LIMIT: Duration = Duration::from_secs(60);

/// The fixture, its server rewritten to `url`.
fn repository(url: &str) -> TempDir {
    let dir = TempDir::new();
    copy_hostile("remote-credentials", dir.path());
    let manifest = dir.path().join("once.toml");
    let text = std::fs::read_to_string(&manifest).expect("reads the fixture's manifest");
    assert!(text.contains("grpc://attacker.example:50051"), "{text}");
    let text = text.replace("grpc://attacker.example:50051", url);
    std::fs::write(&manifest, text).expect("rewrites the fixture's manifest");
    dir
}

/// `once` with the person's credentials in the environment, nothing else of the remote's.
fn once(root: &Path, args: &[&str], vars: &[(&str, &str)]) -> Command {
    let mut command = Command::new(once_binary());
    command
        .arg("-C")
        .arg(root)
        .args(args)
        .env_remove("ONCE_LOG");
    for var in [
        "ONCE_REMOTE_CACHE",
        "ONCE_REMOTE_HEADERS_FILE",
        "ONCE_REMOTE_MAX_BLOB",
        "ONCE_REMOTE_MAX_RESULT",
    ] {
        command.env_remove(var);
    }
    command.env("ONCE_REMOTE_HEADERS", format!("Authorization: {SECRET}\n"));
    for (name, value) in vars {
        command.env(name, value);
    }
    command
}

/// The calls the server got, and how many of them carried the secret.
fn with_secret(server: &HostileCache) -> (usize, usize) {
    let seen = server.seen();
    let carrying = seen
        .iter()
        .filter(|call| {
            call.headers
                .iter()
                .any(|(name, value)| name == "authorization" && value == SECRET)
        })
        .count();
    (seen.len(), carrying)
}

fn run(command: Command) -> Output {
    Running::start(command).finish(LIMIT)
}

fn warnings(output: &Output) -> Vec<String> {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter(|line| line.starts_with("warning:"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_server_named_by_the_workspace_gets_no_credentials_and_the_run_says_so_once() {
    let server = HostileCache::start(Plan::empty());
    let repo = repository(&server.url());
    let output = run(once(repo.path(), &["run", "app:build"], &[]));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let (calls, carrying) = with_secret(&server);
    assert!(
        calls > 0,
        "the workspace's server was not used as a cache: {stderr}"
    );
    assert_eq!(
        carrying, 0,
        "the credentials went to the workspace's server"
    );
    let warnings = warnings(&output);
    assert_eq!(warnings.len(), 1, "{stderr}");
    let url = server.url();
    for part in [
        format!("the remote cache `{url}` is named only by the workspace's `once.toml`"),
        "`authorization`".to_owned(),
        format!("`--remote-cache {url}`"),
        format!("`ONCE_REMOTE_CACHE={url}`"),
    ] {
        assert!(warnings[0].contains(&part), "{part} not in {stderr}");
    }
    assert!(!stderr.contains("s3cret"), "{stderr}");
}

#[test]
fn the_same_server_named_by_the_person_gets_them() {
    let server = HostileCache::start(Plan::empty());
    let repo = repository(&server.url());
    let url = server.url();
    let by_flag = run(once(
        repo.path(),
        &["run", "app:build", "--force", "--remote-cache", &url],
        &[],
    ));
    assert_eq!(by_flag.status.code(), Some(0));
    let (calls, carrying) = with_secret(&server);
    assert!(
        calls > 0 && carrying == calls,
        "{calls} calls, {carrying} with the headers"
    );
    assert!(warnings(&by_flag).is_empty(), "{:?}", warnings(&by_flag));
    let by_variable = run(once(
        repo.path(),
        &["run", "app:build", "--force"],
        &[("ONCE_REMOTE_CACHE", &url)],
    ));
    assert_eq!(by_variable.status.code(), Some(0));
    let (more, carrying) = with_secret(&server);
    assert!(
        more > calls && carrying == more,
        "{more} calls, {carrying} with the headers"
    );
}

/// `once mcp --allow-run` on `root` with `vars`, one `once_run` of `app:build` to its end: the
/// tool's structured result.
fn once_run_tool(root: &Path, vars: &[(&str, &str)]) -> Value {
    let mut command = once(root, &["mcp", "--allow-run"], vars);
    command.stdin(Stdio::piped());
    let mut mcp = Mcp::from_command(command);
    mcp.initialize();
    let answer = mcp.call(
        1,
        "once_run",
        json!({"target": "app:build", "force": true, "wait_seconds": 50}),
    );
    mcp.close_stdin();
    let (code, _) = mcp.wait(LIMIT);
    assert_eq!(code, Some(0), "{answer}");
    answer["result"]["structuredContent"].clone()
}

#[test]
fn the_once_run_tool_keeps_the_same_rule() {
    let server = HostileCache::start(Plan::empty());
    let repo = repository(&server.url());
    let result = once_run_tool(repo.path(), &[]);
    let (calls, carrying) = with_secret(&server);
    assert!(calls > 0, "{result}");
    assert_eq!(
        carrying, 0,
        "the credentials went to the workspace's server: {result}"
    );
    let text = result.to_string();
    assert!(text.contains("is named only by the workspace"), "{text}");
    assert!(!text.contains("s3cret"), "{text}");
    let url = server.url();
    let named = once_run_tool(repo.path(), &[("ONCE_REMOTE_CACHE", &url)]);
    let (more, carrying) = with_secret(&server);
    assert!(more > calls && carrying == more - calls, "{named}");
}
