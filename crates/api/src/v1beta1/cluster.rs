//! OpenStackCluster: spec and status.

use crate::extensions::{OpenStackClusterExtensions, OpenStackClusterStatusExtensions};
use crate::v1beta1::{
    APIEndpoint, APIServerLoadBalancer, Bastion, BastionStatus, Condition, ExternalRouterIPParam,
    FailureDomainSpec, Initialization, LoadBalancer, ManagedSecurityGroups, NetworkParam,
    NetworkStatus, NetworkStatusWithSubnets, OpenStackIdentityReference, Router,
    SecurityGroupStatus, SubnetParam, SubnetSpec,
};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Desired state of an OpenStackCluster: the network, router, security groups, API endpoint and bastion of one workload cluster.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default, CustomResource)]
// Each `printcolumn(...)` repeats the same keys, which this lint mistakes for duplicates.
#[allow(clippy::duplicated_attributes)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta1",
    kind = "OpenStackCluster",
    plural = "openstackclusters"
)]
#[kube(
    namespaced,
    status = "OpenStackClusterStatus",
    shortname = "osc",
    category = "cluster-api"
)]
#[kube(doc = "Infrastructure of one Cluster API workload cluster on OpenStack.")]
#[kube(label("cluster.x-k8s.io/v1beta1", "v1beta1"), derive = "PartialEq")]
#[kube(printcolumn(
    name = "Cluster",
    type_ = "string",
    json_path = r".metadata.labels.cluster\.x-k8s\.io/cluster-name",
    description = "Owning Cluster API Cluster"
))]
#[kube(printcolumn(
    name = "Ready",
    type_ = "string",
    json_path = ".status.ready",
    description = "Infrastructure ready for servers"
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
#[schemars(extend("x-kubernetes-validations" = [{"message": "bastion floating IP cannot be set when disableExternalNetwork is true", "rule": "has(self.disableExternalNetwork) && self.disableExternalNetwork ? !has(self.bastion) || !has(self.bastion.floatingIP) : true"}, {"message": "disableAPIServerFloatingIP cannot be false when disableExternalNetwork is true", "rule": "has(self.disableExternalNetwork) && self.disableExternalNetwork ? has(self.disableAPIServerFloatingIP) && self.disableAPIServerFloatingIP : true"}]))]
pub struct OpenStackClusterSpec {
    /// Fixed IP for the API server load balancer VIP, or the API address when there is no load balancer.
    #[serde(rename = "apiServerFixedIP", skip_serializing_if = "Option::is_none")]
    pub api_server_fixed_ip: Option<String>,
    /// Floating IP to use for the API endpoint; allocated when unset.
    #[serde(
        rename = "apiServerFloatingIP",
        skip_serializing_if = "Option::is_none"
    )]
    pub api_server_floating_ip: Option<String>,
    /// Octavia load balancer in front of the API servers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_server_load_balancer: Option<APIServerLoadBalancer>,
    /// Port of the Kubernetes API; 6443 when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::drop_format)]
    #[schemars(extend("maximum" = 65535))]
    #[schemars(extend("minimum" = 0))]
    pub api_server_port: Option<i32>,
    /// Bastion host settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bastion: Option<Bastion>,
    /// Availability zones offered to control plane machines.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub control_plane_availability_zones: Vec<String>,
    /// Endpoint of the Kubernetes API; set by the provider when empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_plane_endpoint: Option<APIEndpoint>,
    /// Do not pin control plane machines to an availability zone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_plane_omit_availability_zone: Option<bool>,
    /// Do not attach a floating IP to the API endpoint.
    #[serde(
        rename = "disableAPIServerFloatingIP",
        skip_serializing_if = "Option::is_none"
    )]
    pub disable_api_server_floating_ip: Option<bool>,
    /// Run the cluster without any external network.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disable_external_network: Option<bool>,
    /// Disable port security on the cluster network.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disable_port_security: Option<bool>,
    /// External network the router and floating IPs use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_network: Option<NetworkParam>,
    /// Fixed IPs of the router on the external network.
    #[serde(
        rename = "externalRouterIPs",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub external_router_ips: Vec<ExternalRouterIPParam>,
    /// Credentials used for every OpenStack call of this object.
    pub identity_ref: OpenStackIdentityReference,
    /// Let the provider create and maintain security groups for the cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed_security_groups: Option<ManagedSecurityGroups>,
    /// Subnets to create when the provider creates the cluster network.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("maxItems" = 1))]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub managed_subnets: Vec<SubnetSpec>,
    /// Existing network to use; the provider creates one when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkParam>,
    /// Which of the cluster's subnets carries the API load balancer's VIP (or the keepalived
    /// VIP) and the addresses registered as its members; needed when `subnets` holds several
    /// subnets of one IP version. Unset: the first of the resolved subnets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary_subnet: Option<SubnetParam>,
    /// MTU of the cluster network when the provider creates it.
    #[serde(rename = "networkMTU", skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::drop_format)]
    pub network_mtu: Option<i32>,
    /// Router to use instead of creating one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub router: Option<NetworkParam>,
    /// Existing subnets of the network to use (all of the network's when empty). Several of
    /// one IP version need `primarySubnet`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub subnets: Vec<SubnetParam>,
    /// Tags added to every Neutron resource the provider creates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub tags: Vec<String>,
    /// BA/ACP extensions (not part of upstream CAPO); absent means upstream behaviour.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<OpenStackClusterExtensions>,
}

/// Observed state of an OpenStackCluster, written by the provider.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::require(&["ready"]))]
pub struct OpenStackClusterStatus {
    /// API server load balancer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_server_load_balancer: Option<LoadBalancer>,
    /// Bastion server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bastion: Option<BastionStatus>,
    /// Managed security group of the bastion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bastion_security_group: Option<SecurityGroupStatus>,
    /// Cluster API v1beta1 conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Managed security group of the control plane nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_plane_security_group: Option<SecurityGroupStatus>,
    /// External network the router and floating IPs use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_network: Option<NetworkStatus>,
    /// Availability zones usable by machines, keyed by zone name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failure_domains: BTreeMap<String, FailureDomainSpec>,
    /// Human-readable terminal error (Cluster API v1beta1 contract).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
    /// Machine-readable terminal error (Cluster API v1beta1 contract).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// Initialization milestones (Cluster API v1beta2 contract).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initialization: Option<Initialization>,
    /// Cluster network and its subnets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkStatusWithSubnets>,
    /// Infrastructure is ready (Cluster API v1beta1 contract).
    #[serde(default)]
    pub ready: bool,
    /// Cluster router.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub router: Option<Router>,
    /// Managed security group of the worker nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker_security_group: Option<SecurityGroupStatus>,
    /// Values the provider derived for BA/ACP (not part of upstream CAPO).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<OpenStackClusterStatusExtensions>,
}

/// Port of the Kubernetes API when `spec.apiServerPort` is unset.
pub const DEFAULT_API_SERVER_PORT: u16 = 6443;

impl OpenStackClusterSpec {
    /// The port the Kubernetes API is served on, as upstream picks it: a valid
    /// `controlPlaneEndpoint`'s (set before capo wrote one, by the user or through a move),
    /// else `apiServerPort`, else [`DEFAULT_API_SERVER_PORT`]. The load balancer listens and
    /// reaches its members there, and the control-plane security group opens it.
    pub fn api_server_port(&self) -> i32 {
        let preset = (self.control_plane_endpoint.as_ref())
            .filter(|e| e.host.as_deref().is_some_and(|h| !h.is_empty()))
            .and_then(|e| e.port)
            .filter(|p| *p > 0);
        preset
            .or(self.api_server_port)
            .unwrap_or(i32::from(DEFAULT_API_SERVER_PORT))
    }

    /// True when `apiServerLoadBalancer.enabled`.
    pub fn api_load_balancer_enabled(&self) -> bool {
        self.api_server_load_balancer
            .as_ref()
            .is_some_and(|l| l.enabled)
    }

    /// True unless the API floating IP or the whole external network is disabled.
    pub fn wants_api_floating_ip(&self) -> bool {
        self.disable_api_server_floating_ip != Some(true)
            && self.disable_external_network != Some(true)
    }

    /// True when the BA/ACP extension puts the control-plane endpoint on a keepalived VIP
    /// port instead of an Octavia load balancer.
    pub fn keepalived_control_plane(&self) -> bool {
        self.extensions
            .as_ref()
            .and_then(|e| e.load_balancers.as_ref())
            .and_then(|l| l.control_plane.as_ref())
            .is_some_and(|c| c.mode == crate::extensions::LOAD_BALANCER_MODE_KEEPALIVED)
    }
}

impl OpenStackCluster {
    /// Name of the Cluster API Cluster this belongs to: the `cluster.x-k8s.io/cluster-name`
    /// label, else the owning Cluster's name.
    pub fn cluster_name(&self) -> Option<String> {
        use kube::ResourceExt;
        self.labels()
            .get(crate::constants::CLUSTER_NAME_LABEL)
            .cloned()
            .or_else(|| {
                self.owner_references()
                    .iter()
                    .find(|r| r.kind == "Cluster" && r.api_version.starts_with("cluster.x-k8s.io/"))
                    .map(|r| r.name.clone())
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extensions::{ClusterLoadBalancers, ControlPlaneLoadBalancer};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    #[test]
    fn spec_defaults() {
        let mut spec = OpenStackClusterSpec::default();
        assert_eq!(spec.api_server_port(), 6443);
        assert!(spec.wants_api_floating_ip());
        assert!(!spec.api_load_balancer_enabled());
        assert!(!spec.keepalived_control_plane());
        spec.api_server_port = Some(8443);
        spec.disable_external_network = Some(true);
        assert_eq!(spec.api_server_port(), 8443);
        // A valid preset endpoint's port wins (upstream's getAPIServerPort); an invalid one not.
        spec.control_plane_endpoint = Some(APIEndpoint {
            host: Some("api.example".into()),
            port: Some(443),
        });
        assert_eq!(spec.api_server_port(), 443);
        spec.control_plane_endpoint = Some(APIEndpoint {
            host: Some(String::new()),
            port: Some(443),
        });
        assert_eq!(spec.api_server_port(), 8443);
        spec.control_plane_endpoint = None;
        assert!(!spec.wants_api_floating_ip());
        spec.extensions = Some(OpenStackClusterExtensions {
            load_balancers: Some(ClusterLoadBalancers {
                control_plane: Some(ControlPlaneLoadBalancer {
                    mode: crate::extensions::LOAD_BALANCER_MODE_KEEPALIVED.into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        });
        assert!(spec.keepalived_control_plane());
    }

    #[test]
    fn cluster_name_from_label_then_owner() {
        let mut osc = OpenStackCluster::new("osc", OpenStackClusterSpec::default());
        assert_eq!(osc.cluster_name(), None);
        osc.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "cluster.x-k8s.io/v1beta2".into(),
            kind: "Cluster".into(),
            name: "owner".into(),
            ..Default::default()
        }]);
        assert_eq!(osc.cluster_name().as_deref(), Some("owner"));
        osc.metadata.labels = Some(BTreeMap::from([(
            crate::constants::CLUSTER_NAME_LABEL.to_owned(),
            "labelled".to_owned(),
        )]));
        assert_eq!(osc.cluster_name().as_deref(), Some("labelled"));
    }
}
