//! One `package.json`: its object, where its top-level keys are, its dependencies.
//!
//! Parsing is `serde_json`'s (with key order kept, so scripts keep theirs);
//! this module only adds the byte offset of a top-level key, for diagnostics
//! and provenance. It must never fail: a file that is not a JSON object is a
//! warning and `None`.

use serde_json::{Map, Value};

use crate::discover::{EdgeKind, Reader};

/// The dependency tables of a `package.json` whose meaning is the same under every package
/// manager, with the edge kind each one means; `peerDependencies` is not one of them.
const DEPENDENCY_TABLES: [(&str, EdgeKind); 3] = [
    ("dependencies", EdgeKind::Normal),
    ("devDependencies", EdgeKind::Dev),
    ("optionalDependencies", EdgeKind::Optional),
];

/// The top-level object of the `package.json` read as `file`; a warning and `None` when it is
/// not a JSON object.
pub(super) fn object(reader: &mut Reader, file: usize) -> Option<Map<String, Value>> {
    let rel = reader.rel(file).to_string();
    let text = reader.text(file);
    // Node and the package managers accept a byte order mark before the JSON; serde_json not.
    let json = text.strip_prefix('\u{feff}').unwrap_or(text);
    let bom = text.len() - json.len();
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Object(map)) => Some(map),
        Ok(_) => {
            reader.warn(
                file,
                0,
                "bad-package-json",
                format!("`{rel}` is not a JSON object; its package was skipped"),
            );
            None
        }
        Err(e) => {
            let offset = bom + offset_of(json, e.line(), e.column());
            reader.warn(
                file,
                offset,
                "bad-package-json",
                format!("`{rel}` is not valid JSON ({e}); its package was skipped"),
            );
            None
        }
    }
}

/// The string field `key` of `map`.
pub(super) fn string<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    map.get(key).and_then(Value::as_str)
}

/// `(name, spec, kind)` for every string entry of the dependency tables, in table order, then
/// the `peerDependencies` entries as `peers` (the kind a peer means to the workspace's package
/// manager; `None` when it installs no peers, so a peer is no edge). A peer that another table
/// lists too is installed as that table says, so it adds nothing (vite's `@vitejs/plugin-legacy`
/// peers on `vite` and has it as a dev dependency: pnpm's lockfile has the dev edge only).
pub(super) fn dependencies(
    map: &Map<String, Value>,
    peers: Option<EdgeKind>,
) -> Vec<(&str, &str, EdgeKind)> {
    let entries = |table: &str| {
        map.get(table)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(name, spec)| Some((name.as_str(), spec.as_str()?)))
    };
    let mut out = Vec::new();
    for (table, kind) in DEPENDENCY_TABLES {
        out.extend(entries(table).map(|(name, spec)| (name, spec, kind)));
    }
    if let Some(kind) = peers {
        let peers: Vec<_> = entries("peerDependencies")
            .filter(|(name, _)| !out.iter().any(|(listed, _, _)| listed == name))
            .map(|(name, spec)| (name, spec, kind))
            .collect();
        out.extend(peers);
    }
    out
}

/// Byte offset of the top-level key `key` (its opening quote) in the JSON object `text`;
/// 0 when it is not there. Assumes `text` already parsed as an object.
pub(super) fn key_offset(text: &str, key: &str) -> usize {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                // A key is a string at the object's own depth followed by `:`.
                if depth == 1 && text.get(start + 1..i) == Some(key) {
                    let after = text.get(i + 1..).unwrap_or("").trim_start();
                    if after.starts_with(':') {
                        return start;
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    0
}

/// Byte offset of a 1-based line and column, as `serde_json` reports them.
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    (line_start + column.saturating_sub(1)).min(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_top_level_keys_only() {
        let text = r#"{"author": {"name": "x"}, "a\"name": 1, "list": ["name"], "name" : "p"}"#;
        assert_eq!(&text[key_offset(text, "name")..][..6], "\"name\"");
        assert_eq!(key_offset(text, "author"), 1);
        assert_eq!(key_offset(text, "missing"), 0);
    }

    #[test]
    fn dependencies_keep_table_order_and_skip_non_strings() {
        let v: Value = serde_json::from_str(
            r#"{"devDependencies": {"b": "1"}, "dependencies": {"z": "1", "a": {"x": 1}},
                "peerDependencies": {"c": "*", "b": "*"}, "optionalDependencies": {"d": "*"}}"#,
        )
        .unwrap();
        let Value::Object(map) = v else { panic!() };
        assert_eq!(
            dependencies(&map, Some(EdgeKind::Optional)),
            [
                ("z", "1", EdgeKind::Normal),
                ("b", "1", EdgeKind::Dev),
                ("d", "*", EdgeKind::Optional),
                ("c", "*", EdgeKind::Optional),
            ]
        );
        assert_eq!(dependencies(&map, None).len(), 3);
    }
}
