//! OpenStackFloatingIPPool: floating IPs for Cluster API IPAM.
//!
//! As upstream CAPO main (v0.15), made of v1beta2's shared types with standard conditions;
//! pools written by upstream v0.14 or capo 0.1 still read (see [`super::OpenStackServer`]).

use crate::v1beta2::{Condition, NetworkParam, NetworkStatus, OpenStackIdentityReference};
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
    /// Standard Kubernetes conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::v1beta2::plain_conditions_schema")]
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pool_stored_by_v0_14_reads() {
        let pool: OpenStackFloatingIPPool = serde_json::from_value(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1",
            "kind": "OpenStackFloatingIPPool",
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {
                "identityRef": {"type": "Secret", "name": "c", "cloudName": "o"},
                "reclaimPolicy": "Retain"
            },
            "status": {
                "conditions": [
                    {"type": "Ready", "status": "True",
                     "lastTransitionTime": "2024-01-02T03:04:05Z"},
                    {"type": "OpenstackFloatingIPPoolReadyCondition", "status": "False",
                     "severity": "Warning", "reason": "MaxIPsReached",
                     "lastTransitionTime": "2024-01-02T03:04:05Z"}
                ],
                "floatingIPNetwork": {"id": "n", "name": "public"}
            }
        }))
        .unwrap_or_else(|e| panic!("a v0.14 pool must read: {e}"));
        let status = pool.status.unwrap_or_default();
        assert_eq!(status.conditions.len(), 2);
        assert_eq!(status.conditions[0].reason, "");
        assert_eq!(status.conditions[1].reason, "MaxIPsReached");
        assert_eq!(status.conditions[1].message, "");
        assert_eq!(
            pool.spec.identity_ref.ref_type(),
            crate::v1beta1::IdentityRefType::Secret
        );
    }
}
