//! A repository whose git settings name a program for everything git can start
//! (`tests/hostile/git-config`): plain git runs them, and no entry point of `once` that starts
//! git does — the CLI, `once mcp` on stdio, and `once serve`'s MCP over HTTP and window API.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support::{HttpReply, Mcp, PATIENCE, Serve, TempDir, copy_hostile, once_binary};

/// The hostile repository, set up, and the folder its programs would write their markers into.
struct Hostile {
    _dir: TempDir,
    repo: PathBuf,
    markers: PathBuf,
}

impl Hostile {
    /// Copies the fixture, commits its tree with none of its settings in place, then puts the
    /// hostile `.git/config` there and rewrites the tracked files (same content, new times), so
    /// that git must look at them again: refresh the index, run filters, ask fsmonitor.
    fn new() -> Hostile {
        let dir = TempDir::new();
        let repo = dir.path().join("repo");
        let markers = dir.path().join("markers");
        std::fs::create_dir_all(&repo).expect("mkdir");
        std::fs::create_dir_all(&markers).expect("mkdir");
        copy_hostile("git-config", &repo);
        let config = std::fs::read_to_string(repo.join(".git/config")).expect("the fixture config");
        std::fs::remove_dir_all(repo.join(".git")).expect("removes the fixture's .git");
        let markers_text = markers.to_str().expect("a UTF-8 temp path");
        for file in [
            "included.gitconfig",
            "conditional.gitconfig",
            "hooks/post-index-change",
            "hooks/pre-commit",
        ] {
            let path = repo.join(file);
            let text = std::fs::read_to_string(&path).expect("a fixture file");
            std::fs::write(&path, text.replace("@MARKERS@", markers_text)).expect("writes");
        }
        git(&repo, &["init", "-q"]);
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-q", "-m", "the tree"]);
        std::fs::write(
            repo.join(".git/config"),
            config.replace("@MARKERS@", markers_text),
        )
        .expect("puts the hostile config in place");
        let hostile = Hostile {
            _dir: dir,
            repo,
            markers,
        };
        hostile.touch_tracked();
        hostile
    }

    /// Rewrites every tracked file of `lib/` with new times, so that git must look at each again,
    /// and changes the content of one of them, `lib/notes.txt`: the one file that changed.
    fn touch_tracked(&self) {
        for file in ["lib/notes.txt", "lib/data.dat", "lib/readme.md"] {
            let path = self.repo.join(file);
            let mut text = std::fs::read(&path).expect("reads");
            if file == "lib/notes.txt" && !text.ends_with(b"changed\n") {
                text.extend_from_slice(b"changed\n");
            }
            std::fs::write(&path, text).expect("rewrites");
            // Later than the index's record, so no clock granularity hides the rewrite.
            let later = std::time::SystemTime::now() + std::time::Duration::from_secs(2);
            let file = std::fs::File::options()
                .write(true)
                .open(&path)
                .expect("opens");
            file.set_modified(later).expect("sets the time");
        }
    }

    /// The markers the repository's programs wrote, sorted.
    fn markers(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.markers)
            .expect("lists the markers")
            .map(|entry| {
                entry
                    .expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into()
            })
            .collect();
        names.sort();
        names
    }

    /// Fails the test when any marker exists, naming `what` ran it.
    fn assert_clean(&self, what: &str) {
        assert_eq!(
            self.markers(),
            Vec::<String>::new(),
            "{what} ran a program that the repository's git settings name"
        );
    }
}

/// The environment of every process here: no user or system git configuration, no repository
/// above the temporary folder.
fn isolate(command: &mut Command, repo: &Path) {
    command
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env(
            "GIT_CEILING_DIRECTORIES",
            repo.parent().expect("a parent folder"),
        )
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("ONCE_LOG")
        .stdin(Stdio::null());
}

/// Plain git, as a person would run it.
fn git(repo: &Path, args: &[&str]) -> std::process::Output {
    let mut command = Command::new("git");
    command
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(["-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(repo);
    isolate(&mut command, repo);
    let output = command.output().expect("runs git");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn once(repo: &Path, args: &[&str]) -> std::process::Output {
    let mut command = Command::new(once_binary());
    command.arg("-C").arg(repo).args(args);
    isolate(&mut command, repo);
    let output = crate::support::output_within(command);
    assert!(
        output.status.success(),
        "once {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The changed files an `affected` answer lists, sorted.
fn changed_files(answer: &Value) -> Vec<String> {
    let mut files: Vec<String> = answer["files"]
        .as_array()
        .unwrap_or_else(|| panic!("no changed files in {answer}"))
        .iter()
        .map(|file| file["path"].as_str().expect("a path").to_owned())
        .collect();
    files.sort();
    files
}

/// One HTTP exchange on a fresh connection, read to its end.
fn http(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> HttpReply {
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).expect("connects");
    stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).expect("writes");
    stream.write_all(body.as_bytes()).expect("writes");
    let mut text = String::new();
    stream.read_to_string(&mut text).expect("reads");
    HttpReply::parse(&text)
}

/// The JSON-RPC messages of an `/mcp` answer, JSON or an event stream.
fn mcp_messages(reply: &HttpReply) -> Vec<Value> {
    if reply.body.trim_start().starts_with('{') {
        return vec![serde_json::from_str(&reply.body).expect("JSON")];
    }
    reply
        .body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| serde_json::from_str(data.trim()).expect("JSON data"))
        .collect()
}

#[test]
fn plain_git_runs_the_repositorys_programs_so_the_attack_is_live() {
    let hostile = Hostile::new();
    // `git status` refreshes the index, asking fsmonitor and running the filters, and dies at
    // the process filter, which speaks no protocol; with that one off, it goes on to the other
    // filters and the post-index-change hook, and `git diff` with a patch runs the diff driver.
    // Whether git succeeds does not matter here: what it ran does.
    let process_off = "filter.conditional.process=";
    for args in [
        &["status", "--porcelain"][..],
        &["-c", process_off, "status", "--porcelain"],
        &["-c", process_off, "diff", "HEAD"],
    ] {
        let mut command = Command::new("git");
        command.args(args).current_dir(&hostile.repo);
        isolate(&mut command, &hostile.repo);
        command.output().expect("runs git");
    }
    let markers = hostile.markers();
    for expected in [
        "fsmonitor-included",
        "filter-evil-clean",
        "filter-included-clean",
        "filter-conditional-process",
        "hook-post-index-change",
        "diff-evil-command",
    ] {
        assert!(
            markers.iter().any(|marker| marker == expected),
            "plain git did not run `{expected}`: the fixture no longer attacks (markers: {markers:?})"
        );
    }
}

#[test]
fn the_cli_asks_git_without_running_anything_the_repository_names() {
    let hostile = Hostile::new();
    let output = once(
        &hostile.repo,
        &[
            "query",
            "affected",
            "--since",
            "HEAD",
            "--ownership",
            "all",
            "--json",
        ],
    );
    hostile.assert_clean("`once query affected --since HEAD`");
    let answer: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    // With the filters off, git compares the files as they are on disk with what was committed
    // (without filters): the rewritten files are unchanged, the edited one is not.
    assert_eq!(changed_files(&answer), ["lib/notes.txt"], "{answer}");

    hostile.touch_tracked();
    once(&hostile.repo, &["run", "--affected", "HEAD", "test"]);
    hostile.assert_clean("`once run --affected HEAD test`");
}

#[test]
fn stdio_mcp_asks_git_without_running_anything_the_repository_names() {
    let hostile = Hostile::new();
    let mut command = Command::new(once_binary());
    command.arg("-C").arg(&hostile.repo).arg("mcp");
    isolate(&mut command, &hostile.repo);
    let mut client = Mcp::from_command(command);
    client.initialize();
    let result = client.call(
        2,
        "once_query_affected",
        json!({"since": "HEAD", "ownership": "all"}),
    );
    hostile.assert_clean("`once_query_affected` over stdio");
    assert_ne!(result["result"]["isError"], true, "{result}");
    let answer = &result["result"]["structuredContent"]["result"];
    assert_eq!(changed_files(answer), ["lib/notes.txt"], "{result}");
    client.close_stdin();
    let (code, _) = client.wait(PATIENCE);
    assert_eq!(code, Some(0));
}

#[test]
fn mcp_over_http_and_the_window_ask_git_without_running_anything_the_repository_names() {
    let hostile = Hostile::new();
    let state = TempDir::new();
    let serve = Serve::start_with(
        &hostile.repo,
        state.path(),
        &[],
        &[
            ("GIT_CONFIG_NOSYSTEM", Path::new("1")),
            ("GIT_CONFIG_GLOBAL", Path::new("/dev/null")),
            (
                "GIT_CEILING_DIRECTORIES",
                hostile.repo.parent().expect("a parent"),
            ),
        ],
    );
    let token = serve.entry()["token"].as_str().expect("a token").to_owned();
    let bearer = format!("Bearer {token}");

    // MCP over Streamable HTTP.
    let post = |session: Option<&str>, body: Value| {
        let mut headers = vec![
            ("Authorization", bearer.as_str()),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        if let Some(session) = session {
            headers.push(("Mcp-Session-Id", session));
        }
        http(serve.port, "POST", "/mcp", &headers, &body.to_string())
    };
    let initialized = post(
        None,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
               "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "hostile-test", "version": "0"}}}),
    );
    assert_eq!(initialized.status, 200, "{initialized:?}");
    let session = initialized
        .headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("mcp-session-id"))
        .map(|(_, value)| value.clone())
        .expect("a session id");
    let reply = post(
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "once_query_affected",
                          "arguments": {"since": "HEAD", "ownership": "all"}}}),
    );
    hostile.assert_clean("`once_query_affected` over MCP on HTTP");
    let response = mcp_messages(&reply).pop().expect("a response");
    assert_ne!(response["result"]["isError"], true, "{response}");
    let answer = &response["result"]["structuredContent"]["result"];
    assert_eq!(changed_files(answer), ["lib/notes.txt"], "{response}");

    // The window's API, logged in as its owner.
    hostile.touch_tracked();
    let page = crate::window::Page::login(&serve);
    let tool = page.post("/api/tool/once_query_affected", &json!({"since": "HEAD"}));
    hostile.assert_clean("`/api/tool/once_query_affected` in the window");
    assert_eq!(tool.status, 200, "{tool:?}");
    assert!(tool.body.contains("lib/notes.txt"), "{tool:?}");
}
