//! OpenStackFloatingIPPool: floating IPs for Cluster API IPAM.

use crate::v1beta1::{Condition, NetworkParam, NetworkStatus, OpenStackIdentityReference};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of a pool of floating IPs served to Cluster API IPAM claims.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, CustomResource)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1alpha1",
    kind = "OpenStackFloatingIPPool",
    plural = "openstackfloatingippools"
)]
#[kube(namespaced, status = "OpenStackFloatingIPPoolStatus")]
#[kube(doc = "Pool of floating IPs that serves Cluster API IPAddressClaims.")]
#[kube(label("cluster.x-k8s.io/v1beta1", "v1beta1"), derive = "PartialEq")]
#[serde(rename_all = "camelCase")]
pub struct OpenStackFloatingIPPoolSpec {
    /// External network floating IPs are allocated from.
    #[serde(rename = "floatingIPNetwork", skip_serializing_if = "Option::is_none")]
    pub floating_ip_network: Option<NetworkParam>,
    /// Credentials used to manage the floating IPs.
    pub identity_ref: OpenStackIdentityReference,
    /// Upper bound of floating IPs the pool allocates; unlimited when unset.
    #[serde(rename = "maxIPs", skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::drop_format)]
    pub max_ips: Option<i32>,
    /// Existing floating IPs handed out before new ones are allocated.
    #[serde(
        rename = "preAllocatedFloatingIPs",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub pre_allocated_floating_ips: Vec<String>,
    /// What happens to floating IPs the pool allocated when they are released.
    pub reclaim_policy: ReclaimPolicy,
}

/// Observed state of a floating IP pool.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct OpenStackFloatingIPPoolStatus {
    /// Floating IPs in the pool that are free to claim.
    #[serde(
        rename = "availableIPs",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(extend("default" = []))]
    pub available_ips: Vec<String>,
    /// Floating IPs in the pool that are bound to an IPAddressClaim.
    #[serde(rename = "claimedIPs", default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("default" = []))]
    pub claimed_ips: Vec<String>,
    /// Cluster API v1beta1 conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Floating IPs the pool could not use.
    #[serde(rename = "failedIPs", default, skip_serializing_if = "Vec::is_empty")]
    pub failed_ips: Vec<String>,
    /// Resolved external network of the pool.
    #[serde(rename = "floatingIPNetwork", skip_serializing_if = "Option::is_none")]
    pub floating_ip_network: Option<NetworkStatus>,
}

/// What happens to a released floating IP.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, JsonSchema, PartialEq, Eq)]
pub enum ReclaimPolicy {
    /// Keep it allocated in the project.
    #[serde(rename = "Retain")]
    Retain,
    /// Release it back to the external network.
    #[serde(rename = "Delete")]
    Delete,
}
