//! API server load balancer options.

use crate::v1beta1::{NetworkParam, SubnetParam};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Octavia load balancer placed in front of the Kubernetes API servers.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::require(&["enabled"]))]
pub struct APIServerLoadBalancer {
    /// Extra TCP ports the load balancer forwards to the control plane.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("items" = {"type": "integer"}))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub additional_ports: Vec<i32>,
    /// Source CIDRs allowed to reach the load balancer; empty allows all.
    #[serde(
        rename = "allowedCIDRs",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub allowed_cidrs: Vec<String>,
    /// Octavia availability zone of the load balancer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub availability_zone: Option<String>,
    /// Create the load balancer.
    #[serde(default = "crate::schema::default_true")]
    pub enabled: bool,
    /// Octavia flavor name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flavor: Option<String>,
    /// Health monitor settings of the load balancer pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub monitor: Option<APIServerLoadBalancerMonitor>,
    /// Network of the load balancer VIP; the cluster network when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkParam>,
    /// Octavia provider driver.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Subnets of the VIP (one per IP family).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub subnets: Vec<SubnetParam>,
}

/// Health-monitor timings of the API server load balancer pool.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct APIServerLoadBalancerMonitor {
    /// Seconds between health checks.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::drop_format)]
    #[schemars(extend("minimum" = 0))]
    pub delay: Option<i32>,
    /// Successful checks needed to mark a member healthy.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::drop_format)]
    #[schemars(extend("maximum" = 10))]
    #[schemars(extend("minimum" = 0))]
    pub max_retries: Option<i32>,
    /// Failed checks needed to mark a member unhealthy.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::drop_format)]
    #[schemars(extend("maximum" = 10))]
    #[schemars(extend("minimum" = 1))]
    pub max_retries_down: Option<i32>,
    /// Seconds a health check may take.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::drop_format)]
    #[schemars(extend("minimum" = 0))]
    pub timeout: Option<i32>,
}
