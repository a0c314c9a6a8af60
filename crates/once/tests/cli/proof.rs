//! The no-op proof: a run whose every action was a local cache hit lets the same request, made
//! again, be answered by checking what that run saw instead of loading and keying everything.
//! It must never answer differently from a run without it.
//!
//! The attack is differential. Two copies of one workspace (vite's real pnpm manifests, trimmed,
//! plus two command targets of our own) take the same changes, one after another; before each
//! run one copy keeps its proofs and the other has them deleted, and both must then report the
//! same actions ran or replayed and leave the same outputs. A change the proof failed to notice
//! shows as a replay in the first copy where the second ran.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{TempDir, copy_tree, once_binary};

const MANIFEST: &str = r#"
[workspace]
members = ["tools/*"]

[targets.gen]
kind = "command"
path = "tools/gen"
tags = ["proof"]

[targets.gen.capabilities.build]
command = "cat src/*.txt > out.txt && echo built"
inputs = ["src/**"]
outputs = ["out.txt"]
pass-env = ["GEN_MODE"]

[targets.pack]
kind = "command"
path = "tools/pack"
tags = ["proof"]
deps = ["gen"]

[targets.pack.capabilities.build]
command = "mkdir -p out && cat ../gen/out.txt notes.md > out/packed.txt"
inputs = ["notes.md", "//shared/**"]
outputs = ["out/packed.txt"]
deps = ["gen:build"]
"#;

/// A workspace: vite's manifests (discovered, never run) and `gen` and `pack`, run by command.
fn workspace(bin: &Path) -> TempDir {
    let dir = TempDir::new();
    let vite = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../once-graph/testdata/discover/javascript-vite");
    copy_tree(&vite, dir.path());
    let root = dir.path();
    write(root, "once.toml", MANIFEST);
    write(root, ".gitignore", "*.log\nnode_modules/\n");
    write(root, "tools/gen/src/a.txt", "alpha\n");
    write(root, "tools/gen/src/b.txt", "bravo\n");
    write(root, "tools/pack/notes.md", "notes\n");
    std::fs::create_dir_all(bin).expect("mkdir");
    dir
}

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, text).expect("writes");
}

/// One copy of the workspace and how it is run.
struct Copy {
    dir: TempDir,
    /// A folder first on `PATH`, where a change can put a program.
    bin: TempDir,
    /// Whether this copy keeps its proofs between runs.
    proofs: bool,
}

/// What a run did, as comparable between copies: exit code, each action's status and whether
/// it was replayed, and every output's content.
#[derive(Debug, PartialEq)]
struct Outcome {
    code: Option<i32>,
    actions: Vec<(String, String, bool)>,
    outputs: Vec<Option<String>>,
}

impl Copy {
    fn new(proofs: bool) -> Copy {
        let bin = TempDir::new();
        Copy {
            dir: workspace(bin.path()),
            bin,
            proofs,
        }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    /// `once run --tag proof build --json`; the second value says whether a proof answered.
    fn run(&self, env: &[(&str, &str)]) -> (Outcome, bool) {
        if !self.proofs {
            let _ = std::fs::remove_dir_all(self.root().join(".once/cache/proofs"));
        }
        let path = format!(
            "{}:{}",
            self.bin.path().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut command = Command::new(once_binary());
        command
            .args(["run", "--tag", "proof", "build", "--json"])
            .current_dir(self.root())
            .env("PATH", path)
            .env("ONCE_LOG", "info");
        for (name, value) in env {
            command.env(name, value);
        }
        let output = command.output().expect("runs once");
        let stderr = String::from_utf8_lossy(&output.stderr);
        let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
            panic!(
                "not a report ({error}): {}\n{stderr}",
                String::from_utf8_lossy(&output.stdout)
            )
        });
        let actions = report["actions"]
            .as_array()
            .expect("actions")
            .iter()
            .map(|a| {
                (
                    a["action"].as_str().expect("a name").to_owned(),
                    a["status"].as_str().expect("a status").to_owned(),
                    a["cached"].as_bool().unwrap_or(false),
                )
            })
            .collect();
        let outputs = ["tools/gen/out.txt", "tools/pack/out/packed.txt"]
            .iter()
            .map(|path| std::fs::read_to_string(self.root().join(path)).ok())
            .collect();
        let outcome = Outcome {
            code: output.status.code(),
            actions,
            outputs,
        };
        (outcome, stderr.contains("answered by its no-op proof"))
    }
}

/// A change made to both copies.
struct Change {
    what: &'static str,
    apply: fn(&Copy),
}

fn changes() -> Vec<Change> {
    vec![
        Change {
            what: "nothing",
            apply: |_| {},
        },
        Change {
            what: "an input touched, its content the same",
            apply: |c| {
                let file = c.root().join("tools/gen/src/a.txt");
                let text = std::fs::read(&file).unwrap();
                std::fs::write(&file, text).unwrap();
            },
        },
        Change {
            what: "an input edited",
            apply: |c| write(c.root(), "tools/gen/src/a.txt", "alpha, edited\n"),
        },
        Change {
            what: "an input rewritten to the same size, its times put back",
            apply: |c| {
                let file = c.root().join("tools/gen/src/b.txt");
                let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
                std::fs::write(&file, "BRAVO\n").unwrap();
                std::fs::File::options()
                    .write(true)
                    .open(&file)
                    .unwrap()
                    .set_modified(mtime)
                    .unwrap();
            },
        },
        Change {
            what: "an input added",
            apply: |c| write(c.root(), "tools/gen/src/c.txt", "charlie\n"),
        },
        Change {
            what: "an input added in a new folder",
            apply: |c| write(c.root(), "tools/gen/src/deep/d.txt", "delta\n"),
        },
        Change {
            what: "an input removed",
            apply: |c| std::fs::remove_file(c.root().join("tools/gen/src/c.txt")).unwrap(),
        },
        Change {
            what: "an input renamed",
            apply: |c| {
                let src = c.root().join("tools/gen/src");
                std::fs::rename(src.join("b.txt"), src.join("b2.txt")).unwrap();
            },
        },
        Change {
            what: "an ignored file added",
            apply: |c| write(c.root(), "tools/gen/src/debug.log", "noise\n"),
        },
        Change {
            what: "the root .gitignore now ignores an input",
            apply: |c| write(c.root(), ".gitignore", "*.log\nnode_modules/\nb2.txt\n"),
        },
        Change {
            what: "a .gitignore added inside the target",
            apply: |c| write(c.root(), "tools/gen/src/.gitignore", "a.txt\n"),
        },
        Change {
            what: "an .ignore added inside the target",
            apply: |c| write(c.root(), "tools/gen/.ignore", "deep/\n"),
        },
        Change {
            what: "a repository inside the target, its exclude file naming an input",
            apply: |c| write(c.root(), "tools/gen/.git/info/exclude", "b2.txt\n"),
        },
        Change {
            what: "that exclude file edited",
            apply: |c| write(c.root(), "tools/gen/.git/info/exclude", "a.txt\n"),
        },
        Change {
            what: "an output deleted",
            apply: |c| std::fs::remove_file(c.root().join("tools/gen/out.txt")).unwrap(),
        },
        Change {
            what: "an output overwritten",
            apply: |c| write(c.root(), "tools/pack/out/packed.txt", "tampered\n"),
        },
        Change {
            what: "an output's folder replaced by a link to it",
            apply: |c| {
                let pack = c.root().join("tools/pack");
                std::fs::rename(pack.join("out"), pack.join("out.real")).unwrap();
                std::os::unix::fs::symlink("out.real", pack.join("out")).unwrap();
            },
        },
        Change {
            what: "the link removed again",
            apply: |c| {
                let pack = c.root().join("tools/pack");
                std::fs::remove_file(pack.join("out")).unwrap();
                std::fs::rename(pack.join("out.real"), pack.join("out")).unwrap();
            },
        },
        Change {
            what: "the target's folder replaced by a link to it",
            apply: |c| {
                let tools = c.root().join("tools");
                std::fs::rename(tools.join("gen"), tools.join("gen.real")).unwrap();
                std::os::unix::fs::symlink("gen.real", tools.join("gen")).unwrap();
            },
        },
        Change {
            what: "the target's folder back",
            apply: |c| {
                let tools = c.root().join("tools");
                std::fs::remove_file(tools.join("gen")).unwrap();
                std::fs::rename(tools.join("gen.real"), tools.join("gen")).unwrap();
            },
        },
        Change {
            what: "the input folder replaced by a link to it",
            apply: |c| {
                let gen_folder = c.root().join("tools/gen");
                std::fs::rename(gen_folder.join("src"), gen_folder.join("src.real")).unwrap();
                std::os::unix::fs::symlink("src.real", gen_folder.join("src")).unwrap();
            },
        },
        Change {
            what: "the input folder back",
            apply: |c| {
                let gen_folder = c.root().join("tools/gen");
                std::fs::remove_file(gen_folder.join("src")).unwrap();
                std::fs::rename(gen_folder.join("src.real"), gen_folder.join("src")).unwrap();
            },
        },
        Change {
            what: "the cache's entries deleted",
            apply: |c| std::fs::remove_dir_all(c.root().join(".once/cache/packs")).unwrap(),
        },
        Change {
            what: "a real manifest edited",
            apply: |c| {
                let file = c.root().join("packages/vite/package.json");
                let text = std::fs::read_to_string(&file).unwrap();
                std::fs::write(
                    &file,
                    text.replacen("\"name\"", "\"private\": true,\n  \"name\"", 1),
                )
                .unwrap();
            },
        },
        Change {
            what: "a package added under a workspace glob",
            apply: |c| {
                write(
                    c.root(),
                    "playground/zz-new/package.json",
                    "{\"name\": \"zz-new\"}\n",
                )
            },
        },
        Change {
            what: "a member manifest added under the members glob",
            apply: |c| {
                write(
                    c.root(),
                    "tools/extra/once.toml",
                    "[targets.extra]\nkind = \"command\"\ntags = [\"proof\"]\n\n\
                     [targets.extra.capabilities.build]\ncommand = \"echo extra > out.txt\"\n\
                     outputs = [\"out.txt\"]\n",
                );
            },
        },
        Change {
            what: "a root folder that a `//` input names created",
            apply: |c| write(c.root(), "shared/config.txt", "shared\n"),
        },
        Change {
            what: "once.toml's command changed",
            apply: |c| {
                let text = MANIFEST.replace("echo built", "echo built again");
                write(c.root(), "once.toml", &text);
            },
        },
        Change {
            what: "a program put first on PATH",
            apply: |c| {
                let cat = c.bin.path().join("cat");
                std::fs::write(&cat, "#!/bin/sh\nexec /bin/cat \"$@\"\n").unwrap();
                let mut permissions = std::fs::metadata(&cat).unwrap().permissions();
                std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
                std::fs::set_permissions(&cat, permissions).unwrap();
            },
        },
        Change {
            what: "the program on PATH edited",
            apply: |c| {
                write(
                    c.bin.path(),
                    "cat",
                    "#!/bin/sh\n# another version\nexec /bin/cat \"$@\"\n",
                );
            },
        },
    ]
}

/// The same changes, one after another, to a copy that keeps its proofs and one that does not:
/// after each, both runs agree, and with nothing changed the proof answers.
#[test]
fn no_change_lets_a_proof_answer_and_no_change_goes_unseen() {
    let proven = Copy::new(true);
    let plain = Copy::new(false);
    // The first build, then a no-op that writes the proof.
    for copy in [&proven, &plain] {
        let (first, _) = copy.run(&[]);
        assert!(
            first
                .actions
                .iter()
                .all(|(_, status, cached)| status == "succeeded" && !cached)
        );
        let (second, answered) = copy.run(&[]);
        assert!(
            second.actions.iter().all(|(_, _, cached)| *cached),
            "{second:?}"
        );
        assert!(!answered, "no proof existed yet");
    }
    let mut answered_when_unchanged = false;
    for change in changes() {
        (change.apply)(&proven);
        (change.apply)(&plain);
        let (with_proof, answered) = proven.run(&[]);
        let (without, _) = plain.run(&[]);
        assert_eq!(
            with_proof, without,
            "after \"{}\" the proof answered differently",
            change.what
        );
        if change.what == "nothing" {
            answered_when_unchanged = answered;
        }
        // Settle: the next change starts from a no-op that left a proof, which then answers
        // whenever the settled run replayed everything.
        assert_eq!(
            proven.run(&[]).0,
            plain.run(&[]).0,
            "{}: settling",
            change.what
        );
        let (settled, answered) = proven.run(&[]);
        assert_eq!(settled, plain.run(&[]).0, "{}: settled", change.what);
        let replayed = settled.actions.iter().all(|(_, _, cached)| *cached);
        assert_eq!(answered, replayed, "{}: settled, answered", change.what);
    }
    assert!(
        answered_when_unchanged,
        "with nothing changed, the proof never answered"
    );
    // A proof that failed its check left no folder behind for a run that never was.
    for run in std::fs::read_dir(proven.root().join(".once/runs")).unwrap() {
        let run = run.unwrap().path();
        assert!(
            run.join("run.json").is_file(),
            "{} has no record",
            run.display()
        );
    }
}

/// Variables are part of the request: a keyed one changed runs the action, and the proof of
/// the old value does not answer for the new one.
#[test]
fn a_changed_variable_is_another_request() {
    let proven = Copy::new(true);
    let plain = Copy::new(false);
    for env in [
        &[][..],
        &[("GEN_MODE", "fast")],
        &[("GEN_MODE", "fast")],
        &[],
    ] {
        for _ in 0..2 {
            let (with_proof, _) = proven.run(env);
            let (without, _) = plain.run(env);
            assert_eq!(with_proof, without, "with {env:?}");
        }
    }
    let (again, answered) = proven.run(&[("GEN_MODE", "fast")]);
    assert!(
        answered,
        "the proof of GEN_MODE=fast was kept beside the other"
    );
    assert!(again.actions.iter().all(|(_, _, cached)| *cached));
}

/// A replayed run is a run: it has its own id and record, the summary a no-op prints, and the
/// same JSON.
#[test]
fn a_replayed_run_is_recorded_and_reported_like_the_run_it_repeats() {
    let copy = Copy::new(true);
    copy.run(&[]);
    let (normal, answered) = copy.run(&[]);
    assert!(!answered);
    let (replayed, answered) = copy.run(&[]);
    assert!(answered, "the proof did not answer");
    assert_eq!(normal, replayed);
    let runs: Vec<PathBuf> = std::fs::read_dir(copy.root().join(".once/runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 3, "each run has its record: {runs:?}");
    let newest = runs.iter().max().unwrap();
    let record: Value =
        serde_json::from_slice(&std::fs::read(newest.join("run.json")).unwrap()).unwrap();
    assert_eq!(record["status"], "succeeded");
    assert_eq!(
        record["run_id"].as_str(),
        newest.file_name().unwrap().to_str()
    );
    assert_eq!(record["counts"]["cached"], 2);
}

/// An action that reads an env-file reads it while planning, before anything is recorded: its
/// runs never leave a proof, and a changed file is always seen.
#[test]
fn an_env_file_is_never_proven_and_always_read() {
    let dir = TempDir::new();
    let root = dir.path();
    write(
        root,
        "once.toml",
        "[targets.app]\nkind = \"command\"\npath = \"app\"\n\n\
         [targets.app.capabilities.build]\ncommand = \"echo $MODE > out.txt\"\n\
         env-file = \"app.env\"\noutputs = [\"out.txt\"]\n",
    );
    write(root, "app/app.env", "MODE=fast\n");
    let run = || {
        let output = Command::new(once_binary())
            .args(["run", "app:build", "--json"])
            .current_dir(root)
            .env("ONCE_LOG", "info")
            .output()
            .expect("runs once");
        let report: Value = serde_json::from_slice(&output.stdout).expect("a report");
        let answered = String::from_utf8_lossy(&output.stderr).contains("no-op proof");
        (report["counts"]["ran"].as_u64().expect("counts"), answered)
    };
    assert_eq!(run(), (1, false));
    assert_eq!(run(), (0, false));
    assert_eq!(run(), (0, false), "a proof answered for an env-file");
    assert!(!root.join(".once/cache/proofs").exists());
    write(root, "app/app.env", "MODE=slow\n");
    assert_eq!(run(), (1, false));
    assert_eq!(
        std::fs::read_to_string(root.join("app/out.txt")).unwrap(),
        "slow\n"
    );
}

/// The one proof file of `copy` (its folder holds one per request made).
fn the_proof(copy: &Copy) -> PathBuf {
    let mut proofs: Vec<PathBuf> = std::fs::read_dir(copy.root().join(".once/cache/proofs"))
        .expect("a proof folder")
        .map(|entry| entry.expect("an entry").path())
        .collect();
    assert_eq!(proofs.len(), 1, "{proofs:?}");
    proofs.remove(0)
}

/// A proof that is cut, altered, emptied, someone else's, or not a file at all is never
/// believed: the run is a normal one with the same answer, and it leaves a good proof again
/// where it can.
#[test]
fn a_damaged_or_foreign_proof_is_a_normal_run() {
    let copy = Copy::new(true);
    let other = Copy::new(true);
    for c in [&copy, &other] {
        c.run(&[]);
        c.run(&[]);
    }
    let (expected, answered) = copy.run(&[]);
    assert!(answered);
    let proof = the_proof(&copy);
    let good = std::fs::read(&proof).unwrap();
    let foreign = std::fs::read(the_proof(&other)).unwrap();
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 0x40;
    let damages: [(&str, Vec<u8>); 4] = [
        ("cut in half", good[..good.len() / 2].to_vec()),
        ("one byte changed", flipped),
        ("empty", Vec::new()),
        ("another workspace's", foreign),
    ];
    for (what, bytes) in damages {
        std::fs::write(&proof, bytes).unwrap();
        let (outcome, answered) = copy.run(&[]);
        assert!(!answered, "a proof {what} was believed");
        assert_eq!(outcome, expected, "after a proof {what}");
        assert!(
            copy.run(&[]).1,
            "no good proof was left after a proof {what}"
        );
    }
    // A folder where the proof should be: nothing to read, nothing can replace it.
    std::fs::remove_file(&proof).unwrap();
    std::fs::create_dir(&proof).unwrap();
    for _ in 0..2 {
        let (outcome, answered) = copy.run(&[]);
        assert!(!answered);
        assert_eq!(outcome, expected);
    }
    // The proofs' folder swapped for a link out of the workspace: nothing is written there.
    let outside = TempDir::new();
    let folder = copy.root().join(".once/cache/proofs");
    std::fs::remove_dir_all(&folder).unwrap();
    std::os::unix::fs::symlink(outside.path(), &folder).unwrap();
    for _ in 0..2 {
        let (outcome, answered) = copy.run(&[]);
        assert!(!answered);
        assert_eq!(outcome, expected);
    }
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
}

/// A folder that loading listed (the survey of nested workspaces, here: no Cargo or Python
/// workspace at the root) and the keys listed again is checked once by a proof, through the
/// keys' record, once its stamp is old enough to prove anything. A manifest appearing is still
/// seen wherever it appears: in a folder only loading listed, in a target's folder both listed,
/// and in an input folder below it.
#[test]
fn a_nested_manifest_appearing_is_seen_in_every_folder_a_proof_checks() {
    let copy = Copy::new(true);
    copy.run(&[]);
    // Stamps taken within the racy window of a change prove nothing, and a proof keeps both
    // records of a folder whose stamps are racy: the folders must age past it first.
    std::thread::sleep(once_fs::RACY_WINDOW + std::time::Duration::from_millis(200));
    let (expected, answered) = copy.run(&[]);
    assert!(!answered, "no proof existed yet");
    let appearing = [
        (
            "tools/rust/Cargo.toml",
            "[package]\nname = \"tool-rs\"\nversion = \"0.1.0\"\n",
        ),
        (
            "tools/gen/Cargo.toml",
            "[package]\nname = \"gen-rs\"\nversion = \"0.1.0\"\n",
        ),
        (
            "tools/gen/src/pyproject.toml",
            "[project]\nname = \"gen-py\"\n",
        ),
    ];
    for (path, text) in appearing {
        let (again, answered) = copy.run(&[]);
        assert!(
            answered,
            "before `{path}` appeared, the proof did not answer"
        );
        assert!(
            again.actions.iter().all(|(_, _, cached)| *cached),
            "{again:?}"
        );
        assert_eq!(again.code, expected.code);
        write(copy.root(), path, text);
        let (_, answered) = copy.run(&[]);
        assert!(!answered, "the proof answered after `{path}` appeared");
        let listed = Command::new(once_binary())
            .args(["query", "targets", "--all"])
            .current_dir(copy.root())
            .output()
            .expect("runs once");
        let folder = path.rsplit_once('/').expect("a folder").0;
        assert!(
            String::from_utf8_lossy(&listed.stdout).contains(&format!("\"path\": \"{folder}\"")),
            "no target in `{folder}` after `{path}` appeared"
        );
        // The run that saw it left a proof of its own, which the next one must find.
        let (settled, _) = copy.run(&[]);
        assert!(
            settled.actions.iter().all(|(_, _, cached)| *cached),
            "{settled:?}"
        );
    }
}
