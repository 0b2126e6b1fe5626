//! Paths into JSON objects, and where two objects differ.
//!
//! Lists are compared as a whole, except the lists of [`KEYED_LISTS`], whose items are matched
//! by their key: a condition keeps its identity (its `type`) when its neighbours change, so the
//! data carried for one condition can be checked and restored on its own.

use serde_json::Value;
use std::collections::HashSet;

/// Lists whose items are told apart by a key field: (path of the list, key field).
///
/// Both versions key `status.conditions` by `type` (v1beta2 declares it a list-map).
pub(crate) const KEYED_LISTS: &[(&[&str], &str)] = &[(&["status", "conditions"], "type")];

/// A field that only means something next to others, and so travels and is restored together
/// with them: a flavor name next to the flavorID that overrides it, `ready` next to the
/// conditions it was at odds with. Restored alone, it would outlive a change of the others made
/// in the other version.
pub(crate) struct Group {
    /// apiVersion of the objects the group applies to.
    pub origin: &'static str,
    /// Paths of the objects holding the fields.
    pub at: &'static [&'static [&'static str]],
    /// The field whose travel takes the others along.
    pub lead: &'static str,
    /// The fields it needs next to it.
    pub context: &'static [&'static str],
}

/// Every group.
pub(crate) const GROUPS: &[Group] = &[
    Group {
        origin: crate::conversion::versions::V1BETA1,
        at: &[
            &["spec"],
            &["spec", "template", "spec"],
            &["spec", "bastion", "spec"],
            &["spec", "template", "spec", "bastion", "spec"],
        ],
        lead: "flavor",
        context: &["flavorID"],
    },
    Group {
        origin: crate::conversion::versions::V1BETA1,
        at: &[&["status"]],
        lead: "ready",
        context: &["conditions"],
    },
];

/// The groups of the object at `path` in an object of version `origin`.
pub(crate) fn groups_at(origin: &str, path: &[Seg]) -> impl Iterator<Item = &'static Group> {
    GROUPS.iter().filter(move |g| {
        g.origin == origin
            && g.at.iter().any(|at| {
                at.len() == path.len()
                    && at
                        .iter()
                        .zip(path)
                        .all(|(a, p)| matches!(p, Seg::Key(k) if k == a))
            })
    })
}

/// One step of a path: an object field, or the item of a keyed list with the given key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Seg {
    /// A field of an object.
    Key(String),
    /// The item of a keyed list whose key field has this value.
    Item(String),
}

/// The key field of the keyed list at `path`, if it is one.
pub(crate) fn list_key(path: &[Seg]) -> Option<&'static str> {
    KEYED_LISTS.iter().find_map(|(list, key)| {
        let same = list.len() == path.len()
            && list
                .iter()
                .zip(path)
                .all(|(l, p)| matches!(p, Seg::Key(k) if k == l));
        same.then_some(*key)
    })
}

/// The keys of a keyed list's items in order, or `None` when some item has no string key or
/// a key repeats (the list cannot then be handled item by item).
pub(crate) fn item_keys<'a>(items: &'a [Value], key: &str) -> Option<Vec<&'a str>> {
    let mut seen = HashSet::new();
    let mut keys = Vec::with_capacity(items.len());
    for item in items {
        let k = item.get(key).and_then(Value::as_str)?;
        if !seen.insert(k) {
            return None;
        }
        keys.push(k);
    }
    Some(keys)
}

/// The item of `items` whose `key` field equals `value`.
pub(crate) fn find_item<'a>(items: &'a [Value], key: &str, value: &str) -> Option<&'a Value> {
    items
        .iter()
        .find(|i| i.get(key).and_then(Value::as_str) == Some(value))
}

/// The value at `path` in `root`, if any.
pub(crate) fn lookup<'a>(root: &'a Value, path: &[Seg]) -> Option<&'a Value> {
    let mut node = root;
    for (i, seg) in path.iter().enumerate() {
        node = match seg {
            Seg::Key(k) => node.as_object()?.get(k)?,
            Seg::Item(v) => {
                let key = list_key(&path[..i])?;
                find_item(node.as_array()?, key, v)?
            }
        };
    }
    Some(node)
}

/// Appends to `out` the paths at which `a` and `b` differ: the first level at which they stop
/// being two objects (or two keyed lists with the same keys in the same order).
pub(crate) fn diff_paths(
    path: &mut Vec<Seg>,
    a: Option<&Value>,
    b: Option<&Value>,
    out: &mut Vec<Vec<Seg>>,
) {
    if a == b {
        return;
    }
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            for key in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                path.push(Seg::Key(key.clone()));
                diff_paths(path, x.get(key), y.get(key), out);
                path.pop();
            }
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) if same_keyed_items(path, x, y) => {
            let key = list_key(path).unwrap_or_default();
            for (u, v) in x.iter().zip(y) {
                let k = u.get(key).and_then(Value::as_str).unwrap_or_default();
                path.push(Seg::Item(k.to_owned()));
                diff_paths(path, Some(u), Some(v), out);
                path.pop();
            }
        }
        _ => out.push(path.clone()),
    }
}

/// True when `path` is a keyed list and `x` and `y` hold items with the same keys in the same
/// order.
pub(crate) fn same_keyed_items(path: &[Seg], x: &[Value], y: &[Value]) -> bool {
    let Some(key) = list_key(path) else {
        return false;
    };
    matches!((item_keys(x, key), item_keys(y, key)), (Some(a), Some(b)) if a == b)
}

/// A path written the way errors name fields: `spec.flavor`, `status.conditions[type=Ready]`.
pub(crate) fn display(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Item(v) => out.push_str(&format!("[type={v}]")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(k: &str) -> Seg {
        Seg::Key(k.to_owned())
    }

    #[test]
    fn conditions_are_compared_item_by_item() {
        let a = json!({"status": {"conditions": [{"type": "A", "status": "True"}, {"type": "B", "status": "True"}]}});
        let b = json!({"status": {"conditions": [{"type": "A", "status": "True"}, {"type": "B", "status": "False"}]}});
        let mut out = Vec::new();
        diff_paths(&mut Vec::new(), Some(&a), Some(&b), &mut out);
        let expected = vec![
            key("status"),
            key("conditions"),
            Seg::Item("B".into()),
            key("status"),
        ];
        assert_eq!(out, vec![expected.clone()]);
        assert_eq!(display(&expected), "status.conditions[type=B].status");
        assert_eq!(lookup(&b, &expected), Some(&json!("False")));
    }

    #[test]
    fn other_lists_are_compared_whole() {
        let a = json!({"spec": {"ports": [{"a": 1}, {"b": 2}]}});
        let b = json!({"spec": {"ports": [{"a": 1}, {"b": 3}]}});
        let mut out = Vec::new();
        diff_paths(&mut Vec::new(), Some(&a), Some(&b), &mut out);
        assert_eq!(out, vec![vec![key("spec"), key("ports")]]);
    }

    #[test]
    fn repeated_keys_make_a_keyed_list_atomic() {
        let items = [json!({"type": "A"}), json!({"type": "A"})];
        assert_eq!(item_keys(&items, "type"), None);
        let path = [key("status"), key("conditions")];
        assert!(!same_keyed_items(&path, &items, &items));
    }

    #[test]
    fn missing_fields_are_differences() {
        let a = json!({"spec": {"x": 1}});
        let b = json!({"spec": {}});
        let mut out = Vec::new();
        diff_paths(&mut Vec::new(), Some(&a), Some(&b), &mut out);
        assert_eq!(out, vec![vec![key("spec"), key("x")]]);
        assert_eq!(lookup(&b, &out[0]), None);
    }
}
