//! Resource selectors: an ID or a filter.

use crate::v1beta1::{
    ImageFilter, NeutronFilter, ResourceReference, ServerGroupFilter, SubnetFilter,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Selects one Neutron resource (network, router or security group) by ID or by filter; exactly one of the two.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("maxProperties" = 1))]
#[schemars(extend("minProperties" = 1))]
pub struct NetworkParam {
    /// Query that must match exactly one network, router or security group; set instead of id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<NeutronFilter>,
    /// OpenStack ID (UUID); set instead of filter.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "uuid"))]
    pub id: Option<String>,
}

/// Selects one Neutron subnet by ID or by filter; exactly one of the two.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("maxProperties" = 1))]
#[schemars(extend("minProperties" = 1))]
pub struct SubnetParam {
    /// Query that must match exactly one subnet; set instead of id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<SubnetFilter>,
    /// OpenStack ID (UUID); set instead of filter.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "uuid"))]
    pub id: Option<String>,
}

/// Selects a Glance image by ID, by filter, or through an ORC Image object; exactly one of the three.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("maxProperties" = 1))]
#[schemars(extend("minProperties" = 1))]
pub struct ImageParam {
    /// Query that must match exactly one image; set instead of id or imageRef.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<ImageFilter>,
    /// Glance image ID (UUID).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "uuid"))]
    pub id: Option<String>,
    /// ORC Image object to take the image ID from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_ref: Option<ResourceReference>,
}

/// Selects a Nova server group by ID or by filter; exactly one of the two.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("maxProperties" = 1))]
#[schemars(extend("minProperties" = 1))]
pub struct ServerGroupParam {
    /// Query that must match exactly one server group; set instead of id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<ServerGroupFilter>,
    /// OpenStack ID (UUID); set instead of filter.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "uuid"))]
    pub id: Option<String>,
}
