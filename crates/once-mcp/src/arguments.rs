//! The strict input schema, enforced in one place for every tool alike: a call's arguments are
//! checked against the tool's `inputSchema` before its handler runs, and a call that breaks it
//! gets a tool error (`isError: true`; a `refused` answer for a tool that acts) that names the
//! argument and the bound it broke.
//!
//! What is enforced: undeclared arguments (at the root and in nested closed objects), `type`,
//! `enum`, `const`, `minimum`/`maximum` and their exclusive forms, `minLength`/`maxLength`
//! (counted in characters, as JSON Schema counts them), `minItems`/`maxItems`, `items`, nested
//! `properties`/`required`/`additionalProperties`, and `anyOf`/`oneOf` (as "one of the forms
//! matches"). A root argument that is `null` counts as absent, as the handlers' readers treat it,
//! and the root's `required` is left to the handlers, whose messages say what the argument is
//! for. `pattern` is left to the handlers too (no regular expression engine here). This module
//! must never run a handler, and never repeat more of a value than `excerpt` allows.

use std::cmp::Ordering;

use serde_json::{Map, Number, Value};

use crate::message::excerpt;
use crate::tool::Tool;

/// Checks `arguments` against `tool`'s input schema; the error is the text of the tool error.
pub(crate) fn check_arguments(tool: &Tool, arguments: &Map<String, Value>) -> Result<(), String> {
    let Some(declared) = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
    else {
        return Ok(());
    };
    if let Some(text) = undeclared(arguments, declared) {
        return Err(format!(
            "{} does not take {text}; fix the arguments and call it again",
            tool.name
        ));
    }
    for (name, value) in arguments {
        let Some(schema) = declared.get(name) else {
            continue;
        };
        if value.is_null() {
            continue;
        }
        check(value, schema, name).map_err(|(path, problem)| {
            format!(
                "{}: the argument `{path}` {problem}; fix the arguments and call it again",
                tool.name
            )
        })?;
    }
    Ok(())
}

/// Where a value broke its schema, and how (a phrase that follows the argument's name).
type Problem = (String, String);

/// `None` when every key of `object` is declared; else the keys it does not take and the ones it
/// accepts, as a phrase.
fn undeclared(object: &Map<String, Value>, declared: &Map<String, Value>) -> Option<String> {
    let unknown: Vec<&str> = object
        .keys()
        .map(String::as_str)
        .filter(|key| !declared.contains_key(*key))
        .collect();
    if unknown.is_empty() {
        return None;
    }
    let quoted = |names: &mut dyn Iterator<Item = &str>| {
        names
            .map(|n| format!("`{}`", excerpt(n)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let accepted = if declared.is_empty() {
        "it takes no arguments".to_string()
    } else {
        format!(
            "it accepts {}",
            quoted(&mut declared.keys().map(String::as_str))
        )
    };
    // A flood of unknown keys is summed up, not listed.
    let shown = quoted(&mut unknown.iter().copied().take(5));
    let more = unknown.len().saturating_sub(5);
    let listed = if more > 0 {
        format!("{shown} and {more} more")
    } else {
        shown
    };
    Some(format!("{listed}: {accepted}"))
}

fn check(value: &Value, schema: &Value, path: &str) -> Result<(), Problem> {
    let problem = |text: String| Err((path.to_owned(), text));
    for key in ["anyOf", "oneOf"] {
        if let Some(forms) = schema.get(key).and_then(Value::as_array)
            && !forms.iter().any(|form| check(value, form, path).is_ok())
        {
            return problem(format!(
                "is {}, which matches none of the forms its schema allows",
                shown(value)
            ));
        }
    }
    if let Some(kind) = schema.get("type").and_then(Value::as_str)
        && !has_type(value, kind)
    {
        return problem(format!(
            "must be {}, not {}",
            article(kind),
            crate::tool::json_kind(value)
        ));
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let choices: Vec<String> = allowed.iter().map(shown).collect();
        return problem(format!(
            "is {}; it must be one of {}",
            shown(value),
            choices.join(", ")
        ));
    }
    if let Some(constant) = schema.get("const")
        && constant != value
    {
        return problem(format!("must be {}", shown(constant)));
    }
    match value {
        Value::Number(number) => check_number(number, schema).or_else(problem),
        Value::String(text) => check_length(text, schema).or_else(problem),
        Value::Array(items) => check_array(items, schema, path),
        Value::Object(object) => check_object(object, schema, path),
        Value::Null | Value::Bool(_) => Ok(()),
    }
}

fn check_number(number: &Number, schema: &Value) -> Result<(), String> {
    let bound = |key: &str| schema.get(key).and_then(Value::as_number);
    let is = number.to_string();
    if let Some(minimum) = bound("minimum")
        && compare(number, minimum) == Some(Ordering::Less)
    {
        return Err(format!("is {is}, below the minimum {minimum}"));
    }
    if let Some(maximum) = bound("maximum")
        && compare(number, maximum) == Some(Ordering::Greater)
    {
        return Err(format!("is {is}, above the maximum {maximum}"));
    }
    if let Some(floor) = bound("exclusiveMinimum")
        && compare(number, floor) != Some(Ordering::Greater)
    {
        return Err(format!("is {is}; it must be above {floor}"));
    }
    if let Some(ceiling) = bound("exclusiveMaximum")
        && compare(number, ceiling) != Some(Ordering::Less)
    {
        return Err(format!("is {is}; it must be below {ceiling}"));
    }
    Ok(())
}

/// Compares exactly when both are integers (a u64 and a negative i64 included), else as floats.
fn compare(a: &Number, b: &Number) -> Option<Ordering> {
    let integer = |n: &Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    match (integer(a), integer(b)) {
        (Some(a), Some(b)) => Some(a.cmp(&b)),
        _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

fn check_length(text: &str, schema: &Value) -> Result<(), String> {
    let limit = |key: &str| schema.get(key).and_then(Value::as_u64);
    let (min, max) = (limit("minLength"), limit("maxLength"));
    if min.is_none() && max.is_none() {
        return Ok(());
    }
    let length = u64::try_from(text.chars().count()).unwrap_or(u64::MAX);
    if let Some(min) = min.filter(|&min| length < min) {
        return Err(format!(
            "has {}; at least {} allowed",
            counted(length, "character"),
            counted(min, "character")
        ));
    }
    if let Some(max) = max.filter(|&max| length > max) {
        return Err(format!(
            "has {}; at most {} allowed",
            counted(length, "character"),
            counted(max, "character")
        ));
    }
    Ok(())
}

fn check_array(items: &[Value], schema: &Value, path: &str) -> Result<(), Problem> {
    let limit = |key: &str| schema.get(key).and_then(Value::as_u64);
    let length = u64::try_from(items.len()).unwrap_or(u64::MAX);
    if let Some(min) = limit("minItems").filter(|&min| length < min) {
        return Err((
            path.to_owned(),
            format!(
                "has {}; at least {} allowed",
                counted(length, "item"),
                counted(min, "item")
            ),
        ));
    }
    if let Some(max) = limit("maxItems").filter(|&max| length > max) {
        return Err((
            path.to_owned(),
            format!(
                "has {}; at most {} allowed",
                counted(length, "item"),
                counted(max, "item")
            ),
        ));
    }
    if let Some(each) = schema.get("items").filter(|s| s.is_object()) {
        for (index, item) in items.iter().enumerate() {
            check(item, each, &format!("{path}[{index}]"))?;
        }
    }
    Ok(())
}

fn check_object(object: &Map<String, Value>, schema: &Value, path: &str) -> Result<(), Problem> {
    let declared = schema.get("properties").and_then(Value::as_object);
    let extra = schema.get("additionalProperties");
    if extra == Some(&Value::Bool(false)) {
        let empty = Map::new();
        if let Some(text) = undeclared(object, declared.unwrap_or(&empty)) {
            return Err((path.to_owned(), format!("does not take {text}")));
        }
    }
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        let missing: Vec<&str> = required
            .iter()
            .filter_map(Value::as_str)
            .filter(|name| !object.contains_key(*name))
            .collect();
        if let Some(name) = missing.first() {
            return Err((
                path.to_owned(),
                format!("lacks `{name}`, which is required"),
            ));
        }
    }
    for (key, value) in object {
        let here = format!("{path}.{}", excerpt(key));
        match declared.and_then(|d| d.get(key)) {
            Some(child) => check(value, child, &here)?,
            None => {
                if let Some(child) = extra.filter(|e| e.is_object()) {
                    check(value, child, &here)?;
                }
            }
        }
    }
    Ok(())
}

fn has_type(value: &Value, kind: &str) -> bool {
    match kind {
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "null" => value.is_null(),
        // A type we do not know is not ours to refuse.
        _ => true,
    }
}

fn article(kind: &str) -> String {
    match kind {
        "integer" | "object" | "array" => format!("an {kind}"),
        "null" => "null".into(),
        other => format!("a {other}"),
    }
}

/// A value as an error message may show it: JSON text, cut by `excerpt`.
fn shown(value: &Value) -> String {
    match value {
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
        Value::String(text) => format!("{:?}", excerpt(text)),
        other => excerpt(&other.to_string()).into_owned(),
    }
}

fn counted(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
