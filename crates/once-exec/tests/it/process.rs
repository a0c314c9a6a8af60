//! How a run starts, what it sees and what it captures.

use std::collections::BTreeSet;
use std::mem::MaybeUninit;
use std::time::Duration;

use once_exec::{BASE_ENV, Cancel, EnvMode, LINE_CAP, Registry, Status, base_env, run};

use crate::{Fixture, MARK_VAR};

#[test]
fn exit_codes_and_signals_are_reported() {
    let fixture = Fixture::new();
    let registry = Registry::new();
    let cancel = Cancel::new();
    let outcome = run(&fixture.spec("true"), &registry, &cancel).unwrap();
    assert_eq!(outcome.status, Status::Exited { code: 0 });
    assert!(outcome.success());
    let outcome = run(&fixture.spec("exit 3"), &registry, &cancel).unwrap();
    assert_eq!(outcome.status, Status::Exited { code: 3 });
    assert!(!outcome.success());
    let outcome = run(&fixture.spec("kill -KILL $$"), &registry, &cancel).unwrap();
    assert_eq!(
        outcome.status,
        Status::Signaled {
            signal: libc::SIGKILL
        }
    );
    assert!(registry.live_groups().is_empty());
}

#[test]
fn a_missing_working_directory_fails_to_start() {
    let fixture = Fixture::new();
    let mut spec = fixture.spec("true");
    spec.cwd = fixture.dir.join("missing");
    let outcome = run(&spec, &Registry::new(), &Cancel::new()).unwrap();
    let Status::FailedToStart { message } = &outcome.status else {
        panic!("{outcome:?}")
    };
    assert!(message.contains("missing"), "{message}");
    assert!(!outcome.success());
}

#[test]
fn a_cancelled_token_starts_nothing() {
    let fixture = Fixture::new();
    let cancel = Cancel::new();
    cancel.cancel();
    let outcome = run(&fixture.spec("echo ran"), &Registry::new(), &cancel).unwrap();
    assert_eq!(outcome.status, Status::Cancelled);
    assert!(outcome.tail.is_empty());
    assert_eq!(outcome.log_bytes, 0);
}

#[test]
fn stdin_is_closed() {
    let fixture = Fixture::new();
    let outcome = run(
        &fixture.spec("cat; echo done"),
        &Registry::new(),
        &Cancel::new(),
    )
    .unwrap();
    assert_eq!(outcome.status, Status::Exited { code: 0 });
    assert_eq!(outcome.tail, ["done"]);
}

#[test]
fn the_child_has_no_blocked_signals_and_a_default_sigpipe() {
    let fixture = Fixture::new();
    // Block what the `once` binary blocks, in this thread only, so the child would inherit it.
    let mut set = MaybeUninit::<libc::sigset_t>::zeroed();
    let mut old = MaybeUninit::<libc::sigset_t>::zeroed();
    unsafe {
        libc::sigemptyset(set.as_mut_ptr());
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(set.as_mut_ptr(), signal);
        }
        assert_eq!(
            libc::pthread_sigmask(libc::SIG_BLOCK, set.as_ptr(), old.as_mut_ptr()),
            0
        );
    }
    let outcome = run(
        &fixture.spec("grep -E '^Sig(Blk|Ign):' /proc/self/status"),
        &Registry::new(),
        &Cancel::new(),
    );
    unsafe {
        assert_eq!(
            libc::pthread_sigmask(libc::SIG_SETMASK, old.as_ptr(), std::ptr::null_mut()),
            0
        );
    }
    let outcome = outcome.unwrap();
    assert!(outcome.success(), "{outcome:?}");
    let field = |name: &str| {
        let line = outcome
            .tail
            .iter()
            .find(|line| line.starts_with(name))
            .unwrap();
        u64::from_str_radix(line[name.len()..].trim(), 16).unwrap()
    };
    assert_eq!(field("SigBlk:"), 0, "{:?}", outcome.tail);
    assert_eq!(
        field("SigIgn:") & (1 << (libc::SIGPIPE - 1)),
        0,
        "{:?}",
        outcome.tail
    );
}

#[test]
fn loose_mode_passes_the_whole_environment_and_the_declared_variables() {
    let fixture = Fixture::new();
    let mut spec = fixture.spec("env");
    spec.env.insert("DECLARED".into(), "yes".into());
    spec.tail_lines = 1000;
    let outcome = run(&spec, &Registry::new(), &Cancel::new()).unwrap();
    assert!(outcome.success());
    assert!(outcome.tail.iter().any(|line| line == "DECLARED=yes"));
    // Cargo sets it for the tests it runs; it is in no list of ours.
    let manifest_dir = format!("CARGO_MANIFEST_DIR={}", env!("CARGO_MANIFEST_DIR"));
    assert!(outcome.tail.contains(&manifest_dir), "{:?}", outcome.tail);
}

#[test]
fn strict_mode_passes_the_base_plus_the_declared_variables() {
    let fixture = Fixture::new();
    let mut spec = fixture.spec("env");
    spec.env_mode = EnvMode::Strict { pass: Vec::new() };
    spec.env.insert("DECLARED".into(), "yes".into());
    spec.tail_lines = 1000;
    let outcome = run(&spec, &Registry::new(), &Cancel::new()).unwrap();
    assert!(outcome.success());
    let seen: BTreeSet<(String, String)> = outcome
        .tail
        .iter()
        .filter_map(|line| line.split_once('='))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect();
    assert!(seen.contains(&("DECLARED".to_owned(), "yes".to_owned())));
    for (name, value) in base_env() {
        assert!(seen.contains(&(name.clone(), value)), "{name} not passed");
    }
    // What the shell sets for itself is allowed; anything else leaked from the test process.
    let shell_own = ["PWD", "OLDPWD", "SHLVL", "_"];
    for (name, _) in &seen {
        assert!(
            BASE_ENV.contains(&name.as_str())
                || shell_own.contains(&name.as_str())
                || name == "DECLARED"
                || name == MARK_VAR,
            "{name} leaked into the child"
        );
    }
}

#[test]
fn the_log_keeps_each_stream_in_order_and_the_tail_is_bounded() {
    let fixture = Fixture::new();
    let mut spec = fixture.spec(
        r#"i=1; while [ $i -le 300 ]; do echo "out $i"; echo "err $i" >&2; i=$((i+1)); done"#,
    );
    spec.tail_lines = 10;
    let outcome = run(&spec, &Registry::new(), &Cancel::new()).unwrap();
    assert!(outcome.success());
    let log = std::fs::read_to_string(&outcome.log_path).unwrap();
    assert_eq!(outcome.log_bytes, log.len() as u64);
    let numbers = |prefix: &str, lines: &mut dyn Iterator<Item = &str>| -> Vec<u32> {
        lines
            .filter_map(|line| line.strip_prefix(prefix))
            .map(|n| n.parse().unwrap())
            .collect()
    };
    assert_eq!(
        numbers("out ", &mut log.lines()),
        (1..=300).collect::<Vec<_>>()
    );
    assert_eq!(
        numbers("err ", &mut log.lines()),
        (1..=300).collect::<Vec<_>>()
    );
    assert_eq!(log.lines().count(), 600);
    assert_eq!(outcome.tail.len(), 10);
    for prefix in ["out ", "err "] {
        let tail = numbers(prefix, &mut outcome.tail.iter().map(String::as_str));
        assert!(
            tail.windows(2).all(|pair| pair[0] < pair[1]),
            "{:?}",
            outcome.tail
        );
    }
}

#[test]
fn the_tail_keeps_the_last_lines_each_cut_to_the_cap() {
    let fixture = Fixture::new();
    let mut spec = fixture.spec("seq 1 1000; head -c 10000 /dev/zero | tr '\\0' x; echo; echo end");
    spec.tail_lines = 3;
    let outcome = run(&spec, &Registry::new(), &Cancel::new()).unwrap();
    assert!(outcome.success());
    assert_eq!(outcome.tail.len(), 3);
    assert_eq!(outcome.tail[0], "1000");
    assert_eq!(outcome.tail[1], format!("{}…", "x".repeat(LINE_CAP)));
    assert_eq!(outcome.tail[2], "end");
}

#[test]
fn twenty_megabytes_of_output_do_not_block_or_grow_memory() {
    let fixture = Fixture::new();
    let before = peak_rss_kib();
    let outcome = run(
        &fixture.spec("yes 0123456789abcdef | head -c 20000000"),
        &Registry::new(),
        &Cancel::new(),
    )
    .unwrap();
    assert!(outcome.success(), "{outcome:?}");
    assert_eq!(outcome.log_bytes, 20_000_000);
    assert_eq!(
        std::fs::metadata(&outcome.log_path).unwrap().len(),
        20_000_000
    );
    // 20,000,000 = 1,176,470 lines of 17 bytes and 10 bytes more.
    assert_eq!(outcome.tail.last().map(String::as_str), Some("0123456789"));
    assert_eq!(outcome.tail.len(), 40);
    // One line without a newline, a quarter of the size.
    let outcome = run(
        &fixture.spec("head -c 5000000 /dev/zero | tr '\\0' y"),
        &Registry::new(),
        &Cancel::new(),
    )
    .unwrap();
    assert!(outcome.success());
    assert_eq!(outcome.log_bytes, 5_000_000);
    assert_eq!(outcome.tail, [format!("{}…", "y".repeat(LINE_CAP))]);
    let grown = peak_rss_kib().saturating_sub(before);
    assert!(grown < 16 * 1024, "peak memory grew by {grown} KiB");
    assert!(outcome.duration < Duration::from_secs(20));
}

/// The peak resident set of this process, in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}
