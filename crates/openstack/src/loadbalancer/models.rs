//! Octavia models.

use serde::{Deserialize, Serialize};

/// A load balancer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[allow(missing_docs)]
pub struct LoadBalancer {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    /// ACTIVE, PENDING_CREATE, PENDING_UPDATE, PENDING_DELETE, ERROR.
    #[serde(default)]
    pub provisioning_status: String,
    #[serde(default)]
    pub operating_status: String,
    #[serde(default)]
    pub vip_address: Option<String>,
    #[serde(default)]
    pub vip_port_id: Option<String>,
    #[serde(default)]
    pub vip_subnet_id: Option<String>,
    #[serde(default)]
    pub vip_network_id: Option<String>,
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub flavor_id: Option<String>,
    #[serde(default)]
    pub availability_zone: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
}

/// Create a load balancer.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[allow(missing_docs)]
pub struct LoadBalancerCreate {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vip_subnet_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vip_network_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vip_address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flavor_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub availability_zone: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Listeners created with the load balancer (Octavia's fully populated create).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub listeners: Vec<ListenerBody>,
}

/// Create a listener on a load balancer.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[allow(missing_docs)]
pub struct ListenerCreate {
    #[serde(flatten)]
    pub listener: ListenerBody,
    pub loadbalancer_id: String,
}

/// A listener's fields, created alone ([`ListenerCreate`]) or inside a fully populated load
/// balancer create (with its default pool).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[allow(missing_docs)]
pub struct ListenerBody {
    pub name: String,
    pub protocol: String,
    pub protocol_port: u16,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_cidrs: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_pool: Option<PoolBody>,
}

/// Create a pool as a listener's default pool.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[allow(missing_docs)]
pub struct PoolCreate {
    #[serde(flatten)]
    pub pool: PoolBody,
    pub listener_id: String,
}

/// A pool's fields, created alone ([`PoolCreate`]) or as a listener's `default_pool` inside a
/// fully populated load balancer create (with its health monitor).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[allow(missing_docs)]
pub struct PoolBody {
    pub name: String,
    pub protocol: String,
    /// ROUND_ROBIN, or SOURCE_IP_PORT for the ovn provider.
    pub lb_algorithm: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub healthmonitor: Option<HealthMonitorBody>,
}

/// Create a health monitor on a pool.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[allow(missing_docs)]
pub struct HealthMonitorCreate {
    #[serde(flatten)]
    pub monitor: HealthMonitorBody,
    pub pool_id: String,
}

/// A health monitor's fields, created alone ([`HealthMonitorCreate`]) or as a pool's
/// `healthmonitor` inside a fully populated load balancer create.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[allow(missing_docs)]
pub struct HealthMonitorBody {
    pub name: String,
    #[serde(rename = "type")]
    pub monitor_type: String,
    pub delay: u32,
    pub timeout: u32,
    pub max_retries: u32,
    pub max_retries_down: u32,
}

/// A listener.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[allow(missing_docs)]
pub struct Listener {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub protocol: String,
    #[serde(default)]
    pub protocol_port: u16,
    #[serde(default)]
    pub provisioning_status: String,
    #[serde(default)]
    pub allowed_cidrs: Option<Vec<String>>,
    #[serde(default)]
    pub default_pool_id: Option<String>,
}

/// A pool.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[allow(missing_docs)]
pub struct Pool {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub lb_algorithm: String,
    #[serde(default)]
    pub protocol: String,
    #[serde(default)]
    pub provisioning_status: String,
    #[serde(default)]
    pub healthmonitor_id: Option<String>,
}

/// A pool member.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[allow(missing_docs)]
pub struct Member {
    pub id: String,
    #[serde(default)]
    pub name: String,
    pub address: String,
    pub protocol_port: u16,
    #[serde(default)]
    pub provisioning_status: String,
    #[serde(default)]
    pub operating_status: String,
}

/// Add a member.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[allow(missing_docs)]
pub struct MemberCreate {
    pub name: String,
    pub address: String,
    pub protocol_port: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnet_id: Option<String>,
}

/// A health monitor.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[allow(missing_docs)]
pub struct HealthMonitor {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(rename = "type", default)]
    pub monitor_type: String,
    #[serde(default)]
    pub delay: u32,
    #[serde(default)]
    pub timeout: u32,
    #[serde(default)]
    pub max_retries: u32,
    #[serde(default)]
    pub max_retries_down: u32,
    #[serde(default)]
    pub provisioning_status: String,
}

/// An Octavia provider.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[allow(missing_docs)]
pub struct Provider {
    pub name: String,
    #[serde(default)]
    pub description: String,
}

/// An Octavia flavor.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[allow(missing_docs)]
pub struct LbFlavor {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub enabled: bool,
}

/// An Octavia availability zone.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[allow(missing_docs)]
pub struct LbAvailabilityZone {
    pub name: String,
    #[serde(default)]
    pub enabled: bool,
}
