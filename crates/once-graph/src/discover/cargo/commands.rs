//! The commands a discovered Cargo package runs, chosen so that each acts on that package
//! alone without naming it where naming it could be ambiguous.
//!
//! Cargo picks the package whose `Cargo.toml` is in the folder a command runs in, and every
//! capability runs in its target's folder, so a member's commands need no `-p`. The one
//! exception is a package at the root of its own workspace: there `cargo fmt` formats every
//! member, and when the workspace sets `default-members` the other commands act on those
//! instead. Only then does the package name itself: `cargo fmt -p NAME` (which matches
//! workspace members only) and `-p NAME@VERSION` for the others (which a registry package of
//! the same name cannot also match unless it has the same version). `cargo clippy` also lints
//! the members a package depends on by path unless told `--no-deps`, so a dependency's warning
//! would fail its dependent's lint too: each package's lint reports its own code only. Commands
//! must never change the machine: no `rustup`, no `cargo install`.

use std::sync::Arc;

use super::super::InferredCapability;
use crate::model::Batch;

/// How a package must be selected from its own folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Selection {
    /// The folder's own manifest selects it for every command.
    Folder,
    /// The workspace root's own package: `cargo fmt` needs its name, and so do the others
    /// when `spec` is set (the workspace has `default-members`).
    Root { name: String, spec: Option<String> },
}

/// The five capabilities of the `cargo-package` kind, as commands for `selection`. `spec` is
/// the package as `-p` names it from the workspace root (`NAME@VERSION`): with it, `test` may
/// join others in one `cargo test -p a -p b …` ([`test_batch`]).
pub(super) fn capabilities(selection: &Selection, spec: Option<&str>) -> Vec<InferredCapability> {
    let (fmt, pick) = match selection {
        Selection::Folder => (String::new(), String::new()),
        Selection::Root { name, spec } => (
            format!(" -p {name}"),
            spec.as_ref()
                .map(|s| format!(" -p {s}"))
                .unwrap_or_default(),
        ),
    };
    let cap = |name: &str, command: String, description: &str| InferredCapability {
        name: name.to_string(),
        command,
        description: description.to_string(),
        persistent: false,
        inputs: None,
        stands_for: None,
        batch: None,
    };
    let mut test = cap(
        "test",
        format!("cargo test{pick} {{filter}}"),
        "Run the package's tests",
    );
    // The root's own package already names itself; it runs alone.
    if *selection == Selection::Folder {
        test.batch = spec.map(test_batch);
    }
    vec![
        cap(
            "build",
            format!("cargo build{pick} {{release}}"),
            "Compile the package",
        ),
        cap(
            "check",
            format!("cargo check{pick}"),
            "Type-check the package",
        ),
        cap("fmt", format!("cargo fmt{fmt}"), "Format the sources"),
        cap(
            "lint",
            format!("cargo clippy{pick} --no-deps -- -D warnings"),
            "Lint with clippy, warnings are errors",
        ),
        test,
    ]
}

/// Whether a package's `test` joins others by default. Off: on this repository's five library
/// crates, warm, one `cargo test -p a -p b …` took longer than one `cargo test` per package
/// side by side (cargo builds the test binaries in parallel either way, but runs them one after
/// another), see README.md, *Batches*.
pub(crate) const CARGO_TEST_BATCH: bool = false;

/// How `cargo test` of the package `spec` joins others: `cargo test -p a -p b …` from the
/// workspace root, which builds the test binaries of all of them in one cargo and runs them.
/// Only a member whose command is still `cargo test {filter}` with no filter given and no words
/// after `--` joins: those would reach every member's binaries.
fn test_batch(spec: &str) -> Batch {
    Batch {
        command: Arc::from("cargo test"),
        // `{filter}` not given renders to nothing, so the batch adds nothing either: each
        // member's doc-tests run in the batch as they do alone.
        tail: Arc::from(""),
        alone: Arc::from("cargo test {filter}"),
        member: Arc::from(format!("-p {spec}")),
        dir: Arc::from("."),
        on: CARGO_TEST_BATCH,
    }
}

/// Whether `word` can stand in a command unquoted and outside any template placeholder:
/// Cargo's own package names and versions always can.
pub(super) fn plain_word(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+' | '@'))
}

/// The workspace-wide commands of a Cargo workspace, as its contributors run them from the
/// root: `test` with `cargo nextest run` where the repository configures nextest
/// (`.config/nextest.toml`), else `cargo test`; `check`, `lint` and `fmt` over every member.
pub(super) fn workspace(nextest: bool) -> Vec<InferredCapability> {
    let cap = |name: &str, command: &str, description: &str| InferredCapability {
        name: name.to_string(),
        command: command.to_string(),
        description: description.to_string(),
        persistent: false,
        inputs: None,
        stands_for: None,
        batch: None,
    };
    let test = if nextest {
        cap(
            "test",
            "cargo nextest run --workspace",
            "Run every member's tests with nextest, as `.config/nextest.toml` configures it",
        )
    } else {
        cap("test", "cargo test --workspace", "Run every member's tests")
    };
    vec![
        test,
        cap(
            "check",
            "cargo check --workspace --all-targets",
            "Type-check every member and its tests",
        ),
        cap(
            "lint",
            "cargo clippy --workspace --all-targets -- -D warnings",
            "Lint every member with clippy, warnings are errors",
        ),
        cap("fmt", "cargo fmt --all", "Format every member"),
    ]
}
