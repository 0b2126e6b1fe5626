//! OpenStack resources observed by the provider, as recorded in v1beta2 status.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The API load balancer as it exists in Octavia.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancer {
    /// Client CIDRs currently admitted by the listeners.
    #[serde(
        rename = "allowedCIDRs",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub allowed_cidrs: Vec<String>,
    /// Load balancer UUID.
    #[schemars(extend("minLength" = 1))]
    pub id: String,
    /// VIP address on the load balancer network.
    #[serde(rename = "internalIP")]
    #[schemars(extend("minLength" = 1))]
    pub internal_ip: String,
    /// Address clients use: the floating IP, or the VIP when there is none.
    #[schemars(extend("minLength" = 1))]
    pub ip: String,
    /// Network and subnets the VIP lives on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancer_network: Option<NetworkStatusWithSubnets>,
    /// Load balancer name.
    #[schemars(extend("minLength" = 1))]
    pub name: String,
    /// Tags of the load balancer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub tags: Vec<String>,
}

/// A Neutron network together with the subnets the cluster uses.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct NetworkStatusWithSubnets {
    /// Network UUID.
    #[schemars(extend("minLength" = 1))]
    pub id: String,
    /// Network name.
    #[schemars(extend("minLength" = 1))]
    pub name: String,
    /// Subnets of the network in use by the cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub subnets: Vec<Subnet>,
    /// Tags of the network.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub tags: Vec<String>,
}

/// A Neutron subnet in use by the cluster.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Subnet {
    /// Address range in CIDR notation.
    #[schemars(extend("minLength" = 1))]
    pub cidr: String,
    /// Subnet UUID.
    #[schemars(extend("minLength" = 1))]
    pub id: String,
    /// Subnet name.
    #[schemars(extend("minLength" = 1))]
    pub name: String,
    /// Tags of the subnet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub tags: Vec<String>,
}

/// A managed security group as created in Neutron.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct SecurityGroupStatus {
    /// Security group UUID.
    #[schemars(extend("minLength" = 1))]
    pub id: String,
    /// Security group name.
    #[schemars(extend("minLength" = 1))]
    pub name: String,
}

/// A Neutron network without subnet details (the external network).
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct NetworkStatus {
    /// Network UUID.
    #[schemars(extend("minLength" = 1))]
    pub id: String,
    /// Network name.
    #[schemars(extend("minLength" = 1))]
    pub name: String,
    /// Tags of the network.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub tags: Vec<String>,
}

/// The cluster's Neutron router.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Router {
    /// Router UUID.
    #[schemars(extend("minLength" = 1))]
    pub id: String,
    /// Addresses of the router's external gateway.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub ips: Vec<String>,
    /// Router name.
    #[schemars(extend("minLength" = 1))]
    pub name: String,
    /// Tags of the router.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub tags: Vec<String>,
}

/// A failure domain (availability zone) offered to Cluster API, as one entry of a list keyed
/// by name (v1beta1 used a map keyed by zone).
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct FailureDomain {
    /// Free-form key/value facts about the domain.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, String>,
    /// Whether control-plane machines may be placed in this domain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_plane: Option<bool>,
    /// Zone name; the list key.
    #[schemars(extend("maxLength" = 256))]
    #[schemars(extend("minLength" = 1))]
    pub name: String,
}
