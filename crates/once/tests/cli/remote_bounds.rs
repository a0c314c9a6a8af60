//! `once run` against a hostile remote cache (`once-remote/tests/support/hostile_cache.rs`, on
//! loopback): a result claiming an absurd size, a blob that streams garbage forever or 1 GiB of
//! wrong bytes, a gRPC length prefix of 4 GiB, a batch answer with blobs nobody asked for. Each
//! run ends with one clear warning and runs the action locally, never aborts, and stays under
//! 128 MiB of peak memory (measured with `wait4`, the child's own `ru_maxrss`, from a small
//! measurer process so that the test process's own memory is never charged to it). Every server
//! stops with its test.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use once_remote::{digest_of, reapi};
use serde_json::Value;

use crate::support::{TempDir, once_binary};

use crate::hostile_cache::{BatchPlan, HostileCache, Plan, ReadPlan};

/// The most a run may take here before the test fails instead of hanging.
const RUN_LIMIT: Duration = Duration::from_secs(120);
/// The peak memory no server may push `once run` past.
const RSS_LIMIT_KIB: i64 = 128 * 1024;

/// One target whose build writes `out/big.bin` (and `out/small.txt`) locally.
/// A `[cache]` deadline far past what any answer here takes on a loaded machine: in the tests
/// that use it the content of an answer decides, never the time it took.
const PATIENT: &str = "[cache]\ntimeout = \"60s\"\n";

fn workspace(cache: &str) -> TempDir {
    let dir = TempDir::new();
    let manifest = format!(
        "{cache}\n[workspace]\nname = \"w\"\n\n[targets.app]\nkind = \"command\"\n\
         [targets.app.capabilities.build]\n\
         command = \"mkdir -p out && echo local > out/big.bin && echo local > out/small.txt\"\n\
         outputs = [\"out/**\"]\n"
    );
    std::fs::write(dir.path().join("once.toml"), manifest).expect("writes the manifest");
    dir
}

/// A result whose one output is `path` with `digest`.
fn result_with(path: &str, digest: reapi::Digest) -> reapi::ActionResult {
    reapi::ActionResult {
        output_files: vec![reapi::OutputFile {
            path: path.to_owned(),
            digest: Some(digest),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// A digest of `size` bytes whose hash matches no bytes the server will send.
fn lying(size: i64) -> reapi::Digest {
    reapi::Digest {
        hash: "0".repeat(64),
        size_bytes: size,
    }
}

/// What a measured run of `once` gave.
struct Measured {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    peak_kib: i64,
}

impl Measured {
    fn warnings(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| l.starts_with("warning:"))
            .collect()
    }

    /// The run succeeded, locally, with one warning that says `expected`.
    fn ran_locally_warning(&self, expected: &str) {
        let context = format!("{}\n--- stderr\n{}", self.stdout, self.stderr);
        assert_eq!(self.status.signal(), None, "`once` was killed: {context}");
        assert_eq!(self.status.code(), Some(0), "{context}");
        let report: Value = serde_json::from_str(&self.stdout).expect("a report");
        let row = &report["actions"][0];
        assert_eq!(row["status"], "succeeded", "{context}");
        assert_ne!(row["remote"], true, "{context}");
        let warnings = self.warnings();
        assert_eq!(warnings.len(), 1, "{context}");
        assert!(warnings[0].contains(expected), "{context}");
        assert!(
            self.peak_kib < RSS_LIMIT_KIB,
            "peak RSS {} KiB: {context}",
            self.peak_kib
        );
    }
}

/// Runs `once -C root run app:build --json --no-remote-upload --remote-cache URL EXTRA` to its
/// end (failing the test after [`RUN_LIMIT`]) and measures its peak RSS.
fn run(root: &Path, url: &str, extra: &[&str]) -> Measured {
    let mut args: Vec<OsString> = vec!["-C".into(), root.into()];
    args.extend(
        [
            "run",
            "app:build",
            "--json",
            "--no-remote-upload",
            "--remote-cache",
            url,
        ]
        .iter()
        .chain(extra)
        .map(OsString::from),
    );
    measure(&args)
}

/// Runs `once ARGS` to its end (failing the test after [`RUN_LIMIT`]) with none of the remote
/// settings of the environment, and measures its own peak RSS.
///
/// The child is started by a small measurer, this test binary run again with [`MEASURER`] set:
/// Linux counts the address space a process had before `exec` in its peak, so a `once` started
/// straight from this process, which hosts the fake servers and every other test of the binary,
/// would be charged for all of them (268 MiB for `once --version` beside 256 MiB of ballast).
/// Started from the measurer, it is charged only the measurer's few MiB, which errs on the
/// safe side.
fn measure(args: &[OsString]) -> Measured {
    let dir = TempDir::new();
    let joined = args
        .iter()
        .map(|a| a.as_bytes())
        .collect::<Vec<_>>()
        .join(&0u8);
    std::fs::write(dir.path().join("args"), joined).expect("writes the arguments");
    let mut command = Command::new(std::env::current_exe().expect("the test binary"));
    command
        .args(["--exact", MEASURER_TEST, "--nocapture", "--test-threads=1"])
        .env(MEASURER, dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for var in REMOTE_SETTINGS {
        command.env_remove(var);
    }
    let measurer = command.output().expect("runs the measurer");
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap_or_default();
    let measured = read("measured");
    let (status, peak_kib) = measured.split_once(' ').unwrap_or_else(|| {
        panic!(
            "the measurer said nothing ({:?}): {}",
            measurer.status,
            String::from_utf8_lossy(&measurer.stderr)
        )
    });
    Measured {
        status: ExitStatus::from_raw(status.parse().expect("a wait status")),
        stdout: read("stdout"),
        stderr: read("stderr"),
        peak_kib: peak_kib.trim().parse().expect("a peak in KiB"),
    }
}

/// Set in the re-executed test binary that measures one `once`: the folder holding its
/// arguments (`args`, separated by NUL) that receives its output and what was measured.
const MEASURER: &str = "ONCE_TEST_MEASURER_DIR";
/// The test that plays the measurer when [`MEASURER`] is set.
const MEASURER_TEST: &str =
    "remote_bounds::the_peak_measured_is_the_child_own_not_the_test_process";

/// The measurer's part: starts `once` with the arguments in `dir`, reaps it with `wait4` (its own
/// `ru_maxrss`), kills it after [`RUN_LIMIT`], and writes `STATUS PEAK_KIB` to `dir/measured`.
// `wait4` reaps the child (for its rusage) on every path that returns, which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn measure_here(dir: &Path) {
    let args = std::fs::read(dir.join("args")).expect("reads the arguments");
    let args = args.split(|b| *b == 0).map(OsStr::from_bytes);
    let file = |name: &str| std::fs::File::create(dir.join(name)).expect("creates an output");
    let mut child = Command::new(once_binary())
        .args(args)
        .stdin(Stdio::null())
        .stdout(file("stdout"))
        .stderr(file("stderr"))
        .spawn()
        .expect("starts once");
    let pid = child.id() as libc::pid_t;
    let deadline = Instant::now() + RUN_LIMIT;
    let (status, peak_kib) = loop {
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `pid` is our own child, not yet reaped; the pointers are to live locals.
        let got = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if got == pid {
            break (status, usage.ru_maxrss);
        }
        assert!(got == 0, "wait4: {}", std::io::Error::last_os_error());
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`once` took more than {RUN_LIMIT:?}");
        }
        // Polling a child's exit, with a bounded deadline: nothing waits on this pause.
        std::thread::sleep(Duration::from_millis(20));
    };
    std::fs::write(dir.join("measured"), format!("{status} {peak_kib}"))
        .expect("writes the measurement");
}

/// The variables that would point `once` at another cache or change its limits.
const REMOTE_SETTINGS: [&str; 6] = [
    "ONCE_LOG",
    "ONCE_REMOTE_CACHE",
    "ONCE_REMOTE_HEADERS",
    "ONCE_REMOTE_HEADERS_FILE",
    "ONCE_REMOTE_MAX_BLOB",
    "ONCE_REMOTE_MAX_RESULT",
];

/// The test process hosts every fake server and every other test of this binary, and may hold
/// far more memory than any `once` it starts: none of it may count as the child's. (Linux
/// records the old address space's high-water mark as the new program's at `exec`, and the child
/// of `posix_spawn` or `fork` starts from the test process's own.)
#[test]
fn the_peak_measured_is_the_child_own_not_the_test_process() {
    if let Some(dir) = std::env::var_os(MEASURER) {
        measure_here(Path::new(&dir));
        return;
    }
    // Twice the bound, each page written, held while the child runs.
    let ballast = vec![1u8; 2 * RSS_LIMIT_KIB as usize * 1024];
    let measured = measure(&["--version".into()]);
    assert_eq!(measured.status.code(), Some(0), "{}", measured.stderr);
    eprintln!("peak RSS of `once --version`: {} KiB", measured.peak_kib);
    assert!(
        measured.peak_kib < RSS_LIMIT_KIB / 4,
        "`once --version` measured at {} KiB while the test process held {} KiB",
        measured.peak_kib,
        std::hint::black_box(&ballast).len() / 1024
    );
}

/// No staging file of a download is left in the cache.
fn no_staging_left(root: &Path) {
    let cas = root.join(".once/cache/cas");
    let Ok(entries) = std::fs::read_dir(&cas) else {
        return;
    };
    let left: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".blob."))
        .collect();
    assert!(left.is_empty(), "staging files left: {left:?}");
}

#[test]
fn a_result_claiming_the_largest_size_is_a_miss_said_once() {
    let server = HostileCache::start(Plan {
        result: Some(result_with("out/big.bin", lying(i64::MAX))),
        // A short answer, so a client that trusted the size would go on to allocate it.
        read: ReadPlan::Fill {
            fill: 0x41,
            total: Some(1 << 20),
        },
        ..Plan::empty()
    });
    let root = workspace(PATIENT);
    let run = run(root.path(), &server.url(), &[]);
    run.ran_locally_warning(
        "of 9223372036854775807 bytes, over the limit of 1073741824 bytes per blob",
    );
    assert!(
        run.warnings()[0].contains("`--remote-max-blob`"),
        "{}",
        run.stderr
    );
    eprintln!(
        "peak RSS against a claim of 2^63-1 bytes: {} KiB",
        run.peak_kib
    );
    // The size alone decided: no blob was asked for.
    assert!(!server.seen().iter().any(|s| s.path.ends_with("/Read")));
}

#[test]
fn a_claim_of_2_gib_streaming_garbage_forever_ends_at_the_timeout_in_bounded_memory() {
    let server = HostileCache::start(Plan {
        result: Some(result_with("out/big.bin", lying(2 << 30))),
        read: ReadPlan::Fill {
            fill: 0x41,
            total: None,
        },
        ..Plan::empty()
    });
    let root = workspace("[cache]\ntimeout = \"1500ms\"\n");
    // Limits raised past the claim, so the client downloads and the stream itself is tested.
    let run = run(root.path(), &server.url(), &["--remote-max-blob", "3GiB"]);
    // The stream never ends, so the deadline does; on a loaded machine it may strike an earlier
    // call of the same lookup first, which bounds the run just the same.
    run.ran_locally_warning("within 1500 ms");
    no_staging_left(root.path());
}

#[test]
fn a_blob_twice_the_memory_bound_of_the_right_length_and_the_wrong_bytes_is_refused() {
    // Twice the peak RSS allowed, so a client that held the blob in memory would fail; larger
    // sizes only make a debug build on a loaded machine slower (1 GiB peaked at 25.9 MiB too).
    const SIZE: i64 = 2 * RSS_LIMIT_KIB * 1024;
    let server = HostileCache::start(Plan {
        result: Some(result_with("out/big.bin", lying(SIZE))),
        read: ReadPlan::Fill {
            fill: 0,
            total: Some(SIZE as u64),
        },
        ..Plan::empty()
    });
    // A deadline far past what the transfer takes on any machine: the digest must decide.
    let root = workspace("[cache]\ntimeout = \"600s\"\n");
    let run = run(root.path(), &server.url(), &[]);
    run.ran_locally_warning("does not match its digest");
    eprintln!(
        "peak RSS streaming {} MiB: {} KiB",
        SIZE >> 20,
        run.peak_kib
    );
    no_staging_left(root.path());
}

#[test]
fn a_length_prefix_of_4_gib_is_refused_at_once() {
    let server = HostileCache::start(Plan {
        result: Some(result_with("out/big.bin", lying(100 << 20))),
        read: ReadPlan::Prefix(u32::MAX),
        ..Plan::empty()
    });
    let root = workspace("[cache]\ntimeout = \"100s\"\n");
    let run = run(root.path(), &server.url(), &[]);
    run.ran_locally_warning("a message of 4294967295 bytes, over the limit");
    no_staging_left(root.path());
}

#[test]
fn a_batch_answer_with_more_blobs_than_asked_is_refused() {
    let blob = Bytes::from_static(b"asked for\n");
    for plan in [
        BatchPlan::Extra(vec![blob.clone()]),
        BatchPlan::Twice(vec![blob.clone()]),
    ] {
        let server = HostileCache::start(Plan {
            result: Some(result_with("out/small.txt", digest_of(&blob))),
            batch: plan,
            ..Plan::empty()
        });
        let root = workspace(PATIENT);
        let run = run(root.path(), &server.url(), &[]);
        run.ran_locally_warning("2 blobs in the answer, 1 asked for");
        let small = std::fs::read(root.path().join("out/small.txt")).expect("built");
        assert_eq!(small, b"local\n", "the server's bytes were restored");
    }
}

#[test]
fn an_honest_large_blob_is_streamed_into_place_and_replayed() {
    let data = Bytes::from(vec![b'x'; 3 << 20]);
    let server = HostileCache::start(Plan {
        result: Some(result_with("out/big.bin", digest_of(&data))),
        read: ReadPlan::Blob(data.clone()),
        ..Plan::empty()
    });
    let root = workspace(PATIENT);
    let run = run(root.path(), &server.url(), &[]);
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).expect("a report");
    assert_eq!(report["actions"][0]["remote"], true, "{report}");
    assert!(run.warnings().is_empty(), "{}", run.stderr);
    let restored = std::fs::read(root.path().join("out/big.bin")).expect("restored");
    assert!(restored == data, "the restored output differs");
    no_staging_left(root.path());
}
