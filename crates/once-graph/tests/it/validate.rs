//! Every query value validates against its own output schema, and the
//! schemas use only the keywords MCP clients are promised.

use once_graph::query::{
    self, GraphMode, GraphQuery, QueryName, SchemaQuery, TargetQuery, TargetsQuery, input_schema,
    output_schema,
};
use serde_json::Value;

use crate::queries::fixture;

const ALLOWED: &[&str] = &[
    "type",
    "properties",
    "required",
    "items",
    "additionalProperties",
    "enum",
    "description",
    "anyOf",
];

/// Checks the schema only uses the allowed subset.
fn check_keywords(schema: &Value, at: &str) {
    let Value::Object(m) = schema else {
        panic!("{at}: schema must be an object, got {schema}")
    };
    for (k, v) in m {
        assert!(
            ALLOWED.contains(&k.as_str()),
            "{at}: keyword `{k}` not allowed"
        );
        match k.as_str() {
            "type" => assert!(v.is_string(), "{at}: type must be one string"),
            "properties" => v
                .as_object()
                .unwrap()
                .iter()
                .for_each(|(p, s)| check_keywords(s, &format!("{at}.{p}"))),
            "additionalProperties" if v == &Value::Bool(false) => {}
            "items" | "additionalProperties" => check_keywords(v, &format!("{at}/{k}")),
            "anyOf" => v
                .as_array()
                .unwrap()
                .iter()
                .for_each(|s| check_keywords(s, &format!("{at}/anyOf"))),
            _ => {}
        }
    }
}

/// A validator for the subset above; returns the first error.
fn validate(v: &Value, s: &Value, at: &str) -> Result<(), String> {
    if let Some(any) = s.get("anyOf").and_then(Value::as_array) {
        return if any.iter().any(|alt| validate(v, alt, at).is_ok()) {
            Ok(())
        } else {
            Err(format!("{at}: no anyOf branch matches {v}"))
        };
    }
    if let Some(t) = s.get("type").and_then(Value::as_str) {
        let ok = match t {
            "object" => v.is_object(),
            "array" => v.is_array(),
            "string" => v.is_string(),
            "integer" => v.is_i64() || v.is_u64(),
            "number" => v.is_number(),
            "boolean" => v.is_boolean(),
            "null" => v.is_null(),
            _ => false,
        };
        if !ok {
            return Err(format!("{at}: expected {t}, got {v}"));
        }
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array)
        && !e.contains(v)
    {
        return Err(format!("{at}: {v} not in enum"));
    }
    if let Value::Object(m) = v {
        let props = s.get("properties").and_then(Value::as_object);
        for r in s
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let r = r.as_str().unwrap_or_default();
            if !m.contains_key(r) {
                return Err(format!("{at}: missing required `{r}`"));
            }
        }
        for (k, val) in m {
            match props.and_then(|p| p.get(k)) {
                Some(ps) => validate(val, ps, &format!("{at}.{k}"))?,
                None => match s.get("additionalProperties") {
                    Some(Value::Bool(false)) => {
                        return Err(format!("{at}: unexpected property `{k}`"));
                    }
                    Some(ap) => validate(val, ap, &format!("{at}.{k}"))?,
                    None => {}
                },
            }
        }
    }
    if let (Value::Array(a), Some(items)) = (v, s.get("items")) {
        for (i, x) in a.iter().enumerate() {
            validate(x, items, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}

#[test]
fn validator_catches_mismatches() {
    let s = serde_json::json!({"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false});
    assert!(validate(&serde_json::json!({"a":"x"}), &s, "$").is_ok());
    assert!(validate(&serde_json::json!({"a":1}), &s, "$").is_err());
    assert!(validate(&serde_json::json!({}), &s, "$").is_err());
    assert!(validate(&serde_json::json!({"a":"x","b":1}), &s, "$").is_err());
}

#[test]
fn schemas_use_only_the_promised_keywords() {
    for q in QueryName::ALL {
        check_keywords(&output_schema(q), &format!("output:{}", q.as_str()));
        let input = input_schema(q);
        check_keywords(&input, &format!("input:{}", q.as_str()));
        assert_eq!(input["type"], "object");
        assert_eq!(input["additionalProperties"], false);
    }
}

#[test]
fn every_query_value_matches_its_output_schema() {
    let tmp = fixture();
    tmp.write(
        "once.toml",
        &format!("{}\n[targets.bad]\nkind = \"nope\"\n", crate::queries::ROOT),
    );
    let ws = tmp.load();
    assert!(ws.has_errors());
    let check = |name: QueryName, v: Value| {
        if let Err(e) = validate(&v, &output_schema(name), "$") {
            panic!("{}: {e}\n{v:#}", name.as_str());
        }
    };
    check(
        QueryName::Workspace,
        serde_json::to_value(query::workspace(&ws)).unwrap(),
    );
    let page = query::targets(
        &ws,
        &TargetsQuery {
            limit: Some(2),
            ..Default::default()
        },
    )
    .unwrap();
    check(QueryName::Targets, serde_json::to_value(&page).unwrap());
    let last = query::targets(
        &ws,
        &TargetsQuery {
            limit: Some(2),
            cursor: Some(page.next_cursor.clone().unwrap()),
            ..Default::default()
        },
    )
    .unwrap();
    check(QueryName::Targets, serde_json::to_value(last).unwrap());
    for t in ["docs", "core", "web", "api"] {
        check(
            QueryName::Target,
            serde_json::to_value(
                query::target(
                    &ws,
                    &TargetQuery {
                        name: t.into(),
                        ..TargetQuery::default()
                    },
                )
                .unwrap(),
            )
            .unwrap(),
        );
    }
    check(
        QueryName::Schema,
        query::schema(&ws, &SchemaQuery::default()).unwrap(),
    );
    check(
        QueryName::Schema,
        query::schema(
            &ws,
            &SchemaQuery {
                kind: Some("command".into()),
            },
        )
        .unwrap(),
    );
    let affected = query::affected(
        &ws,
        &query::AffectedQuery {
            files: vec!["crates/core/src/lib.rs".into(), "README.md".into()],
            limit: Some(3),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(affected.next_cursor.is_some());
    check(QueryName::Affected, serde_json::to_value(affected).unwrap());
    check(
        QueryName::Owner,
        serde_json::to_value(
            query::owner(
                &ws,
                &query::OwnerQuery {
                    path: "web/index.js".into(),
                },
            )
            .unwrap(),
        )
        .unwrap(),
    );
    for (mode, target, to) in [
        (GraphMode::Deps, "docs", None),
        (GraphMode::Dependents, "core:build", None),
        (GraphMode::Path, "docs", Some("proto")),
        (GraphMode::Path, "proto", Some("docs")),
        (GraphMode::Order, "docs:build", None),
    ] {
        let q = GraphQuery {
            mode,
            target: target.into(),
            to: to.map(Into::into),
            transitive: Some(true),
            limit: Some(1),
            ..Default::default()
        };
        check(
            QueryName::Graph,
            serde_json::to_value(query::graph(&ws, &q).unwrap()).unwrap(),
        );
    }
}
