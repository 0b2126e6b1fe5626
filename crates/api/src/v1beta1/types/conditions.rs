//! Cluster API conditions and v1beta2 initialization.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Cluster API v1beta1 condition.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// Last time the condition changed status.
    pub last_transition_time: Time,
    /// Human-readable details.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxLength" = 10240))]
    #[schemars(extend("minLength" = 1))]
    pub message: Option<String>,
    /// CamelCase reason for the last transition.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxLength" = 256))]
    #[schemars(extend("minLength" = 1))]
    pub reason: Option<String>,
    /// Severity when status is False (Error, Warning or Info).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxLength" = 32))]
    pub severity: Option<String>,
    /// Status of the condition (True, False or Unknown).
    pub status: String,
    /// Condition type, CamelCase (Ready, ...).
    #[schemars(extend("maxLength" = 256))]
    #[schemars(extend("minLength" = 1))]
    pub r#type: String,
}

/// Cluster API v1beta2 contract: initialization milestones of the infrastructure.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Initialization {
    /// The infrastructure is fully provisioned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioned: Option<bool>,
}
