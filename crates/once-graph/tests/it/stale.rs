//! Staleness: edits, added members, and touches without change.

use crate::queries::{API, ROOT};
use crate::util::TempWs;

#[test]
fn stale_detection_and_reload() {
    let tmp = TempWs::new(&[("once.toml", ROOT), ("services/api/once.toml", API)]);
    let mut ws = tmp.load();
    assert!(!ws.is_stale());

    // Rewriting identical bytes (a touch) is not a change.
    tmp.write("once.toml", ROOT);
    assert!(!ws.is_stale());
    assert!(!ws.reload_if_stale().unwrap());

    // Editing a member manifest is.
    tmp.write("services/api/once.toml", &API.replace("backend", "edge"));
    assert!(ws.is_stale());
    assert!(ws.reload_if_stale().unwrap());
    assert!(!ws.is_stale());
    assert_eq!(
        ws.target("api").map(|t| t.tags.clone()),
        Some(vec!["edge".to_string()])
    );

    // Adding a member folder with a manifest is.
    tmp.write(
        "services/pay/once.toml",
        "[targets.pay]\nkind = \"go-module\"\n",
    );
    assert!(ws.is_stale());
    assert!(ws.reload_if_stale().unwrap());
    assert!(ws.target("pay").is_some());
    assert_eq!(
        ws.target("pay").map(|t| t.path.as_str()),
        Some("services/pay")
    );

    // A folder without a manifest is not a member, so not a change.
    tmp.write("services/empty/readme.md", "x");
    assert!(!ws.is_stale());

    // Removing a member is.
    std::fs::remove_dir_all(tmp.path().join("services/pay")).unwrap();
    assert!(ws.is_stale());
    assert!(ws.reload_if_stale().unwrap());
    assert!(ws.target("pay").is_none());
}
