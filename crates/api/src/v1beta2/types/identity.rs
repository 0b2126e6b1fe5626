//! Credential reference of the v1beta2 kinds.

use crate::v1beta1::IdentityRefType;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where an object's OpenStack credentials (a clouds.yaml) are read from.
///
/// Unlike v1beta1, `type` is optional: the API server defaults it to `Secret`.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "region is immutable", "rule": "(!has(self.region) && !has(oldSelf.region)) || self.region == oldSelf.region"}]))]
pub struct OpenStackIdentityReference {
    /// Cloud entry of the clouds.yaml to authenticate with.
    #[schemars(extend("minLength" = 1))]
    pub cloud_name: String,
    /// Name of the Secret, or of the OpenStackClusterIdentity, holding the clouds.yaml.
    #[schemars(extend("minLength" = 1))]
    pub name: String,
    /// Region to talk to; when unset the region of the clouds.yaml entry applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Kind of object `name` refers to; `Secret` when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Secret"))]
    pub r#type: Option<IdentityRefType>,
}

impl OpenStackIdentityReference {
    /// The reference type, applying the API server's default (`Secret`).
    pub fn ref_type(&self) -> IdentityRefType {
        self.r#type.unwrap_or_default()
    }
}
