//! `once run --remote-exec` against a real BuildGrid with its SQL scheduler on PostgreSQL and two
//! `once worker`s (see `worker.rs`): a build that runs on both workers and is then replayed in a
//! fresh clone from the action cache; a failing action's exit code and logs; an input the
//! command read without declaring it, named with the fix; a deadline; a cancel that stops the
//! worker's command; a worker killed mid-action, whose action another worker runs; an engine
//! that is down, which costs one warning and a local run. Everything is stopped when its test
//! ends; nothing reaches beyond loopback.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::buildgrid::free_port;
use crate::support::{Running, TempDir, once_binary, output_within};
use crate::worker::{ACTION_LIMIT, Farm};

/// Four leaves that take a moment each (so two workers share them), a generator, and a library
/// that reads the generator's output: what a worker has only if the client sends it.
const MANIFEST: &str = r#"
[workspace]
name = "farm"

[targets.gen]
kind = "command"
path = "gen"
[targets.gen.capabilities.build]
command = "mkdir -p out && tr a-z A-Z < schema.txt > out/schema.txt && echo generated"
inputs = ["schema.txt"]
outputs = ["out/**"]

[targets.lib]
kind = "command"
path = "lib"
deps = ["gen"]
[targets.lib.capabilities.build]
command = "mkdir -p build/obj && cat src.txt ../gen/out/schema.txt > build/obj/lib.o && echo linked >&2"
inputs = ["src.txt"]
outputs = ["build/**"]
"#;

const LEAVES: [&str; 4] = ["a", "b", "c", "d"];

fn write_farm(root: &Path, extra: &str) {
    let mut manifest = MANIFEST.to_owned();
    for leaf in LEAVES {
        manifest += &format!(
            "\n[targets.{leaf}]\nkind = \"command\"\npath = \"{leaf}\"\n\
             [targets.{leaf}.capabilities.build]\n\
             command = \"sleep 1 && mkdir -p dist && cp in.txt dist/{leaf}.txt\"\n\
             inputs = [\"in.txt\"]\noutputs = [\"dist/**\"]\n"
        );
        write(root, &format!("{leaf}/in.txt"), &format!("leaf {leaf}\n"));
    }
    manifest += extra;
    write(root, "once.toml", &manifest);
    write(root, "gen/schema.txt", "message order\n");
    write(root, "lib/src.txt", "fn order() {}\n");
}

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `once -C root ARGS`, with no remote settings from the test's own environment.
fn once(root: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(once_binary());
    command
        .arg("-C")
        .arg(root)
        .args(args)
        .env_remove("ONCE_LOG");
    for var in [
        "ONCE_REMOTE_CACHE",
        "ONCE_REMOTE_EXEC",
        "ONCE_REMOTE_JOBS",
        "ONCE_REMOTE_INSTANCE",
        "ONCE_REMOTE_UPLOAD",
        "ONCE_REMOTE_HEADERS",
        "ONCE_REMOTE_HEADERS_FILE",
    ] {
        command.env_remove(var);
    }
    command
}

/// Runs `command` (bounded), returning its JSON report and stderr.
fn run_json(command: Command) -> (Value, String, Option<i32>) {
    let out = output_within(command);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: stdout {:?}\nstderr {stderr}", out.stdout));
    (report, stderr, out.status.code())
}

fn action<'r>(report: &'r Value, name: &str) -> &'r Value {
    report["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["action"] == name)
        .unwrap_or_else(|| panic!("no {name} in {report:#}"))
}

#[test]
fn a_build_runs_on_two_workers_and_a_fresh_clone_replays_it_from_the_action_cache() {
    let farm = Farm::start(10);
    let first = farm.worker("first");
    let second = farm.worker("second");
    let clone = TempDir::new();
    write_farm(clone.path(), "");
    let url = farm.server.url.clone();
    let (report, stderr, code) = run_json({
        let mut command = once(
            clone.path(),
            &["run", "--all", "build", "--remote-exec", &url, "--json"],
        );
        command.arg("--output-logs").arg("none");
        command
    });
    assert_eq!(
        code,
        Some(0),
        "{report:#}\n{stderr}\nfirst:\n{}\nsecond:\n{}",
        first.log(),
        second.log()
    );
    assert_eq!(report["counts"]["ran"], 6, "{report:#}");
    assert_eq!(report["execution"]["executed"], 6, "{report:#}");
    assert_eq!(report["execution"]["local"], 0, "{report:#}");
    let mut workers: Vec<String> = report["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            assert_eq!(a["ran_on"]["place"], "remote", "{a:#}");
            a["ran_on"]["worker"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    workers.sort();
    workers.dedup();
    assert_eq!(workers, ["first", "second"], "{report:#}");
    // The outputs came back into the workspace, the dependency's output reached the worker.
    let lib = std::fs::read_to_string(clone.path().join("lib/build/obj/lib.o")).unwrap();
    assert_eq!(lib, "fn order() {}\nMESSAGE ORDER\n");
    for leaf in LEAVES {
        let out = clone.path().join(format!("{leaf}/dist/{leaf}.txt"));
        assert_eq!(
            std::fs::read_to_string(out).unwrap(),
            format!("leaf {leaf}\n")
        );
    }
    // Both streams of a worker's run are in the action's log.
    let log = action(&report, "lib:build")["log"]
        .as_str()
        .map(PathBuf::from);
    if let Some(log) = log {
        assert!(std::fs::read_to_string(log).unwrap().contains("linked"));
    }

    // `--force` runs them again on the engine, not from its cache.
    let (forced, stderr, code) = run_json(once(
        clone.path(),
        &[
            "run",
            "--all",
            "build",
            "--remote-exec",
            &url,
            "--force",
            "--json",
        ],
    ));
    assert_eq!(code, Some(0), "{forced:#}\n{stderr}");
    assert_eq!(forced["execution"]["executed"], 6, "{forced:#}");
    assert_eq!(forced["execution"]["engine_cached"], 0, "{forced:#}");

    // A fresh clone elsewhere, with the engine's cache only: every action is a hit.
    let fresh = TempDir::new();
    write_farm(fresh.path(), "");
    let (replayed, stderr, code) = run_json(once(
        fresh.path(),
        &["run", "--all", "build", "--remote-cache", &url, "--json"],
    ));
    assert_eq!(code, Some(0), "{replayed:#}\n{stderr}");
    assert_eq!(replayed["counts"]["ran"], 0, "{replayed:#}");
    assert_eq!(replayed["counts"]["remote"], 6, "{replayed:#}");
    let lib = std::fs::read_to_string(fresh.path().join("lib/build/obj/lib.o")).unwrap();
    assert_eq!(lib, "fn order() {}\nMESSAGE ORDER\n");
}

#[test]
fn a_failure_reports_its_remote_exit_code_and_logs_and_names_what_it_read_undeclared() {
    let farm = Farm::start(10);
    let worker = farm.worker("only");
    let clone = TempDir::new();
    write(
        clone.path(),
        "once.toml",
        r#"
[targets.broken]
kind = "command"
path = "broken"
[targets.broken.capabilities.build]
command = "echo 'about to fail'; echo 'the reason' >&2; exit 3"

[targets.reader]
kind = "command"
path = "reader"
[targets.reader.capabilities.build]
command = "cat ../shared/config.txt"
inputs = ["main.txt"]
"#,
    );
    write(clone.path(), "broken/x.txt", "x\n");
    write(clone.path(), "reader/main.txt", "main\n");
    write(clone.path(), "shared/config.txt", "config\n");
    let url = farm.server.url.clone();
    let (report, stderr, code) = run_json(once(
        clone.path(),
        &[
            "run",
            "--all",
            "build",
            "--keep-going",
            "--remote-exec",
            &url,
            "--json",
        ],
    ));
    assert_eq!(code, Some(1), "{report:#}\n{stderr}\n{}", worker.log());
    let broken = action(&report, "broken:build");
    assert_eq!(broken["status"], "failed", "{broken:#}");
    assert_eq!(broken["exit_code"], 3, "{broken:#}");
    assert_eq!(broken["ran_on"]["place"], "remote");
    let tail: Vec<&str> = broken["tail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(tail.contains(&"about to fail"), "{tail:?}");
    assert!(tail.contains(&"the reason"), "{tail:?}");
    let log = std::fs::read_to_string(broken["log"].as_str().unwrap()).unwrap();
    assert_eq!(log, "about to fail\nthe reason\n");

    let reader = action(&report, "reader:build");
    assert_eq!(reader["status"], "failed", "{reader:#}");
    let tail = reader["tail"].to_string();
    assert!(tail.contains("No such file"), "{tail}");
    assert!(
        tail.contains(
            "`shared/config.txt` is in the workspace but not among `reader:build`'s inputs"
        ) && tail.contains("declare it in the capability's `inputs`"),
        "{tail}"
    );
}

#[test]
fn a_deadline_stops_the_remote_action_and_the_run_says_it_timed_out() {
    let farm = Farm::start(10);
    let worker = farm.worker("only");
    let clone = TempDir::new();
    write(
        clone.path(),
        "once.toml",
        "[targets.slow]\nkind = \"command\"\n[targets.slow.capabilities.build]\n\
         command = \"sleep 120\"\ndeadline = \"2s\"\n",
    );
    let url = farm.server.url.clone();
    let started = Instant::now();
    let (report, stderr, code) = run_json(once(
        clone.path(),
        &["run", "slow:build", "--remote-exec", &url, "--json"],
    ));
    assert_eq!(code, Some(1), "{report:#}\n{stderr}\n{}", worker.log());
    assert_eq!(
        action(&report, "slow:build")["status"],
        "timed_out",
        "{report:#}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_cancelled_run_cancels_the_remote_operation_and_the_command_stops() {
    let farm = Farm::start(10);
    let worker = farm.worker("only");
    let clone = TempDir::new();
    let marker = farm.scratch.path().join("started");
    write(
        clone.path(),
        "once.toml",
        &format!(
            "[targets.long]\nkind = \"command\"\n[targets.long.capabilities.build]\n\
             command = \"touch '{}'; exec sleep 120\"\n",
            marker.display()
        ),
    );
    let url = farm.server.url.clone();
    let running = Running::start(once(
        clone.path(),
        &["run", "long:build", "--remote-exec", &url],
    ));
    let deadline = Instant::now() + ACTION_LIMIT;
    while !marker.exists() {
        assert!(
            Instant::now() < deadline,
            "never started:\n{}",
            worker.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: signals the `once run` this test started.
    unsafe { libc::kill(i32::try_from(running.pid()).unwrap(), libc::SIGINT) };
    let out = running.finish(Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    // The worker's command goes too: nothing may still run in its scratch folder.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left: Vec<PathBuf> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|entry| std::fs::read_link(entry.path().join("cwd")).ok())
            .filter(|cwd| cwd.starts_with(farm.scratch.path()))
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the remote command outlived the cancel, in {left:?}:\n{}",
            worker.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_worker_killed_mid_action_leaves_it_to_the_other_and_the_run_succeeds() {
    // A short keepalive: the killed worker cannot close its session.
    let farm = Farm::start(3);
    let mut first = farm.worker("doomed");
    let clone = TempDir::new();
    let marker = farm.scratch.path().join("started");
    write(
        clone.path(),
        "once.toml",
        &format!(
            "[targets.job]\nkind = \"command\"\n[targets.job.capabilities.build]\n\
             command = \"if [ -e '{m}' ]; then mkdir -p out && echo done > out/x; else touch '{m}'; exec sleep 120; fi\"\n\
             outputs = [\"out/**\"]\n",
            m = marker.display()
        ),
    );
    let url = farm.server.url.clone();
    let running = Running::start({
        let mut command = once(
            clone.path(),
            &["run", "job:build", "--remote-exec", &url, "--json"],
        );
        command.arg("--output-logs").arg("none");
        command
    });
    let deadline = Instant::now() + ACTION_LIMIT;
    while !marker.exists() {
        assert!(Instant::now() < deadline, "never started:\n{}", first.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    first.stop_with(libc::SIGKILL);
    let _second = farm.worker("survivor");
    let out = running.finish(Duration::from_secs(90));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stderr}\n{}",
        farm.server.log()
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let job = action(&report, "job:build");
    assert_eq!(job["ran_on"]["worker"], "survivor", "{report:#}");
    assert_eq!(
        std::fs::read_to_string(clone.path().join("out/x")).unwrap(),
        "done\n"
    );
}

#[test]
fn an_engine_that_is_down_costs_one_warning_and_the_run_goes_on_here() {
    let clone = TempDir::new();
    write_farm(
        clone.path(),
        "\n[targets.a.capabilities.lint]\ncommand = \"true\"\nlocal = true\n",
    );
    let url = format!("grpc://127.0.0.1:{}", free_port());
    let (report, stderr, code) = run_json(once(
        clone.path(),
        &[
            "run",
            "--all",
            "build",
            "--remote-exec",
            &url,
            "--json",
            "--remote-jobs",
            "8",
        ],
    ));
    assert_eq!(code, Some(0), "{report:#}\n{stderr}");
    assert_eq!(report["counts"]["ran"], 6);
    let warning = report["execution"]["warning"].as_str().unwrap();
    assert!(warning.contains("running the actions here"), "{warning}");
    assert_eq!(
        stderr.matches("without remote execution").count(),
        1,
        "{stderr}"
    );
    assert_eq!(report["execution"]["local"], 6);
    let lib = action(&report, "lib:build");
    assert_eq!(lib["ran_on"]["place"], "local");
    assert_eq!(
        lib["ran_on"]["because"], "remote execution went off in this run",
        "{lib:#}"
    );
    // A local-only action says why it stayed, whatever the engine.
    let (report, _, code) = run_json(once(
        clone.path(),
        &["run", "a:lint", "--remote-exec", &url, "--json"],
    ));
    assert_eq!(code, Some(0));
    assert_eq!(
        action(&report, "a:lint")["ran_on"]["because"],
        "`local = true`"
    );
}

#[test]
fn an_action_the_engine_refuses_runs_here_and_the_others_still_go_to_the_engine() {
    let farm = Farm::start(10);
    let worker = farm.worker("only");
    let clone = TempDir::new();
    write_farm(
        clone.path(),
        "\n[targets.a.capabilities.image]\ncommand = \"echo in an image\"\n\
         platform = { container-image = \"docker://nowhere:1\" }\n",
    );
    let url = farm.server.url.clone();
    let (report, stderr, code) = run_json(once(
        clone.path(),
        &[
            "run",
            "a:image",
            "lib:build",
            "--remote-exec",
            &url,
            "--json",
        ],
    ));
    assert_eq!(code, Some(0), "{report:#}\n{stderr}\n{}", worker.log());
    let image = action(&report, "a:image");
    assert_eq!(image["ran_on"]["place"], "local", "{image:#}");
    let because = image["ran_on"]["because"].as_str().unwrap();
    assert!(because.starts_with("the engine refused it"), "{because}");
    assert_eq!(action(&report, "lib:build")["ran_on"]["place"], "remote");
    assert!(report["execution"].get("warning").is_none(), "{report:#}");
}

/// `once_run` and `once_query_runs` through MCP with the engine named in the server's
/// environment: every answer, a remote success, a local-only action and a remote failure,
/// matches the tool's own output schema under a 2020-12 validator, as the SDKs check it.
#[test]
fn mcp_answers_of_a_run_on_the_engine_match_their_output_schemas() {
    let farm = Farm::start(10);
    let worker = farm.worker("only");
    let clone = TempDir::new();
    write_farm(
        clone.path(),
        "\n[targets.a.capabilities.lint]\ncommand = \"true\"\nlocal = true\n\
         [targets.a.capabilities.broken]\ncommand = \"echo no >&2; exit 4\"\n",
    );
    let mut command = once(clone.path(), &["mcp", "--allow-run"]);
    command.env("ONCE_REMOTE_EXEC", &farm.server.url);
    let mut mcp = crate::support::Mcp::from_command(command);
    mcp.initialize();
    let tools = mcp.tools(1);
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler.set_default_draft(boon::Draft::V2020_12);
    let mut index = std::collections::BTreeMap::new();
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        if name == "once_run" || name == "once_query_runs" {
            let url = format!("https://once.invalid/{name}.json");
            compiler
                .add_resource(&url, tool["outputSchema"].clone())
                .unwrap();
            index.insert(
                name.to_owned(),
                compiler.compile(&url, &mut schemas).unwrap(),
            );
        }
    }
    let check = |tool: &str, reply: &Value| {
        let content = &reply["result"]["structuredContent"];
        if let Err(e) = schemas.validate(content, index[tool]) {
            panic!("{tool} answers outside its schema: {e:#}\n{content:#}");
        }
    };
    let mut id = 10;
    for (target, outcome) in [
        ("lib:build", "done"),
        ("a:lint", "done"),
        ("a:broken", "problem"),
    ] {
        id += 1;
        let reply = mcp.call(id, "once_run", json!({"target": target}));
        check("once_run", &reply);
        let content = &reply["result"]["structuredContent"];
        assert_eq!(content["outcome"], outcome, "{reply}\n{}", worker.log());
        let result = &content["result"];
        assert!(result["execution"].is_object(), "{reply}");
        let place = if target == "a:lint" {
            "local"
        } else {
            "remote"
        };
        let row = action(result, target);
        assert_eq!(row["ran_on"]["place"], place, "{reply}");
        id += 1;
        let run_id = result["run_id"].as_str().unwrap();
        let page = mcp.call(id, "once_query_runs", json!({"run_id": run_id}));
        check("once_query_runs", &page);
    }
}
