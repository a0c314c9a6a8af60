//! `docs/tools.md` is generated from the MCP catalog (`once query tools --markdown`); this test
//! regenerates it and fails when the committed page is stale. `ONCE_BLESS=1` rewrites it.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::{TempDir, once_binary, output_within};

fn generate(root: &Path, args: &[&str]) -> String {
    let mut command = Command::new(once_binary());
    command
        .arg("--workspace")
        .arg(root)
        .args(["query", "tools"])
        .args(args)
        .env_remove("ONCE_LOG")
        .stdin(Stdio::null());
    let output = output_within(command);
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn the_tools_page_is_the_catalog_it_documents() {
    let dir = TempDir::new();
    std::fs::write(dir.path().join("once.toml"), "").unwrap();
    let page = generate(dir.path(), &["--markdown"]);
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/tools.md");
    if std::env::var_os("ONCE_BLESS").is_some() {
        std::fs::write(&committed, &page).unwrap();
    }
    let on_disk = std::fs::read_to_string(&committed).unwrap_or_default();
    assert!(
        on_disk == page,
        "`docs/tools.md` is stale: regenerate it with `once query tools --markdown > docs/tools.md` \
         (or run this test with ONCE_BLESS=1)"
    );

    // Every tool of the catalog has its section, gated ones marked with their flag.
    let tools: serde_json::Value =
        serde_json::from_str(&generate(dir.path(), &["--json"])).unwrap();
    let tools = tools.as_array().unwrap();
    assert!(tools.len() > 10, "{tools:?}");
    for tool in tools {
        let name = tool["name"].as_str().unwrap();
        assert!(
            page.contains(&format!("\n## `{name}`\n")),
            "{name} has no section"
        );
        if let Some(flag) = tool["gate"].as_str() {
            assert!(
                page.contains(&format!(
                    "| [`{name}`](#{name}) | {} | `{flag}` |",
                    tool["title"].as_str().unwrap()
                )),
                "{name} is not marked `{flag}`"
            );
        }
    }
    assert!(page.contains("`--allow-run`") && page.contains("`--allow-edit`"));
}
