//! v1beta2 selectors (ID, filter or reference) whose shape differs from v1beta1.

use crate::v1beta1::ImageFilter;
use crate::v1beta2::{FlavorFilter, SubnetFilter};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Picks one Neutron subnet, either by ID or by a filter, never both.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("maxProperties" = 1))]
#[schemars(extend("minProperties" = 1))]
pub struct SubnetParam {
    /// Filter resolved to a single subnet; the alternative to `id`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<SubnetFilter>,
    /// Subnet UUID; the alternative to `filter`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "uuid"))]
    pub id: Option<String>,
}

/// Picks the Glance image to boot: an ID, a filter, or an ORC Image object (exactly one).
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("maxProperties" = 1))]
#[schemars(extend("minProperties" = 1))]
pub struct ImageParam {
    /// Filter resolved to a single image.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<ImageFilter>,
    /// Image UUID.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "uuid"))]
    pub id: Option<String>,
    /// ORC Image object in the same namespace whose status supplies the image ID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_ref: Option<ResourceReference>,
}

/// Picks the Nova flavor of a server, either by ID or by a filter, never both.
///
/// Replaces v1beta1's pair of strings `flavor` and `flavorID`.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("maxProperties" = 1))]
#[schemars(extend("minProperties" = 1))]
pub struct FlavorParam {
    /// Filter resolved to a single flavor; the alternative to `id`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<FlavorFilter>,
    /// Flavor ID (not necessarily a UUID); the alternative to `filter`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// Names an object in the namespace of the referring object.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ResourceReference {
    /// Object name; must not be empty.
    #[schemars(extend("minLength" = 1))]
    pub name: String,
}
