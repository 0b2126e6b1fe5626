//! Credential references.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where the OpenStack credentials (clouds.yaml) of an object come from.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "region is immutable", "rule": "(!has(self.region) && !has(oldSelf.region)) || self.region == oldSelf.region"}]))]
#[schemars(transform = crate::schema::require(&["type"]))]
pub struct OpenStackIdentityReference {
    /// Entry of clouds.yaml to use.
    #[schemars(extend("minLength" = 1))]
    pub cloud_name: String,
    /// Name of the Secret or OpenStackClusterIdentity.
    #[schemars(extend("minLength" = 1))]
    pub name: String,
    /// Region to use; the clouds.yaml region when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Whether name is a Secret or an OpenStackClusterIdentity.
    #[serde(default)]
    pub r#type: IdentityRefType,
}

/// Kind of object an identityRef names.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, JsonSchema, PartialEq, Eq, Default)]
pub enum IdentityRefType {
    /// A Secret in the same namespace.
    #[serde(rename = "Secret")]
    #[default]
    Secret,
    /// A cluster-scoped OpenStackClusterIdentity.
    #[serde(rename = "ClusterIdentity")]
    ClusterIdentity,
}
