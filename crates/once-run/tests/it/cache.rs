//! The cache: hits run nothing, changes re-run exactly what is downstream, outputs come back
//! byte for byte.

use std::fs;

use once_run::{Options, RunStatus};

use super::{Fixture, serial, statuses};

/// `lib` builds from `src/`; `app` depends on `lib`; `docs` is independent. Each run of a
/// command appends its name to `runs`, so the file says exactly what ran.
const WORKSPACE: &str = r#"
[targets.lib]
kind = "command"
path = "lib"
[targets.lib.capabilities.build]
command = "echo lib >> ../runs; mkdir -p out; cat src/* > out/lib.bin; printf '\\000\\377' >> out/lib.bin"
inputs = ["src/**", "!src/*.tmp"]
outputs = ["out/**"]

[targets.app]
kind = "command"
path = "app"
deps = ["lib"]
[targets.app.capabilities.build]
command = "echo app >> ../runs; cat ../lib/out/lib.bin main.txt > app.bin; chmod +x app.bin"
inputs = ["main.txt"]
outputs = ["app.bin"]

[targets.docs]
kind = "command"
path = "docs"
[targets.docs.capabilities.build]
command = "echo docs >> ../runs"
"#;

fn fixture() -> Fixture {
    let ws = Fixture::new(WORKSPACE);
    ws.file("lib/src/a.txt", "alpha\n")
        .file("lib/src/b.txt", "beta\n")
        .file("app/main.txt", "main\n")
        .file("docs/index.md", "# docs\n");
    ws
}

fn all() -> [&'static str; 2] {
    ["app", "docs"]
}

#[test]
fn a_hit_runs_nothing_and_restores_outputs_byte_for_byte() {
    let ws = fixture();
    let first = ws.run(&all(), &Options::default());
    assert_eq!(first.status, RunStatus::Succeeded);
    assert_eq!(first.counts.ran, 3);
    let runs = ws.read("runs");
    let lib = fs::read(ws.root.join("lib/out/lib.bin")).unwrap();
    let app = fs::read(ws.root.join("app/app.bin")).unwrap();

    let second = ws.run(&all(), &Options::default());
    assert_eq!(second.status, RunStatus::Succeeded);
    assert_eq!(second.counts.cached, 3);
    assert_eq!(second.counts.ran, 0);
    assert_eq!(ws.read("runs"), runs, "a cache hit ran a command");

    // Outputs deleted or damaged come back identical, mode included, still without running.
    fs::remove_dir_all(ws.root.join("lib/out")).unwrap();
    fs::write(ws.root.join("app/app.bin"), "damaged").unwrap();
    let third = ws.run(&all(), &Options::default());
    assert_eq!(third.counts.cached, 3);
    assert_eq!(ws.read("runs"), runs);
    assert_eq!(fs::read(ws.root.join("lib/out/lib.bin")).unwrap(), lib);
    assert_eq!(fs::read(ws.root.join("app/app.bin")).unwrap(), app);
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(ws.root.join("app/app.bin"))
        .unwrap()
        .permissions()
        .mode();
    assert_ne!(mode & 0o100, 0, "the executable bit was not restored");

    // `force` runs everything again.
    let forced = ws.run(
        &all(),
        &Options {
            force: true,
            ..serial()
        },
    );
    assert_eq!(forced.counts.ran, 3);
}

#[test]
fn a_changed_input_reruns_exactly_what_is_downstream() {
    let ws = fixture();
    ws.run(&all(), &serial());
    fs::write(ws.root.join("runs"), "").unwrap();

    // An excluded file and a file outside the inputs change nothing.
    ws.file("lib/src/scratch.tmp", "x").file("lib/README", "x");
    let report = ws.run(&all(), &serial());
    assert_eq!(report.counts.cached, 3);
    assert_eq!(ws.read("runs"), "");

    ws.file("lib/src/b.txt", "beta, changed\n");
    let report = ws.run(&all(), &serial());
    assert_eq!(ws.read("runs"), "lib\napp\n");
    assert_eq!(
        statuses(&report),
        [
            ("app:build", "succeeded"),
            ("docs:build", "succeeded (cached)"),
            ("lib:build", "succeeded"),
        ]
        .into_iter()
        .map(|(a, s)| (a.to_owned(), s.to_owned()))
        .collect()
    );

    // A file ignored by .gitignore is not an input.
    fs::write(ws.root.join("runs"), "").unwrap();
    ws.file("docs/.gitignore", "draft.md\n")
        .file("docs/draft.md", "wip");
    ws.run(&all(), &serial());
    assert_eq!(
        ws.read("runs"),
        "docs\n",
        "adding .gitignore itself is a change"
    );
    ws.file("docs/draft.md", "more wip");
    ws.run(&all(), &serial());
    assert_eq!(ws.read("runs"), "docs\n", "an ignored file re-ran docs");

    // So is one that the workspace root's .gitignore ignores (the root is no input of lib).
    ws.file(".gitignore", "*.swp\n");
    ws.run(&all(), &serial());
    fs::write(ws.root.join("runs"), "").unwrap();
    ws.file("lib/src/a.txt.swp", "editor state");
    ws.run(&all(), &serial());
    assert_eq!(ws.read("runs"), "", "a file ignored at the root re-ran lib");
}

#[test]
fn failed_runs_are_not_cached() {
    let ws = Fixture::new(
        r#"
[targets.flaky]
kind = "command"
[targets.flaky.capabilities.build]
command = "echo try >> tries; test -e ok"
inputs = ["ok", "once.toml"]
"#,
    );
    assert_eq!(ws.run(&["flaky"], &serial()).status, RunStatus::Failed);
    assert_eq!(ws.run(&["flaky"], &serial()).status, RunStatus::Failed);
    assert_eq!(ws.read("tries"), "try\ntry\n");
}

/// A cache hit restores outputs only through real folders of the workspace: an output folder
/// replaced by a link to a folder outside is never written through, so the hit is refused and the
/// command runs instead (what the user's own command writes is its business).
#[test]
fn a_restore_never_follows_a_linked_output_folder_out_of_the_workspace() {
    let ws = fixture();
    ws.run(&all(), &serial());
    let runs = ws.read("runs");
    let outside = ws.root.with_extension("outside");
    let _ = fs::remove_dir_all(&outside);
    fs::create_dir_all(&outside).unwrap();
    fs::remove_dir_all(ws.root.join("lib/out")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.root.join("lib/out")).unwrap();
    let report = ws.run(&["lib"], &serial());
    let _ = fs::remove_dir_all(&outside);
    assert_eq!(
        report.counts.cached, 0,
        "restored through a link: {report:?}"
    );
    assert_ne!(ws.read("runs"), runs, "the command did not run instead");
}

/// Every file under `.once/cache/<folder>/`.
fn cache_files(ws: &Fixture, folder: &str) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = fs::read_dir(ws.root.join(".once/cache").join(folder))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| !path.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    files.sort();
    files
}

/// Entries are not synced, so a crash of the machine can leave one empty, cut short or with
/// other bytes: each of these is a miss and the action runs, never a result read from it.
#[test]
fn an_entry_torn_by_a_crash_is_a_miss_never_a_result() {
    let ws = fixture();
    assert_eq!(ws.run(&["lib"], &serial()).counts.ran, 1);
    let packs = cache_files(&ws, "packs");
    assert_eq!(packs.len(), 1, "one run, one pack");
    let pack = &packs[0];
    let whole = fs::read(pack).unwrap();
    let mut flipped = whole.clone();
    // A digit of the recorded size turned into another: still valid JSON, but not what was written.
    let at = String::from_utf8_lossy(&whole).find("\"size\":").unwrap() + 7;
    flipped[at] = if flipped[at] == b'9' { b'8' } else { b'9' };
    let damaged: [(&str, Vec<u8>); 4] = [
        ("empty", Vec::new()),
        ("cut short", whole[..whole.len() / 2].to_vec()),
        ("without its checksum", whole[..whole.len() - 32].to_vec()),
        ("with a byte changed", flipped),
    ];
    for (how, bytes) in damaged {
        // The damaged pack alone: what the last round recorded goes.
        for other in cache_files(&ws, "packs") {
            fs::remove_file(other).unwrap();
        }
        fs::write(pack, &bytes).unwrap();
        fs::write(ws.root.join("runs"), "").unwrap();
        let report = ws.run(&["lib"], &serial());
        assert_eq!(report.status, RunStatus::Succeeded, "{how}");
        assert_eq!(ws.read("runs"), "lib\n", "an entry {how} was replayed");
        // The run recorded the result again, whole: the next run replays it.
        assert_eq!(ws.run(&["lib"], &serial()).counts.cached, 1, "{how}");
        assert_eq!(ws.read("runs"), "lib\n", "{how}");
    }
}

/// Objects are not synced either: one torn by a crash is never copied into the workspace. The
/// action runs, its output is right, and the object is stored afresh for the next hit.
#[test]
fn an_object_torn_by_a_crash_is_never_restored() {
    let ws = fixture();
    assert_eq!(ws.run(&["lib"], &serial()).counts.ran, 1);
    let lib = fs::read(ws.root.join("lib/out/lib.bin")).unwrap();
    let objects: Vec<_> = cache_files(&ws, "cas")
        .into_iter()
        .filter(|path| fs::read(path).unwrap() == lib)
        .collect();
    assert_eq!(objects.len(), 1);
    let object = &objects[0];
    for (how, bytes) in [
        ("zeroed", vec![0u8; lib.len()]),
        ("cut short", lib[..3].to_vec()),
    ] {
        fs::write(object, &bytes).unwrap();
        fs::remove_dir_all(ws.root.join("lib/out")).unwrap();
        fs::write(ws.root.join("runs"), "").unwrap();
        let report = ws.run(&["lib"], &serial());
        assert_eq!(report.status, RunStatus::Succeeded, "{how}");
        assert_eq!(ws.read("runs"), "lib\n", "an object {how} was restored");
        assert_eq!(
            fs::read(ws.root.join("lib/out/lib.bin")).unwrap(),
            lib,
            "{how}"
        );
        assert_eq!(
            fs::read(object).unwrap(),
            lib,
            "{how}: the object was not stored again"
        );
        // And the next run replays it.
        fs::remove_dir_all(ws.root.join("lib/out")).unwrap();
        assert_eq!(ws.run(&["lib"], &serial()).counts.cached, 1, "{how}");
        assert_eq!(
            fs::read(ws.root.join("lib/out/lib.bin")).unwrap(),
            lib,
            "{how}"
        );
    }
}

/// The cache's own files under `.once/cache/` (the journal of keys' parts, the keys' lock file, a
/// mutex's lock file) are opened in place, not renamed into place: a link planted at one of them
/// must never lead a write, or a new file, outside the workspace: the link is refused, and the
/// action fails saying which file.
#[cfg(unix)]
#[test]
fn a_link_planted_at_a_state_file_never_leads_a_write_outside() {
    let ws = Fixture::new(
        r#"
[targets.lib]
kind = "command"
[targets.lib.capabilities.build]
command = "echo built > out.txt"
outputs = ["out.txt"]
mutex = "db"
"#,
    );
    let outside = ws.root.with_extension("outside-state");
    let _ = fs::remove_dir_all(&outside);
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("victim"), "untouched").unwrap();
    let cache = ws.root.join(".once/cache");
    fs::create_dir_all(cache.join("locks")).unwrap();
    // An existing file behind one link, nothing behind the others (a dangling link would make
    // the file it names).
    std::os::unix::fs::symlink(outside.join("victim"), cache.join("key-parts")).unwrap();
    std::os::unix::fs::symlink(outside.join("keys"), cache.join("locks/keys")).unwrap();
    std::os::unix::fs::symlink(outside.join("db"), cache.join("locks/mutex-db")).unwrap();

    let report = ws.run(&["lib"], &serial());
    let listing: Vec<_> = fs::read_dir(&outside)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let victim = fs::read_to_string(outside.join("victim")).unwrap();
    let _ = fs::remove_dir_all(&outside);
    assert_eq!(victim, "untouched");
    assert_eq!(listing, ["victim"], "a file was made outside the workspace");
    assert_eq!(report.status, RunStatus::Failed, "{report:?}");
}

/// A command that prints nothing leaves no log file, yet its log reads as empty, when it ran and
/// when its result is replayed; one that prints keeps its lines both ways.
#[test]
fn a_quiet_command_has_an_empty_log_without_a_file() {
    let ws = Fixture::new(
        r#"
[targets.quiet]
kind = "command"
path = "quiet"
[targets.quiet.capabilities.build]
command = "true"

[targets.loud]
kind = "command"
path = "loud"
[targets.loud.capabilities.build]
command = "echo hello"
"#,
    );
    ws.file("quiet/x", "").file("loud/x", "");
    let store = once_run::RunStore::new(&ws.root);
    for (round, cached) in [(1, false), (2, true)] {
        let report = ws.run(&["quiet", "loud"], &serial());
        assert_eq!(report.status, RunStatus::Succeeded, "round {round}");
        for action in &report.actions {
            assert_eq!(action.cached, cached, "round {round}: {}", action.action);
            let page = store
                .log_page(&report.run_id, &action.action, 0, 10)
                .unwrap();
            let expected: &[&str] = if action.action == "loud:build" {
                &["hello"]
            } else {
                &[]
            };
            assert_eq!(page.lines, expected, "round {round}: {}", action.action);
        }
        let quiet = report
            .actions
            .iter()
            .find(|a| a.action == "quiet:build")
            .and_then(|a| a.log.clone())
            .unwrap();
        // Ran: no file. Replayed: the cache's (empty) object.
        assert_eq!(quiet.exists(), cached, "round {round}");
    }
}

/// A short text output is kept in its entry and makes no object in `cas/`; a binary one and a
/// long one are objects. All three come back byte for byte, and a text whose entry was damaged
/// is never restored.
#[test]
fn short_text_outputs_live_in_their_entry_and_come_back_byte_for_byte() {
    let ws = Fixture::new(
        r#"
[targets.gen]
kind = "command"
path = "gen"
[targets.gen.capabilities.build]
command = '''printf 'short ü\n' > short.txt; printf 'a\377b' > blob.bin; head -c 5000 /dev/zero | tr '\000' x > long.txt'''
outputs = ["short.txt", "blob.bin", "long.txt"]
"#,
    );
    ws.file("gen/x", "");
    let first = ws.run(&["gen"], &serial());
    assert_eq!(first.status, RunStatus::Succeeded);
    let read = |name: &str| fs::read(ws.root.join("gen").join(name)).unwrap();
    let originals: Vec<Vec<u8>> = ["short.txt", "blob.bin", "long.txt"]
        .iter()
        .map(|name| read(name))
        .collect();
    let object = |bytes: &[u8]| {
        ws.root
            .join(".once/cache/cas")
            .join(blake3::hash(bytes).to_hex().as_str())
    };
    assert!(
        !object(&originals[0]).exists(),
        "short text became an object"
    );
    assert!(
        object(&originals[1]).exists(),
        "binary output is not an object"
    );
    assert!(
        object(&originals[2]).exists(),
        "long output is not an object"
    );

    for name in ["short.txt", "blob.bin", "long.txt"] {
        fs::remove_file(ws.root.join("gen").join(name)).unwrap();
    }
    let second = ws.run(&["gen"], &serial());
    assert_eq!(second.counts.cached, 1);
    for (name, original) in ["short.txt", "blob.bin", "long.txt"].iter().zip(&originals) {
        assert_eq!(&read(name), original, "{name}");
    }

    // Change the kept text in the entry, at the same length (its checksum then fails): a miss,
    // and the command runs.
    let (kept, tampered) = ("short ü".as_bytes(), b"tampered");
    assert_eq!(kept.len(), tampered.len());
    for path in cache_files(&ws, "packs") {
        let mut bytes = fs::read(&path).unwrap();
        let at = bytes
            .windows(kept.len())
            .position(|window| window == kept)
            .expect("the text is in the entry");
        bytes[at..at + kept.len()].copy_from_slice(tampered);
        fs::write(&path, bytes).unwrap();
    }
    fs::remove_file(ws.root.join("gen/short.txt")).unwrap();
    let third = ws.run(&["gen"], &serial());
    assert_eq!(third.counts.ran, 1);
    assert_eq!(read("short.txt"), originals[0]);
}
