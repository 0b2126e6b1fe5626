//! OpenStackClusterTemplate, used by ClusterClass.

use crate::v1beta1::OpenStackClusterSpec;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of an OpenStackClusterTemplate.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default, CustomResource)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta1",
    kind = "OpenStackClusterTemplate",
    plural = "openstackclustertemplates"
)]
#[kube(
    namespaced,
    shortname = "osct",
    category = "cluster-api",
    derive = "PartialEq"
)]
#[kube(doc = "Template of OpenStackClusters, referenced by a ClusterClass.")]
#[kube(label("cluster.x-k8s.io/v1beta1", "v1beta1"))]
#[serde(rename_all = "camelCase")]
pub struct OpenStackClusterTemplateSpec {
    /// Template every OpenStackCluster of the ClusterClass is created from.
    pub template: OpenStackClusterTemplateResource,
}

/// Template from which OpenStackClusters are stamped out.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct OpenStackClusterTemplateResource {
    /// Spec of the OpenStackClusters created from this template.
    pub spec: OpenStackClusterSpec,
}
