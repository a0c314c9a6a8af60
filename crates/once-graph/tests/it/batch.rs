//! Which capabilities may run in batches: a discovered Cargo package's `test` declares how
//! (`cargo test -p NAME@VERSION`, joined from the workspace root), off by default; an overlay's
//! `batch = true|false` switches it, and is refused where the kind declares no batch.

use crate::util::TempWs;

const CARGO_A_B: &[(&str, &str)] = &[
    ("Cargo.toml", "[workspace]\nmembers = [\"a\", \"b\"]\n"),
    (
        "a/Cargo.toml",
        "[package]\nname = \"a\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    ),
    (
        "b/Cargo.toml",
        "[package]\nname = \"b\"\nversion = \"0.2.0\"\nedition = \"2021\"\n",
    ),
];

fn batch_of(ws: &once_graph::Workspace, target: &str, capability: &str) -> Option<(String, bool)> {
    let t = ws.targets().iter().find(|t| t.name == target).unwrap();
    let b = t.capability(capability).unwrap().batch.as_ref()?;
    Some((b.member.to_string(), b.on))
}

#[test]
fn cargo_tests_declare_a_batch_that_is_off_until_an_overlay_turns_it_on() {
    let ws = TempWs::new(CARGO_A_B);
    let loaded = ws.load();
    assert_eq!(
        batch_of(&loaded, "a", "test"),
        Some(("-p a@0.1.0".into(), false))
    );
    assert_eq!(batch_of(&loaded, "b", "build"), None);

    ws.write(
        "once.toml",
        "[targets.a.capabilities.test]\nbatch = true\n[targets.b.capabilities.test]\nbatch = false\n",
    );
    let loaded = ws.load();
    assert!(!loaded.has_errors(), "{:?}", loaded.diagnostics());
    assert_eq!(
        batch_of(&loaded, "a", "test"),
        Some(("-p a@0.1.0".into(), true))
    );
    assert_eq!(
        batch_of(&loaded, "b", "test"),
        Some(("-p b@0.2.0".into(), false))
    );
}

#[test]
fn batch_on_a_capability_without_a_batch_is_refused_and_off_is_harmless() {
    let ws = TempWs::new(CARGO_A_B);
    ws.write(
        "once.toml",
        "[targets.a.capabilities.build]\nbatch = true\n[targets.b.capabilities.build]\nbatch = false\n",
    );
    let loaded = ws.load();
    let codes: Vec<(&str, u32)> = loaded
        .diagnostics()
        .iter()
        .map(|d| (d.code, d.line))
        .collect();
    assert_eq!(codes, [("no-batch", 2)], "{:?}", loaded.diagnostics());
}
