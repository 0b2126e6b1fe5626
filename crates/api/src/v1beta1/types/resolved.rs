//! Resolved machine specs and created resources.

use crate::v1beta1::{AddressPair, BindingProfile, ValueSpec};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Machine spec with every reference resolved to an OpenStack ID.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedMachineSpec {
    /// Flavor ID; takes precedence over the flavor name.
    #[serde(rename = "flavorID", skip_serializing_if = "Option::is_none")]
    pub flavor_id: Option<String>,
    /// Resolved Glance image ID.
    #[serde(rename = "imageID", skip_serializing_if = "Option::is_none")]
    pub image_id: Option<String>,
    /// Ports of the server; one port on the cluster network when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<ResolvedPortSpec>,
    /// Resolved server group ID.
    #[serde(rename = "serverGroupID", skip_serializing_if = "Option::is_none")]
    pub server_group_id: Option<String>,
}

/// Port options with every reference resolved to an OpenStack ID.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedPortSpec {
    /// Administrative state of the port (up when true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_state_up: Option<bool>,
    /// Extra addresses the port may use (for example a keepalived VIP).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_address_pairs: Vec<AddressPair>,
    /// Description set on the Neutron port.
    pub description: String,
    /// Disable port security on the port(s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disable_port_security: Option<bool>,
    /// Fixed IPs requested on the port.
    #[serde(rename = "fixedIPs", default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub fixed_ips: Vec<ResolvedFixedIP>,
    /// Compute host the port is bound to (admin only).
    #[serde(rename = "hostID", skip_serializing_if = "Option::is_none")]
    pub host_id: Option<String>,
    /// MAC address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mac_address: Option<String>,
    /// Neutron port name.
    pub name: String,
    /// Resolved network ID.
    #[serde(rename = "networkID")]
    pub network_id: String,
    /// binding:profile settings of the port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<BindingProfile>,
    /// Propagate the uplink status to the port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub propagate_uplink_status: Option<bool>,
    /// Security groups applied to the port(s).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub security_groups: Vec<String>,
    /// Neutron/Nova tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub tags: Vec<String>,
    /// Create a Neutron trunk for the port(s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trunk: Option<bool>,
    /// Raw extra fields for the Neutron port create request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-map-keys" = ["name"]))]
    #[schemars(extend("x-kubernetes-list-type" = "map"))]
    pub value_specs: Vec<ValueSpec>,
    /// VNIC type of the port (normal, direct, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vnic_type: Option<String>,
}

/// Fixed IP request with the subnet resolved to its ID.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedFixedIP {
    /// Fixed IP address to request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_address: Option<String>,
    /// Resolved subnet ID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnet: Option<String>,
}

/// OpenStack resources created for a server, recorded for clean deletion.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct MachineResources {
    /// Ports of the server; one port on the cluster network when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<PortStatus>,
}

/// A port created for a server.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct PortStatus {
    /// OpenStack ID (UUID); set instead of filter.
    pub id: String,
}
