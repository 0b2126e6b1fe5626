//! Neutron models: `*Create` bodies (None fields omitted) and replies (unknown fields ignored).

use serde::{Deserialize, Serialize};

/// A fixed IP on a port or gateway.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct FixedIp {
    /// Subnet ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_id: Option<String>,
    /// Address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_address: Option<String>,
}

/// An allowed address pair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddressPair {
    /// IP or CIDR.
    pub ip_address: String,
    /// MAC (defaults to the port's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac_address: Option<String>,
}

/// A network.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[allow(missing_docs)]
pub struct Network {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub subnets: Vec<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(rename = "router:external", default)]
    pub external: bool,
    #[serde(default)]
    pub mtu: Option<u32>,
    #[serde(default)]
    pub port_security_enabled: Option<bool>,
    #[serde(default)]
    pub project_id: Option<String>,
}

/// Create a network.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[allow(missing_docs)]
pub struct NetworkCreate {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port_security_enabled: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_state_up: Option<bool>,
}

/// An allocation pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct AllocationPool {
    pub start: String,
    pub end: String,
}

/// A subnet.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[allow(missing_docs)]
pub struct Subnet {
    pub id: String,
    #[serde(default)]
    pub name: String,
    pub network_id: String,
    pub cidr: String,
    #[serde(default)]
    pub ip_version: u8,
    #[serde(default)]
    pub gateway_ip: Option<String>,
    #[serde(default)]
    pub dns_nameservers: Vec<String>,
    #[serde(default)]
    pub allocation_pools: Vec<AllocationPool>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub ipv6_address_mode: Option<String>,
    #[serde(default)]
    pub ipv6_ra_mode: Option<String>,
}

/// Create a subnet.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[allow(missing_docs)]
pub struct SubnetCreate {
    pub name: String,
    pub network_id: String,
    pub cidr: String,
    pub ip_version: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dns_nameservers: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allocation_pools: Vec<AllocationPool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway_ip: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_dhcp: Option<bool>,
}

/// A router's external gateway.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ExternalGateway {
    /// External network ID.
    pub network_id: String,
    /// Requested/assigned external IPs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub external_fixed_ips: Vec<FixedIp>,
}

/// A router.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[allow(missing_docs)]
pub struct Router {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub external_gateway_info: Option<ExternalGateway>,
    #[serde(default)]
    pub tags: Vec<String>,
}

/// Create a router.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[allow(missing_docs)]
pub struct RouterCreate {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_gateway_info: Option<ExternalGateway>,
}

/// Reply of add_router_interface.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[allow(missing_docs)]
pub struct RouterInterface {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub subnet_id: String,
    #[serde(default)]
    pub port_id: String,
}

/// A port.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[allow(missing_docs)]
pub struct Port {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub network_id: String,
    #[serde(default)]
    pub device_id: String,
    #[serde(default)]
    pub device_owner: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub mac_address: String,
    #[serde(default)]
    pub fixed_ips: Vec<FixedIp>,
    #[serde(default)]
    pub security_groups: Vec<String>,
    #[serde(default)]
    pub allowed_address_pairs: Vec<AddressPair>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub port_security_enabled: Option<bool>,
    #[serde(default)]
    pub admin_state_up: Option<bool>,
}

/// Create a port.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[allow(missing_docs)]
pub struct PortCreate {
    pub name: String,
    pub network_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fixed_ips: Vec<FixedIp>,
    /// None: Neutron's default group; Some(empty): no group (port security off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security_groups: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_address_pairs: Vec<AddressPair>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port_security_enabled: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_state_up: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mac_address: Option<String>,
    #[serde(rename = "binding:vnic_type", skip_serializing_if = "Option::is_none")]
    pub vnic_type: Option<String>,
    #[serde(rename = "binding:host_id", skip_serializing_if = "Option::is_none")]
    pub host_id: Option<String>,
    #[serde(rename = "binding:profile", skip_serializing_if = "Option::is_none")]
    pub profile: Option<serde_json::Value>,
    /// The port's own `trusted` attribute (Neutron's `port-trusted-vif` extension).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trusted: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub propagate_uplink_status: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_owner: Option<String>,
}

/// A security group rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[allow(missing_docs)]
pub struct SecurityGroupRule {
    #[serde(default, skip_serializing)]
    pub id: String,
    pub security_group_id: String,
    /// ingress / egress
    pub direction: String,
    /// IPv4 / IPv6
    pub ethertype: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_range_min: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_range_max: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_ip_prefix: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_group_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A security group.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[allow(missing_docs)]
pub struct SecurityGroup {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub security_group_rules: Vec<SecurityGroupRule>,
    #[serde(default)]
    pub tags: Vec<String>,
}

/// Create a security group.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[allow(missing_docs)]
pub struct SecurityGroupCreate {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A floating IP.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[allow(missing_docs)]
pub struct FloatingIp {
    pub id: String,
    pub floating_ip_address: String,
    pub floating_network_id: String,
    #[serde(default)]
    pub port_id: Option<String>,
    #[serde(default)]
    pub fixed_ip_address: Option<String>,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub tags: Vec<String>,
}

/// Create a floating IP.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[allow(missing_docs)]
pub struct FloatingIpCreate {
    pub floating_network_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floating_ip_address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed_ip_address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnet_id: Option<String>,
}

/// A trunk sub-port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct SubPort {
    pub port_id: String,
    pub segmentation_type: String,
    pub segmentation_id: u32,
}

/// A trunk.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[allow(missing_docs)]
pub struct Trunk {
    pub id: String,
    #[serde(default)]
    pub name: String,
    pub port_id: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub sub_ports: Vec<SubPort>,
    #[serde(default)]
    pub tags: Vec<String>,
}

/// Create a trunk.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[allow(missing_docs)]
pub struct TrunkCreate {
    pub name: String,
    pub port_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A Neutron extension.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[allow(missing_docs)]
pub struct Extension {
    pub alias: String,
    #[serde(default)]
    pub name: String,
}
