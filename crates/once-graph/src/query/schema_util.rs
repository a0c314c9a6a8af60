//! Tiny builders for the JSON Schemas of query inputs and outputs.
//!
//! Restricted on purpose to the keywords MCP clients handle well; it must
//! never emit a type array or a bare `true`/`false` schema.

use serde_json::{Map, Value, json};

pub(crate) fn string(description: &str) -> Value {
    json!({ "type": "string", "description": description })
}
pub(crate) fn integer(description: &str) -> Value {
    json!({ "type": "integer", "description": description })
}
pub(crate) fn boolean(description: &str) -> Value {
    json!({ "type": "boolean", "description": description })
}
pub(crate) fn array(items: Value, description: &str) -> Value {
    json!({ "type": "array", "items": items, "description": description })
}
pub(crate) fn strings(description: &str) -> Value {
    array(json!({ "type": "string" }), description)
}
pub(crate) fn enumeration(values: &[&str], description: &str) -> Value {
    json!({ "type": "string", "enum": values, "description": description })
}
pub(crate) fn nullable(schema: Value) -> Value {
    json!({ "anyOf": [schema, { "type": "null" }] })
}
/// An object whose values all match `values`.
pub(crate) fn map(values: Value, description: &str) -> Value {
    json!({ "type": "object", "additionalProperties": values, "description": description })
}
/// A closed object; every property in `required` must be present.
pub(crate) fn object(description: &str, props: Vec<(&str, Value)>, required: &[&str]) -> Value {
    let mut p = Map::new();
    for (k, v) in props {
        p.insert(k.to_string(), v);
    }
    json!({
        "type": "object",
        "description": description,
        "properties": p,
        "required": required,
        "additionalProperties": false,
    })
}
/// A closed object whose properties are all required.
pub(crate) fn record(description: &str, props: Vec<(&str, Value)>) -> Value {
    let names: Vec<String> = props.iter().map(|(k, _)| (*k).to_string()).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    object(description, props, &names)
}
