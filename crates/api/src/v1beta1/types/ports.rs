//! Neutron port options.

use crate::v1beta1::{NetworkParam, SubnetParam};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Options of one Neutron port created for a server.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct PortOpts {
    /// Administrative state of the port (up when true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_state_up: Option<bool>,
    /// Extra addresses the port may use (for example a keepalived VIP).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_address_pairs: Vec<AddressPair>,
    /// Description set on the Neutron port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Disable port security on the port(s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disable_port_security: Option<bool>,
    /// Fixed IPs requested on the port.
    #[serde(rename = "fixedIPs", default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub fixed_ips: Vec<FixedIP>,
    /// Compute host the port is bound to (admin only).
    #[serde(rename = "hostID", skip_serializing_if = "Option::is_none")]
    pub host_id: Option<String>,
    /// MAC address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mac_address: Option<String>,
    /// Suffix of the port name; the port index when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name_suffix: Option<String>,
    /// Network of the port; the cluster network when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkParam>,
    /// binding:profile settings of the port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<BindingProfile>,
    /// Propagate the uplink status to the port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub propagate_uplink_status: Option<bool>,
    /// Security groups applied to the port(s).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub security_groups: Vec<NetworkParam>,
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

/// Extra IP (and optionally MAC) address a port may send traffic from.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct AddressPair {
    /// Allowed IP address or CIDR.
    pub ip_address: String,
    /// MAC address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mac_address: Option<String>,
}

/// Requested fixed IP of a port: a subnet, an address, or both.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct FixedIP {
    /// Fixed IP address to request; any address of the subnet when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_address: Option<String>,
    /// Subnet the address is taken from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnet: Option<SubnetParam>,
}

/// Selected binding:profile capabilities of a port.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct BindingProfile {
    /// Request Open vSwitch hardware offload.
    #[serde(rename = "ovsHWOffload", skip_serializing_if = "Option::is_none")]
    pub ovs_hw_offload: Option<bool>,
    /// Mark the SR-IOV virtual function as trusted.
    #[serde(rename = "trustedVF", skip_serializing_if = "Option::is_none")]
    pub trusted_vf: Option<bool>,
}

/// Raw key/value added to the Neutron port create request.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ValueSpec {
    /// Key in the port create request.
    pub key: String,
    /// Name of this entry, used for merging.
    pub name: String,
    /// Raw JSON value in the port create request.
    pub value: String,
}
