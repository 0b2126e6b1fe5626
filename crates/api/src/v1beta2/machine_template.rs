//! OpenStackMachineTemplate v1beta2.

use crate::v1beta2::{Condition, NodeInfo, OpenStackMachineSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Desired state of an OpenStackMachineTemplate.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default, CustomResource)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta2",
    kind = "OpenStackMachineTemplate",
    plural = "openstackmachinetemplates"
)]
#[kube(
    namespaced,
    status = "OpenStackMachineTemplateStatus",
    shortname = "osmt",
    category = "cluster-api"
)]
#[kube(
    doc = "Blueprint of OpenStackMachines for MachineDeployments, control planes and ClusterClasses (v1beta2)."
)]
#[kube(label("cluster.x-k8s.io/v1beta2", "v1beta2"), derive = "PartialEq")]
#[serde(rename_all = "camelCase")]
pub struct OpenStackMachineTemplateSpec {
    /// What every OpenStackMachine stamped from this template looks like.
    pub template: OpenStackMachineTemplateResource,
}

/// Spec given to each OpenStackMachine created from the template.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct OpenStackMachineTemplateResource {
    /// Spec of the generated OpenStackMachines.
    pub spec: OpenStackMachineSpec,
}

/// What a node built from the template offers, for autoscalers that scale from zero.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct OpenStackMachineTemplateStatus {
    /// Resources of one node (cpu, memory, ephemeral-storage, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("additionalProperties" = {"anyOf": [{"type": "integer"}, {"type": "string"}], "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$", "x-kubernetes-int-or-string": true}))]
    pub capacity: BTreeMap<String, Quantity>,
    /// Standard Kubernetes conditions, one per type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::v1beta2::conditions_schema")]
    pub conditions: Vec<Condition>,
    /// Facts about the nodes, such as their operating system.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_info: Option<NodeInfo>,
}
