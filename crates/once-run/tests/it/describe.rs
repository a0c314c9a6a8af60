//! The REAPI description of actions: what two clones must share, what a change must change, and
//! what must never leave the machine.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;

use once_graph::Workspace;
use once_remote::digest_of;
use once_remote::reapi;
use once_run::{Described, Request};
use prost::Message;

use super::Fixture;

const MANIFEST: &str = r#"
[targets.lib]
kind = "command"
path = "lib"
[targets.lib.capabilities.build]
command = "cat src/*.txt > out/lib.txt"
inputs = ["src/**", "//shared.lock"]
outputs = ["out/**"]
env-file = ".env"

[targets.app]
kind = "command"
path = "app"
deps = ["lib"]
[targets.app.capabilities.build]
command = "cat main.txt ../lib/out/lib.txt > bundle.txt"
deps = ["lib:build"]
outputs = ["bundle.txt"]
env = { MODE = "release" }

[targets.tool]
kind = "command"
path = "tool"
[targets.tool.capabilities.build]
command = "./run.sh"
env-file = ".env"
"#;

const SECRET: &str = "s3cr3t-value-never-sent";

fn workspace() -> Fixture {
    let ws = Fixture::new(MANIFEST);
    ws.file("lib/src/a.txt", "a\n")
        .file("lib/src/b.txt", "b\n")
        .file("lib/README", "not an input\n")
        .file("lib/.env", &format!("API_TOKEN={SECRET}\n"))
        .file("shared.lock", "lock\n")
        .file("app/main.txt", "main\n")
        .file("tool/run.sh", "#!/bin/sh\ntrue\n")
        .file("tool/.env", &format!("DB_URL=postgres://u:{SECRET}@h\n"));
    // A program of the workspace's own, which the key knows by its path: inside the clone.
    let script = ws.root.join("tool/run.sh");
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    ws
}

/// Every action of a plan of `app:build` and `tool:build`, described, by name.
fn describe(ws: &Fixture) -> BTreeMap<String, Described> {
    let workspace = Workspace::load(&ws.root).unwrap();
    assert!(!workspace.has_errors(), "{:?}", workspace.diagnostics());
    let request = Request {
        actions: vec!["app:build".to_owned(), "tool:build".to_owned()],
        ..Request::default()
    };
    let plan = once_run::plan(&workspace, &request).unwrap();
    let described = once_run::describe_all(&plan).unwrap();
    plan.steps
        .iter()
        .map(|step| step.action.clone())
        .zip(described)
        .collect()
}

fn digests(described: &BTreeMap<String, Described>) -> BTreeMap<String, String> {
    described
        .iter()
        .map(|(name, d)| (name.clone(), d.action_digest.hash.clone()))
        .collect()
}

fn input_root(described: &Described) -> String {
    described
        .action
        .input_root_digest
        .as_ref()
        .unwrap()
        .hash
        .clone()
}

fn command(described: &Described) -> reapi::Command {
    let digest = described.action.command_digest.as_ref().unwrap();
    reapi::Command::decode(&described.blobs[&digest.hash][..]).unwrap()
}

#[test]
fn two_clones_in_different_folders_describe_every_action_alike() {
    let a = workspace();
    let b = workspace();
    assert_ne!(a.root, b.root);
    let (da, db) = (describe(&a), describe(&b));
    assert_eq!(da.len(), 3);
    assert_eq!(digests(&da), digests(&db));
    for (name, described) in &da {
        assert_eq!(described.blobs, db[name].blobs, "{name}");
    }
}

#[test]
fn the_command_runs_in_the_targets_folder_over_root_relative_inputs() {
    let ws = workspace();
    let described = describe(&ws);
    let lib = &described["lib:build"];
    let lib_command = command(lib);
    assert_eq!(
        lib_command.arguments,
        ["sh", "-c", "cat src/*.txt > out/lib.txt"]
    );
    assert_eq!(lib_command.working_directory, "lib");
    assert_eq!(lib_command.output_paths, ["out"]);
    let root = reapi::Directory::decode(&lib.blobs[&input_root(lib)][..]).unwrap();
    let files: Vec<&str> = root.files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(files, ["shared.lock"]);
    let folders: Vec<&str> = root.directories.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(folders, ["lib"]);
    let env: Vec<(String, String)> = command(&described["app:build"])
        .environment_variables
        .into_iter()
        .map(|v| (v.name, v.value))
        .filter(|(name, _)| name == "MODE")
        .collect();
    assert_eq!(env, [("MODE".to_owned(), "release".to_owned())]);
}

#[test]
fn a_source_change_changes_the_input_root_and_a_non_input_does_not() {
    let ws = workspace();
    let before = describe(&ws);
    ws.file("lib/README", "still not an input\n");
    assert_eq!(digests(&before), digests(&describe(&ws)));
    ws.file("lib/src/a.txt", "changed\n");
    let after = describe(&ws);
    let (old, new) = (&before["lib:build"], &after["lib:build"]);
    assert_ne!(input_root(old), input_root(new));
    assert_ne!(old.action_digest, new.action_digest);
}

#[test]
fn a_secret_value_never_appears_in_any_blob() {
    let ws = workspace();
    for (name, described) in describe(&ws) {
        for bytes in described.blobs.values() {
            let found = bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes());
            assert!(!found, "{name}");
        }
        // Nor in a file of the input root: the env-file itself stays home.
        for (_, path) in described.files.values() {
            assert!(!path.ends_with(".env"), "{name}: {}", path.display());
        }
    }
    // The secret still reaches the digest, through the salt.
    let before = describe(&ws);
    ws.file("tool/.env", "DB_URL=another\n");
    let after = describe(&ws);
    let (old, new) = (&before["tool:build"], &after["tool:build"]);
    assert_ne!(old.action.salt, new.action.salt);
    assert_ne!(old.action_digest, new.action_digest);
    assert_eq!(input_root(old), input_root(new));
}

#[test]
fn a_dependencys_change_reaches_its_dependents_through_the_salt() {
    let ws = workspace();
    let before = describe(&ws);
    // Neither `app`'s sources nor its inputs' upstream: `lib`'s secret is `lib`'s alone.
    ws.file("lib/.env", "API_TOKEN=another\n");
    let after = describe(&ws);
    let (old, new) = (&before["app:build"], &after["app:build"]);
    assert_eq!(input_root(old), input_root(new));
    assert_eq!(command(old), command(new));
    assert_ne!(old.action.salt, new.action.salt);
    assert_ne!(old.action_digest, new.action_digest);
}

#[test]
fn digests_are_the_sha256_of_the_serialized_messages() {
    let ws = workspace();
    for (name, described) in describe(&ws) {
        let action = described.action.encode_to_vec();
        assert_eq!(digest_of(&action), described.action_digest, "{name}");
        assert_eq!(described.blobs[&described.action_digest.hash], action);
        for (hash, bytes) in &described.blobs {
            assert_eq!(&digest_of(bytes).hash, hash, "{name}");
        }
        assert!(!described.files.is_empty(), "{name}");
        for (hash, (_, path)) in &described.files {
            assert_eq!(&digest_of(&std::fs::read(path).unwrap()).hash, hash);
        }
        assert!(!described.action.do_not_cache);
        assert!(described.action.timeout.is_none());
    }
}
