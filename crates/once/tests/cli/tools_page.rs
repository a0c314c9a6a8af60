//! The book's `docs/src/reference/tools.md` is generated from the MCP catalog (`once query tools
//! --markdown`); this test regenerates it and fails when the committed page is stale, or when the
//! agents guide's figure of the size of `tools/list` is not the page's. `ONCE_BLESS=1` rewrites
//! both.

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
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src/reference/tools.md");
    if std::env::var_os("ONCE_BLESS").is_some() {
        std::fs::write(&committed, &page).unwrap();
    }
    let on_disk = std::fs::read_to_string(&committed).unwrap_or_default();
    assert!(
        on_disk == page,
        "`docs/src/reference/tools.md` is stale: regenerate it with `once query tools --markdown > \
         docs/src/reference/tools.md` (or run this test with ONCE_BLESS=1)"
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

const SIZE_START: &str = "<!-- tools/list size -->";
const SIZE_END: &str = "<!-- /tools/list size -->";

/// The figure between the size markers of `text`, markers included, and where it starts.
fn size_figure(text: &str) -> Option<(usize, &str)> {
    let start = text.find(SIZE_START)?;
    let end = start + text[start..].find(SIZE_END)? + SIZE_END.len();
    Some((start, &text[start..end]))
}

#[test]
fn the_agents_guide_quotes_the_size_of_tools_list_that_the_catalog_has() {
    let dir = TempDir::new();
    std::fs::write(dir.path().join("once.toml"), "").unwrap();
    let page = generate(dir.path(), &["--markdown"]);
    let (_, figure) = size_figure(&page).expect("the page gives the size of tools/list");
    assert!(figure.contains(" KB in `once mcp` and "), "{figure}");
    let readme_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src/guides/agents.md");
    let readme = std::fs::read_to_string(&readme_path).unwrap();
    let (at, quoted) =
        size_figure(&readme).expect("the agents guide quotes the size of tools/list");
    if quoted != figure && std::env::var_os("ONCE_BLESS").is_some() {
        let blessed = format!("{}{figure}{}", &readme[..at], &readme[at + quoted.len()..]);
        std::fs::write(&readme_path, blessed).unwrap();
        return;
    }
    assert_eq!(
        quoted, figure,
        "the agents guide's size of `tools/list` is stale: copy the figure from \
         `once query tools --markdown` (or run this test with ONCE_BLESS=1)"
    );
}
