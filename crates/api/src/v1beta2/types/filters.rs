//! Filters of the v1beta2 selectors that differ from v1beta1.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Query that must match exactly one Neutron subnet.
///
/// Same fields as in v1beta1; only `ipVersion` now declares its 32-bit format.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct SubnetFilter {
    /// Address range in CIDR notation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cidr: Option<String>,
    /// Description of the subnet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Gateway address of the subnet.
    #[serde(rename = "gatewayIP", skip_serializing_if = "Option::is_none")]
    pub gateway_ip: Option<String>,
    /// IP version (4 or 6).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_version: Option<i32>,
    /// IPv6 address mode of the subnet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipv6_address_mode: Option<String>,
    /// IPv6 router advertisement mode of the subnet.
    #[serde(rename = "ipv6RAMode", skip_serializing_if = "Option::is_none")]
    pub ipv6_ra_mode: Option<String>,
    /// Name of the subnet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Skip subnets that carry every one of these tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("items" = {"minLength": 1, "pattern": "^[^,]+$", "type": "string"}))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub not_tags: Vec<String>,
    /// Skip subnets that carry at least one of these tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("items" = {"minLength": 1, "pattern": "^[^,]+$", "type": "string"}))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub not_tags_any: Vec<String>,
    /// Project (tenant) owning the subnet.
    #[serde(rename = "projectID", skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// Only subnets carrying every one of these tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("items" = {"minLength": 1, "pattern": "^[^,]+$", "type": "string"}))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub tags: Vec<String>,
    /// Only subnets carrying at least one of these tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("items" = {"minLength": 1, "pattern": "^[^,]+$", "type": "string"}))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub tags_any: Vec<String>,
}

/// Query that must match exactly one Nova flavor.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct FlavorFilter {
    /// Flavor name, as listed by `openstack flavor list`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}
