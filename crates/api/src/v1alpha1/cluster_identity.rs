//! OpenStackClusterIdentity: cluster-scoped credentials.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Desired state of a cluster-wide OpenStack credential that namespaces may reference.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default, CustomResource)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1alpha1",
    kind = "OpenStackClusterIdentity",
    plural = "openstackclusteridentities"
)]
#[kube(shortname = "osci", category = "cluster-api", derive = "PartialEq")]
#[kube(doc = "Cluster-scoped OpenStack credentials that selected namespaces may use.")]
#[kube(label("cluster.x-k8s.io/v1beta1", "v1beta1"))]
// Cluster-scoped objects are moved by `clusterctl move` only when their CRD asks for it.
#[kube(label("clusterctl.cluster.x-k8s.io/move-hierarchy", "true"))]
#[serde(rename_all = "camelCase")]
pub struct OpenStackClusterIdentitySpec {
    /// Namespaces allowed to use this identity; all when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    /// Secret holding the clouds.yaml.
    pub secret_ref: ClusterIdentitySecretReference,
}

/// Kubernetes label selector.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-map-type" = "atomic"))]
pub struct LabelSelector {
    /// Set-based requirements, all of which must match.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub match_expressions: Vec<LabelSelectorRequirement>,
    /// Labels that must all be present with these values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
}

/// One set-based requirement of a label selector.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelectorRequirement {
    /// Label key.
    pub key: String,
    /// Relation between the key and the values (In, NotIn, Exists, DoesNotExist).
    pub operator: String,
    /// Values compared with the label value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub values: Vec<String>,
}

/// Secret holding the clouds.yaml of a cluster identity.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ClusterIdentitySecretReference {
    /// Name of the Secret.
    pub name: String,
    /// Namespace of the Secret.
    pub namespace: String,
}
