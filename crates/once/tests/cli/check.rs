//! `once check`: every problem at once, rendered for people or as JSON, with exit status 2.

use insta::assert_snapshot;

use crate::support::Test;

const BROKEN: &str = r#"[workspace]
nmae = "shop"

[targets.core]
kind = "cargo-package"
tags = "backend"

[targets.web]
kind = "npm-package"
deps = ["coer"]
"#;

#[test]
fn every_problem_is_reported_with_its_location() {
    let run = Test::new().manifest(BROKEN).args(["check"]).run();
    assert_snapshot!(run.transcript());
}

#[test]
fn json_diagnostics() {
    let run = Test::new().manifest(BROKEN).args(["check", "--json"]).run();
    assert_eq!(run.code(), 2);
    let diagnostics = run.json();
    let places: Vec<String> = diagnostics
        .as_array()
        .expect("a list")
        .iter()
        .map(|d| {
            format!(
                "{}:{}:{} {}",
                d["file"].as_str().expect("file"),
                d["line"],
                d["column"],
                d["code"].as_str().expect("code")
            )
        })
        .collect();
    assert_eq!(places.len(), 3, "{places:?}");
    assert!(
        places.iter().any(|p| p.starts_with("once.toml:2:1 ")),
        "{places:?}"
    );
    assert!(
        places.iter().any(|p| p.starts_with("once.toml:6:")),
        "{places:?}"
    );
    assert!(
        places.iter().any(|p| p.starts_with("once.toml:10:")),
        "{places:?}"
    );
}

#[test]
fn a_valid_manifest_passes() {
    let run = Test::new()
        .manifest(
            "[targets.a]\nkind = \"command\"\n[targets.a.capabilities.build]\ncommand = \"true\"\n",
        )
        .args(["check"])
        .run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    assert!(run.stdout().contains("is valid"));
}

#[test]
fn a_manifest_that_is_not_utf8_is_a_clean_error() {
    let test = Test::new();
    std::fs::write(
        test.root().join("once.toml"),
        b"[targets.a]\nkind = \"\xff\xfe\"\n",
    )
    .expect("writes");
    let run = test.args(["check"]).run();
    assert_eq!(run.code(), 2, "{}", run.transcript());
    assert!(run.stderr().contains("once.toml:2:"), "{}", run.stderr());
}

#[test]
fn a_cargo_feature_the_package_does_not_declare_is_a_warning() {
    let run = crate::support::Test::new()
        .manifest(
            "[targets.core]\nkind = \"cargo-package\"\npath = \"core\"\n\
             features = [\"fast\", \"fats\", \"serde\", \"dep-feature/x\"]\n",
        )
        .file(
            "core/Cargo.toml",
            "[package]\nname = \"core\"\nversion = \"0.1.0\"\n\n[features]\nfast = []\n\n\
             [dependencies]\nserde = { version = \"1\", optional = true }\n",
        )
        .args(["check"])
        .run();
    // A warning, not an error: cargo has the last word on what a package offers.
    assert_eq!(run.code(), 0, "{}", run.transcript());
    let stderr = run.stderr();
    assert!(stderr.contains("unknown-feature"), "{stderr}");
    assert!(stderr.contains("feature `fats`"), "{stderr}");
    assert!(stderr.contains("`default`, `fast`, `serde`"), "{stderr}");
    assert_eq!(stderr.matches("unknown-feature").count(), 1, "{stderr}");
}

/// The feature check reads the package's `Cargo.toml` through discovery's one reader: a FIFO
/// there (which nobody will ever write) is not a manifest, and must never hang the load.
#[cfg(unix)]
#[test]
fn a_cargo_manifest_that_is_a_fifo_never_hangs_the_feature_check() {
    let test = crate::support::Test::new().manifest(
        "[targets.core]\nkind = \"cargo-package\"\npath = \"core\"\nfeatures = [\"fast\"]\n",
    );
    std::fs::create_dir_all(test.root().join("core")).unwrap();
    let fifo = test.root().join("core/Cargo.toml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let mut command = std::process::Command::new(crate::support::once_binary());
    command
        .arg("--workspace")
        .arg(test.root())
        .arg("check")
        .env_remove("ONCE_LOG");
    let output = crate::support::output_within(command);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("unknown-feature"), "{stderr}");
}
