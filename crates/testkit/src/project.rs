//! A cloud project's resources as the tests compare them: by collection, with what Neutron
//! makes in every project left out.

use std::collections::BTreeMap;

use serde_json::Value;

/// A project's state as capo-sim's control API returns it (an object of arrays), by collection.
pub fn collections(state: &Value) -> BTreeMap<String, Vec<Value>> {
    state
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_array().cloned().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default()
}

/// The IDs of the project's `default` security groups: Neutron makes one in every project, so
/// neither it nor its rules are ever a leftover.
pub fn default_group_ids(items: &BTreeMap<String, Vec<Value>>) -> Vec<String> {
    items
        .get("security_groups")
        .into_iter()
        .flatten()
        .filter(|g| g["name"] == "default")
        .filter_map(|g| g["id"].as_str().map(str::to_owned))
        .collect()
}

/// Whether `item` of `collection` is a `default` security group or a rule of one
/// (`default_ids`, from [`default_group_ids`]).
pub fn is_default_group(collection: &str, item: &Value, default_ids: &[String]) -> bool {
    match collection {
        "security_groups" => item["name"] == "default",
        "security_group_rules" => item["security_group_id"]
            .as_str()
            .is_some_and(|id| default_ids.iter().any(|d| d == id)),
        _ => false,
    }
}
