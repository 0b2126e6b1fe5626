//! Bastion host of a v1beta2 cluster.

use crate::v1beta2::{MachineResources, OpenStackMachineSpec, ResolvedMachineSpec};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// An optional SSH jump host in the cluster network.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "spec is required if bastion is enabled", "rule": "!self.enabled || has(self.spec)"}]))]
pub struct Bastion {
    /// Availability zone for the bastion server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub availability_zone: Option<String>,
    /// Whether the bastion exists; turning it off deletes the server.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub enabled: Option<bool>,
    /// Existing floating IP for the bastion; one is allocated when unset.
    #[serde(rename = "floatingIP", skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "ipv4"))]
    pub floating_ip: Option<String>,
    /// Server settings of the bastion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec: Option<OpenStackMachineSpec>,
}

/// The bastion server as observed by the provider.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct BastionStatus {
    /// Floating IP attached to the bastion.
    #[serde(rename = "floatingIP", skip_serializing_if = "Option::is_none")]
    pub floating_ip: Option<String>,
    /// Server UUID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Fixed IP of the bastion in the cluster network.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
    /// Server name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The bastion spec with every reference resolved to an ID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved: Option<ResolvedMachineSpec>,
    /// OpenStack resources created for the bastion so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<MachineResources>,
    /// Nova key pair injected into the bastion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssh_key_name: Option<String>,
    /// Nova state of the server (ACTIVE, ERROR, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}
