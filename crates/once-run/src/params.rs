//! Checking parameters against a capability's typed declaration, and turning typed values into
//! the text a command template receives.
//!
//! Every problem names what was expected. A value from a command line arrives as a string and is
//! converted to the declared type here; a value from an agent arrives typed and must already
//! match. This module must never run or render a whole command.

use std::collections::BTreeMap;

use once_graph::model::{Param, ParamType};
use serde_json::Value;

use crate::error::Error;

/// Checks `given` against `declared` for `action` and returns every parameter's value, defaults
/// filled in. Unknown names, wrong types, values outside an enum and missing required
/// parameters are errors.
pub fn resolve(
    action: &str,
    declared: &[Param],
    given: &BTreeMap<String, Value>,
) -> Result<BTreeMap<String, Value>, Error> {
    for name in given.keys() {
        if !declared.iter().any(|p| &p.name == name) {
            let accepted = if declared.is_empty() {
                "none (this capability takes no parameters)".to_owned()
            } else {
                declared
                    .iter()
                    .map(|p| format!("`{}` ({})", p.name, expected(&p.ty)))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(Error::UnknownParam {
                action: action.to_owned(),
                name: name.clone(),
                accepted,
            });
        }
    }
    let mut values = BTreeMap::new();
    for param in declared {
        let value = match given.get(&param.name) {
            Some(value) => convert(action, param, value)?,
            None => match &param.default {
                Some(default) => default.clone(),
                None => {
                    return Err(Error::MissingParam {
                        action: action.to_owned(),
                        name: param.name.clone(),
                        expected: expected(&param.ty),
                    });
                }
            },
        };
        values.insert(param.name.clone(), value);
    }
    Ok(values)
}

/// What a value of `ty` looks like, for messages.
fn expected(ty: &ParamType) -> String {
    match ty {
        ParamType::String => "a string".to_owned(),
        ParamType::Integer => "an integer".to_owned(),
        ParamType::Boolean => "a boolean (`true` or `false`)".to_owned(),
        ParamType::Enum(values) => format!(
            "one of {}",
            values
                .iter()
                .map(|v| format!("`{v}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn convert(action: &str, param: &Param, value: &Value) -> Result<Value, Error> {
    let text = value.as_str();
    let converted = match (&param.ty, value) {
        (ParamType::String, Value::String(_)) => Some(value.clone()),
        (ParamType::Integer, Value::Number(n)) if n.is_i64() => Some(value.clone()),
        (ParamType::Integer, Value::String(s)) => s.trim().parse::<i64>().ok().map(Value::from),
        (ParamType::Boolean, Value::Bool(_)) => Some(value.clone()),
        (ParamType::Boolean, Value::String(s)) => match s.as_str() {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        (ParamType::Enum(allowed), Value::String(s)) if allowed.contains(s) => Some(value.clone()),
        _ => None,
    };
    converted.ok_or_else(|| Error::BadParam {
        action: action.to_owned(),
        name: param.name.clone(),
        expected: expected(&param.ty),
        found: match text {
            Some(text) => format!("`{text}`"),
            None => value.to_string(),
        },
    })
}

/// The text a parameter's value becomes in a command: a boolean with a flag becomes the flag or
/// nothing; strings are quoted for `sh` unless they are plainly safe words.
pub(crate) fn render(param: &Param, value: &Value) -> String {
    match value {
        Value::Bool(on) => match &param.flag {
            Some(flag) if *on => flag.clone(),
            Some(_) => String::new(),
            None => on.to_string(),
        },
        Value::String(text) => shell_word(text),
        other => other.to_string(),
    }
}

/// `text` as one `sh` word: unchanged when it holds only characters the shell treats literally,
/// else in single quotes. A value must never be able to inject a command.
pub(crate) fn shell_word(text: &str) -> String {
    let safe = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./:=@%+,".contains(&b));
    if safe {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(name: &str, ty: ParamType, default: Option<Value>) -> Param {
        Param {
            name: name.into(),
            ty,
            default,
            description: None,
            flag: None,
        }
    }

    fn given(pairs: &[(&str, Value)]) -> BTreeMap<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    #[test]
    fn values_are_converted_defaulted_and_checked() {
        let declared = [
            param("count", ParamType::Integer, Some(Value::from(1))),
            param(
                "mode",
                ParamType::Enum(vec!["fast".into(), "slow".into()]),
                None,
            ),
            param("verbose", ParamType::Boolean, Some(Value::Bool(false))),
        ];
        let ok = resolve(
            "t:c",
            &declared,
            &given(&[("count", "3".into()), ("mode", "slow".into())]),
        )
        .unwrap();
        assert_eq!(ok["count"], Value::from(3));
        assert_eq!(ok["mode"], Value::from("slow"));
        assert_eq!(ok["verbose"], Value::Bool(false));

        let text = |pairs: &[(&str, Value)]| {
            resolve("t:c", &declared, &given(pairs))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            text(&[("mode", "slow".into()), ("count", "x".into())]),
            "parameter `count` of `t:c`: expected an integer, found `x`"
        );
        assert_eq!(
            text(&[("mode", "medium".into())]),
            "parameter `mode` of `t:c`: expected one of `fast`, `slow`, found `medium`"
        );
        assert_eq!(
            text(&[]),
            "parameter `mode` of `t:c` is required: expected one of `fast`, `slow`"
        );
        assert!(
            text(&[("mode", "fast".into()), ("colour", "red".into())]).starts_with(
                "unknown parameter `colour` for `t:c`; expected one of: `count` (an integer)"
            )
        );
        assert!(text(&[("mode", "fast".into()), ("verbose", "yes".into())]).contains("boolean"));
        assert!(text(&[("mode", Value::from(2))]).contains("found 2"));
    }

    #[test]
    fn rendering_quotes_what_the_shell_would_interpret() {
        let mut flag = param("v", ParamType::Boolean, None);
        flag.flag = Some("--verbose".into());
        assert_eq!(render(&flag, &Value::Bool(true)), "--verbose");
        assert_eq!(render(&flag, &Value::Bool(false)), "");
        let s = param("s", ParamType::String, None);
        assert_eq!(render(&s, &Value::from("out/dir")), "out/dir");
        assert_eq!(render(&s, &Value::from("a b; rm -rf")), "'a b; rm -rf'");
        assert_eq!(render(&s, &Value::from("it's")), r"'it'\''s'");
        assert_eq!(render(&s, &Value::from("")), "''");
    }
}
