//! Filters used by the resource selectors.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Query that must match exactly one Neutron network, router or security group.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct NeutronFilter {
    /// Description of the resource.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Name of the resource.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Exclude resources carrying all of these tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("items" = {"minLength": 1, "pattern": "^[^,]+$", "type": "string"}))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub not_tags: Vec<String>,
    /// Exclude resources carrying any of these tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("items" = {"minLength": 1, "pattern": "^[^,]+$", "type": "string"}))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub not_tags_any: Vec<String>,
    /// Project (tenant) ID.
    #[serde(rename = "projectID", skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// Neutron/Nova tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("items" = {"minLength": 1, "pattern": "^[^,]+$", "type": "string"}))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub tags: Vec<String>,
    /// Match resources carrying any of these tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("items" = {"minLength": 1, "pattern": "^[^,]+$", "type": "string"}))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub tags_any: Vec<String>,
}

/// Query that must match exactly one Neutron subnet.
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
    #[schemars(transform = crate::schema::drop_format)]
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
    /// Exclude resources carrying all of these tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("items" = {"minLength": 1, "pattern": "^[^,]+$", "type": "string"}))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub not_tags: Vec<String>,
    /// Exclude resources carrying any of these tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("items" = {"minLength": 1, "pattern": "^[^,]+$", "type": "string"}))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub not_tags_any: Vec<String>,
    /// Project (tenant) ID.
    #[serde(rename = "projectID", skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// Neutron/Nova tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("items" = {"minLength": 1, "pattern": "^[^,]+$", "type": "string"}))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub tags: Vec<String>,
    /// Match resources carrying any of these tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("items" = {"minLength": 1, "pattern": "^[^,]+$", "type": "string"}))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub tags_any: Vec<String>,
}

/// Query that must match exactly one Glance image.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct ImageFilter {
    /// Image name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Tags the image must carry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub tags: Vec<String>,
}

/// Query that must match exactly one Nova server group.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct ServerGroupFilter {
    /// Name of the server group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}
