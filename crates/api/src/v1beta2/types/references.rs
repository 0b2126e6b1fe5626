//! API endpoint of a v1beta2 cluster.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Host and port of the workload cluster's Kubernetes API.
///
/// Tighter than v1beta1: when set it must carry a field, the host must not be empty and the
/// port must be a valid TCP port.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct APIEndpoint {
    /// DNS name or IP address.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxLength" = 512))]
    #[schemars(extend("minLength" = 1))]
    pub host: Option<String>,
    /// TCP port.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maximum" = 65535))]
    #[schemars(extend("minimum" = 1))]
    pub port: Option<i32>,
}
