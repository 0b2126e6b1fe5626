//! What a converted object cannot express: the difference between the original and the
//! object the conversion back would produce without help.

use crate::conversion::json_path::{Seg, groups_at, same_keyed_items};
use serde_json::{Map, Value};

/// Sections of an object that conversion data may carry; metadata is copied unchanged.
pub(crate) const SECTIONS: [&str; 2] = ["spec", "status"];

/// The sparse, origin-shaped data that turns `back` (the plain conversion back) into
/// `original` (an object of version `origin`), for the `spec` and `status` sections.
pub(crate) fn collect(origin: &str, original: &Value, back: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    for section in SECTIONS {
        let mut path = vec![Seg::Key(section.to_owned())];
        if let Some(node) = node(origin, &mut path, original.get(section), back.get(section)) {
            out.insert(section.to_owned(), node);
        }
    }
    out
}

/// The payload node for one path, `None` when both sides agree.
fn node(
    origin: &str,
    path: &mut Vec<Seg>,
    original: Option<&Value>,
    back: Option<&Value>,
) -> Option<Value> {
    match (original, back) {
        (None, None) => None,
        (Some(a), Some(b)) if a == b => None,
        (Some(a), None) => Some(a.clone()),
        (None, Some(_)) => Some(Value::Null),
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let mut out = Map::new();
            for key in a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))) {
                path.push(Seg::Key(key.clone()));
                if let Some(child) = node(origin, path, a.get(key), b.get(key)) {
                    out.insert(key.clone(), child);
                }
                path.pop();
            }
            // A lead field takes its context along; absent context fields as null.
            for group in groups_at(origin, path) {
                if out.contains_key(group.lead) {
                    for field in group.context {
                        let value = a.get(*field).cloned().unwrap_or(Value::Null);
                        out.insert((*field).to_owned(), value);
                    }
                }
            }
            Some(Value::Object(out))
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) if same_keyed_items(path, a, b) => {
            // Only the items that differ, each whole: they are restored one by one. Both lists
            // hold the same keys in the same order, so items pair up by position.
            let items = a
                .iter()
                .zip(b)
                .filter(|(x, y)| x != y)
                .map(|(x, _)| x.clone())
                .collect();
            Some(Value::Array(items))
        }
        (Some(a), Some(_)) => Some(a.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const V1: &str = crate::conversion::versions::V1BETA1;

    #[test]
    fn carries_only_what_differs() {
        let original = json!({"spec": {"a": 1, "b": {"c": 2, "d": 3}}, "status": {"ready": true}});
        let back =
            json!({"spec": {"a": 1, "b": {"c": 2, "d": 4}, "e": 5}, "status": {"ready": true}});
        let data = collect(V1, &original, &back);
        assert_eq!(
            Value::Object(data),
            json!({"spec": {"b": {"d": 3}, "e": null}})
        );
    }

    #[test]
    fn carries_differing_conditions_only() {
        let original = json!({"status": {"conditions": [
            {"type": "A", "severity": "Info"}, {"type": "B"}]}});
        let back = json!({"status": {"conditions": [{"type": "A"}, {"type": "B"}]}});
        let data = collect(V1, &original, &back);
        assert_eq!(
            Value::Object(data),
            json!({"status": {"conditions": [{"type": "A", "severity": "Info"}]}})
        );
    }

    #[test]
    fn groups_travel_whole() {
        let original = json!({"spec": {"flavor": "a", "flavorID": "1"}, "status": {"ready": true}});
        let back = json!({"spec": {"flavorID": "1"}, "status": {"ready": false, "conditions": []}});
        let data = collect(V1, &original, &back);
        assert_eq!(
            Value::Object(data),
            json!({"spec": {"flavor": "a", "flavorID": "1"}, "status": {"ready": true, "conditions": null}})
        );
    }

    #[test]
    fn reordered_lists_are_carried_whole() {
        let original = json!({"status": {"failureDomains": [{"name": "b"}, {"name": "a"}]}});
        let back = json!({"status": {"failureDomains": [{"name": "a"}, {"name": "b"}]}});
        let data = collect(V1, &original, &back);
        assert_eq!(
            data["status"]["failureDomains"],
            original["status"]["failureDomains"]
        );
    }
}
