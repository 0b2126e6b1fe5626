//! OpenStackClusterTemplate v1beta2, used by ClusterClass.

use crate::v1beta2::OpenStackClusterSpec;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Desired state of an OpenStackClusterTemplate.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default, CustomResource)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta2",
    kind = "OpenStackClusterTemplate",
    plural = "openstackclustertemplates"
)]
#[kube(
    namespaced,
    shortname = "osct",
    category = "cluster-api",
    derive = "PartialEq"
)]
#[kube(doc = "Blueprint of the OpenStackClusters of a ClusterClass (v1beta2).")]
#[kube(label("cluster.x-k8s.io/v1beta2", "v1beta2"))]
#[serde(rename_all = "camelCase")]
pub struct OpenStackClusterTemplateSpec {
    /// What every OpenStackCluster stamped from this template looks like.
    pub template: OpenStackClusterTemplateResource,
}

/// Metadata and spec given to each OpenStackCluster created from the template.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct OpenStackClusterTemplateResource {
    /// Labels and annotations the topology controller copies onto the generated object
    /// (new in v1beta2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<TemplateMetadata>,
    /// Spec of the generated OpenStackClusters.
    pub spec: OpenStackClusterSpec,
}

/// The subset of object metadata a template may set: labels and annotations.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct TemplateMetadata {
    /// Annotations to add to the generated object.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Labels to add to the generated object.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}
