//! `once run` and MCP `once_run` with a remote cache, end to end against a real BuildGrid (each
//! test starts its own, see `once-remote/tests/support/buildgrid.rs`): clones in different
//! folders share results, a server that dies, lies, hangs or is absent costs one warning and the
//! run goes on locally, and a configuration the server refuses or that cannot be used stops the
//! run before anything runs. Nothing here reaches beyond loopback, and no server outlives its
//! test: each BuildGrid and silent listener is stopped when dropped.

use std::collections::BTreeMap;
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::support::{Mcp, Running, TempDir, copy_tree, once_binary};

use crate::buildgrid::{BuildGrid, free_port};

/// How long one `once run` may take here before the test fails instead of hanging: generous,
/// as BuildGrid and the runs share two cores with other builds.
const RUN_LIMIT: Duration = Duration::from_secs(60);

/// A workspace of three targets in a chain, `gen` (in `tools/gen`, a script of the workspace) ←
/// `lib` (in `lib`, naming its `{path}`) ← `app` (at the root, with default inputs), each
/// printing one line to its log; outputs in nested folders, two of them executable.
const MANIFEST: &str = r#"
[workspace]
name = "shop"

[targets.gen]
kind = "command"
path = "tools/gen"
[targets.gen.capabilities.build]
command = "./gen.sh"
inputs = ["schema.txt", "gen.sh"]
outputs = ["out/**"]

[targets.lib]
kind = "command"
path = "lib"
deps = ["gen"]
[targets.lib.capabilities.build]
command = "echo 'lib says hello from {path}'; mkdir -p build/obj && cat src.txt ../tools/gen/out/deep/er/schema.txt > build/obj/lib.o"
inputs = ["src.txt"]
outputs = ["build/**"]

[targets.app]
kind = "command"
deps = ["lib"]
[targets.app.capabilities.build]
command = "echo 'app says hello'; mkdir -p dist/bin && cat main.txt lib/build/obj/lib.o > dist/bin/app && chmod 755 dist/bin/app"
outputs = ["dist/**"]
"#;

/// The actions of [`MANIFEST`] that `once run app:build` runs.
const TOTAL: u64 = 3;

/// Writes the sources of [`MANIFEST`] (with `cache`, a `[cache]` table or nothing) into `root`.
fn write_shop(root: &Path, cache: &str) {
    let files = [
        ("once.toml", format!("{cache}\n{MANIFEST}")),
        ("tools/gen/schema.txt", "message Order { id: u64 }\n".into()),
        ("tools/gen/gen.sh", GEN.into()),
        ("lib/src.txt", "fn order() {}\n".into()),
        ("main.txt", "fn main() { order() }\n".into()),
    ];
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, text).expect("writes a source");
    }
    let script = root.join("tools/gen/gen.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// The program `gen:build` starts: a script inside the workspace, so its identity is a path
/// that differs from clone to clone unless it is taken relative to the root.
const GEN: &str = "#!/bin/sh\necho 'gen says hello'\nmkdir -p out/deep/er\n\
cp schema.txt out/deep/er/schema.txt\nprintf '#!/bin/sh\\necho tool\\n' > out/tool\n\
chmod 755 out/tool\n: > out/empty\nyes 'a line of a big output' | head -c 6000000 > out/deep/big.bin\n";

/// A fresh clone of the shop in a folder of its own.
fn shop(cache: &str) -> TempDir {
    let dir = TempDir::new();
    write_shop(dir.path(), cache);
    dir
}

/// `once -C root ARGS`, with no remote cache settings but those the test gives.
fn once(root: &Path, args: &[&str]) -> Command {
    let mut command = once_in(root, &[]);
    command.arg("-C").arg(root).args(args);
    command
}

/// `once ARGS` started in `dir` as a shell there would start it (`PWD` too), finding the
/// workspace above.
fn once_in(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(once_binary());
    command
        .args(args)
        .current_dir(dir)
        .env("PWD", dir)
        .env_remove("ONCE_LOG");
    for var in [
        "ONCE_REMOTE_CACHE",
        "ONCE_REMOTE_INSTANCE",
        "ONCE_REMOTE_UPLOAD",
        "ONCE_REMOTE_HEADERS",
        "ONCE_REMOTE_HEADERS_FILE",
    ] {
        command.env_remove(var);
    }
    command
}

/// `once run app:build --json --remote-cache URL EXTRA` in `root`.
fn run_app(root: &Path, url: &str, extra: &[&str]) -> Finished {
    let mut args = vec!["run", "app:build", "--json", "--remote-cache", url];
    args.extend_from_slice(extra);
    finish(once(root, &args))
}

/// Runs `command` to its end, failing the test after [`RUN_LIMIT`].
fn finish(command: Command) -> Finished {
    Finished(Running::start(command).finish(RUN_LIMIT))
}

/// What a finished `once` said.
struct Finished(Output);

impl Finished {
    fn code(&self) -> Option<i32> {
        self.0.status.code()
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.0.stderr).into_owned()
    }

    /// The `--json` report; fails the test, showing stderr, when stdout is not one.
    fn json(&self) -> Value {
        serde_json::from_slice(&self.0.stdout).unwrap_or_else(|e| {
            panic!(
                "not a report ({e}): {}\n--- stderr\n{}",
                String::from_utf8_lossy(&self.0.stdout),
                self.stderr()
            )
        })
    }

    /// The `warning:` lines of stderr.
    fn warnings(&self) -> Vec<String> {
        self.stderr()
            .lines()
            .filter(|line| line.starts_with("warning:"))
            .map(str::to_owned)
            .collect()
    }

    /// A successful run's report.
    fn succeeded(&self) -> Value {
        let report = self.json();
        assert_eq!(self.code(), Some(0), "{report}\n{}", self.stderr());
        assert_eq!(report["status"], "succeeded", "{report}");
        report
    }
}

/// The row of `action` in a report.
fn row<'r>(report: &'r Value, action: &str) -> &'r Value {
    report["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .find(|row| row["action"] == action)
        .unwrap_or_else(|| panic!("no row for {action}: {report}"))
}

/// Every file of `root` but `.once/`, by relative path: its bytes and whether it is executable.
fn files(root: &Path) -> BTreeMap<String, (Vec<u8>, bool)> {
    fn walk(root: &Path, dir: &Path, found: &mut BTreeMap<String, (Vec<u8>, bool)>) {
        for entry in std::fs::read_dir(dir).expect("lists") {
            let path = entry.expect("an entry").path();
            if path == root.join(".once") {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, found);
            } else {
                let relative = path.strip_prefix(root).expect("inside");
                let mode = std::fs::metadata(&path).expect("stat").permissions().mode();
                let bytes = std::fs::read(&path).expect("reads");
                found.insert(relative.display().to_string(), (bytes, mode & 0o111 != 0));
            }
        }
    }
    let mut found = BTreeMap::new();
    walk(root, root, &mut found);
    found
}

/// The outputs [`MANIFEST`] writes.
const OUTPUTS: [&str; 6] = [
    "tools/gen/out/deep/er/schema.txt",
    "tools/gen/out/deep/big.bin",
    "tools/gen/out/empty",
    "tools/gen/out/tool",
    "lib/build/obj/lib.o",
    "dist/bin/app",
];

/// A folder `depth` levels down a fresh temporary folder, named `name`: a second clone's place.
fn elsewhere(base: &TempDir, depth: usize, name: &str) -> PathBuf {
    let mut dir = base.path().to_path_buf();
    for level in 0..depth {
        dir = dir.join(format!("level{level}"));
    }
    let dir = dir.join(name);
    std::fs::create_dir_all(&dir).expect("mkdir");
    dir
}

/// Runs `action` in clone `a` and then in `b` (a copy of `a`'s sources made before `a` ran), and
/// checks that `b` replays every action from the remote cache, byte for byte, logs included,
/// and then from its own local cache.
/// Clone `b` runs from its folder `b_sub`, as a person in it would.
fn two_clones_share(
    server: &BuildGrid,
    a: &Path,
    (b, b_sub): (&Path, &str),
    args: &[&str],
    log_line: Option<(&str, &str)>,
) {
    copy_tree(a, b);
    assert!(!b.join(".once").exists());
    let mut all = args.to_vec();
    all.extend(["--json", "--remote-cache", &server.url]);
    let run = |root: &Path| {
        if root == b {
            finish(once_in(&b.join(b_sub), &all))
        } else {
            finish(once(root, &all))
        }
    };

    let first = run(a).succeeded();
    let total = first["counts"]["total"].as_u64().expect("a total");
    assert!(total >= 3, "{first}");
    assert_eq!(first["counts"]["ran"], total, "{first}");
    assert_eq!(first["remote"]["misses"], total, "{first}");
    assert_eq!(first["remote"]["uploaded"], total, "{first}");

    let second = run(b);
    let report = second.succeeded();
    assert_eq!(report["counts"]["ran"], 0, "{report}");
    assert_eq!(report["counts"]["cached"], total, "{report}");
    assert_eq!(report["counts"]["remote"], total, "{report}");
    assert_eq!(report["remote"]["hits"], total, "{report}");
    assert_eq!(report["remote"]["misses"], 0, "{report}");
    assert!(report["remote"].get("warning").is_none(), "{report}");
    assert!(second.warnings().is_empty(), "{}", second.stderr());
    for action in report["actions"].as_array().expect("actions") {
        assert_eq!(
            (&action["cached"], &action["remote"]),
            (&json!(true), &json!(true)),
            "{action}"
        );
    }
    assert!(
        second
            .stderr()
            .contains(&format!("{total} cached ({total} remote)")),
        "{}",
        second.stderr()
    );
    // A replay from the remote cache keeps its key's parts like a run does: asked why it would
    // run again, clone `b` answers that nothing changed.
    let params: Vec<&str> = args
        .windows(2)
        .filter(|pair| pair[0] == "--param")
        .flat_map(|pair| ["--param", pair[1]])
        .collect();
    for action in report["actions"].as_array().expect("actions") {
        let name = action["action"].as_str().expect("a name");
        let mut ask = vec!["query", "key", name, "--json"];
        // Parameters belong to the action asked for, not to its dependencies.
        if args.contains(&name) {
            ask.extend(&params);
        }
        let asked = finish(once(b, &ask));
        assert_eq!(asked.code(), Some(0), "{}", asked.stderr());
        let explained = asked.json();
        assert_eq!(explained["last_key"], explained["key"], "{explained}");
        assert_eq!(explained["changes"], json!([]), "{explained}");
    }
    // Every file, outputs included, byte for byte and with the same executable bits.
    let (in_a, in_b) = (files(a), files(b));
    assert_eq!(
        in_a.keys().collect::<Vec<_>>(),
        in_b.keys().collect::<Vec<_>>()
    );
    for (path, (bytes, executable)) in &in_a {
        assert!(
            in_b[path] == (bytes.clone(), *executable),
            "`{path}` differs"
        );
    }
    // The log replayed is the one clone `a` wrote.
    if let Some((action, line)) = log_line {
        let log = row(&report, action)["log"]
            .as_str()
            .unwrap_or_else(|| panic!("no log for {action}: {report}"));
        let text = std::fs::read_to_string(log).expect("reads the replayed log");
        assert!(text.contains(line), "{log}: {text:?}");
        let run_id = report["run_id"].as_str().expect("a run id");
        let query = finish(once(b, &["query", "runs", run_id, "--action", action]));
        assert_eq!(query.code(), Some(0), "{}", query.stderr());
        let page = query.json();
        assert!(page.to_string().contains(line), "{page}");
    }

    let third = run(b).succeeded();
    assert_eq!(third["counts"]["cached"], total, "{third}");
    assert_eq!(third["counts"]["remote"], 0, "{third}");
    assert_eq!(third["remote"]["hits"], 0, "{third}");
}

#[test]
fn two_clones_in_different_folders_share_every_result() {
    let server = BuildGrid::start();
    let a = shop("");
    let base = TempDir::new();
    let b = elsewhere(&base, 3, "another name");
    two_clones_share(
        &server,
        a.path(),
        (&b, "lib"),
        &["run", "app:build"],
        Some(("gen:build", "gen says hello")),
    );
    let in_b = files(&b);
    for output in OUTPUTS {
        assert!(
            in_b.contains_key(output),
            "{output} missing: {:?}",
            in_b.keys()
        );
    }
    assert!(in_b["tools/gen/out/tool"].1 && in_b["dist/bin/app"].1);
    assert!(!in_b["lib/build/obj/lib.o"].1);
}

#[test]
fn two_clones_of_the_starter_share_every_result() {
    // The starter example: parameters, a check, a dependency on a capability of another name.
    let server = BuildGrid::start();
    let a = TempDir::new();
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/starter"),
        a.path(),
    );
    let base = TempDir::new();
    let b = elsewhere(&base, 1, "starter-copy");
    two_clones_share(
        &server,
        a.path(),
        (&b, "proto/schema"),
        &["run", "report:build", "--param", "level=full"],
        None,
    );
    assert_eq!(
        std::fs::read_to_string(b.join("report.txt")).expect("the report"),
        "level=full\n"
    );
}

/// Polls `condition` until it holds, failing the test after `limit`.
fn wait_until(limit: Duration, what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + limit;
    while !condition() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether some run's log of `action` (its file name) holds `text`.
fn a_log_holds(root: &Path, log_name: &str, text: &str) -> bool {
    let Ok(runs) = std::fs::read_dir(root.join(".once/runs")) else {
        return false;
    };
    runs.filter_map(Result::ok).any(|run| {
        std::fs::read_to_string(run.path().join(log_name)).is_ok_and(|log| log.contains(text))
    })
}

/// `slow` waits (at most 60 s) for a marker file; `mid` and `top` depend on it in a chain, and
/// eight leaves on it too. While `slow` runs, the test sends `signal` to BuildGrid and then
/// writes the marker: the run must go on locally, paying at most one 1 s timeout.
fn server_lost_during_a_run(signal: i32) {
    let server = BuildGrid::start();
    let signals = TempDir::new();
    let marker = signals.path().join("go");
    let ws = TempDir::new();
    let mut manifest = format!(
        r#"
[cache]
timeout = "1s"

[targets.slow]
kind = "command"
path = "slow"
[targets.slow.capabilities.build]
command = "echo 'slow started'; i=0; while [ ! -e '{marker}' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; [ -e '{marker}' ] && mkdir -p out && echo slow > out/slow.txt"
outputs = ["out/**"]

[targets.mid]
kind = "command"
path = "mid"
deps = ["slow"]
[targets.mid.capabilities.build]
command = "mkdir -p out && cat ../slow/out/slow.txt > out/mid.txt"
outputs = ["out/**"]

[targets.top]
kind = "command"
deps = ["mid"]
[targets.top.capabilities.build]
command = "mkdir -p out && cat mid/out/mid.txt > out/top.txt"
outputs = ["out/**"]
"#,
        marker = marker.display()
    );
    let mut folders = vec!["slow".to_owned(), "mid".to_owned()];
    for i in 0..8 {
        manifest.push_str(&format!(
            "\n[targets.leaf{i}]\nkind = \"command\"\npath = \"leaf{i}\"\ndeps = [\"slow\"]\n\
             [targets.leaf{i}.capabilities.build]\ncommand = \"mkdir -p out && echo {i} > out/n\"\n\
             outputs = [\"out/**\"]\n"
        ));
        folders.push(format!("leaf{i}"));
    }
    std::fs::write(ws.path().join("once.toml"), manifest).expect("writes the manifest");
    for folder in folders {
        std::fs::create_dir_all(ws.path().join(folder)).expect("mkdir");
    }
    // One job: were the timeout paid per action, the ten after `slow` would take 10 s.
    let args = ["run", "top:build", "--all", "build", "-j", "1", "--json"];
    let mut args = args.to_vec();
    args.extend(["--remote-cache", &server.url]);
    let running = Running::start(once(ws.path(), &args));
    wait_until(RUN_LIMIT, "slow:build starts", || {
        a_log_holds(ws.path(), "slow_build.log", "slow started")
    });
    server.signal(signal);
    std::fs::write(&marker, "").expect("writes the marker");
    let released = Instant::now();
    let finished = Finished(running.finish(RUN_LIMIT));
    let took = released.elapsed();
    let report = finished.succeeded();
    assert_eq!(report["counts"]["total"], 11, "{report}");
    assert_eq!(report["counts"]["ran"], 11, "{report}");
    assert_eq!(report["counts"]["remote"], 0, "{report}");
    assert_eq!(report["remote"]["uploaded"], 0, "{report}");
    assert!(report["remote"]["warning"].is_string(), "{report}");
    let warnings = finished.warnings();
    assert_eq!(warnings.len(), 1, "{}", finished.stderr());
    assert!(warnings[0].contains("remote cache"), "{warnings:?}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("out/top.txt")).expect("top's output"),
        "slow\n"
    );
    assert!(
        took < Duration::from_secs(6),
        "took {took:?} after the marker"
    );
}

#[test]
fn a_server_killed_during_a_run_costs_one_warning_and_the_run_goes_on_locally() {
    server_lost_during_a_run(libc::SIGKILL);
}

#[test]
fn a_server_that_hangs_during_a_run_costs_one_timeout_and_the_run_goes_on_locally() {
    server_lost_during_a_run(libc::SIGSTOP);
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Clone A uploads; the blob of `output` is overwritten on the server with other bytes of the
/// same length; clone B must run `action` (and whatever comes after it) instead of restoring it.
fn corrupted(output: &str, action: &str, remote_hits: u64) {
    let server = BuildGrid::start();
    let a = shop("");
    run_app(a.path(), &server.url, &[]).succeeded();
    let right = std::fs::read(a.path().join(output)).expect("the output");
    let file = server.cas_file(&sha256_hex(&right));
    let corrupt: Vec<u8> = right.iter().map(|b| b ^ 0x20).collect();
    assert_eq!(std::fs::read(&file).expect("the blob"), right);
    std::fs::write(&file, &corrupt).expect("corrupts the blob");

    let b = shop("");
    let finished = run_app(b.path(), &server.url, &[]);
    let report = finished.succeeded();
    assert_eq!(report["counts"]["remote"], remote_hits, "{report}");
    assert_eq!(report["counts"]["ran"], TOTAL - remote_hits, "{report}");
    assert_eq!(row(&report, action)["cached"], false, "{report}");
    assert!(
        std::fs::read(b.path().join(output)).expect("the output") == right,
        "`{output}` does not hold the right bytes"
    );
    let warnings = finished.warnings();
    assert_eq!(warnings.len(), 1, "{}", finished.stderr());
    assert!(
        warnings[0].contains("does not match its digest"),
        "{warnings:?}"
    );
    assert!(report["remote"]["warning"].is_string(), "{report}");
}

#[test]
fn a_blob_corrupted_on_the_server_is_never_restored() {
    // A small blob, read in a batch: gen and lib come from the remote, app runs.
    corrupted("dist/bin/app", "app:build", TOTAL - 1);
}

#[test]
fn a_large_blob_corrupted_on_the_server_is_never_restored() {
    // Over the batch limit, read over ByteStream: the first action runs, and so does the rest,
    // as the remote cache is off after its first failure.
    corrupted("tools/gen/out/deep/big.bin", "gen:build", 0);
}

#[test]
fn uploads_can_be_turned_off_from_the_manifest_the_environment_or_the_command_line() {
    let server = BuildGrid::start();
    let read_only = "[cache]\nupload = false\n";
    let cases: [(&str, &str, &[&str]); 3] = [
        ("the manifest", read_only, &[]),
        ("ONCE_REMOTE_UPLOAD=false", "", &[]),
        ("--no-remote-upload", "", &["--no-remote-upload"]),
    ];
    for (how, cache, extra) in cases {
        let ws = shop(cache);
        let mut args = vec!["run", "app:build", "--json", "--remote-cache", &server.url];
        args.extend_from_slice(extra);
        let mut command = once(ws.path(), &args);
        if how.starts_with("ONCE_") {
            command.env("ONCE_REMOTE_UPLOAD", "false");
        }
        let report = finish(command).succeeded();
        assert_eq!(report["counts"]["ran"], TOTAL, "{how}: {report}");
        assert_eq!(report["remote"]["upload"], false, "{how}: {report}");
        assert_eq!(report["remote"]["uploaded"], 0, "{how}: {report}");
        // A fresh clone that uploads nothing itself finds nothing either.
        let fresh = run_app(shop("").path(), &server.url, &["--no-remote-upload"]).succeeded();
        assert_eq!(fresh["remote"]["hits"], 0, "{how}: {fresh}");
        assert_eq!(fresh["counts"]["ran"], TOTAL, "{how}: {fresh}");
    }
    // `--remote-upload` wins over `upload = false`.
    let report = run_app(shop(read_only).path(), &server.url, &["--remote-upload"]).succeeded();
    assert_eq!(report["remote"]["upload"], true, "{report}");
    assert_eq!(report["remote"]["uploaded"], TOTAL, "{report}");
    let replayed = run_app(shop(read_only).path(), &server.url, &[]).succeeded();
    assert_eq!(replayed["counts"]["remote"], TOTAL, "{replayed}");
}

#[test]
fn a_wrong_instance_name_stops_the_run_before_anything_runs() {
    let server = BuildGrid::start();
    let ws = shop("");
    let refused = run_app(ws.path(), &server.url, &["--remote-instance", "nope"]);
    assert_eq!(refused.code(), Some(1), "{}", refused.stderr());
    let stderr = refused.stderr();
    assert!(stderr.contains("`nope`"), "{stderr}");
    assert!(stderr.contains("--no-remote-cache"), "{stderr}");
    for output in OUTPUTS {
        assert!(!ws.path().join(output).exists(), "{output} was written");
    }
    let mut args = vec!["run", "app:build", "--json", "--no-remote-cache"];
    args.extend(["--remote-instance", "nope"]);
    let report = finish(once(ws.path(), &args)).succeeded();
    assert_eq!(report["counts"]["ran"], TOTAL, "{report}");
    assert!(report.get("remote").is_none(), "{report}");
}

#[test]
fn refused_credentials_stop_the_run_and_never_show_the_token() {
    let server = BuildGrid::start_with_jwt();
    let secrets = TempDir::new();
    let headers_file = secrets.path().join("headers");
    std::fs::write(
        &headers_file,
        "# the team's token\n\nAuthorization: Bearer not-a-token\n",
    )
    .expect("writes the headers file");
    let ws = shop("");
    let mut from_env = once(
        ws.path(),
        &["run", "app:build", "--remote-cache", &server.url],
    );
    from_env.env("ONCE_REMOTE_HEADERS", "Authorization: Bearer not-a-token");
    let from_file = once(
        ws.path(),
        &[
            "run",
            "app:build",
            "--remote-cache",
            &server.url,
            "--remote-headers-file",
            &headers_file.display().to_string(),
        ],
    );
    for (how, command) in [("the variable", from_env), ("the file", from_file)] {
        let refused = finish(command);
        let stderr = refused.stderr();
        assert_eq!(refused.code(), Some(1), "{how}: {stderr}");
        assert!(stderr.contains("authorization"), "{how}: {stderr}");
        assert!(!stderr.contains("not-a-token"), "{how}: {stderr}");
        for output in OUTPUTS {
            assert!(!ws.path().join(output).exists(), "{how}: {output} written");
        }
    }
}

#[test]
fn nothing_listening_costs_one_warning_and_the_run_goes_on_locally() {
    let ws = shop("");
    let url = format!("grpc://127.0.0.1:{}", free_port());
    let finished = run_app(ws.path(), &url, &[]);
    let report = finished.succeeded();
    assert_eq!(report["counts"]["ran"], TOTAL, "{report}");
    assert!(report["remote"]["warning"].is_string(), "{report}");
    let warnings = finished.warnings();
    assert_eq!(warnings.len(), 1, "{}", finished.stderr());
    assert!(warnings[0].contains(&url), "{warnings:?}");
}

/// A loopback server that accepts connections, holds them and never answers; stopped on drop.
struct Silent {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Silent {
    fn start() -> Silent {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binds");
        let port = listener.local_addr().expect("an address").port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut held: Vec<TcpStream> = Vec::new();
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                held.extend(stream.ok());
            }
        });
        Silent {
            port,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // One more connection wakes the accept loop, which then sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn a_server_that_never_answers_costs_one_timeout_per_run_not_one_per_action() {
    let silent = Silent::start();
    let mut manifest = format!(
        "[cache]\nremote = \"grpc://127.0.0.1:{}\"\ntimeout = \"1s\"\n",
        silent.port
    );
    for i in 0..10 {
        manifest.push_str(&format!(
            "\n[targets.t{i}]\nkind = \"command\"\npath = \"t{i}\"\n\
             [targets.t{i}.capabilities.build]\ncommand = \"mkdir -p out && echo {i} > out/n\"\n\
             outputs = [\"out/**\"]\n"
        ));
    }
    let ws = TempDir::new();
    std::fs::write(ws.path().join("once.toml"), manifest).expect("writes the manifest");
    for i in 0..10 {
        std::fs::create_dir_all(ws.path().join(format!("t{i}"))).expect("mkdir");
    }
    let started = Instant::now();
    let finished = finish(once(ws.path(), &["run", "--all", "build", "--json"]));
    let took = started.elapsed();
    let report = finished.succeeded();
    assert_eq!(report["counts"]["ran"], 10, "{report}");
    assert!(report["remote"]["warning"].is_string(), "{report}");
    assert_eq!(finished.warnings().len(), 1, "{}", finished.stderr());
    // Ten timeouts would be 10 s at the least; one is 1 s, with room for a loaded machine.
    assert!(took < Duration::from_secs(15), "took {took:?}");
}

#[test]
fn mcp_once_run_uses_the_remote_cache_its_environment_names() {
    let server = BuildGrid::start();
    let a = shop("");
    run_app(a.path(), &server.url, &[]).succeeded();
    let b = shop("");
    let mut command = once(b.path(), &["mcp", "--allow-run"]);
    command.env("ONCE_REMOTE_CACHE", &server.url);
    let mut mcp = Mcp::from_command(command);
    mcp.initialize();
    let reply = mcp.call(1, "once_run", json!({"target": "app:build"}));
    let content = &reply["result"]["structuredContent"];
    assert_eq!(content["outcome"], "done", "{reply}");
    assert_eq!(content["result"]["counts"]["total"], TOTAL, "{reply}");
    assert_eq!(content["result"]["counts"]["remote"], TOTAL, "{reply}");
    assert_eq!(content["result"]["remote"]["hits"], TOTAL, "{reply}");
    assert!(b.path().join("dist/bin/app").is_file());

    let c = shop("");
    let mut command = once(c.path(), &["mcp", "--allow-run"]);
    command
        .env("ONCE_REMOTE_CACHE", &server.url)
        .env("ONCE_REMOTE_INSTANCE", "nope");
    let mut mcp = Mcp::from_command(command);
    mcp.initialize();
    let reply = mcp.call(1, "once_run", json!({"target": "app:build"}));
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    // What to fix, and nothing a caller of the tool cannot do (it has no flags to pass).
    let message = reply["result"]["structuredContent"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("`nope`"), "{reply}");
    assert!(!message.contains("--no-remote-cache"), "{reply}");
    for output in OUTPUTS {
        assert!(!c.path().join(output).exists(), "{output} was written");
    }
}

#[test]
fn settings_that_cannot_be_used_are_exit_2_with_a_message() {
    let ws = shop("");
    let secrets = TempDir::new();
    let headers_file = secrets.path().join("headers");
    std::fs::write(&headers_file, "# ok\nx-team: blue\nBearer s3cret\n").expect("writes");
    let url = "grpc://127.0.0.1:1";
    let mut maybe = once(ws.path(), &["run", "app:build", "--remote-cache", url]);
    maybe.env("ONCE_REMOTE_UPLOAD", "maybe");
    let file = headers_file.display().to_string();
    let cases = [
        (
            once(
                ws.path(),
                &["run", "app:build", "--remote-cache", "http://x"],
            ),
            "grpc://host:port",
        ),
        (maybe, "`true` or `false`"),
        (
            once(
                ws.path(),
                &[
                    "run",
                    "app:build",
                    "--remote-cache",
                    url,
                    "--remote-headers-file",
                    &file,
                ],
            ),
            "line 3 of",
        ),
    ];
    for (command, expected) in cases {
        let refused = finish(command);
        let stderr = refused.stderr();
        assert_eq!(refused.code(), Some(2), "{stderr}");
        assert!(stderr.contains(expected), "{expected:?}: {stderr}");
        assert!(!stderr.contains("s3cret"), "{stderr}");
    }
    assert!(!ws.path().join(".once/runs").exists());
}
