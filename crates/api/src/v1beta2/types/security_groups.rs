//! Managed security groups of a v1beta2 cluster.

use crate::v1beta1::{EtherType, ManagedSecurityGroupName, RuleDirection};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Security groups the provider creates for the cluster and keeps in line with the spec.
///
/// v1beta1's `allNodesSecurityGroupRules` is `clusterNodesSecurityGroupRules` here, and
/// `allowAllInClusterTraffic` is optional (the API server defaults it to false).
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ManagedSecurityGroups {
    /// Open all traffic between cluster nodes instead of the minimal Kubernetes rule set.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub allow_all_in_cluster_traffic: Option<bool>,
    /// Extra rules for both the control-plane and the worker group (not the bastion).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-map-keys" = ["name"]))]
    #[schemars(extend("x-kubernetes-list-type" = "map"))]
    pub cluster_nodes_security_group_rules: Vec<SecurityGroupRuleSpec>,
    /// Extra rules for the control-plane group only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-map-keys" = ["name"]))]
    #[schemars(extend("x-kubernetes-list-type" = "map"))]
    pub control_plane_nodes_security_group_rules: Vec<SecurityGroupRuleSpec>,
    /// Extra rules for the worker group only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-map-keys" = ["name"]))]
    #[schemars(extend("x-kubernetes-list-type" = "map"))]
    pub worker_nodes_security_group_rules: Vec<SecurityGroupRuleSpec>,
}

impl ManagedSecurityGroups {
    /// `allowAllInClusterTraffic`, applying the API server's default (false).
    pub fn allow_all_in_cluster_traffic(&self) -> bool {
        self.allow_all_in_cluster_traffic.unwrap_or(false)
    }
}

/// An extra rule of a managed security group.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SecurityGroupRuleSpec {
    /// Free-text description stored on the rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the rule matches incoming or outgoing traffic.
    pub direction: RuleDirection,
    /// Address family matched; both when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ether_type: Option<EtherType>,
    /// Identifier of the rule, unique within its list.
    #[schemars(extend("minLength" = 1))]
    pub name: String,
    /// Upper end of the port range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port_range_max: Option<i32>,
    /// Lower end of the port range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port_range_min: Option<i32>,
    /// IP protocol (tcp, udp, icmp, a number, ...); every protocol when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Security group whose members are the remote side.
    #[serde(rename = "remoteGroupID", skip_serializing_if = "Option::is_none")]
    pub remote_group_id: Option<String>,
    /// CIDR of the remote side.
    #[serde(rename = "remoteIPPrefix", skip_serializing_if = "Option::is_none")]
    pub remote_ip_prefix: Option<String>,
    /// Managed groups whose members are the remote side.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub remote_managed_groups: Vec<ManagedSecurityGroupName>,
}
