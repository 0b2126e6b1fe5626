//! Reports which fields an update changed, by path, so an immutability error names the field.
//!
//! Upstream answers every forbidden change with a bare `spec: cannot be modified`; comparing the
//! JSON forms lets us say `spec.network.id: field is immutable` instead.

use super::{FieldError, FieldPath};
use serde::Serialize;
use serde_json::Value;

/// Deepest paths at which `old` and `new` differ; lists that change length are reported whole.
fn changed_paths(path: &FieldPath, old: &Value, new: &Value, out: &mut Vec<FieldPath>) {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            let mut keys: Vec<&String> = o.keys().chain(n.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let (ov, nv) = (
                    o.get(key).unwrap_or(&Value::Null),
                    n.get(key).unwrap_or(&Value::Null),
                );
                changed_paths(&path.child(key), ov, nv, out);
            }
        }
        (Value::Array(o), Value::Array(n)) if o.len() == n.len() => {
            for (i, (ov, nv)) in o.iter().zip(n).enumerate() {
                changed_paths(&path.index(i), ov, nv, out);
            }
        }
        _ if old != new => out.push(path.clone()),
        _ => {}
    }
}

/// An immutability error for every field that differs between `old` and `new`.
///
/// The caller first copies into `old` whatever the update may change, so only forbidden
/// changes remain.
pub(crate) fn check_unchanged<T: Serialize>(
    path: &FieldPath,
    old: &T,
    new: &T,
    detail: &str,
    errors: &mut Vec<FieldError>,
) {
    // Serializing our own derive(Serialize) types to a Value cannot fail: they hold only
    // strings, numbers, booleans, maps with string keys and lists.
    let (Ok(old), Ok(new)) = (serde_json::to_value(old), serde_json::to_value(new)) else {
        errors.push(FieldError::forbidden(
            path,
            "cannot be compared for changes",
        ));
        return;
    };
    let mut changed = Vec::new();
    changed_paths(path, &old, &new, &mut changed);
    errors.extend(changed.iter().map(|p| FieldError::immutable(p, detail)));
}
