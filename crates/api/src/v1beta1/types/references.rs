//! Small reference and address types.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Reference to an object of a given kind in the same namespace.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-map-type" = "atomic"))]
pub struct TypedLocalObjectReference {
    /// API group of the referenced kind; empty for the core group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_group: Option<String>,
    /// Kind of the referenced object.
    pub kind: String,
    /// Name of the referenced object.
    pub name: String,
}

/// Name of an object in the same namespace.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ResourceReference {
    /// Name of the object.
    pub name: String,
}

/// Host and port where the Kubernetes API of the workload cluster is reachable.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct APIEndpoint {
    /// Hostname or IP address.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxLength" = 512))]
    pub host: Option<String>,
    /// TCP port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
}

/// One address of a machine, as reported to Cluster API.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct MachineAddress {
    /// The address itself.
    pub address: String,
    /// Address kind (InternalIP, ExternalIP, Hostname, ...).
    pub r#type: String,
}

/// Reference to an object by name in the same namespace.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-map-type" = "atomic"))]
pub struct LocalObjectReference {
    /// Name of the referenced Secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = ""))]
    pub name: Option<String>,
}
