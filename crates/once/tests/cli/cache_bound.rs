//! The local cache's bound: `once cache stats` and `once cache prune` (least recently used
//! first), a run that ends over `[cache] max-size` pruning by itself, and prunes racing real
//! runs that replay from the cache, none of which may lose what it looked up.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::{Running, TempDir, once_binary};

/// `n` targets, each copying its 8 KiB input (too large to be kept in its entry) to its output
/// and counting its runs in `runs/NAME`.
fn workspace(dir: &Path, n: usize, extra: &str) {
    let mut manifest = String::from(extra);
    for i in 0..n {
        let name = format!("t{i:03}");
        manifest.push_str(&format!(
            "[targets.{name}]\nkind = \"command\"\npath = \"{name}\"\n\
             [targets.{name}.capabilities.build]\n\
             command = \"echo ran >> ../runs/{name} && cp in.bin out.bin\"\n\
             inputs = [\"in.bin\"]\noutputs = [\"out.bin\"]\n"
        ));
        std::fs::create_dir_all(dir.join(&name)).expect("mkdir");
        let bytes: Vec<u8> = (0..8192u32)
            .map(|b| (b * 7 + i as u32) as u8 ^ 0x80)
            .collect();
        std::fs::write(dir.join(&name).join("in.bin"), bytes).expect("writes");
    }
    std::fs::create_dir_all(dir.join("runs")).expect("mkdir");
    std::fs::write(dir.join("once.toml"), manifest).expect("writes");
}

fn once(dir: &Path) -> Command {
    let mut command = Command::new(once_binary());
    command
        .current_dir(dir)
        .env_remove("ONCE_LOG")
        .stdin(Stdio::null());
    command
}

fn run(dir: &Path, args: &[&str]) -> Output {
    once(dir).args(args).output().expect("runs once")
}

fn text(output: &Output) -> String {
    format!(
        "exit {:?}\n{}{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn json(output: &Output) -> serde_json::Value {
    assert_eq!(output.status.code(), Some(0), "{}", text(output));
    serde_json::from_slice(&output.stdout).expect("JSON")
}

fn runs(dir: &Path, name: &str) -> usize {
    std::fs::read_to_string(dir.join("runs").join(name)).map_or(0, |text| text.lines().count())
}

#[test]
fn prune_removes_the_least_recently_used_result_first() {
    let tmp = TempDir::new();
    let dir = tmp.path();
    workspace(dir, 3, "");
    for name in ["t000", "t001", "t002"] {
        json(&run(dir, &["run", &format!("{name}:build"), "--json"]));
    }
    // t000 is used again: t001 is now the least recently used.
    let again = json(&run(dir, &["run", "t000:build", "--json"]));
    assert_eq!(again["actions"][0]["cached"], true);
    let stats = json(&run(dir, &["cache", "stats", "--json"]));
    assert_eq!(stats["entries"], 3);
    let total = stats["bytes"].as_u64().expect("bytes");
    // Under 80% of the whole: one result of three must go, and only one.
    let pruned = json(&run(
        dir,
        &["cache", "prune", "--max-size", &total.to_string(), "--json"],
    ));
    assert_eq!(pruned["entries_removed"], 1, "{pruned}");
    assert!(
        pruned["bytes_after"].as_u64() <= Some(total / 100 * 80),
        "{pruned}"
    );
    assert_eq!(json(&run(dir, &["cache", "stats", "--json"]))["entries"], 2);
    for (name, ran_before) in [("t000", 1), ("t001", 1), ("t002", 1)] {
        assert_eq!(runs(dir, name), ran_before);
        json(&run(dir, &["run", &format!("{name}:build"), "--json"]));
    }
    assert_eq!(
        (runs(dir, "t000"), runs(dir, "t001"), runs(dir, "t002")),
        (1, 2, 1),
        "only the least recently used result was pruned"
    );
}

#[test]
fn a_run_that_grows_the_cache_past_max_size_prunes_it() {
    let tmp = TempDir::new();
    let dir = tmp.path();
    workspace(dir, 12, "[cache]\nmax-size = \"40KiB\"\n");
    json(&run(dir, &["run", "--all", "build", "--json"]));
    let stats = json(&run(dir, &["cache", "stats", "--json"]));
    assert_eq!(stats["max_size"], 40 * 1024);
    assert!(stats["bytes"].as_u64() <= Some(40 * 1024), "{stats}");
    assert!(stats["entries"].as_u64() < Some(12), "{stats}");
    // What it kept replays, what it pruned runs again, and every output is right.
    let again = json(&run(dir, &["run", "--all", "build", "--json"]));
    assert_eq!(again["status"], "succeeded", "{again}");
    for i in 0..12 {
        let name = format!("t{i:03}");
        assert_eq!(
            std::fs::read(dir.join(&name).join("out.bin")).expect("an output"),
            std::fs::read(dir.join(&name).join("in.bin")).expect("its input")
        );
    }
}

#[test]
fn prunes_racing_two_replaying_runs_lose_nothing_a_run_looked_up() {
    let tmp = TempDir::new();
    let dir = tmp.path();
    let n = 60;
    workspace(dir, n, "");
    json(&run(dir, &["run", "--all", "build", "--json"]));
    let deadline = Instant::now() + Duration::from_secs(60);
    for round in 0..6 {
        assert!(Instant::now() < deadline, "round {round} past the deadline");
        // Two runs that replay, with their outputs gone so that every replay restores, while
        // prunes remove everything no run holds.
        for i in 0..n {
            let _ = std::fs::remove_file(dir.join(format!("t{i:03}/out.bin")));
        }
        let mut replays = Vec::new();
        for _ in 0..2 {
            let mut command = once(dir);
            command.args(["run", "--all", "build", "--json"]);
            replays.push(Running::start(command));
        }
        let mut prunes = Vec::new();
        for _ in 0..3 {
            let mut command = once(dir);
            command.args(["cache", "prune", "--max-size", "1B", "--json"]);
            prunes.push(Running::start(command));
        }
        for replay in replays {
            let output = replay.finish(Duration::from_secs(30));
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(
                !stderr.contains("cannot restore"),
                "round {round}: a prune removed what a run had looked up:\n{stderr}"
            );
            assert_eq!(json(&output)["status"], "succeeded");
        }
        for prune in prunes {
            json(&prune.finish(Duration::from_secs(30)));
        }
        for i in 0..n {
            let name = format!("t{i:03}");
            assert_eq!(
                std::fs::read(dir.join(&name).join("out.bin")).expect("an output"),
                std::fs::read(dir.join(&name).join("in.bin")).expect("its input"),
                "round {round}: {name}"
            );
        }
    }
}
