//! Resolved machine specs and created resources of a v1beta2 server.

use crate::v1beta1::{BindingProfile, ResolvedFixedIP};
use crate::v1beta2::{AddressPair, ValueSpec};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The parts of a machine spec that name OpenStack resources, with every name or filter
/// replaced by the ID it resolved to.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedMachineSpec {
    /// Resolved flavor ID.
    #[serde(rename = "flavorID", skip_serializing_if = "Option::is_none")]
    pub flavor_id: Option<String>,
    /// Resolved image ID.
    #[serde(rename = "imageID", skip_serializing_if = "Option::is_none")]
    pub image_id: Option<String>,
    /// Ports to create, fully resolved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub ports: Vec<ResolvedPortSpec>,
    /// Resolved server group ID.
    #[serde(rename = "serverGroupID", skip_serializing_if = "Option::is_none")]
    pub server_group_id: Option<String>,
}

/// A port to create, with network, subnets and security groups as IDs.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedPortSpec {
    /// Whether the port starts administratively up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_state_up: Option<bool>,
    /// Additional IP/MAC pairs the port may send from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub allowed_address_pairs: Vec<AddressPair>,
    /// Description stored on the port (optional in v1beta2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether port security applies to the port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_port_security: Option<bool>,
    /// Addresses to request, with subnets as IDs.
    #[serde(rename = "fixedIPs", default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub fixed_ips: Vec<ResolvedFixedIP>,
    /// Compute host to bind the port to.
    #[serde(rename = "hostID", skip_serializing_if = "Option::is_none")]
    pub host_id: Option<String>,
    /// MAC address to give the port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mac_address: Option<String>,
    /// Full Neutron name of the port.
    #[schemars(extend("minLength" = 1))]
    pub name: String,
    /// ID of the network the port is created on.
    #[serde(rename = "networkID")]
    #[schemars(extend("minLength" = 1))]
    pub network_id: String,
    /// Selected `binding:profile` capabilities.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<BindingProfile>,
    /// Whether the port mirrors the status of its physical uplink.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub propagate_uplink_status: Option<bool>,
    /// IDs of the security groups of the port.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub security_groups: Vec<String>,
    /// Tags put on the port.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub tags: Vec<String>,
    /// Whether to create a trunk with this port as parent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trunk: Option<bool>,
    /// Raw attributes merged into the port-create request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-map-keys" = ["name"]))]
    #[schemars(extend("x-kubernetes-list-type" = "map"))]
    pub value_specs: Vec<ValueSpec>,
    /// VNIC type of the port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vnic_type: Option<String>,
}

/// OpenStack resources created for a server so far, kept so deletion finds them all.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct MachineResources {
    /// Ports created for the server, in spec order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub ports: Vec<PortStatus>,
}

/// A Neutron port created for a server.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct PortStatus {
    /// Port UUID.
    #[schemars(extend("minLength" = 1))]
    pub id: String,
}
