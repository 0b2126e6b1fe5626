//! Kubernetes API endpoint settings of a v1beta2 cluster (`spec.apiServer`).

use crate::v1beta1::NetworkParam;
use crate::v1beta2::SubnetParam;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How the Kubernetes API of the workload cluster is exposed.
///
/// Gathers v1beta1's `apiServerFixedIP`, `apiServerFloatingIP`, `apiServerPort`,
/// `apiServerLoadBalancer` and `disableAPIServerFloatingIP` (the last one inverted into
/// `enableFloatingIP`).
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct APIServer {
    /// Whether the API endpoint gets a floating IP; true when unset.
    #[serde(rename = "enableFloatingIP", skip_serializing_if = "Option::is_none")]
    pub enable_floating_ip: Option<bool>,
    /// Fixed IP of the load balancer VIP, or of the endpoint when there is no load balancer.
    #[serde(rename = "fixedIP", skip_serializing_if = "Option::is_none")]
    pub fixed_ip: Option<String>,
    /// Existing floating IP to use for the endpoint; one is allocated when unset.
    #[serde(rename = "floatingIP", skip_serializing_if = "Option::is_none")]
    pub floating_ip: Option<String>,
    /// Octavia load balancer the provider creates in front of the control plane.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed_load_balancer: Option<APIServerLoadBalancer>,
    /// TCP port of the API; 6443 when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::drop_format)]
    #[schemars(extend("maximum" = 65535))]
    #[schemars(extend("minimum" = 0))]
    pub port: Option<i32>,
}

impl APIServer {
    /// `port`, else [`crate::v1beta1::DEFAULT_API_SERVER_PORT`].
    pub fn port(&self) -> i32 {
        self.port
            .unwrap_or(i32::from(crate::v1beta1::DEFAULT_API_SERVER_PORT))
    }

    /// `enableFloatingIP`, applying its default (true).
    pub fn floating_ip_enabled(&self) -> bool {
        self.enable_floating_ip.unwrap_or(true)
    }

    /// True when a managed load balancer is configured and enabled (enabled defaults to true).
    pub fn load_balancer_enabled(&self) -> bool {
        self.managed_load_balancer
            .as_ref()
            .is_some_and(APIServerLoadBalancer::is_enabled)
    }
}

/// Octavia load balancer in front of the control-plane machines.
///
/// Unlike v1beta1, `enabled` is optional (the API server defaults it to true).
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct APIServerLoadBalancer {
    /// TCP ports forwarded to the control plane besides the API port.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub additional_ports: Vec<i32>,
    /// Client CIDRs admitted by the listeners; no restriction when empty.
    #[serde(
        rename = "allowedCIDRs",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub allowed_cidrs: Vec<String>,
    /// Octavia availability zone to place the load balancer in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub availability_zone: Option<String>,
    /// Whether the load balancer exists; true when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub enabled: Option<bool>,
    /// Octavia flavor name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flavor: Option<String>,
    /// Health-monitor timings of the pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub monitor: Option<APIServerLoadBalancerMonitor>,
    /// Network of the VIP; the cluster network when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkParam>,
    /// Octavia provider driver (amphora, ovn, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Subnets of the VIP, at most one per address family.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub subnets: Vec<SubnetParam>,
}

impl APIServerLoadBalancer {
    /// `enabled`, applying its default (true).
    pub fn is_enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }
}

/// Health-monitor timings of the API load balancer pool.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct APIServerLoadBalancerMonitor {
    /// Seconds between two probes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 0))]
    pub delay: Option<i32>,
    /// Consecutive successful probes before a member counts as healthy.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maximum" = 10))]
    #[schemars(extend("minimum" = 0))]
    pub max_retries: Option<i32>,
    /// Consecutive failed probes before a member counts as unhealthy.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maximum" = 10))]
    #[schemars(extend("minimum" = 1))]
    pub max_retries_down: Option<i32>,
    /// Seconds a probe may take.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 0))]
    pub timeout: Option<i32>,
}
