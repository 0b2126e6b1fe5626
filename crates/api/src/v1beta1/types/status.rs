//! Observed OpenStack resources recorded in status.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Observed API server load balancer.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancer {
    /// Source CIDRs allowed to reach the load balancer; empty allows all.
    #[serde(
        rename = "allowedCIDRs",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub allowed_cidrs: Vec<String>,
    /// OpenStack ID (UUID); set instead of filter.
    pub id: String,
    /// Fixed VIP address of the load balancer.
    #[serde(rename = "internalIP")]
    pub internal_ip: String,
    /// Floating (or fixed, without floating IP) address of the API endpoint.
    pub ip: String,
    /// Network the load balancer VIP lives on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancer_network: Option<NetworkStatusWithSubnets>,
    /// Load balancer name.
    pub name: String,
    /// Neutron/Nova tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// Observed Neutron network and its subnets.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct NetworkStatusWithSubnets {
    /// OpenStack ID (UUID); set instead of filter.
    pub id: String,
    /// Network name.
    pub name: String,
    /// Subnets of the network in use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subnets: Vec<Subnet>,
    /// Neutron/Nova tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// Observed Neutron subnet.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Subnet {
    /// Address range in CIDR notation.
    pub cidr: String,
    /// OpenStack ID (UUID); set instead of filter.
    pub id: String,
    /// Subnet name.
    pub name: String,
    /// Neutron/Nova tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// Observed managed security group.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct SecurityGroupStatus {
    /// OpenStack ID (UUID); set instead of filter.
    pub id: String,
    /// Security group name.
    pub name: String,
}

/// Observed Neutron network.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct NetworkStatus {
    /// OpenStack ID (UUID); set instead of filter.
    pub id: String,
    /// Network name.
    pub name: String,
    /// Neutron/Nova tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// Observed Neutron router.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Router {
    /// OpenStack ID (UUID); set instead of filter.
    pub id: String,
    /// IP addresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ips: Vec<String>,
    /// Router name.
    pub name: String,
    /// Neutron/Nova tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// A failure domain (availability zone) offered to Cluster API.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct FailureDomainSpec {
    /// Attributes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, String>,
    /// Control plane.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_plane: Option<bool>,
}
