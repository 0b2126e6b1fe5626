//! Conditions of the v1beta2 kinds: standard Kubernetes `metav1.Condition`s.
//!
//! v1beta2 drops Cluster API's v1beta1 condition type (with `severity`) for the one every
//! Kubernetes API uses, so the Rust type is k8s-openapi's. Its derived schema carries no
//! validation, hence [`conditions_schema`], which states the bounds the API server enforces.

pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use schemars::{Schema, SchemaGenerator, json_schema};

/// Schema of a `conditions` list: `metav1.Condition` items, a list-map keyed by `type`.
pub fn conditions_schema(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = plain_conditions_schema(generator);
    schema.insert(
        "description".into(),
        "Conditions of the object, at most one per type.".into(),
    );
    schema.insert(
        "x-kubernetes-list-map-keys".into(),
        serde_json::json!(["type"]),
    );
    schema.insert("x-kubernetes-list-type".into(), "map".into());
    schema
}

/// Schema of a `conditions` list of `metav1.Condition` items without list semantics (so
/// atomic): what upstream's v1alpha1 kinds declare since they moved to standard conditions.
pub fn plain_conditions_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "description": "Conditions of the object.",
        "items": {
            "type": "object",
            "description": "One observed aspect of the object's state.",
            "properties": {
                "lastTransitionTime": {
                    "type": "string",
                    "format": "date-time",
                    "description": "When status last changed."
                },
                "message": {
                    "type": "string",
                    "maxLength": 32768,
                    "description": "Details for humans; may be empty."
                },
                "observedGeneration": {
                    "type": "integer",
                    "format": "int64",
                    "minimum": 0,
                    "description": "metadata.generation the condition was computed from."
                },
                "reason": {
                    "type": "string",
                    "maxLength": 1024,
                    "minLength": 1,
                    "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
                    "description": "CamelCase identifier of why status last changed."
                },
                "status": {
                    "type": "string",
                    "enum": ["True", "False", "Unknown"],
                    "description": "True, False or Unknown."
                },
                "type": {
                    "type": "string",
                    "maxLength": 316,
                    "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
                    "description": "Condition name, CamelCase, optionally prefixed by a DNS domain and a slash."
                }
            },
            "required": ["lastTransitionTime", "message", "reason", "status", "type"]
        }
    })
}
