//! `once worker` against a real BuildGrid with remote execution (its SQL scheduler on a fresh
//! PostgreSQL cluster, see `once-remote/tests/support/`): actions sent with `Execute` run on the
//! workers and their outputs, stdout, stderr and exit code come back; a worker that is stopped
//! closes its session, so the server gives the next action to another. Every server and worker
//! is stopped when its test ends; nothing reaches beyond loopback.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use once_remote::{Blob, Bytes, Client, digest_of, reapi};
use prost::Message;

use crate::support::{TempDir, once_binary};

use crate::buildgrid::{self, BuildGrid, bgd_path};
use crate::postgres::Postgres;

/// The bound of one test's wait for an action: queueing, two workers and BuildGrid share two
/// cores with other builds.
pub(crate) const ACTION_LIMIT: Duration = Duration::from_secs(60);

/// A remote execution server and the database under it, stopped in that order on drop.
pub(crate) struct Farm {
    pub(crate) server: BuildGrid,
    _database: Postgres,
    pub(crate) scratch: TempDir,
}

impl Farm {
    /// A server whose bots lose their session after `keepalive` seconds of silence.
    pub(crate) fn start(keepalive: u32) -> Farm {
        let database = Postgres::start(&bgd_path());
        let server = BuildGrid::start_execution(&database.url, keepalive);
        Farm {
            server,
            _database: database,
            scratch: TempDir::new(),
        }
    }

    fn client(&self) -> Client {
        Client::connect(&self.server.url, "", vec![], Duration::from_secs(20)).unwrap()
    }

    pub(crate) fn worker(&self, name: &str) -> Worker {
        Worker::start(&self.server.url, name, self.scratch.path())
    }
}

/// A running `once worker`, killed on drop.
pub(crate) struct Worker {
    pub(crate) child: Child,
    log: PathBuf,
}

impl Worker {
    fn start(url: &str, name: &str, scratch: &Path) -> Worker {
        let log = scratch.join(format!("{name}.log"));
        let file = std::fs::File::create(&log).unwrap();
        let child = Command::new(once_binary())
            .args(["worker", "--server", url, "--bot-id", name, "--scratch"])
            .arg(scratch)
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap();
        let mut worker = Worker { child, log };
        worker.wait_for("working for");
        worker
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Polls the log until it holds `text`; bounded, and fails early if the worker exits.
    pub(crate) fn wait_for(&mut self, text: &str) {
        let deadline = Instant::now() + ACTION_LIMIT;
        while !self.log().contains(text) {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("the worker exited with {status}:\n{}", self.log());
            }
            assert!(Instant::now() < deadline, "no `{text}` in:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends `signal` and waits (bounded) for the worker to exit; its exit code.
    pub(crate) fn stop_with(&mut self, signal: i32) -> Option<i32> {
        let pid = i32::try_from(self.child.id()).unwrap();
        // SAFETY: signals the worker this test started.
        unsafe { libc::kill(pid, signal) };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            assert!(
                Instant::now() < deadline,
                "the worker did not stop:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Uploads an action that runs `arguments` over the input `files` (path, bytes) and declares
/// `outputs`; its digest.
fn upload_action(
    client: &Client,
    files: &[(&str, &[u8])],
    arguments: &[&str],
    outputs: &[&str],
) -> reapi::Digest {
    let mut blobs: Vec<(reapi::Digest, Bytes)> = Vec::new();
    let root = directory(files, &mut blobs);
    let command = reapi::Command {
        arguments: arguments.iter().map(|a| a.to_string()).collect(),
        output_paths: outputs.iter().map(|o| o.to_string()).collect(),
        environment_variables: vec![reapi::command::EnvironmentVariable {
            name: "GREETING".into(),
            value: "hello from the client".into(),
        }],
        ..Default::default()
    };
    let command_digest = add(&mut blobs, command.encode_to_vec());
    let action = reapi::Action {
        command_digest: Some(command_digest),
        input_root_digest: Some(root),
        do_not_cache: true,
        ..Default::default()
    };
    let action_digest = add(&mut blobs, action.encode_to_vec());
    client.batch_update_blobs(&blobs).unwrap();
    action_digest
}

/// The Merkle tree of `files`, one level of folders deep at most (`dir/name` or `name`).
fn directory(files: &[(&str, &[u8])], blobs: &mut Vec<(reapi::Digest, Bytes)>) -> reapi::Digest {
    let mut root = reapi::Directory::default();
    let mut folders: std::collections::BTreeMap<&str, reapi::Directory> = Default::default();
    for (path, data) in files {
        let node = |name: &str, blobs: &mut Vec<_>| reapi::FileNode {
            name: name.into(),
            digest: Some(add(blobs, data.to_vec())),
            ..Default::default()
        };
        match path.split_once('/') {
            Some((folder, name)) => folders
                .entry(folder)
                .or_default()
                .files
                .push(node(name, blobs)),
            None => root.files.push(node(path, blobs)),
        }
    }
    for (name, folder) in folders {
        let digest = add(blobs, folder.encode_to_vec());
        root.directories.push(reapi::DirectoryNode {
            name: name.into(),
            digest: Some(digest),
        });
    }
    add(blobs, root.encode_to_vec())
}

fn add(blobs: &mut Vec<(reapi::Digest, Bytes)>, data: Vec<u8>) -> reapi::Digest {
    let digest = digest_of(&data);
    blobs.push((digest.clone(), Bytes::from(data)));
    digest
}

fn read(client: &Client, digest: &reapi::Digest) -> Vec<u8> {
    match client.read_blob(digest, &std::env::temp_dir()).unwrap() {
        Some(Blob::Memory(bytes)) => bytes.to_vec(),
        Some(Blob::File(file)) => std::fs::read(file.path()).unwrap(),
        None => panic!("no blob {digest:?}"),
    }
}

fn execute(farm: &Farm, workers: &[&Worker], action: &reapi::Digest) -> reapi::ActionResult {
    let client = farm.client();
    let response = client
        .execute(action, true, ACTION_LIMIT, |_| {})
        .unwrap_or_else(|e| {
            let logs: Vec<String> = workers.iter().map(|w| w.log()).collect();
            panic!(
                "{e}\nworkers:\n{}\nserver:\n{}",
                logs.join("\n"),
                farm.server.log()
            )
        });
    let status = response.status.clone().unwrap_or_default();
    assert_eq!(status.code, 0, "{}", status.message);
    response.result.expect("a result")
}

#[test]
fn an_action_runs_on_a_worker_and_its_outputs_stdout_and_stderr_come_back() {
    let farm = Farm::start(10);
    let first = farm.worker("first");
    let second = farm.worker("second");
    let client = farm.client();
    let action = upload_action(
        &client,
        &[
            ("in/a.txt", b"input bytes\n"),
            // The same blob twice: fetched once, laid out in both places.
            ("in/copy.txt", b"input bytes\n"),
            ("tool.sh", b"echo tool\n"),
        ],
        &[
            "sh",
            "-c",
            "cat in/a.txt in/copy.txt > out/b.txt; echo \"$GREETING\"; echo oops >&2; sh tool.sh",
        ],
        &["out/b.txt", "out/never.txt"],
    );
    let result = execute(&farm, &[&first, &second], &action);
    assert_eq!(result.exit_code, 0);
    assert_eq!(result.output_files.len(), 1, "{result:?}");
    let output = &result.output_files[0];
    assert_eq!(output.path, "out/b.txt");
    let b = read(&client, output.digest.as_ref().unwrap());
    assert_eq!(b, b"input bytes\ninput bytes\n");
    let stdout = read(&client, result.stdout_digest.as_ref().unwrap());
    assert_eq!(
        String::from_utf8_lossy(&stdout),
        "hello from the client\ntool\n"
    );
    let stderr = read(&client, result.stderr_digest.as_ref().unwrap());
    assert_eq!(String::from_utf8_lossy(&stderr), "oops\n");
}

#[test]
fn a_failing_action_reports_its_exit_code_and_stderr() {
    let farm = Farm::start(10);
    let worker = farm.worker("only");
    let client = farm.client();
    let action = upload_action(&client, &[], &["sh", "-c", "cat missing.txt; exit 3"], &[]);
    let result = execute(&farm, &[&worker], &action);
    assert_eq!(result.exit_code, 3);
    let stderr = read(&client, result.stderr_digest.as_ref().unwrap());
    let stderr = String::from_utf8_lossy(&stderr);
    assert!(stderr.contains("missing.txt"), "{stderr}");
}

#[test]
fn a_stopped_worker_closes_its_session_so_the_next_action_goes_to_another() {
    // Sessions outlive the test: only a closed one keeps the server from handing the action to
    // the stopped worker, where it would wait for a minute.
    let farm = Farm::start(60);
    let mut first = farm.worker("first");
    assert_eq!(first.stop_with(libc::SIGTERM), Some(128 + libc::SIGTERM));
    let client = farm.client();
    let action = upload_action(&client, &[], &["sh", "-c", "echo ran"], &[]);
    let url = farm.server.url.clone();
    let waiting = std::thread::spawn(move || {
        let client = Client::connect(&url, "", vec![], Duration::from_secs(20)).unwrap();
        let started = Instant::now();
        let response = client.execute(&action, true, Duration::from_secs(30), |_| {});
        (response, started.elapsed())
    });
    let _second = farm.worker("second");
    let (response, took) = waiting.join().unwrap();
    let result = response
        .unwrap_or_else(|e| {
            panic!(
                "{e}\nfirst:\n{}\nserver:\n{}",
                first.log(),
                farm.server.log()
            )
        })
        .result
        .unwrap();
    assert_eq!(result.exit_code, 0);
    let stdout = read(&client, result.stdout_digest.as_ref().unwrap());
    assert_eq!(stdout, b"ran\n");
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

#[test]
fn a_worker_stopped_mid_action_gives_it_back_at_once_and_leaves_no_command_behind() {
    // Sessions outlive the test: only a lease given back reaches the second worker in time.
    let farm = Farm::start(60);
    let mut first = farm.worker("busy");
    let client = farm.client();
    let marker = farm.scratch.path().join("started");
    let script = format!(
        "if [ -e '{m}' ]; then echo second try; else touch '{m}'; exec sleep 120; fi",
        m = marker.display()
    );
    let action = upload_action(&client, &[], &["sh", "-c", &script], &[]);
    let url = farm.server.url.clone();
    let waiting = std::thread::spawn(move || {
        let client = Client::connect(&url, "", vec![], Duration::from_secs(20)).unwrap();
        let started = Instant::now();
        let response = client.execute(&action, true, Duration::from_secs(60), |_| {});
        (response, started.elapsed())
    });
    let deadline = Instant::now() + ACTION_LIMIT;
    while !marker.exists() {
        assert!(
            Instant::now() < deadline,
            "the action never started:\n{}",
            first.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(first.stop_with(libc::SIGINT), Some(128 + libc::SIGINT));
    // The action ran in a folder under the scratch one: nothing may still run there.
    let left: Vec<PathBuf> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| std::fs::read_link(entry.path().join("cwd")).ok())
        .filter(|cwd| cwd.starts_with(farm.scratch.path()))
        .collect();
    assert!(
        left.is_empty(),
        "the action outlived its worker, in {left:?}"
    );
    let _second = farm.worker("fresh");
    let (response, took) = waiting.join().unwrap();
    let response = response.unwrap_or_else(|e| panic!("{e}\nfirst:\n{}", first.log()));
    let status = response.status.unwrap_or_default();
    assert_eq!(
        status.code,
        0,
        "{}\nfirst:\n{}",
        status.message,
        first.log()
    );
    let result = response.result.unwrap();
    assert_eq!(result.exit_code, 0);
    assert_eq!(
        read(&client, result.stdout_digest.as_ref().unwrap()),
        b"second try\n"
    );
    // Not a minute of silence: the server heard from the first worker that it gave up.
    assert!(took < Duration::from_secs(45), "took {took:?}");
}

#[test]
fn a_worker_whose_server_goes_away_says_so_and_exits() {
    let mut farm = Farm::start(5);
    let mut worker = farm.worker("orphan");
    farm.server.stop();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = worker.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the worker kept going:\n{}",
            worker.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(1), "{}", worker.log());
    assert!(
        worker.log().contains("lost the server at"),
        "{}",
        worker.log()
    );
}

#[test]
fn a_server_that_does_not_execute_or_cannot_be_reached_is_a_clear_error() {
    let cache = BuildGrid::start();
    let scratch = TempDir::new();
    let out = Command::new(once_binary())
        .args(["worker", "--server", &cache.url, "--scratch"])
        .arg(scratch.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("does not execute actions"), "{stderr}");
    assert!(stderr.contains("`--server`"), "{stderr}");
    let port = buildgrid::free_port();
    let out = Command::new(once_binary())
        .args(["worker", "--server", &format!("grpc://127.0.0.1:{port}")])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot join the server at"), "{stderr}");
    let out = Command::new(once_binary())
        .args([
            "worker",
            "--server",
            "grpc://127.0.0.1:1",
            "--property",
            "no-equals",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is not `NAME=VALUE`"), "{stderr}");
    let out = Command::new(once_binary())
        .args(["worker", "--server", "http://127.0.0.1:1"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("`grpc://host:port`"), "{stderr}");
}
