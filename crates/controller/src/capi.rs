//! The Cluster API objects the controllers read, as small typed structs of only the fields
//! used, in the version Cluster API v1.11+ stores (`cluster.x-k8s.io/v1beta2`): reading the
//! storage version needs no CAPI conversion webhook. These types are never written whole.

use kube::CustomResource;
use kube::runtime::reflector::ObjectRef;
use serde::{Deserialize, Serialize};

/// API group of Cluster API core.
pub const CAPI_GROUP: &str = "cluster.x-k8s.io";

/// Annotation marking an infrastructure cluster as managed by something else than this
/// provider (Cluster API's `cluster.x-k8s.io/managed-by`).
pub const MANAGED_BY_ANNOTATION: &str = "cluster.x-k8s.io/managed-by";

/// A reference to a versioned-by-group object (v1beta2 contract references).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ContractReference {
    /// API group (no version).
    #[serde(default)]
    pub api_group: String,
    /// Kind.
    #[serde(default)]
    pub kind: String,
    /// Name, in the referring object's namespace.
    #[serde(default)]
    pub name: String,
}

impl ContractReference {
    /// The object this reference names, if it is of kind `K`, in `namespace` (the referring
    /// object's).
    pub fn object_ref<K>(&self, namespace: Option<&str>) -> Option<ObjectRef<K>>
    where
        K: kube::Resource<DynamicType = ()>,
    {
        if self.kind != K::kind(&()) {
            return None;
        }
        let o = ObjectRef::new(&self.name);
        Some(match namespace {
            Some(ns) => o.within(ns),
            None => o,
        })
    }
}

/// Control-plane endpoint of a Cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Endpoint {
    /// Host name or address.
    #[serde(default)]
    pub host: String,
    /// Port.
    #[serde(default)]
    pub port: i32,
}

/// Cluster API `Cluster` (fields this provider reads).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "cluster.x-k8s.io",
    version = "v1beta2",
    kind = "Cluster",
    plural = "clusters",
    namespaced,
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    /// Reconciliation of the whole cluster is paused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
    /// The infrastructure cluster (our OpenStackCluster).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_ref: Option<ContractReference>,
    /// The control-plane endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane_endpoint: Option<Endpoint>,
    /// The control-plane provider's object (tells which providers drive the cluster).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane_ref: Option<ContractReference>,
    /// Pod and service networks of the workload cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_network: Option<ClusterNetwork>,
}

/// `Cluster.spec.clusterNetwork` (the part this provider reads).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct ClusterNetwork {
    /// The pod network's CIDR blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods: Option<NetworkRanges>,
}

/// A list of CIDR blocks.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NetworkRanges {
    /// The blocks, in the Cluster's order.
    #[serde(default)]
    pub cidr_blocks: Vec<String>,
}

impl Cluster {
    /// The first pod CIDR block (`spec.clusterNetwork.pods.cidrBlocks[0]`), if any.
    pub fn pod_cidr(&self) -> Option<&str> {
        self.spec
            .cluster_network
            .as_ref()
            .and_then(|n| n.pods.as_ref())
            .and_then(|p| p.cidr_blocks.first())
            .map(String::as_str)
            .filter(|c| !c.is_empty())
    }
}

/// Bootstrap section of a Machine.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Bootstrap {
    /// Secret holding the bootstrap data (key `value`), once the bootstrap provider made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_secret_name: Option<String>,
}

/// Cluster API `Machine` (fields this provider reads).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "cluster.x-k8s.io",
    version = "v1beta2",
    kind = "Machine",
    plural = "machines",
    namespaced,
    status = "MachineStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct MachineSpec {
    /// Name of the Cluster this machine belongs to.
    #[serde(default)]
    pub cluster_name: String,
    /// Bootstrap data.
    #[serde(default)]
    pub bootstrap: Bootstrap,
    /// The infrastructure machine (our OpenStackMachine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_ref: Option<ContractReference>,
    /// Failure domain (availability zone) chosen by Cluster API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_domain: Option<String>,
    /// Kubernetes version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// Node reference of a Machine.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct NodeReference {
    /// Node name.
    #[serde(default)]
    pub name: String,
}

/// Status of a Machine (fields this provider reads).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MachineStatus {
    /// The Node once it joined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_ref: Option<NodeReference>,
}

impl Cluster {
    /// `spec.paused`.
    pub fn is_paused(&self) -> bool {
        self.spec.paused == Some(true)
    }
}
