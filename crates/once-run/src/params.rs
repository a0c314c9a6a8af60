//! Checking parameters against a capability's typed declaration, and turning typed values into
//! the text a command template receives.
//!
//! Every problem names what was expected. A value from a command line arrives as a string and is
//! converted to the declared type here; a value from an agent arrives typed and must already
//! match. A value that no process could receive (a NUL byte, or too long for a command line) is
//! refused here too, while planning. Quoting is the template's: this module hands over raw
//! text and must never run, quote or render a whole command.

use std::collections::BTreeMap;

use once_graph::model::{Param, ParamType};
use once_graph::template::Fill;
use serde_json::Value;

use crate::error::Error;

/// The longest string value, in bytes. Linux caps one argument (the whole `sh -c` command) at
/// 128 KiB; half of it leaves room for the rest of the command and for quoting.
pub(crate) const MAX_VALUE: usize = 64 * 1024;

/// The longest rendered command, in bytes: Linux's `MAX_ARG_STRLEN` (32 pages) less its NUL.
pub(crate) const MAX_COMMAND: usize = 128 * 1024 - 1;

/// Checks `given` against `declared` for `action` and returns every parameter's value, defaults
/// filled in. Unknown names, wrong types, values outside an enum, missing required
/// parameters, and strings with a NUL byte or longer than [`MAX_VALUE`] are errors.
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
        if let Value::String(text) = &value {
            if text.contains('\0') {
                return Err(Error::ParamNul {
                    action: action.to_owned(),
                    name: param.name.clone(),
                });
            }
            if text.len() > MAX_VALUE {
                return Err(Error::ParamTooLong {
                    action: action.to_owned(),
                    name: param.name.clone(),
                    len: text.len(),
                    limit: MAX_VALUE,
                });
            }
        }
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

/// What a parameter's value gives its placeholder: a boolean with a flag gives the flag or
/// nothing, a parameter left at a `null` default (a built-in kind's optional argument) nothing,
/// anything else its text (the template quotes it for where it sits).
pub(crate) fn render(param: &Param, value: &Value) -> Fill {
    match value {
        Value::Null => Fill::Nothing,
        Value::Bool(on) => match &param.flag {
            Some(flag) if *on => Fill::Text(flag.clone()),
            Some(_) => Fill::Nothing,
            None => Fill::Text(on.to_string()),
        },
        Value::String(text) => Fill::Text(text.clone()),
        other => Fill::Text(other.to_string()),
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
    fn rendering_gives_raw_text_or_nothing() {
        let mut flag = param("v", ParamType::Boolean, None);
        flag.flag = Some("--verbose".into());
        assert_eq!(
            render(&flag, &Value::Bool(true)),
            Fill::Text("--verbose".into())
        );
        assert_eq!(render(&flag, &Value::Bool(false)), Fill::Nothing);
        let s = param("s", ParamType::String, None);
        assert_eq!(
            render(&s, &Value::from("a b; rm")),
            Fill::Text("a b; rm".into())
        );
        assert_eq!(render(&s, &Value::from(3)), Fill::Text("3".into()));
    }

    #[test]
    fn values_no_process_can_receive_are_refused_with_the_limit() {
        let declared = [param("msg", ParamType::String, None)];
        let text = |value: String| {
            resolve("t:c", &declared, &given(&[("msg", value.into())]))
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        assert_eq!(text("x".repeat(MAX_VALUE)), Ok(()));
        assert_eq!(
            text("x".repeat(MAX_VALUE + 1)),
            Err(
                "parameter `msg` of `t:c` is 65537 bytes long; a value may be at most 65536 bytes"
                    .into()
            )
        );
        assert_eq!(
            text("a\0b".into()),
            Err(
                "parameter `msg` of `t:c` holds a NUL byte, which no command line can carry".into()
            )
        );
        // A default is checked like a given value.
        let mut defaulted = param("msg", ParamType::String, None);
        defaulted.default = Some(Value::from("a\0b"));
        assert!(resolve("t:c", &[defaulted], &BTreeMap::new()).is_err());
    }
}
