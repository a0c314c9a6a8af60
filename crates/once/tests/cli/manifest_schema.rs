//! `once query schema --manifest`: the JSON Schema of `once.toml` alone, a document an editor's
//! TOML support (taplo, Even Better TOML) can be pointed at.

use serde_json::{Value, json};

use crate::support::Test;

fn manifest_schema() -> Value {
    let run = Test::new().args(["query", "schema", "--manifest"]).run();
    assert_eq!(run.code(), 0, "{}", run.transcript());
    run.json()
}

/// Every `$id` in `value`, at any depth: a schema written to a file must resolve its references
/// against that file, not a made-up address.
fn ids(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(id) = map.get("$id") {
                found.push(id.to_string());
            }
            map.values().for_each(|v| ids(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| ids(v, found)),
        _ => {}
    }
}

/// The keys of `document` that `schema` forbids through `additionalProperties: false`, by path:
/// the part of JSON Schema validation that catches a misspelt key.
fn unknown_keys(schema: &Value, document: &Value, path: &str, found: &mut Vec<String>) {
    let Some(object) = document.as_object() else {
        return;
    };
    let properties = schema.get("properties").and_then(Value::as_object);
    for (key, value) in object {
        let at = format!("{path}.{key}");
        match properties.and_then(|p| p.get(key)) {
            Some(property) => unknown_keys(property, value, &at, found),
            None => match schema.get("additionalProperties") {
                Some(Value::Bool(false)) => found.push(at),
                Some(other @ Value::Object(_)) => unknown_keys(other, value, &at, found),
                _ => {}
            },
        }
    }
}

#[test]
fn the_manifest_schema_is_one_plain_document() {
    let schema = manifest_schema();
    assert_eq!(
        schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
        "{schema:#}"
    );
    let mut found = Vec::new();
    ids(&schema, &mut found);
    assert!(found.is_empty(), "no `$id` in the document: {found:?}");
    assert_eq!(schema["type"], "object");
    for key in ["workspace", "targets", "cache", "discover"] {
        assert!(schema["properties"].get(key).is_some(), "`{key}` missing");
    }
    // The kinds' entries (what `once query schema` adds around it) are not part of it.
    assert!(schema.get("kinds").is_none() && schema.get("manifest").is_none());
}

#[test]
fn a_misspelt_key_fails_validation_and_a_good_manifest_passes() {
    let schema = manifest_schema();
    let good = json!({
        "workspace": { "name": "shop", "members": ["services/*"] },
        "cache": { "remote": "grpc://cache:8980", "upload": false },
        "targets": { "web": { "kind": "npm-package", "path": "web", "deps": ["core"],
            "capabilities": { "e2e": { "command": "npx playwright test", "deps": [":build"] } } } }
    });
    let mut found = Vec::new();
    unknown_keys(&schema, &good, "", &mut found);
    assert!(found.is_empty(), "{found:?}");

    let bad = json!({
        "worksapce": { "name": "shop" },
        "targets": { "web": { "kidn": "npm-package",
            "capabilities": { "test": { "comand": "npm test" } } } }
    });
    let mut found = Vec::new();
    unknown_keys(&schema, &bad, "", &mut found);
    found.sort();
    assert_eq!(
        found,
        [
            ".targets.web.capabilities.test.comand",
            ".targets.web.kidn",
            ".worksapce"
        ]
    );
}

#[test]
fn manifest_and_a_kind_are_two_questions() {
    let run = Test::new()
        .args(["query", "schema", "command", "--manifest"])
        .run();
    assert_eq!(run.code(), 2, "{}", run.transcript());
}
