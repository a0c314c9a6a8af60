//! A workspace without `once.toml`: `once init`, and `once mcp` serving any folder it is started
//! in, with the graph following manifests as they appear.

use std::process::Command;

use serde_json::json;

use crate::support::{Mcp, TempDir, Test, once_binary};

#[test]
fn init_writes_a_short_overlay_once_and_never_over_one() {
    let test = Test::new().file("src/main.txt", "");
    let root = test.root().to_path_buf();
    let run = test.args(["init"]).run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    assert!(run.stdout().contains("wrote"), "{}", run.transcript());
    let text = std::fs::read_to_string(root.join("once.toml")).expect("once.toml written");
    for teaches in ["[discover]", "exclude", "enabled = false", "[targets."] {
        assert!(text.contains(teaches), "{text}");
    }
    // What it wrote is a valid manifest.
    let check = Command::new(once_binary())
        .args(["check", "--json"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&check.stdout).trim(), "[]");
    // A second init leaves the file as it is.
    std::fs::write(root.join("once.toml"), "# mine\n").unwrap();
    let again = Command::new(once_binary())
        .arg("init")
        .current_dir(&root)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
    assert_eq!(
        std::fs::read_to_string(root.join("once.toml")).unwrap(),
        "# mine\n"
    );
}

#[test]
fn init_leaves_a_once_toml_link_alone_even_a_dangling_one() {
    let test = Test::new();
    let root = test.root().to_path_buf();
    let elsewhere = root.join("elsewhere.toml");
    std::os::unix::fs::symlink(&elsewhere, root.join("once.toml")).unwrap();
    let run = test.args(["init"]).run();
    assert_eq!(run.code(), 1, "{}", run.transcript());
    assert!(
        run.stderr().contains("already exists"),
        "{}",
        run.transcript()
    );
    assert!(!elsewhere.exists(), "init wrote through the link");
    assert!(
        std::fs::symlink_metadata(root.join("once.toml"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn mcp_serves_a_folder_with_no_manifest_at_all_and_follows_one_appearing() {
    let dir = TempDir::new();
    let mut command = Command::new(once_binary());
    command.arg("mcp").current_dir(dir.path());
    let mut server = Mcp::from_command(command);
    let reply = server.initialize();
    assert_eq!(reply["result"]["serverInfo"]["name"], "once-mcp", "{reply}");
    let workspace = server.call(1, "once_query_workspace", json!({}));
    let result = &workspace["result"]["structuredContent"]["result"];
    assert_eq!(result["counts"]["targets"], 0, "{workspace}");
    std::fs::write(
        dir.path().join("once.toml"),
        "[targets.docs]\nkind = \"command\"\n",
    )
    .unwrap();
    let target = server.call(2, "once_query_target", json!({"name": "docs"}));
    assert_eq!(
        target["result"]["structuredContent"]["result"]["name"], "docs",
        "{target}"
    );
}

#[test]
fn workspace_flag_takes_a_folder_without_once_toml() {
    let test = Test::new().file("README.md", "hello\n");
    let root = test.root().display().to_string();
    let run = test
        .args(["--workspace", root.as_str(), "query", "workspace"])
        .run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    assert_eq!(run.json()["counts"]["targets"], 0);
}

/// A Cargo workspace of two crates, `app` depending on `shapes` by path.
fn cargo_workspace() -> Test {
    Test::new()
        .file(
            "Cargo.toml",
            "[workspace]\nmembers = [\"crates/*\"]\nresolver = \"2\"\n",
        )
        .file(
            "crates/shapes/Cargo.toml",
            "[package]\nname = \"shapes\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        )
        .file("crates/shapes/src/lib.rs", "")
        .file(
            "crates/app/Cargo.toml",
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dev-dependencies]\nshapes = { path = \"../shapes\" }\n",
        )
        .file("crates/app/src/lib.rs", "")
}

#[test]
fn an_inferred_target_says_where_it_comes_from_and_what_each_edge_is_for() {
    let run = cargo_workspace().args(["query", "target", "app"]).run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    let target = run.json();
    assert_eq!(target["kind"], "cargo-package");
    assert_eq!(target["path"], "crates/app");
    assert_eq!(
        target["inferred"],
        json!({
            "ecosystem": "cargo",
            "manifest": {"file": "crates/app/Cargo.toml", "line": 2},
            "overlay": null,
            "edges": [{"target": "shapes", "kind": "dev", "orders": true}],
            "edges_total": 1
        })
    );
    assert_eq!(target["deps"], json!(["shapes"]));
    let test = target["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "test")
        .unwrap()
        .clone();
    assert_eq!(test["origin"], "inferred");
}

#[test]
fn once_toml_overlays_excludes_and_replaces_inferred_targets() {
    let test = cargo_workspace().manifest(
        r#"
[targets.app]
tags = ["cli"]
[targets.app.capabilities.test]
deadline = "5m"

[targets.shapes]
kind = "command"
[targets.shapes.capabilities.build]
command = "true"
"#,
    );
    let root = test.root().to_path_buf();
    let run = test.args(["query", "target", "app"]).run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    let app = run.json();
    assert_eq!(app["tags"], json!(["cli"]));
    assert_eq!(app["manifest"], json!({"file": "once.toml", "line": 2}));
    assert_eq!(
        app["inferred"]["overlay"],
        json!({"file": "once.toml", "line": 2})
    );
    let test_cap = app["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "test")
        .unwrap()
        .clone();
    assert_eq!(test_cap["origin"], "inferred+manifest");
    assert_eq!(test_cap["deadline_ms"], 300_000);
    assert_eq!(test_cap["command"], "cargo test {filter}");
    // Declared with another kind, `shapes` is the once.toml's target, not the inferred one.
    let shapes = Command::new(once_binary())
        .args(["query", "target", "shapes"])
        .current_dir(&root)
        .output()
        .unwrap();
    let shapes: serde_json::Value = serde_json::from_slice(&shapes.stdout).unwrap();
    assert_eq!(shapes["kind"], "command");
    assert_eq!(shapes["inferred"], serde_json::Value::Null);

    // Excluded, it is gone, and so is the edge to it.
    std::fs::write(
        root.join("once.toml"),
        "[discover]\nexclude = [\"shap*\"]\n",
    )
    .unwrap();
    let targets = Command::new(once_binary())
        .args(["query", "targets"])
        .current_dir(&root)
        .output()
        .unwrap();
    let targets: serde_json::Value = serde_json::from_slice(&targets.stdout).unwrap();
    // `app`, and the root target with the workspace-wide commands.
    assert_eq!(targets["total"], 2, "{targets}");
    let app = Command::new(once_binary())
        .args(["query", "target", "app"])
        .current_dir(&root)
        .output()
        .unwrap();
    let app: serde_json::Value = serde_json::from_slice(&app.stdout).unwrap();
    assert_eq!(app["deps"], json!([]));

    // Turned off, only once.toml's targets remain: none.
    std::fs::write(root.join("once.toml"), "[discover]\nenabled = false\n").unwrap();
    let targets = Command::new(once_binary())
        .args(["query", "targets"])
        .current_dir(&root)
        .output()
        .unwrap();
    let targets: serde_json::Value = serde_json::from_slice(&targets.stdout).unwrap();
    assert_eq!(targets["total"], 0, "{targets}");
}

#[test]
fn mcp_follows_cargo_manifests_a_new_member_and_a_new_edge() {
    let test = cargo_workspace();
    let mut command = Command::new(once_binary());
    command
        .arg("mcp")
        .current_dir(test.root().join("crates/app"));
    let mut server = Mcp::from_command(command);
    server.initialize();
    let targets = server.call(1, "once_query_targets", json!({}));
    // Two crates and the root target.
    assert_eq!(
        targets["result"]["structuredContent"]["result"]["total"], 3,
        "{targets}"
    );
    // A new member folder: the members glob matches it now.
    std::fs::create_dir_all(test.root().join("crates/cli/src")).unwrap();
    std::fs::write(test.root().join("crates/cli/src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(
        test.root().join("crates/cli/Cargo.toml"),
        "[package]\nname = \"cli\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\napp = { path = \"../app\" }\n",
    )
    .unwrap();
    let cli = server.call(2, "once_query_target", json!({"name": "cli"}));
    assert_eq!(
        cli["result"]["structuredContent"]["result"]["deps"],
        json!(["app"]),
        "{cli}"
    );
    // An edit of a member's manifest: a new edge, which closes a cycle shapes → cli → app →
    // shapes. Legal in Cargo (app needs shapes only for its tests); the weakest edge, app's
    // dev-dependency, is kept on record but orders nothing.
    std::fs::write(
        test.root().join("crates/shapes/Cargo.toml"),
        "[package]\nname = \"shapes\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[build-dependencies]\ncli = { path = \"../cli\" }\n",
    )
    .unwrap();
    let shapes = server.call(3, "once_query_target", json!({"name": "shapes"}));
    let inferred = &shapes["result"]["structuredContent"]["result"]["inferred"];
    assert_eq!(
        inferred["edges"],
        json!([{"target": "cli", "kind": "build", "orders": true}]),
        "{shapes}"
    );
    let app = server.call(4, "once_query_target", json!({"name": "app"}));
    let result = &app["result"]["structuredContent"]["result"];
    assert_eq!(
        result["inferred"]["edges"],
        json!([{"target": "shapes", "kind": "dev", "orders": false}]),
        "{app}"
    );
    assert_eq!(result["deps"], json!([]), "{app}");
    let check = server.call(5, "once_query_workspace", json!({}));
    let diagnostics = &check["result"]["structuredContent"]["result"]["diagnostics"];
    assert!(
        !diagnostics.to_string().contains("cycle"),
        "a legal Cargo graph is no cycle error: {check}"
    );
}

#[test]
fn mcp_follows_the_package_manager_as_lockfiles_come_and_go() {
    let test = Test::new()
        .file(
            "package.json",
            "{\"private\": true, \"workspaces\": [\"packages/*\"]}\n",
        )
        .file(
            "packages/web/package.json",
            "{\"name\": \"web\", \"scripts\": {\"build\": \"true\", \"dev\": \"vite\"}}\n",
        );
    let mut server = Mcp::spawn(test.root(), &[]);
    server.initialize();
    let build_command = |server: &mut Mcp, id: u64| {
        let web = server.call(id, "once_query_target", json!({"name": "web"}));
        let result = web["result"]["structuredContent"]["result"].clone();
        let caps = result["capabilities"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let names: Vec<String> = caps
            .iter()
            .map(|c| c["name"].as_str().unwrap_or_default().to_string())
            .collect();
        // Exactly the scripts: no lint, check or fmt that would fail with "Missing script".
        assert_eq!(names, ["build", "dev"], "{web}");
        assert_eq!(caps[1]["persistent"], true, "{web}");
        caps[0]["command"].as_str().unwrap_or_default().to_string()
    };
    assert_eq!(build_command(&mut server, 1), "npm run build");
    // A binary lockfile is only looked at, never read as text: no warning about it.
    std::fs::write(test.root().join("bun.lockb"), [0xff_u8, 0xfe, 0x00]).unwrap();
    assert_eq!(build_command(&mut server, 2), "bun run build");
    let workspace = server.call(3, "once_query_workspace", json!({}));
    let diagnostics = &workspace["result"]["structuredContent"]["result"]["diagnostics"];
    assert!(
        !diagnostics.to_string().contains("bun.lockb"),
        "{workspace}"
    );
    std::fs::write(
        test.root().join("pnpm-lock.yaml"),
        "lockfileVersion: '9.0'\n",
    )
    .unwrap();
    assert_eq!(build_command(&mut server, 4), "pnpm run build");
    std::fs::remove_file(test.root().join("pnpm-lock.yaml")).unwrap();
    std::fs::remove_file(test.root().join("bun.lockb")).unwrap();
    assert_eq!(build_command(&mut server, 5), "npm run build");
}

#[test]
fn a_declared_npm_package_offers_only_the_defaults_its_scripts_back() {
    // Discovery off: `web/package.json` would otherwise be found as a workspace of its own, and
    // the declared target would take its scripts whole; here it is declared and nothing else.
    let test = Test::new()
        .manifest(
            "[discover]\nenabled = false\n\n\
             [targets.web]\nkind = \"npm-package\"\npath = \"web\"\n\
             [targets.web.capabilities.fmt]\ncommand = \"prettier --write .\"\n",
        )
        .file(
            "web/package.json",
            "{\"name\": \"web\", \"scripts\": {\"build\": \"tsc\", \"typecheck\": \"tsc --noEmit\"}}\n",
        );
    let root = test.root().to_path_buf();
    let run = test.args(["query", "target", "web"]).run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    let names: Vec<String> = run.json()["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect();
    // No `lint` or `test` script: those defaults are gone; `fmt` is declared, so it stays.
    assert_eq!(names, ["build", "check", "fmt"]);
    // A script added later brings its default back: package.json is watched like a manifest.
    let mut server = Mcp::spawn(&root, &[]);
    server.initialize();
    let names = |server: &mut Mcp, id: u64| -> Vec<String> {
        let web = server.call(id, "once_query_target", json!({"name": "web"}));
        web["result"]["structuredContent"]["result"]["capabilities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&mut server, 1), ["build", "check", "fmt"]);
    std::fs::write(
        root.join("web/package.json"),
        "{\"name\": \"web\", \"scripts\": {\"build\": \"tsc\", \"lint\": \"eslint .\"}}\n",
    )
    .unwrap();
    let web = names(&mut server, 2);
    assert_eq!(web, ["build", "fmt", "lint"]);
}

#[test]
fn affected_follows_an_unordered_dev_edge_as_the_cache_key_does() {
    // shapes' build script uses app; app's tests use shapes: the dev edge orders nothing.
    let test = cargo_workspace().file(
        "crates/shapes/Cargo.toml",
        "[package]\nname = \"shapes\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[build-dependencies]\napp = { path = \"../app\" }\n",
    );
    let run = test
        .args([
            "query",
            "affected",
            "--files",
            "crates/shapes/src/lib.rs",
            "--json",
        ])
        .run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    let actions: Vec<String> = run.json()["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["action"].as_str().unwrap().to_string())
        .collect();
    assert!(actions.contains(&"app:test".to_string()), "{actions:?}");
}

#[test]
fn a_package_declared_under_another_name_is_the_inferred_one() {
    let test = cargo_workspace().manifest(
        "[targets.geometry]\nkind = \"cargo-package\"\npath = \"crates/shapes\"\npackage = \"shapes\"\n",
    );
    let root = test.root().to_path_buf();
    let run = test.args(["query", "targets"]).run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    // `app`, `geometry` and the root target.
    assert_eq!(run.json()["total"], 3, "{}", run.transcript());
    let app = Command::new(once_binary())
        .args(["query", "target", "app"])
        .current_dir(&root)
        .output()
        .unwrap();
    let app: serde_json::Value = serde_json::from_slice(&app.stdout).unwrap();
    assert_eq!(app["deps"], json!(["geometry"]), "{app}");
    let geometry = Command::new(once_binary())
        .args(["query", "target", "geometry"])
        .current_dir(&root)
        .output()
        .unwrap();
    let geometry: serde_json::Value = serde_json::from_slice(&geometry.stdout).unwrap();
    assert_eq!(
        geometry["inferred"]["manifest"]["file"], "crates/shapes/Cargo.toml",
        "{geometry}"
    );
    assert_eq!(geometry["inferred"]["overlay"]["file"], "once.toml");
}
