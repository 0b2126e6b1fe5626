//! JSON helpers shared by the round-trip and conversion tests: a value with every schema
//! property set, the API server's defaulting, and a readable list of differences.

// Each test binary includes this file and uses a different subset of it.
#![allow(dead_code)]

use serde_json::Value;

/// A value for `schema` with every property set, one item per list and one entry per map.
pub fn maximal(schema: &Value) -> Value {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values.first().cloned().unwrap_or(Value::Null);
    }
    if schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        return Value::from("1");
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => {
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                props.iter().map(|(k, v)| (k.clone(), maximal(v))).collect()
            } else if let Some(values) =
                schema.get("additionalProperties").filter(|v| v.is_object())
            {
                serde_json::json!({ "entry": maximal(values) })
            } else {
                serde_json::json!({})
            }
        }
        Some("array") => Value::Array(vec![maximal(schema.get("items").unwrap_or(&Value::Null))]),
        Some("integer") => Value::from(1),
        Some("boolean") => Value::from(true),
        Some("string") => Value::from(match schema.get("format").and_then(Value::as_str) {
            Some("uuid") => "02e31c38-d5ba-4c57-addb-00fc71eb5b19",
            Some("ipv4") => "192.0.2.1",
            Some("date-time") => "2024-01-02T03:04:05Z",
            _ => "x",
        }),
        _ => Value::Null,
    }
}

/// Applies schema defaults the way the API server does: a missing property with a `default`
/// is filled in, recursively inside present objects, array items and map values.
pub fn apply_defaults(schema: &Value, value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (name, prop) in props {
                    if let (false, Some(default)) = (map.contains_key(name), prop.get("default")) {
                        map.insert(name.clone(), default.clone());
                    }
                    if let Some(child) = map.get_mut(name) {
                        apply_defaults(prop, child);
                    }
                }
            } else if let Some(values) =
                schema.get("additionalProperties").filter(|v| v.is_object())
            {
                map.values_mut()
                    .for_each(|child| apply_defaults(values, child));
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                items
                    .iter_mut()
                    .for_each(|item| apply_defaults(item_schema, item));
            }
        }
        _ => {}
    }
}

/// Paths where `a` and `b` differ (at most a handful, enough to name the lost field).
pub fn differences(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for key in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                let child = format!("{path}.{key}");
                match (x.get(key), y.get(key)) {
                    (Some(u), Some(v)) => differences(&child, u, v, out),
                    (Some(_), None) => out.push(format!("{child}: lost in the round trip")),
                    (None, Some(v)) => out.push(format!("{child}: added in the round trip ({v})")),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                differences(&format!("{path}[{i}]"), u, v, out);
            }
        }
        _ if a == b => {}
        _ => out.push(format!("{path}: {a} became {b}")),
    }
}
