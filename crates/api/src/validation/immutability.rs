//! Reports which fields an update changed, by path, so an immutability error names the field.
//!
//! Upstream answers every forbidden change with a bare `spec: cannot be modified`; comparing the
//! JSON forms lets us say `spec.network.id: field is immutable` instead.

use super::{FieldError, FieldPath, UpdateContext, ValidationErrors};
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

/// Update rule shared by the two template kinds: the create-time rules still hold, and
/// `spec.template.spec` may not change (create a new template and point the owner at it),
/// except in the Cluster API topology controller's dry runs.
pub(crate) fn check_template_update<T: Serialize>(
    create: Result<(), ValidationErrors>,
    old: &T,
    new: &T,
    context: &UpdateContext,
) -> Result<(), ValidationErrors> {
    let mut errors = create.err().map(|e| e.0).unwrap_or_default();
    if !context.topology_dry_run {
        let path = FieldPath::new("spec").child("template").child("spec");
        let detail = "templates are immutable; create a new template and reference it";
        check_unchanged(&path, old, new, detail, &mut errors);
    }
    ValidationErrors::into_result(errors)
}
