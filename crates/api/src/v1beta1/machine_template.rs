//! OpenStackMachineTemplate.

use crate::v1beta1::{Condition, OpenStackMachineSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Desired state of an OpenStackMachineTemplate.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default, CustomResource)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta1",
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
    doc = "Template of OpenStackMachines, referenced by MachineDeployments, control planes and ClusterClasses."
)]
#[kube(label("cluster.x-k8s.io/v1beta1", "v1beta1"), derive = "PartialEq")]
#[serde(rename_all = "camelCase")]
pub struct OpenStackMachineTemplateSpec {
    /// Template every OpenStackMachine is created from.
    pub template: OpenStackMachineTemplateResource,
}

/// Template from which OpenStackMachines are stamped out.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct OpenStackMachineTemplateResource {
    /// Spec of the OpenStackMachines created from this template.
    pub spec: OpenStackMachineSpec,
}

/// Observed state of an OpenStackMachineTemplate, used by autoscalers scaling from zero.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct OpenStackMachineTemplateStatus {
    /// Resources a node of this template offers (cpu, memory, ephemeral-storage, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("additionalProperties" = {"anyOf": [{"type": "integer"}, {"type": "string"}], "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$", "x-kubernetes-int-or-string": true}))]
    pub capacity: BTreeMap<String, Quantity>,
    /// Information about the nodes built from this template.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_info: Option<NodeInfo>,
    /// Cluster API v1beta1 conditions: Ready says whether capacity and nodeInfo reflect the
    /// template's flavor and image, or why they could not be read (upstream adds this field
    /// after v0.14; v0.14 reports nothing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// Facts about the nodes a machine template produces.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct NodeInfo {
    /// Operating system of the nodes (linux or windows).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operating_system: Option<String>,
}
