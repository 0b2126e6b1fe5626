//! Cluster network, subnet and router options.

use crate::v1beta1::SubnetParam;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Fixed IP the cluster router takes on the external network.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ExternalRouterIPParam {
    /// Fixed IP address to request.
    #[serde(rename = "fixedIP", skip_serializing_if = "Option::is_none")]
    pub fixed_ip: Option<String>,
    /// Subnet of the external network the IP is taken from.
    pub subnet: SubnetParam,
}

/// A subnet the provider creates in the cluster network.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct SubnetSpec {
    /// Address ranges Neutron may hand out in this subnet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allocation_pools: Vec<AllocationPool>,
    /// Address range in CIDR notation.
    pub cidr: String,
    /// DNS servers announced by DHCP in this subnet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dns_nameservers: Vec<String>,
}

/// Range of addresses Neutron may allocate from a subnet.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct AllocationPool {
    /// Last address of the range.
    pub end: String,
    /// First address of the range.
    pub start: String,
}
