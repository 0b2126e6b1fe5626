//! Neutron port options of a v1beta2 server.

use crate::v1beta1::{BindingProfile, NetworkParam};
use crate::v1beta2::SubnetParam;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Settings of one Neutron port the provider creates for a server.
///
/// v1beta1's `disablePortSecurity` becomes `enablePortSecurity` with the opposite meaning.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct PortOpts {
    /// Whether the port starts administratively up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_state_up: Option<bool>,
    /// Additional IP/MAC pairs the port may send from (a keepalived VIP, for instance).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub allowed_address_pairs: Vec<AddressPair>,
    /// Free-text description stored on the port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether Neutron port security applies to the port; false turns it off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_port_security: Option<bool>,
    /// Addresses to request, each by subnet, by address, or both.
    #[serde(rename = "fixedIPs", default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub fixed_ips: Vec<FixedIP>,
    /// Compute host to bind the port to (requires admin rights).
    #[serde(rename = "hostID", skip_serializing_if = "Option::is_none")]
    pub host_id: Option<String>,
    /// MAC address to give the port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mac_address: Option<String>,
    /// Suffix appended to the server name to name the port; the port's index when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name_suffix: Option<String>,
    /// Network to attach to; the cluster network when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkParam>,
    /// Selected `binding:profile` capabilities.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<BindingProfile>,
    /// Whether the port mirrors the status of its physical uplink.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub propagate_uplink_status: Option<bool>,
    /// Security groups of this port, replacing the machine-wide list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub security_groups: Vec<NetworkParam>,
    /// Tags put on the port in addition to the machine's tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub tags: Vec<String>,
    /// Whether to create a Neutron trunk with this port as parent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trunk: Option<bool>,
    /// Raw attributes merged into the port-create request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-map-keys" = ["name"]))]
    #[schemars(extend("x-kubernetes-list-type" = "map"))]
    pub value_specs: Vec<ValueSpec>,
    /// VNIC type (normal, direct, macvtap, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vnic_type: Option<String>,
}

/// An additional IP (and optionally MAC) a port is allowed to use.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct AddressPair {
    /// IP address or CIDR; must not be empty.
    #[schemars(extend("minLength" = 1))]
    pub ip_address: String,
    /// MAC address that goes with it; the port's own MAC when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mac_address: Option<String>,
}

/// Address requested on a port: a subnet, an explicit IP, or both.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct FixedIP {
    /// Explicit address; Neutron picks one from the subnet when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_address: Option<String>,
    /// Subnet the address belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnet: Option<SubnetParam>,
}

/// A raw key/value added to the Neutron port-create request.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ValueSpec {
    /// Attribute name in the request body.
    #[schemars(extend("minLength" = 1))]
    pub key: String,
    /// Identifier of this entry, used as the merge key of the list.
    #[schemars(extend("minLength" = 1))]
    pub name: String,
    /// Attribute value, as raw JSON text.
    #[schemars(extend("minLength" = 1))]
    pub value: String,
}
