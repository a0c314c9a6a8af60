//! What a person or an agent asked to run, as they wrote it: actions (`TARGET[:CAPABILITY]`),
//! every target with a capability, the targets a selection (tags, name globs) picks, parameters,
//! words passed through to the last named action, and an optional deadline.
//!
//! Parsing here is syntax only; whether the targets, capabilities and parameters exist is
//! decided by the plan. This module must never look at the workspace.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::error::Error;

/// One request to run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Request {
    /// `TARGET` or `TARGET:CAPABILITY`, as typed.
    pub actions: Vec<String>,
    /// Also run this capability of every target that has it.
    pub all: Option<String>,
    /// Also run a capability of the targets picked by tag and by name.
    pub select: Option<Selection>,
    /// Parameters for the requested actions: strings from a command line (converted to the
    /// parameter's type while checking) or typed JSON values from an agent.
    pub params: BTreeMap<String, Value>,
    /// Replaces every planned action's deadline.
    pub deadline: Option<Duration>,
    /// Words appended, each quoted for the shell, to the command of the last of `actions` (the
    /// words after `--`); refused when `actions` is empty.
    pub args: Vec<String>,
}

/// A capability of every target that carries one of `tags` and whose name matches one of
/// `names` (an empty list does not narrow), like moon's `#tag:task` and turbo's `--filter`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// The capability to run on each selected target that has it.
    pub capability: String,
    /// Tags, any of which selects a target.
    pub tags: Vec<String>,
    /// Globs over target names (`api-*`), any of which selects a target.
    pub names: Vec<String>,
}

/// Splits `TARGET[:CAPABILITY]`.
pub fn parse_action(text: &str) -> Result<(&str, Option<&str>), Error> {
    let bad = || Error::BadAction {
        text: text.to_owned(),
    };
    match text.split_once(':') {
        Some((target, capability)) => {
            if target.is_empty() || capability.is_empty() || capability.contains(':') {
                return Err(bad());
            }
            Ok((target, Some(capability)))
        }
        None if text.is_empty() => Err(bad()),
        None => Ok((text, None)),
    }
}

/// Splits `NAME=VALUE` into the name and the value as a JSON string.
pub fn parse_param(text: &str) -> Result<(String, Value), Error> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => {
            Ok((name.to_owned(), Value::String(value.to_owned())))
        }
        _ => Err(Error::BadParamSyntax {
            text: text.to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_and_params_parse_or_say_what_was_expected() {
        assert_eq!(parse_action("web").unwrap(), ("web", None));
        assert_eq!(parse_action("web:test").unwrap(), ("web", Some("test")));
        for bad in ["", ":test", "web:", "a:b:c"] {
            assert!(
                parse_action(bad)
                    .unwrap_err()
                    .to_string()
                    .contains("TARGET:CAPABILITY")
            );
        }
        assert_eq!(
            parse_param("n=a=b").unwrap(),
            ("n".to_owned(), Value::String("a=b".into()))
        );
        assert!(parse_param("=x").is_err());
        assert!(parse_param("novalue").is_err());
    }
}
