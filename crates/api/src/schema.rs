//! Small schemars transforms used by the API types' derive attributes.

use schemars::Schema;

/// Removes the `format` schemars derives for Rust integers (`int32`, ...).
///
/// Upstream declares most integers without a format (Go `int`); an extra format would make our
/// schema stricter than upstream's and fail the compatibility comparison.
pub fn drop_format(schema: &mut Schema) {
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("format");
    }
}

/// Serde default for booleans that upstream defaults to `true` (for example
/// `apiServerLoadBalancer.enabled`), so a manifest that omits them reads as the API server
/// would store it.
pub fn default_true() -> bool {
    true
}

/// A transform that lists `names` in the object's `required` array.
///
/// schemars treats a field with a serde default as optional, but upstream marks a few defaulted
/// fields as required (the API server fills the default first); this restores that.
pub fn require(names: &'static [&'static str]) -> impl FnMut(&mut Schema) {
    move |schema: &mut Schema| {
        let Some(obj) = schema.as_object_mut() else {
            return;
        };
        let required = obj
            .entry("required")
            .or_insert_with(|| serde_json::Value::Array(Vec::new()));
        if let Some(list) = required.as_array_mut() {
            for name in names {
                if !list.iter().any(|v| v == name) {
                    list.push(serde_json::Value::from(*name));
                }
            }
        }
    }
}
