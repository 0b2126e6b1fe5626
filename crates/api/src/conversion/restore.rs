//! Putting carried data back, where it still fits.
//!
//! Each piece of carried data (a *unit*: one field, or one condition) is restored only if it
//! is invisible in the version that was converted from, or agrees with it: converting the
//! object back with and without the unit must differ only where the object being converted
//! holds exactly what the unit implies. So data carried from v1beta1 survives a v1beta2
//! client's unrelated edits, and is dropped where that client changed what the data describes.
//!
//! All units are first tried together (one conversion); only when that fails are they tried one
//! by one, at most [`MAX_SEPARATE_CHECKS`] of them, so a large or hostile annotation costs a
//! bounded number of conversions. Units beyond that are dropped like stale ones.

use crate::conversion::carry::SECTIONS;
use crate::conversion::error::ConversionError;
use crate::conversion::json_path::{Seg, diff_paths, groups_at, list_key, lookup};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Most units checked one by one after a failed check of all of them together.
pub(crate) const MAX_SEPARATE_CHECKS: usize = 64;

/// One piece of carried data.
#[derive(Clone, Debug)]
enum Unit {
    /// Set the field at the path to the value.
    Set(Vec<Seg>, Value),
    /// Remove the field at the path.
    Remove(Vec<Seg>),
    /// Replace the item of the keyed list at the path whose key is the string.
    Item(Vec<Seg>, String, Value),
    /// Several units applied together.
    Group(Vec<Unit>),
}

/// Restores the units of `data` (carried from an object of version `origin`) into `converted`
/// (an object of that version) where they fit.
///
/// `source` is the object being converted (the other version, without the annotation) and
/// `back` converts an `origin` object to the other version without any carried data.
pub(crate) fn restore(
    origin: &str,
    converted: &mut Value,
    data: &Map<String, Value>,
    source: &Value,
    back: &dyn Fn(&Value) -> Result<Value, ConversionError>,
) -> Result<(), ConversionError> {
    let mut units = Vec::new();
    for section in SECTIONS {
        if let Some(node) = data.get(section) {
            let mut path = vec![Seg::Key(section.to_owned())];
            collect_units(origin, &mut path, node, converted.get(section), &mut units);
        }
    }
    if units.is_empty() {
        return Ok(());
    }
    let mut base = back(converted)?;
    let mut all = converted.clone();
    apply_all(&mut all, &units);
    if fits(&all, &base, source, back).is_some() {
        *converted = all;
        return Ok(());
    }
    for unit in units.iter().take(MAX_SEPARATE_CHECKS) {
        let mut candidate = converted.clone();
        apply(&mut candidate, unit);
        if let Some(candidate_back) = fits(&candidate, &base, source, back) {
            *converted = candidate;
            base = candidate_back;
        }
    }
    Ok(())
}

/// The conversion back of `candidate` if it differs from `base` only where `source` agrees.
fn fits(
    candidate: &Value,
    base: &Value,
    source: &Value,
    back: &dyn Fn(&Value) -> Result<Value, ConversionError>,
) -> Option<Value> {
    let candidate_back = back(candidate).ok()?;
    let mut changed = Vec::new();
    diff_paths(
        &mut Vec::new(),
        Some(base),
        Some(&candidate_back),
        &mut changed,
    );
    changed
        .iter()
        .all(|p| lookup(source, p) == lookup(&candidate_back, p))
        .then_some(candidate_back)
}

/// Walks a payload node alongside the converted object and lists the units that would change
/// it. Payload objects are descended into where the object has an object too; elsewhere they
/// replace the field whole.
fn collect_units(
    origin: &str,
    path: &mut Vec<Seg>,
    node: &Value,
    target: Option<&Value>,
    out: &mut Vec<Unit>,
) {
    match node {
        Value::Null => {
            if target.is_some() {
                out.push(Unit::Remove(path.clone()));
            }
        }
        Value::Array(items) if list_key(path).is_some() => {
            let key = list_key(path).unwrap_or_default();
            let Some(current) = target.and_then(Value::as_array) else {
                return;
            };
            let current: HashMap<&str, &Value> = current
                .iter()
                .filter_map(|i| Some((i.get(key)?.as_str()?, i)))
                .collect();
            for item in items {
                let Some(k) = item.get(key).and_then(Value::as_str) else {
                    continue;
                };
                if current.get(k).is_some_and(|c| *c != item) {
                    out.push(Unit::Item(path.clone(), k.to_owned(), item.clone()));
                }
            }
        }
        Value::Object(fields) if target.is_some_and(Value::is_object) => {
            let mut grouped = Vec::new();
            for group in groups_at(origin, path) {
                if !fields.contains_key(group.lead) {
                    continue;
                }
                let mut units = Vec::new();
                for field in std::iter::once(&group.lead).chain(group.context) {
                    let mut at = path.clone();
                    at.push(Seg::Key((*field).to_owned()));
                    match fields.get(*field) {
                        Some(Value::Null) | None => units.push(Unit::Remove(at)),
                        Some(v) => units.push(Unit::Set(at, v.clone())),
                    }
                    grouped.push(*field);
                }
                out.push(Unit::Group(units));
            }
            for (key, child) in fields {
                path.push(Seg::Key(key.clone()));
                let target_child = target.and_then(|t| t.get(key));
                if !grouped.contains(&key.as_str()) {
                    collect_units(origin, path, child, target_child, out);
                } else if list_key(path).is_some() && child.is_array() {
                    // Should the group not fit, its list items may still fit one by one.
                    collect_units(origin, path, child, target_child, out);
                }
                path.pop();
            }
        }
        other => {
            if target != Some(other) {
                out.push(Unit::Set(path.clone(), other.clone()));
            }
        }
    }
}

/// Applies every unit; items of keyed lists in one pass per list, so that restoring many
/// conditions stays linear.
fn apply_all(object: &mut Value, units: &[Unit]) {
    let mut items: HashMap<&[Seg], HashMap<&str, &Value>> = HashMap::new();
    for unit in units {
        match unit {
            Unit::Item(path, key, item) => {
                items
                    .entry(path.as_slice())
                    .or_default()
                    .insert(key.as_str(), item);
            }
            other => apply(object, other),
        }
    }
    for (path, replacements) in items {
        let key = list_key(path).unwrap_or_default();
        if let Some(list) = node_mut(object, path).and_then(Value::as_array_mut) {
            for slot in list.iter_mut() {
                let k = slot.get(key).and_then(Value::as_str).unwrap_or_default();
                if let Some(item) = replacements.get(k) {
                    *slot = (*item).clone();
                }
            }
        }
    }
}

/// Applies one unit; a unit whose place no longer exists changes nothing.
fn apply(object: &mut Value, unit: &Unit) {
    match unit {
        Unit::Set(path, value) => {
            if let Some((Seg::Key(last), parent)) = path.split_last()
                && let Some(map) = parent_of(object, parent)
            {
                map.insert(last.clone(), value.clone());
            }
        }
        Unit::Remove(path) => {
            if let Some((Seg::Key(last), parent)) = path.split_last()
                && let Some(map) = parent_of(object, parent)
            {
                map.remove(last);
            }
        }
        Unit::Group(units) => units.iter().for_each(|u| apply(object, u)),
        Unit::Item(path, key_value, item) => {
            let key = list_key(path).unwrap_or_default();
            if let Some(list) = node_mut(object, path).and_then(Value::as_array_mut)
                && let Some(slot) = list
                    .iter_mut()
                    .find(|i| i.get(key).and_then(Value::as_str) == Some(key_value.as_str()))
            {
                *slot = item.clone();
            }
        }
    }
}

fn parent_of<'a>(object: &'a mut Value, path: &[Seg]) -> Option<&'a mut Map<String, Value>> {
    node_mut(object, path)?.as_object_mut()
}

fn node_mut<'a>(object: &'a mut Value, path: &[Seg]) -> Option<&'a mut Value> {
    let mut node = object;
    for seg in path {
        node = match seg {
            Seg::Key(k) => node.as_object_mut()?.get_mut(k)?,
            // Units never descend into list items (items are replaced whole).
            Seg::Item(_) => return None,
        };
    }
    Some(node)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A toy "conversion back": drops `hidden`, and shows `shown` as `visible`.
    fn back(v: &Value) -> Result<Value, ConversionError> {
        let mut out = v.clone();
        if let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut) {
            spec.remove("hidden");
            if let Some(s) = spec.remove("shown") {
                spec.insert("visible".into(), s);
            }
        }
        Ok(out)
    }

    fn data(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn invisible_data_is_restored() {
        let mut converted = json!({"spec": {"x": 1}});
        let source = json!({"spec": {"x": 1}});
        restore(
            "v",
            &mut converted,
            &data(json!({"spec": {"hidden": 7}})),
            &source,
            &back,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(converted, json!({"spec": {"x": 1, "hidden": 7}}));
    }

    #[test]
    fn visible_data_is_restored_only_where_the_source_agrees() {
        let source = json!({"spec": {"visible": 2}});
        let mut converted = json!({"spec": {}});
        restore(
            "v",
            &mut converted,
            &data(json!({"spec": {"shown": 2}})),
            &source,
            &back,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(converted, json!({"spec": {"shown": 2}}));
        let mut converted = json!({"spec": {}});
        restore(
            "v",
            &mut converted,
            &data(json!({"spec": {"shown": 3}})),
            &source,
            &back,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(converted, json!({"spec": {}}), "stale data is dropped");
    }

    #[test]
    fn one_stale_unit_does_not_block_the_others() {
        let source = json!({"spec": {"visible": 2}});
        let mut converted = json!({"spec": {}});
        let payload = data(json!({"spec": {"shown": 3, "hidden": 1}}));
        restore("v", &mut converted, &payload, &source, &back).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(converted, json!({"spec": {"hidden": 1}}));
    }

    #[test]
    fn null_removes_and_visible_additions_need_agreement() {
        let source = json!({"spec": {}});
        let mut converted = json!({"spec": {"hidden": 1}});
        let payload = data(json!({"spec": {"hidden": null, "deep": {"hidden": 1}}}));
        restore("v", &mut converted, &payload, &source, &back).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(converted, json!({"spec": {}}));
    }
}
