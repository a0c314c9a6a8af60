//! The `manifest` target: arbitrary bytes as the root `once.toml` of a workspace, loaded with
//! `once_graph::Workspace::load`.
//!
//! The parser is reachable only through `Workspace::load`, which reads a folder; the target
//! writes each input into one scratch folder per thread rather than widen the graph crate's API.
//! Properties: loading never panics and never fails (every manifest problem is a diagnostic);
//! every diagnostic names `once.toml` and a line and column inside its text; the overview query
//! over the result does not panic either. Must never write anything but that one file.

use std::cell::RefCell;

use once_graph::{MANIFEST_FILE, Workspace};

use crate::scratch::Scratch;

/// Keys, tables and values of `once.toml`.
pub const DICTIONARY: &[&str] = &[
    "[workspace]",
    "[targets.x]",
    "[targets.y]",
    "[targets.x.capabilities.build]",
    "[targets.x.capabilities.test]",
    "[targets.x.capabilities.test.params.n]",
    "[targets.x.evaluator]",
    "[[targets]]",
    "members = [\"*\"]",
    "name = ",
    "kind = ",
    "\"command\"",
    "\"rust\"",
    "\"node\"",
    "\"python\"",
    "path = ",
    "command = ",
    "deps = [\"x:build\"]",
    "deps = [\"^build\"]",
    "inputs = [\"**/*\"]",
    "outputs = [\"dist/\"]",
    "env = { A = \"1\" }",
    "params",
    "type = \"integer\"",
    "type = \"string\"",
    "type = \"boolean\"",
    "default = ",
    "enum = [",
    "deadline = \"10s\"",
    "deadline = \"99999999999h\"",
    "tags = [",
    "description = ",
    "capabilities",
    "{param}",
    "{{",
    "}}",
    "${",
    "\"\"\"",
    "'''",
    " = ",
    "[",
    "]",
    "1979-05-27T07:32:00Z",
    "inf",
    "nan",
    "0x7fffffffffffffff",
];

thread_local! {
    static FOLDER: RefCell<Option<Scratch>> = const { RefCell::new(None) };
}

/// Loads `data` as the root manifest and checks the diagnostics' positions.
pub fn manifest(data: &[u8]) {
    FOLDER.with(|folder| {
        let mut folder = folder.borrow_mut();
        let root = folder
            .get_or_insert_with(|| Scratch::new("manifest"))
            .path();
        let file = root.join(MANIFEST_FILE);
        std::fs::write(&file, data)
            .unwrap_or_else(|e| panic!("cannot write `{}`: {e}", file.display()));
        let workspace = Workspace::load(root)
            .unwrap_or_else(|e| panic!("a readable manifest failed to load: {e}"));
        let text = as_loaded(data);
        let lines: Vec<&str> = text.split('\n').collect();
        for d in workspace.diagnostics() {
            assert_eq!(d.file, MANIFEST_FILE, "a diagnostic on another file: {d:?}");
            let line = usize::try_from(d.line).unwrap_or(usize::MAX);
            assert!(
                (1..=lines.len()).contains(&line),
                "line {} is outside the text's {} lines: {d:?}",
                d.line,
                lines.len()
            );
            let width = lines[line - 1].chars().count();
            let column = usize::try_from(d.column).unwrap_or(usize::MAX);
            assert!(
                (1..=width + 1).contains(&column),
                "column {} is outside line {} ({width} chars): {d:?}",
                d.column,
                d.line
            );
            assert!(!d.message.is_empty(), "a diagnostic without a message");
        }
        // The overview shows a bounded preview of the diagnostics and counts all of them.
        let overview = once_graph::query::workspace(&workspace);
        assert_eq!(
            usize::try_from(overview.diagnostics_total).ok(),
            Some(workspace.diagnostics().len())
        );
        assert!(overview.diagnostics.len() <= workspace.diagnostics().len());
        let shown = serde_json::to_string(&overview).map_or(usize::MAX, |text| text.len());
        assert!(shown < 40 * 1024, "an overview of {shown} bytes");
    });
}

/// The text a diagnostic is located in: the file, or its valid UTF-8 prefix when it is not UTF-8.
fn as_loaded(data: &[u8]) -> &str {
    match std::str::from_utf8(data) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&data[..e.valid_up_to()]).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_seed_corpus_keeps_every_property() {
        crate::replay_corpus("manifest");
    }

    #[test]
    fn a_file_that_is_not_utf8_is_located_in_its_valid_prefix() {
        assert_eq!(super::as_loaded(b"ab\ncd\xff\xfe"), "ab\ncd");
    }
}
