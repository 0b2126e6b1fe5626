//! Managed security groups and rules.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Security groups the provider creates and maintains for the cluster.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::require(&["allowAllInClusterTraffic"]))]
pub struct ManagedSecurityGroups {
    /// Rules added to both the control plane and the worker security groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-map-keys" = ["name"]))]
    #[schemars(extend("x-kubernetes-list-type" = "map"))]
    pub all_nodes_security_group_rules: Vec<SecurityGroupRuleSpec>,
    /// Allow all traffic between cluster nodes instead of the minimal Kubernetes rule set.
    #[serde(default)]
    pub allow_all_in_cluster_traffic: bool,
    /// Rules added only to the control plane security group.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-map-keys" = ["name"]))]
    #[schemars(extend("x-kubernetes-list-type" = "map"))]
    pub control_plane_nodes_security_group_rules: Vec<SecurityGroupRuleSpec>,
    /// Rules added only to the worker security group.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-map-keys" = ["name"]))]
    #[schemars(extend("x-kubernetes-list-type" = "map"))]
    pub worker_nodes_security_group_rules: Vec<SecurityGroupRuleSpec>,
}

/// One rule added to a managed security group.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SecurityGroupRuleSpec {
    /// Rule description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Direction of the traffic the rule matches.
    pub direction: RuleDirection,
    /// IP version the rule applies to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ether_type: Option<EtherType>,
    /// Rule name, unique per list.
    pub name: String,
    /// Highest port matched.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::drop_format)]
    pub port_range_max: Option<i32>,
    /// Lowest port matched.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::drop_format)]
    pub port_range_min: Option<i32>,
    /// IP protocol matched (tcp, udp, icmp, ...); any when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Remote security group matched by the rule.
    #[serde(rename = "remoteGroupID", skip_serializing_if = "Option::is_none")]
    pub remote_group_id: Option<String>,
    /// Remote CIDR matched by the rule.
    #[serde(rename = "remoteIPPrefix", skip_serializing_if = "Option::is_none")]
    pub remote_ip_prefix: Option<String>,
    /// Managed security groups matched as remote groups by the rule.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remote_managed_groups: Vec<ManagedSecurityGroupName>,
}

/// Traffic direction of a security group rule.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, JsonSchema, PartialEq, Eq)]
pub enum RuleDirection {
    /// Incoming traffic.
    #[serde(rename = "ingress")]
    Ingress,
    /// Outgoing traffic.
    #[serde(rename = "egress")]
    Egress,
}

/// IP version of a security group rule.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, JsonSchema, PartialEq, Eq)]
pub enum EtherType {
    /// IPv4.
    #[serde(rename = "IPv4")]
    Ipv4,
    /// IPv6.
    #[serde(rename = "IPv6")]
    Ipv6,
}

/// One of the security groups managed by the provider.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, JsonSchema, PartialEq, Eq)]
pub enum ManagedSecurityGroupName {
    /// The bastion group.
    #[serde(rename = "bastion")]
    Bastion,
    /// The control plane group.
    #[serde(rename = "controlplane")]
    Controlplane,
    /// The worker group.
    #[serde(rename = "worker")]
    Worker,
}
