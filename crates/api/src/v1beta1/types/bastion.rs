//! Bastion host spec and status.

use crate::v1beta1::{MachineResources, OpenStackMachineSpec, ResolvedMachineSpec};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Optional jump host created in the cluster network for SSH access.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "spec is required if bastion is enabled", "rule": "!self.enabled || has(self.spec)"}]))]
pub struct Bastion {
    /// Availability zone of the bastion server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub availability_zone: Option<String>,
    /// Create the bastion; setting false deletes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub enabled: Option<bool>,
    /// Floating IP to attach to the bastion; allocated when unset.
    #[serde(rename = "floatingIP", skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "ipv4"))]
    pub floating_ip: Option<String>,
    /// Machine spec of the bastion server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec: Option<OpenStackMachineSpec>,
}

/// Observed bastion server.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct BastionStatus {
    /// Floating IP of the bastion.
    #[serde(rename = "floatingIP", skip_serializing_if = "Option::is_none")]
    pub floating_ip: Option<String>,
    /// Nova server ID of the bastion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Fixed IP of the bastion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
    /// Name of the bastion server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Spec with all references resolved, written with the first status write after the
    /// resolution.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved: Option<ResolvedMachineSpec>,
    /// OpenStack resources created so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<MachineResources>,
    /// Nova key pair injected into the server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssh_key_name: Option<String>,
    /// Nova server state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}
