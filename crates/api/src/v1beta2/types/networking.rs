//! Cluster network, subnet and router settings of a v1beta2 cluster.

use crate::v1beta2::SubnetParam;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Settings of the network the provider creates when `spec.network` is unset.
///
/// Groups v1beta1's `networkMTU` and `disablePortSecurity` (the latter with inverted meaning).
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "managedNetwork must not be empty if set", "rule": "self == null || has(self.mtu) || has(self.enablePortSecurity)"}]))]
pub struct ManagedNetwork {
    /// Whether port security is on for the network; false turns it off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_port_security: Option<bool>,
    /// MTU of the network; Neutron's default when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtu: Option<i32>,
}

/// Settings of the router the provider creates when `spec.router` is unset.
///
/// Holds what v1beta1 called `externalRouterIPs`.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "managedRouter must not be empty if set", "rule": "has(self.externalIPs)"}]))]
pub struct ManagedRouter {
    /// Addresses the router takes on the external network (at least one).
    #[serde(rename = "externalIPs", default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("minItems" = 1))]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub external_ips: Vec<ExternalRouterIPParam>,
}

/// An address the cluster router takes on the external network.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ExternalRouterIPParam {
    /// Explicit address; Neutron picks one when unset.
    #[serde(rename = "fixedIP", skip_serializing_if = "Option::is_none")]
    pub fixed_ip: Option<String>,
    /// External subnet the address comes from.
    pub subnet: SubnetParam,
}

/// A subnet the provider creates in the network it manages.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct SubnetSpec {
    /// Ranges Neutron may allocate addresses from; the whole CIDR when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub allocation_pools: Vec<AllocationPool>,
    /// Address range of the subnet in CIDR notation.
    #[schemars(extend("minLength" = 1))]
    pub cidr: String,
    /// Name servers DHCP hands out on this subnet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub dns_nameservers: Vec<String>,
}

/// An inclusive range of addresses Neutron may allocate from.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct AllocationPool {
    /// Last address of the range.
    #[schemars(extend("minLength" = 1))]
    pub end: String,
    /// First address of the range.
    #[schemars(extend("minLength" = 1))]
    pub start: String,
}
