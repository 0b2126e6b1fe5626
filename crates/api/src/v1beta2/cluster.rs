//! OpenStackCluster v1beta2: spec and status.

use crate::extensions::{OpenStackClusterExtensions, OpenStackClusterStatusExtensions};
use crate::v1beta2::{
    APIEndpoint, APIServer, Bastion, BastionStatus, Condition, FailureDomain, Initialization,
    LoadBalancer, ManagedNetwork, ManagedRouter, ManagedSecurityGroups, NetworkParam,
    NetworkStatus, NetworkStatusWithSubnets, OpenStackIdentityReference, Router,
    SecurityGroupStatus, SubnetParam, SubnetSpec,
};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired infrastructure of one workload cluster: network, router, security groups, API
/// endpoint and bastion.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default, CustomResource)]
// Each `printcolumn(...)` repeats the same keys, which this lint mistakes for duplicates.
#[allow(clippy::duplicated_attributes)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta2",
    kind = "OpenStackCluster",
    plural = "openstackclusters"
)]
#[kube(
    namespaced,
    status = "OpenStackClusterStatus",
    shortname = "osc",
    category = "cluster-api"
)]
#[kube(doc = "OpenStack infrastructure of one Cluster API workload cluster (v1beta2).")]
#[kube(label("cluster.x-k8s.io/v1beta2", "v1beta2"), derive = "PartialEq")]
#[kube(printcolumn(
    name = "Cluster",
    type_ = "string",
    json_path = r".metadata.labels.cluster\.x-k8s\.io/cluster-name",
    description = "Owning Cluster API Cluster"
))]
#[kube(printcolumn(
    name = "Network",
    type_ = "string",
    json_path = ".status.network.id",
    description = "Cluster network ID"
))]
#[kube(printcolumn(
    name = "Endpoint",
    type_ = "string",
    json_path = ".spec.controlPlaneEndpoint.host",
    priority = 1,
    description = "Kubernetes API host"
))]
#[kube(printcolumn(
    name = "Bastion IP",
    type_ = "string",
    json_path = ".status.bastion.floatingIP",
    description = "Bastion floating IP"
))]
#[kube(printcolumn(
    name = "Age",
    type_ = "date",
    json_path = ".metadata.creationTimestamp",
    description = "Time since creation"
))]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "bastion floating IP cannot be set when enableExternalNetwork is false", "rule": "has(self.enableExternalNetwork) && !self.enableExternalNetwork ? !has(self.bastion) || !has(self.bastion.floatingIP) : true"}, {"message": "apiServer.enableFloatingIP cannot be true when enableExternalNetwork is false", "rule": "has(self.enableExternalNetwork) && !self.enableExternalNetwork ? has(self.apiServer) && has(self.apiServer.enableFloatingIP) && !self.apiServer.enableFloatingIP : true"}]))]
pub struct OpenStackClusterSpec {
    /// How the Kubernetes API is exposed: addresses, port and load balancer.
    #[serde(rename = "apiServer", skip_serializing_if = "Option::is_none")]
    pub api_server: Option<APIServer>,
    /// Optional SSH jump host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bastion: Option<Bastion>,
    /// Availability zones control-plane machines may be spread over.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub control_plane_availability_zones: Vec<String>,
    /// Where the Kubernetes API is reached; filled in by the provider when left empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_plane_endpoint: Option<APIEndpoint>,
    /// Let Nova choose the zone of control-plane machines instead of pinning one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_plane_omit_availability_zone: Option<bool>,
    /// Whether the cluster uses an external network at all; true when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_external_network: Option<bool>,
    /// External network for the router gateway and floating IPs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_network: Option<NetworkParam>,
    /// Credentials for every OpenStack call made for this cluster.
    pub identity_ref: OpenStackIdentityReference,
    /// Settings of the network the provider creates when `network` is unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed_network: Option<ManagedNetwork>,
    /// Settings of the router the provider creates when `router` is unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed_router: Option<ManagedRouter>,
    /// Security groups the provider creates and maintains.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed_security_groups: Option<ManagedSecurityGroups>,
    /// Subnet to create in the managed network.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("maxItems" = 1))]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub managed_subnets: Vec<SubnetSpec>,
    /// Existing network to use instead of creating one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkParam>,
    /// Subnet whose addresses identify the machines, when the network has several.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary_subnet: Option<SubnetParam>,
    /// Existing router to use instead of creating one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub router: Option<NetworkParam>,
    /// Existing subnets of `network` to use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub subnets: Vec<SubnetParam>,
    /// Tags put on every Neutron resource the provider creates for the cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub tags: Vec<String>,
    /// BA/ACP extensions (not part of upstream CAPO); absent means upstream behaviour.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<OpenStackClusterExtensions>,
}

/// Observed infrastructure of the cluster, written by the provider.
///
/// v1beta2 has no `ready`, `failureReason` or `failureMessage`: readiness is the `Ready`
/// condition and `initialization.provisioned`.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct OpenStackClusterStatus {
    /// The API load balancer, once created (v1beta1: `apiServerLoadBalancer`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_server_managed_load_balancer: Option<LoadBalancer>,
    /// The bastion server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bastion: Option<BastionStatus>,
    /// Managed security group of the bastion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bastion_security_group: Option<SecurityGroupStatus>,
    /// Standard Kubernetes conditions, one per type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::v1beta2::conditions_schema")]
    pub conditions: Vec<Condition>,
    /// Managed security group of the control-plane machines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_plane_security_group: Option<SecurityGroupStatus>,
    /// The external network in use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_network: Option<NetworkStatus>,
    /// Availability zones machines may use, sorted by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-map-keys" = ["name"]))]
    #[schemars(extend("x-kubernetes-list-type" = "map"))]
    pub failure_domains: Vec<FailureDomain>,
    /// Cluster API v1beta2 contract milestones (`provisioned`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initialization: Option<Initialization>,
    /// The cluster network and its subnets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkStatusWithSubnets>,
    /// The cluster router.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub router: Option<Router>,
    /// Managed security group of the worker machines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker_security_group: Option<SecurityGroupStatus>,
    /// Values the provider derived for BA/ACP (not part of upstream CAPO).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<OpenStackClusterStatusExtensions>,
}

impl OpenStackClusterSpec {
    /// Port of the Kubernetes API: `apiServer.port`, else 6443.
    pub fn api_server_port(&self) -> i32 {
        self.api_server.as_ref().map_or(
            i32::from(crate::v1beta1::DEFAULT_API_SERVER_PORT),
            APIServer::port,
        )
    }

    /// True when the API endpoint gets a floating IP: both `apiServer.enableFloatingIP` and
    /// `enableExternalNetwork` default to true.
    pub fn wants_api_floating_ip(&self) -> bool {
        self.enable_external_network != Some(false)
            && self
                .api_server
                .as_ref()
                .is_none_or(APIServer::floating_ip_enabled)
    }

    /// True when a managed API load balancer is configured and enabled.
    pub fn api_load_balancer_enabled(&self) -> bool {
        self.api_server
            .as_ref()
            .is_some_and(APIServer::load_balancer_enabled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v1beta2::{APIServerLoadBalancer, IdentityRefType};

    #[test]
    fn spec_defaults_follow_positive_polarity() {
        let mut spec = OpenStackClusterSpec::default();
        assert_eq!(spec.api_server_port(), 6443);
        assert!(spec.wants_api_floating_ip());
        assert!(!spec.api_load_balancer_enabled());
        spec.api_server = Some(APIServer {
            port: Some(8443),
            managed_load_balancer: Some(APIServerLoadBalancer::default()),
            ..Default::default()
        });
        assert_eq!(spec.api_server_port(), 8443);
        assert!(spec.api_load_balancer_enabled(), "enabled defaults to true");
        spec.enable_external_network = Some(false);
        assert!(!spec.wants_api_floating_ip());
        spec.enable_external_network = None;
        if let Some(api) = spec.api_server.as_mut() {
            api.enable_floating_ip = Some(false);
        }
        assert!(!spec.wants_api_floating_ip());
    }

    #[test]
    fn optional_fields_read_with_their_schema_defaults() {
        let spec: OpenStackClusterSpec = serde_json::from_value(serde_json::json!({
            "identityRef": {"cloudName": "c", "name": "n"},
            "managedSecurityGroups": {}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(spec.identity_ref.ref_type(), IdentityRefType::Secret);
        let groups = spec.managed_security_groups.unwrap_or_default();
        assert!(!groups.allow_all_in_cluster_traffic());
        let round = serde_json::to_value(&spec.identity_ref).unwrap_or_default();
        assert_eq!(round, serde_json::json!({"cloudName": "c", "name": "n"}));
    }
}
