//! capo's four Cluster API kinds in the templates, handled the way the API server handles them:
//! defaulted by the CRD schema of the version they are written in, then converted by capo's
//! conversion (`capo_api::conversion`, the code behind the conversion webhook).

use std::sync::OnceLock;

use serde_json::Value;

/// The API group of the infrastructure objects.
pub const GROUP: &str = "infrastructure.cluster.x-k8s.io";
/// The version capo stores and its admission webhooks judge.
pub const V1BETA1: &str = "infrastructure.cluster.x-k8s.io/v1beta1";
/// The version the templates are written in (but for the capi-v1beta1 flavor).
pub const V1BETA2: &str = "infrastructure.cluster.x-k8s.io/v1beta2";
/// The kinds served in both versions.
pub const KINDS: [&str; 4] = [
    "OpenStackCluster",
    "OpenStackClusterTemplate",
    "OpenStackMachine",
    "OpenStackMachineTemplate",
];

/// The `apiVersion` and `kind` of an object (or of a reference or selector naming one).
pub fn type_of(value: &Value) -> (&str, &str) {
    (
        value["apiVersion"].as_str().unwrap_or_default(),
        value["kind"].as_str().unwrap_or_default(),
    )
}

/// Whether `value` is one of the four kinds, in either version.
pub fn is_infra(value: &Value) -> bool {
    let (api_version, kind) = type_of(value);
    KINDS.contains(&kind) && api_version.starts_with(&format!("{GROUP}/"))
}

/// The `openAPIV3Schema` capo's CRD declares for `kind` in `api_version`.
pub fn schema(api_version: &str, kind: &str) -> Value {
    static CRDS: OnceLock<Vec<Value>> = OnceLock::new();
    let crds = CRDS.get_or_init(|| {
        capo_api::crds::all()
            .into_iter()
            .filter_map(|crd| serde_json::to_value(crd).ok())
            .collect()
    });
    let version = api_version.rsplit('/').next().unwrap_or_default();
    crds.iter()
        .find(|crd| crd["spec"]["names"]["kind"] == kind)
        .and_then(|crd| {
            crd["spec"]["versions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|v| v["name"] == version)
                .map(|v| v["schema"]["openAPIV3Schema"].clone())
        })
        .unwrap_or_else(|| panic!("no CRD schema for {kind} {api_version}"))
}

/// Applies the schema's defaults as the API server's structural defaulting does: a property
/// that is missing (or null without `nullable`) gets its default, then every property present,
/// defaulted ones included, is defaulted in turn; list items and additional properties too.
pub fn apply_defaults(schema: &Value, value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(props) = schema["properties"].as_object() {
                for (name, prop) in props {
                    let Some(default) = prop.get("default") else {
                        continue;
                    };
                    let absent = match map.get(name) {
                        None => true,
                        Some(Value::Null) => prop["nullable"] != true,
                        Some(_) => false,
                    };
                    if absent {
                        map.insert(name.clone(), default.clone());
                    }
                }
            }
            for (name, child) in map.iter_mut() {
                if let Some(prop) = schema["properties"].get(name) {
                    apply_defaults(prop, child);
                } else if schema["additionalProperties"].is_object() {
                    apply_defaults(&schema["additionalProperties"], child);
                }
            }
        }
        Value::Array(items) if schema["items"].is_object() => {
            for item in items {
                apply_defaults(&schema["items"], item);
            }
        }
        _ => {}
    }
}

/// `object` as the API server holds it after a create in its own version: with its schema's
/// defaults.
pub fn defaulted(object: &Value) -> Value {
    let (api_version, kind) = type_of(object);
    let schema = schema(api_version, kind);
    let mut object = object.clone();
    apply_defaults(&schema, &mut object);
    object
}

/// `object`, defaulted in its own version, converted to `api_version` by capo's conversion:
/// what a client of `api_version` reads back after writing `object`.
pub fn convert(object: &Value, api_version: &str) -> Result<Value, String> {
    let (from, kind) = type_of(object);
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    capo_api::conversion::convert(api_version, defaulted(object))
        .map_err(|e| format!("{kind} {name} ({from} to {api_version}): {e}"))
}
