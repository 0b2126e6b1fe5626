//! Guards against inputs whose mere shape could exhaust the stack.

use crate::conversion::error::ConversionError;
use serde_json::Value;

/// Deepest nesting of arrays and objects accepted, the limit serde_json applies when parsing
/// JSON text; objects read from the API server never come near it.
pub const MAX_DEPTH: usize = 128;

/// Refuses `value` if it nests deeper than [`MAX_DEPTH`], without recursing.
pub(crate) fn check_depth(value: &Value) -> Result<(), ConversionError> {
    let mut stack = vec![(value, 1usize)];
    while let Some((node, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match node {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        if depth > MAX_DEPTH {
            return Err(ConversionError::new(
                "",
                format!("nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        stack.extend(children.map(|c| (c, depth + 1)));
    }
    Ok(())
}

/// Drops `value` without recursing, so that even a value far deeper than the stack allows is
/// freed safely (serde_json's own drop recurses once per level).
pub(crate) fn dismantle(value: Value) {
    let mut stack = vec![value];
    while let Some(node) = stack.pop() {
        match node {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A value nested `levels` deep, built without recursion.
    fn deep(levels: usize) -> Value {
        let mut v = json!(1);
        for _ in 0..levels {
            v = Value::Array(vec![v]);
        }
        v
    }

    #[test]
    fn limit_is_exact() {
        assert!(check_depth(&deep(MAX_DEPTH)).is_ok());
        let too_deep = deep(MAX_DEPTH + 1);
        assert!(check_depth(&too_deep).is_err());
        dismantle(too_deep);
        assert!(check_depth(&json!({"a": {"b": [1, 2]}})).is_ok());
    }

    #[test]
    fn very_deep_values_are_refused_and_freed() {
        let v = deep(200_000);
        assert!(check_depth(&v).is_err());
        dismantle(v);
    }
}
